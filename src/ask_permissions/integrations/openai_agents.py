"""An ``ApprovalPolicy`` in front of the function tools of an OpenAI Agents SDK agent, through its approvals.

``PermissionGuard(policy).tools([...])`` gives each function tool a ``needs_approval`` check that asks the
policy, and an invoker that runs the tool only when the policy (or a person) allows the exact arguments:

- ``proceed``: the tool runs.
- ``block``: the tool does not run; the model gets the reason as the tool's output, so it can take another
  path.
- ``pending``: the run stops with an interruption (the SDK's human-in-the-loop approval);
  ``guard.requests(result.interruptions)`` lists the ``PermissionRequest`` of each. An action the queue
  approved by itself (auto-approval) runs without stopping.

A person decides through the policy (``policy.approve(id, scope=...)`` / ``policy.reject(id,
feedback=...)``; through the queue works too), then ``guard.apply_decisions(state)`` approves or rejects each
interruption on the ``RunState`` as the queue decided (a rejection carries the rejection text and feedback
to the model) and ``Runner.run(agent, state)`` resumes. ``state.to_string()`` / ``RunState.from_string()``
carry a paused run across a restart, next to the queue and grants snapshots.

The policy sees the arguments as the model sent them (before the SDK fills in defaults), and the tool runs
only with arguments the policy decided on. ``guard.tools([...])`` checks the policy against the tools it is
given (and those guarded before): a rule (or other entry) that names none of them is an
``UnknownToolError`` with the nearest name; ``unknown_tools="keep"`` keeps such rules, for tools that come
later. Needs ``pip install 'ask-permissions[openai-agents]'`` (from a checkout:
``pip install -e '.[openai-agents]'``).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, final

try:
    from agents import FunctionTool, RunContextWrapper, RunState, ToolApprovalItem
    from agents.tool_context import ToolContext
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.openai_agents needs the OpenAI Agents SDK 0.12.1 or later: "
        "pip install '.[openai-agents]' from a checkout (pip install 'ask-permissions[openai-agents]' once "
        "the package is published)"
    ) from error

from ask_permissions._errors import preview
from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._arguments import same_arguments
from ask_permissions.policy._outcome import Outcome
from ask_permissions.policy._results import pending_reason

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

__all__ = ["PermissionGuard", "PermissionRequest"]

# Enough for every call a host can still be acting on; older notes fall out (their calls are asked again).
_NOTE_MEMORY: Final = 4096


class _Call(NamedTuple):
    name: str
    arguments: Any
    call_id: str


class _Note(NamedTuple):
    call: _Call
    result: HookResult


@final
class PermissionGuard:
    """Puts an ``ApprovalPolicy`` in front of OpenAI Agents SDK function tools.

    Args:
        policy: decides each call; its queue holds the calls waiting for a person.
        on_project_grant: called with an approved action whose scope is ``"project"``, so the host can
            record the grant in its own project store (the policy's own hook otherwise; without either a
            project approval counts once). A ``"session"`` approval grants the tool in
            ``policy.session_grants`` (once, if it has none).
        unknown_tools: ``"error"`` makes ``tools([...])`` refuse a policy whose rules (or other entries)
            name none of the guarded tools; ``"keep"`` keeps them; ``None`` (the default) does what the
            policy says (a policy file's ``unknown_tools``), else ``"error"``.

    Raises:
        TypeError: ``policy`` is not a policy (its queue, say), or ``on_project_grant`` is not callable.
        ValueError: ``unknown_tools`` is neither ``"error"`` nor ``"keep"``.

    Thread-safe: the policy and queue are, and the guard's notes of the calls it decided have a lock.
    """

    def __init__(
        self,
        policy: PolicyLike,
        *,
        on_project_grant: ProjectGrantHook | None = None,
        unknown_tools: UnknownTools | None = None,
    ) -> None:
        self._policy = require_policy(policy, "PermissionGuard")
        self._on_project_grant = require_hook(on_project_grant, "PermissionGuard")
        self._known = KnownTools(self._policy, "PermissionGuard", unknown_tools)
        # The SDK asks needs_approval and runs the tool at different moments (across a pause, in another
        # process): the decision taken for a call is noted by call id so that it is taken once.
        self._lock = threading.Lock()
        self._notes: OrderedDict[str, _Note] = OrderedDict()
        self._guarded: set[str] = set()

    @property
    def policy(self) -> PolicyLike:
        """The policy consulted before each tool call."""
        return self._policy

    def __repr__(self) -> str:
        return f"<PermissionGuard policy={self._policy!r}>"

    def tool(self, tool: FunctionTool) -> FunctionTool:
        """A copy of ``tool`` whose calls the policy decides; ``tool`` itself is left as it is.

        Raises:
            TypeError: ``tool`` is not a ``FunctionTool`` (hosted, shell and computer tools are not gated).
            ValueError: ``tool`` sets ``needs_approval`` itself: the policy decides who approves what (say it
                with ``require_approval`` or tool metadata).
        """
        if not isinstance(tool, FunctionTool):
            raise TypeError(f"PermissionGuard: expected a FunctionTool (@function_tool); got {preview(tool)}")
        if tool.needs_approval is not False:
            raise ValueError(
                f"PermissionGuard: tool {tool.name!r} sets needs_approval itself; the policy decides "
                "which calls wait for a person (use require_approval or tool metadata)"
            )
        with self._lock:
            self._guarded.add(tool.name)
        return dataclasses.replace(
            tool, needs_approval=self._approval_check(tool.name), on_invoke_tool=self._invoker(tool)
        )

    def tools(self, tools: Iterable[FunctionTool]) -> list[FunctionTool]:
        """``tool(t)`` for each of ``tools``, in order, once the policy was checked against them (and the
        tools guarded before): give the agent's tools in one call.

        Raises:
            TypeError, ValueError: as for ``tool``.
            UnknownToolError: the policy names a tool none of the guarded tools is.
        """
        given: list[object] = list(tools)  # a host may pass other tools: tool() refuses them
        with self._lock:
            names = set(self._guarded)
        names.update(tool.name for tool in given if isinstance(tool, FunctionTool))
        self._known.check(names)  # before any tool is guarded: a refusal changes nothing
        return [self.tool(tool) for tool in given]  # type: ignore[arg-type]  # tool() checks each

    def requests(self, interruptions: Iterable[ToolApprovalItem]) -> list[PermissionRequest]:
        """The ``PermissionRequest`` of each interruption of a guarded tool that waits for a person.

        Interruptions of other tools are left out. After a restart the policy is asked again about each
        call: it finds the call's pending action in the restored queue and queues nothing new.
        """
        found: list[PermissionRequest] = []
        for item in interruptions:
            call = self._call_of(item)
            if call is None:
                continue
            outcome = self._read(self._decided(call))
            if outcome.waits and outcome.action is not None:
                found.append(permission_request(outcome.action, outcome.reason or pending_reason(call.name)))
        return found

    def apply_decisions(self, state: RunState[Any, Any]) -> None:
        """Approve or reject each interruption of a guarded tool on ``state`` as the queue decided it.

        An approved action's call is approved (it runs when the run resumes, and a ``"session"`` or
        ``"project"`` scope takes effect); a rejected one is rejected with the rejection text and feedback,
        which the model reads. A call the policy now lets through or blocks by itself is approved or
        rejected with the reason. Calls still pending stay interrupted: the resumed run stops on them again.
        Interruptions of other tools are left to the host.
        """
        for item in state.get_interruptions():
            call = self._call_of(item)
            if call is None:
                continue
            outcome = self._read(self._decided(call))
            if outcome.runs:
                state.approve(item)
            elif not outcome.waits:
                with self._lock:
                    self._notes.pop(call.call_id, None)
                state.reject(item, rejection_message=outcome.reason or pending_reason(call.name))

    # -- the two hooks each guarded tool gets ----------------------------------------------------------

    def _approval_check(self, name: str) -> Any:
        async def needs_approval(
            context: RunContextWrapper[Any], params: dict[str, Any], call_id: str
        ) -> bool:
            # Some SDK releases ask again when a paused run resumes: the noted decision answers then.
            return self._read(self._decided(_Call(name, params, call_id))).waits

        return needs_approval

    def _invoker(self, tool: FunctionTool) -> Any:
        run = tool.on_invoke_tool

        async def invoke(context: ToolContext[Any], arguments: str) -> Any:
            call = _Call(tool.name, _arguments(arguments), context.tool_call_id)
            outcome = self._outcome_at_run(context, call)
            if outcome.runs and outcome.modified:
                # A person's edit (or a check's rewrite): the tool runs with those arguments, as JSON text.
                return await run(context, json.dumps(outcome.arguments))
            if outcome.runs:
                return await run(context, arguments)
            return outcome.reason or pending_reason(tool.name)

        return invoke

    def _outcome_at_run(self, context: ToolContext[Any], call: _Call) -> Outcome:
        """The verdict on a call the SDK is about to run, for the exact arguments it runs with."""
        note = self._take(call)
        result = note.result if note is not None else self._decide(call)
        outcome = self._read(result)
        if outcome.waits and outcome.action is not None and context.is_tool_approved(call.name, call.call_id):
            # The host approved the interruption on the RunState itself: that approval is the person's.
            self._policy.approve(outcome.action.id)
            outcome = self._read(result)
        if outcome.waits:  # nobody approved it: never run a call the policy holds
            return Outcome("refuse", outcome.reason or pending_reason(call.name), outcome.action)
        return outcome

    # -- notes -------------------------------------------------------------------------------------------

    def _decide(self, call: _Call) -> HookResult:
        result = self._policy.before_tool_call(ToolCall(call.name, call.arguments, call.call_id))
        with self._lock:
            self._notes[call.call_id] = _Note(call, result)
            self._notes.move_to_end(call.call_id)
            if len(self._notes) > _NOTE_MEMORY:
                self._notes.popitem(last=False)
        return result

    def _decided(self, call: _Call) -> HookResult:
        """The result noted for this very call, else the policy's decision now (noted in turn)."""
        with self._lock:
            note = self._notes.get(call.call_id)
        if note is not None and _same_call(note.call, call):
            return note.result
        return self._decide(call)

    def _take(self, call: _Call) -> _Note | None:
        with self._lock:
            note = self._notes.pop(call.call_id, None)
        return note if note is not None and _same_call(note.call, call) else None

    def _call_of(self, item: ToolApprovalItem) -> _Call | None:
        """The call an interruption stands for, if it is a function call of a guarded tool."""
        raw = item.raw_item
        name, call_id, arguments = (_field(raw, key) for key in ("name", "call_id", "arguments"))
        if (
            _field(raw, "type") != "function_call"
            or not isinstance(name, str)
            or not isinstance(call_id, str)
        ):
            return None
        with self._lock:
            if name not in self._guarded:
                return None
        return _Call(name, _arguments(arguments if isinstance(arguments, str) else ""), call_id)

    def _read(self, result: HookResult) -> Outcome:
        return self._policy.outcome(result, on_project_grant=self._on_project_grant)


def _same_call(left: _Call, right: _Call) -> bool:
    return left.name == right.name and same_arguments(left.arguments, right.arguments)


def _field(raw: object, key: str) -> object:
    """A field of an interruption's raw item: a pydantic model, or a mapping once restored."""
    return raw.get(key) if isinstance(raw, Mapping) else getattr(raw, key, None)


def _arguments(text: str) -> Any:
    """The model's arguments as JSON data; text that is not JSON is given to the policy as it is."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text
