"""An action's arguments: the read-only copy made at submit, and the JSON a snapshot or a store can carry."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, NoReturn

from ask_permissions._errors import preview
from ask_permissions._strict import child, fail

__all__ = [
    "MAX_JSON_DEPTH",
    "FrozenDict",
    "FrozenList",
    "NotJSONError",
    "freeze_args",
    "json_call_id",
    "json_copy",
    "read_json",
]

MAX_JSON_DEPTH: Final = 256
"""How deeply JSON arguments may nest to be snapshotted or stored: deeper, Python's own ``json`` cannot
be relied on to read them back (it recurses), so they are refused with a clear error instead."""


def _read_only(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is read-only: a queued action's arguments never change")


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses changes: the mappings inside a queued action's ``args``.

    It compares, prints, pickles and serializes as the ``dict`` it holds; ``copy()`` (or ``dict(args)``)
    gives a changeable shallow copy.
    """

    __slots__ = ()

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def copy(self) -> dict[str, Any]:
        """A changeable shallow copy (a plain ``dict``)."""
        return dict(self)

    def __reduce__(self) -> tuple[Callable[..., FrozenDict], tuple[dict[str, Any]]]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` that refuses changes: the arrays inside a queued action's ``args``."""

    __slots__ = ()

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def copy(self) -> list[Any]:
        """A changeable shallow copy (a plain ``list``)."""
        return list(self)

    def __reduce__(self) -> tuple[Callable[..., FrozenList], tuple[list[Any]]]:
        return (FrozenList, (list(self),))


class NotJSONError(ValueError):
    """A value JSON cannot carry as it is, at ``path``."""

    def __init__(self, path: str, expected: str, value: object) -> None:
        super().__init__(f"{path}: expected {expected}; got {preview(value)}")
        self.path = path
        self.expected = expected
        self.value = value


_PLAIN: Final = frozenset({str, int, bool, type(None)})
_MAP, _LIST, _TUPLE = 0, 1, 2
_IN_PROGRESS: Final = object()  # a tuple being copied: it exists only once its items do
_NO_KEY: Final = object()
_big_int_floor: dict[int, int] = {}


def _fits_digit_limit(value: int) -> bool:
    """Whether ``str(value)`` works under Python's integer digit limit (which JSON text needs)."""
    limit = sys.get_int_max_str_digits()
    if limit == 0 or value.bit_length() <= 3 * limit:
        return True
    floor = _big_int_floor.get(limit)
    if floor is None:
        floor = _big_int_floor[limit] = 10**limit
    return -floor < value < floor


def _leaf(value: object, strict: bool, where: str, key: object = _NO_KEY) -> object:
    """A scalar as JSON would hold it (plain ``str``/``int``/``float``); others as they are, or refused.

    The path of a refused value is ``where``, or its ``key`` inside ``where``: built only for the error.
    """
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)  # a str-mixin Enum's str() is not its text
    expected = "a JSON value (dict, list, str, int, float, bool or None)"
    if isinstance(value, int):
        if not strict or _fits_digit_limit(value):
            return value if type(value) is int else int(value)
        expected = f"an integer of at most {sys.get_int_max_str_digits()} digits"
    elif isinstance(value, float):
        if not strict or math.isfinite(value):
            return value if type(value) is float else float(value)
        expected = "a finite number"
    elif not strict:
        return value
    raise NotJSONError(where if key is _NO_KEY else child(where, key), expected, value)  # type: ignore[arg-type]


def _kind(value: object) -> int | None:
    kind = type(value)
    if kind is dict:
        return _MAP
    if kind is list:
        return _LIST
    if kind in _PLAIN or kind is float:
        return None
    if isinstance(value, Mapping):
        return _MAP
    if isinstance(value, list):
        return _LIST
    if isinstance(value, tuple):
        return _TUPLE
    return None


class _Unusual(Exception):
    """The quick copy met something only the general copy handles (or reports): start over with it."""


_QUICK_DEPTH: Final = 32
_QUICK_CONTAINERS: Final = 1000
_QUICK_INT: Final = 1 << 64
# Exact types the quick copy takes as they are; in strict mode numbers are checked one by one.
_AS_IS: Final[frozenset[type]] = frozenset({str, bool, type(None), int, float})
_AS_IS_STRICT: Final[frozenset[type]] = frozenset({str, bool, type(None)})


def _quick(value: Any, strict: bool, freeze: bool, containers: list[int], depth: int) -> Any:
    """The copy of small plain JSON-shaped data (exact ``dict``/``list``/``tuple`` and scalars), bottom up.

    Raises ``_Unusual`` for anything else — subclasses, other types, non-string keys, big integers or NaN
    when ``strict``, more than ``_QUICK_CONTAINERS`` containers (a cycle, or parts shared many times),
    nesting past ``_QUICK_DEPTH`` — so that the general copy decides instead. Scalars inside a container
    are taken in the loop, not by a call: this runs on every submit.
    """
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        containers[0] += 1
        if depth >= _QUICK_DEPTH or containers[0] > _QUICK_CONTAINERS:
            raise _Unusual
        as_is = _AS_IS_STRICT if strict else _AS_IS
        depth += 1
        if kind is dict:
            items = {}
            for key, item in value.items():
                if type(key) is not str:
                    raise _Unusual
                items[key] = item if type(item) in as_is else _quick(item, strict, freeze, containers, depth)
            return FrozenDict(items) if freeze else items
        listed = [
            item if type(item) in as_is else _quick(item, strict, freeze, containers, depth) for item in value
        ]
        if kind is list or strict:
            return FrozenList(listed) if freeze else listed
        return tuple(listed)
    if kind is int:
        if strict and not -_QUICK_INT < value < _QUICK_INT:
            raise _Unusual
        return value
    if kind is float:
        if strict and not math.isfinite(value):
            raise _Unusual
        return value
    if kind in _AS_IS:
        return value
    raise _Unusual


def _flat(value: dict[Any, Any], as_is: frozenset[type]) -> bool:
    """Whether a dict holds only plain-str keys and ``as_is`` values: the usual arguments, copied whole."""
    for key, item in value.items():  # noqa: SIM110  # all() over a generator costs twice as much here
        if type(key) is not str or type(item) not in as_is:
            return False
    return True


def _copy(value: object, path: str, *, freeze: bool, strict: bool) -> object:
    """A JSON-shaped deep copy of ``value``.

    Mappings become dicts, lists lists (read-only ones with ``freeze``); tuples stay tuples unless
    ``strict``, where they become lists as JSON has it. With ``strict`` anything JSON cannot carry raises
    ``NotJSONError`` naming its path: other types, non-string keys, NaN, integers past the digit limit,
    cycles and nesting deeper than ``MAX_JSON_DEPTH``. Without it other values are kept as they are and
    cycles are copied as cycles. Iterative, so no depth raises ``RecursionError``; a container met twice
    is copied once.
    """
    if type(value) is dict and _flat(value, _AS_IS_STRICT if strict else _AS_IS):
        return FrozenDict(value) if freeze else dict(value)
    try:
        return _quick(value, strict, freeze, [0], 0)
    except _Unusual:
        pass
    kind = _kind(value)
    if kind is None:
        return _leaf(value, strict, path)
    return _Copier(freeze, strict).run(value, kind, path)


class _Copier:
    """One deep copy, depth-first with an explicit stack of frames."""

    __slots__ = ("copies", "make_dict", "make_list", "open_ids", "result", "stack", "strict")

    def __init__(self, freeze: bool, strict: bool) -> None:
        self.strict = strict
        self.make_dict: Callable[[], dict[Any, Any]] = FrozenDict if freeze else dict
        self.make_list: Callable[[], list[Any]] = FrozenList if freeze else list
        # id(source container) -> (the source, kept alive so that its id is not reused; its copy, or
        # _IN_PROGRESS for a tuple, which exists only once its items do).
        self.copies: dict[int, tuple[object, object]] = {}
        self.open_ids: set[int] = set()  # the containers being copied now: meeting one again is a cycle
        # Each frame: [items iterator, copy (a tuple's item buffer), kind, path, source, key pending].
        self.stack: list[list[Any]] = []
        self.result: object = None

    def run(self, value: object, kind: int, path: str) -> object:
        self.open(value, kind, path)
        stack, strict = self.stack, self.strict
        while stack:
            frame = stack[-1]
            entry = next(frame[0], None)
            if entry is None:
                self.close()
                continue
            key, item = entry
            where = frame[3]
            if frame[2] == _MAP:
                if isinstance(key, str):
                    key = key if type(key) is str else str.__str__(key)
                elif strict:
                    raise NotJSONError(where, "string keys", key)
                frame[5] = key
            item_kind = _kind(item)
            if item_kind is None:
                self.deliver(_leaf(item, strict, where, key))
                continue
            seen = self.copies.get(id(item))
            if seen is None:
                self.open(item, item_kind, child(where, key) if strict else where)
            elif strict and id(item) in self.open_ids:
                raise NotJSONError(child(where, key), "JSON without cycles", item)
            else:
                self.deliver(item if seen[1] is _IN_PROGRESS else seen[1])
        return self.result

    def open(self, source: Any, kind: int, where: str) -> None:
        if self.strict and len(self.stack) >= MAX_JSON_DEPTH:
            raise NotJSONError(where, f"JSON nested at most {MAX_JSON_DEPTH} deep", source)
        items: Iterator[tuple[Any, Any]]
        if kind == _MAP:
            target: Any = self.make_dict()
            items = iter(source.items())
        elif kind == _LIST or self.strict:
            kind, target, items = _LIST, self.make_list(), enumerate(source)
        else:
            target, items = [], enumerate(source)
        self.copies[id(source)] = (source, _IN_PROGRESS if kind == _TUPLE else target)
        self.open_ids.add(id(source))
        self.stack.append([items, target, kind, where, source, None])

    def close(self) -> None:
        _, done, kind, _, source, _ = self.stack.pop()
        self.open_ids.discard(id(source))
        if kind == _TUPLE:
            done = tuple(done)
            self.copies[id(source)] = (source, done)
        self.deliver(done)

    def deliver(self, item: object) -> None:
        if not self.stack:
            self.result = item
            return
        frame = self.stack[-1]
        if frame[2] == _MAP:
            dict.__setitem__(frame[1], frame[5], item)
        else:
            list.append(frame[1], item)


_NO_ARGS: Final = FrozenDict()


def freeze_args(value: object, *, strict: bool, path: str = "args") -> object:
    """The read-only copy of a submission's ``args`` (``None`` becomes ``{}``); see ``_copy``."""
    if value is None:
        return _NO_ARGS  # read-only, so every action without arguments can share it
    return _copy(value, path, freeze=True, strict=strict)


def json_copy(value: object, path: str) -> object:
    """A plain, changeable copy of ``value`` made only of JSON types (``NotJSONError`` otherwise)."""
    return _copy(value, path, freeze=False, strict=True)


def read_json(value: object, path: str) -> object:
    """The read-only copy of JSON snapshot data; ``InvalidSnapshotError`` naming the path otherwise."""
    try:
        return _copy(value, path, freeze=True, strict=True)
    except NotJSONError as error:
        fail(error.path, error.expected, error.value)


def json_call_id(call_id: object, path: str) -> str | int | None:
    """A ``tool_call_id`` as JSON carries it: a string, an integer or None (``NotJSONError`` otherwise)."""
    if call_id is None:
        return None
    if isinstance(call_id, bool) or not isinstance(call_id, str | int):
        raise NotJSONError(path, "a string, an integer or None", call_id)
    return _leaf(call_id, True, path)  # type: ignore[return-value]
