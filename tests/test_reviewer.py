"""The automatic reviewer of auto mode, and the circuit breaker that hands asks back to a person."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ask_permissions.policy._reviewer import DenialTracker, Review, read_review, review
from ask_permissions.typing import PermissionRequest

from .threads import JOIN_TIMEOUT

REQUEST: PermissionRequest = {
    "action_id": 1,
    "tool_call_id": "tc",
    "tool": "bash",
    "args": {"command": "make"},
    "reason": "Tool 'bash' requires approval",
}


class TestReadReview:
    """What a reviewer may answer, and what it may not."""

    @pytest.mark.parametrize(
        ("answer", "expected"),
        [
            (True, Review("allow")),
            (False, Review("deny")),
            ({"verdict": "deny", "reason": "not on main"}, Review("deny", "not on main")),
            (Review("allow", "fine"), Review("allow", "fine")),
        ],
        ids=["true", "false", "mapping", "review"],
    )
    def test_verdicts(self, answer: object, expected: Review) -> None:
        """Booleans, mappings and Review values read as verdicts."""
        assert read_review(answer) == expected

    @pytest.mark.parametrize(
        "answer",
        ["allow", 1, None, {"verdict": "maybe"}, {"verdict": "allow", "reason": 3}, {"decision": "approve"}],
        ids=["string", "one", "none", "unknown", "bad-reason", "person-shaped"],
    )
    def test_anything_else_is_no_verdict(self, answer: object) -> None:
        """Anything else is not a verdict: a person answers instead."""
        assert read_review(answer) is None


class TestReview:
    """A reviewer that fails in any way hands the ask to a person."""

    def test_a_sync_verdict(self) -> None:
        """A plain function's verdict is returned."""
        assert review(lambda request: request["tool"] == "bash", REQUEST, None) == Review("allow")

    def test_an_async_verdict_without_a_loop(self) -> None:
        """An async reviewer is awaited on a loop of its own."""

        async def reviewer(request: PermissionRequest) -> Review:
            await asyncio.sleep(0)
            return Review("deny", "risky")

        assert review(reviewer, REQUEST, None) == Review("deny", "risky")

    def test_an_async_verdict_from_inside_a_running_loop(self) -> None:
        """Called from async code (a sync hook inside an event loop), it still answers without deadlocking."""

        async def reviewer(request: PermissionRequest) -> bool:
            return True

        async def main() -> Review | None:
            return review(reviewer, REQUEST, 5.0)

        assert asyncio.run(main()) == Review("allow")

    def test_a_raising_reviewer_asks_a_person(self, caplog: pytest.LogCaptureFixture) -> None:
        """An exception is logged and gives no verdict."""

        def reviewer(request: PermissionRequest) -> bool:
            raise ConnectionError("model down")

        with caplog.at_level(logging.WARNING, logger="ask_permissions.reviewer"):
            assert review(reviewer, REQUEST, None) is None
        assert "a person will answer instead" in caplog.text

    def test_a_slow_reviewer_asks_a_person(self) -> None:
        """Past the timeout there is no verdict; the late answer is dropped."""
        release = threading.Event()
        finished = threading.Event()

        def reviewer(request: PermissionRequest) -> bool:
            release.wait(JOIN_TIMEOUT)
            finished.set()
            return True

        assert review(reviewer, REQUEST, 0.02) is None
        release.set()
        assert finished.wait(JOIN_TIMEOUT)

    def test_a_junk_answer_asks_a_person(self) -> None:
        """An answer that is not a verdict gives none."""
        assert review(lambda request: "yes", REQUEST, None) is None  # type: ignore[arg-type, return-value]


def _reference(verdicts: list[str], max_consecutive: int, max_total: int) -> list[bool]:
    """Whether each verdict trips the breaker, by a plain reading of seed 002's rule."""
    consecutive = total = 0
    tripped = False
    trips = []
    for verdict in verdicts:
        if verdict == "allow":
            consecutive = 0
            trips.append(False)
            continue
        consecutive += 1
        total += 1
        now = not tripped and (consecutive >= max_consecutive or total >= max_total)
        tripped = tripped or now
        trips.append(now)
    return trips


class TestDenialTracker:
    """3 denials in a row or 20 in all trip the breaker, exactly at the limits, until reset."""

    def test_trips_at_three_in_a_row(self) -> None:
        """The third consecutive denial trips it, not the second."""
        tracker = DenialTracker()
        assert [tracker.record("deny") for _ in range(3)] == [False, False, True]
        assert tracker.tripped

    def test_an_allow_breaks_the_run_but_not_the_total(self) -> None:
        """Denials with allows between them never trip the run limit, but count toward the total."""
        tracker = DenialTracker()
        for _ in range(9):
            tracker.record("deny")
            tracker.record("deny")
            tracker.record("allow")
        assert not tracker.tripped
        assert tracker.counts == (0, 18)
        tracker.record("deny")
        assert not tracker.record("allow")
        assert tracker.record("deny")  # the twentieth denial
        assert tracker.tripped

    def test_reset_hands_back_to_the_reviewer(self, caplog: pytest.LogCaptureFixture) -> None:
        """reset clears the counts and the trip; the trip itself was logged once."""
        tracker = DenialTracker(max_consecutive=1)
        with caplog.at_level(logging.WARNING, logger="ask_permissions.reviewer"):
            tracker.record("deny")
            tracker.record("deny")
        assert caplog.text.count("asks go to a person") == 1
        tracker.reset()
        assert (tracker.tripped, tracker.counts) == (False, (0, 0))

    @pytest.mark.parametrize(
        "limit", [0, -1, True, 2.5, "3"], ids=["zero", "negative", "bool", "float", "str"]
    )
    def test_limits_are_positive_integers(self, limit: object) -> None:
        """A limit that is not a positive integer is refused."""
        with pytest.raises(ValueError, match="positive integer"):
            DenialTracker(max_consecutive=limit)  # type: ignore[arg-type]

    @given(
        verdicts=st.lists(st.sampled_from(["allow", "deny"]), max_size=60),
        max_consecutive=st.integers(1, 5),
        max_total=st.integers(1, 25),
    )
    def test_trips_exactly_at_its_limits(
        self, verdicts: list[str], max_consecutive: int, max_total: int
    ) -> None:
        """For any sequence of verdicts, the breaker trips exactly when the plain reading says."""
        tracker = DenialTracker(max_consecutive=max_consecutive, max_total=max_total)
        trips = [tracker.record(verdict) for verdict in verdicts]  # type: ignore[arg-type]
        assert trips == _reference(verdicts, max_consecutive, max_total)
        assert tracker.tripped == any(trips)
