"""``SqliteStore``: approvals and grants in an SQLite file that the processes of one machine share."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, ClassVar, Final, TypeVar, final

from ask_permissions._errors import CorruptStoreError, StoreError, StoreUnavailableError, preview

from ._file_events import FileEvents
from ._snapshot import MAX_ID
from ._sql import (
    ACTION_COLUMNS,
    DEFAULT_LEASE,
    MIGRATIONS,
    SCHEMA_VERSION,
    Execute,
    Inserted,
    SqlStore,
    positive_seconds,
)

try:
    import fcntl
except ImportError:  # not POSIX: SqliteStore refuses to be made (see its drain lock)
    fcntl = None  # type: ignore[assignment]

__all__ = ["POLL_INTERVAL", "SqliteStore"]

POLL_INTERVAL: Final = 0.05
"""Seconds between two looks at the database while a ``wait`` of this process waits (SQLite tells no
other process of a change: on Linux inotify says when the file is written, and this look is the fallback;
elsewhere it is how a wait notices, polling ``PRAGMA data_version``: cheap, and only while someone waits)."""
_DEFAULT_TIMEOUT: Final = 5.0
_LOOK_AGAIN: Final = (0.002, 0.01, 0.03)  # seconds after a write that changed nothing yet
_T = TypeVar("_T")
_LEASE_CLOCK: Final = "SELECT value FROM ask_permissions_meta WHERE name = 'lease_clock'"
_SET_LEASE_CLOCK: Final = (
    "INSERT INTO ask_permissions_meta (name, value) VALUES ('lease_clock', :clock)"
    " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)

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
    when its process dies), and a claim whose process died is pending again after ``lease``, counted on
    the machine's monotonic clock (on Linux; elsewhere its wall clock), so a step of the wall clock
    changes no lease. A ``wait`` in one process notices a decision made in another at once on Linux
    (inotify tells when the file is written) and otherwise by looking every ``poll_interval`` seconds.
    The database is in WAL mode; the tables are created if missing.

    Thread-safe: one connection, guarded by a lock; writes are short ``BEGIN IMMEDIATE`` transactions.

    Args:
        path: the database file (created if missing, unless ``read_only``).
        lease: how long a claim outlives its process (renewed every third of it while alive).
        poll_interval: seconds between two looks for changes made by other processes, while waiting
            (on Linux a write is noticed at once; this look is the fallback).
        timeout: seconds a statement waits for another process's transaction before it fails: below
            the lease (default: a quarter of it, at most 5 s), so a resolution is tried again within it.
        read_only: open the file for reading only (``list``, ``show``, ``watch``): nothing is created,
            and every write raises ``StoreUnavailableError``. On a read-only file system the file is
            read as it is.

    Raises:
        CorruptStoreError: the file is not a database, or holds tables of another schema (version) under
            this package's names.
        StoreUnavailableError: the file cannot be opened (or, read-only, holds no tables of this package).
    """

    _named: ClassVar[bool] = True
    _now_sql: ClassVar[str] = ":now"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lease: timedelta = DEFAULT_LEASE,
        poll_interval: float = POLL_INTERVAL,
        timeout: float | None = None,
        read_only: bool = False,
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
        if not isinstance(read_only, bool):
            raise TypeError(f"read_only: expected True or False; got {preview(read_only)}")
        if timeout is None:
            timeout = min(_DEFAULT_TIMEOUT, self._lease / 4)
        self._timeout: Final = positive_seconds(timeout, "timeout")
        if self._timeout >= self._lease:
            raise ValueError(
                f"timeout: expected fewer seconds than the lease ({self._lease:g} s), so that a resolution "
                f"can be tried again within it; got {preview(timeout)}"
            )
        self._attempt_seconds = self._timeout
        self._poll_interval: Final = positive_seconds(poll_interval, "poll_interval")
        self._path: Final = name
        self._read_only: Final = read_only
        self._clock_name, self._clock = _lease_clock()
        self._lock: Final = threading.Lock()
        try:
            self._connection: Final = self._connect()
        except sqlite3.Error as error:
            raise self._failure(error) from error
        try:
            # The file the connection has open, by device and inode: the one every statement must reach.
            self._file: Final = _file_identity(name)
            if self._file is None:
                raise self._replaced()
            if read_only:
                self._check_schema_to_read()
            else:
                self._run(self._prepare, retry=False)
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

    @property
    def read_only(self) -> bool:
        """Whether the store was opened for reading only."""
        return self._read_only

    def _connect(self) -> sqlite3.Connection:
        if self._read_only:
            return self._connect_to_read()
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

    def _connect_to_read(self) -> sqlite3.Connection:
        """A read-only connection. On a read-only file system, where SQLite cannot make the WAL's index
        file beside the database, the file is read as it is (``immutable``): nothing can change it there."""
        uri = "file:" + urllib.parse.quote(os.path.abspath(self._path)) + "?mode=ro"
        options: dict[str, Any] = {
            "timeout": self._timeout,
            "isolation_level": None,
            "check_same_thread": False,
        }
        connection: sqlite3.Connection = sqlite3.connect(uri, uri=True, **options)
        try:
            connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.OperationalError:
            connection.close()
            if not os.statvfs(os.path.dirname(os.path.abspath(self._path))).f_flag & os.ST_RDONLY:
                raise
            connection = sqlite3.connect(uri + "&immutable=1", uri=True, **options)
        return connection

    def _prepare(self, execute: Execute) -> None:
        """Create or check the tables, and lapse the claims of another boot (their processes are gone)."""
        self._check_schema(execute)
        execute(_LAST_ID_TRIGGER, {})
        found = execute(_LEASE_CLOCK, {})
        if not found or found[0][0] != self._clock_name:
            # Leases written by another clock (an older version's wall clock, or a monotonic clock of an
            # earlier boot) mean nothing to this one: those processes are gone, so their claims lapse.
            execute("UPDATE ask_permissions_actions SET lease_until = 0 WHERE status = 'applying'", {})
            execute(
                "UPDATE ask_permissions_actions SET submit_until = NULL WHERE submit_until IS NOT NULL", {}
            )
            execute(_SET_LEASE_CLOCK, {"clock": self._clock_name})

    def _check_schema_to_read(self) -> None:
        """A read-only store checks what it can and creates nothing."""
        try:
            with self._lock:
                found = self._connection.execute(
                    "SELECT value FROM ask_permissions_meta WHERE name = 'schema_version'"
                ).fetchall()
                columns = {
                    row[1] for row in self._connection.execute("PRAGMA table_info(ask_permissions_actions)")
                }
        except sqlite3.Error as error:
            raise self._failure(error) from error
        if found and found[0][0] in MIGRATIONS:
            raise CorruptStoreError(
                f"{self._where}: the tables are of schema {found[0][0]}, and this user can only read them; "
                f"open the store once with write access to upgrade it in place to schema {SCHEMA_VERSION}",
                path=self._where,
                value=found[0][0],
            )
        if (found and found[0][0] != SCHEMA_VERSION) or columns != set(ACTION_COLUMNS):
            # The read-write check names what differs; a reader only refuses.
            raise CorruptStoreError(
                f"{self._where}: expected the tables of schema {SCHEMA_VERSION} of ask_permissions",
                path=self._where,
                value=found[0][0] if found else None,
            )

    def _now(self) -> float:
        return self._clock()

    def _ready(self) -> None:
        """Locked, before a statement: the store is open, and its file is still the one at its path.

        Another process may delete the file and make a new database there (a reset by hand, a restore by
        ``mv``): the connection would go on with the old, unlinked file, where nobody else looks. Its ids
        would also be given again in the new file, so the store does not reopen either: a wait for an id
        of the old file must not return another call's decision.

        Raises:
            StoreClosedError: the store was closed.
            StoreUnavailableError: the file was deleted or replaced (until the same file is back).
        """
        self._refuse_if_released()
        if _file_identity(self._path) != self._file:
            raise self._replaced()

    def _replaced(self) -> StoreUnavailableError:
        self._troubled = True
        return StoreUnavailableError(
            f"{self._where}: the database file was deleted or replaced since this store opened it; the store "
            "does not use the old file, nor reopen the new one (whose ids may be given again): open the "
            "store again",
            store=self._where,
        )

    def _failure(self, error: sqlite3.Error) -> StoreError:
        """The package's error for an SQLite error, its message kept."""
        if getattr(error, "sqlite_errorname", "").startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
            return CorruptStoreError(f"{self._where}: {error}", path=self._where)
        return self._unavailable(error)

    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                self._ready()
                rows = self._connection.execute(sql, params).fetchall()
        except sqlite3.Error as error:
            raise self._failure(error) from error
        self._troubled = False
        return rows

    def _run(self, work: Callable[[Execute], _T], *, retry: bool) -> _T:
        # One connection to a local file: a failed statement or commit is rolled back, so nothing to retry.
        try:
            with self._lock:
                self._ready()
                connection = self._connection
                connection.execute("BEGIN IMMEDIATE")
                try:
                    result = work(lambda sql, params: connection.execute(sql, params).fetchall())
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            connection.execute("ROLLBACK")
                    raise
        except sqlite3.Error as error:
            raise self._failure(error) from error
        self._troubled = False
        return result

    def _insert(self, session: str, row: dict[str, Any]) -> Inserted:
        rows = self._execute(_INSERT, row | {"session": session})
        if not rows:
            raise ValueError(f"session {preview(session)} has given every id up to {MAX_ID}")
        return Inserted(int(rows[0][0]), row["submit_owner"])

    def _columns(self, execute: Execute) -> set[str]:
        return {row[1] for row in execute("PRAGMA table_info(ask_permissions_actions)", {})}

    def _delete(self, sql: str, params: dict[str, Any]) -> int:
        try:
            with self._lock:
                self._ready()
                count = self._connection.execute(sql, params).rowcount
        except sqlite3.Error as error:
            raise self._failure(error) from error
        self._troubled = False
        return count

    def _drain_lock(self, session: str) -> contextlib.AbstractContextManager[None]:
        self.check_open()
        if self._read_only:  # a drain approves: refused before its lock file is made
            raise StoreUnavailableError(
                f"{self._where}: opened read-only, so it cannot drain (a drain approves)", store=self._where
            )
        return _file_lock(self._path + "-drain", session, self._unavailable)

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
        """While someone waits, look at ``data_version`` when the file is written and every interval; a
        change wakes every waiter.

        Any commit made after a waiter looked at its action changes the version from every value read
        before that commit, so no decision is missed whenever the baseline was read. A write is seen as
        it starts, a little before its commit shows: so a write that changed nothing yet is looked at
        again a few times, soon after.
        """
        base = os.path.basename(self._path)
        events = FileEvents(os.path.dirname(os.path.abspath(self._path)), (base, base + "-wal"))
        connection: sqlite3.Connection | None = None
        try:
            last: int | None = None
            again: list[float] = []
            while not self._closed.is_set():
                with self._watch:
                    self._watch.wait_for(lambda: self._watchers > 0 or self._closed.is_set())
                try:
                    # Not to a file that replaced the store's (see _ready): the waiters look, and raise.
                    if connection is None and _file_identity(self._path) == self._file:
                        connection = self._connect()
                    version = (
                        None
                        if connection is None
                        else connection.execute("PRAGMA data_version").fetchone()[0]
                    )
                except sqlite3.Error:
                    version = None  # look again next time; wake the waiters meanwhile
                if version is None or version != last or self._troubled:
                    self._changed_elsewhere(None)
                    again = []
                last = version
                if events.wait(again.pop(0) if again else self._poll_interval):
                    again = list(_LOOK_AGAIN)
        finally:
            events.close()
            if connection is not None:
                connection.close()

    def _release(self) -> None:
        """Stop the watcher, and close the connection (see ``SqlStore.close``)."""
        with self._watch:
            self._watch.notify_all()
        poller = self._poller
        if poller is not None:
            poller.join(5)
        with self._lock:
            self._released = True
            self._connection.close()


def _file_identity(path: str) -> tuple[int, int] | None:
    """The file at ``path`` by device and inode (one ``stat``), or None if there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _lease_clock() -> tuple[str, Callable[[], float]]:
    """The clock leases run on, and its name: the monotonic clock of this boot where one is shared by
    every process of the machine (Linux), else the wall clock."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            boot_id = boot.read().strip()
    except OSError:
        return "wall", time.time
    if not boot_id:
        return "wall", time.time
    return f"monotonic {boot_id}", time.monotonic


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
def _file_lock(path: str, session: str, failure: Callable[[OSError], StoreError]) -> Iterator[None]:
    """An exclusive lock on one byte of ``path``, at an offset named by ``session``; ``failure`` makes the
    package's error of one the file cannot be opened or locked for (a full disk, no locks on its file
    system)."""
    offset = zlib.crc32(session.encode("utf-8", "surrogatepass"))
    key = os.path.realpath(path)
    with _REGISTRY_LOCK:
        descriptor = _FILES.get(key)
        if descriptor is None:
            try:
                descriptor = _FILES[key] = os.open(key, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as error:
                raise failure(error) from error
        thread_lock = _THREAD_LOCKS.setdefault((key, offset), threading.Lock())
    with thread_lock:
        try:
            fcntl.lockf(descriptor, fcntl.LOCK_EX, 1, offset)
        except OSError as error:
            raise failure(error) from error
        try:
            yield
        finally:
            fcntl.lockf(descriptor, fcntl.LOCK_UN, 1, offset)
