"""What command, path and domain specifiers share: the argument they read, their key, their snapshots."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ask_permissions._errors import preview
from ask_permissions._strict import child, fail, read_mapping, read_str

__all__ = ["check_key", "read_specifier_snapshot", "subject_values"]


def check_key(key: object, owner: str) -> str | None:
    """A specifier's argument key as given: ``None`` (the kind's default keys) or a non-empty string.

    Raises:
        TypeError: not a string or ``None``.
        ValueError: an empty string.
    """
    if key is None:
        return None
    if not isinstance(key, str):
        raise TypeError(f"{owner}: key: expected a string or None; got {preview(key)}")
    if not key:
        raise ValueError(f"{owner}: key: expected a non-empty argument name; got ''")
    return str.__str__(key)


def subject_values(arguments: object, key: str | None, defaults: tuple[str, ...]) -> tuple[object, ...]:
    """The values a specifier reads from a call's arguments, in key order; empty when there are none.

    A plain string argument is the subject itself. In a mapping, the value at ``key``, or else the value at
    each of the ``defaults`` present. Values are returned as found: a specifier that meets a value that is
    not a string does not match it.
    """
    if type(arguments) is not dict:  # the common case first: isinstance of an ABC costs more than this
        if isinstance(arguments, str):
            return (arguments,)
        if not isinstance(arguments, Mapping):
            return ()
    if key is not None:
        return (arguments[key],) if key in arguments else ()
    return tuple(arguments[name] for name in defaults if name in arguments)


def read_specifier_snapshot(
    data: Mapping[str, Any], path: str, kind: str, extra: Iterable[str] = ()
) -> tuple[str, str | None]:
    """The ``text`` and ``key`` of a specifier pattern's snapshot of type ``kind``, with ``extra`` required.

    Raises:
        InvalidSnapshotError: not a mapping, an unknown or missing key, another type, or a mistyped value.
    """
    read_mapping(data, path, required=("type", "text", *extra), optional=("key",))
    if data["type"] != kind:
        fail(child(path, "type"), repr(kind), data["type"])
    text = read_str(data["text"], child(path, "text"))
    key = read_str(data["key"], child(path, "key"), non_empty=True) if "key" in data else None
    return text, key
