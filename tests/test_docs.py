"""Every code block of the README and the documentation site is complete on its own and runs.

A ``python`` block runs alone, in a fresh namespace, in a fresh working directory that holds a copy of
``examples/`` (as a checkout does), with ``HOME`` pointing into it: no block leans on another, and none
writes outside its own directory. A ``toml`` or ``json`` block parses. A block that imports an optional
framework that is not installed is skipped, naming the extra; any other failing import is a broken example.
A block that reads ``DATABASE_URL`` runs against the suite's throwaway PostgreSQL server.

Pages read on a code host as on the site: they have no include lines. A page that shows the example policy,
the example settings or a demo transcript holds a copy, and each copy must equal the file or the demo's
output. Every install line works from a checkout, and a page that names the published package says so.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import re
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from .docs_pages import FENCE as _FENCE
from .docs_pages import PAGES, README, ROOT, blocks, shown_copies
from .sandbox_support import require_bwrap

_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")

# The frameworks of the optional extras, by the top-level modules an example may import.
_EXTRAS = {
    "langchain": "langchain",
    "langchain_core": "langchain",
    "langgraph": "langchain",
    "pydantic_ai": "pydantic-ai",
    "agents": "openai-agents",
    "google": "adk",
    "mcp": "mcp",
    "psycopg": "postgres",
    "opentelemetry": "otel",
}
# An adapter module imports its framework when imported.
_ADAPTERS = {
    "ask_permissions.integrations.langchain": ("langchain", "langgraph"),
    "ask_permissions.integrations.pydantic_ai": ("pydantic_ai",),
    "ask_permissions.integrations.openai_agents": ("agents",),
    "ask_permissions.integrations.adk": ("google",),
    "ask_permissions.integrations.mcp_proxy": ("mcp",),
    "ask_permissions.integrations.otel": ("opentelemetry",),
}
# Languages a block may be written in: run, parsed, or shown (a shell session, a transcript, a tree).
_RUN = "python"
_PARSED = {"toml": tomllib.loads, "json": json.loads}
_SHOWN = {"console", "bash", "text", "sh"}


BLOCKS = blocks()
PYTHON = [(where, body) for where, lang, body in BLOCKS if lang == _RUN]


def imported_modules(code: str) -> list[str]:
    """The modules a block imports (``import a.b`` and ``from a.b import c`` both give ``a.b``)."""
    modules: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            modules.append(node.module)
    return modules


def missing_frameworks(code: str, installed: Callable[[str], bool] | None = None) -> str | None:
    """Which optional frameworks ``code`` imports that are not ``installed``, and how to install them."""
    is_installed = _installed if installed is None else installed
    by_extra: dict[str, list[str]] = {}
    for module in imported_modules(code):
        for name in (module.partition(".")[0], *_ADAPTERS.get(module, ())):
            if name in _EXTRAS and not is_installed(name) and name not in by_extra.get(_EXTRAS[name], ()):
                by_extra.setdefault(_EXTRAS[name], []).append(name)
    if not by_extra:
        return None
    return "; ".join(
        f"{', '.join(names)} (pip install 'ask-permissions[{extra}]')" for extra, names in by_extra.items()
    )


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize(("where", "code"), PYTHON, ids=[where for where, _ in PYTHON])
def test_python_block_runs_alone(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The block runs on its own, asserting what it shows."""
    missing = missing_frameworks(code)
    if missing is not None:
        pytest.skip(f"needs {missing}, not installed")
    if "ask_permissions.sandbox" in imported_modules(code):
        require_bwrap()  # a sandbox example runs real bubblewrap: skipped without it (failed under CI)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if "DATABASE_URL" in code:
        monkeypatch.setenv("DATABASE_URL", request.getfixturevalue("postgres_dsn"))
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(code, where, "exec"), namespace)


@pytest.mark.parametrize(
    ("where", "lang", "body"),
    [block for block in BLOCKS if block[1] in _PARSED],
    ids=[where for where, lang, _ in BLOCKS if lang in _PARSED],
)
def test_data_block_parses(where: str, lang: str, body: str) -> None:
    """A TOML or JSON example is valid TOML or JSON."""
    _PARSED[lang](body)


def test_every_block_names_a_known_language() -> None:
    """Every block says what it is; a Python example is ``python`` (run), never an unchecked ``py``."""
    unknown = [(where, lang) for where, lang, _ in BLOCKS if lang not in {_RUN, *_PARSED, *_SHOWN}]
    assert unknown == []


def test_there_are_examples() -> None:
    """The harness finds blocks at all (it is not silently matching nothing)."""
    assert len(PYTHON) >= 40
    assert {Path(where.partition(":")[0]).parts[0] for where, _ in PYTHON} >= {"README.md", "docs"}


def _demo(run: Callable[[io.StringIO], int]) -> str:
    out = io.StringIO()
    assert run(out) == 0
    return out.getvalue()


def _shown_sources() -> list[tuple[str, str]]:
    """What pages show copies of: the example files, and each demo's transcript."""
    from ask_permissions.cli._demo import run_demo
    from ask_permissions.cli._demo_layered import run_layered_demo

    return [
        ("examples/policy.toml", (ROOT / "examples/policy.toml").read_text(encoding="utf-8")),
        (
            "examples/agent-settings.json",
            (ROOT / "examples" / "agent-settings.json").read_text(encoding="utf-8"),
        ),
        ("ask-permissions demo", _demo(run_demo)),
        ("ask-permissions demo --layered", _demo(run_layered_demo)),
    ]


class TestWhatPagesShow:
    """Pages hold copies, never include lines, and every copy is exactly its source."""

    def test_no_page_has_an_include_line(self) -> None:
        """A code host shows a page as it is: no ``--8<--`` line anywhere."""
        assert [page for page in PAGES if "--8<--" in page.read_text(encoding="utf-8")] == []

    @pytest.mark.parametrize(("name", "source"), _shown_sources(), ids=[name for name, _ in _shown_sources()])
    def test_each_copy_is_its_source(self, name: str, source: str) -> None:
        """The example files and the demos' transcripts appear on some page, each copy equal to the file or
        to what the demo prints now."""
        copies = shown_copies(source)
        assert copies != []
        assert [(where, body) for where, body in copies if body != source] == []

    def test_install_lines_work_from_a_checkout(self) -> None:
        """Every pip install of a page installs from the checkout; a page that names the package as published
        on PyPI says that it is not yet (``once ... published``)."""
        from_pypi = re.compile(r"pip install (?:-e )?'?ask-permissions")
        for page in PAGES:
            text = page.read_text(encoding="utf-8")
            for line in text.splitlines():
                for command in re.findall(r"pip install [^`\n]*", line):
                    if from_pypi.match(command):
                        continue
                    assert re.match(r"pip install (?:-e )?'?\.", command), (page, command)
            for paragraph in re.split(r"\n\s*\n", text):
                if from_pypi.search(paragraph):
                    assert re.search(r"once [^.]*published", paragraph), (page, paragraph)

    def test_no_link_to_nowhere(self) -> None:
        """No page, the site's configuration or the package's metadata names example.invalid."""
        named = [ROOT / "mkdocs.yml", ROOT / "pyproject.toml", *PAGES]
        assert [path for path in named if "example.invalid" in path.read_text(encoding="utf-8")] == []


class TestReadme:
    """The README is a short door into the docs."""

    def test_it_is_short(self) -> None:
        """At most 10 KiB."""
        assert len(README.read_bytes()) <= 10 * 1024

    def test_it_gives_the_set_up_and_test_commands(self) -> None:
        """The two commands that set up and run the project on a fresh machine, and the test command."""
        text = README.read_text(encoding="utf-8")
        assert "python3 -m venv .venv && .venv/bin/pip install -e '.[test]'" in text
        assert ".venv/bin/python -m pytest" in text

    @pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
    def test_relative_links_point_at_files(self, page: Path) -> None:
        """Every relative link of a page names a file of the checkout (so it works on any code host)."""
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        broken = []
        for match in _LINK.finditer(text):
            target = match["target"].partition("#")[0]
            if not target or re.match(r"^[a-z]+:", target):
                continue
            if not (page.parent / target).exists():
                broken.append(target)
        assert broken == []


class TestArchitecturePage:
    """The map of the package is drawn from the import contract, not beside it."""

    def test_it_lists_every_floor_of_the_contract_in_order(self) -> None:
        """Each floor of pyproject.toml's layers contract heads an item of the page's list, top to bottom."""
        config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        (layers,) = [
            contract["layers"]
            for contract in config["tool"]["importlinter"]["contracts"]
            if contract["type"] == "layers"
        ]
        text = (ROOT / "docs" / "explanation" / "architecture.md").read_text(encoding="utf-8")
        assert re.findall(r"^\d+\. `([^`]+)`:", text, re.M) == layers


class TestMissingFrameworks:
    """Only a missing optional framework skips a block, named with the extra that installs it."""

    def test_named_with_its_extra(self) -> None:
        """A framework that is not installed is named with its extra; the core never is."""

        def nothing(name: str) -> bool:
            return False

        assert missing_frameworks("from pydantic_ai import Agent\nimport json", nothing) == (
            "pydantic_ai (pip install 'ask-permissions[pydantic-ai]')"
        )
        assert missing_frameworks("from ask_permissions.integrations.langchain import X", nothing) == (
            "langchain, langgraph (pip install 'ask-permissions[langchain]')"
        )
        assert (
            missing_frameworks("import json\nimport no_such_module\nfrom ask_permissions import ALL", nothing)
            is None
        )
