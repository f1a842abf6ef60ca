"""What a call touches: its subjects (commands, paths, a URL), read once from its arguments.

The rules, the safety checks and acceptEdits all read a call's subjects from here, by the tool's kind, with
the same readers the specifiers use (``subject_values``, ``argv_texts``): what one of them sees, the others
see. A look-alike of a tool name (``write``, ``BASH``, ``Bash\\u200b``) is read as the tool it folds to, as
deny rules and prompting declarations read it (``fold_tool_name``).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping
from typing import Final, NamedTuple

from ask_permissions._names import fold_tool_name
from ask_permissions.rules._command import COMMAND_KEYS, argv_texts
from ask_permissions.rules._domains import URL_KEYS
from ask_permissions.rules._paths import PATH_KEYS, normalize_path, resolve_links
from ask_permissions.rules._specifier_base import subject_values
from ask_permissions.rules._text import BUILTIN_KINDS, ToolKind

__all__ = ["Subjects", "folded_kinds", "kind_of", "read_subjects"]

_DEFAULT_KEYS: Final = {"shell": COMMAND_KEYS, "path": PATH_KEYS, "url": URL_KEYS}


class Subjects(NamedTuple):
    """The subjects of one call, by its tool's kind (a named tuple: one is made for every call).

    Attributes:
        kind: the tool's kind (that of the tool its name folds to, when only a look-alike is declared).
        values: the values at the kind's key, as found.
        commands: every command text a shell call holds (a string; an argument vector as run and as
            joined with spaces); ``None`` for a value no one can read as a command.
        paths: the absolute paths a path call names, as joined at the working directory (``..`` and links
            not resolved); ``None`` when one of them is not a string.
        url: the one URL a URL call names, else ``None``.
        anchored: the arguments as the rules read them: a path call's relative paths made absolute at the
            working directory (each settings source's rules are read from its own folder).
        linked: the same with each path replaced by where its symbolic links on disk lead, when one leads
            elsewhere (a deny rule then applies when either the link or its target matches); else ``None``.
        too_many_links: a path follows more symbolic links than are read.
    """

    kind: ToolKind | None
    values: tuple[object, ...] = ()
    commands: tuple[str | None, ...] = ()
    paths: tuple[str, ...] | None = None
    url: str | None = None
    anchored: object = None
    linked: object = None
    too_many_links: bool = False

    @property
    def command(self) -> str | None:
        """The call's command when it holds exactly one command string."""
        if len(self.values) == 1 and isinstance(self.values[0], str):
            return self.values[0]
        return None

    @property
    def normalized_paths(self) -> tuple[str, ...] | None:
        """``paths`` with ``.`` and ``..`` resolved lexically."""
        return None if self.paths is None else tuple(normalize_path(path) for path in self.paths)


def folded_kinds(kinds: Mapping[str, ToolKind]) -> Mapping[str, ToolKind]:
    """The declared and built-in kinds by folded tool name (a host's own declarations first)."""
    folded: dict[str, ToolKind] = {}
    for name, kind in (*kinds.items(), *BUILTIN_KINDS.items()):
        folded.setdefault(fold_tool_name(name), kind)
    return folded


def kind_of(name: str, kinds: Mapping[str, ToolKind], folded: Mapping[str, ToolKind]) -> ToolKind | None:
    """A tool's kind: declared for its name, built in for it, else that of the tool its name folds to."""
    return kinds.get(name) or BUILTIN_KINDS.get(name) or folded.get(fold_tool_name(name))


def _command_texts(value: object) -> tuple[str | None, ...]:
    """The command texts a shell subject stands for: itself, an argument vector as run and as joined with
    spaces, or ``None`` for a value that is neither (unreadable)."""
    if isinstance(value, str):
        return (str.__str__(value),)
    return argv_texts(value) or (None,)


def _absolute(path: str, cwd: str) -> str:
    return posixpath.join(cwd, os.path.expanduser(path) if path.startswith("~") else path)


def read_subjects(arguments: object, kind: ToolKind | None, cwd: str) -> Subjects:
    """A call's subjects, read by ``kind`` at the working directory ``cwd``."""
    if kind is None:
        return Subjects(None, anchored=arguments)
    values = subject_values(arguments, kind.key, _DEFAULT_KEYS[kind.kind])
    if kind.kind == "shell":
        if len(values) == 1 and type(values[0]) is str:
            commands: tuple[str | None, ...] = values  # type: ignore[assignment]  # one plain string
        else:
            commands = tuple(text for value in values for text in _command_texts(value))
        return Subjects(kind, values, commands, anchored=arguments)
    if kind.kind == "url":
        url = values[0] if len(values) == 1 and isinstance(values[0], str) else None
        return Subjects(kind, values, url=url, anchored=arguments)
    strings = all(isinstance(value, str) for value in values)
    paths = tuple(_absolute(value, cwd) for value in values if isinstance(value, str)) if strings else None
    anchored = _anchored(arguments, kind, cwd, normalize_path)
    targets: dict[str, str] = {}
    too_many = False
    for path in paths or ():
        target = resolve_links(path)
        if target is None:
            too_many = True
        elif target != normalize_path(path):
            targets[path] = target
    linked = (
        _anchored(arguments, kind, cwd, lambda path: targets.get(path, normalize_path(path)))
        if targets
        else None
    )
    return Subjects(kind, values, paths=paths, anchored=anchored, linked=linked, too_many_links=too_many)


def _anchored(arguments: object, kind: ToolKind, cwd: str, place: Callable[[str], str]) -> object:
    """The arguments with each relative path made absolute at ``cwd`` by ``place`` (so that a source's
    rules, each read from its own folder, meet the file the call names, not one below that folder), and
    each absolute one replaced when ``place`` moves it."""
    if isinstance(arguments, str):
        # A plain string argument is the path itself, as path specifiers read it.
        return (
            place(posixpath.join(cwd, arguments)) if _relative(arguments) else _placed(arguments, cwd, place)
        )
    if not isinstance(arguments, Mapping):
        return arguments
    keys = (kind.key,) if kind.key is not None else PATH_KEYS
    changed = {
        key: place(posixpath.join(cwd, value)) if _relative(value) else _placed(value, cwd, place)
        for key in keys
        if isinstance(value := arguments.get(key), str) and value
    }
    changed = {key: value for key, value in changed.items() if value != arguments.get(key)}
    return {**arguments, **changed} if changed else arguments


def _relative(path: str) -> bool:
    return bool(path) and not path.startswith(("/", "~"))


def _placed(path: str, cwd: str, place: Callable[[str], str]) -> str:
    """An absolute (or ``~``) path as given, unless ``place`` moves it (to a link's target)."""
    absolute = _absolute(path, cwd)
    moved = place(absolute)
    return path if moved == normalize_path(absolute) else moved
