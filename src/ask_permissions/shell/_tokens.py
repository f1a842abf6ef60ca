"""The tokenizer of bash's grammar: a table of named regexes and a cursor over one text.

bash's tokens depend on where they stand (a ``}`` is a keyword only where a command starts, a ``#`` starts a
comment only where a word starts, a heredoc's body starts after the end of its line), so the parser asks
for the token it expects at the cursor, as pypa/packaging's tokenizer is asked, rather than reading a
stream. Every long run (plain text, a quoted string, a heredoc body) is matched by one regex or found by
one ``str.find``: nothing here walks a text one character at a time in Python.
"""

from __future__ import annotations

import functools
import re
from typing import Final, final

__all__ = ["RULES", "Tokenizer", "heredoc_body"]

_METACHARACTERS: Final = " \t\n|&;()<>"

RULES: Final[dict[str, re.Pattern[str]]] = {
    # Blanks between tokens, line continuations among them.
    "BLANKS": re.compile(r"(?:[ \t]+|\\\n)+"),
    "COMMENT": re.compile(r"#[^\n]*"),
    # Control operators, longest first.
    "CONTROL": re.compile(r";;&|;;|;&|&&|\|\||\|&|[;&|]"),
    # A redirection operator with its optional descriptor (a number or {name}); < and > before ( start a
    # process substitution instead, which is a word.
    "REDIRECTION": re.compile(
        r"(?:(?P<fd>[0-9]+)|\{(?P<variable>[A-Za-z_][A-Za-z0-9_]*)\})?"
        r"(?P<operator>&>>|&>|<<<|<<-|<<|<>|<&|>>|>\||>&|<(?!\()|>(?!\())"
    ),
    # A keyword where a command starts: only a whole word (followed by a metacharacter or the end).
    "RESERVED": re.compile(
        r"(?:if|then|else|elif|fi|case|esac|for|select|while|until|do|done|function|time|coproc"
        r"|\{|\}|!|\[\[)(?=[ \t\n|&;()<>]|\Z)"
    ),
    "IN": re.compile(r"in(?=[ \t\n|&;()<>]|\Z)"),
    "DO": re.compile(r"do(?=[ \t\n|&;()<>]|\Z)"),
    "TEST_END": re.compile(r"\]\](?=[ \t\n|&;()<>]|\Z)"),
    "TIME_POSIX": re.compile(r"-p(?=[ \t\n|&;()<>]|\Z)"),
    # The parts of a word outside quotes. Plain text runs up to a metacharacter, a quote, an escape, an
    # expansion or a glob character.
    "PLAIN": re.compile(r"[^ \t\n|&;()<>'\"\\$`*?\[]+"),
    # A whole simple command of plain words (no quote, expansion, glob, brace, tilde, comment, assignment
    # or redirection): the common case, read by one match (the parser still checks what follows it).
    "PLAIN_COMMAND": re.compile(
        r"[^\s|&;()<>'\"\\$`*?\[{}#~=0-9][^\s|&;()<>'\"\\$`*?\[{}=]*"
        r"(?:[ \t]+[^\s|&;()<>'\"\\$`*?\[{}#~][^\s|&;()<>'\"\\$`*?\[{}]*)*"
    ),
    # What may follow a plain command for it to be one: blanks, then the end of the list or the line.
    "PLAIN_COMMAND_END": re.compile(r"[ \t]*(?:[\n;|)]|&(?!>)|\Z)"),
    "SINGLE_QUOTED": re.compile(r"'[^']*'"),
    # $'…' with its escapes (an unrolled loop: no alternation per character).
    "ANSI_C": re.compile(r"\$'[^'\\]*(?:\\.[^'\\]*)*'", re.DOTALL),
    # Inside double quotes and unquoted heredoc bodies: text up to a quote, an escape or an expansion.
    "QUOTED_TEXT": re.compile(r'[^"\\$`]+'),
    # An unquoted heredoc body's text up to an expansion, escapes included (its parts are only expansions).
    "HEREDOC_TEXT": re.compile(r"[^\\$`]*(?:\\.[^\\$`]*)*", re.DOTALL),
    "HEREDOC_ESCAPE": re.compile(r"\\([$`\\])|\\\n"),
    # A backtick substitution: its body up to the next unescaped backtick.
    "BACKTICK": re.compile(r"`[^`\\]*(?:\\.[^`\\]*)*`", re.DOTALL),
    "NAME": re.compile(r"[A-Za-z_][A-Za-z0-9_]*"),
    "SPECIAL_PARAMETER": re.compile(r"[0-9@*#?$!-]"),
    "DIGITS": re.compile(r"[0-9]+"),
    # Text of an arithmetic expression between the characters that matter to its end.
    "ARITHMETIC_TEXT": re.compile(r"[^()\[\]$`'\"\\]+"),
    # Inside ${…}: text up to what ends or splits a word there.
    "PARAMETER_TEXT": re.compile(r"[^{}\\$`'\"/:]+"),
    "PARAMETER_OPERATOR": re.compile(r":[-=?+]|[-=?+]|##|#|%%|%|//|/#|/%|/|\^\^|\^|,,|,|@|:"),
    "ASSIGNMENT": re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<subscript>\[[^\]]*\])?(?P<append>\+)?="),
    "TILDE": re.compile(r"~[A-Za-z0-9_.+-]*"),
    # A function definition's "()" after its name.
    "FUNCTION_PARENS": re.compile(r"[ \t]*\([ \t]*\)"),
}
"""The named regexes; each matches at the cursor (``re.Pattern.match``)."""

_BLANKS: Final = RULES["BLANKS"]
_RESERVED: Final = RULES["RESERVED"]
_RESERVED_STARTS: Final = frozenset("itefcswud{}![")
"""The first characters of the keywords: any other character cannot start one."""


@final
class Tokenizer:
    """A cursor over one text: the parser reads the token it expects with ``take``."""

    __slots__ = ("position", "text")

    def __init__(self, text: str) -> None:
        self.text: str = text
        self.position: int = 0

    def __repr__(self) -> str:
        return f"<Tokenizer at {self.position} of {len(self.text)}>"

    def peek(self, rule: str) -> re.Match[str] | None:
        """The token of ``rule`` at the cursor, if any (the cursor does not move)."""
        return RULES[rule].match(self.text, self.position)

    def take(self, rule: str) -> re.Match[str] | None:
        """The token of ``rule`` at the cursor, if any, moving the cursor past it."""
        found = RULES[rule].match(self.text, self.position)
        if found is not None:
            self.position = found.end()
        return found

    def startswith(self, prefix: str | tuple[str, ...]) -> bool:
        return self.text.startswith(prefix, self.position)

    def char(self, offset: int = 0) -> str:
        """The character ``offset`` after the cursor, or ``""`` past the end."""
        index = self.position + offset
        return self.text[index : index + 1]

    @property
    def at_end(self) -> bool:
        return self.position >= len(self.text)

    def skip_blanks(self) -> None:
        """Move past blanks and line continuations."""
        text = self.text
        position = self.position
        if position < len(text) and text[position] in " \t\\":
            found = _BLANKS.match(text, position)
            if found is not None:
                self.position = found.end()

    def reserved(self) -> str | None:
        """The keyword at the cursor, if a command starting here would start with one (the cursor does not
        move)."""
        text = self.text
        position = self.position
        if position >= len(text) or text[position] not in _RESERVED_STARTS:
            return None
        found = _RESERVED.match(text, position)
        return None if found is None else found.group()

    def at_word_end(self, offset: int = 0) -> bool:
        """Whether a metacharacter or the end of the text is ``offset`` after the cursor."""
        index = self.position + offset
        return index >= len(self.text) or self.text[index] in _METACHARACTERS


@functools.lru_cache(maxsize=256)
def _delimiter_line(delimiter: str, strip_tabs: bool) -> re.Pattern[str]:
    return re.compile(("^\\t*" if strip_tabs else "^") + re.escape(delimiter) + "$", re.MULTILINE)


_CONTINUATION: Final = re.compile(r"\\\n")
_LEADING_TABS: Final = re.compile(r"^\t+", re.MULTILINE)


def heredoc_body(
    text: str, start: int, delimiter: str, *, strip_tabs: bool, joins_lines: bool
) -> tuple[str, int, bool]:
    """The heredoc body starting at ``start``: ``(body, after_delimiter_line, found)``.

    The body ends before the first line that is exactly the delimiter (after leading tabs, for ``<<-``,
    which the body loses too); without one it runs to the end of the text, as bash reads it. In an unquoted
    heredoc (``joins_lines``) a line ending in an odd number of backslashes is joined to the next before
    that comparison, as bash joins it: one search settles a body with no backslash-newline before its first
    candidate line, and a scan of the joined lines the rest.
    """
    found = _delimiter_line(delimiter, strip_tabs).search(text, start)
    limit = len(text) if found is None else found.start()
    if joins_lines and _CONTINUATION.search(text, start, limit) is not None:
        return _joined_heredoc_body(text, start, delimiter, strip_tabs)
    body = text[start:limit]
    if strip_tabs:
        body = _LEADING_TABS.sub("", body)
    if found is None:
        return body, len(text), False
    after = found.end()
    if after < len(text):
        after += 1  # the newline ending the delimiter line
    return body, after, True


def _joined_heredoc_body(text: str, start: int, delimiter: str, strip_tabs: bool) -> tuple[str, int, bool]:
    """``heredoc_body`` for an unquoted body with line continuations: line by line, each joined line (its
    continuations removed, leading tabs stripped for ``<<-``) compared with the delimiter."""
    size = len(text)
    position = start
    body: list[str] = []
    while position <= size:
        line_start = position
        pieces: list[str] = []
        while True:
            newline = text.find("\n", position)
            end = size if newline < 0 else newline
            piece = text[position:end]
            odd = (len(piece) - len(piece.rstrip("\\"))) % 2 == 1
            if odd and newline >= 0:
                pieces.append(piece[:-1])
                position = newline + 1
                continue
            pieces.append(piece)
            break
        joined = "".join(pieces)
        if strip_tabs:
            joined = joined.lstrip("\t")
        if joined == delimiter:
            return "".join(body), size if newline < 0 else newline + 1, True
        raw = text[line_start:end]
        body.append((raw.lstrip("\t") if strip_tabs else raw) + ("\n" if newline >= 0 else ""))
        if newline < 0:
            break
        position = newline + 1
    return "".join(body), size, False
