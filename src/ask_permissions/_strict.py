"""Strict reading of snapshot data: every failure names the path to the bad field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NoReturn

from ._errors import InvalidSnapshotError, preview

__all__ = [
    "SNAPSHOT_VERSION",
    "child",
    "fail",
    "read_bool",
    "read_list",
    "read_mapping",
    "read_str",
    "read_version",
]

SNAPSHOT_VERSION = 1


def child(path: str, key: str | int) -> str:
    """The path of ``key`` inside ``path``: ``rules[2]`` or ``rules[2].tool_pattern``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def fail(path: str, expected: str, value: object) -> NoReturn:
    """Raise ``InvalidSnapshotError`` for ``value`` at ``path``."""
    where = path or "snapshot"
    raise InvalidSnapshotError(f"{where}: expected {expected}; got {preview(value)}", path=path, value=value)


def read_mapping(
    value: object,
    path: str,
    *,
    required: Iterable[str] = (),
    optional: Iterable[str] = (),
) -> Mapping[str, object]:
    """Check that ``value`` is a mapping with string keys, all ``required`` keys and nothing unknown."""
    if not isinstance(value, Mapping):
        fail(path, "an object", value)
    required = tuple(required)
    known = set(required).union(optional)
    for key in value:
        if not isinstance(key, str):
            fail(path, "string keys", key)
        if key not in known:
            fail(child(path, key), "no such key (known: " + ", ".join(sorted(known)) + ")", value[key])
    for key in required:
        if key not in value:
            fail(child(path, key), "a value (the key is required)", None)
    return value


def read_version(snapshot: Mapping[str, object], path: str) -> None:
    """Check the snapshot's ``version`` field."""
    version = snapshot.get("version")
    if type(version) is not int or version != SNAPSHOT_VERSION:
        fail(child(path, "version"), f"{SNAPSHOT_VERSION}", version)


def read_str(value: object, path: str, *, non_empty: bool = False) -> str:
    """Check that ``value`` is a string (non-empty when asked)."""
    if not isinstance(value, str) or (non_empty and not value):
        fail(path, "a non-empty string" if non_empty else "a string", value)
    return value


def read_bool(value: object, path: str) -> bool:
    """Check that ``value`` is a boolean (``0`` and ``1`` are not)."""
    if not isinstance(value, bool):
        fail(path, "true or false", value)
    return value


def read_list(value: object, path: str) -> list[object]:
    """Check that ``value`` is a list (a JSON array)."""
    if not isinstance(value, list | tuple):
        fail(path, "an array", value)
    return list(value)
