"""What a database store of this process holds: claims and ``on_submit`` marks to renew, and resolutions
that wait to be recorded.

A claim is renewed until its resolution is recorded. A resolution that could not be recorded within the
lease (the database was locked, full or gone) stays here, its claim still renewed, and a thread keeps
trying to record it: no other process takes the action up meanwhile, so its callback runs once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Final, NamedTuple, final

__all__ = ["RETRY_SECONDS", "Leases", "Recording", "Renewals"]

RETRY_SECONDS: Final = 0.05
"""The first pause before a failed recording is tried again (doubled each time, up to a second)."""
_LAST_RETRY: Final = 1.0
_logger: Final = logging.getLogger("ask_permissions.stores")


class Recording(NamedTuple):
    """A resolution to record: the claim it ends, and what it records."""

    session: str
    action_id: int
    token: str
    status: str
    """``"approved"`` or ``"rejected"``."""
    resolved_at: float
    """Seconds since the epoch, by the queue's clock."""


class Renewals(NamedTuple):
    """How a store renews and records, for the renewer thread (each raises when the database fails)."""

    claim: Callable[[str, int, str], bool]
    """Renew a claim (session, id, token); False when it is no longer this process's."""
    submit: Callable[[str, int, str], None]
    """Renew an ``on_submit`` mark (session, id, mark)."""
    record: Callable[[Recording], bool]
    """Record a resolution; False when the claim was lost (another process took the action up)."""
    recorded: Callable[[str], None]
    """A deferred resolution of this session was recorded: wake its waiters."""


@final
class Leases:
    """The claims, marks and deferred resolutions of one store, and the thread that renews them.

    Thread-safe: a private lock guards the tables; the thread calls the store without holding it.
    """

    __slots__ = (
        "_claims",
        "_closed",
        "_deferred",
        "_lease",
        "_lock",
        "_name",
        "_renewals",
        "_submits",
        "_thread",
        "_wake",
    )

    def __init__(self, lease: float, renewals: Renewals, name: str) -> None:
        self._lease: Final = lease
        self._renewals: Final = renewals
        self._name: Final = name
        # (session, id) -> [token, the monotonic time its lease ends, as last renewed]
        self._claims: Final[dict[tuple[str, int], tuple[str, float]]] = {}
        self._submits: Final[dict[tuple[str, int], str]] = {}  # (session, id) -> its mark
        self._deferred: Final[dict[tuple[str, int], Recording]] = {}
        self._lock: Final = threading.Lock()
        self._wake: Final = threading.Condition(self._lock)
        self._closed = False
        self._thread: threading.Thread | None = None

    def hold(self, session: str, action_id: int, token: str, issued: float) -> None:
        """Renew this claim from now on; ``issued`` is the monotonic time before the claim was written."""
        with self._lock:
            self._claims[session, action_id] = (token, issued + self._lease)
            self._start()

    def ends(self, session: str, action_id: int) -> float:
        """The monotonic time the claim's lease ends, as last renewed (0 if it is not held)."""
        with self._lock:
            held = self._claims.get((session, action_id))
            return 0.0 if held is None else held[1]

    def drop(self, session: str, action_id: int) -> None:
        """Stop renewing this claim (recorded, released, or lost)."""
        with self._lock:
            self._claims.pop((session, action_id), None)
            if self._deferred.pop((session, action_id), None) is not None:
                self._wake.notify_all()  # a flush may be waiting for the last one

    def defer(self, recording: Recording) -> None:
        """Keep the claim and try to record ``recording`` until it is recorded or the claim is lost."""
        with self._lock:
            self._deferred[recording.session, recording.action_id] = recording
            self._start()
            self._wake.notify_all()

    def deferred(self) -> list[Recording]:
        """The resolutions waiting to be recorded."""
        with self._lock:
            return list(self._deferred.values())

    def hold_submit(self, session: str, action_id: int, mark: str) -> None:
        """Renew this action's ``on_submit`` mark until ``drop_submit``."""
        with self._lock:
            self._submits[session, action_id] = mark
            self._start()

    def drop_submit(self, session: str, action_id: int) -> None:
        with self._lock:
            self._submits.pop((session, action_id), None)

    def flush(self) -> None:
        """Wait, at most one lease, for the deferred resolutions to be recorded (the thread keeps trying and
        keeps their claims renewed meanwhile): a store closed right after a fault does not give up an
        approval whose callback ran while the database could still take it, which would let another
        process run the callback again once the claim lapsed."""
        deadline = time.monotonic() + self._lease
        with self._lock:
            if not self._deferred or self._closed:
                return
            self._wake.notify_all()  # try now, not after the thread's pause
            while self._deferred and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._wake.wait(min(left, RETRY_SECONDS))

    def close(self) -> None:
        """Stop the thread; a resolution still deferred is given up (its claim lapses after the lease)."""
        with self._lock:
            self._closed = True
            thread, abandoned = self._thread, list(self._deferred.values())
            self._wake.notify_all()
        for recording in abandoned:
            _logger.error(
                "%s: action %s: closed with its %s not recorded; it is pending again after the lease",
                self._name,
                recording.action_id,
                "approval" if recording.status == "approved" else "rejection",
            )
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)

    def _start(self) -> None:
        """Locked: start the thread if it is not running."""
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(
                target=self._run, name=f"ask_permissions lease renewer {self._name}", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        pause = RETRY_SECONDS
        while True:
            with self._lock:
                interval = min(pause, self._lease / 3) if self._deferred else self._lease / 3
                self._wake.wait_for(lambda: self._closed, interval)
                if self._closed:
                    return
                claims = list(self._claims.items())
                submits = list(self._submits.items())
            failed = self._record_deferred()
            failed = self._renew(claims, submits) or failed
            pause = min(pause * 2, _LAST_RETRY) if failed else RETRY_SECONDS

    def resolving(self, session: str, action_id: int) -> bool:
        """Before this store claims or resolves ``action_id``: whether it resolves the action already (a
        thread of this process holds its claim). A resolution that waits to be recorded is tried first,
        once: the action no longer waits on this process if it is recorded, or lost.

        While the database was away the claim may have lapsed there, so that the action reads as pending
        again; claiming it anew would run its callback a second time. Called with the session's lock held,
        so waiters are not woken here: the recording reaches them through the store's watcher.

        Raises:
            StoreUnavailableError: the waiting recording failed again (nothing claimed).
        """
        with self._lock:
            held = (session, action_id) in self._claims
            recording = self._deferred.get((session, action_id))
        if recording is None:
            return held
        self._record_one(recording)
        return False

    def _record_deferred(self) -> bool:
        """Try each deferred resolution once; whether one failed for the database."""
        failed = False
        for recording in self.deferred():
            try:
                self._record_one(recording)
            except Exception:  # the database is still away: next round
                failed = True
                continue
            with contextlib.suppress(Exception):
                self._renewals.recorded(recording.session)
        return failed

    def _record_one(self, recording: Recording) -> None:
        """Record a deferred resolution (or learn its claim was lost), and stop renewing its claim.

        Raises:
            StoreUnavailableError: the database failed; it stays deferred.
        """
        recorded = self._renewals.record(recording)
        self.drop(recording.session, recording.action_id)
        what = "approval" if recording.status == "approved" else "rejection"
        if recorded:
            _logger.warning("%s: action %s: its %s is recorded", self._name, recording.action_id, what)
        else:
            _logger.error(
                "%s: action %s: its %s could not be recorded: another process took the action up",
                self._name,
                recording.action_id,
                what,
            )

    def _renew(
        self,
        claims: list[tuple[tuple[str, int], tuple[str, float]]],
        submits: list[tuple[tuple[str, int], str]],
    ) -> bool:
        failed = False
        for (session, action_id), (token, _) in claims:
            issued = time.monotonic()
            try:
                mine = self._renewals.claim(session, action_id, token)
            except Exception:  # the database went away: the next round tries again
                failed = True
                continue
            with self._lock:
                held = self._claims.get((session, action_id))
                if held is not None and held[0] == token and mine:
                    self._claims[session, action_id] = (token, issued + self._lease)
        for (session, action_id), mark in submits:
            try:
                self._renewals.submit(session, action_id, mark)
            except Exception:
                failed = True
        return failed
