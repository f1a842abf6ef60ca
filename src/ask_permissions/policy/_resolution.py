"""Reading a person's (or a resolver's) answer to an ask, and the request they answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeAlias

from ask_permissions._errors import preview
from ask_permissions._vocabulary import (
    POLICY_DECIDER,
    SCOPES,
    Answer,
    PermissionRequest,
    RecordVerdict,
    ResolutionScope,
    one_of,
)
from ask_permissions.queue._queue import EXPIRED_FEEDBACK

from ._resolvers import CANCELLED_FEEDBACK, UNANSWERED_FEEDBACK

if TYPE_CHECKING:
    from ask_permissions.queue._queue import Action

__all__ = [
    "Answer",
    "AnswerVerdict",
    "ReadAnswer",
    "permission_request",
    "read_answer",
    "resolution_verdict",
]

AnswerVerdict: TypeAlias = Literal["approve", "reject", "queue"]


class ReadAnswer(NamedTuple):
    """An answer, read: approve (with a scope, maybe edited arguments), reject (maybe with feedback), or
    "queue" (someone decided through the queue itself); and who answered, when the answer says."""

    verdict: AnswerVerdict
    scope: ResolutionScope = "once"
    feedback: str | None = None
    arguments: Mapping[str, Any] | None = None
    decided_by: str | None = None


def permission_request(action: Action, reason: str, error: str | None = None) -> PermissionRequest:
    """The request shown to a person for a queued action (with ``error`` when an answer was unreadable).

    Why the call waits comes from the action's ``why`` (the policy that queued it says): the deciding layer,
    rule and source, and the rules "don't ask again" would write. An action queued without one (a bare
    submission, an old snapshot) has ``None`` for each and no suggestions.
    """
    tool_call_id = action.tool_call_id
    why = action.why
    request: PermissionRequest = {
        "action_id": action.id,
        "tool_call_id": None if tool_call_id is None else str(tool_call_id),
        "tool": action.tool_name,
        "args": action.args,
        "reason": reason,
        "layer": None if why is None else why["layer"],
        "rule": None if why is None else why["rule"],
        "source": None if why is None else why["source"],
        "suggestions": [] if why is None else list(why["suggestions"]),
    }
    if error is not None:
        request["error"] = error
    return request


def read_answer(answer: object) -> ReadAnswer:
    """An answer as a ``ReadAnswer``.

    ``True`` approves once, ``False`` rejects; a ``PermissionDecision`` may add a scope or edited
    ``arguments`` (a JSON object) to an approval, feedback to a rejection, and ``decided_by`` to either.

    Raises:
        TypeError: neither a bool nor a mapping.
        ValueError: the decision, scope, feedback, arguments or decided_by is not one of the accepted values.
    """
    if answer is True:
        return _APPROVE_ONCE
    if answer is False:
        return _REJECT
    if not isinstance(answer, Mapping):
        raise TypeError(f"decision: expected a PermissionDecision mapping; got {preview(answer)}")
    verdict = answer.get("decision")
    if verdict == "queue":
        return _QUEUE
    decided_by = answer.get("decided_by")
    if decided_by is not None and (not isinstance(decided_by, str) or not decided_by):
        raise ValueError(
            f"decision.decided_by: expected a name (a non-empty string) or None; got {preview(decided_by)}"
        )
    if verdict == "approve":
        scope = answer.get("scope", "once")
        arguments = answer.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ValueError(
                f"decision.arguments: expected the edited arguments (a JSON object) or None; "
                f"got {preview(arguments)}"
            )
        known = one_of(scope, SCOPES)
        if known is not None:
            return ReadAnswer("approve", known, None, arguments, decided_by)
        raise ValueError(f"decision.scope: expected 'once', 'session' or 'project'; got {preview(scope)}")
    if verdict == "reject":
        feedback = answer.get("feedback")
        if feedback is not None and not isinstance(feedback, str):
            raise ValueError(f"decision.feedback: expected a string or None; got {preview(feedback)}")
        return ReadAnswer("reject", "once", feedback, None, decided_by)
    raise ValueError(f"decision.decision: expected 'approve', 'reject' or 'queue'; got {preview(verdict)}")


def resolution_verdict(action: Action) -> RecordVerdict:
    """How an ask ended, read from its resolved action, the same in every process that reads it.

    An approval is ``ask_allowed``; a rejection with the feedback ``"expired"`` is ``ask_expired``
    (``expire_pending``, a policy past its deadline, the MCP proxy's held calls); the rejections a policy
    makes itself (``decided_by`` ``"policy"``) are ``cancelled`` when the awaiting task was cancelled and
    ``ask_unresolved`` when nobody could answer; every other rejection is ``ask_denied``.
    """
    if action.is_approved:
        return "ask_allowed"
    if action.feedback == EXPIRED_FEEDBACK:
        return "ask_expired"
    if action.decided_by == POLICY_DECIDER:
        if action.feedback == CANCELLED_FEEDBACK:
            return "cancelled"
        if action.feedback == UNANSWERED_FEEDBACK:
            return "ask_unresolved"
    return "ask_denied"


_APPROVE_ONCE: Final = ReadAnswer("approve")
_REJECT: Final = ReadAnswer("reject")
_QUEUE: Final = ReadAnswer("queue")
