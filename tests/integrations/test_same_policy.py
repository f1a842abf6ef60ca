"""One policy file, five integrations: each loads it with load_policy and decides the same calls alike."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from ask_permissions import ApprovalPolicy, load_policy
from ask_permissions.policy._records import DecisionRecord

from .scenarios import PLAN, POLICY_FILE, Recorder

# The prompts the scripted models turn into one call each: allowed, denied, needs a person, auto-approved.
PROMPTS = ("read", "delete", "list", "fetch")


class Seen(NamedTuple):
    """What one integration did with one prompt's call, and what the policy recorded."""

    verdict: str  # "ran", "asked", or "refused: <what the model read>"
    record: tuple[str, str, str, int | None]  # the record's tool, outcome, layer and action id


def _langchain(policy: ApprovalPolicy, prompt: str, tools: Recorder) -> str:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from ask_permissions.integrations.langchain import PermissionMiddleware

    from .test_langchain import ScriptedChatModel

    model = ScriptedChatModel(plan=PLAN)
    middleware = [PermissionMiddleware(policy)]
    wrapped = [tool(function) for function in tools.functions]
    agent = create_agent(model, wrapped, middleware=middleware, checkpointer=InMemorySaver())
    state = agent.invoke({"messages": [HumanMessage(prompt)]}, {"configurable": {"thread_id": "t"}})
    if state.get("__interrupt__"):
        return "asked"
    return "ran" if tools.ran else f"refused: {model.seen[-1].content}"


def _pydantic_ai(policy: ApprovalPolicy, prompt: str, tools: Recorder) -> str:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    from ask_permissions.integrations.pydantic_ai import PermissionToolset

    from .test_pydantic_ai import Script

    script = Script()
    toolset = PermissionToolset(FunctionToolset(tools.functions), policy)
    agent = Agent(FunctionModel(script.respond), toolsets=[toolset], output_type=[str, DeferredToolRequests])
    output = asyncio.run(agent.run(prompt)).output
    if isinstance(output, DeferredToolRequests):
        return "asked"
    return "ran" if tools.ran else f"refused: {script.seen[-1][1]}"


def _openai_agents(policy: ApprovalPolicy, prompt: str, tools: Recorder) -> str:
    pytest.importorskip("agents")
    from agents import Agent, Runner, Tool, function_tool

    from ask_permissions.integrations.openai_agents import PermissionGuard

    from .test_openai_agents import RUN_CONFIG, ScriptedModel

    model = ScriptedModel(PLAN)
    gated: list[Tool] = [
        *PermissionGuard(policy).tools(function_tool(function) for function in tools.functions)
    ]
    result = asyncio.run(Runner.run(Agent(name="a", model=model, tools=gated), prompt, run_config=RUN_CONFIG))
    if result.interruptions:
        return "asked"
    return "ran" if tools.ran else f"refused: {model.seen[-1][1]}"


def _adk(policy: ApprovalPolicy, prompt: str, tools: Recorder) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ADK 1.x warns on import
        pytest.importorskip("google.adk")
        from ask_permissions.integrations.adk import PermissionPlugin

        from .test_adk import CONFIRMATION, run_once

    events, model = run_once(PermissionPlugin(policy), prompt, list(tools.functions))
    if any(call.name == CONFIRMATION for event in events for call in event.get_function_calls()):
        return "asked"
    return "ran" if tools.ran else f"refused: {model.seen[-1][1]['error']}"


def _mcp(policy: ApprovalPolicy, prompt: str, tools: Recorder) -> str:
    pytest.importorskip("mcp")
    from mcp import ClientSession, types

    from ask_permissions.integrations.mcp_proxy import PermissionProxy

    from .mcp_harness import proxied
    from .mcp_upstream import Upstream

    upstream = Upstream()
    ((name, arguments),) = PLAN[prompt]
    results: list[types.CallToolResult] = []

    async def run() -> None:
        def proxy_for(session: ClientSession) -> PermissionProxy:
            return PermissionProxy(policy, session)

        async with proxied(upstream.server(), proxy_for) as (client, _):
            results.append(await client.call_tool(name, arguments))

    asyncio.run(run())
    tools.ran.extend(upstream.ran)
    (result,) = results
    (content,) = result.content
    text = getattr(content, "text", "")
    if "waits for a person's approval" in text:
        return "asked"
    return "ran" if tools.ran else f"refused: {text}"


INTEGRATIONS: list[Any] = [
    pytest.param(_langchain, id="langchain"),
    pytest.param(_pydantic_ai, id="pydantic-ai"),
    pytest.param(_openai_agents, id="openai-agents"),
    pytest.param(_adk, id="adk"),
    pytest.param(_mcp, id="mcp-proxy"),
]

# What every integration must do with each prompt under the policy file.
EXPECTED = {
    "read": Seen("ran", ("read_file", "proceed", "allow_rule", None)),
    "delete": Seen(
        "refused: Denied by permission rules: 'delete_user'", ("delete_user", "block", "deny_rule", None)
    ),
    "list": Seen("asked", ("bash", "pending", "approval_required", 1)),
    "fetch": Seen("ran", ("fetch", "pending", "approval_required", 1)),
}


class TestSamePolicyFile:
    """load_policy on one file gives the same decisions, records and outcomes in every integration."""

    # ADK 1.x: tool confirmation is experimental, and early 1.x warns of plugins given in an App.
    @pytest.mark.filterwarnings("ignore::UserWarning")
    @pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")
    @pytest.mark.parametrize("integration", INTEGRATIONS)
    def test_every_integration_decides_the_file_alike(
        self, integration: Callable[[ApprovalPolicy, str, Recorder], str]
    ) -> None:
        """Allowed runs, denied is refused with the reason, bash asks, auto-approved fetch runs."""
        seen: dict[str, Seen] = {}
        for prompt in PROMPTS:
            records: list[DecisionRecord] = []
            policy = load_policy(POLICY_FILE, on_decision=records.append)
            verdict = integration(policy, prompt, Recorder())
            record = records[0]
            seen[prompt] = Seen(verdict, (record.tool, record.outcome, record.layer, record.action_id))
        assert seen == EXPECTED
