"""Public types: the vocabulary every module speaks, for hosts to annotate their own code with."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, Protocol, TypeAlias, TypedDict

__all__ = [
    "ActionStatus",
    "BlockResult",
    "Classifier",
    "Clock",
    "Decision",
    "GrantsLike",
    "HookAction",
    "HookResult",
    "Mode",
    "OutcomeVerdict",
    "PendingResult",
    "ProceedResult",
    "ResolutionScope",
    "RuleSetLayer",
    "ToolCallLike",
]

Decision: TypeAlias = Literal["allow", "ask", "deny"]
"""A rule's decision: ``"allow"`` runs the tool, ``"ask"`` queues it for a person, ``"deny"`` blocks it."""

ActionStatus: TypeAlias = Literal["pending", "applying", "approved", "rejected"]
"""A queued action's status: ``"pending"`` until resolved, ``"applying"`` while its callback runs,
then ``"approved"`` or ``"rejected"``."""

HookAction: TypeAlias = Literal["proceed", "block", "pending"]
"""What a ``before_tool_call`` hook tells the host: run the tool, refuse it, or wait for a person."""

Mode: TypeAlias = Literal["full_access", "ask_before_changes", "read_only"]
"""An access mode: ``"full_access"`` bypasses ordinary risk gates, ``"ask_before_changes"`` queues
side-effecting tools, ``"read_only"`` blocks them."""

OutcomeVerdict: TypeAlias = Literal["run", "refuse", "wait"]
"""What a host does with a decided call: ``"run"`` the tool, ``"refuse"`` it (the model reads the reason), or
``"wait"`` for a person."""

ResolutionScope: TypeAlias = Literal["once", "session", "project"]
"""How far a person's approval reaches: this call only, the session, or the project."""

RuleSetLayer: TypeAlias = Literal["default", "project"]
"""Which layer of a ``PermissionRuleSet`` a rule came from."""


class ProceedResult(TypedDict):
    """The tool call may run: ``{"action": "proceed"}``."""

    action: Literal["proceed"]


class BlockResult(TypedDict):
    """The tool call is refused: ``{"action": "block", "reason": "..."}``."""

    action: Literal["block"]
    reason: str


class PendingResult(TypedDict):
    """The tool call waits for a person: ``{"action": "pending", "action_id": 1, "reason": "..."}``.

    ``action_id`` is the approval queue's id of the submitted action.
    """

    action: Literal["pending"]
    action_id: int
    reason: str


HookResult: TypeAlias = ProceedResult | BlockResult | PendingResult
"""Any of the three shapes a ``before_tool_call`` hook returns; ``result["action"]`` tells them apart."""


Clock: TypeAlias = Callable[[], datetime]
"""A zero-argument callable returning an aware ``datetime``."""


class ToolCallLike(Protocol):
    """A tool call as agent frameworks hand it over: a name, its arguments and the call's id."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> Any: ...

    @property
    def id(self) -> Any: ...


class Classifier(Protocol):
    """Anything that classifies a tool call into a decision, as rules and rule sets do."""

    def classify(self, tool_name: str, arguments: object = None) -> Decision | None: ...


class GrantsLike(Protocol):
    """A grants collaborator: answers whether a whole tool is granted."""

    def is_granted(self, tool_name: str) -> bool: ...
