"""The dicts a ``before_tool_call`` hook returns, typed, and small builders for them."""

from __future__ import annotations

from ask_permissions._vocabulary import BlockResult, HookResult, PendingResult, ProceedResult

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
