"""The result shapes of every ``before_tool_call`` hook."""

from __future__ import annotations

from typing import Literal, TypeAlias, TypedDict

__all__ = ["BlockResult", "HookResult", "PendingResult", "ProceedResult"]


class ProceedResult(TypedDict):
    """Run the tool."""

    action: Literal["proceed"]


class BlockResult(TypedDict):
    """Refuse the call; ``reason`` is what the model should read."""

    action: Literal["block"]
    reason: str


class PendingResult(TypedDict):
    """The call waits in the approval queue under ``action_id`` (it may already be auto-approved)."""

    action: Literal["pending"]
    action_id: int
    reason: str


HookResult: TypeAlias = ProceedResult | BlockResult | PendingResult
"""What a ``before_tool_call`` hook returns."""
