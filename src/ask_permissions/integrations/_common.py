"""What the framework adapters share: the request a person sees, the texts the model sees, grants."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, Required, TypedDict, final

from ask_permissions.policy._results import pending_reason
from ask_permissions.typing import ResolutionScope

if TYPE_CHECKING:
    from ask_permissions import Action, ApprovalPolicy

__all__ = [
    "SCOPES",
    "PermissionDecision",
    "PermissionRequest",
    "ProjectGrantHook",
    "QueuedCalls",
    "apply_decision",
    "apply_scope",
    "find_queued",
    "pending_reason",
    "permission_request",
    "rejection_text",
    "same_args",
]

ProjectGrantHook = Callable[["Action"], object]
"""Called with an approved action whose ``resolution_scope`` is ``"project"``; the host persists the grant."""

SCOPES: Final = ("once", "session", "project")


class PermissionRequest(TypedDict):
    """What a person is asked to decide: the queued action, the call it stands for and why it waits.

    JSON-safe as long as the tool's arguments are.
    """

    action_id: int
    tool_call_id: str | None
    tool: str
    args: Any
    reason: str


class PermissionDecision(TypedDict, total=False):
    """A person's answer to a ``PermissionRequest``.

    ``{"decision": "approve"}`` (optionally with ``"scope": "once" | "session" | "project"``),
    ``{"decision": "reject"}`` (optionally with ``"feedback": "..."``, which reaches the model), or
    ``{"decision": "queue"}``: the person decided through the queue itself; use its verdict.
    """

    decision: Required[Literal["approve", "reject", "queue"]]
    scope: ResolutionScope
    feedback: str | None


def rejection_text(action: Action) -> str:
    """What the model reads when a person rejected its call: the tool, and the person's feedback if any."""
    text = f"The call to '{action.tool_name}' was rejected"
    return f"{text}: {action.feedback}" if action.feedback else text


def permission_request(action: Action, reason: str) -> PermissionRequest:
    """The request shown to a person for a queued action."""
    tool_call_id = action.tool_call_id
    return {
        "action_id": action.id,
        "tool_call_id": None if tool_call_id is None else str(tool_call_id),
        "tool": action.tool_name,
        "args": action.args,
        "reason": reason,
    }


def apply_decision(policy: ApprovalPolicy, action_id: int, decision: object) -> None:
    """Resolve a queued action with a person's ``PermissionDecision``.

    An action the queue already resolved stays as it is (the queue ignores resolved ids).

    Raises:
        TypeError: the decision is not a mapping.
        ValueError: the decision, scope or feedback is not one of the accepted values.
    """
    if not isinstance(decision, Mapping):
        raise TypeError(f"decision: expected a PermissionDecision mapping; got {decision!r}")
    verdict = decision.get("decision")
    if verdict == "queue":
        return
    if verdict == "approve":
        scope = decision.get("scope", "once")
        if scope not in SCOPES:
            raise ValueError(f"decision.scope: expected 'once', 'session' or 'project'; got {scope!r}")
        policy.queue.approve(action_id, scope=scope)
    elif verdict == "reject":
        feedback = decision.get("feedback")
        if feedback is not None and not isinstance(feedback, str):
            raise ValueError(f"decision.feedback: expected a string or None; got {feedback!r}")
        policy.queue.reject(action_id, feedback=feedback)
    else:
        raise ValueError(f"decision.decision: expected 'approve', 'reject' or 'queue'; got {verdict!r}")


def apply_scope(policy: ApprovalPolicy, action: Action, on_project_grant: ProjectGrantHook | None) -> None:
    """Carry an approval beyond its call when the person chose a wider scope.

    ``"session"`` grants the whole tool in ``policy.session_grants`` (like ``"once"`` when the policy has
    none); ``"project"`` calls the host's ``on_project_grant`` hook (like ``"once"`` without one), since
    the host owns project storage.
    """
    if not action.is_approved:
        return
    if action.resolution_scope == "session":
        # Any grants object with a grant() method (SessionPermissionGrants has one) can take it.
        grant = getattr(policy.session_grants, "grant", None)
        if callable(grant):
            grant(action.tool_name)
    elif action.resolution_scope == "project" and on_project_grant is not None:
        on_project_grant(action)


def same_args(left: object, right: object) -> bool:
    """Whether two argument values are the same call's arguments."""
    # A restored queue holds its arguments as JSON gave them back (tuples became lists), so compare
    # the JSON forms; anything JSON cannot encode is compared by its str(), as argument matching does.

    def encode(value: object) -> str:
        return json.dumps({} if value is None else value, sort_keys=True, default=str)

    return left == right or encode(left) == encode(right)


def find_queued(
    policy: ApprovalPolicy, tool_call_id: str | None, tool_name: str, args: object, known: int | None = None
) -> Action | None:
    """The action queued for this very call: action ``known`` if it is that call, else a pending one."""
    if tool_call_id is None:
        return None
    candidates = [] if known is None else [policy.lookup(known)]
    candidates.extend(policy.queue.pending_actions)
    for action in candidates:
        if (
            action is not None
            and action.tool_call_id == tool_call_id
            and action.tool_name == tool_name
            and same_args(action.args, args)
        ):
            return action
    return None


@final
class QueuedCalls:
    """Which queued action stands for which framework tool call, so a re-run never queues a call twice.

    Remembers the actions this adapter queued; after a restart ``find_queued`` finds them among the
    restored queue's pending actions. Thread-safe: a private lock guards the map.
    """

    __slots__ = ("_actions", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._actions: dict[str, int] = {}

    def remember(self, tool_call_id: str | None, action_id: int) -> None:
        """Note that ``action_id`` was queued for ``tool_call_id``."""
        if tool_call_id is not None:
            with self._lock:
                self._actions[tool_call_id] = action_id

    def forget(self, tool_call_id: str | None) -> None:
        """Drop the note for a call whose action has been used up."""
        if tool_call_id is not None:
            with self._lock:
                self._actions.pop(tool_call_id, None)

    def find(
        self, policy: ApprovalPolicy, tool_call_id: str | None, tool_name: str, args: object
    ) -> Action | None:
        """The action already queued for this very call, pending or resolved, or ``None``."""
        if tool_call_id is None:
            return None
        with self._lock:
            known = self._actions.get(tool_call_id)
        return find_queued(policy, tool_call_id, tool_name, args, known)
