"""What the framework adapters share: the request a person sees, reading a person's answer, argument checks.

Turning a decision into run/refuse/wait is the policy's own ``outcome()``; this module holds only what is
common to the frameworks' ways of asking a person.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ask_permissions._errors import preview
from ask_permissions.policy._outcome import ProjectGrantHook
from ask_permissions.policy._resolution import SCOPES, permission_request, read_answer
from ask_permissions.typing import PermissionDecision, PermissionRequest

if TYPE_CHECKING:
    from ask_permissions.typing import PolicyLike

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

# What an adapter calls on the policy it is given.
_POLICY_METHODS: Final = ("before_tool_call", "outcome", "lookup", "approve", "reject")


def resolve(policy: PolicyLike, action_id: int, decision: object) -> None:
    """Resolve a queued action through the policy with a person's ``PermissionDecision``.

    An action already resolved stays as it is (the policy ignores ids that are not pending). The scope is
    carried by the policy; an adapter's own project hook is applied when it reads the outcome next.

    Raises:
        TypeError: the decision is not a mapping (or a bool).
        ValueError: the decision, scope, feedback or edited arguments is not one of the accepted values
            (nothing resolved).
    """
    answer = read_answer(decision)
    if answer.verdict == "approve":
        policy.approve(
            action_id, scope=answer.scope, arguments=answer.arguments, decided_by=answer.decided_by
        )
    elif answer.verdict == "reject":
        policy.reject(action_id, feedback=answer.feedback, decided_by=answer.decided_by)


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
