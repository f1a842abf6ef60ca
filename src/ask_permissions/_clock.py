"""The default clock."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utc_now"]


def utc_now() -> datetime:
    """Now, as an aware UTC datetime."""
    return datetime.now(UTC)
