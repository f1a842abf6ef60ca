"""Strict reading of snapshot data: every failure names the path to the bad field."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import NoReturn, TypeVar

from ._errors import InvalidSnapshotError, preview

__all__ = [
    "SNAPSHOT_VERSION",
    "child",
    "fail",
    "guard_reading",
    "known_keys",
    "read_bool",
    "read_list",
    "read_mapping",
    "read_str",
    "read_text",
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
            fail(child(path, key), f"no such key ({known_keys(key, known)})", value[key])
    for key in required:
        if key not in value:
            fail(child(path, key), "a value (the key is required)", None)
    return value


def known_keys(key: str, known: Iterable[str]) -> str:
    """``known: a, b, c`` and, when one is close to ``key`` (a typo), ``; did you mean 'b'?``."""
    names = sorted(known)
    text = "known: " + ", ".join(names)
    nearest = difflib.get_close_matches(key, names, n=1, cutoff=0.6) or difflib.get_close_matches(
        key.casefold(), names, n=1, cutoff=0.6
    )
    return f"{text}; did you mean {nearest[0]!r}?" if nearest else text


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


T = TypeVar("T")


def guard_reading(read: Callable[[], T], snapshot: object, path: str) -> T:
    """``read()``, with any exception but ``InvalidSnapshotError`` turned into one for ``snapshot``.

    The strict readers check every value they meet, but a snapshot can hold objects that fail when merely
    looked at: a ``dict`` subclass whose ``__iter__`` raises, a ``str`` subclass whose ``__eq__`` or
    ``__hash__`` does, values nested past the recursion limit. A caller of ``from_snapshot`` must get the
    documented error for those too, never the object's own exception.
    """
    try:
        return read()
    except InvalidSnapshotError:
        raise
    except Exception as error:
        raise InvalidSnapshotError(
            f"{path or 'snapshot'}: expected plain snapshot data (dicts, lists, strings, numbers); got "
            f"{preview(snapshot)}, which raised {_type_name(error)} when read",
            path=path,
            value=snapshot,
        ) from error


def _type_name(error: BaseException) -> str:
    try:
        return str(type(error).__qualname__)
    except Exception:  # a metaclass can make even the name fail
        return "an exception"


def read_text(value: object, path: str, *, non_empty: bool = False) -> str:
    """The plain text of a string (non-empty when asked), refusing anything else.

    A ``str`` subclass's own methods (``__len__``, ``__eq__``, ``__hash__``) are never called, here or by
    whoever keeps the text: it is read with ``str``'s.
    """
    text = str.__str__(value) if isinstance(value, str) else None
    if text is None or (non_empty and not text):
        fail(path, "a non-empty string" if non_empty else "a string", value)
    return text
