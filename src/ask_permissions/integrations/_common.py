"""What the framework adapters share: the request a person sees, reading a person's answer, argument checks,
and the check of a policy's tool names against the agent's tools.

Turning a decision into run/refuse/wait is the policy's own ``outcome()``; this module holds only what is
common to the frameworks' ways of asking a person.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final, final

from ask_permissions._errors import preview
from ask_permissions._vocabulary import SCOPES, PermissionDecision, PermissionRequest
from ask_permissions.policy._outcome import ProjectGrantHook
from ask_permissions.policy._resolution import permission_request, read_answer
from ask_permissions.policy._tool_names import read_unknown_tools, require_known_tools

if TYPE_CHECKING:
    from ask_permissions._vocabulary import UnknownTools
    from ask_permissions.policy._policy import PolicyLike

__all__ = [
    "SCOPES",
    "KnownTools",
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


@final
class KnownTools:
    """An adapter's check of its policy against the agent's tools: rules naming none of them are refused.

    Each distinct list of tool names is checked once. Thread-safe: a private lock guards what was checked
    (the check itself runs outside it; two threads may both check a new list, with the same answer).

    Args:
        policy: the adapter's policy (one with ``tool_references()``; any other names nothing checkable).
        adapter: the adapter's name, for the message.
        unknown_tools: ``"error"``, ``"keep"`` (check nothing), or ``None``: the policy's own
            ``unknown_tools`` (a policy file's setting), else ``"error"``.
    """

    __slots__ = ("_adapter", "_checked", "_keep", "_lock", "_policy")

    def __init__(self, policy: object, adapter: str, unknown_tools: UnknownTools | None) -> None:
        chosen = unknown_tools if unknown_tools is not None else getattr(policy, "unknown_tools", "error")
        self._keep: Final = read_unknown_tools(chosen, "unknown_tools") == "keep"
        self._policy: Final = policy
        self._adapter: Final = adapter
        self._lock: Final = threading.Lock()
        self._checked: set[frozenset[str]] = set()

    @property
    def keeps(self) -> bool:
        """Whether rules for tools the agent does not have are kept (nothing is checked)."""
        return self._keep

    def check(self, names: Iterable[object]) -> None:
        """Refuse the policy if it names a tool none of ``names`` is (an empty list checks nothing).

        Raises:
            UnknownToolError: naming each field, the nearest tool name and the agent's tools.
        """
        if self._keep:
            return
        known = frozenset(name for name in names if isinstance(name, str) and name)
        with self._lock:
            if not known or known in self._checked:
                return
        require_known_tools(
            self._policy,
            sorted(known),
            where=f"{self._adapter}: the policy names tools the agent does not have",
            keep_hint=f'pass {self._adapter}(..., unknown_tools="keep") to keep rules for tools to come',
        )
        with self._lock:
            self._checked.add(known)


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
