"""Whether a text can occur in compact JSON, as argument patterns see a call's mapping arguments."""

from __future__ import annotations

from typing import Final

__all__ = ["can_occur_in_json"]

# Where a reader of compact JSON (``separators=(",", ":")``, non-ASCII kept) can be: inside a string, just
# after a backslash in one, inside a \u escape, just after a string's closing quote, or between tokens.
_STRING, _ESCAPE, _HEX1, _HEX2, _HEX3, _HEX4, _CLOSED, _BETWEEN = range(8)
_EVERYWHERE: Final = frozenset(range(8))

# What json writes after a backslash: \" \\ \b \f \n \r \t, or \u and four hex digits.
_ESCAPED: Final = frozenset('"\\bfnrt')
_HEX: Final = frozenset("0123456789abcdefABCDEF")
# Between tokens: brackets, separators, numbers and the literals true, false, null, NaN and Infinity;
# compact JSON has no whitespace there.
_BETWEEN_TOKENS: Final = frozenset("{}[],:0123456789+-.eEtrufalsnNIiy")
_AFTER_STRING: Final = frozenset(":,}]")


def can_occur_in_json(text: str) -> bool:
    """Whether ``text`` can be part of some compact JSON text (a generous test: ``False`` is certain).

    JSON writes ``"`` and ``\\`` inside strings as ``\\"`` and ``\\\\``, and tabs, line breaks and other
    control characters as escapes, so a text holding them raw in the middle of a value never occurs.
    """
    if text.isprintable() and '"' not in text and "\\" not in text:
        return True  # the inside of a string holds it (the common case, decided without the automaton)
    states = set(_EVERYWHERE)  # the text may start anywhere in the JSON
    for char in text:
        following: set[int] = set()
        for state in states:
            following.update(_step(state, char))
        if not following:
            return False
        states = following
    return True


def _step(state: int, char: str) -> tuple[int, ...]:
    if state == _STRING:
        if char == '"':
            return (_CLOSED,)
        if char == "\\":
            return (_ESCAPE,)
        return () if ord(char) < 0x20 else (_STRING,)
    if state == _ESCAPE:
        if char in _ESCAPED:
            return (_STRING,)
        return (_HEX1,) if char == "u" else ()
    if state in (_HEX1, _HEX2, _HEX3, _HEX4):
        if char not in _HEX:
            return ()
        return (_STRING,) if state == _HEX4 else (state + 1,)
    if state == _CLOSED:
        return (_BETWEEN,) if char in _AFTER_STRING else ()
    if char == '"':
        return (_STRING,)
    return (_BETWEEN,) if char in _BETWEEN_TOKENS else ()
