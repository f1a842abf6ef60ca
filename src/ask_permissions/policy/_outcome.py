"""What a host does with a decided tool call: run it, refuse it, or wait for a person.

One reading of a hook result for every host and adapter, so that none of them repeats the rules for a queued
action that was approved (run, carrying its scope once), rejected (refuse with the person's feedback) or is
still undecided (wait), or that the queue lost (refuse: fail closed).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

from ask_permissions._vocabulary import OutcomeVerdict, ResolutionScope

if TYPE_CHECKING:
    from ask_permissions.queue._queue import Action

__all__ = [
    "Outcome",
    "ProjectGrantHook",
    "ScopeCarrier",
    "ScopePlan",
    "grants_plan",
    "grants_scopes",
    "rejection_text",
]

ProjectGrantHook: TypeAlias = "Callable[[Action], object]"
"""Called with an approved action whose scope is ``"project"``; the host records the grant in its store."""


@final
@dataclass(frozen=True, slots=True)
class Outcome:
    """What to do with a tool call, as decided by a policy and, for a queued call, by a person.

    Attributes:
        verdict: ``"run"``, ``"refuse"`` or ``"wait"``.
        reason: what the model reads when the call is refused, or why it waits; ``None`` for a run.
        action: the queued action the call stands for, when it was queued.
        modified: whether the tool runs with arguments other than the model's.
        arguments: those arguments, when ``modified`` (``None`` otherwise).
    """

    verdict: OutcomeVerdict
    reason: str | None = None
    action: Action | None = None
    modified: bool = False
    arguments: Any = None

    @property
    def runs(self) -> bool:
        """Whether the tool runs."""
        return self.verdict == "run"

    @property
    def waits(self) -> bool:
        """Whether a person has yet to decide."""
        return self.verdict == "wait"


def rejection_text(action: Action) -> str:
    """What the model reads when a person rejected its call: the tool, and the person's feedback if any."""
    text = f"The call to '{action.tool_name}' was rejected"
    return f"{text}: {action.feedback}" if action.feedback else text


# Enough to cover every approval a host can still be acting on; older ids fall out of the memory.
_CARRIED_MEMORY: Final = 4096


ScopePlan: TypeAlias = "Callable[[Action, ProjectGrantHook | None], Callable[[], object] | None]"
"""What carrying an approved action's scope takes: given the action and the project hook to use, the work to
do (called once), or ``None`` when there is nothing to carry it into (it then counts for its call only)."""


def grants_plan(session_grants: object) -> ScopePlan:
    """The gem's way: ``"session"`` grants the whole tool in the session grants (when they can ``grant``);
    ``"project"`` calls the host's project-grant hook."""

    def plan(action: Action, hook: ProjectGrantHook | None) -> Callable[[], object] | None:
        if action.resolution_scope == "session":
            grant = getattr(session_grants, "grant", None)
            return None if not callable(grant) else (lambda: grant(action.tool_name))
        if action.resolution_scope == "project" and hook is not None:
            return lambda: hook(action)
        return None

    return plan


def grants_scopes(session_grants: object, on_project_grant: object) -> dict[ResolutionScope, str]:
    """What ``grants_plan`` carries out with these collaborators: scope → what it does."""
    honoured: dict[ResolutionScope, str] = {"once": "runs this call once"}
    if callable(getattr(session_grants, "grant", None)):
        honoured["session"] = "grants the whole tool for the rest of the session"
    if on_project_grant is not None:
        honoured["project"] = "the host records a project grant of the whole tool"
    return honoured


@final
class ScopeCarrier:
    """Carries an approval's scope beyond its call, at most once per action.

    What carrying means is the policy's ``plan`` (``grants_plan`` for the gem's policy; a layered policy
    writes rules to its settings). An approval may be seen more than once (through ``policy.approve``, and
    again when an adapter runs the call), so the ids already carried are remembered (the most recent 4,096).

    Thread-safe: a private lock guards that memory; the plan's work runs outside it.
    """

    __slots__ = ("_carried", "_lock", "_on_project_grant", "_plan")

    def __init__(self, plan: ScopePlan, on_project_grant: ProjectGrantHook | None) -> None:
        self._plan = plan
        self._on_project_grant = on_project_grant
        self._lock = threading.Lock()
        self._carried: OrderedDict[int, None] = OrderedDict()

    @property
    def on_project_grant(self) -> ProjectGrantHook | None:
        """The host's project-grant hook."""
        return self._on_project_grant

    def carry(self, action: Action, on_project_grant: ProjectGrantHook | None = None) -> None:
        """Apply an approved action's ``"session"`` or ``"project"`` scope, unless already applied.

        ``on_project_grant`` (an adapter's own hook) is used instead of the policy's when given. If the work
        raises, the action counts as not carried, and the exception propagates.
        """
        if not action.is_approved or action.resolution_scope not in ("session", "project"):
            return
        hook = on_project_grant if on_project_grant is not None else self._on_project_grant
        work = self._plan(action, hook)
        if work is None:
            return
        with self._lock:
            if action.id in self._carried:
                return
            self._carried[action.id] = None
            if len(self._carried) > _CARRIED_MEMORY:
                self._carried.popitem(last=False)
        try:
            work()
        except BaseException:
            with self._lock:
                self._carried.pop(action.id, None)
            raise
