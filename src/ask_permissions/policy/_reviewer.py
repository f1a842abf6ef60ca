"""``auto`` mode (seed 002): a reviewer answers asks instead of a person, with a circuit breaker.

The reviewer is a callable of the pending request — typically a model call — that answers allow or deny with
a reason. It never answers what must reach a person: safety checks marked not reviewable and explicit ask
rules. A reviewer that raises, times out or answers something else counts as "ask a person". Denial tracking
hands control back to a person after too many denials in a row or in all (3 and 20 by default, as in seed
002), until the host resets it; the switch is logged.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final

from ask_permissions._errors import preview
from ask_permissions._vocabulary import ReviewRequest

from ._resolvers import call_with_deadline

__all__ = [
    "DenialTracker",
    "Review",
    "Reviewer",
    "ReviewerAnswer",
    "review",
]

_logger: Final = logging.getLogger("ask_permissions.reviewer")


@final
@dataclass(frozen=True, slots=True)
class Review:
    """A reviewer's verdict on one ask: ``"allow"`` or ``"deny"``, with the reason the model reads."""

    verdict: Literal["allow", "deny"]
    reason: str | None = None


ReviewerAnswer: TypeAlias = "Review | bool | Mapping[str, object]"
"""What a reviewer may answer: a ``Review``, ``True``/``False``, or ``{"verdict": "allow" | "deny", "reason":
...}``."""

Reviewer: TypeAlias = "Callable[[ReviewRequest], ReviewerAnswer | Awaitable[ReviewerAnswer]]"
"""A reviewer: a function (sync or async) of the pending request."""


def read_review(answer: object) -> Review | None:
    """A reviewer's answer as a ``Review``, or ``None`` when it is not one (then a person answers)."""
    if isinstance(answer, Review):
        return answer
    if answer is True:
        return Review("allow")
    if answer is False:
        return Review("deny")
    if isinstance(answer, Mapping):
        verdict = answer.get("verdict")
        reason = answer.get("reason")
        if verdict in ("allow", "deny") and (reason is None or isinstance(reason, str)):
            return Review(verdict, reason)
    return None


def review(reviewer: Reviewer, request: ReviewRequest, timeout: float | None) -> Review | None:
    """The reviewer's verdict on an ask, or ``None`` when a person must answer instead.

    A reviewer that raises, runs past ``timeout`` seconds, is async while no event loop can run it here, or
    answers something that is not a verdict gives ``None``: the ask goes to a person, as it would without a
    reviewer. Each of these is logged.
    """
    try:
        answer: object = call_with_deadline(
            lambda: _settled(reviewer(request), timeout), timeout, "the reviewer"
        )
    except TimeoutError:
        _logger.warning("The reviewer did not answer within %s s; a person will answer instead", timeout)
        return None
    except Exception:
        _logger.warning("The reviewer failed; a person will answer instead", exc_info=True)
        return None
    verdict = read_review(answer)
    if verdict is None:
        _logger.warning(
            "The reviewer's answer %s is not a verdict; a person will answer instead", preview(answer)
        )
    return verdict


def _settled(answer: object, timeout: float | None) -> object:
    """A reviewer's answer; an async reviewer's is awaited on an event loop of its own.

    ``before_tool_call`` is synchronous, and may be called from inside a running loop, where waiting on that
    loop would deadlock it: so the coroutine always runs on a fresh loop, in the thread reading the answer
    (a helper thread whenever there is a timeout).
    """
    if not inspect.isawaitable(answer):
        return answer

    async def run() -> object:
        return await answer

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run())
    return call_with_deadline(lambda: asyncio.run(run()), timeout, "the reviewer")


@final
class DenialTracker:
    """Counts a reviewer's denials; past either limit, asks go to a person again until ``reset``.

    ``max_consecutive`` denials in a row, or ``max_total`` in all, trip it (seed 002's 3 and 20). An allow
    resets the run of consecutive denials, not the total. Thread-safe: a private lock guards the counts, and
    the trip is logged outside it.

    Raises:
        ValueError: a limit that is not a positive integer.
    """

    __slots__ = ("_consecutive", "_lock", "_max_consecutive", "_max_total", "_total", "_tripped")

    def __init__(self, *, max_consecutive: int = 3, max_total: int = 20) -> None:
        limits: tuple[tuple[str, object], ...] = (
            ("max_consecutive", max_consecutive),
            ("max_total", max_total),
        )
        for name, limit in limits:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValueError(f"{name}: expected a positive integer; got {preview(limit)}")
        self._max_consecutive: Final = max_consecutive
        self._max_total: Final = max_total
        self._lock: Final = threading.Lock()
        self._consecutive = 0
        self._total = 0
        self._tripped = False

    @property
    def tripped(self) -> bool:
        """Whether asks go to a person again."""
        with self._lock:
            return self._tripped

    @property
    def counts(self) -> tuple[int, int]:
        """``(consecutive denials, total denials)``."""
        with self._lock:
            return self._consecutive, self._total

    @property
    def limits(self) -> tuple[int, int]:
        """``(max_consecutive, max_total)``."""
        return self._max_consecutive, self._max_total

    def record(self, verdict: Literal["allow", "deny"]) -> bool:
        """Count one verdict; return whether this one tripped the breaker."""
        with self._lock:
            if verdict == "allow":
                self._consecutive = 0
                return False
            self._consecutive += 1
            self._total += 1
            tripped_now = not self._tripped and (
                self._consecutive >= self._max_consecutive or self._total >= self._max_total
            )
            if tripped_now:
                self._tripped = True
            consecutive, total = self._consecutive, self._total
        if tripped_now:
            _logger.warning(
                "The reviewer denied %d asks in a row (%d in all): asks go to a person until reset",
                consecutive,
                total,
            )
        return tripped_now

    def reset(self) -> None:
        """Hand asks back to the reviewer, with the counts at zero."""
        with self._lock:
            self._consecutive = 0
            self._total = 0
            self._tripped = False

    def __repr__(self) -> str:
        consecutive, total = self.counts
        state = " tripped" if self.tripped else ""
        limits = f"consecutive={consecutive}/{self._max_consecutive} total={total}/{self._max_total}"
        return f"<DenialTracker {limits}{state}>"
