"""The README's python examples run, in order, one namespace per section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _sections() -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = []
    for chunk in re.split(r"^## ", README.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]:
        title = chunk.splitlines()[0].strip()
        blocks = _BLOCK.findall(chunk)
        if blocks:
            sections.append((title, blocks))
    return sections


SECTIONS = _sections()


@pytest.mark.parametrize(("title", "blocks"), SECTIONS, ids=[title for title, _ in SECTIONS])
def test_readme_section_runs(title: str, blocks: list[str]) -> None:
    """Every python block of a README section runs without error, asserting what it shows."""
    namespace: dict[str, object] = {"__name__": f"readme_{title}"}
    for number, block in enumerate(blocks, start=1):
        code = compile(block, f"README.md[{title} #{number}]", "exec")
        exec(code, namespace)


def test_readme_has_examples() -> None:
    """The README carries runnable examples at all (the harness is not silently matching nothing)."""
    assert sum(len(blocks) for _, blocks in SECTIONS) >= 1
