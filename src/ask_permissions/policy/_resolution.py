"""Reading a person's (or a resolver's) answer to an ask, and the request they answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from ask_permissions._errors import preview
from ask_permissions.typing import Answer, PermissionRequest, ResolutionScope

if TYPE_CHECKING:
    from ask_permissions.queue._queue import Action

__all__ = ["SCOPES", "Answer", "ReadAnswer", "permission_request", "read_answer"]

SCOPES: Final[tuple[ResolutionScope, ...]] = ("once", "session", "project")

_Approve: TypeAlias = "tuple[Literal['approve'], ResolutionScope]"
_Reject: TypeAlias = "tuple[Literal['reject'], str | None]"
ReadAnswer: TypeAlias = "_Approve | _Reject | tuple[Literal['queue'], None]"


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


def read_answer(answer: object) -> ReadAnswer:
    """An answer as ``("approve", scope)``, ``("reject", feedback)`` or ``("queue", None)``.

    Raises:
        TypeError: neither a bool nor a mapping.
        ValueError: the decision, scope or feedback is not one of the accepted values.
    """
    if answer is True:
        return ("approve", "once")
    if answer is False:
        return ("reject", None)
    if not isinstance(answer, Mapping):
        raise TypeError(f"decision: expected a PermissionDecision mapping; got {preview(answer)}")
    verdict = answer.get("decision")
    if verdict == "queue":
        return ("queue", None)
    if verdict == "approve":
        scope = answer.get("scope", "once")
        for known in SCOPES:
            if scope == known:
                return ("approve", known)
        raise ValueError(f"decision.scope: expected 'once', 'session' or 'project'; got {preview(scope)}")
    if verdict == "reject":
        feedback = answer.get("feedback")
        if feedback is not None and not isinstance(feedback, str):
            raise ValueError(f"decision.feedback: expected a string or None; got {preview(feedback)}")
        return ("reject", feedback)
    raise ValueError(f"decision.decision: expected 'approve', 'reject' or 'queue'; got {preview(verdict)}")
