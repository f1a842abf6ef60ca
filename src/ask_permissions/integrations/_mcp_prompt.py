"""The text a person reads in the MCP proxy's elicitation: the whole call, and nothing that can forge a line.

Every value in the prompt — the tool's name, the arguments, the reason, the rule — is written as JSON with
each character that could hide or move text escaped: control characters (line feeds, escape sequences, the
C1 controls such as NEL), format characters (bidirectional overrides, zero-width characters), line and
paragraph separators, every space but the ASCII one, surrogates, private-use and unassigned code points,
and the characters that show nothing (fillers, variation selectors). A key is shown in printable ASCII only,
so that no key can pass for another. Such characters only ever occur inside JSON strings, and their
``\\uXXXX`` escapes read back as the same string, so the text stays valid JSON of the same value — and a
prompt line can only be one of the fixed labels followed by one value. Nothing is ever cut: a call too long
to show whole is not shown at all (the proxy holds it for the approvals inbox instead).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Final

__all__ = ["PROMPT_LIMIT", "approval_prompt", "visible_json"]

PROMPT_LIMIT: Final = 4096
"""The longest prompt, in characters, the proxy shows by default; a longer call waits for the inbox."""

# The Unicode categories whose characters are escaped wherever they appear: controls, format characters
# (bidi overrides, zero-width joiners), surrogates, private use, unassigned, line and paragraph separators.
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

# Characters that show nothing though their category is a mark, a letter or a symbol: Unicode's
# default-ignorable code points outside the categories above (PropList's Other_Default_Ignorable_Code_Point
# and the variation selectors), and the blank braille pattern, which fonts draw as a space.
_INVISIBLE: Final = frozenset(
    chr(code)
    for first, last in (
        (0x034F, 0x034F),  # combining grapheme joiner
        (0x115F, 0x1160),  # hangul choseong and jungseong fillers
        (0x17B4, 0x17B5),  # khmer inherent vowels
        (0x180B, 0x180F),  # mongolian free variation selectors (and the vowel separator, a Cf)
        (0x2800, 0x2800),  # braille pattern blank
        (0x3164, 0x3164),  # hangul filler
        (0xFE00, 0xFE0F),  # variation selectors
        (0xFFA0, 0xFFA0),  # halfwidth hangul filler
        (0xE0100, 0xE01EF),  # variation selectors supplement
    )
    for code in range(first, last + 1)
)

_HEADING: Final = (
    "A tool call waits for your approval. Accept runs exactly this call, once; decline rejects it."
)


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _hidden(char: str) -> bool:
    if char.isascii():
        return char < " " or char == "\x7f"
    if char in _INVISIBLE:
        return True
    category = unicodedata.category(char)
    return category in _HIDDEN_CATEGORIES or category == "Zs"  # every space but " " (a no-break space, ...)


def _hidden_in_key(char: str) -> bool:
    # A key is a name the tool reads: shown in printable ASCII only, so that no key can look like another
    # ("p\u0430th" beside "path", "path " beside "path") and hide which value the tool reads.
    return not "!" <= char <= "~"


# A JSON string in json.dumps's output (its escapes are ASCII), and whether a key's colon follows it.
_STRING: Final = re.compile(r'"((?:[^"\\]|\\.)*)"(:?)')


def _escape_string(match: re.Match[str]) -> str:
    body, colon = match.group(1), match.group(2)
    hidden = _hidden_in_key if colon else _hidden
    if not colon and body.isascii() and "\x7f" not in body:
        return match.group(0)  # json escaped every other ASCII control already
    return '"' + "".join(_escape(char) if hidden(char) else char for char in body) + '"' + colon


def visible_json(value: object, limit: int | None = None) -> str | None:
    """``value`` as canonical JSON (sorted keys) with every character that could hide text escaped.

    ``json.loads`` of the text gives ``value`` back. ``None`` when the value cannot be written whole (nested
    past the recursion limit, an integer past Python's digit limit, keys that cannot be sorted, a value JSON
    has no form for), or when the text would be longer than ``limit`` characters.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        return None
    if limit is not None and len(text) > limit:
        return None  # escapes only lengthen it: no need to write them
    # Only strings can hold what must be escaped: outside them json.dumps writes ASCII punctuation, digits
    # and literals.
    return _STRING.sub(_escape_string, text)


def approval_prompt(
    *,
    tool: str,
    arguments: object,
    reason: str,
    layer: str | None = None,
    rule: str | None = None,
    source: str | None = None,
    suggestions: Sequence[str] = (),
    warning: str | None = None,
    limit: int | None = None,
) -> str | None:
    """The elicitation message for a call that waits: the heading, then one ``label: JSON`` line per fact.

    ``arguments`` are the ones that run if the person accepts. ``None`` when a value cannot be written whole
    (see ``visible_json``), or when the message would be longer than ``limit`` characters.
    """
    facts: Mapping[str, object] = {
        "Warning": warning,
        "Tool": tool,
        "Arguments": arguments,
        "Reason": reason,
        "Layer": layer,
        "Rule": rule,
        "Source": source,
        "Suggestions": list(suggestions) or None,
    }
    lines = [_HEADING]
    left = None if limit is None else limit - len(_HEADING)  # what the lines to come may still take
    for label, value in facts.items():
        if value is None and label != "Arguments":
            continue
        text = visible_json(value, None if left is None else left - len(label) - 3)
        if text is None:
            return None
        line = f"{label}: {text}"
        lines.append(line)
        if left is not None:
            left -= len(line) + 1
    prompt = "\n".join(lines)
    return None if limit is not None and len(prompt) > limit else prompt
