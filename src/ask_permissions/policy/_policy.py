"""What a policy is to the code that uses one: ``PolicyLike``, the methods adapters and the command call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ask_permissions._vocabulary import HookResult, ResolutionScope
    from ask_permissions.queue._queue import Action, ApprovalQueue

    from ._outcome import Outcome
    from ._records import DecisionRecord

__all__ = ["PolicyLike"]


class PolicyLike(Protocol):
    """What the adapters, ``ask-permissions check`` and ``demo`` need of a policy: any policy of this
    package, or a host's own with the same methods."""

    @property
    def queue(self) -> ApprovalQueue:
        """The queue calls that wait for a person go into."""
        ...

    def before_tool_call(self, tool_call: object, context: object = None) -> HookResult:
        """Decide one call (submitting it when a person must answer)."""
        ...

    def evaluate(self, tool_call: object, context: object = None) -> DecisionRecord:
        """Decide one call as a dry run, changing nothing."""
        ...

    def lookup(self, action_id: int) -> Action | None:
        """The queued action with this id."""
        ...

    def approve(
        self,
        action_id: int,
        *,
        scope: ResolutionScope = "once",
        arguments: Mapping[str, Any] | None = None,
        decided_by: str | None = None,
    ) -> Action | None:
        """Approve a queued action for a person (with edited ``arguments``, maybe), carrying its scope."""
        ...

    def reject(
        self, action_id: int, *, feedback: str | None = None, decided_by: str | None = None
    ) -> Action | None:
        """Reject a queued action for a person."""
        ...

    def outcome(
        self, result: HookResult, *, on_project_grant: Callable[[Action], object] | None = None
    ) -> Outcome:
        """What the host does with a decided call: run, refuse or wait."""
        ...
