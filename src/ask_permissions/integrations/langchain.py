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
  "the person decided through the queue": the queue's verdict is used, and the graph pauses again while
  the action is still pending. An action the queue approved by itself (auto-approval) runs without pausing.

Needs a checkpointer (the graph must be resumable) and ``pip install 'ask-permissions[langchain]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, final

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.tools.tool_node import ToolCallRequest
    from langchain_core.messages import ToolMessage
    from langgraph.types import Command, interrupt
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.langchain needs LangChain v1 and LangGraph: "
        "pip install 'ask-permissions[langchain]'"
    ) from error

from ask_permissions._tool_call import ToolCall

from ._common import (
    PermissionDecision,
    PermissionRequest,
    ProjectGrantHook,
    QueuedCalls,
    apply_decision,
    apply_scope,
    pending_reason,
    permission_request,
    rejection_text,
)

if TYPE_CHECKING:
    from ask_permissions import Action, ApprovalPolicy

__all__ = ["PermissionDecision", "PermissionMiddleware", "PermissionRequest"]

_ToolResult = ToolMessage | Command[Any]


@final
class PermissionMiddleware(AgentMiddleware[AgentState[Any], Any]):
    """LangChain agent middleware that asks an ``ApprovalPolicy`` before each tool call.

    Args:
        policy: decides each call; its queue holds the calls waiting for a person.
        on_project_grant: called with an approved action whose scope is ``"project"``, so the host can
            record the grant in its own project store; without it a project approval counts once.
            A ``"session"`` approval grants the tool in ``policy.session_grants`` (once, if it has none).

    Thread-safe: the policy and queue are, and the middleware's own note of queued calls has a lock.
    """

    def __init__(self, policy: ApprovalPolicy, *, on_project_grant: ProjectGrantHook | None = None) -> None:
        super().__init__()
        self._policy = policy
        self._on_project_grant = on_project_grant
        self._queued = QueuedCalls()

    @property
    def policy(self) -> ApprovalPolicy:
        """The policy consulted before each tool call."""
        return self._policy

    def __repr__(self) -> str:
        return f"<PermissionMiddleware policy={self._policy!r}>"

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], _ToolResult],
    ) -> _ToolResult:
        """Run the tool if the policy (or a person) allows it; otherwise answer the model with the reason."""
        refusal = self._gate(request)
        return handler(request) if refusal is None else refusal

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolResult]],
    ) -> _ToolResult:
        """The async twin of ``wrap_tool_call``."""
        refusal = self._gate(request)
        return await handler(request) if refusal is None else refusal

    def _gate(self, request: ToolCallRequest) -> ToolMessage | None:
        """``None`` when the tool may run, else the ``ToolMessage`` the model gets instead; may interrupt."""
        call = request.tool_call
        name, args, call_id = call["name"], call["args"], call["id"]
        # LangGraph re-runs the whole tool node on resume: the call queued before the pause (or restored
        # into a fresh queue after a restart) is found again instead of being queued a second time.
        action = self._queued.find(self._policy, call_id, name, args)
        reason = pending_reason(name)
        if action is None:
            result = self._policy.before_tool_call(ToolCall(name, args, call_id))
            if result["action"] == "proceed":
                return None
            if result["action"] == "block":
                return _refusal(request, result["reason"])
            reason = result["reason"]
            action = self._policy.lookup(result["action_id"])
            if action is None:  # the queue lost its own action: fail closed
                return _refusal(request, reason)
            self._queued.remember(call_id, action.id)
        decided = self._await_decision(action, reason)
        self._queued.forget(call_id)
        if decided is None:  # the queue lost its own action: fail closed
            return _refusal(request, reason)
        if not decided.is_approved:
            return _refusal(request, rejection_text(decided))
        apply_scope(self._policy, decided, self._on_project_grant)
        return None

    def _await_decision(self, action: Action, reason: str) -> Action | None:
        """Pause the graph until the action is resolved: it approved or rejected, or ``None`` if lost."""
        while not (action.is_approved or action.is_rejected):
            # Each pass is a new interrupt of this node: LangGraph hands back the resume values in order
            # on every re-run, so a "queue" answer on a still-pending action asks again.
            request: PermissionRequest = permission_request(action, reason)
            apply_decision(self._policy, action.id, interrupt(request))
            current = self._policy.lookup(action.id)
            if current is None:
                return None
            action = current
        return action


def _refusal(request: ToolCallRequest, text: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(content=text, name=call["name"], tool_call_id=call["id"], status="error")
