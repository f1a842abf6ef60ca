"""The line of a field in a policy or settings file, so that an error can say ``policy.toml:12:``.

Only an error needs it, so nothing is kept while files load: the line is found afterwards, from the file's
text and the field's path (``permissions.deny[1]``). In JSON the path is followed exactly; TOML's parser
keeps no positions, so the field's value is looked for as it would be written, preferably under its own key.
A field that cannot be found has no line (``None``): the message then names the field alone.
"""

from __future__ import annotations

import json
import re
from typing import Final

from ask_permissions._strict import child

from ._policy_text import read_policy_bytes

__all__ = ["field_line", "file_field_line", "source_place", "with_line"]

_WHITESPACE: Final = frozenset(" \t\n\r")
_SCALAR: Final = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


def with_line(where: str, text: str | None, field: str, value: object, *, toml: bool) -> str:
    """``where`` with ``:<line>`` added when the field's line is found in ``text``."""
    line = None if text is None or not field else field_line(text, field, value, toml=toml)
    return where if line is None else f"{where}:{line}"


def source_place(path: str | None, name: str, field: str, value: object) -> str:
    """Where a settings source's field is, for an error: ``<file>:<line>``, ``<file>``, or ``<name> settings``
    for a source with no file."""
    if path is None:
        return f"{name} settings"
    line = file_field_line(path, field, value)
    return path if line is None else f"{path}:{line}"


def file_field_line(path: str, field: str, value: object) -> int | None:
    """The field's line in the file at ``path`` (TOML if it ends in ``.toml``), or ``None``; never raises."""
    try:
        text = read_policy_bytes(path).decode("utf-8")
    except (OSError, ValueError):
        return None
    return field_line(text, field, value, toml=path.endswith(".toml"))


def field_line(text: str, field: str, value: object, *, toml: bool) -> int | None:
    """The 1-based line where the value of ``field`` starts in ``text``, or ``None`` if it is not found (or
    the text is one line, where a line number tells nothing)."""
    if "\n" not in text.rstrip("\n"):
        return None
    try:
        offset = _toml_offset(text, field, value) if toml else _json_offset(text, field)
    except (IndexError, ValueError):  # not the text the field came from: no line
        return None
    return None if offset is None else text.count("\n", 0, offset) + 1


# -- JSON: the path followed -----------------------------------------------------------------------------


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def _key(text: str, position: int) -> tuple[str, int]:
    """An object key at ``position`` (its opening quote) and where its value starts (past the colon)."""
    key, end = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]
    colon = _skip(text, end)
    if text[colon] != ":":
        raise ValueError("not an object member")
    return key, _skip(text, colon + 1)


def _json_offset(text: str, target: str) -> int | None:
    """Where the value at path ``target`` starts, walking the document iteratively (it may be deep)."""
    stack: list[tuple[str, str, int]] = []  # each open container: its bracket, path and current item's index
    position = _skip(text, 0)
    path = ""
    while True:
        if path == target:
            return position
        char = text[position]
        if char in "{[":
            after = _skip(text, position + 1)
            closing = "}" if char == "{" else "]"
            if text[after] != closing:
                stack.append((char, path, 0))
                if char == "{":
                    key, position = _key(text, after)
                    path = child(path, key)
                else:
                    position, path = after, child(path, 0)
                continue
            position = after + 1
        elif char == '"':
            position = json.decoder.scanstring(text, position + 1)[1]  # type: ignore[attr-defined]
        else:
            match = _SCALAR.match(text, position)
            if match is None:
                raise ValueError("not a JSON value")
            position = match.end()
        # The value ended: go on with the next item of the innermost container still open.
        while True:
            if not stack:
                return None
            position = _skip(text, position)
            kind, container, index = stack[-1]
            if text[position] == ",":
                after = _skip(text, position + 1)
                if kind == "{":
                    key, position = _key(text, after)
                    path = child(container, key)
                else:
                    stack[-1] = (kind, container, index + 1)
                    position, path = after, child(container, index + 1)
                break
            stack.pop()
            position += 1


# -- TOML: the value looked for --------------------------------------------------------------------------

_LAST_KEY: Final = re.compile(r"(?:^|\.)([^.\[\]]+)(?:\[\d+\])*$")


def _toml_offset(text: str, field: str, value: object) -> int | None:
    """Where the field's value is written: a string as a basic or literal string, preferably the first one
    after its own key; any other value at its key."""
    match = _LAST_KEY.search(field)
    key = match.group(1) if match is not None else None
    keys = [] if key is None else list(_key_positions(text, key))
    if not isinstance(value, str):
        return keys[0] if keys else None
    written = [json.dumps(value, ensure_ascii=False)]
    if "'" not in value and "\n" not in value:
        written.append(f"'{value}'")
    found = sorted(
        start for literal in written for start in (m.start() for m in re.finditer(re.escape(literal), text))
    )
    if not found:
        return keys[0] if keys else None
    for start in keys:
        after = [offset for offset in found if offset > start]
        if after:
            return after[0]
    return found[0]


def _key_positions(text: str, key: str) -> list[int]:
    """Where ``key = ...`` or a table header ending in ``key`` is written (bare or quoted)."""
    spelled = "|".join(re.escape(form) for form in (key, json.dumps(key), f"'{key}'"))
    pattern = re.compile(rf"^[ \t]*(?:(?:{spelled})[ \t]*=|\[\[?[^\]\n]*(?:{spelled})[ \t]*\]\]?)", re.M)
    return [match.start() for match in pattern.finditer(text)]
