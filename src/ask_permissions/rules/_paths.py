"""PathPattern: gitignore-style path specifiers (``Read(src/**)``, ``Edit(//etc/hosts)``, ``Read(*.env)``)."""

from __future__ import annotations

import os
import posixpath
import re
import stat
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, final

from ask_permissions._errors import preview
from ask_permissions._strict import child, fail, read_str
from ask_permissions.typing import Decision, PathShape

from ._glob import Glob
from ._specifier_base import check_key, read_specifier_snapshot, subject_values

__all__ = ["MAX_LINKS", "PATH_KEYS", "PathPattern", "normalize_path", "resolve_links"]

PATH_KEYS: Final = ("file_path", "path", "notebook_path")
"""The arguments a path specifier reads when it names no key."""

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def normalize_path(path: str) -> str:
    """An absolute POSIX path with ``.``, ``..`` and repeated slashes resolved lexically (symlinks are not).

    ``..`` at the top stays at ``/``, as the kernel reads it.
    """
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


MAX_LINKS: Final = 40
"""How many symbolic links ``resolve_links`` follows in one path (Linux's own limit)."""


def resolve_links(path: str, *, max_links: int = MAX_LINKS) -> str | None:
    """``path`` (absolute) with the symbolic links that exist on disk resolved, as the kernel follows them.

    Each component of the longest existing prefix that is a link is replaced by its target (a relative
    target read from the link's folder), and ``..`` steps back from where a link led, not from the link;
    the components that do not exist stay as written. The result is normalized.

    Returns:
        The resolved path, or ``None`` when it holds more than ``max_links`` links (a loop, say): no one
        can say where it goes.
    """
    remaining = [part for part in reversed(path.split("/")) if part]
    resolved = "/"
    links = 0
    while remaining:
        name = remaining.pop()
        if name == ".":
            continue
        if name == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = posixpath.join(resolved, name)
        try:
            is_link = stat.S_ISLNK(os.lstat(candidate).st_mode)
        except (OSError, ValueError):  # absent (or unreadable, or a NUL): the rest stays as written
            return normalize_path("/".join((candidate, *reversed(remaining))))
        if not is_link:
            resolved = candidate
            continue
        links += 1
        if links > max_links:
            return None
        try:
            target = os.readlink(candidate)
        except OSError:
            return normalize_path("/".join((candidate, *reversed(remaining))))
        remaining.extend(part for part in reversed(target.split("/")) if part)
        if target.startswith("/"):
            resolved = "/"
    return resolved


def _default_home() -> str:
    return os.path.expanduser("~")


def _absolute(value: object, field_name: str) -> str:
    """A root or home directory: an absolute path, normalized."""
    try:
        path = os.fspath(value)  # type: ignore[call-overload]
    except TypeError:
        message = f"PathPattern: {field_name}: expected an absolute path; got {preview(value)}"
        raise TypeError(message) from None
    if not isinstance(path, str):
        raise TypeError(f"PathPattern: {field_name}: expected a str path; got {preview(value)}")
    if not path.startswith("/") or _CONTROL.search(path):
        raise ValueError(f"PathPattern: {field_name}: expected an absolute path; got {preview(path)}")
    return normalize_path(path)


def _is_within(path: str, directory: str) -> bool:
    return directory in ("/", path) or path.startswith(directory + "/")


_Segment = str | Glob | None
"""One segment of a pattern: a literal name, a glob over one name, or ``None`` for ``**``."""


def _segment(segment: str, *, fold: bool) -> _Segment:
    if fold:
        segment = _fold(segment)
    if segment == "**":
        return None
    if "*" in segment or "?" in segment:
        return Glob(segment.split("*"), any_character="?")
    return segment


def _fold(text: str) -> str:
    """How deny and ask compare names: case-folded and NFC-normalized (as macOS file systems compare)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def _split(path: str) -> tuple[str, ...]:
    """The names of a normalized absolute path (none for ``/``)."""
    return tuple(name for name in path.split("/") if name)


def _segment_matches(segment: str | Glob, name: str) -> bool:
    return segment == name if isinstance(segment, str) else segment.matches(name)


def _walk(pattern: tuple[_Segment, ...], names: tuple[str, ...], *, block: bool) -> bool:
    """Whether ``names`` match ``pattern``; for deny and ask (``block``) a match of a leading part suffices.

    gitignore's ``**``: a trailing one is one or more names (for deny and ask, zero or more: the directory
    itself too), a leading or middle one zero or more.
    """
    size = len(names)
    positions = {0}
    last = len(pattern) - 1
    for index, segment in enumerate(pattern):
        if segment is None:
            lowest = min(positions) + (1 if index == last and not block else 0)
            positions = set(range(lowest, size + 1))
        else:
            positions = {at + 1 for at in positions if at < size and _segment_matches(segment, names[at])}
        if not positions:
            return False
    return block or size in positions


def _parse(text: str, root: str, home: str) -> tuple[str, tuple[str, ...], bool]:
    """The pattern's base directory, its normalized segments, and whether it is slash-less (any depth).

    Raises:
        ValueError: empty, control characters, a misplaced ``**``, or ``..`` that climbs above the base.
    """
    if not text:
        raise ValueError("it is empty")
    if _CONTROL.search(text):
        raise ValueError("it holds a control character")
    floating = False
    if text.startswith("//"):
        base, body, where = "/", text[2:], "/"
    elif text == "~" or text.startswith("~/"):
        base, body, where = home, text[2:], "the home directory (~)"
    elif text.startswith("/"):
        base, body, where = root, text[1:], "the rules' root (cwd)"
    else:
        base, body, where = root, text, "the rules' root (cwd)"
        name = text.rstrip("/")
        floating = "/" not in name and name not in (".", "..")
    segments: list[str] = []
    for segment in body.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not segments:
                raise ValueError(
                    f"'..' climbs above {where}; write a directory outside it as an absolute path "
                    "(//abs/path or ~/path)"
                )
            if "*" in segments[-1] or "?" in segments[-1]:
                raise ValueError("'..' after a wildcard segment; write the path without it")
            segments.pop()
            continue
        if "**" in segment and segment != "**":
            raise ValueError(f"'**' is only a whole path segment (a/**/b), not part of {segment!r}")
        segments.append(segment)
    if floating and not segments:
        raise ValueError("it names no path")
    return base, tuple(segments), floating


@final
@dataclass(frozen=True, slots=True)
class PathPattern:
    """A path specifier, gitignore-style, as in ``Read(src/**)``; an argument pattern like the gem's.

    Forms: ``//abs/path`` (absolute), ``~/path`` (under ``home``), ``/path``, ``./path`` or ``path``
    (under ``root``, the rules' working directory). ``*`` matches within one path segment, ``?`` one
    character of it, ``**`` any number of segments (``src/**`` is everything inside ``src``). A pattern
    without a slash, such as ``*.env``, matches that name at any depth. ``.`` and ``..`` are resolved
    lexically in the pattern and in the call's path; a relative path that climbs out of ``root`` is matched
    as the absolute path it names; a pattern whose ``..`` would climb above its own base is refused. The
    pattern itself resolves no symlinks (``src/link`` is matched as written); a ``LayeredPolicy`` decides a
    path reached through a link on disk as both the link and its target. ``[`` and ``\\`` are literal.

    Fail-closed asymmetry: in a deny or ask rule the pattern also matches everything beneath what it
    names (a deny on ``.git`` protects ``.git/config``, one on ``src/**`` also ``src``), compares
    case-insensitively and after Unicode normalization (macOS file systems do both), and a slash-less
    pattern matches at any depth anywhere (a deny on ``*.env`` covers ``~/.env`` too). In an allow it
    matches exactly the paths it describes, a slash-less one only under ``root``, and never a path holding
    control characters. A path starting with ``~`` is read both as under ``home`` and as a directory named
    ``~``: an allow needs both readings to match, a deny either.

    The subject is the call's argument at ``key``, else ``file_path``, ``path`` or ``notebook_path`` (an
    allow needs each present one to match), or a plain string argument itself.

    Args:
        text: the specifier.
        root: the directory relative paths are read against (default: the working directory now).
        home: the directory ``~`` names (default: the user's home directory).
        key: the argument holding the path, when it is not one of the defaults.

    Raises:
        ValueError: an empty pattern, a control character, ``**`` inside a segment, ``..`` climbing above
            the pattern's base or following a wildcard; a ``root`` or ``home`` that is not absolute.
        TypeError: a text, root, home or key of the wrong type.
    """

    text: str
    root: str = field(default_factory=os.getcwd, kw_only=True)
    home: str = field(default_factory=_default_home, kw_only=True)
    key: str | None = field(default=None, kw_only=True)
    _base: str = field(init=False, repr=False, compare=False)
    _floating: bool = field(init=False, repr=False, compare=False)
    _segments: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _allow: tuple[_Segment, ...] = field(init=False, repr=False, compare=False)
    _block: tuple[_Segment, ...] = field(init=False, repr=False, compare=False)
    _root_names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"PathPattern: text: expected a string; got {preview(self.text)}")
        text = str.__str__(self.text)
        root = _absolute(self.root, "root")
        home = _absolute(self.home, "home")
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "home", home)
        object.__setattr__(self, "key", check_key(self.key, "PathPattern"))
        try:
            base, segments, floating = _parse(text, root, home)
        except ValueError as error:
            raise ValueError(f"path specifier {preview(text)}: {error}") from None
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "_segments", segments)
        object.__setattr__(self, "_floating", floating)
        object.__setattr__(self, "_root_names", _split(root))
        # A floating pattern's one segment is matched on its own; an anchored one follows its base's names.
        lead = () if floating else _split(base)
        allow = tuple(_segment(segment, fold=False) for segment in segments)
        block = tuple(_segment(segment, fold=True) for segment in segments)
        object.__setattr__(self, "_allow", lead + allow)
        object.__setattr__(self, "_block", tuple(_fold(name) for name in lead) + block)

    # -- what it is ----------------------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``"path"``."""
        return "path"

    @property
    def is_unrestricted(self) -> bool:
        """Whether it matches every path (``//**``)."""
        segments = self._segments
        return self._base == "/" and not self._floating and bool(segments) and set(segments) == {"**"}

    @property
    def reaches_outside_root(self) -> bool:
        """Whether an allow with it can match a path outside ``root`` (an absolute or ``~`` pattern)."""
        return not self._floating and not _is_within(self._base, self.root)

    @property
    def fixed_part(self) -> tuple[str, PathShape]:
        """The absolute path its leading literal names spell, and what the rest of the pattern adds.

        ``"exact"``: it names that one path (``./config/app.yaml``); ``"tree"``: everything inside it
        (``./build/**``); ``"partial"``: some names inside it, chosen by wildcards (``./logs/*.txt``);
        ``"anywhere"``: a slash-less pattern, which matches its name at any depth (the path is ``root``).
        """
        if self._floating:
            return self.root, "anywhere"
        segments = self._segments
        literal = 0
        while literal < len(segments) and not ("*" in segments[literal] or "?" in segments[literal]):
            literal += 1
        path = normalize_path("/".join((self._base, *segments[:literal])))
        rest = segments[literal:]
        if not rest:
            return path, "exact"
        return path, "tree" if rest == ("**",) else "partial"

    # -- matching ------------------------------------------------------------------------------------------

    def matches(self, arguments: object, decision: Decision) -> bool:
        """Whether the specifier, in a rule of ``decision``, matches a call with these arguments."""
        values = subject_values(arguments, self.key, PATH_KEYS)
        if decision == "allow":
            return bool(values) and all(
                isinstance(value, str) and self.matches_path(value, "allow") for value in values
            )
        return any(isinstance(value, str) and self.matches_path(value, decision) for value in values)

    def matches_path(self, path: str, decision: Decision) -> bool:
        """Whether the specifier, in a rule of ``decision``, matches one path as a call gives it."""
        if not path:
            return False
        if decision == "allow":
            if _CONTROL.search(path):
                return False
            return all(self._allows(_split(reading)) for reading in self._readings(path))
        readings = self._readings(path)
        if "\x00" in path and path.index("\x00"):
            readings += self._readings(path[: path.index("\x00")])  # where a C string ends
        return any(self._blocks(tuple(_fold(name) for name in _split(reading))) for reading in readings)

    def _allows(self, names: tuple[str, ...]) -> bool:
        if not self._floating:
            return _walk(self._allow, names, block=False)
        root = self._root_names
        if len(names) <= len(root) or names[: len(root)] != root:
            return False  # a slash-less allow stays under the root
        (segment,) = self._allow
        return segment is None or _segment_matches(segment, names[-1])

    def _blocks(self, names: tuple[str, ...]) -> bool:
        if not self._floating:
            return _walk(self._block, names, block=True)
        (segment,) = self._block
        if segment is None:
            return bool(names)
        return any(_segment_matches(segment, name) for name in names)  # at any depth, and beneath

    def _readings(self, path: str) -> tuple[str, ...]:
        if path == "~" or path.startswith("~/"):
            return (normalize_path(self.home + path[1:]), normalize_path(self.root + "/" + path))
        if path.startswith("/"):
            return (normalize_path(path),)
        relative = normalize_path(self.root + "/" + path)
        if path.startswith("~"):
            # "~user/..." is that user's home to a tool that expands it (os.path.expanduser does).
            expanded = os.path.expanduser(path)
            if expanded != path and expanded.startswith("/"):
                return (relative, normalize_path(expanded))
        return (relative,)

    # -- snapshots -----------------------------------------------------------------------------------------

    def to_snapshot(self) -> dict[str, object]:
        """The pattern in snapshot form: ``{"type": "path", "text", "root", "home"}`` and ``key`` when set."""
        data: dict[str, object] = {"type": "path", "text": self.text, "root": self.root, "home": self.home}
        if self.key is not None:
            data["key"] = self.key
        return data

    @classmethod
    def from_snapshot(cls, data: Mapping[str, Any], path: str = "") -> PathPattern:
        """The pattern from ``to_snapshot()`` data; strict.

        Raises:
            InvalidSnapshotError: anything unknown, missing, mistyped or invalid, naming its path.
        """
        text, key = read_specifier_snapshot(data, path, "path", extra=("root", "home"))
        root = read_str(data["root"], child(path, "root"))
        home = read_str(data["home"], child(path, "home"))
        for name, value in (("root", root), ("home", home)):
            if not value.startswith("/") or _CONTROL.search(value):
                fail(child(path, name), "an absolute path", value)
        try:
            return cls(text, root=root, home=home, key=key)
        except ValueError as error:
            fail(child(path, "text"), f"a valid path specifier ({error})", text)
