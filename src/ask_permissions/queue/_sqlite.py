"""``SqliteStore``: approvals and grants in an SQLite file that the processes of one machine share."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, ClassVar, Final, final

from ask_permissions._errors import preview

from ._snapshot import MAX_ID
from ._sql import DEFAULT_LEASE, Execute, SqlStore, positive_seconds

try:
    import fcntl
except ImportError:  # not POSIX: SqliteStore refuses to be made (see its drain lock)
    fcntl = None  # type: ignore[assignment]

__all__ = ["POLL_INTERVAL", "SqliteStore"]

POLL_INTERVAL: Final = 0.05
"""Seconds between two looks at the database while a ``wait`` of this process waits (SQLite tells no
other process of a change, so waiting across processes polls ``PRAGMA data_version``: cheap, and only
while someone waits)."""

# A submit is one statement: it takes the write lock as it starts (so it waits on busy, and no other
# writer comes between its read of the last id and its insert), and the trigger keeps the last id.
_INSERT: Final = (
    "INSERT INTO ask_permissions_actions (session, id, tool_call_id, tool_name, args, auto_approvable,"
    " message, submitted_at, status, submit_owner, submit_until, why)"
    " SELECT :session, last + 1, :tool_call_id, :tool_name, :args, :auto_approvable, :message,"
    " :submitted_at, 'pending', :submit_owner, :submit_until, :why"
    " FROM (SELECT COALESCE((SELECT last_id FROM ask_permissions_sessions WHERE session = :session), 0)"
    f" AS last) WHERE last < {MAX_ID} RETURNING id"
)
_LAST_ID_TRIGGER: Final = (
    "CREATE TRIGGER IF NOT EXISTS ask_permissions_last_id AFTER INSERT ON ask_permissions_actions BEGIN"
    " INSERT INTO ask_permissions_sessions (session, last_id) VALUES (NEW.session, NEW.id)"
    " ON CONFLICT (session) DO UPDATE SET last_id = max(last_id, NEW.id); END"
)


@final
class SqliteStore(SqlStore):
    """Approval queues and session grants in an SQLite database file (standard library only).

    Every process of this machine that opens the same file shares its sessions: ids stay sequential, one
    process at a time drains a session (an operating-system lock on the file ``<path>-drain``, released
    when its process dies), and a claim whose process died is pending again after ``lease``. A ``wait``
    in one process notices a decision made in another by polling every ``poll_interval`` seconds (the
    one place this package polls). The database is in WAL mode; the tables are created if missing.

    Thread-safe: one connection, guarded by a lock; writes are short ``BEGIN IMMEDIATE`` transactions.

    Args:
        path: the database file (created if missing).
        lease: how long a claim outlives its process (renewed every third of it while alive).
        poll_interval: seconds between two looks for changes made by other processes, while waiting.
        timeout: seconds a write waits for another process's transaction before it fails.

    Raises:
        CorruptStoreError: the file holds tables of another schema (version) under this package's names.
        sqlite3.Error: the file cannot be opened as a database.
    """

    _named: ClassVar[bool] = True
    _now_sql: ClassVar[str] = ":now"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lease: timedelta = DEFAULT_LEASE,
        poll_interval: float = POLL_INTERVAL,
        timeout: float = 30.0,
    ) -> None:
        name = os.fspath(path)
        if not name or name == ":memory:" or name.startswith("file:"):
            raise ValueError(f"path: expected the path of a database file; got {preview(path)}")
        super().__init__(lease=lease, where=f"sqlite:///{name}")
        if fcntl is None:
            raise RuntimeError("SqliteStore needs POSIX file locks (fcntl), which this system lacks")
        if sqlite3.sqlite_version_info < (3, 35):
            raise RuntimeError(
                f"SqliteStore needs SQLite 3.35 or later; this Python has {sqlite3.sqlite_version}"
            )
        self._path: Final = name
        self._timeout: Final = positive_seconds(timeout, "timeout")
        self._poll_interval: Final = positive_seconds(poll_interval, "poll_interval")
        self._lock: Final = threading.Lock()
        self._connection: Final = self._connect()
        try:
            with self._transaction() as execute:
                self._check_schema(execute)
                execute(_LAST_ID_TRIGGER, {})
        except BaseException:
            self._connection.close()
            raise
        self._watchers = 0
        self._watch: Final = threading.Condition(threading.Lock())
        self._poller: threading.Thread | None = None

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            # Readers never wait for the writer in WAL mode; a commit without fsync survives a crash of the
            # process (not of the machine), which is what a queue of pending decisions needs.
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            connection.close()
            raise
        return connection

    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._connection.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Execute]:
        with self._lock:
            connection = self._connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield lambda sql, params: connection.execute(sql, params).fetchall()
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise

    def _insert(self, session: str, row: dict[str, Any]) -> int:
        rows = self._execute(_INSERT, row | {"session": session})
        if not rows:
            raise ValueError(f"session {preview(session)} has given every id up to {MAX_ID}")
        return int(rows[0][0])

    def _columns(self, execute: Execute) -> set[str]:
        return {row[1] for row in execute("PRAGMA table_info(ask_permissions_actions)", {})}

    def _delete(self, sql: str, params: dict[str, Any]) -> int:
        with self._lock:
            return self._connection.execute(sql, params).rowcount

    def _drain_lock(self, session: str) -> contextlib.AbstractContextManager[None]:
        return _file_lock(self._path + "-drain", session)

    # -- noticing other processes' changes ---------------------------------------------------------------

    def watch(self) -> None:
        with self._watch:
            self._watchers += 1
            if self._poller is None and not self._closed.is_set():
                self._poller = threading.Thread(
                    target=self._poll, name=f"ask_permissions watcher {self._where}", daemon=True
                )
                self._poller.start()
            self._watch.notify_all()

    def unwatch(self) -> None:
        with self._watch:
            self._watchers -= 1

    def _poll(self) -> None:
        """While someone waits, look at ``data_version`` every interval; a change wakes every waiter.

        Any commit made after a waiter looked at its action changes the version from every value read
        before that commit, so no decision is missed whenever the baseline was read.
        """
        connection = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None)
        try:
            last = None
            while not self._closed.is_set():
                with self._watch:
                    self._watch.wait_for(lambda: self._watchers > 0 or self._closed.is_set())
                try:
                    version = connection.execute("PRAGMA data_version").fetchone()[0]
                except sqlite3.Error:
                    version = None  # look again next time; wake the waiters meanwhile
                if version is None or version != last:
                    self._changed_elsewhere(None)
                last = version
                with self._watch:
                    self._watch.wait_for(self._closed.is_set, self._poll_interval)
        finally:
            connection.close()

    def close(self) -> None:
        """Stop the watcher and the lease renewer, and close the connection."""
        self._closed.set()
        with self._watch:
            self._watch.notify_all()
        poller = self._poller
        if poller is not None:
            poller.join(5)
        super().close()
        with self._lock:
            self._connection.close()


# -- drain locks: one process at a time per session, released by the operating system when it dies ----

_REGISTRY_LOCK: Final = threading.Lock()
# The lock files' descriptors, kept open for the process's life: closing any descriptor of a file drops
# every POSIX lock the process holds on it. And per (file, session), the lock between this process's
# threads (POSIX locks belong to the process, not the thread).
_FILES: Final[dict[str, int]] = {}
_THREAD_LOCKS: Final[dict[tuple[str, int], threading.Lock]] = {}


def _forget_locks_after_fork() -> None:
    _THREAD_LOCKS.clear()  # a child inherits no POSIX lock, and no thread that held one


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_locks_after_fork)


@contextlib.contextmanager
def _file_lock(path: str, session: str) -> Iterator[None]:
    """An exclusive lock on one byte of ``path``, at an offset named by ``session``."""
    offset = zlib.crc32(session.encode("utf-8", "surrogatepass"))
    key = os.path.realpath(path)
    with _REGISTRY_LOCK:
        descriptor = _FILES.get(key)
        if descriptor is None:
            descriptor = _FILES[key] = os.open(key, os.O_RDWR | os.O_CREAT, 0o666)
        thread_lock = _THREAD_LOCKS.setdefault((key, offset), threading.Lock())
    with thread_lock:
        fcntl.lockf(descriptor, fcntl.LOCK_EX, 1, offset)
        try:
            yield
        finally:
            fcntl.lockf(descriptor, fcntl.LOCK_UN, 1, offset)
