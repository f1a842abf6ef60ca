"""The ``Action`` value: one submission to the approval queue, and how a resolution changes it."""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeGuard, final

from ask_permissions.typing import ActionStatus, ResolutionScope

__all__ = ["RESOLVED", "SCOPES", "Action", "evolve", "is_id"]

SCOPES: Final[tuple[ResolutionScope, ...]] = ("once", "session", "project")
RESOLVED: Final = frozenset({"approved", "rejected"})
"""The statuses an action ends in."""


@final
@dataclass(frozen=True, slots=True, repr=False)
class Action:
    """One submission to the queue: immutable; each change of status is a new ``Action``.

    ``status`` goes ``"pending"`` → ``"applying"`` (while ``on_approve``/``on_reject`` runs) →
    ``"approved"`` or ``"rejected"``, or back to ``"pending"`` when that callback raises.
    ``resolution_scope`` is set on approval (``"once"`` for auto-approvals), ``feedback`` on rejection.
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
    def scope(self) -> ResolutionScope | None:
        """Alias of ``resolution_scope``."""
        return self.resolution_scope

    def __repr__(self) -> str:
        extra = ""
        if self.resolution_scope is not None:
            extra += f", scope={self.resolution_scope!r}"
        if self.feedback is not None:
            extra += f", feedback={self.feedback!r}"
        return (
            f"Action(id={self.id!r}, tool_name={self.tool_name!r}, status={self.status!r}{extra}, "
            f"tool_call_id={self.tool_call_id!r}, args={self.args!r}, "
            f"auto_approvable={self.auto_approvable!r}, message={self.message!r}, "
            f"submitted_at={self.submitted_at.isoformat()})"
        )


def is_id(value: object) -> TypeGuard[int]:
    """Whether ``value`` can be an action id (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


_FIELDS: Final = tuple(field.name for field in dataclasses.fields(Action))
_field_values: Final = operator.attrgetter(*_FIELDS)
_STATUS, _SCOPE, _FEEDBACK = (_FIELDS.index(name) for name in ("status", "resolution_scope", "feedback"))


def evolve(
    action: Action, status: ActionStatus, scope: ResolutionScope | None, feedback: str | None
) -> Action:
    """``dataclasses.replace`` for the fields a resolution changes, at a third of its cost.

    Every other field is read by name from ``dataclasses.fields(Action)``, so a field added later is
    carried over, never reset; ``Action.__init__`` still builds the result.
    """
    values = list(_field_values(action))
    values[_STATUS], values[_SCOPE], values[_FEEDBACK] = status, scope, feedback
    return Action(*values)
