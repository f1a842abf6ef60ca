"""The adapters import their frameworks only when asked to, and say how to install a missing one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

FRAMEWORKS = (
    "langchain",
    "langchain_core",
    "langgraph",
    "pydantic_ai",
    "agents",
    "google.adk",
    "mcp",
    "opentelemetry",
)

# Each adapter module, and the extra its error message must name when its framework is missing.
ADAPTERS = [
    pytest.param(
        "ask_permissions.integrations.langchain", "langchain", "ask-permissions[langchain]", id="langchain"
    ),
    pytest.param(
        "ask_permissions.integrations.pydantic_ai",
        "pydantic_ai",
        "ask-permissions[pydantic-ai]",
        id="pydantic-ai",
    ),
    pytest.param(
        "ask_permissions.integrations.openai_agents",
        "agents",
        "ask-permissions[openai-agents]",
        id="openai-agents",
    ),
    pytest.param("ask_permissions.integrations.adk", "google.adk", "ask-permissions[adk]", id="adk"),
    pytest.param("ask_permissions.integrations.mcp_proxy", "mcp", "ask-permissions[mcp]", id="mcp-proxy"),
    pytest.param("ask_permissions.integrations.otel", "opentelemetry", "ask-permissions[otel]", id="otel"),
]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONPATH": SRC},
    )


class TestLazyImports:
    """Importing the package never imports an agent framework (nor OpenTelemetry)."""

    def test_package_and_integrations_import_no_framework(self) -> None:
        """import ask_permissions and ask_permissions.integrations leave every framework unimported."""
        code = (
            "import sys, ask_permissions, ask_permissions.integrations\n"
            f"loaded = sorted(name for name in {FRAMEWORKS!r} if name in sys.modules)\n"
            "print(loaded)\n"
        )
        result = _run(code)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "[]"

    def test_the_command_imports_no_framework(self) -> None:
        """The ask-permissions command (mcp-proxy included) imports the MCP SDK only when mcp-proxy runs."""
        code = (
            "import sys, ask_permissions.cli._main\n"
            f"loaded = sorted(name for name in {FRAMEWORKS!r} if name in sys.modules)\n"
            "print(loaded)\n"
        )
        result = _run(code)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "[]"

    @pytest.mark.parametrize(("module", "framework", "extra"), ADAPTERS)
    def test_missing_framework_names_the_extra(self, module: str, framework: str, extra: str) -> None:
        """Without its framework, an adapter's ImportError says which extra to install."""
        code = f"import sys\nsys.modules[{framework!r}] = None\nimport {module}\n"
        result = _run(code)
        assert result.returncode != 0
        assert "ImportError" in result.stderr
        assert extra in result.stderr
