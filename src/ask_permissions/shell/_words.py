"""What a word of the tree means: its value as bash passes it, and whether the shell may change it.

A word's value is its text after quote removal, with ``$'…'`` decoded and line continuations dropped.
What only the running shell can work out (a parameter, a substitution, a glob, braces, a tilde) keeps its
source text in place: ``"$HOME/x"`` has the value ``$HOME/x``, and such a word ``expands``.
"""

from __future__ import annotations

from typing import Final

from ._tree import (
    AnsiCQuoted,
    Arithmetic,
    BraceExpansion,
    CommandSubstitution,
    DoubleQuoted,
    Escaped,
    ExtGlob,
    Glob,
    Literal,
    Parameter,
    Part,
    ProcessSubstitution,
    SingleQuoted,
    Tilde,
    Word,
)

__all__ = ["part_value", "word_expands", "word_may_name_any_program", "word_stars", "word_value"]

_ANY_PROGRAM: Final = (
    Glob,
    ExtGlob,
    BraceExpansion,
    Parameter,
    CommandSubstitution,
    ProcessSubstitution,
    Arithmetic,
)
"""Parts that may make a command name any program (a tilde only changes the directory part)."""

_EXPANSIONS: Final = (Parameter, CommandSubstitution, Arithmetic)


def part_value(part: Part) -> str:
    """The value of one part of a word (an expansion keeps its source text)."""
    kind = type(part)
    if kind is Literal or kind is SingleQuoted:
        return part.text  # type: ignore[union-attr]  # both have text
    if kind is Escaped:
        return part.char  # type: ignore[union-attr]  # an Escaped
    if kind is AnsiCQuoted:
        return part.value  # type: ignore[union-attr]  # an AnsiCQuoted
    if kind is DoubleQuoted or kind is BraceExpansion:
        return "".join(part_value(inner) for inner in part.parts)  # type: ignore[union-attr]  # both
    if kind is ExtGlob:
        return f"{part.operator}({''.join(part_value(inner) for inner in part.parts)})"  # type: ignore[union-attr]
    return part.text  # type: ignore[union-attr]  # expansions, globs and tildes keep their text


def word_value(word: Word) -> str:
    """The word as bash passes it to the command, where that does not depend on the running shell."""
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is Literal:
        return parts[0].text
    return "".join(part_value(part) for part in parts)


def _part_expands(part: Part) -> bool:
    if isinstance(part, DoubleQuoted):
        return any(isinstance(inner, _EXPANSIONS) for inner in part.parts)
    return isinstance(part, (*_ANY_PROGRAM, Tilde))


def word_expands(word: Word) -> bool:
    """Whether the shell may change the word: an unquoted glob character, braces, a leading tilde, or a
    parameter expansion, substitution or arithmetic expansion (quoted or not)."""
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is Literal:
        return False
    return any(_part_expands(part) for part in parts)


def word_may_name_any_program(word: Word) -> bool:
    """Whether the word, as a command name, may run any program: it holds a glob, braces, an expansion or a
    substitution (quoted or not)."""
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is Literal:
        return False
    for part in parts:
        if isinstance(part, _ANY_PROGRAM):
            return True
        if isinstance(part, DoubleQuoted) and any(isinstance(inner, _EXPANSIONS) for inner in part.parts):
            return True
    return False


def word_stars(word: Word) -> tuple[int, ...]:
    """Where the word's unquoted ``*`` stand in its value (a specifier's wildcards)."""
    stars: list[int] = []
    position = 0
    for part in word.parts:
        if isinstance(part, Glob) and part.text == "*":
            stars.append(position)
        position += len(part_value(part))
    return tuple(stars)
