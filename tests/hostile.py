"""Hostile values for the snapshot readers: what no JSON parser returns, but a host can still pass.

Integers past Python's digit limit, values nested thousands deep, containers that contain themselves, and
objects whose ``__repr__``, ``__eq__``, ``__hash__`` or ``__iter__`` raise. ``hostile_snapshots`` puts one of
them somewhere in a valid snapshot, so the fuzzing reaches the readers of every field, not only the first.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import pytest
from hypothesis import strategies as st

from ask_permissions import InvalidSnapshotError

__all__ = [
    "HUGE_INT",
    "HostileDict",
    "HostileList",
    "HostileObject",
    "HostileStr",
    "UnhashableStr",
    "assert_reads_or_rejects",
    "assert_refused",
    "circular_dict",
    "circular_list",
    "hostile_snapshots",
    "hostile_values",
    "nested",
]

HUGE_INT = 10**5000
"""An int past ``sys.get_int_max_str_digits()``: ``repr()`` and ``str()`` of it raise ``ValueError``."""

MESSAGE_LIMIT = 1000
"""The longest a snapshot error message may be, whatever the value it shows."""


class HostileError(Exception):
    """What the hostile objects raise: no reader has any reason to expect it."""


def _refuse(*_: object) -> NoReturn:
    raise HostileError("hostile")


class HostileObject:
    """An object whose repr, str and comparisons all raise (its hash works, so it can be a key)."""

    __repr__ = __str__ = __eq__ = __ne__ = __lt__ = __format__ = _refuse
    __hash__ = object.__hash__


class HostileStr(str):
    """A str subclass whose own methods raise; its text, read with ``str`` methods, is fine."""

    __eq__ = __ne__ = __lt__ = __iter__ = __len__ = __contains__ = __getitem__ = _refuse
    __repr__ = __str__ = __format__ = __add__ = __mod__ = _refuse
    __hash__ = str.__hash__


class UnhashableStr(HostileStr):
    """A hostile str whose hash raises too (it cannot be a key, only a value)."""

    __hash__ = _refuse


class HostileDict(dict[Any, Any]):
    """A dict subclass whose mapping methods raise."""

    __iter__ = __len__ = __contains__ = __getitem__ = keys = items = values = get = _refuse
    __repr__ = _refuse


class HostileList(list[Any]):
    """A list subclass whose sequence methods raise."""

    __iter__ = __len__ = __getitem__ = __repr__ = _refuse


def nested(depth: int, leaf: object = "x") -> object:
    """``leaf`` inside ``depth`` lists and dicts, alternately (built without recursion)."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


def circular_dict() -> dict[str, object]:
    """A dict that contains itself."""
    value: dict[str, object] = {"version": 1}
    value["self"] = value
    return value


def circular_list() -> list[object]:
    """A list that contains itself."""
    value: list[object] = ["bash"]
    value.append(value)
    return value


_HOSTILE_TEXTS = ("", "bash", "1", "string", "regexp", "all", "allow", "deny", "i")
# Made on demand: Hypothesis hashes the values of sampled_from, and some of these cannot be hashed.
_HOSTILE_FACTORIES: tuple[Callable[[str], object], ...] = (
    HostileStr,
    UnhashableStr,
    lambda text: HostileDict({"type": "string", "value": text}),
)

hostile_values: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from((HUGE_INT, -HUGE_INT)),
    st.sampled_from((2000, 5000)).map(nested),
    st.builds(HostileObject),
    st.builds(
        lambda make, text: make(text), st.sampled_from(_HOSTILE_FACTORIES), st.sampled_from(_HOSTILE_TEXTS)
    ),
    st.builds(lambda: HostileList(["bash"])),
    st.builds(circular_dict),
    st.builds(circular_list),
)
"""One hostile value (a fresh one each time, so tests may keep what they are given)."""


def _paths(node: object) -> Iterator[list[object]]:
    """The paths (key lists) to every node of a plain JSON snapshot, the root's ``[]`` first."""
    stack: list[tuple[list[object], object]] = [([], node)]
    while stack:
        path, value = stack.pop()
        yield path
        if isinstance(value, dict):
            stack.extend(([*path, key], item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend(([*path, index], item) for index, item in enumerate(value))


def _replace(snapshot: object, path: list[object], value: object, as_key: bool) -> object:
    if not path:
        return value
    snapshot = copy.deepcopy(snapshot)
    parent: Any = snapshot
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if as_key and isinstance(parent, dict):
        parent[value] = parent.pop(last)  # the hostile value becomes a key (it is hashable)
    else:
        parent[last] = value
    return snapshot


@st.composite
def hostile_snapshots(draw: st.DrawFn, valid: st.SearchStrategy[Any]) -> object:
    """A snapshot drawn from ``valid`` with one node (or, where it can be, one key) hostile."""
    snapshot = draw(valid)
    path = draw(st.sampled_from(list(_paths(snapshot))))
    value = draw(hostile_values)
    as_key = draw(st.booleans())
    try:
        hash(value)
    except Exception:
        as_key = False
    return _replace(snapshot, path, value, as_key and bool(path))


T = TypeVar("T")


def assert_reads_or_rejects(read: Callable[[Any], T], snapshot: object) -> T | None:
    """``read(snapshot)``'s result, or ``None`` when it raised exactly InvalidSnapshotError.

    Any other exception fails the test, and so does a message that cannot be formatted or is unbounded.
    """
    try:
        return read(snapshot)
    except InvalidSnapshotError as error:
        refused = error
    message = str(refused)
    assert len(message) <= MESSAGE_LIMIT, message[:200]
    assert isinstance(refused.path, str)
    return None


def assert_refused(read: Callable[[Any], object], snapshot: object, path: str) -> InvalidSnapshotError:
    """``read(snapshot)`` raises InvalidSnapshotError at ``path``, with a short message."""
    with pytest.raises(InvalidSnapshotError) as caught:
        read(snapshot)
    message = str(caught.value)
    assert caught.value.path == path
    assert len(message) <= MESSAGE_LIMIT
    assert message.startswith(f"{path or 'snapshot'}: expected ")
    return caught.value
