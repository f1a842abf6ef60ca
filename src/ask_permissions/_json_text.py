"""Text of any argument value, even one the C JSON encoder or ``str()`` cannot write.

Models and hosts send arguments nested far deeper than Python's recursion limit, containers that contain
themselves and integers past Python's digit limit. The fast paths (``json``'s C encoder, ``str()``) fail on
those; the writers here give the same text for every part the fast path could write, without recursion, so
a deny rule still finds the text it looks for. They are fallbacks: call them only when the fast path fails.
"""

from __future__ import annotations

import json.encoder
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ["CIRCULAR_MARKER", "escape_surrogates", "write_json", "write_repr"]

CIRCULAR_MARKER: Final = "<circular reference>"
"""Written (as a JSON string) in place of a container met again inside itself."""

_encode_string: Final[Callable[[str], str]] = json.encoder.encode_basestring  # as json's ensure_ascii=False
_CIRCULAR_JSON: Final = _encode_string(CIRCULAR_MARKER)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text with each surrogate code point written as its ``\\uXXXX`` escape.

    A lone surrogate (models emit them) cannot be encoded as UTF-8. In JSON text it only ever occurs inside
    a string literal, and its escape reads back as the same string, so the result is equivalent JSON that
    encodes.
    """
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _number_text(value: int | float) -> str:
    # The texts json's encoder writes for numbers (allow_nan=True), floats and ints subclasses included.
    if isinstance(value, float):
        if math.isfinite(value):
            return float.__repr__(value)
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    try:
        return int.__repr__(value)
    except ValueError:  # past sys.get_int_max_str_digits(): no decimal text can be made
        return _encode_string(f"<int of about {int(value.bit_length() * 0.30103)} digits>")


def _leaf_text(value: object) -> str:
    """A value that is not a container, as json's encoder (``default=str``) writes it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _encode_string(value)
    if isinstance(value, int | float):
        return _number_text(value)
    return _encode_string(str(value))


def _native_key(key: object) -> str:
    # json's own conversion of keys; a key it refuses (a tuple, say) is written as its str().
    if isinstance(key, str):
        return key
    if key is None or key is True or key is False:
        return _leaf_text(key)
    if isinstance(key, int | float):
        return _number_text(key)
    return str(key)


def _string_key(key: object) -> str:
    # The conversion canonical JSON applies to every key once key types are mixed (see policy/_digest.py).
    if isinstance(key, str):
        return key
    if key is None or key is True or key is False:
        return _leaf_text(key)
    try:
        return str(key)
    except ValueError:  # an int past the digit limit
        return _number_text(key) if isinstance(key, int) else repr(key)


class _UnsortableKeys(Exception):
    """A mapping's keys are of types that cannot be compared with each other."""


def _key_of(pair: tuple[Any, object]) -> Any:
    return pair[0]


def _object_members(
    value: Mapping[object, object], *, sort_keys: bool, string_keys: bool
) -> Iterator[tuple[object, object]]:
    """The ``(key, member)`` pairs of a JSON object, in the order json writes them (keys not yet text)."""
    if string_keys:
        # Converted first, then sorted: equal converted keys keep the last value, as a dict would.
        converted = {_string_key(key): item for key, item in value.items()}
        return iter(sorted(converted.items()) if sort_keys else converted.items())
    if not sort_keys or len(value) < 2:
        return iter(value.items())
    try:
        return iter(sorted(value.items(), key=_key_of))
    except TypeError:
        raise _UnsortableKeys from None


def write_json(value: object, *, sort_keys: bool = False, string_keys: bool = False) -> str:
    """Compact JSON of ``value``, non-ASCII kept, written without recursion.

    The text is json's (``separators=(",", ":")``, ``ensure_ascii=False``, ``default=str``) wherever json
    could write it. Beyond that: a container met again inside itself is the string ``CIRCULAR_MARKER``, an
    int past the digit limit a string saying so, and a key json refuses its ``str()``. With ``string_keys``,
    every mapping is an object whose keys are converted to strings before sorting (as canonical JSON does for
    keys of mixed types); otherwise only ``dict`` is an object, as for json. With ``sort_keys`` and keys that
    cannot be compared, the whole value is written as with ``string_keys``.
    """
    try:
        return _write_json(value, sort_keys=sort_keys, string_keys=string_keys)
    except _UnsortableKeys:
        return _write_json(value, sort_keys=sort_keys, string_keys=True)


_DONE: Final = object()
"""What ``next`` gives for a container whose members are all written."""

# The writers keep one iterator per open container, and little else: every object that lives while a deep
# value is written is one more for the garbage collector to walk over again and again.


def _write_json(value: object, *, sort_keys: bool, string_keys: bool) -> str:
    parts: list[str] = []
    on_path: set[int] = set()  # ids of the containers being written: the current one and its parents
    members: list[Iterator[Any]] = []  # per open container, innermost last: its members still to write
    is_object: list[bool] = []  # ... whether it is an object (its members are (key, member) pairs)
    started: list[bool] = []  # ... whether a member of it was written (the next one needs a comma)
    ids: list[int] = []  # ... its id
    while True:
        container: Iterator[Any] | None = None
        # dict first: the Mapping check is an ABC's, much slower, and json itself only writes dicts.
        if isinstance(value, dict) or (string_keys and isinstance(value, Mapping)):
            container, opening = _object_members(value, sort_keys=sort_keys, string_keys=string_keys), "{"
        elif isinstance(value, list | tuple):
            container, opening = iter(value), "["
        else:
            parts.append(_leaf_text(value))
        if container is not None:
            if id(value) in on_path:
                parts.append(_CIRCULAR_JSON)
            else:
                on_path.add(id(value))
                parts.append(opening)
                members.append(container)
                is_object.append(opening == "{")
                started.append(False)
                ids.append(id(value))
        # The next value to write: the next member of the innermost unfinished container.
        while members:
            member: Any = next(members[-1], _DONE)
            if member is _DONE:
                members.pop()
                started.pop()
                on_path.discard(ids.pop())
                parts.append("}" if is_object.pop() else "]")
                continue
            if started[-1]:
                parts.append(",")
            else:
                started[-1] = True
            if is_object[-1]:
                key, value = member
                parts.append(_encode_string(key if type(key) is str else _native_key(key)) + ":")
            else:
                value = member
            break
        else:
            return "".join(parts)


def _own_repr(value: object, kind: type) -> bool:
    """Whether ``value`` is written by ``kind``'s own ``repr`` (a subclass may write itself otherwise)."""
    return getattr(type(value), "__repr__", None) is getattr(kind, "__repr__", None)


def write_repr(value: object) -> str:
    """``repr(value)`` written without recursion for nested lists, tuples and dicts.

    Any other value inside (a dict's keys too) is written by its own ``repr``; a container met again inside
    itself is ``[...]``, ``(...)`` or ``{...}``, as ``repr`` writes it.
    """
    parts: list[str] = []
    on_path: set[int] = set()
    members: list[Iterator[Any]] = []
    member: Any
    closings: list[str] = []  # the text that closes each open container ("]", ")", ",)" or "}")
    started: list[bool] = []
    ids: list[int] = []
    while True:
        container: Iterator[Any] | None = None
        if isinstance(value, dict) and _own_repr(value, dict):
            container, opening, closing = iter(value.items()), "{", "}"
        elif isinstance(value, list) and _own_repr(value, list):
            container, opening, closing = iter(value), "[", "]"
        elif isinstance(value, tuple) and _own_repr(value, tuple):
            # A one-element tuple keeps its comma: (x,)
            container, opening, closing = iter(value), "(", ",)" if len(value) == 1 else ")"
        else:
            parts.append(repr(value))
        if container is not None:
            if id(value) in on_path:
                parts.append(f"{opening}...{closing[-1]}")
            else:
                on_path.add(id(value))
                parts.append(opening)
                members.append(container)
                closings.append(closing)
                started.append(False)
                ids.append(id(value))
        while members:
            member = next(members[-1], _DONE)
            if member is _DONE:
                members.pop()
                started.pop()
                on_path.discard(ids.pop())
                parts.append(closings.pop())
                continue
            if started[-1]:
                parts.append(", ")
            else:
                started[-1] = True
            if closings[-1] == "}":
                key, value = member
                parts.append(repr(key) + ": ")
            else:
                value = member
            break
        else:
            return "".join(parts)
