"""args_digest: FNV-1a-64 over canonical JSON, the same digest loopctl records."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from ask_permissions._json_text import escape_surrogates, write_json

__all__ = ["args_digest", "canonical_json", "fnv1a_64"]

_OFFSET_BASIS: Final = 0xCBF29CE484222325
_PRIME: Final = 0x100000001B3
_MASK: Final = 0xFFFFFFFFFFFFFFFF

_encode_canonical = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str
).encode


def fnv1a_64(data: bytes) -> str:
    """FNV-1a, 64-bit, of ``data`` as 16 lowercase hex characters."""
    digest = _OFFSET_BASIS
    for byte in data:
        digest = ((digest ^ byte) * _PRIME) & _MASK
    return f"{digest:016x}"


def _json_key(key: object) -> str:
    # The text json itself would write for a non-string key, so that mixed key types can still be sorted.
    return (
        key if isinstance(key, str) else json.dumps(key) if key is None or isinstance(key, bool) else str(key)
    )


def _string_keys(value: object) -> object:
    if isinstance(value, Mapping):
        return {_json_key(key): _string_keys(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_string_keys(item) for item in value]
    return value


def _canonical_text(arguments: object) -> str:
    try:
        return _encode_canonical(arguments)
    except TypeError:  # keys of mixed types cannot be sorted as they are
        try:
            return _encode_canonical(_string_keys(arguments))
        except (TypeError, ValueError, RecursionError):
            return write_json(arguments, sort_keys=True, string_keys=True)
    except (ValueError, RecursionError):
        # A container inside itself, nesting deeper than the C encoder goes, an int past the digit limit.
        return write_json(arguments, sort_keys=True)


def canonical_json(arguments: object) -> str:
    """Compact JSON with object keys sorted recursively, non-ASCII kept, ``None`` as ``null``.

    Any value has one: a lone surrogate (which cannot be encoded as UTF-8) is written as its ``\\uXXXX``
    escape, a container met again inside itself as the string ``"<circular reference>"``, and values nested
    deeper than Python's recursion limit are written all the same.
    """
    return escape_surrogates(_canonical_text(arguments))


def args_digest(arguments: object) -> str:
    """The digest of a call's arguments: FNV-1a-64 over their canonical JSON, UTF-8 encoded."""
    text = _canonical_text(arguments)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: digest the canonical text, which escapes it
        data = escape_surrogates(text).encode("utf-8")
    return fnv1a_64(data)
