"""Every adapter checks its wiring before a tool can run: the policy's tool names against the agent's tools,
LangChain's checkpointer, and the request a person answers says why the call waits.

Real agents of each framework with offline models (the scripted models of each adapter's tests), policies
from real files in ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ask_permissions import (
    ApprovalQueue,
    LayeredPolicy,
    PermissionSettings,
    SettingsSource,
    UnknownToolError,
    load_policy,
)
from ask_permissions.typing import PermissionRequest, PolicyLike

from .scenarios import PLAN, Recorder

# A policy file written as a new user writes one, without a tools table: a typo in a rule's tool name
# ("bsah" for "bash"), which only the agent's tools can reveal.
TYPO_POLICY = """\
version = 1

[permissions]
deny = ["bsah"]
allow = ["read_file"]
"""

TYPO_MESSAGE = (
    "permissions.deny[0] ('bsah'): names the tool 'bsah', which is not known; did you mean 'bash'? "
    "The known tools: 'bash', 'delete_user', 'fetch', 'read_file'; "
)


def _typo_policy(tmp_path: Path, extra: str = "") -> PolicyLike:
    path = tmp_path / "policy.toml"
    path.write_text(extra + TYPO_POLICY, encoding="utf-8")
    return load_policy(path)


# -- each adapter, wired to a real agent and asked for one prompt ----------------------------------------
# Each returns the PermissionRequest a person is asked (or None when nothing waits).


def _langchain(policy: PolicyLike, prompt: str, **options: Any) -> PermissionRequest | None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from ask_permissions.integrations.langchain import PermissionMiddleware

    from .test_langchain import ScriptedChatModel

    tools = [tool(function) for function in Recorder().functions]
    agent = create_agent(
        ScriptedChatModel(plan=PLAN),
        tools,
        middleware=[PermissionMiddleware(policy, **options)],
        checkpointer=InMemorySaver(),
    )
    state = agent.invoke({"messages": [HumanMessage(prompt)]}, {"configurable": {"thread_id": "t"}})
    pauses = state.get("__interrupt__") or []
    return pauses[0].value if pauses else None


def _pydantic_ai(policy: PolicyLike, prompt: str, **options: Any) -> PermissionRequest | None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    from ask_permissions.integrations.pydantic_ai import PermissionToolset, permission_requests

    from .test_pydantic_ai import Script

    toolset = PermissionToolset(FunctionToolset(Recorder().functions), policy, **options)
    agent = Agent(
        FunctionModel(Script().respond), toolsets=[toolset], output_type=[str, DeferredToolRequests]
    )
    output = asyncio.run(agent.run(prompt)).output
    return permission_requests(output)[0] if isinstance(output, DeferredToolRequests) else None


def _openai_agents(policy: PolicyLike, prompt: str, **options: Any) -> PermissionRequest | None:
    pytest.importorskip("agents")
    from agents import Agent, Runner, Tool, function_tool

    from ask_permissions.integrations.openai_agents import PermissionGuard

    from .test_openai_agents import RUN_CONFIG, ScriptedModel

    guard = PermissionGuard(policy, **options)
    tools: list[Tool] = [*guard.tools(function_tool(function) for function in Recorder().functions)]
    agent = Agent(name="a", model=ScriptedModel(PLAN), tools=tools)
    result = asyncio.run(Runner.run(agent, prompt, run_config=RUN_CONFIG))
    requests = guard.requests(result.interruptions)
    return requests[0] if requests else None


def _adk(policy: PolicyLike, prompt: str, **options: Any) -> PermissionRequest | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ADK 1.x warns on import
        pytest.importorskip("google.adk")
        from google.adk.agents import LlmAgent
        from google.adk.apps import App
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService
        from google.genai import types

        from ask_permissions.integrations.adk import PermissionPlugin

        from .test_adk import CONFIRMATION, ScriptedLlm

    functions: list[Any] = list(Recorder().functions)
    app = App(
        name="app",
        root_agent=LlmAgent(name="a", model=ScriptedLlm(plan=PLAN), tools=functions),
        plugins=[PermissionPlugin(policy, **options)],
    )
    sessions = InMemorySessionService()

    async def run() -> list[Any]:
        session = await sessions.create_session(app_name="app", user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        stream = Runner(app=app, session_service=sessions).run_async(
            user_id="user", session_id=session.id, new_message=message
        )
        return [event async for event in stream]

    for event in asyncio.run(run()):
        for call in event.get_function_calls():
            if call.name == CONFIRMATION and call.args is not None:
                payload: PermissionRequest = call.args["toolConfirmation"]["payload"]
                return payload
    return None


ADAPTERS: list[Any] = [
    pytest.param(_langchain, "PermissionMiddleware", id="langchain"),
    pytest.param(_pydantic_ai, "PermissionToolset", id="pydantic-ai"),
    pytest.param(_openai_agents, "PermissionGuard", id="openai-agents"),
    pytest.param(_adk, "PermissionPlugin", id="adk"),
]

Adapter = Callable[..., PermissionRequest | None]

# ADK 1.x: tool confirmation is experimental, and early 1.x warns of plugins given in an App.
_ADK_WARNINGS = (
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning"),
)


def _with_adk_warnings_ignored(test: Any) -> Any:
    for mark in _ADK_WARNINGS:
        test = mark(test)
    return test


class TestUnknownToolNames:
    """A rule naming no tool of the agent is refused before any tool runs, with the nearest name."""

    @_with_adk_warnings_ignored
    @pytest.mark.parametrize(("adapter", "name"), ADAPTERS)
    def test_a_typo_is_refused(self, tmp_path: Path, adapter: Adapter, name: str) -> None:
        """The file's "bsah" rule, wired to an agent whose tool is "bash": an UnknownToolError naming
        the adapter, the field, the nearest tool and the agent's tools, and how to keep such rules."""
        policy = _typo_policy(tmp_path)
        with pytest.raises((UnknownToolError, RuntimeError)) as raised:
            adapter(policy, "list")
        # ADK reports a plugin's error as a RuntimeError caused by it; the others raise it as it is.
        error = raised.value if name != "PermissionPlugin" else raised.value.__cause__
        assert isinstance(error, UnknownToolError)
        assert str(error) == (
            f"{name}: the policy names tools the agent does not have: {TYPO_MESSAGE}"
            f'pass {name}(..., unknown_tools="keep") to keep rules for tools to come.'
        )
        assert error.path == "permissions.deny[0]"
        assert error.value == "bsah"
        assert error.known == ("bash", "delete_user", "fetch", "read_file")

    @_with_adk_warnings_ignored
    @pytest.mark.parametrize(("adapter", "name"), ADAPTERS)
    def test_keep_lets_the_agent_run(self, tmp_path: Path, adapter: Adapter, name: str) -> None:
        """unknown_tools="keep" given to the adapter keeps the rule: the agent runs, and the file's default
        asks a person about the bash call no rule decides."""
        request = adapter(_typo_policy(tmp_path), "list", unknown_tools="keep")
        assert request is not None
        assert (request["tool"], request["layer"]) == ("bash", "default")

    @_with_adk_warnings_ignored
    @pytest.mark.parametrize(("adapter", "name"), ADAPTERS)
    def test_the_files_own_keep_is_followed(self, tmp_path: Path, adapter: Adapter, name: str) -> None:
        """A policy file that says unknown_tools = "keep" is followed by every adapter."""
        policy = _typo_policy(tmp_path, 'unknown_tools = "keep"\n')
        request = adapter(policy, "list")
        assert request is not None
        assert request["tool"] == "bash"

    @pytest.mark.parametrize(("adapter", "name"), ADAPTERS[:1])
    def test_an_unknown_option_is_refused(self, adapter: Adapter, name: str) -> None:
        """unknown_tools takes "error" or "keep" only."""
        from ask_permissions.integrations.langchain import PermissionMiddleware

        policy = load_policy({"version": 1})
        with pytest.raises(ValueError, match=r"^unknown_tools: expected 'error' or 'keep'; got 'skip'$"):
            PermissionMiddleware(policy, unknown_tools="skip")  # type: ignore[arg-type]

    def test_pydantic_ai_refuses_at_construction(self, tmp_path: Path) -> None:
        """A FunctionToolset lists its tools at once: the toolset is refused when it is built."""
        pytest.importorskip("pydantic_ai")
        from pydantic_ai.toolsets import FunctionToolset

        from ask_permissions.integrations.pydantic_ai import PermissionToolset

        with pytest.raises(UnknownToolError, match="did you mean 'bash'"):
            PermissionToolset(FunctionToolset(Recorder().functions), _typo_policy(tmp_path))

    def test_openai_agents_refuses_before_guarding_anything(self, tmp_path: Path) -> None:
        """guard.tools() refuses before any tool is guarded: a refusal changes nothing."""
        pytest.importorskip("agents")
        from agents import function_tool

        from ask_permissions.integrations.openai_agents import PermissionGuard

        guard = PermissionGuard(_typo_policy(tmp_path))
        with pytest.raises(UnknownToolError, match="did you mean 'bash'"):
            guard.tools(function_tool(function) for function in Recorder().functions)
        assert guard.requests([]) == []
        kept = PermissionGuard(_typo_policy(tmp_path), unknown_tools="keep")
        assert len(kept.tools(function_tool(function) for function in Recorder().functions)) == 4


def _layered(tmp_path: Path) -> LayeredPolicy:
    """A layered policy over a project settings source asking about ``bash(ls)``."""
    source = SettingsSource("project", str(tmp_path), str(tmp_path / "settings.json"), ask=("bash(ls)",))
    settings = PermissionSettings([source], project_dir=tmp_path)
    return LayeredPolicy(queue=ApprovalQueue(), settings=settings)


class TestTheRequestSaysWhy:
    """The request a person answers names the layer, the rule, its source and the suggested rules."""

    @_with_adk_warnings_ignored
    @pytest.mark.parametrize(("adapter", "name"), ADAPTERS)
    def test_an_ask_rule_names_itself_and_its_source(
        self, tmp_path: Path, adapter: Adapter, name: str
    ) -> None:
        """An ask rule of the project settings: its layer, text and source are in the request."""
        request = adapter(_layered(tmp_path), "list")
        assert request is not None
        assert {key: request[key] for key in ("tool", "layer", "rule", "source", "suggestions")} == {
            "tool": "bash",
            "layer": "ask_rule",
            "rule": "bash(ls)",
            "source": "project",
            "suggestions": [],
        }

    @_with_adk_warnings_ignored
    @pytest.mark.parametrize(("adapter", "name"), ADAPTERS)
    def test_the_default_suggests_a_rule(self, tmp_path: Path, adapter: Adapter, name: str) -> None:
        """A call no rule decides: the default layer, and the rule "don't ask again" would write."""
        request = adapter(_layered(tmp_path), "list again")
        assert request is not None
        assert {key: request[key] for key in ("tool", "layer", "rule", "source", "suggestions")} == {
            "tool": "bash",
            "layer": "default",
            "rule": None,
            "source": None,
            "suggestions": ["bash(ls -l)"],
        }
        assert request["reason"] == "Tool 'bash' requires approval"
