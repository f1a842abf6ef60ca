"""An ``ApprovalPolicy`` in front of every tool call of a LangChain v1 agent (``create_agent``).

``PermissionMiddleware(policy)`` consults the policy before each tool runs:

- ``proceed``: the tool runs.
- ``block``: the tool does not run; the model gets a ``ToolMessage`` (status ``"error"``) carrying the
  reason, so it can take another path.
- ``pending``: the graph pauses with LangGraph's ``interrupt``, whose value is a ``PermissionRequest``
  (``action_id``, ``tool_call_id``, ``tool``, ``args``, ``reason``). Resume it with
  ``Command(resume={"decision": "approve"})`` (optionally ``"scope": "session"``) or
  ``Command(resume={"decision": "reject", "feedback": "..."})``; the decision resolves the queued action,
  then the tool runs or the rejection reaches the model. ``Command(resume={"decision": "queue"})`` means
  "the person decided through the policy or the queue": its verdict is used, and the graph pauses again
  while the action is still pending. An action the queue approved by itself (auto-approval) runs without
  pausing. A resume value that is not a decision pauses the graph again with the same request and an
  ``error`` saying what was wrong, so a corrected resume still works (LangGraph replays every resume value
  of a node on each re-run, so raising instead would jam the thread).

Needs a checkpointer (the graph must be resumable): the middleware refuses a graph without one when the
model is first called, before any tool can pause (a ``ValueError`` saying what to pass to
``create_agent``). Before that first model call it also checks the policy against the tools the model is
given: a rule that names none of them is an ``UnknownToolError`` (``unknown_tools="keep"`` keeps such rules,
for tools that come later). List the middleware before any middleware that narrows the tools per call.

Needs ``pip install 'ask-permissions[langchain]'`` (from a checkout: ``pip install -e '.[langchain]'``).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, final

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain.tools.tool_node import ToolCallRequest
    from langchain_core.messages import ToolMessage
    from langgraph.config import get_config
    from langgraph.constants import CONFIG_KEY_CHECKPOINTER
    from langgraph.types import Command, interrupt
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.langchain needs LangChain v1 and LangGraph: "
        "pip install '.[langchain]' from a checkout (pip install 'ask-permissions[langchain]' once the "
        "package is published)"
    ) from error

from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._arguments import same_arguments
from ask_permissions.policy._outcome import Outcome
from ask_permissions.policy._results import pending, pending_reason

from ._common import (
    KnownTools,
    PermissionDecision,
    PermissionRequest,
    ProjectGrantHook,
    permission_request,
    require_hook,
    require_policy,
    resolve,
)

if TYPE_CHECKING:
    from ask_permissions._vocabulary import HookResult, UnknownTools
    from ask_permissions.policy._policy import PolicyLike

__all__ = ["PermissionDecision", "PermissionMiddleware", "PermissionRequest"]

_ToolResult = ToolMessage | Command[Any]


@final
class PermissionMiddleware(AgentMiddleware[AgentState[Any], Any]):
    """LangChain agent middleware that asks an ``ApprovalPolicy`` before each tool call.

    Args:
        policy: decides each call; its queue holds the calls waiting for a person.
        on_project_grant: called with an approved action whose scope is ``"project"``, so the host can
            record the grant in its own project store (the policy's own hook otherwise; without either a
            project approval counts once). A ``"session"`` approval grants the tool in
            ``policy.session_grants`` (once, if it has none).
        unknown_tools: ``"error"`` refuses, at the first model call, a policy whose rules (or other
            entries) name none of the tools the model is given; ``"keep"`` keeps them; ``None`` (the
            default) does what the policy says (a policy file's ``unknown_tools``), else ``"error"``.

    Raises:
        TypeError: ``policy`` is not a policy (its queue, say), or ``on_project_grant`` is not callable.
        ValueError: ``unknown_tools`` is neither ``"error"`` nor ``"keep"``. When the agent runs: a graph
            without a checkpointer (at the first model call, or the first tool call if no model call came
            first), naming what to pass; an ``UnknownToolError`` for a rule that names no tool of the agent.

    Thread-safe: the policy and queue are, and the middleware's note of the calls it paused has a lock.
    """

    def __init__(
        self,
        policy: PolicyLike,
        *,
        on_project_grant: ProjectGrantHook | None = None,
        unknown_tools: UnknownTools | None = None,
    ) -> None:
        self._policy = require_policy(policy, "PermissionMiddleware")
        self._on_project_grant = require_hook(on_project_grant, "PermissionMiddleware")
        self._known = KnownTools(self._policy, "PermissionMiddleware", unknown_tools)
        super().__init__()
        # LangGraph re-runs a paused node from its start: the action a pause waited for is noted by the
        # graph's thread and the call id, so that a person's verdict given through the queue (not pending
        # any more) is found again, by that very call only.
        self._lock = threading.Lock()
        self._paused: dict[tuple[object, str], int] = {}

    @property
    def policy(self) -> PolicyLike:
        """The policy consulted before each tool call."""
        return self._policy

    def __repr__(self) -> str:
        return f"<PermissionMiddleware policy={self._policy!r}>"

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Check the wiring before the model is called: a checkpointer, and rules naming the agent's tools."""
        self._check_wiring(request)
        return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        """The async twin of ``wrap_model_call``."""
        self._check_wiring(request)
        return await handler(request)

    def _check_wiring(self, request: ModelRequest) -> None:
        _require_checkpointer()
        self._known.check(_tool_name(tool) for tool in request.tools)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], _ToolResult],
    ) -> _ToolResult:
        """Run the tool if the policy (or a person) allows it; otherwise answer the model with the reason."""
        decided = self._gate(request)
        return handler(decided) if isinstance(decided, ToolCallRequest) else decided

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolResult]],
    ) -> _ToolResult:
        """The async twin of ``wrap_tool_call``."""
        decided = self._gate(request)
        return await handler(decided) if isinstance(decided, ToolCallRequest) else decided

    def _gate(self, request: ToolCallRequest) -> ToolCallRequest | ToolMessage:
        """The request to run (with the policy's replaced arguments, if any), or the ``ToolMessage`` the model
        gets instead; may interrupt."""
        call = request.tool_call
        name, args, call_id = call["name"], call["args"], call["id"]
        _require_checkpointer()  # before anything is queued: nobody could ever answer the pause
        key = None if call_id is None else (_thread(), call_id)
        with self._lock:
            noted = None if key is None else self._paused.get(key)
        result = self._noted_result(key, name, args) or self._policy.before_tool_call(
            ToolCall(name, args, call_id)
        )
        outcome = self._read(result)
        error: str | None = None
        while outcome.waits and outcome.action is not None:
            asked = outcome.action.id
            with self._lock:
                if key is not None:
                    self._paused[key] = asked
            # Each pass is a new interrupt of this node: LangGraph hands back the resume values in order on
            # every re-run, so an unreadable answer, or "queue" on a still-pending action, asks again.
            answer = interrupt(
                permission_request(outcome.action, outcome.reason or pending_reason(name), error)
            )
            # The answer is for the request the person saw: the one it names, or the one this call paused on
            # before its arguments changed. Applied there, it leaves this call asking again.
            answered = _answered_action(answer, noted, asked)
            noted = None
            try:
                resolve(self._policy, answered, answer)
                error = None
            except (TypeError, ValueError) as problem:
                error = f"{problem}; answer again with a PermissionDecision"
            outcome = self._read(result)
        with self._lock:
            if key is not None:
                self._paused.pop(key, None)
        if not outcome.runs:
            return _refusal(request, outcome.reason or pending_reason(name))
        if outcome.modified:
            # ToolCallRequest is a dataclass: replace() works on every LangChain release the extra allows.
            return dataclasses.replace(request, tool_call={**call, "args": outcome.arguments})
        return request

    def _noted_result(self, key: tuple[object, str] | None, name: str, args: object) -> HookResult | None:
        """The pending result of the action this middleware paused for the call, if it noted one for this
        very call: the same thread, call id, tool and arguments (a call changed meanwhile is decided anew)."""
        with self._lock:
            action_id = None if key is None else self._paused.get(key)
        if action_id is None:
            return None
        action = self._policy.lookup(action_id)
        if action is None or action.tool_name != name or not same_arguments(action.args, args):
            return None
        return pending(action_id, pending_reason(name))

    def _read(self, result: HookResult) -> Outcome:
        return self._policy.outcome(result, on_project_grant=self._on_project_grant)


def _answered_action(answer: object, noted: int | None, asked: int) -> int:
    """The action a resume value answers: the ``action_id`` it names, else the action noted for the call
    before this re-run (when the call now asks about another one), else the one being asked about."""
    named = answer.get("action_id") if isinstance(answer, Mapping) else None
    if isinstance(named, int) and not isinstance(named, bool):
        return named
    return noted if noted is not None else asked


_CHECKPOINTER_MISSING: Final = (
    "PermissionMiddleware: the graph has no checkpointer, so a call that waits for a person could never be "
    "resumed; pass one to create_agent, as in create_agent(model, tools, middleware=[PermissionMiddleware("
    "policy)], checkpointer=InMemorySaver()) (from langgraph.checkpoint.memory import InMemorySaver; a "
    "durable saver, such as langgraph-checkpoint-sqlite's SqliteSaver, keeps paused calls across restarts), "
    'and invoke it with a thread: {"configurable": {"thread_id": "..."}}'
)


def _require_checkpointer() -> None:
    """Refuse to run in a graph that cannot be resumed (outside a graph there is nothing to check).

    Raises:
        ValueError: the graph has no checkpointer.
    """
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        return
    if configurable.get(CONFIG_KEY_CHECKPOINTER) is None:
        raise ValueError(_CHECKPOINTER_MISSING)


def _tool_name(tool: object) -> object:
    """A tool's name as the model sees it: a ``BaseTool``'s ``name``, or a tool given as a dict."""
    if isinstance(tool, Mapping):
        function = tool.get("function")
        return tool.get("name") or (function.get("name") if isinstance(function, Mapping) else None)
    return getattr(tool, "name", None)


def _thread() -> object:
    """The LangGraph thread the tool call runs in (``None`` outside a graph or without a thread id)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:
        return None
    return configurable.get("thread_id")


def _refusal(request: ToolCallRequest, text: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(content=text, name=call["name"], tool_call_id=call["id"], status="error")
