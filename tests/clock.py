"""A fake clock for expiry and timestamp tests: time moves only when the test says so, never by sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

__all__ = ["START", "FakeClock"]

START: Final = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class FakeClock:
    """A clock the test moves by hand; call it for the current time."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        """Move the clock forward (or back) by ``timedelta(**delta)``."""
        self.now += timedelta(**delta)
