"""Durable stores: sessions, snapshots between stores, corrupt and foreign data, and real processes.

Everything here runs against SQLite and a real PostgreSQL server (``conftest.postgres_dsn``); the
behaviour every store shares is pinned by the queue and grants suites, which run against all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ask_permissions import (
    Action,
    ApprovalQueue,
    ApprovalStore,
    CorruptStoreError,
    MemoryStore,
    PostgresStore,
    SessionPermissionGrants,
    SqliteStore,
    StoreClosedError,
    StoreUnavailableError,
    open_store,
)

from .stores import fresh_session
from .strategies import nested
from .threads import JOIN_TIMEOUT, join, start

ROOT = Path(__file__).resolve().parent.parent
SETTLE = 20.0  # seconds: how long a lease, a wake-up or a process may take before the test fails
SHORT_LEASE = timedelta(seconds=1)


@pytest.fixture
def opened(store_url: str, stores: Callable[..., ApprovalStore]) -> Callable[..., ApprovalStore]:
    """Open stores on ``store_url`` (closed at the end of the test)."""
    return lambda **options: stores(store_url, **options)


def raw(url: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Run SQL on the store's database behind its back, as a person editing it by hand would."""
    if url.startswith("sqlite:///"):
        database = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)
        try:
            return database.execute(sql, params).fetchall()
        finally:
            database.close()
    import psycopg

    with psycopg.connect(url, autocommit=True) as server:
        cursor = server.execute(sql.replace("?", "%s"), params)
        return cursor.fetchall() if cursor.description is not None else []


class TestSessions:
    """Sessions scope a queue and grants within one database; many objects on one session are one."""

    def test_sessions_are_separate(self, opened: Callable[..., ApprovalStore]) -> None:
        """Two sessions of one store number, list and grant independently."""
        store = opened()
        first, second = fresh_session(), fresh_session()
        one, two = ApprovalQueue(store=store, session=first), ApprovalQueue(store=store, session=second)
        assert [one.submit(tool_call_id=n, tool_name="bash") for n in range(3)] == [1, 2, 3]
        assert two.submit(tool_call_id="x", tool_name="write") == 1
        assert [a.tool_name for a in two.pending_actions] == ["write"]
        SessionPermissionGrants(["bash"], store=store, session=first)
        assert SessionPermissionGrants(store=store, session=second).granted_tools == []
        assert {first, second} <= set(store.sessions())

    def test_objects_on_one_session_share_it(self, opened: Callable[..., ApprovalStore]) -> None:
        """Queues and grants on the same store and session, in one process or two stores, are one."""
        session = fresh_session()
        store, other = opened(), opened()
        queue = ApprovalQueue(store=store, session=session)
        queue.submit(tool_call_id="a", tool_name="bash")
        elsewhere = ApprovalQueue(store=other, session=session)
        assert elsewhere.submit(tool_call_id="b", tool_name="bash") == 2
        [approved] = elsewhere.approve(1, scope="project")
        assert queue[1] == approved
        SessionPermissionGrants(store=store, session=session).grant("bash")
        assert SessionPermissionGrants(store=other, session=session).is_granted("bash")

    def test_pending_for_call(self, opened: Callable[..., ApprovalStore]) -> None:
        """A host re-running a call finds its pending actions by call id, by type and value."""
        queue = ApprovalQueue(store=opened(), session=fresh_session())
        first = queue.submit(tool_call_id="tc", tool_name="bash")
        queue.submit(tool_call_id=1, tool_name="bash")
        third = queue.submit(tool_call_id="tc", tool_name="write")
        assert [action.id for action in queue.pending_for_call("tc")] == [first, third]
        assert [action.id for action in queue.pending_for_call(1)] == [2]
        for other in ("1", True, 1.0, None, ["tc"]):
            assert queue.pending_for_call(other) == []
        queue.approve(first)
        assert [action.id for action in queue.pending_for_call("tc")] == [third]

    def test_state_outlives_the_store_object(self, store_url: str) -> None:
        """Closing a store and opening the database again finds the session as it was."""
        session = fresh_session()
        store = open_store(store_url)
        queue = ApprovalQueue(store=store, session=session)
        queue.submit(tool_call_id="a", tool_name="bash", args={"command": "ls"}, message="m")
        queue.submit(tool_call_id=7, tool_name="write")
        queue.reject(2, feedback="no")
        before = [queue[1], queue[2]]
        store.close()
        again = open_store(store_url)
        try:
            reopened = ApprovalQueue(store=again, session=session)
            assert [reopened[1], reopened[2]] == before
            assert reopened.submit(tool_call_id="c", tool_name="bash") == 3
        finally:
            again.close()

    @pytest.mark.parametrize(
        ("session", "error"),
        [("", ValueError), ("x" * 201, ValueError), ("tab\there", ValueError), (3, TypeError)],
        ids=["empty", "too-long", "control-character", "int"],
    )
    def test_bad_session_names(self, session: Any, error: type[Exception]) -> None:
        """A session is 1 to 200 printable characters."""
        with pytest.raises(error, match="session"):
            ApprovalQueue(session=session)
        with pytest.raises(error, match="session"):
            SessionPermissionGrants(session=session)

    def test_any_value_a_queue_accepts_is_stored_as_it_is(self, opened: Callable[..., ApprovalStore]) -> None:
        """NUL and lone surrogates, which text columns cannot hold, survive in names, messages and args."""
        queue = ApprovalQueue(store=opened(), session=fresh_session())
        odd = "nul\x00 and \ud800 surrogate"
        queue.submit(tool_call_id=odd, tool_name=odd, args={odd: [odd]}, message=odd)
        [rejected] = queue.reject(1, feedback=odd)
        assert (rejected.tool_name, rejected.message, rejected.feedback, rejected.tool_call_id) == (odd,) * 4
        assert rejected.args == {odd: [odd]}
        grants = SessionPermissionGrants([odd], store=queue.store, session=queue.session)
        assert grants.is_granted(odd)
        assert grants.granted_tools == [odd]


class TestSnapshotsBetweenStores:
    """Snapshots are how a host moves between stores; restore_pending into an empty session works."""

    def test_memory_to_database_and_back(self, opened: Callable[..., ApprovalStore]) -> None:
        """A memory queue's snapshot restores into a store session, and that one's into memory again."""
        memory = ApprovalQueue()
        memory.submit(tool_call_id="a", tool_name="bash", args={"command": "ls", "n": [1, 2.5]}, message="m")
        memory.submit(tool_call_id=9, tool_name="read", auto_approvable=True, args="raw json")
        memory.submit(tool_call_id=None, tool_name="write")
        memory.approve(2)
        stored = ApprovalQueue(store=opened(), session=fresh_session())
        assert stored.restore_pending(json.loads(json.dumps(memory.snapshot()))) == 2
        assert stored.pending_actions == memory.pending_actions
        assert stored.snapshot() == memory.snapshot()
        assert stored.submit(tool_call_id="next", tool_name="bash") == 4
        back = ApprovalQueue()
        back.restore_pending(stored.snapshot())
        assert back.pending_actions == stored.pending_actions

    def test_restore_into_a_used_session_is_refused(self, opened: Callable[..., ApprovalStore]) -> None:
        """A session that ever gave an id refuses a restore (ValueError), and stays as it was."""
        store = opened()
        queue = ApprovalQueue(store=store, session=fresh_session())
        queue.submit(tool_call_id="a", tool_name="bash")
        queue.approve(1)
        queue.forget_resolved()
        with pytest.raises(ValueError, match="already holds"):
            queue.restore_pending(
                {"version": 1, "next_id": 0, "pending_actions": [{"id": 5, "tool_name": "x"}]}
            )
        assert queue[5] is None
        assert queue.submit(tool_call_id="b", tool_name="bash") == 2


def _corruptions() -> list[tuple[str, str, object, str]]:
    deep = json.dumps(nested(300))
    return [
        ("status", "status", "done", "one of pending, applying, approved, rejected"),
        ("args-not-json", "args", "{not json", "JSON text"),
        ("args-too-deep", "args", deep, "nested at most 256 deep"),
        ("tool-name-not-json", "tool_name", "bash", "JSON text"),
        ("tool-name-empty", "tool_name", '""', "a non-empty JSON string"),
        ("tool-name-number", "tool_name", "3", "a non-empty JSON string"),
        ("call-id-float", "tool_call_id", "1.5", "a JSON string or integer"),
        ("message-number", "message", "3", "a JSON string"),
        ("submitted-at-words", "submitted_at", "yesterday", "an ISO 8601 timestamp"),
        ("submitted-at-naive", "submitted_at", "2026-01-01T12:00:00", "its UTC offset"),
        ("scope-unknown", "resolution_scope", "forever", "one of once, session, project"),
        ("scope-on-pending", "resolution_scope", "once", "null for a pending action"),
        ("why-not-json", "why", "{", "JSON text"),
        ("why-without-reason", "why", '{"layer": "default"}', r"an explanation \(why.reason"),
        ("decided-by-not-json", "decided_by", "ann", "JSON text"),
        ("decided-by-unprintable", "decided_by", '"ann\\u001b"', "a name of 1 to 200 printable"),
        ("decided-by-on-pending", "decided_by", '"ann"', "null, with edited_args, for a pending action"),
        ("edited-args-list", "edited_args", "[1]", "a JSON object"),
    ]


CORRUPTIONS = _corruptions()


class TestCorruptRows:
    """A hand-edited row raises CorruptStoreError naming it, and nothing is changed on its account."""

    @pytest.mark.parametrize(
        ("column", "value", "expected"),
        [case[1:] for case in CORRUPTIONS],
        ids=[case[0] for case in CORRUPTIONS],
    )
    def test_every_reader_refuses_it(
        self, store_url: str, opened: Callable[..., ApprovalStore], column: str, value: object, expected: str
    ) -> None:
        """get, pending_actions, snapshot, approve and the drain raise; the row is left as it was."""
        session = fresh_session()
        queue = ApprovalQueue(store=opened(), session=session, auto_approve={"read": True})
        queue.submit(tool_call_id="a", tool_name="bash", args={"command": "ls"})
        queue.submit(tool_call_id="b", tool_name="write")
        corrupt = f"UPDATE ask_permissions_actions SET {column} = ? WHERE session = ? AND id = 1"
        rows = "SELECT * FROM ask_permissions_actions WHERE session = ? ORDER BY id"
        raw(store_url, corrupt, value, session)
        try:
            before = raw(store_url, rows, session)
            readers: list[Callable[[], object]] = [lambda: queue[1]]
            if column not in ("resolution_scope", "decided_by", "edited_args"):
                # a claim writes the resolution's columns; the rest it reads
                readers += [lambda: queue.approve(1, 2), lambda: queue.reject(1)]
            if column != "status":  # a row of no known status is in no pending list; read by id, it raises
                readers += [lambda: queue.pending_actions, queue.snapshot]
            if column == "tool_name":  # the drain reads no more of the head than it needs
                readers.append(queue.drain)
            for read in readers:
                with pytest.raises(
                    CorruptStoreError, match=f"id=1\\]\\.{column}: expected .*{expected}"
                ) as info:
                    read()
                assert info.value.path.endswith(f"id=1].{column}")
                assert isinstance(info.value, ValueError)
            assert raw(store_url, rows, session) == before
            assert queue[2] is not None
            assert queue[2].is_pending
        finally:  # the PostgreSQL database is the whole run's: leave no corrupt row to other tests
            raw(store_url, "DELETE FROM ask_permissions_actions WHERE session = ?", session)

    def test_a_corrupt_grant_is_refused(self, store_url: str, opened: Callable[..., ApprovalStore]) -> None:
        """A grant row that is not a JSON string raises when the grants are listed."""
        session = fresh_session()
        grants = SessionPermissionGrants(["bash"], store=opened(), session=session)
        raw(store_url, "UPDATE ask_permissions_grants SET tool_name = ? WHERE session = ?", "bash", session)
        try:
            with pytest.raises(CorruptStoreError, match="tool_name: expected a non-empty JSON string"):
                grants.granted_tools  # noqa: B018
            assert not grants.is_granted("bash")
        finally:
            raw(store_url, "DELETE FROM ask_permissions_grants WHERE session = ?", session)

    def test_a_corrupt_session_name_is_refused(
        self, store_url: str, opened: Callable[..., ApprovalStore]
    ) -> None:
        """A session name no queue could have written (a control character) raises when listed."""
        session = fresh_session()
        store = opened()
        ApprovalQueue(store=store, session=session).submit(tool_call_id="c1", tool_name="bash")
        bad = session + "\x1b[2J"
        for table in ("ask_permissions_actions", "ask_permissions_sessions"):
            raw(store_url, f"UPDATE {table} SET session = ? WHERE session = ?", bad, session)
        try:
            with pytest.raises(CorruptStoreError, match="expected a session name"):
                store.all_pending()
            with pytest.raises(CorruptStoreError, match="expected a session name"):
                store.sessions()
        finally:
            for table in ("ask_permissions_actions", "ask_permissions_sessions"):
                raw(store_url, f"DELETE FROM {table} WHERE session = ?", bad)


class TestForeignData:
    """Another schema version, or another program's table of the same name, is refused at open."""

    def test_another_schema_version(self, store_url: str, opened: Callable[..., ApprovalStore]) -> None:
        """A database written by a later schema raises CorruptStoreError naming the version."""
        opened()
        raw(store_url, "UPDATE ask_permissions_meta SET value = '99' WHERE name = 'schema_version'")
        try:
            with pytest.raises(CorruptStoreError, match="schema_version: expected 2") as info:
                open_store(store_url)
            assert info.value.value == "99"
        finally:
            raw(store_url, "UPDATE ask_permissions_meta SET value = '2' WHERE name = 'schema_version'")

    def test_a_foreign_table(self, tmp_path: Path) -> None:
        """An ask_permissions_actions table with other columns is not this package's: refused."""
        path = tmp_path / "foreign.db"
        raw(f"sqlite:///{path}", "CREATE TABLE ask_permissions_actions (session TEXT, id INTEGER, what TEXT)")
        with pytest.raises(CorruptStoreError, match="ask_permissions_actions: expected the columns"):
            SqliteStore(path)


class TestOpenStore:
    """open_store reads the URLs the command line takes."""

    def test_urls(self, tmp_path: Path) -> None:
        """sqlite:/// with a path, memory:, and PostgreSQL URLs name their store."""
        store = open_store(f"sqlite:///{tmp_path / 'a.db'}")
        try:
            assert isinstance(store, SqliteStore)
            assert store.path == str(tmp_path / "a.db")
        finally:
            store.close()
        assert isinstance(open_store("memory:"), MemoryStore)

    @pytest.mark.parametrize("url", ["", "sqlite:///", "mysql://x", "sqlite://relative.db", "/tmp/x.db"])
    def test_unknown_urls(self, url: str) -> None:
        """Anything else is a ValueError that shows the accepted forms."""
        with pytest.raises(ValueError, match="sqlite:///"):
            open_store(url)

    def test_options_are_checked(self, tmp_path: Path) -> None:
        """Leases and intervals must be positive; PostgresStore needs a string."""
        with pytest.raises(ValueError, match="lease"):
            SqliteStore(tmp_path / "b.db", lease=timedelta(0))
        with pytest.raises(ValueError, match="poll_interval"):
            SqliteStore(tmp_path / "b.db", poll_interval=0)
        with pytest.raises(TypeError, match="dsn"):
            PostgresStore(b"postgresql://")  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a store of each kind: memory, a fresh SQLite file, the test run's PostgreSQL database."""
    if request.param == "memory":
        return "memory:"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'approvals.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


def waiting(queue: ApprovalQueue, action_id: int) -> bool:
    """Whether a thread or an event loop of this process waits on the action."""
    local = queue._local
    with local.changed:
        return action_id in local.waiters.waited or action_id in local.waiters.by_id


class TestClosedStores:
    """A store closed while, or before, someone waits on it."""

    def test_closing_wakes_a_wait(self, any_store_url: str, stores: Callable[..., ApprovalStore]) -> None:
        """A wait with no timeout on a store another thread closes raises StoreClosedError at once."""
        store = stores(any_store_url)
        queue = ApprovalQueue(store=store, session=fresh_session())
        action_id = queue.submit(tool_call_id="a", tool_name="bash")
        errors: list[BaseException] = []

        def wait() -> None:
            try:
                queue.wait(action_id)
            except BaseException as error:
                errors.append(error)

        waiter = start(wait)
        until(lambda: waiting(queue, action_id), "the wait to begin")
        store.close()
        join(waiter)
        [error] = errors
        assert isinstance(error, StoreClosedError)
        named = repr(store).removeprefix("<PostgresStore ").removesuffix(">")  # no password
        assert error.store == (named if isinstance(store, PostgresStore) else any_store_url)
        assert "closed" in str(error)

    def test_closing_wakes_an_async_wait(
        self, any_store_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """wait_async with no timeout on a store another thread closes raises StoreClosedError at once."""
        store = stores(any_store_url)
        queue = ApprovalQueue(store=store, session=fresh_session())
        action_id = queue.submit(tool_call_id="a", tool_name="bash")

        async def main() -> None:
            task = asyncio.ensure_future(queue.wait_async(action_id))
            await asyncio.sleep(0)  # one step of the loop: the task runs up to its wait for the decision
            assert waiting(queue, action_id)
            closer = start(store.close)
            with pytest.raises(StoreClosedError, match="closed"):
                await asyncio.wait_for(task, JOIN_TIMEOUT)
            join(closer)

        asyncio.run(main())

    def test_a_wait_on_a_closed_store_raises(
        self, any_store_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """Waits begun after the store closed raise StoreClosedError at once, sync and async."""
        store = stores(any_store_url)
        queue = ApprovalQueue(store=store, session=fresh_session())
        action_id = queue.submit(tool_call_id="a", tool_name="bash")
        store.close()
        began = time.monotonic()
        with pytest.raises(StoreClosedError):
            queue.wait(action_id)
        with pytest.raises(StoreClosedError):
            asyncio.run(queue.wait_async(action_id, timeout=JOIN_TIMEOUT))
        with pytest.raises(StoreClosedError):
            ApprovalQueue(store=store, session=fresh_session()).wait(1, timeout=JOIN_TIMEOUT)
        assert time.monotonic() - began < JOIN_TIMEOUT

    def test_a_closed_database_store_refuses_every_operation(
        self, store_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """Submits, reads, resolutions and grants on a closed database store raise StoreClosedError (a
        PostgreSQL store made a new connection instead; SQLite raised its driver's closed-database error)."""
        store = stores(store_url)
        session = fresh_session()
        queue = ApprovalQueue(store=store, session=session)
        action_id = queue.submit(tool_call_id="a", tool_name="bash")
        store.close()
        grants = SessionPermissionGrants(store=store, session=session)
        attempts: list[Callable[[], object]] = [
            lambda: queue.submit(tool_call_id="b", tool_name="bash"),
            lambda: queue.pending_actions,
            lambda: queue.approve(action_id),
            lambda: queue.reject(action_id),
            lambda: grants.grant("bash"),
            store.sessions,
        ]
        for attempt in attempts:
            with pytest.raises(StoreClosedError, match="closed"):
                attempt()
        store.close()  # closing again does nothing

    def test_closing_twice_at_once_is_harmless(
        self, any_store_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """Two threads closing a store at the same moment, then a third close: each returns, none raises."""
        store = stores(any_store_url)
        ApprovalQueue(store=store, session=fresh_session()).submit(tool_call_id="a", tool_name="bash")
        errors: list[BaseException] = []
        barrier = threading.Barrier(2, timeout=JOIN_TIMEOUT)

        def close() -> None:
            try:
                barrier.wait()
                store.close()
            except BaseException as error:
                errors.append(error)

        join(start(close), start(close))
        store.close()
        assert errors == []

    def test_closing_from_a_callback(self, store_url: str, stores: Callable[..., ApprovalStore]) -> None:
        """An on_approve that closes its store (a manual approval, and the drain's): the approval is
        recorded, once, and the store closes once it is; nothing hangs."""
        store = stores(store_url)
        session = fresh_session()
        queue = ApprovalQueue(store=store, session=session, auto_approve={"read": True})
        manual = queue.submit(tool_call_id="m", tool_name="bash")
        calls: list[int] = []

        def on_approve(action: Action) -> None:
            calls.append(action.id)
            store.close()

        queue.on_approve = on_approve
        [approved] = queue.approve(manual)
        assert approved.status == "approved"
        until(lambda: refused(lambda: queue.pending_actions), "the store to finish closing")
        assert status_elsewhere(stores(store_url), session, manual) == "approved"

        store = stores(store_url)
        queue = ApprovalQueue(store=store, session=session, auto_approve={"read": True})
        queue.on_approve = on_approve
        auto = queue.submit(tool_call_id="r", tool_name="read", auto_approvable=True)
        until(lambda: refused(lambda: queue.pending_actions), "the store to finish closing")
        assert status_elsewhere(stores(store_url), session, auto) == "approved"
        assert calls == [manual, auto]

    def test_closing_while_a_drain_runs_a_callback(
        self, store_url: str, stores: Callable[..., ApprovalStore]
    ) -> None:
        """A close while the drain (holding its lock) runs on_approve: waiters are woken with
        StoreClosedError and new work refused at once; close returns once the callback has returned and
        its approval is recorded; the submit that drained returns its id; the callback ran once."""
        store = stores(store_url)
        session = fresh_session()
        queue = ApprovalQueue(store=store, session=session, auto_approve={"read": True})
        elsewhere = ApprovalQueue(store=store, session=fresh_session())  # the drain stops at a manual head
        waited = elsewhere.submit(tool_call_id="w", tool_name="bash")
        entered, leave = threading.Event(), threading.Event()
        calls: list[int] = []

        def on_approve(action: Action) -> None:
            calls.append(action.id)
            entered.set()
            assert leave.wait(JOIN_TIMEOUT)

        queue.on_approve = on_approve
        outcomes: dict[str, object] = {}

        def record(name: str, run: Callable[[], object]) -> Callable[[], None]:
            def target() -> None:
                try:
                    outcomes[name] = run()
                except BaseException as error:
                    outcomes[name] = error

            return target

        submitter = start(
            record("submit", lambda: queue.submit(tool_call_id="r", tool_name="read", auto_approvable=True))
        )
        assert entered.wait(JOIN_TIMEOUT)
        waiter = start(record("wait", lambda: elsewhere.wait(waited)))
        until(lambda: waiting(elsewhere, waited), "the wait to begin")
        closer = start(record("close", store.close))
        join(waiter)  # woken by the close, which still waits for the callback
        assert isinstance(outcomes["wait"], StoreClosedError)
        assert "close" not in outcomes
        with pytest.raises(StoreClosedError):
            queue.submit(tool_call_id="late", tool_name="bash")
        with pytest.raises(StoreClosedError):
            elsewhere.approve(waited)
        leave.set()
        join(submitter, closer)
        auto = outcomes["submit"]
        assert isinstance(auto, int), auto
        assert outcomes["close"] is None
        assert calls == [auto]
        assert status_elsewhere(stores(store_url), session, auto) == "approved"
        assert status_elsewhere(stores(store_url), elsewhere.session, waited) == "pending"
        assert refused(lambda: queue.pending_actions)


class TestReplacedFile:
    """SQLite: another process deletes the database file under a running store, or moves another
    database over it (a reset by hand, a restore by ``mv``)."""

    @staticmethod
    def opened_and_kept(
        tmp_path: Path, stores: Callable[..., ApprovalStore]
    ) -> tuple[ApprovalStore, ApprovalQueue, Path]:
        """A store on ``approvals.db``, a queue of it with action 1 pending, and a second name of that
        file (a hard link) to bring it back by."""
        path = tmp_path / "approvals.db"
        store = stores(f"sqlite:///{path}")
        queue = ApprovalQueue(store=store, session=fresh_session())
        queue.submit(tool_call_id="a", tool_name="bash")
        kept = tmp_path / "kept.db"
        os.link(path, kept)
        return store, queue, kept

    @staticmethod
    def refuses_everything(store: ApprovalStore, queue: ApprovalQueue) -> None:
        """Reads, writes, resolutions (no callback run) and waits all fail for the store."""
        calls: list[int] = []
        queue.on_approve = lambda action: calls.append(action.id)
        attempts: list[Callable[[], object]] = [
            lambda: queue.pending_actions,
            lambda: queue[1],
            lambda: queue.submit(tool_call_id="b", tool_name="bash"),
            lambda: queue.approve(1),
            lambda: queue.reject(1),
            store.sessions,
        ]
        for attempt in attempts:
            with pytest.raises(StoreUnavailableError, match="deleted or replaced since this store opened it"):
                attempt()
        with pytest.raises(TimeoutError, match="the store is unavailable") as timed_out:
            queue.wait(1, timeout=0.2)
        assert isinstance(timed_out.value.__cause__, StoreUnavailableError)
        assert calls == []

    def test_a_file_moved_over_it(self, tmp_path: Path, stores: Callable[..., ApprovalStore]) -> None:
        """Another database moved over the file: every operation raises StoreUnavailableError naming the
        path (none reads or writes the old file, nor reopens the new one); the new file holds nothing of
        the store's; moved back, the old file is used again, its action still pending."""
        store, queue, kept = self.opened_and_kept(tmp_path, stores)
        (tmp_path / "other").mkdir()
        other_path = tmp_path / "other" / "approvals.db"
        other = stores(f"sqlite:///{other_path}")
        ApprovalQueue(store=other, session=queue.session).submit(tool_call_id="z", tool_name="read")
        other.close()  # its WAL is written back into the file
        new = tmp_path / "other" / "new.db"  # the new file by a name of its own, with no WAL beside it
        os.link(other_path, new)
        os.replace(other_path, tmp_path / "approvals.db")
        self.refuses_everything(store, queue)
        assert raw(f"sqlite:///{new}", "SELECT tool_call_id FROM ask_permissions_actions") == [('"z"',)]
        os.replace(kept, tmp_path / "approvals.db")
        [pending] = queue.pending_actions
        assert (pending.id, pending.tool_call_id) == (1, "a")
        assert queue.submit(tool_call_id="b", tool_name="bash") == 2

    def test_a_deleted_file(self, tmp_path: Path, stores: Callable[..., ApprovalStore]) -> None:
        """The file deleted: every operation raises StoreUnavailableError, and the store makes no new file."""
        store, queue, kept = self.opened_and_kept(tmp_path, stores)
        path = tmp_path / "approvals.db"
        path.unlink()
        self.refuses_everything(store, queue)
        assert not path.exists()
        os.replace(kept, path)
        assert queue.submit(tool_call_id="b", tool_name="bash") == 2


def refused(operation: Callable[[], object]) -> bool:
    """Whether ``operation`` raises StoreClosedError."""
    try:
        operation()
    except StoreClosedError:
        return True
    return False


def status_elsewhere(store: ApprovalStore, session: str, action_id: int) -> str | None:
    """The action's status as ``store`` (another store on the same database) reads it."""
    action = ApprovalQueue(store=store, session=session)[action_id]
    return None if action is None else action.status


# -- real processes --------------------------------------------------------------------------------------


class Worker:
    """A ``tests.store_workers`` process, its JSON lines read as they come."""

    def __init__(
        self, role: str, url: str, session: str, *args: object, env: dict[str, str] | None = None
    ) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.store_workers", role, url, session, *map(str, args)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=None if env is None else os.environ | env,
        )
        self.records: list[dict[str, Any]] = []

    def expect(self, event: str) -> dict[str, Any]:
        """Read lines until one with this event (the worker must print it within SETTLE seconds)."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, f"worker ended before {event!r}: {self.records}"
            record: dict[str, Any] = json.loads(line)
            self.records.append(record)
            if record["event"] == event:
                return record

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def finish(self) -> list[dict[str, Any]]:
        """Wait for the worker to end (exit 0); every line it printed."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        stdout, rest = self.process.stdout, []
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        # Read through the text stream: lines expect() already buffered are in it (communicate() would
        # read the pipe beneath and miss them).
        reader = threading.Thread(target=lambda: rest.append(stdout.read()), daemon=True)
        reader.start()
        reader.join(SETTLE * 3)
        assert not reader.is_alive(), f"worker did not end: {self.records[-3:]}"
        self.process.wait(SETTLE)
        self.records.extend(json.loads(line) for line in rest[0].splitlines())
        assert self.process.returncode == 0, self.records[-3:]
        return self.records

    def kill(self) -> None:
        """End the worker if it still runs, and close its pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(SETTLE)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()


def until(condition: Callable[[], bool], what: str) -> float:
    """Look at ``condition`` until it holds (a lease runs out by time alone); seconds it took."""
    began = time.monotonic()
    while not condition():
        assert time.monotonic() - began < SETTLE, f"{what} did not happen within {SETTLE} s"
        time.sleep(0.02)
    return time.monotonic() - began


class TestProcesses:
    """Many processes on one session: one queue, each action resolved once, nothing lost or stranded."""

    SUBMITTERS = 8
    RESOLVERS = 4
    SECONDS = 2.0

    def test_submitters_and_resolvers(
        self,
        store_url: str,
        opened: Callable[..., ApprovalStore],
        request: pytest.FixtureRequest,
    ) -> None:
        """8 submitting and 4 resolving processes: ids 1..n, one callback per resolution, none lost."""
        session = fresh_session()
        workers = [
            Worker("submit", store_url, session, self.SECONDS, index) for index in range(self.SUBMITTERS)
        ]
        workers += [
            Worker("resolve", store_url, session, self.SECONDS, index) for index in range(self.RESOLVERS)
        ]
        try:
            for worker in workers:
                worker.expect("ready")
            for worker in workers:
                worker.go()
            records = [record for worker in workers for record in worker.finish()]
        finally:
            for worker in workers:
                worker.kill()
        submitted = [record["id"] for record in records if record["event"] == "submitted"]
        fired = Counter(record["id"] for record in records if record["event"] in ("approve", "reject"))
        queue = ApprovalQueue(store=opened(), session=session, auto_approve={"read": True})
        cleanup: list[int] = []
        queue.on_approve = queue.on_reject = lambda action: cleanup.append(action.id)
        assert sorted(submitted) == list(range(1, len(submitted) + 1))
        assert repr(queue).endswith(f"next_id={len(submitted) + 1}>")
        assert [record["id"] for record in records if record.get("overtaken")] == []
        assert max(fired.values(), default=1) == 1
        queue.approve_all()
        assert not set(cleanup) & set(fired)
        fired.update(cleanup)
        final = {action_id: queue[action_id] for action_id in submitted}
        assert all(
            action is not None and action.status in ("approved", "rejected") for action in final.values()
        )
        assert sorted(fired) == sorted(submitted)
        assert max(fired.values()) == 1
        by_event = {(r["id"], r["event"]) for r in records if r["event"] in ("approve", "reject")}
        for action_id, action in final.items():
            if action_id not in cleanup:
                assert (action_id, "approve" if action.is_approved else "reject") in by_event  # type: ignore[union-attr]
        # The run's counts, for a report (pytest --junitxml=... -o junit_family=legacy shows them).
        request.node.user_properties += [
            ("submitted", len(submitted)),
            ("resolved_by_workers", sum(fired.values()) - len(cleanup)),
            ("resolved_afterwards", len(cleanup)),
            (
                "auto_approved_by_drains",
                sum(r["event"] == "approve" and r["scope"] == "once" for r in records),
            ),
        ]

    def test_a_killed_process_returns_its_action_after_the_lease(
        self, store_url: str, opened: Callable[..., ApprovalStore]
    ) -> None:
        """kill -9 in on_approve: the action is applying, then pending after the lease; others untouched."""
        session = fresh_session()
        queue = ApprovalQueue(store=opened(), session=session)
        for call in ("a", "b", "c"):
            queue.submit(tool_call_id=call, tool_name="bash")
        queue.approve(3, scope="session")
        victim = Worker("hang", store_url, session, 1, SHORT_LEASE.total_seconds())
        try:
            victim.expect("entered")
            assert queue[1].is_applying  # type: ignore[union-attr]
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(SETTLE)
            assert queue[1].is_applying  # type: ignore[union-attr]  # the lease still runs
            waited = until(lambda: queue.is_pending(1), "the killed process's claim to lapse")
        finally:
            victim.kill()
        assert waited <= SHORT_LEASE.total_seconds() + SETTLE
        assert (queue[1].scope, queue[1].feedback) == (None, None)  # type: ignore[union-attr]
        assert queue.is_pending(2)
        assert queue[3].is_approved  # type: ignore[union-attr]
        approved: list[int] = []
        queue.on_approve = lambda action: approved.append(action.id)
        assert [action.id for action in queue.approve(1)] == [1]
        assert approved == [1]

    def test_a_stalled_process_cannot_resolve_twice(
        self, store_url: str, opened: Callable[..., ApprovalStore]
    ) -> None:
        """A process stopped past its lease: another resolves the action; the late one's claim is lost."""
        session = fresh_session()
        queue = ApprovalQueue(store=opened(), session=session)
        queue.submit(tool_call_id="a", tool_name="bash")
        go = Path(f"/tmp/ask-permissions-go-{session}")
        stalled = Worker("stall", store_url, session, 1, SHORT_LEASE.total_seconds(), go)
        try:
            stalled.expect("entered")
            stalled.process.send_signal(signal.SIGSTOP)
            until(lambda: queue.is_pending(1), "the stopped process's claim to lapse")
            [mine] = queue.approve(1, scope="project")
            go.touch()
            stalled.process.send_signal(signal.SIGCONT)
            assert stalled.expect("claim_lost")["id"] == 1
            stalled.finish()
        finally:
            stalled.process.send_signal(signal.SIGCONT)
            stalled.kill()
            go.unlink(missing_ok=True)
        assert queue[1] == mine
        assert (mine.status, mine.scope) == ("approved", "project")

    @pytest.mark.parametrize("role", ["wait", "wait_async"])
    def test_a_waiter_is_woken_by_another_process(
        self, store_url: str, opened: Callable[..., ApprovalStore], role: str
    ) -> None:
        """wait() or wait_async() in one process returns the action another process approved."""
        session = fresh_session()
        queue = ApprovalQueue(store=opened(), session=session)
        queue.submit(tool_call_id="a", tool_name="bash")
        waiter = Worker(role, store_url, session, 1)
        try:
            waiter.expect("waiting")
            time.sleep(0.3)  # no event says another process's wait() has begun: let it get there
            approved_at = time.monotonic()
            queue.approve(1)
            woke = waiter.expect("woke")
            waiter.finish()
        finally:
            waiter.kill()
        assert woke["status"] == "approved"
        assert woke["at"] - approved_at < SETTLE
