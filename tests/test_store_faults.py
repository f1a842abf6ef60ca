"""The durable stores under faults: each test asserts nothing lost, nothing resolved twice, each callback
once, and only the package's documented errors.

Real processes (``tests.store_workers``), a real PostgreSQL server of this module's own (stopped with
``pg_ctl stop -m immediate`` and started again), a real full disk (a small tmpfs, mounted by root) and real
locks held by another connection. A clock step cannot be made on a shared machine: a worker's wall clock
is stepped in its own process instead (see ``tests.store_workers``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ask_permissions import (
    ApprovalQueue,
    ApprovalStore,
    PostgresStore,
    ResolutionNotRecordedError,
    StoreUnavailableError,
    SubmitOutcomeUnknownError,
    open_store,
)

from .cable import Cable
from .conftest import REQUIRE_POSTGRES
from .postgres_server import PostgresServer, PostgresUnavailable, running_postgres
from .store_workers import CLOCK_STEP, LOST_REPLY
from .store_workers import LEASE as LEASE_VARIABLE
from .stores import fresh_session
from .test_stores import SETTLE, Worker, raw, until
from .threads import join, start

LEASE = timedelta(seconds=1.5)
CLAIMER_LEASE = timedelta(seconds=0.6)  # short: the test outlives it twice
CLOCK_STEPS = [3600.0, -3600.0]


@pytest.fixture(scope="module")
def faulty_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's own, to stop and start; a commit it acknowledged survives."""
    try:
        with running_postgres(crash_safe=True) as server:
            yield server
    except PostgresUnavailable as error:
        if os.environ.get(REQUIRE_POSTGRES):
            pytest.fail(f"{REQUIRE_POSTGRES} is set: {error}")
        pytest.skip(str(error))


@pytest.fixture(params=["sqlite", "postgres"])
def fault_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store to break: a fresh SQLite file, or this module's PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'faults.db'}"
    server: PostgresServer = request.getfixturevalue("faulty_postgres")
    return server.url


class Logged(logging.Handler):
    """Sets an event when the stores log a message holding ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.WARNING)
        self.text = text
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@contextlib.contextmanager
def logged(text: str) -> Iterator[threading.Event]:
    """An event set once the stores log a warning holding ``text``."""
    handler = Logged(text)
    logger = logging.getLogger("ask_permissions.stores")
    logger.addHandler(handler)
    try:
        yield handler.seen
    finally:
        logger.removeHandler(handler)


class Lock:
    """Another connection holding what a recording needs: SQLite's write lock, or a PostgreSQL row lock."""

    def __init__(self, url: str, session: str, action_id: int) -> None:
        self.url, self.session, self.action_id = url, session, action_id
        self._hold: Any = None

    def take(self) -> None:
        if self.url.startswith("sqlite:///"):
            self._hold = sqlite3.connect(
                self.url[len("sqlite:///") :], isolation_level=None, check_same_thread=False
            )
            self._hold.execute("BEGIN IMMEDIATE")
            return
        import psycopg

        self._hold = psycopg.connect(self.url)
        self._hold.execute(
            "SELECT 1 FROM ask_permissions_actions WHERE session = %s AND id = %s FOR UPDATE",
            (self.session, self.action_id),
        )

    def release(self) -> None:
        if self._hold is not None:
            self._hold.rollback() if not self.url.startswith("sqlite:///") else self._hold.execute("ROLLBACK")
            self._hold.close()
            self._hold = None


def release_when(event: threading.Event, release: Callable[[], object]) -> None:
    """Once ``event`` is set (within SETTLE seconds), call ``release``."""
    assert event.wait(SETTLE)
    release()


def approved_elsewhere(url: str, session: str, action_id: int) -> str | None:
    """The action's status as another store reads it."""
    store = open_store(url)
    try:
        action = ApprovalQueue(store=store, session=session)[action_id]
        return None if action is None else action.status
    finally:
        store.close()


def held_by_a_lock(
    url: str, stores: Callable[..., ApprovalStore]
) -> tuple[ApprovalQueue, ApprovalQueue, Lock, list[int]]:
    """Action 1 pending in a fresh session; a queue whose ``on_approve`` takes the lock its recording
    needs; another store's queue on the session; the lock; and the ids the callbacks saw (the other's
    negated)."""
    session = fresh_session()
    queue = ApprovalQueue(store=stores(url, lease=LEASE), session=session)
    queue.submit(tool_call_id="a", tool_name="bash")
    other = ApprovalQueue(store=stores(url, lease=LEASE), session=session)
    lock, calls = Lock(url, session, 1), []

    def on_approve(action: Any) -> None:
        calls.append(action.id)
        lock.take()

    queue.on_approve = on_approve
    other.on_approve = lambda action: calls.append(-action.id)
    return queue, other, lock, calls


def recorded_once(other: ApprovalQueue, calls: list[int]) -> None:
    """The other queue sees action 1 approved, cannot approve it again, and one callback ran: the first."""
    decided = other.wait(1, timeout=SETTLE)
    assert decided is not None
    assert decided.is_approved
    assert other.approve(1) == []
    assert calls == [1]


class TestRecordingUnderALock:
    """A lock held past the store's timeout while on_approve runs: the recording is tried again."""

    def test_recorded_once_the_lock_goes(self, fault_url: str, stores: Callable[..., ApprovalStore]) -> None:
        """Held past the timeout but not the lease: approve returns the approval, the callback ran once."""
        session = fresh_session()
        queue = ApprovalQueue(store=stores(fault_url, lease=LEASE), session=session)
        queue.submit(tool_call_id="a", tool_name="bash")
        lock, calls = Lock(fault_url, session, 1), []

        def on_approve(action: Any) -> None:
            calls.append(action.id)
            lock.take()

        queue.on_approve = on_approve
        with logged("could not be recorded") as failed:
            releaser = start(lambda: release_when(failed, lock.release))
            try:
                [approved] = queue.approve(1)
            finally:
                lock.release()
            join(releaser)
            assert failed.is_set()
        assert (approved.status, calls) == ("approved", [1])
        assert approved_elsewhere(fault_url, session, 1) == "approved"

    def test_held_past_the_lease(self, fault_url: str, stores: Callable[..., ApprovalStore]) -> None:
        """Past the lease: ResolutionNotRecordedError; no other store can run the callback; recorded later."""
        queue, other, lock, calls = held_by_a_lock(fault_url, stores)
        try:
            with pytest.raises(ResolutionNotRecordedError, match="action 1: its callback ran") as info:
                queue.approve(1)
            assert (info.value.action_id, info.value.status) == (1, "approved")
            assert isinstance(info.value, StoreUnavailableError)
            with pytest.raises(StoreUnavailableError):  # it cannot claim what this process holds
                other.approve(1)
        finally:
            lock.release()
        recorded_once(other, calls)  # the store records it in the background

    def test_a_lapsed_claim_is_not_taken_up_again_by_its_store(
        self, fault_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """Held past the lease until the claim lapsed in the database (its renewals failed too): the
        action reads as pending, but the store whose recording waits records that first, and never runs
        the callback again (a drain after a server restart did)."""
        queue, other, lock, calls = held_by_a_lock(fault_url, stores)
        try:
            with pytest.raises(ResolutionNotRecordedError):
                queue.approve(1)
            until(lambda: getattr(other[1], "status", None) == "pending", "the claim to lapse")
        finally:
            lock.release()
        assert queue.approve(1) == []
        assert getattr(queue[1], "status", None) == "approved"
        recorded_once(other, calls)

    def test_an_interrupted_recording_is_still_recorded(
        self, fault_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """A signal (Ctrl-C, a host's own alarm) that breaks into approve while it tries the recording
        again: the callback ran, so the recording is deferred, as past the lease; it is recorded once the
        lock goes, and no other store runs the callback. The action never stays applying for good."""
        queue, other, lock, calls = held_by_a_lock(fault_url, stores)

        def interrupt(_number: int, _frame: object) -> None:
            raise Interrupted

        previous = signal.signal(signal.SIGUSR1, interrupt)
        try:
            with logged("could not be recorded") as failed:
                signaller = start(lambda: release_when(failed, lambda: os.kill(os.getpid(), signal.SIGUSR1)))
                try:
                    with pytest.raises(Interrupted):
                        queue.approve(1)
                finally:
                    join(signaller)
        finally:
            signal.signal(signal.SIGUSR1, previous)
            lock.release()
        recorded_once(other, calls)


class Interrupted(BaseException):
    """What a test's signal handler raises in the main thread, as Ctrl-C raises KeyboardInterrupt."""


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 4 MiB tmpfs of this test's own (unmounted afterwards); skipped where this user cannot mount."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    root = Path(tempfile.mkdtemp(prefix="ask-permissions-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        root.rmdir()
        pytest.skip(f"this machine cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", str(root)], capture_output=True, check=False)
        root.rmdir()


def fill(disk: Path) -> Path:
    """Fill the disk with one file (returned, to delete)."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as handle:
        try:
            while handle.write(chunk):
                pass
        except OSError as error:
            full = error
    assert full.errno == errno.ENOSPC, full
    return filler


class TestFullDisk:
    """The disk fills while on_approve runs (SQLite on a small tmpfs)."""

    @pytest.mark.parametrize(
        "past_the_lease", [False, True], ids=["freed-within-the-lease", "past-the-lease"]
    )
    def test_the_recording_waits_for_room(
        self, small_disk: Path, stores: Callable[..., ApprovalStore], past_the_lease: bool
    ) -> None:
        """Room within the lease: recorded by approve; past it, ResolutionNotRecordedError, recorded later."""
        url = f"sqlite:///{small_disk / 'approvals.db'}"
        session = fresh_session()
        queue = ApprovalQueue(store=stores(url, lease=LEASE), session=session)
        queue.submit(tool_call_id="a", tool_name="bash")
        waiter = ApprovalQueue(store=stores(url, lease=LEASE), session=session)
        calls: list[int] = []
        fillers: list[Path] = []

        def on_approve(action: Any) -> None:
            calls.append(action.id)
            fillers.append(fill(small_disk))

        queue.on_approve = on_approve
        waiter.on_approve = lambda action: calls.append(-action.id)
        with logged("could not be recorded") as failed:
            if past_the_lease:
                with pytest.raises(ResolutionNotRecordedError, match="database or disk is full"):
                    queue.approve(1)
                with contextlib.suppress(StoreUnavailableError):  # the disk is full: it cannot claim
                    assert waiter.approve(1) == []
                assert calls == [1]
                fillers[0].unlink()
            else:
                freer = start(lambda: release_when(failed, lambda: fillers.pop().unlink()))
                [approved] = queue.approve(1)
                join(freer)
                assert approved.is_approved
            assert failed.is_set()
        decided = waiter.wait(1, timeout=SETTLE)
        assert decided is not None
        assert decided.is_approved
        assert calls == [1]


class TestServerRestarts:
    """PostgreSQL stopped with ``pg_ctl stop -m immediate`` and started again."""

    def test_waits_outlast_a_restart(self, faulty_postgres: PostgresServer) -> None:
        """wait and wait_async in other processes keep waiting through a restart and return the approval;
        those whose timeout ends while the server is down raise TimeoutError from StoreUnavailableError."""
        url, session = faulty_postgres.url, fresh_session()
        store = open_store(url)
        try:
            queue = ApprovalQueue(store=store, session=session)
            for call in ("a", "b", "c", "d"):
                queue.submit(tool_call_id=call, tool_name="bash")
            waiters = [
                Worker("wait_later", url, session, 1, 60, 0),
                Worker("wait_later", url, session, 2, 60, 1),
                Worker("wait_later", url, session, 3, 0.5, 0),
                Worker("wait_later", url, session, 4, 0.5, 1),
            ]
            try:
                for worker in waiters:
                    worker.expect("ready")
                faulty_postgres.stop("immediate")
                for worker in waiters:
                    worker.go()
                timed_out = [worker.expect("timed_out") for worker in waiters[2:]]
                faulty_postgres.start()
                assert [action.id for action in queue.approve(1, 2)] == [1, 2]
                woke = [worker.expect("woke") for worker in waiters[:2]]
                for worker in waiters:
                    worker.finish()
            finally:
                if not faulty_postgres.running():
                    faulty_postgres.start()
                for worker in waiters:
                    worker.kill()
        finally:
            store.close()
        assert [record["status"] for record in woke] == ["approved", "approved"]
        for record in timed_out:
            assert record["cause"] == "StoreUnavailableError", timed_out
            assert "no decision seen after 0.5 s; the store is unavailable" in record["message"]

    def test_submits_through_a_restart(self, faulty_postgres: PostgresServer) -> None:
        """Submits through two restarts raise StoreUnavailableError while the server is down, having queued
        nothing or (SubmitOutcomeUnknownError) not knowing; submitted again, each call is queued once,
        ids are 1..n, every auto-approval runs once."""
        url, session = faulty_postgres.url, fresh_session()

        def restart(worker: Worker) -> None:
            faulty_postgres.stop("immediate")
            try:
                worker.expect("failed")
            finally:
                faulty_postgres.start()

        # A submit whose insert was in flight asks for a second, then raises SubmitOutcomeUnknownError
        # (the server is down until a submit fails): its retry settles it.
        check_submissions(url, session, run_submitter(url, session, restart, {LOST_REPLY: "1"}))

    def test_submits_through_a_write_lock(self, tmp_path: Path) -> None:
        """SQLite: submits while another process holds the write lock past the timeout raise
        StoreUnavailableError and queue nothing; submitted again, each call is queued once."""
        url, session = f"sqlite:///{tmp_path / 'faults.db'}", fresh_session()
        open_store(url).close()

        def lock_a_while(worker: Worker) -> None:
            connection = sqlite3.connect(tmp_path / "faults.db", isolation_level=None)
            connection.execute("BEGIN IMMEDIATE")
            try:
                worker.expect("failed")
            finally:
                connection.execute("ROLLBACK")
                connection.close()

        check_submissions(url, session, run_submitter(url, session, lock_a_while))


THREADS = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="fault test")
LOST_REPLY_LEASE = timedelta(seconds=20)  # long: a statement waits a quarter of it (5 s) for a lock


@pytest.fixture
def closing() -> Iterator[Callable[[PostgresStore], PostgresStore]]:
    """Close the stores it is given at the end of the test."""
    opened: list[PostgresStore] = []

    def close_later(store: PostgresStore) -> PostgresStore:
        opened.append(store)
        return store

    yield close_later
    for store in opened:
        store.close()


@contextlib.contextmanager
def through_a_cable(server: PostgresServer) -> Iterator[tuple[Cable, str]]:
    """A cable to the server, and a URL that goes through it."""
    cable = Cable(("127.0.0.1", server.port))
    try:
        yield cable, f"postgresql://ask_permissions@127.0.0.1:{cable.port}/postgres"
    finally:
        cable.close()


@contextlib.contextmanager
def session_row_locked(server: PostgresServer, session: str) -> Iterator[Any]:
    """Another connection holding the session's row, which every insert into the session updates; the
    connection (its transaction rolled back at the end)."""
    import psycopg

    holder = psycopg.connect(server.url)
    try:
        holder.execute("SELECT 1 FROM ask_permissions_sessions WHERE session = %s FOR UPDATE", (session,))
        yield holder
    finally:
        holder.rollback()
        holder.close()


def inserts_waiting(server: PostgresServer) -> list[int]:
    """The backends whose submit waits for a row lock."""
    rows = raw(
        server.url,
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        " AND query LIKE 'WITH s AS (INSERT INTO ask_permissions_sessions%%' ORDER BY pid",
    )
    return [pid for (pid,) in rows]


def submit_held(
    server: PostgresServer, queue: ApprovalQueue, **call: Any
) -> tuple[concurrent.futures.Future[int], int]:
    """Submit ``call`` in another thread into a session whose row is locked (``session_row_locked``);
    once its insert waits for the lock: the submit's future, and the server process running the insert."""
    submitter = THREADS.submit(queue.submit, **call)
    until(lambda: len(inserts_waiting(server)) == 1, "the insert to wait for the lock")
    [backend] = inserts_waiting(server)
    return submitter, backend


def rows_of_call(server: PostgresServer, session: str, call: str) -> list[int]:
    """The ids of the rows that hold ``call`` in the session."""
    rows = raw(
        server.url,
        "SELECT id FROM ask_permissions_actions WHERE session = ? AND tool_call_id = ? ORDER BY id",
        session,
        f'"{call}"',
    )
    return [action_id for (action_id,) in rows]


class TestLostReplies:
    """PostgreSQL: the network drops while a submit's insert is in flight (a cable cut between the store
    and its server), so the store cannot tell from the reply whether the call was queued."""

    def test_the_old_backend_ends_before_the_look(
        self, faulty_postgres: PostgresServer, stores: Callable[..., ApprovalStore]
    ) -> None:
        """The insert waits for a lock when the cable is cut: its backend lives on and would commit once
        the lock goes. The store ends that backend before it looks for the insert's row, so its look is
        final and the call is queued once."""
        session = fresh_session()
        with through_a_cable(faulty_postgres) as (cable, url):
            queue = ApprovalQueue(store=stores(url, lease=LOST_REPLY_LEASE), session=session)
            assert queue.submit(tool_call_id="first", tool_name="bash") == 1
            with session_row_locked(faulty_postgres, session):
                submitter, first = submit_held(faulty_postgres, queue, tool_call_id="x", tool_name="bash")
                cable.cut()
                # The store tries again on a new connection: once its insert waits for the lock too, let go.
                until(
                    lambda: any(pid != first for pid in inserts_waiting(faulty_postgres)),
                    "the insert to be sent again",
                )
            action_id = submitter.result(SETTLE)
        assert rows_of_call(faulty_postgres, session, "x") == [action_id] == [2]

    @pytest.mark.parametrize("committed", [True, False], ids=["committed", "rolled-back"])
    def test_a_submit_that_cannot_tell_is_settled_by_its_retry(
        self,
        faulty_postgres: PostgresServer,
        closing: Callable[[PostgresStore], PostgresStore],
        committed: bool,
    ) -> None:
        """The cable is cut with the insert in flight and the server stays out of reach past the
        store's lost_reply_timeout: the submit raises SubmitOutcomeUnknownError, though the insert may
        have committed. Submitted again on the same store, the call is queued once, with the id the
        first insert took if it committed; the next call takes the next id."""
        session = fresh_session()
        with through_a_cable(faulty_postgres) as (cable, url):
            store = closing(PostgresStore(url, lease=LOST_REPLY_LEASE, lost_reply_timeout=0.5))
            queue = ApprovalQueue(store=store, session=session)
            assert queue.submit(tool_call_id="first", tool_name="bash") == 1
            with session_row_locked(faulty_postgres, session):
                submitter, backend = submit_held(faulty_postgres, queue, tool_call_id="x", tool_name="bash")
                cable.unplug()
                cable.cut()
                if not committed:  # as a server restart would: the insert is rolled back
                    raw(faulty_postgres.url, "SELECT pg_terminate_backend(?)", backend)
                    until(lambda: not inserts_waiting(faulty_postgres), "the backend to end")
            # The lock is gone: an insert still waiting for it commits.
            until(lambda: bool(rows_of_call(faulty_postgres, session, "x")) is committed, "the insert")
            with pytest.raises(SubmitOutcomeUnknownError, match="may have queued the call") as raised:
                submitter.result(SETTLE)
            assert isinstance(raised.value, StoreUnavailableError)
            assert (raised.value.store, raised.value.session) == (
                "postgresql://ask_permissions@127.0.0.1:" + str(cable.port) + "/postgres",
                session,
            )
            assert rows_of_call(faulty_postgres, session, "x") == ([2] if committed else [])
            cable.plug()
            assert queue.submit(tool_call_id="x", tool_name="bash") == 2
            assert queue.submit(tool_call_id="y", tool_name="bash") == 3
        assert rows_of_call(faulty_postgres, session, "x") == [2]

    def test_a_store_closed_while_its_submit_asks(
        self, faulty_postgres: PostgresServer, closing: Callable[[PostgresStore], PostgresStore]
    ) -> None:
        """A store closed while a submit whose reply was lost goes on asking the server: the submit
        raises SubmitOutcomeUnknownError, saying so, not StoreClosedError (which says nothing changed)."""
        session = fresh_session()
        with through_a_cable(faulty_postgres) as (cable, url):
            store = closing(PostgresStore(url, lease=LOST_REPLY_LEASE, lost_reply_timeout=SETTLE * 3))
            queue = ApprovalQueue(store=store, session=session)
            queue.submit(tool_call_id="first", tool_name="bash")
            with session_row_locked(faulty_postgres, session):
                submitter, _ = submit_held(faulty_postgres, queue, tool_call_id="x", tool_name="bash")
                cable.unplug()
                cable.cut()
            store.close()
            with pytest.raises(SubmitOutcomeUnknownError, match="the store was closed before the server"):
                submitter.result(SETTLE)

    def test_a_call_queued_while_its_submit_raised_is_found_by_a_later_retry(
        self, faulty_postgres: PostgresServer, closing: Callable[[PostgresStore], PostgresStore]
    ) -> None:
        """The store learns the fate of a submit that could not tell before its next insert into the
        session; one that had queued its call stays pending, and the call's retry, however much later,
        returns that id rather than queuing it again."""
        session = fresh_session()
        with through_a_cable(faulty_postgres) as (cable, url):
            store = closing(PostgresStore(url, lease=LOST_REPLY_LEASE, lost_reply_timeout=0.5))
            queue = ApprovalQueue(store=store, session=session)
            queue.submit(tool_call_id="first", tool_name="bash")
            with session_row_locked(faulty_postgres, session):
                submitter, _ = submit_held(
                    faulty_postgres, queue, tool_call_id="x", tool_name="bash", args={"n": 1}
                )
                cable.unplug()
                cable.cut()
            until(lambda: bool(rows_of_call(faulty_postgres, session, "x")), "the insert to commit")
            with pytest.raises(SubmitOutcomeUnknownError):
                submitter.result(SETTLE)
            cable.plug()
            with logged("queued by a submit that raised") as warned:
                assert queue.submit(tool_call_id="y", tool_name="bash") == 3
            assert warned.is_set()
            assert [action.id for action in queue.pending_actions] == [1, 2, 3]
            # Another call with the same id is not the same call: it is queued.
            assert queue.submit(tool_call_id="x", tool_name="bash", args={"n": 2}) == 4
            assert queue.submit(tool_call_id="x", tool_name="bash", args={"n": 1}) == 2
        assert rows_of_call(faulty_postgres, session, "x") == [2, 4]


class TestDrainLockFile:
    """SQLite: the drain's lock file (``<path>-drain``) cannot be opened, or the store may only read."""

    def test_a_submit_that_queued_its_call_returns_its_id(
        self, tmp_path: Path, stores: Callable[..., ApprovalStore]
    ) -> None:
        """The lock file cannot be opened (here a folder stands in its place; elsewhere a full disk, a
        file system without locks): a submit that queued its call returns its id (the drain's failure is
        logged), and a drain raises StoreUnavailableError, not the raw OSError."""
        database = tmp_path / "approvals.db"
        (tmp_path / "approvals.db-drain").mkdir()
        url = f"sqlite:///{database}"
        queue = ApprovalQueue(store=stores(url), session=fresh_session(), auto_approve={"read": True})
        action_id = queue.submit(tool_call_id="a", tool_name="read", auto_approvable=True)
        assert queue[action_id] is not None
        assert queue[action_id].status == "pending"  # type: ignore[union-attr]
        with pytest.raises(StoreUnavailableError, match=r"approvals\.db-drain") as raised:
            queue.drain()
        assert isinstance(raised.value.__cause__, OSError)

    def test_a_read_only_store_makes_no_lock_file(
        self, tmp_path: Path, stores: Callable[..., ApprovalStore]
    ) -> None:
        """A drain through a store opened read-only raises StoreUnavailableError and creates nothing of
        the package's beside the database."""
        url, session = f"sqlite:///{tmp_path / 'approvals.db'}", fresh_session()
        ApprovalQueue(store=stores(url), session=session).submit(
            tool_call_id="a", tool_name="read", auto_approvable=True
        )
        reader = ApprovalQueue(
            store=stores(url, read_only=True), session=session, auto_approve={"read": True}
        )
        with pytest.raises(StoreUnavailableError, match="read-only"):
            reader.drain()
        assert not (tmp_path / "approvals.db-drain").exists()


def run_submitter(
    url: str, session: str, fault: Callable[[Worker], None], env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """A ``submit_retrying`` worker (with ``env``), and ``fault`` twice while it submits (each returns
    once the worker saw a submit fail); every line the worker printed."""
    worker = Worker("submit_retrying", url, session, env={LEASE_VARIABLE: "2", **(env or {})})
    try:
        worker.expect("ready")
        worker.go()
        for _ in range(2):
            worker.expect("submitted")
            fault(worker)
            for _ in range(3):
                worker.expect("submitted")
        worker.go()  # stop
        return worker.finish()
    finally:
        worker.kill()


def check_submissions(url: str, session: str, records: list[dict[str, Any]]) -> None:
    """Each call queued once with the id its submit returned; every auto-approvable one approved once."""
    submitted = {record["call"]: record["id"] for record in records if record["event"] == "submitted"}
    rows = raw(
        url, "SELECT tool_call_id, id FROM ask_permissions_actions WHERE session = ? ORDER BY id", session
    )
    calls = Counter(call for call, _ in rows)
    assert max(calls.values()) == 1, [call for call, count in calls.items() if count > 1]
    assert {call.strip('"'): action_id for call, action_id in rows} == submitted
    assert sorted(submitted.values()) == list(range(1, len(submitted) + 1))
    approvals = Counter(record["id"] for record in records if record["event"] == "approve")
    store = open_store(url)
    try:
        queue = ApprovalQueue(store=store, session=session, auto_approve={"read": True})
        late: list[int] = []
        queue.on_approve = lambda action: late.append(action.id)
        auto = {record["id"] for record in records if record["event"] == "submitted" and record["auto"]}

        def drained() -> bool:
            # A head whose drain failed with the store waits for the next drain: this one. A claim the
            # server wrote before it went down, its reply lost, holds its action until the lease lapses.
            queue.drain()
            return all(getattr(queue[action_id], "status", None) == "approved" for action_id in auto)

        until(drained, "every auto-approvable call to be approved")
        approvals.update(late)
        assert set(approvals) == auto
        assert max(approvals.values()) == 1
        unapproved = {
            action_id: (action.status if (action := queue[action_id]) is not None else None)
            for action_id in auto
        }
        assert [item for item in unapproved.items() if item[1] != "approved"] == []
    finally:
        store.close()


class TestConcurrentRestores:
    """Restores into one empty session at the same moment, from four processes."""

    def test_one_wins(self, fault_url: str, stores: Callable[..., ApprovalStore]) -> None:
        """Exactly one restore succeeds; the others raise ValueError; the session holds the winner's only."""
        session = fresh_session()
        workers = [Worker("restore", fault_url, session, index) for index in range(4)]
        try:
            for worker in workers:
                worker.expect("ready")
            for worker in workers:
                worker.go()
            outcomes = [worker.finish() for worker in workers]
        finally:
            for worker in workers:
                worker.kill()
        results = [next(r for r in records if r["event"] in ("restored", "refused")) for records in outcomes]
        [winner] = [result for result in results if result["event"] == "restored"]
        refused = [result for result in results if result["event"] == "refused"]
        assert len(refused) == 3
        assert all(
            result["error"] == "ValueError" and "already holds" in result["message"] for result in refused
        )
        first = winner["index"] * 10 + 1
        queue = ApprovalQueue(store=stores(fault_url), session=session)
        assert [action.id for action in queue.pending_actions] == [first, first + 1, first + 2]
        assert queue.submit(tool_call_id="next", tool_name="bash") == first + 3


class TestClockSteps:
    """A wall clock stepped by an hour, either way, in the process that claims or the one that looks."""

    @pytest.mark.parametrize("step", CLOCK_STEPS, ids=["ahead", "behind"])
    def test_a_stepped_claimer_is_neither_robbed_nor_stranded(
        self, fault_url: str, stores: Callable[..., ApprovalStore], step: float
    ) -> None:
        """A stepped process's claim stays its own while it lives, however long, and comes back after
        the lease once it is killed; the approval's callback runs once."""
        session = fresh_session()
        lease = CLAIMER_LEASE.total_seconds()
        queue = ApprovalQueue(store=stores(fault_url, lease=CLAIMER_LEASE), session=session)
        queue.submit(tool_call_id="a", tool_name="bash")
        victim = Worker("hang", fault_url, session, 1, lease, env={CLOCK_STEP: str(step)})
        calls: list[int] = []
        queue.on_approve = lambda action: calls.append(action.id)
        try:
            victim.expect("entered")
            with pytest.raises(TimeoutError, match="is still applying"):
                queue.wait(1, timeout=2 * lease)  # alive past the lease: still its claim
            assert queue.approve(1) == []
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(SETTLE)
            until(lambda: queue.is_pending(1), "the killed process's claim to lapse")
        finally:
            victim.kill()
        assert [action.id for action in queue.approve(1)] == [1]
        assert calls == [1]

    def test_a_process_ahead_cannot_take_a_live_claim(
        self, fault_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """While this process's on_approve runs, another whose clock is an hour ahead (to which the lease
        looks long over) cannot approve the action; the callback runs once. (A clock behind sees the lease
        longer still: the test above covers that direction.)"""
        step = CLOCK_STEPS[0]
        session = fresh_session()
        queue = ApprovalQueue(store=stores(fault_url, lease=LEASE), session=session)
        queue.submit(tool_call_id="a", tool_name="bash")
        other = Worker("approve", fault_url, session, 1, env={CLOCK_STEP: str(step)})
        tried = threading.Event()
        calls: list[int] = []
        results: list[dict[str, Any]] = []

        def on_approve(action: Any) -> None:
            calls.append(action.id)
            other.go()
            results.append(other.expect("resolved"))
            tried.set()

        queue.on_approve = on_approve
        try:
            other.expect("ready")
            [approved] = queue.approve(1)
            other.finish()
        finally:
            other.kill()
        assert tried.is_set()
        assert results[0]["ids"] == []
        assert approved.is_approved
        assert calls == [1]
        assert not [record for record in other.records if record["event"] == "approve"]
