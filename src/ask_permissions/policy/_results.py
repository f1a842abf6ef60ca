"""The dicts a ``before_tool_call`` hook returns, typed, and small builders for them."""

from __future__ import annotations

from typing import Literal, TypeAlias, TypedDict

__all__ = [
    "BlockResult",
    "HookResult",
    "PendingResult",
    "ProceedResult",
    "block",
    "pending",
    "pending_reason",
    "proceed",
]


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


def proceed() -> ProceedResult:
    """A fresh ``{"action": "proceed"}``."""
    return {"action": "proceed"}


def block(reason: str) -> BlockResult:
    """A fresh ``{"action": "block", "reason": reason}``."""
    return {"action": "block", "reason": reason}


def pending(action_id: int, reason: str) -> PendingResult:
    """A fresh ``{"action": "pending", "action_id": action_id, "reason": reason}``."""
    return {"action": "pending", "action_id": action_id, "reason": reason}


def pending_reason(tool_name: str) -> str:
    """The fixed reason of a call that waits in the approval queue: ``Tool '<name>' requires approval``."""
    return f"Tool '{tool_name}' requires approval"
