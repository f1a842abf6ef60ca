"""Glob matching in linear time, for words and path segments that a model chooses.

A regex such as ``a.*a.*a.*b`` backtracks polynomially on a long subject without ``b``: ten thousand
characters take hours. A glob whose only repeat is ``*`` needs no backtracking: its fixed pieces are found
left to right, each as early as possible, which finds a match whenever there is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import final

__all__ = ["Glob"]


@final
class Glob:
    """A glob of fixed pieces joined by ``*``; in a piece, ``any_character`` (if given) matches one character.

    Immutable; matching takes time linear in the subject's length times the number of pieces.
    """

    __slots__ = ("_lengths", "_pieces")

    def __init__(self, pieces: Sequence[str], *, any_character: str | None = None) -> None:
        if not pieces:
            raise ValueError("a glob has at least one piece")
        compiled: list[str | re.Pattern[str]] = []
        for piece in pieces:
            if any_character is not None and any_character in piece:
                parts = (re.escape(part) for part in piece.split(any_character))
                compiled.append(re.compile(".".join(parts), re.DOTALL))  # fixed length: no backtracking
            else:
                compiled.append(piece)
        self._pieces: tuple[str | re.Pattern[str], ...] = tuple(compiled)
        # Each character of a piece stands for one character of the subject.
        self._lengths: tuple[int, ...] = tuple(len(piece) for piece in pieces)

    def __repr__(self) -> str:
        shown = "*".join(piece if isinstance(piece, str) else piece.pattern for piece in self._pieces)
        return f"<Glob {shown!r}>"

    def matches(self, subject: str) -> bool:
        """Whether the whole of ``subject`` matches."""
        pieces, lengths = self._pieces, self._lengths
        if len(pieces) == 1:
            return lengths[0] == len(subject) and _at(pieces[0], subject, 0)
        end = len(subject) - lengths[-1]
        if end < lengths[0] or not _at(pieces[0], subject, 0) or not _at(pieces[-1], subject, end):
            return False
        position = lengths[0]
        for piece, length in zip(pieces[1:-1], lengths[1:-1], strict=True):
            found = _find(piece, subject, position, end)
            if found < 0:
                return False
            position = found + length
        return True


def _at(piece: str | re.Pattern[str], subject: str, position: int) -> bool:
    if isinstance(piece, str):
        return subject.startswith(piece, position)
    return piece.match(subject, position) is not None


def _find(piece: str | re.Pattern[str], subject: str, start: int, end: int) -> int:
    if isinstance(piece, str):
        return subject.find(piece, start, end)
    found = piece.search(subject, start, end)
    return -1 if found is None else found.start()
