"""What the framework adapters share: the request a person sees, reading a person's answer, argument checks.

Turning a decision into run/refuse/wait is the policy's own ``outcome()``; this module holds only what is
common to the frameworks' ways of asking a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, NotRequired, Required, TypedDict

from ask_permissions._errors import preview
from ask_permissions.policy._outcome import ProjectGrantHook

if TYPE_CHECKING:
    from ask_permissions import Action
    from ask_permissions.typing import PolicyLike, ResolutionScope

__all__ = [
    "SCOPES",
    "PermissionDecision",
    "PermissionRequest",
    "ProjectGrantHook",
    "permission_request",
    "require_hook",
    "require_policy",
    "resolve",
]

SCOPES: Final = ("once", "session", "project")

# What an adapter calls on the policy it is given.
_POLICY_METHODS: Final = ("before_tool_call", "outcome", "lookup", "approve", "reject")


class PermissionRequest(TypedDict):
    """What a person is asked to decide: the queued action, the call it stands for and why it waits.

    ``error`` is there only when the person's previous answer could not be read; it says what was wrong.
    JSON-safe as long as the tool's arguments are.
    """

    action_id: int
    tool_call_id: str | None
    tool: str
    args: Any
    reason: str
    error: NotRequired[str]


class PermissionDecision(TypedDict, total=False):
    """A person's answer to a ``PermissionRequest``.

    ``{"decision": "approve"}`` (optionally with ``"scope": "once" | "session" | "project"``),
    ``{"decision": "reject"}`` (optionally with ``"feedback": "..."``, which reaches the model), or
    ``{"decision": "queue"}``: the person decided through the policy or the queue itself; use its verdict.
    """

    decision: Required[Literal["approve", "reject", "queue"]]
    scope: ResolutionScope
    feedback: str | None


def permission_request(action: Action, reason: str, error: str | None = None) -> PermissionRequest:
    """The request shown to a person for a queued action (with ``error`` when an answer was unreadable)."""
    tool_call_id = action.tool_call_id
    request: PermissionRequest = {
        "action_id": action.id,
        "tool_call_id": None if tool_call_id is None else str(tool_call_id),
        "tool": action.tool_name,
        "args": action.args,
        "reason": reason,
    }
    if error is not None:
        request["error"] = error
    return request


def resolve(policy: PolicyLike, action_id: int, decision: object) -> None:
    """Resolve a queued action through the policy with a person's ``PermissionDecision``.

    An action already resolved stays as it is (the policy ignores ids that are not pending). The scope is
    carried by the policy; an adapter's own project hook is applied when it reads the outcome next.

    Raises:
        TypeError: the decision is not a mapping.
        ValueError: the decision, scope or feedback is not one of the accepted values (nothing resolved).
    """
    if not isinstance(decision, Mapping):
        raise TypeError(f"decision: expected a PermissionDecision mapping; got {preview(decision)}")
    verdict = decision.get("decision")
    if verdict == "queue":
        return
    if verdict == "approve":
        scope = decision.get("scope", "once")
        if scope not in SCOPES:
            raise ValueError(f"decision.scope: expected 'once', 'session' or 'project'; got {preview(scope)}")
        policy.approve(action_id, scope=scope)
    elif verdict == "reject":
        feedback = decision.get("feedback")
        if feedback is not None and not isinstance(feedback, str):
            raise ValueError(f"decision.feedback: expected a string or None; got {preview(feedback)}")
        policy.reject(action_id, feedback=feedback)
    else:
        raise ValueError(
            f"decision.decision: expected 'approve', 'reject' or 'queue'; got {preview(verdict)}"
        )


def require_policy(policy: object, adapter: str) -> PolicyLike:
    """The policy an adapter was given, refused early when it is something else (its queue, say).

    Raises:
        TypeError: ``policy`` lacks one of the policy methods adapters call.
    """
    missing = [name for name in _POLICY_METHODS if not callable(getattr(policy, name, None))]
    if missing:
        hint = " (pass the policy, not its queue)" if callable(getattr(policy, "submit", None)) else ""
        raise TypeError(
            f"{adapter}: policy: expected a policy with {', '.join(_POLICY_METHODS)}{hint}; "
            f"got {preview(policy)}, which has no {', '.join(missing)}"
        )
    return policy  # type: ignore[return-value]  # checked structurally above


def require_hook(hook: object, adapter: str) -> ProjectGrantHook | None:
    """An adapter's ``on_project_grant``: ``None`` or a callable.

    Raises:
        TypeError: anything else.
    """
    if hook is not None and not callable(hook):
        raise TypeError(f"{adapter}: on_project_grant: expected a callable or None; got {preview(hook)}")
    return hook
