"""Words as a POSIX shell quotes them: quoting a word so the shell reads it back as it is, joining words,
and splitting a line into words as the shell would (quotes and backslashes, nothing expanded).

For text that is run without a shell (a hook's command) and for rule text written back (suggestions); a
command under check is read by the parser, never split here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["join_words", "quote_word", "specifier_text", "split_words"]

_SAFE: Final = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
_PLAIN_SPECIFIER_WORD: Final = re.compile(r"[\w@%+=:,./^-][\w@%+=:,./~^-]*")
_BLANKS: Final = frozenset(" \t\r\n")
_DOUBLE_QUOTED_ESCAPES: Final = frozenset('$`"\\\n')


def quote_word(word: str) -> str:
    """``word`` quoted for a POSIX shell: as it is when it holds only safe characters, else in single
    quotes (each ``'`` written ``'"'"'``); the empty word is ``''``."""
    if _SAFE.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def specifier_text(words: Iterable[str]) -> str:
    """Words as a command specifier reads them back (a rule written for exactly this command): plain ones as
    they are, others quoted, so that a ``*`` in a word stays a literal ``*``."""
    return " ".join(word if _PLAIN_SPECIFIER_WORD.fullmatch(word) else quote_word(word) for word in words)


def join_words(words: Iterable[str]) -> str:
    """The words as one command line a POSIX shell splits back into them."""
    return " ".join(quote_word(word) for word in words)


def split_words(text: str) -> list[str]:
    """The words a POSIX shell splits ``text`` into, with its quoting (``'…'``, ``"…"``, backslashes,
    line continuations) removed and nothing expanded or treated as an operator.

    Raises:
        ValueError: an unterminated quote, or a backslash at the very end.
    """
    words: list[str] = []
    current: list[str] = []
    in_word = False
    index = 0
    size = len(text)
    while index < size:
        char = text[index]
        if char in _BLANKS:
            if in_word:
                words.append("".join(current))
                current = []
                in_word = False
            index += 1
            continue
        in_word = True
        if char == "'":
            close = text.find("'", index + 1)
            if close < 0:
                raise ValueError("an unterminated ' quote")
            current.append(text[index + 1 : close])
            index = close + 1
        elif char == '"':
            index = _double_quoted(text, index + 1, current)
        elif char == "\\":
            if index + 1 >= size:
                raise ValueError("a backslash at the end")
            if text[index + 1] != "\n":  # a line continuation disappears
                current.append(text[index + 1])
            elif not current:
                in_word = False
            index += 2
        else:
            current.append(char)
            index += 1
    if in_word:
        words.append("".join(current))
    return words


def _double_quoted(text: str, index: int, current: list[str]) -> int:
    """Read a double-quoted part from ``index`` (after the quote) into ``current``: the index after it."""
    size = len(text)
    while index < size:
        char = text[index]
        if char == '"':
            return index + 1
        if char == "\\" and index + 1 < size and text[index + 1] in _DOUBLE_QUOTED_ESCAPES:
            if text[index + 1] != "\n":
                current.append(text[index + 1])
            index += 2
            continue
        current.append(char)
        index += 1
    raise ValueError('an unterminated " quote')
