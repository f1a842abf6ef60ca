"""Characters a command may not hold to be understood, and the text a lenient tool would read instead.

A command with a control character, an invisible or unusual Unicode character, or a look-alike of a shell
character is never understood (an allow cannot match it): a terminal may hide it, and another reader may
take it for an operator. Deny and ask rules also see the command as a tool that normalizes Unicode (NFKC)
and takes control characters for line breaks would read it (``cleaned``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["character_problem", "cleaned"]

_ASCII_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SHELL_SPECIAL: Final = frozenset(";&|<>()$`\\\"'{}[]*?#~=! \t\n")
_REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs", "Co", "Cs", "Cn"})
# Look-alikes of shell operators that NFKC leaves alone.
_CONFUSABLES: Final = {
    "\u01c0": "|",  # LATIN LETTER DENTAL CLICK
    "\u2223": "|",  # DIVIDES
    "\u2758": "|",  # LIGHT VERTICAL BAR
    "\uffe8": "|",  # HALFWIDTH FORMS LIGHT VERTICAL
    "\u204f": ";",  # REVERSED SEMICOLON
    "\u2e35": ";",  # TURNED SEMICOLON
    "\u02c2": "<",  # MODIFIER LETTER LEFT ARROWHEAD
    "\u02c3": ">",  # MODIFIER LETTER RIGHT ARROWHEAD
    "\u2039": "<",  # SINGLE LEFT-POINTING ANGLE QUOTATION MARK
    "\u203a": ">",  # SINGLE RIGHT-POINTING ANGLE QUOTATION MARK
    "\u2774": "{",  # MEDIUM LEFT CURLY BRACKET ORNAMENT
    "\u2775": "}",  # MEDIUM RIGHT CURLY BRACKET ORNAMENT
}


def _unusual(char: str) -> str | None:
    category = unicodedata.category(char)
    if category in _REFUSED_CATEGORIES:
        return f"an invisible or unusual character U+{ord(char):04X} ({category})"
    folded = unicodedata.normalize("NFKC", char)
    if char in _CONFUSABLES or any(part in _SHELL_SPECIAL for part in folded):
        return f"a look-alike of a shell character U+{ord(char):04X}"
    return None


def character_problem(text: str) -> str | None:
    """What makes the characters of ``text`` unsafe to read as a shell command (the first such character),
    or ``None``. Each distinct character is looked at once."""
    control = _ASCII_CONTROL.search(text)
    if control is not None:
        char = control.group()
        return "a NUL character" if char == "\x00" else f"a control character {char!r}"
    if text.isascii():
        return None
    found: list[tuple[int, str]] = []
    for char in set(text):
        if not char.isascii():
            problem = _unusual(char)
            if problem is not None:
                found.append((text.index(char), problem))
    return min(found)[1] if found else None


def _replacement(char: str) -> str:
    """What a lenient reader makes of one character of NFKC-normalized text."""
    if char in "\t\n" or " " <= char < "\x7f":
        return char
    category = unicodedata.category(char)
    if category == "Cf":
        return ""
    if category in ("Cc", "Zl", "Zp"):
        return "\n"
    if category == "Zs":
        return " "
    return _CONFUSABLES.get(char, char)


def cleaned(text: str) -> str:
    """``text`` as read by a tool that normalizes Unicode (NFKC) and takes control characters for line
    breaks, invisible format characters for nothing and look-alikes for the shell characters they mimic."""
    normalized = unicodedata.normalize("NFKC", text)
    table: dict[int, str] = {}
    for char in set(normalized):
        replacement = _replacement(char)
        if replacement != char:
            table[ord(char)] = replacement
    return normalized.translate(table) if table else normalized
