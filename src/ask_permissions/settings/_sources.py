"""Settings sources (seed 002): where a layered policy's rules and scalar settings come from.

Seven sources, highest priority first: ``managed`` (an administrator's file, which nobody below can override),
``user`` (``~/.agent/settings.json``), ``project`` (``<project>/.agent/settings.json``, committed with the
project), ``local`` (``<project>/.agent/settings.local.json``, a person's own), ``cli`` (a file given on the
command line), ``command`` (rules added at run time by the host) and ``session`` ("don't ask again" answers
for this session). Rules from every source merge with deny beating ask beating allow, whatever the source;
for a scalar setting the highest source that sets it wins.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, final

from ask_permissions._errors import InvalidSnapshotError, preview
from ask_permissions._strict import child, fail, read_list, read_mapping, read_text
from ask_permissions._vocabulary import LAYERED_MODES, LayeredMode, SettingsSourceName
from ask_permissions.rules._examples import RuleExamples, read_rule_entry

from ._field_lines import with_line
from ._policy_text import parse_policy_bytes, read_policy_bytes

__all__ = [
    "BYPASS_DISABLED",
    "FILE_SOURCES",
    "RUNTIME_SOURCES",
    "SETTINGS_KEYS",
    "SettingsSource",
    "host_key_names",
    "read_settings_file",
    "settings_from_data",
]

FILE_SOURCES: Final[tuple[SettingsSourceName, ...]] = ("managed", "user", "project", "local", "cli")
"""The sources read from files."""

RUNTIME_SOURCES: Final[tuple[SettingsSourceName, ...]] = ("command", "session")
"""The sources a host fills at run time."""

BYPASS_DISABLED: Final = "disable"
"""The only value ``disableBypassPermissionsMode`` takes (as in the coding-agent CLIs' settings)."""

SETTINGS_KEYS: Final = ("permissions", "hooks", "$schema")
"""The top-level keys a settings file may hold (``$schema`` for editors); a host declares its own with
``host_keys``. Any other key is refused: ``"permisions"`` must not load as a file without rules."""

_PERMISSION_KEYS: Final = (
    "allow",
    "ask",
    "deny",
    "defaultMode",
    "additionalDirectories",
    "disableBypassPermissionsMode",
)


@final
@dataclass(frozen=True, slots=True)
class SettingsSource:
    """One source's settings, as read (a frozen value; a change makes a new one).

    Attributes:
        name: which source it is.
        path: the file it was read from (``None`` for a source with no file, or a file that did not exist).
        anchor: the directory its ``/path`` rules are relative to.
        allow, ask, deny: its rules, as rule text, in order.
        default_mode: its ``defaultMode``, if it sets one.
        additional_directories: directories (absolute, normalized) where edits count as inside the project.
        disable_bypass: whether it sets ``disableBypassPermissionsMode`` to ``"disable"``.
        hooks: its ``hooks`` table as written (read by the policy's hooks reader), or ``None``.
    """

    name: SettingsSourceName
    anchor: str
    path: str | None = None
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_mode: LayeredMode | None = None
    additional_directories: tuple[str, ...] = ()
    disable_bypass: bool = False
    hooks: Mapping[str, object] | None = field(default=None, compare=False)
    examples: Mapping[tuple[str, int], RuleExamples] = field(default_factory=dict, compare=False)
    """The examples of its rules that carry some, by decision and position (``("allow", 2)``)."""

    @property
    def is_empty(self) -> bool:
        """Whether the source sets nothing at all."""
        return not (
            self.allow
            or self.ask
            or self.deny
            or self.default_mode
            or self.additional_directories
            or self.disable_bypass
            or self.hooks
        )

    def rules(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Its rules by decision, deny first: ``(("deny", ...), ("ask", ...), ("allow", ...))``."""
        return (("deny", self.deny), ("ask", self.ask), ("allow", self.allow))


def read_settings_file(
    name: SettingsSourceName,
    path: str,
    anchor: str,
    *,
    required: bool = False,
    host_keys: Iterable[str] = (),
) -> SettingsSource:
    """One settings file, read strictly; a missing file is an empty source, unless it is ``required``.

    A link that leads nowhere is not a missing file: its target was meant to be read, so it is an error.

    Raises:
        InvalidSnapshotError: the file is not JSON, or a field is malformed or unknown; the message names the
            file and the field (``.agent/settings.json: permissions.allow[2]: expected a string; got 3``).
        OSError: the file exists but cannot be read (a folder, no permission, a dangling link), or a
            ``required`` file does not exist.
    """
    try:
        raw = read_policy_bytes(path)
    except FileNotFoundError as error:
        if required or os.path.lexists(path):
            raise FileNotFoundError(
                error.errno,
                "a settings file named explicitly must exist"
                if required
                else "a link to a file that does not exist",
                path,
            ) from None
        return SettingsSource(name, anchor)
    data = parse_policy_bytes(raw, path, toml=False)
    try:
        return settings_from_data(name, data, anchor, path=path, host_keys=host_keys)
    except InvalidSnapshotError as error:
        place = with_line(path, raw.decode("utf-8"), error.path, error.value, toml=False)
        raise InvalidSnapshotError(f"{place}: {error}", path=error.path, value=error.value) from None


def settings_from_data(
    name: SettingsSourceName,
    data: object,
    anchor: str,
    *,
    path: str | None = None,
    host_keys: Iterable[str] = (),
) -> SettingsSource:
    """A source from parsed settings data: ``{"permissions": {...}, "hooks": {...}}``.

    Every key is checked: the top level holds ``SETTINGS_KEYS`` and the host's own ``host_keys`` (left
    alone), ``permissions`` its known keys; an unknown key is refused with the nearest known one.

    Raises:
        InvalidSnapshotError: a malformed or unknown field, with its path.
    """
    if not isinstance(data, Mapping):
        fail("", "a settings object", data)
    read_mapping(data, "", optional=(*SETTINGS_KEYS, *host_key_names(host_keys)))
    permissions_data = data.get("permissions")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, Mapping):
        fail("hooks", "an object of hook events", hooks)
    if permissions_data is None:
        return SettingsSource(name, anchor, path, hooks=hooks)
    permissions = read_mapping(permissions_data, "permissions", optional=_PERMISSION_KEYS)
    lists: dict[str, tuple[str, ...]] = {}
    examples: dict[tuple[str, int], RuleExamples] = {}
    for decision in ("allow", "ask", "deny"):
        field_path = child("permissions", decision)
        raw = permissions.get(decision)
        entries = [
            read_rule_entry(entry, child(field_path, index), non_empty=True)
            for index, entry in enumerate(read_list(raw if raw is not None else [], field_path))
        ]
        lists[decision] = tuple(text for text, _ in entries)
        examples.update(
            ((decision, index), example) for index, (_, example) in enumerate(entries) if example is not None
        )
    mode = permissions.get("defaultMode")
    if mode is not None and mode not in LAYERED_MODES:
        fail(child("permissions", "defaultMode"), "one of " + ", ".join(map(repr, LAYERED_MODES)), mode)
    lock = permissions.get("disableBypassPermissionsMode")
    if lock is not None and lock != BYPASS_DISABLED:
        fail(child("permissions", "disableBypassPermissionsMode"), repr(BYPASS_DISABLED), lock)
    directories = tuple(
        _absolute(text, anchor)
        for text in _read_rule_texts(
            permissions.get("additionalDirectories"), child("permissions", "additionalDirectories")
        )
    )
    return SettingsSource(
        name,
        anchor,
        path,
        allow=lists["allow"],
        ask=lists["ask"],
        deny=lists["deny"],
        default_mode=mode,
        additional_directories=directories,
        disable_bypass=lock == BYPASS_DISABLED,
        hooks=hooks,
        examples=examples,
    )


def host_key_names(host_keys: Iterable[object]) -> tuple[str, ...]:
    """The host's own top-level keys, checked: an iterable of non-empty strings (not one string)."""
    keys = () if isinstance(host_keys, str) else tuple(host_keys)
    if isinstance(host_keys, str) or not all(isinstance(key, str) and key for key in keys):
        raise TypeError(f"host_keys: expected an iterable of non-empty key names; got {preview(host_keys)}")
    return keys  # type: ignore[return-value]  # strings, checked above


def _read_rule_texts(value: object, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(
        read_text(entry, child(path, index), non_empty=True)
        for index, entry in enumerate(read_list(value, path))
    )


def _absolute(directory: str, anchor: str) -> str:
    """A directory of the settings, absolute: ``~`` is the home directory, relative is the anchor's."""
    expanded = os.path.expanduser(directory)
    return os.path.normpath(os.path.join(anchor, expanded))


def runtime_source(
    name: SettingsSourceName,
    anchor: str,
    *,
    allow: Iterable[str] = (),
    ask: Iterable[str] = (),
    deny: Iterable[str] = (),
) -> SettingsSource:
    """A source made in code (``command``, ``session``, or ``cli`` given as lists rather than a file).

    Raises:
        TypeError: a rule list that is a bare string, or holds a non-string.
        ValueError: an empty rule.
    """
    lists: dict[str, tuple[str, ...]] = {}
    for decision, texts in (("allow", allow), ("ask", ask), ("deny", deny)):
        if isinstance(texts, str):
            raise TypeError(f"{decision}: expected a list of rule texts, not a string; got {preview(texts)}")
        checked: list[str] = []
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"{decision}: expected rule texts (strings); got {preview(text)}")
            if not text:
                raise ValueError(f"{decision}: expected non-empty rule texts; got {text!r}")
            checked.append(str.__str__(text))
        lists[decision] = tuple(checked)
    return SettingsSource(name, anchor, None, allow=lists["allow"], ask=lists["ask"], deny=lists["deny"])
