"""An ``ApprovalPolicy`` in front of the tools of a pydantic-ai agent, through deferred tool approval.

Wrap a toolset in ``PermissionToolset(toolset, policy)`` and give the agent ``DeferredToolRequests`` as a
possible output type. Before each call the policy decides:

- ``proceed``: the tool runs.
- ``block``: the tool does not run; the model gets a failed tool result carrying the reason
  (pydantic-ai's ``ToolFailed``), so it can take another path.
- ``pending``: the call is deferred for approval (pydantic-ai's ``ApprovalRequired``) and the run ends
  with ``DeferredToolRequests``; its ``metadata[tool_call_id]`` is the ``PermissionRequest`` (``action_id``,
  ``tool_call_id``, ``tool``, ``args``, ``reason``). An action the queue approved by itself
  (auto-approval) runs without deferring.

A person then approves or rejects the queued actions through the policy (``policy.approve(id,
scope=...)`` / ``policy.reject(id, feedback=...)``; through the queue works too, and the adapter carries the
scope when the call runs), and ``deferred_tool_results(policy, requests)``
turns those decisions into the ``DeferredToolResults`` for the next run (with the same message
history): approved calls run, rejected ones reach the model as denials carrying the feedback.

The toolset checks the policy against the tools it wraps: at construction when they are known then (a
``FunctionToolset``, or several combined), and whenever the agent lists them. A rule (or other entry) that
names none of them is an ``UnknownToolError`` with the nearest name; ``unknown_tools="keep"`` keeps such
rules, for tools that come later.

Needs ``pip install 'ask-permissions[pydantic-ai]'`` (from a checkout: ``pip install -e '.[pydantic-ai]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, final

try:
    from pydantic_ai import (
        ApprovalRequired,
        DeferredToolRequests,
        DeferredToolResults,
        RunContext,
        ToolApproved,
        ToolDenied,
        ToolFailed,
    )
    from pydantic_ai.tools import AgentDepsT
    from pydantic_ai.toolsets import (
        AbstractToolset,
        CombinedToolset,
        FunctionToolset,
        ToolsetTool,
        WrapperToolset,
    )
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.pydantic_ai needs pydantic-ai 2.16 or later: "
        "pip install '.[pydantic-ai]' from a checkout (pip install 'ask-permissions[pydantic-ai]' once the "
        "package is published)"
    ) from error

from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._arguments import same_arguments
from ask_permissions.policy._outcome import Outcome, rejection_text
from ask_permissions.policy._results import pending, pending_reason

from ._common import (
    KnownTools,
    PermissionRequest,
    ProjectGrantHook,
    permission_request,
    require_hook,
    require_policy,
)

if TYPE_CHECKING:
    from ask_permissions._vocabulary import HookResult, UnknownTools
    from ask_permissions.policy._policy import PolicyLike

__all__ = ["PermissionRequest", "PermissionToolset", "deferred_tool_results", "permission_requests"]


@final
@dataclass
class PermissionToolset(WrapperToolset[AgentDepsT]):
    """A toolset that asks an ``ApprovalPolicy`` before each call to a tool of the toolset it wraps.

    Its first argument, ``wrapped``, is the toolset whose calls are checked (a ``FunctionToolset``, say).

    Args:
        policy: decides each call; its queue holds the calls waiting for a person.
        on_project_grant: called with an approved action whose scope is ``"project"``, so the host can
            record the grant in its own project store (the policy's own hook otherwise; without either a
            project approval counts once). A ``"session"`` approval grants the tool in
            ``policy.session_grants`` (once, if it has none).
        unknown_tools: ``"error"`` refuses a policy whose rules (or other entries) name none of the
            wrapped tools; ``"keep"`` keeps them; ``None`` (the default) does what the policy says (a policy
            file's ``unknown_tools``), else ``"error"``.

    Raises:
        TypeError: ``policy`` is not a policy (its queue, say), or ``on_project_grant`` is not callable.
        ValueError: ``unknown_tools`` is neither ``"error"`` nor ``"keep"``.
        UnknownToolError: the policy names a tool the wrapped toolset does not have (at construction for
            the tools known then, else when the agent lists them).

    Thread-safe as far as the policy and queue are; what it checked of the tools has its own lock.
    """

    policy: PolicyLike
    on_project_grant: ProjectGrantHook | None = None
    unknown_tools: UnknownTools | None = None
    _known: KnownTools = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        require_policy(self.policy, "PermissionToolset")
        require_hook(self.on_project_grant, "PermissionToolset")
        self._known = KnownTools(self.policy, "PermissionToolset", self.unknown_tools)
        self._known.check(_static_names(self.wrapped) or ())

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The wrapped toolset's tools, once the policy was checked against them (and any it may hide)."""
        tools = await super().get_tools(ctx)
        self._known.check([*tools, *(_static_names(self.wrapped) or ())])
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Run the tool if the policy (or a person) allows it; otherwise fail the call with the reason."""
        if ctx.tool_call_approved:
            outcome = self._approved(name, tool_args, ctx)
        else:
            outcome = self._read(self.policy.before_tool_call(ToolCall(name, tool_args, ctx.tool_call_id)))
            if outcome.waits and outcome.action is not None:
                raise ApprovalRequired(
                    metadata=dict(permission_request(outcome.action, outcome.reason or pending_reason(name)))
                )
        if not outcome.runs:
            raise ToolFailed(outcome.reason or pending_reason(name))
        arguments = outcome.arguments if outcome.modified else tool_args
        return await super().call_tool(name, arguments, ctx, tool)

    def _approved(self, name: str, args: dict[str, Any], ctx: RunContext[AgentDepsT]) -> Outcome:
        """The host approved this call in ``DeferredToolResults``: run it if the queue agrees."""
        result = self._deferred_result(name, args, ctx)
        if result is None:
            # No queued action stands for this call (approved by hand without the request's metadata, with
            # edited arguments, or after a restart that lost the queue): ask the policy afresh, so deny rules
            # still hold; a call it queues now counts as approved by the host.
            result = self.policy.before_tool_call(ToolCall(name, args, ctx.tool_call_id))
        if result["action"] == "pending":
            # The framework-level approval is the person's decision: record it (a decided action stays).
            self.policy.approve(result["action_id"])
        return self._read(result)

    def _deferred_result(
        self, name: str, args: dict[str, Any], ctx: RunContext[AgentDepsT]
    ) -> HookResult | None:
        """The pending result of the action named in the deferred call's metadata, if it is this call."""
        action_id = _action_id(ctx.tool_call_metadata)
        if action_id is None:
            return None
        action = self.policy.lookup(action_id)
        if (
            action is None
            or action.tool_call_id != ctx.tool_call_id
            or action.tool_name != name
            # The model's call, or the person's edit of it (sent back as the approval's override_args).
            or not (same_arguments(action.args, args) or same_arguments(action.approved_args, args))
        ):
            return None
        return pending(action_id, pending_reason(name))

    def _read(self, result: HookResult) -> Outcome:
        return self.policy.outcome(result, on_project_grant=self.on_project_grant)


def _static_names(toolset: AbstractToolset[Any]) -> list[str] | None:
    """The names of a toolset's tools when they are known without a run (``FunctionToolset``, and toolsets
    combined of those), else ``None``; a ``prepare`` function may hide some from a step, never add one."""
    if isinstance(toolset, FunctionToolset):
        return list(toolset.tools)
    if isinstance(toolset, CombinedToolset):
        names: list[str] = []
        for member in toolset.toolsets:
            found = _static_names(member)
            if found is None:
                return None
            names.extend(found)
        return names
    return None


def permission_requests(requests: DeferredToolRequests) -> list[PermissionRequest]:
    """The ``PermissionRequest`` of each call a ``PermissionToolset`` deferred, in the model's call order."""
    found: list[PermissionRequest] = []
    for call in requests.approvals:
        metadata = requests.metadata.get(call.tool_call_id)
        if _action_id(metadata) is not None:
            found.append(metadata)  # type: ignore[arg-type]  # checked by _action_id
    return found


def deferred_tool_results(policy: PolicyLike, requests: DeferredToolRequests) -> DeferredToolResults:
    """The ``DeferredToolResults`` for the calls a ``PermissionToolset`` deferred, from the queue's verdicts.

    An approved action's call is approved (it runs in the next run, with a person's edited arguments if
    they edited it, and a ``"session"`` or ``"project"`` scope takes effect when it does); a rejected one is
    denied with the rejection text and feedback.
    Calls deferred by other toolsets are left out: add their results with ``DeferredToolResults.update``.

    Raises:
        ValueError: an action is still pending (resolve every one first), or is unknown to the policy's
            queue (restore the queue's snapshot before building the results).
    """
    approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
    metadata: dict[str, dict[str, Any]] = {}
    undecided: list[str] = []
    for call in requests.approvals:
        call_id = call.tool_call_id
        request = requests.metadata.get(call_id)
        action_id = _action_id(request)
        if action_id is None:
            continue
        action = policy.lookup(action_id)
        if action is None or action.tool_call_id != call_id:
            raise ValueError(
                f"requests.metadata[{call_id!r}]: action {action_id} is not in the policy's queue; "
                "restore the queue's snapshot before building the results"
            )
        if action.is_approved:
            # An edited call runs with the person's arguments (pydantic-ai's override_args keeps them in
            # the message history as what ran).
            edited = None if action.edited_args is None else dict(action.edited_args)
            approvals[call_id] = ToolApproved(override_args=edited)
            metadata[call_id] = dict(request)  # type: ignore[arg-type]  # checked by _action_id
        elif action.is_rejected:
            approvals[call_id] = ToolDenied(rejection_text(action))
        else:
            undecided.append(f"{action.id} ({action.tool_name!r})")
    if undecided:
        raise ValueError(f"actions still pending: {', '.join(undecided)}; approve or reject them first")
    return DeferredToolResults(approvals=approvals, metadata=metadata)


def _action_id(metadata: object) -> int | None:
    """The action id a ``PermissionToolset`` put in a deferred call's metadata, or ``None``."""
    if not isinstance(metadata, Mapping):
        return None
    action_id = metadata.get("action_id")
    if isinstance(action_id, int) and not isinstance(action_id, bool) and "tool" in metadata:
        return action_id
    return None
