"""The documentation's pages and their fenced blocks, for the tests that check what the pages show.

Pages are read as a code host shows them: no include lines, so a file or a transcript shown on a page is a
copy of it, and the tests hold each copy equal to its source (``shown_copies``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

__all__ = ["DOCS", "FENCE", "PAGES", "README", "ROOT", "blocks", "shown_copies"]

ROOT: Final = Path(__file__).resolve().parent.parent
DOCS: Final = ROOT / "docs"
README: Final = ROOT / "README.md"
PAGES: Final = sorted([README, *DOCS.rglob("*.md")])

FENCE: Final = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S
)


def blocks() -> list[tuple[str, str, str]]:
    """Every fenced block of every page: ``(page:line, language, body)``, the body unindented."""
    found: list[tuple[str, str, str]] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            body = "".join(
                row[len(match["indent"]) :] if row.startswith(match["indent"]) else row
                for row in match["body"].splitlines(keepends=True)
            )
            found.append((f"{page.relative_to(ROOT)}:{line}", match["lang"], body))
    return found


_OPENING_LINES: Final = 4  # enough to tell a copy from another block that starts the same way ("{")


def shown_copies(source: str) -> list[tuple[str, str]]:
    """The blocks that show ``source`` (a file's text, a transcript): those opening with its first lines,
    as ``(page:line, body)``."""
    opening = source.split("\n")[:_OPENING_LINES]
    return [(where, body) for where, _, body in blocks() if body.split("\n")[:_OPENING_LINES] == opening]
