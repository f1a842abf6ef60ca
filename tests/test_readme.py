"""The README's python examples run, in order, one namespace per section."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

# The frameworks of the optional extras, by the modules an example may import, with the extra to install.
# Only these are skipped when missing: any other failing import is a broken example.
_EXTRAS = {
    "langchain": "langchain",
    "langchain_core": "langchain",
    "langgraph": "langchain",
    "pydantic": "pydantic-ai",
    "pydantic_ai": "pydantic-ai",
}
# An adapter module imports its framework when imported.
_ADAPTERS = {
    "ask_permissions.integrations.langchain": ("langchain", "langgraph"),
    "ask_permissions.integrations.pydantic_ai": ("pydantic_ai",),
}


def _sections() -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = []
    for chunk in re.split(r"^## ", README.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]:
        title = chunk.splitlines()[0].strip()
        blocks = _BLOCK.findall(chunk)
        if blocks:
            sections.append((title, blocks))
    return sections


def imported_modules(code: str) -> list[str]:
    """The modules a block imports (``import a.b`` and ``from a.b import c`` both give ``a.b``)."""
    modules: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            modules.append(node.module)
    return modules


def missing_frameworks(blocks: list[str], installed: Callable[[str], bool] | None = None) -> str | None:
    """Which optional frameworks the blocks import that are not ``installed``, and how to install them."""
    is_installed = _installed if installed is None else installed
    needed: dict[str, None] = {}
    for block in blocks:
        for module in imported_modules(block):
            top = module.partition(".")[0]
            for name in (top, *_ADAPTERS.get(module, ())):
                if name in _EXTRAS:
                    needed[name] = None
    by_extra: dict[str, list[str]] = {}
    for name in needed:
        if not is_installed(name):
            by_extra.setdefault(_EXTRAS[name], []).append(name)
    if not by_extra:
        return None
    return "; ".join(
        f"{', '.join(names)} (pip install 'ask-permissions[{extra}]')" for extra, names in by_extra.items()
    )


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


SECTIONS = _sections()


@pytest.mark.parametrize(("title", "blocks"), SECTIONS, ids=[title for title, _ in SECTIONS])
def test_readme_section_runs(title: str, blocks: list[str]) -> None:
    """Every python block of a README section runs without error, asserting what it shows.

    A section whose examples import an optional framework that is not installed is skipped, naming it.
    """
    missing = missing_frameworks(blocks)
    if missing is not None:
        pytest.skip(f"needs {missing}, not installed")
    namespace: dict[str, object] = {"__name__": f"readme_{title}"}
    for number, block in enumerate(blocks, start=1):
        code = compile(block, f"README.md[{title} #{number}]", "exec")
        exec(code, namespace)


def test_readme_has_examples() -> None:
    """The README carries runnable examples at all (the harness is not silently matching nothing)."""
    assert sum(len(blocks) for _, blocks in SECTIONS) >= 1


class TestSkipping:
    """Only a missing optional framework skips a section; the adapter sections do need one."""

    def test_adapter_sections_need_their_framework(self) -> None:
        """The adapter sections import their frameworks; the core sections import none."""
        needs = {title: _needed(blocks) for title, blocks in SECTIONS}
        assert needs["Framework adapters"] >= {"langchain", "langgraph", "pydantic_ai"}
        assert needs["Policy files and the `ask-permissions` command"] == set()

    def test_missing_framework_named(self) -> None:
        """A framework that is not installed is named with the extra that installs it; others never are."""

        def nothing(name: str) -> bool:
            return False

        assert missing_frameworks(["from pydantic_ai import Agent\nimport json"], nothing) == (
            "pydantic_ai (pip install 'ask-permissions[pydantic-ai]')"
        )
        assert missing_frameworks(["from ask_permissions.integrations.langchain import X"], nothing) == (
            "langchain, langgraph (pip install 'ask-permissions[langchain]')"
        )
        core = ["import json\nimport no_such_module\nfrom ask_permissions import ALL"]
        assert missing_frameworks(core, nothing) is None


def _needed(blocks: list[str]) -> set[str]:
    return {
        name
        for block in blocks
        for module in imported_modules(block)
        for name in (module.partition(".")[0], *_ADAPTERS.get(module, ()))
        if name in _EXTRAS
    }
