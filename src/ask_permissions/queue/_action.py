"""The ``Action`` value: one submission to the approval queue, and how a resolution changes it."""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, NamedTuple, TypeGuard, final

from ask_permissions._errors import preview
from ask_permissions._vocabulary import ActionStatus, AskExplanation, ResolutionScope

__all__ = [
    "DECIDER_LIMIT",
    "RESOLVED",
    "Action",
    "Resolution",
    "applying",
    "check_decided_by",
    "is_id",
    "printable_name",
    "released",
    "resolved",
]

RESOLVED: Final = frozenset({"approved", "rejected"})
"""The statuses an action ends in."""
DECIDER_LIMIT: Final = 200
"""The most characters of a ``decided_by`` name."""


@final
@dataclass(frozen=True, slots=True, repr=False)
class Action:
    """One submission to the queue: immutable; each change of status is a new ``Action``.

    ``status`` goes ``"pending"`` → ``"applying"`` (while ``on_approve``/``on_reject`` runs) →
    ``"approved"`` or ``"rejected"``, or back to ``"pending"`` when that callback raises.
    ``resolution_scope`` is set on approval (``"once"`` for auto-approvals), ``feedback`` on rejection.

    ``why`` says why the call waits (set by the policy that queued it; ``None`` for a bare submission).
    ``decided_by`` names who resolved it — a person's name, or a machine path: ``"auto_approve"`` (the
    queue's drain), ``"expiry"`` (``expire_pending``), ``"policy"`` (a policy giving up on an ask nobody
    answered) — and ``resolved_at`` when (both ``None`` until resolved, and ``decided_by`` also when the
    resolver gave no name). ``edited_args`` holds the arguments a person's edit approved instead of
    ``args`` (always a JSON object); ``None`` when the call was approved as asked.
    """

    id: int
    tool_call_id: Any
    tool_name: str
    args: Any
    auto_approvable: bool
    status: ActionStatus
    submitted_at: datetime
    message: str | None
    resolution_scope: ResolutionScope | None = None
    feedback: str | None = None
    why: AskExplanation | None = None
    decided_by: str | None = None
    resolved_at: datetime | None = None
    edited_args: Any = None

    @property
    def is_pending(self) -> bool:
        """Whether it waits for a decision."""
        return self.status == "pending"

    @property
    def is_applying(self) -> bool:
        """Whether its ``on_approve``/``on_reject`` callback is running right now."""
        return self.status == "applying"

    @property
    def is_approved(self) -> bool:
        """Whether it was approved."""
        return self.status == "approved"

    @property
    def is_rejected(self) -> bool:
        """Whether it was rejected."""
        return self.status == "rejected"

    @property
    def is_edited(self) -> bool:
        """Whether a person approved it with arguments of their own (``edited_args``)."""
        return self.edited_args is not None

    @property
    def scope(self) -> ResolutionScope | None:
        """Alias of ``resolution_scope``."""
        return self.resolution_scope

    @property
    def approved_args(self) -> Any:
        """The arguments the tool runs with once approved: ``edited_args`` when edited, else ``args``."""
        return self.args if self.edited_args is None else self.edited_args

    def __repr__(self) -> str:
        extra = ""
        if self.resolution_scope is not None:
            extra += f", scope={self.resolution_scope!r}"
        if self.feedback is not None:
            extra += f", feedback={self.feedback!r}"
        if self.decided_by is not None:
            extra += f", decided_by={self.decided_by!r}"
        if self.edited_args is not None:
            extra += f", edited_args={self.edited_args!r}"
        return (
            f"Action(id={self.id!r}, tool_name={self.tool_name!r}, status={self.status!r}{extra}, "
            f"tool_call_id={self.tool_call_id!r}, args={self.args!r}, "
            f"auto_approvable={self.auto_approvable!r}, message={self.message!r}, "
            f"submitted_at={self.submitted_at.isoformat()})"
        )


class Resolution(NamedTuple):
    """What one approval or rejection says: checked by the queue, recorded by the store on its claim."""

    approve: bool
    scope: ResolutionScope | None = None
    """The approval's scope (``None`` for a rejection)."""
    feedback: str | None = None
    """The rejection's feedback (``None`` for an approval)."""
    decided_by: str | None = None
    edited_args: Any = None
    """The read-only arguments an approval runs instead of the action's own, or ``None``."""


def is_id(value: object) -> TypeGuard[int]:
    """Whether ``value`` can be an action id (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def printable_name(value: object, field: str, limit: int) -> str:
    """A name a person reads (a session, who decided): 1 to ``limit`` printable characters, as plain text.

    Raises:
        TypeError: not a string.
        ValueError: empty, too long, or holding a control character.
    """
    if not isinstance(value, str):
        raise TypeError(f"{field}: expected a string; got {preview(value)}")
    name = str.__str__(value)
    if not name or len(name) > limit or not name.isprintable():
        raise ValueError(f"{field}: expected 1 to {limit} printable characters; got {preview(value)}")
    return name


def check_decided_by(decided_by: object) -> str | None:
    """A ``decided_by`` name: None, or 1 to 200 printable characters (see ``printable_name``)."""
    return None if decided_by is None else printable_name(decided_by, "decided_by", DECIDER_LIMIT)


_FIELDS: Final = tuple(field.name for field in dataclasses.fields(Action))
_field_values: Final = operator.attrgetter(*_FIELDS)
_STATUS, _SCOPE, _FEEDBACK, _DECIDED_BY, _RESOLVED_AT, _EDITED = (
    _FIELDS.index(name)
    for name in ("status", "resolution_scope", "feedback", "decided_by", "resolved_at", "edited_args")
)


def _evolve(action: Action, status: ActionStatus, resolution: Resolution | None) -> Action:
    """``dataclasses.replace`` for the fields a resolution changes, at a third of its cost.

    Every other field is read by name from ``dataclasses.fields(Action)``, so a field added later is
    carried over, never reset; ``Action.__init__`` still builds the result.
    """
    values = list(_field_values(action))
    values[_STATUS] = status
    if resolution is None:
        values[_SCOPE] = values[_FEEDBACK] = values[_DECIDED_BY] = values[_EDITED] = None
    else:
        values[_SCOPE] = resolution.scope if resolution.approve else None
        values[_FEEDBACK] = None if resolution.approve else resolution.feedback
        values[_DECIDED_BY] = resolution.decided_by
        values[_EDITED] = resolution.edited_args if resolution.approve else None
    return Action(*values)


def applying(action: Action, resolution: Resolution) -> Action:
    """The pending ``action`` taken up for this resolution: ``"applying"``, with what it says."""
    return _evolve(action, "applying", resolution)


def released(action: Action) -> Action:
    """An applying action put back to pending (its callback raised): the resolution's fields cleared."""
    return _evolve(action, "pending", None)


def resolved(action: Action, approve: bool, resolved_at: datetime) -> Action:
    """An applying action, approved or rejected at ``resolved_at``."""
    values = list(_field_values(action))
    values[_STATUS] = "approved" if approve else "rejected"
    values[_RESOLVED_AT] = resolved_at
    return Action(*values)
