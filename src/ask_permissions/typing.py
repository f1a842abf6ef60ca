"""Public types: the vocabulary every module speaks, for hosts to annotate their own code with."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, Protocol, TypeAlias

__all__ = [
    "ActionStatus",
    "Classifier",
    "Clock",
    "Decision",
    "GrantsLike",
    "HookAction",
    "Mode",
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

ResolutionScope: TypeAlias = Literal["once", "session", "project"]
"""How far a person's approval reaches: this call only, the session, or the project."""

RuleSetLayer: TypeAlias = Literal["default", "project"]
"""Which layer of a ``PermissionRuleSet`` a rule came from."""

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
