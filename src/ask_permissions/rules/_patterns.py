"""Tool and argument patterns: the ALL sentinel, matching, argument serialization and pattern snapshots."""

from __future__ import annotations

import enum
import functools
import json
import re
from collections.abc import Mapping
from typing import Final, Literal, TypeAlias

from ask_permissions._errors import preview
from ask_permissions._json_text import write_json, write_repr
from ask_permissions._strict import child, fail, read_mapping, read_text

from ._command import CommandPattern
from ._domains import DomainPattern
from ._paths import PathPattern
from ._specifiers import SPECIFIER_TYPES, SpecifierPattern, decode_specifier

__all__ = [
    "ALL",
    "SPECIFIER_CLASSES",
    "AllType",
    "ArgumentPattern",
    "StoredArgumentPattern",
    "ToolPattern",
    "argument_pattern_matches",
    "decode_argument_pattern",
    "decode_pattern",
    "encode_pattern",
    "is_unrestricted",
    "normalize_argument_pattern",
    "normalize_tool_pattern",
    "serialize_arguments",
    "tool_pattern_matches",
]


class AllType(enum.Enum):
    """The type of the ``ALL`` sentinel (an enum, so that it is a singleton and typeable)."""

    ALL = "ALL"

    def __repr__(self) -> str:
        return "ALL"

    __str__ = __repr__


ALL: Final = AllType.ALL
"""Matches every tool (as a tool pattern) or any arguments (as an argument pattern)."""

ToolPattern: TypeAlias = str | re.Pattern[str] | Literal[AllType.ALL]
"""A tool pattern: an exact tool name, a compiled regex searched in the name, or ``ALL``."""

ArgumentPattern: TypeAlias = str | re.Pattern[str] | SpecifierPattern | Literal[AllType.ALL] | None
"""An argument pattern: a substring of the serialized arguments, a regex searched in it, or any
arguments (``None`` or ``ALL``)."""

StoredArgumentPattern: TypeAlias = str | re.Pattern[str] | SpecifierPattern | None
"""An argument pattern as a rule stores it: ``ALL`` becomes ``None``."""

# Built once: json.dumps builds a new encoder on every call that passes options.
_encode_mapping = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


def serialize_arguments(arguments: object) -> str:
    """The text that argument patterns match against.

    A mapping is compact JSON with its key order kept and non-ASCII kept (a leaf JSON cannot encode is
    written as its ``str()``); a string is used as is; ``None`` is ``""``; anything else is ``str(value)``.
    Any arguments have a text: a container met again inside itself is written as the string
    ``"<circular reference>"``, values nested deeper than Python's recursion limit are written all the same,
    and a key JSON refuses (a tuple) as its ``str()``.
    """
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    if isinstance(arguments, dict):  # checked before Mapping, an ABC and much slower to check
        mapping = arguments
    elif isinstance(arguments, Mapping):
        mapping = dict(arguments)
    else:
        mapping = None
    if mapping is not None:
        try:
            return _encode_mapping(mapping)
        except (TypeError, ValueError, RecursionError):
            # A key json refuses, a container inside itself, nesting deeper than the C encoder goes, or an
            # int past the digit limit: the iterative writer gives the same text for all the rest.
            return write_json(mapping)
    try:
        return str(arguments)
    except RecursionError:  # a list nested deeper than repr goes
        return write_repr(arguments)


def normalize_tool_pattern(pattern: object, field: str = "tool_pattern") -> ToolPattern:
    """Check a tool pattern given by a caller and return it as stored.

    Raises:
        TypeError: not a string, a compiled ``str`` regex or ``ALL``.
        ValueError: an empty string (no tool is named ``""``).
    """
    if pattern is ALL:
        return ALL
    if isinstance(pattern, str):
        if not pattern:
            raise ValueError(
                f"{field}: expected a tool name, a compiled regex or ALL; got {preview(pattern)}"
            )
        return str.__str__(pattern)  # the text: a str-mixin Enum member's str() is not its value
    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
        return pattern
    raise TypeError(f"{field}: expected a tool name, a compiled str regex or ALL; got {preview(pattern)}")


def normalize_argument_pattern(pattern: object, field: str = "argument_pattern") -> StoredArgumentPattern:
    """Check an argument pattern given by a caller and return it as stored (``ALL`` becomes ``None``)."""
    if pattern is None or pattern is ALL:
        return None
    if isinstance(pattern, str):
        return str.__str__(pattern)  # the text: a str-mixin Enum member's str() is not its value
    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
        return pattern
    if isinstance(pattern, SPECIFIER_CLASSES):
        return pattern
    raise TypeError(
        f"{field}: expected a string, a compiled str regex, a CommandPattern, PathPattern or DomainPattern, "
        f"ALL or None; got {preview(pattern)}"
    )


def tool_pattern_matches(pattern: ToolPattern, tool_name: str) -> bool:
    """Whether a tool pattern matches a tool name (a regex is searched, not anchored)."""
    if isinstance(pattern, str):
        return pattern == tool_name
    if pattern is ALL:
        return True
    return pattern.search(tool_name) is not None


def argument_pattern_matches(pattern: StoredArgumentPattern, serialized: str) -> bool:
    """Whether a stored argument pattern matches already serialized arguments.

    A specifier pattern reads the call's arguments, not their serialization: given only the text, it reads
    that text as the plain-string argument, as a deny would.
    """
    if pattern is None:
        return True
    if isinstance(pattern, str):
        return pattern in serialized
    if isinstance(pattern, re.Pattern):
        return pattern.search(serialized) is not None
    return pattern.matches(serialized, "deny")


UNRESTRICTED_PROBES: Final = ("", "{}", '{"command":""}')
"""Texts an argument pattern that restricts anything must not match: no arguments (``""``) and the
serialized forms of ``{}`` and of ``{"command": ""}`` (a call that names no command at all)."""


def is_unrestricted(pattern: StoredArgumentPattern) -> bool:
    """Whether an argument pattern restricts nothing: none at all, or one matching a text in
    ``UNRESTRICTED_PROBES``.

    A pattern such as ``{``, ``"``, ``command``, ``.`` or ``\\S`` does not match ``""``, yet it matches the
    serialized arguments of every call that passes a mapping: it restricts nothing.
    """
    if pattern is None:
        return True
    if isinstance(pattern, str):
        return any(pattern in probe for probe in UNRESTRICTED_PROBES)
    if isinstance(pattern, re.Pattern):
        return any(pattern.search(probe) is not None for probe in UNRESTRICTED_PROBES)
    return pattern.is_unrestricted  # a specifier restricts unless it is `*` (or `//**`, `domain:*`)


# Ruby's regex options as snapshot letters. Ruby's ``m`` ("dot matches newline") is Python's DOTALL.
# Plain ints: arithmetic on re.RegexFlag members runs enum code in Python, slow over a large rule set.
_FLAG_LETTERS: Final = ((int(re.IGNORECASE), "i"), (int(re.DOTALL), "m"), (int(re.VERBOSE), "x"))
_LETTER_FLAGS: Final = {letter: flag for flag, letter in _FLAG_LETTERS}
_SNAPSHOTTABLE: Final = int(re.IGNORECASE | re.DOTALL | re.VERBOSE)
_UNICODE: Final = int(re.UNICODE)


def _explicit_flags(pattern: re.Pattern[str]) -> int:
    """The flags passed to ``re.compile``, not those the source sets inline or implies (UNICODE)."""
    if not pattern.flags & ~_UNICODE:
        # Nothing beyond the implicit UNICODE: no need to recompile the source (which, past re's own
        # cache of a few hundred patterns, costs tens of microseconds per regex in a large snapshot).
        return 0
    try:
        implied = re.compile(pattern.pattern).flags
    except re.error:  # e.g. a VERBOSE source that only compiles with VERBOSE
        implied = _UNICODE
    return pattern.flags & ~implied


def regex_flag_letters(pattern: re.Pattern[str]) -> str | None:
    """The snapshot letters of a regex's flags, or ``None`` when a flag has no letter."""
    flags = _explicit_flags(pattern)
    if not flags:
        return ""
    if flags & ~_SNAPSHOTTABLE:
        return None
    return "".join(letter for flag, letter in _FLAG_LETTERS if flags & flag)


def encode_pattern(pattern: ToolPattern | StoredArgumentPattern) -> dict[str, object]:
    """A pattern in snapshot form.

    Raises:
        ValueError: a regex with a flag other than IGNORECASE, DOTALL and VERBOSE (passed to
            ``re.compile``; flags written inline in the source are kept by the source itself).
    """
    if pattern is ALL or pattern is None:
        return {"type": "all"}
    if isinstance(pattern, str):
        return {"type": "string", "value": pattern}
    if isinstance(pattern, SPECIFIER_CLASSES):
        return pattern.to_snapshot()
    letters = regex_flag_letters(pattern)
    if letters is None:
        raise ValueError(
            f"regex {preview(pattern.pattern)}: only the flags IGNORECASE, DOTALL and VERBOSE can be "
            f"snapshotted; got {re.RegexFlag(_explicit_flags(pattern))!r}"
        )
    return {"type": "regexp", "source": pattern.pattern, "flags": letters}


# Hosts that serve many sessions restore the same rule sets over and over; a rule set can hold more
# regexes than re's own cache (512), so it would compile every one of them on every restore.
_COMPILED_CACHE_SIZE: Final = 4096


@functools.lru_cache(maxsize=_COMPILED_CACHE_SIZE)
def _compile_str(source: str, flags: int) -> re.Pattern[str]:
    # Only ever given plain strings (read_text makes them so): a str subclass could compare equal to a
    # different source and be handed its regex.
    return re.compile(source, flags)


_PATTERN_TYPES: Final = ("string", "symbol", "all", "regexp")


def decode_pattern(data: object, path: str) -> str | re.Pattern[str] | Literal[AllType.ALL]:
    """A pattern from its snapshot form (also the gem's ``{"type": "symbol"}``); strict."""
    if not isinstance(data, Mapping):
        fail(path, "a pattern object", data)
    raw_kind = data.get("type")
    kind = str.__str__(raw_kind) if isinstance(raw_kind, str) else None
    if kind in ("string", "symbol"):
        read_mapping(data, path, required=("type", "value"))
        value = read_text(data["value"], child(path, "value"))
        # In Ruby the symbol :all is the match-everything sentinel, never a tool name; reading it as
        # the name "all" would quietly turn a gem's `deny :all` into a rule that denies nothing.
        return ALL if kind == "symbol" and value == "all" else value
    if kind == "all":
        read_mapping(data, path, required=("type",))
        return ALL
    if kind == "regexp":
        read_mapping(data, path, required=("type", "source", "flags"))
        source = read_text(data["source"], child(path, "source"))
        raw_letters = data["flags"]
        flags_path = child(path, "flags")
        letters = str.__str__(raw_letters) if isinstance(raw_letters, str) else None
        if letters is None or len(set(letters)) != len(letters):
            fail(flags_path, "a string of i, m, x, each at most once", raw_letters)
        flags = 0
        for letter in letters:
            if letter not in _LETTER_FLAGS:
                fail(flags_path, "a string of i, m, x, each at most once", raw_letters)
            flags |= _LETTER_FLAGS[letter]
        try:
            return _compile_str(source, flags)
        except (re.error, OverflowError, RecursionError, ValueError) as error:
            fail(child(path, "source"), f"a regex that compiles ({error})", source)
    fail(child(path, "type"), "one of " + ", ".join(map(repr, _PATTERN_TYPES)), raw_kind)


SPECIFIER_CLASSES: Final = (CommandPattern, PathPattern, DomainPattern)
"""The argument patterns read from rule specifiers, which match a call's arguments rather than their text."""


def decode_argument_pattern(data: object, path: str) -> StoredArgumentPattern | Literal[AllType.ALL]:
    """An argument pattern from its snapshot form: the gem's types, or a specifier pattern's; strict."""
    if isinstance(data, Mapping) and data.get("type") in SPECIFIER_TYPES:
        return decode_specifier(data, path)
    return decode_pattern(data, path)
