"""An ``ApprovalPolicy`` in front of every tool call of a Google ADK ``Runner``, as a plugin.

``Runner(..., plugins=[PermissionPlugin(policy)])`` (or ``InMemoryRunner``) consults the policy in
``before_tool_callback``, for every tool of every agent the runner runs:

- ``proceed``: the tool runs.
- ``block``: the tool does not run; the model gets ``{"error": <reason>}`` as the tool's response.
- ``pending``: the call asks for ADK's tool confirmation (``tool_context.request_confirmation``); the
  invocation ends with an ``adk_request_confirmation`` function call whose
  ``args["toolConfirmation"]["payload"]`` is the ``PermissionRequest`` (``action_id``, ``tool_call_id``,
  ``tool``, ``args``, ``reason``). An action the queue approved by itself (auto-approval) runs at once.

The person answers with the ``adk_request_confirmation`` function response, a ``ToolConfirmation``:
``{"confirmed": true}`` approves the queued action (``"payload": {"scope": "session"}`` widens it),
``{"confirmed": false}`` rejects it (``"payload": {"feedback": "..."}`` reaches the model). ADK then replays
the original call; the plugin finds the call's pending action (also in a restored queue), resolves it with
the answer, and runs the tool or gives the model the rejection. An answer that cannot be read (a scope
that is not one) rejects the call with feedback saying what was wrong: ADK cannot ask again from a replay.
When the call has no pending action any more (it was decided elsewhere), the policy's current verdict
stands.

Before a run the plugin checks the policy against the tools of every agent of the runner: a rule (or other
entry) that names none of them is an ``UnknownToolError`` with the nearest name (ADK raises it as the cause
of its ``RuntimeError`` for a failed plugin); ``unknown_tools="keep"`` keeps such rules, for tools that come
later.

Needs ``pip install 'ask-permissions[adk]'`` (from a checkout: ``pip install -e '.[adk]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, final

try:
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_confirmation import ToolConfirmation
    from google.adk.tools.tool_context import ToolContext
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.adk needs Google ADK 1.14 or later: pip install '.[adk]' from a "
        "checkout (pip install 'ask-permissions[adk]' once the package is published)"
    ) from error

from ask_permissions._errors import preview
from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._outcome import Outcome
from ask_permissions.policy._results import pending_reason

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

__all__ = ["PermissionPlugin", "PermissionRequest", "confirmation_decision"]


@final
class PermissionPlugin(BasePlugin):
    """An ADK plugin that asks an ``ApprovalPolicy`` before each tool call of every agent of a runner.

    Args:
        policy: decides each call; its queue holds the calls waiting for a person.
        on_project_grant: called with an approved action whose scope is ``"project"``, so the host can
            record the grant in its own project store (the policy's own hook otherwise; without either a
            project approval counts once). A ``"session"`` approval grants the tool in
            ``policy.session_grants`` (once, if it has none).
        name: the plugin's name among the runner's plugins.
        unknown_tools: ``"error"`` refuses, before a run, a policy whose rules (or other entries) name
            none of the tools of the runner's agents; ``"keep"`` keeps them; ``None`` (the default) does
            what the policy says (a policy file's ``unknown_tools``), else ``"error"``.

    Raises:
        TypeError: ``policy`` is not a policy (its queue, say), or ``on_project_grant`` is not callable.
        ValueError: ``unknown_tools`` is neither ``"error"`` nor ``"keep"``.

    Thread-safe as far as the policy and queue are; what it checked of the tools has its own lock.
    """

    def __init__(
        self,
        policy: PolicyLike,
        *,
        on_project_grant: ProjectGrantHook | None = None,
        name: str = "ask_permissions",
        unknown_tools: UnknownTools | None = None,
    ) -> None:
        self._policy = require_policy(policy, "PermissionPlugin")
        self._on_project_grant = require_hook(on_project_grant, "PermissionPlugin")
        self._known = KnownTools(self._policy, "PermissionPlugin", unknown_tools)
        super().__init__(name=name)

    @property
    def policy(self) -> PolicyLike:
        """The policy consulted before each tool call."""
        return self._policy

    def __repr__(self) -> str:
        return f"<PermissionPlugin name={self.name!r} policy={self._policy!r}>"

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        """Check the policy against the tools of every agent of the run, before anything runs.

        Raises:
            UnknownToolError: the policy names a tool no agent of the run has.
        """
        if not self._known.keeps:
            self._known.check(await _agent_tool_names(invocation_context))

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """``None`` when the tool may run, else the response the model gets instead; may ask a person."""
        name = tool.name
        result = self._policy.before_tool_call(ToolCall(name, tool_args, tool_context.function_call_id))
        outcome = self._read(result)
        confirmation = tool_context.tool_confirmation
        if outcome.waits and outcome.action is not None and confirmation is not None:
            # ADK's replay of a call the person answered: the answer resolves the queued action. ADK cannot
            # ask again from a replay, so an answer that cannot be read rejects the call, saying why (a
            # pending leftover would also hold up the queue's auto-approvals behind it).
            try:
                resolve(self._policy, outcome.action.id, confirmation_decision(confirmation))
            except (TypeError, ValueError) as problem:
                self._policy.reject(
                    outcome.action.id, feedback=f"the confirmation could not be read: {problem}"
                )
            outcome = self._read(result)
        if outcome.waits and outcome.action is not None:
            reason = outcome.reason or pending_reason(name)
            tool_context.request_confirmation(
                hint=reason, payload=dict(permission_request(outcome.action, reason))
            )
            # The pause is not a tool result for the model to act on: end the invocation here.
            tool_context.actions.skip_summarization = True
            return {"error": reason}
        if outcome.runs:
            if outcome.modified:
                # ADK runs the tool with the very dict it gave this callback: a person's edit (or a check's
                # rewrite) replaces its contents.
                tool_args.clear()
                tool_args.update(outcome.arguments)
            return None
        return {"error": outcome.reason or pending_reason(name)}

    def _read(self, result: HookResult) -> Outcome:
        return self._policy.outcome(result, on_project_grant=self._on_project_grant)


async def _agent_tool_names(context: InvocationContext) -> list[str]:
    """The names of the tools of every agent of the run's agent tree (its root's, and all sub-agents')."""
    agent: Any = context.agent
    root = getattr(agent, "root_agent", None) or agent
    names: list[str] = []
    pending = [] if root is None else [root]
    readonly = ReadonlyContext(context)
    while pending:
        current = pending.pop()
        canonical = getattr(current, "canonical_tools", None)
        if callable(canonical):
            names.extend(tool.name for tool in await canonical(readonly))
        pending.extend(getattr(current, "sub_agents", None) or ())
    return names


def confirmation_decision(confirmation: ToolConfirmation) -> PermissionDecision:
    """The ``PermissionDecision`` a ``ToolConfirmation`` stands for.

    ``confirmed`` approves, with ``payload["scope"]`` (``"once"`` by default) and, when the person edited
    the call, ``payload["arguments"]`` (the arguments the tool then runs with); otherwise it rejects, with
    ``payload["feedback"]``. ``payload["decided_by"]`` names who answered. The payload may be left out.

    Raises:
        TypeError: the payload is neither a mapping nor ``None``.
    """
    payload: object = confirmation.payload
    if payload is None:
        payload = {}
    if not isinstance(payload, Mapping):
        raise TypeError(f"confirmation.payload: expected a mapping or None; got {preview(payload)}")
    decision: PermissionDecision
    if confirmation.confirmed:
        decision = {"decision": "approve", "scope": payload.get("scope", "once")}
        if payload.get("arguments") is not None:
            decision["arguments"] = payload["arguments"]
    else:
        decision = {"decision": "reject", "feedback": payload.get("feedback")}
    if payload.get("decided_by") is not None:
        decision["decided_by"] = payload["decided_by"]
    return decision
