"""``PostgresStore``: approvals and grants in PostgreSQL, for many hosts (extra ``[postgres]``, psycopg 3)."""

from __future__ import annotations

import contextlib
import select
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar, final

from ask_permissions._errors import CorruptStoreError, StoreUnavailableError

from ._action import Action
from ._leases import RETRY_SECONDS
from ._sql import (
    CLAIMABLE,
    DEFAULT_LEASE,
    READ_COLUMNS,
    Execute,
    SqlStore,
    decode_action,
    positive_seconds,
    render,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["CHANNEL", "PostgresStore"]

CHANNEL: Final = "ask_permissions"
"""The ``LISTEN``/``NOTIFY`` channel: every change to a session notifies it, with the session's name."""

_NOW: Final = "extract(epoch from clock_timestamp())::float8"
_LOCK_CLASS: Final = 0x41534B50  # "ASKP": the first key of every drain lock, the second names the session
_SCHEMA_LOCK: Final = 0x41534B50_00000000  # held while a first connection creates the tables
_IDLE_LOCK_CONNECTIONS: Final = 4
_LOCK_TIMEOUT: Final = 5.0
_OK: Final = 0  # libpq's CONNECTION_OK
_T = TypeVar("_T")

_INSERT: Final = (
    "WITH s AS (INSERT INTO ask_permissions_sessions AS s (session, last_id) VALUES (%(session)s, 1)"
    " ON CONFLICT (session) DO UPDATE SET last_id = s.last_id + 1 RETURNING last_id),"
    " a AS (INSERT INTO ask_permissions_actions (session, id, tool_call_id, tool_name, args, auto_approvable,"
    " message, submitted_at, status, submit_owner, submit_until, why)"
    " SELECT %(session)s, s.last_id, %(tool_call_id)s, %(tool_name)s, %(args)s, %(auto_approvable)s,"
    " %(message)s, %(submitted_at)s, 'pending', %(submit_owner)s::text,"
    f" CASE WHEN %(submitting)s::boolean THEN {_NOW} + %(lease)s END, %(why)s FROM s RETURNING id)"
    f" SELECT a.id, pg_notify('{CHANNEL}', %(session)s) FROM a"
)
# Whether an insert whose reply was lost was written: its mark is the only one of its kind.
_FIND_INSERT: Final = (
    "SELECT id FROM ask_permissions_actions WHERE session = %(session)s AND submit_owner = %(submit_owner)s"
)
# The claim, returning also what it overwrote (see _UNCLAIM); the old columns are renamed, so the
# unqualified ones are the row's. They are read as of the statement's start: a claim that waited for
# another one re-checks the row itself, and the old values serve only to put back a row that does not read.
_OLD: Final = (
    "old_status",
    "old_token",
    "old_lease",
    "old_scope",
    "old_feedback",
    "old_decided_by",
    "old_edited_args",
)
_CLAIM: Final = (
    "UPDATE ask_permissions_actions SET status = 'applying', claim_token = :token,"
    " lease_until = {now} + :lease, resolution_scope = :scope, feedback = :feedback,"
    " decided_by = :decided_by, edited_args = :edited_args"
    " FROM (SELECT status AS old_status, claim_token AS old_token, lease_until AS old_lease,"
    " resolution_scope AS old_scope, feedback AS old_feedback, decided_by AS old_decided_by,"
    " edited_args AS old_edited_args FROM ask_permissions_actions"
    " WHERE session = :session AND id = :id) AS old"
    f" WHERE session = :session AND id = :id AND {CLAIMABLE}"
    f" RETURNING {READ_COLUMNS}, {{now}}, " + ", ".join(_OLD)
)
_OLD_RESOLVED: Final = (*_OLD, "old_resolved_at")
_RESOLVE: Final = (
    "UPDATE ask_permissions_actions SET status = :status, claim_token = :token, lease_until = NULL,"
    " resolution_scope = :scope, feedback = :feedback, resolved_at = :resolved_at,"
    " decided_by = :decided_by, edited_args = :edited_args"
    " FROM (SELECT status AS old_status, claim_token AS old_token, lease_until AS old_lease,"
    " resolution_scope AS old_scope, feedback AS old_feedback, decided_by AS old_decided_by,"
    " edited_args AS old_edited_args, resolved_at AS old_resolved_at"
    " FROM ask_permissions_actions WHERE session = :session AND id = :id) AS old"
    f" WHERE session = :session AND id = :id AND {CLAIMABLE}"
    f" RETURNING {READ_COLUMNS}, {{now}}, pg_notify('{CHANNEL}', :session), " + ", ".join(_OLD_RESOLVED)
)
_UNCLAIM: Final = (
    "UPDATE ask_permissions_actions SET status = %(old_status)s, claim_token = %(old_token)s,"
    " lease_until = %(old_lease)s, resolution_scope = %(old_scope)s, feedback = %(old_feedback)s,"
    " decided_by = %(old_decided_by)s, edited_args = %(old_edited_args)s"
    " WHERE session = %(session)s AND id = %(id)s AND claim_token = %(token)s"
)
_UNRESOLVE: Final = (
    "UPDATE ask_permissions_actions SET status = %(old_status)s, claim_token = %(old_token)s,"
    " lease_until = %(old_lease)s, resolution_scope = %(old_scope)s, feedback = %(old_feedback)s,"
    " decided_by = %(old_decided_by)s, edited_args = %(old_edited_args)s, resolved_at = %(old_resolved_at)s"
    " WHERE session = %(session)s AND id = %(id)s AND claim_token = %(token)s"
)
_PUT_BACK: Final = {"claim": (_UNCLAIM, _OLD), "resolve": (_UNRESOLVE, _OLD_RESOLVED)}
_COLUMNS: Final = (
    "SELECT column_name FROM information_schema.columns"
    " WHERE table_schema = current_schema() AND table_name = 'ask_permissions_actions'"
)


def _psycopg() -> Any:
    try:
        import psycopg  # noqa: PLC0415  # an optional dependency: imported when a PostgresStore is made
    except ImportError:
        raise ImportError("PostgresStore needs psycopg 3: pip install 'ask-permissions[postgres]'") from None
    return psycopg


def _describe(dsn: str) -> str:
    """``postgresql://user@host:port/dbname`` for messages: never the password."""
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415  # as above

    try:
        parts = conninfo_to_dict(dsn)
    except Exception:  # a bad DSN: connect() says why; the message shows no part of it
        return "postgresql://(unparsed)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


def _session_key(session: str) -> int:
    """The second key of ``session``'s drain lock: a signed 32-bit integer."""
    value = zlib.crc32(session.encode("utf-8", "surrogatepass"))
    return value - (1 << 32) if value >= 1 << 31 else value


@final
class PostgresStore(SqlStore):
    """Approval queues and session grants in a PostgreSQL database, shared by any number of hosts.

    Ids stay sequential per session (each submit bumps the session's row in one statement), one process
    at a time drains a session (a session-level advisory lock, released by the server when the process's
    connection goes), claims are leased by the server's clock, and every change ``NOTIFY``s the channel
    ``ask_permissions`` with the session's name, so a ``wait`` in another process wakes at once
    (``LISTEN`` on a connection of its own, opened by the first wait). The tables are created if missing.

    A connection is checked before each use (a server that restarted has hung up on it: a new one is
    made), and a statement whose connection broke is tried once more on a new one where that is safe;
    a submit whose reply was lost finds out whether its row was written before it tries again.

    Thread-safe: one connection for the queues and grants, guarded by a lock; drain locks use
    connections of their own (a few are kept for reuse).

    Args:
        dsn: a libpq connection string or URL (``postgresql://user@host/db``); the extra
            ``ask-permissions[postgres]`` installs psycopg 3.
        lease: how long a claim outlives its process (renewed every third of it while alive).
        connect_timeout: seconds to wait for the server when connecting.

    Raises:
        ImportError: psycopg is not installed.
        CorruptStoreError: the database holds tables of another schema (version) under this package's names.
        StoreUnavailableError: the server cannot be reached, or refuses (psycopg's message kept).
    """

    _named: ClassVar[bool] = False
    _now_sql: ClassVar[str] = _NOW
    _notify_sql: ClassVar[str] = f", pg_notify('{CHANNEL}', :session)"

    def __init__(self, dsn: str, *, lease: timedelta = DEFAULT_LEASE, connect_timeout: float = 10.0) -> None:
        if not isinstance(dsn, str):
            raise TypeError(f"dsn: expected a connection string; got {type(dsn).__name__}")
        timeout = positive_seconds(connect_timeout, "connect_timeout")
        self._driver: Final = _psycopg()
        super().__init__(lease=lease, where=_describe(dsn))
        self._dsn: Final = dsn
        self._connect_timeout: Final = max(1, round(timeout))
        # A statement waits this long for a row another transaction holds, then fails: below the lease,
        # so that a resolution can be tried again within it.
        self._attempt_seconds = min(_LOCK_TIMEOUT, self._lease / 4)
        self._lock: Final = threading.Lock()
        self._statements["claim"] = render(_CLAIM, now=_NOW, notify="", named=False)
        self._statements["resolve"] = render(_RESOLVE, now=_NOW, notify="", named=False)
        self._idle_lock_connections: Final[list[psycopg.Connection[Any]]] = []
        self._pool_lock: Final = threading.Lock()
        self._connection: psycopg.Connection[Any] = self._connect()
        try:
            self._run(self._prepare, retry=True)
        except BaseException:
            self._connection.close()
            raise
        self._listener: threading.Thread | None = None
        self._listening: Final = threading.Event()
        self._listener_lock: Final = threading.Lock()

    def _prepare(self, execute: Execute) -> None:
        execute("SELECT pg_advisory_xact_lock(%(key)s)", {"key": _SCHEMA_LOCK})
        self._check_schema(execute)

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection, set up; ``StoreUnavailableError`` if the server cannot be had."""
        try:
            connection: psycopg.Connection[Any] = self._driver.connect(
                self._dsn, autocommit=True, connect_timeout=self._connect_timeout
            )
        except self._driver.Error as error:
            raise self._unavailable(error) from error
        try:
            connection.execute(f"SET lock_timeout = {max(1, round(self._attempt_seconds * 1000))}")
        except self._driver.Error as error:
            connection.close()
            raise self._unavailable(error) from error
        return connection

    def _usable(self) -> psycopg.Connection[Any]:
        """The main connection, or a new one if it broke or its server hung up. Locked."""
        connection = self._connection
        if connection.closed or connection.broken or _hung_up(connection):
            with contextlib.suppress(Exception):
                connection.close()
            self._connection = connection = self._connect()
        return connection

    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            for attempt in (1, 2):
                connection = self._usable()
                try:
                    cursor = connection.execute(sql, params)
                    rows = cursor.fetchall() if cursor.rownumber is not None else []
                except self._driver.Error as error:
                    # Every statement sent this way may run twice (see the templates): try it once more
                    # on a new connection if this one broke.
                    if attempt == 1 and _broke(connection):
                        continue
                    raise self._unavailable(error) from error
                self._troubled = False
                return rows
        raise AssertionError("unreachable")

    def _run(self, work: Callable[[Execute], _T], *, retry: bool) -> _T:
        with self._lock:
            for attempt in (1, 2):
                connection = self._usable()
                try:
                    with connection.transaction():
                        result = work(_executor(connection.cursor()))
                except self._driver.Error as error:
                    if attempt == 1 and retry and _broke(connection):
                        continue
                    raise self._unavailable(error) from error
                self._troubled = False
                return result
        raise AssertionError("unreachable")

    def _insert(self, session: str, row: dict[str, Any]) -> int:
        params = row | {"session": session, "lease": self._lease}
        with self._lock:
            connection = self._usable()  # fails before anything is sent: nothing was queued
            try:
                [(action_id, _)] = connection.execute(_INSERT, params).fetchall()
            except self._driver.Error as error:
                if not _broke(connection):
                    raise self._unavailable(error) from error
                return self._insert_again(params, error)
            self._troubled = False
            return int(action_id)

    def _insert_again(self, params: dict[str, Any], first: Exception) -> int:
        """The connection broke with the insert sent: find out whether it was written (by its mark), and
        insert it if not, while the lease lasts. Locked."""
        deadline = time.monotonic() + self._lease
        pause = RETRY_SECONDS
        error = first
        while time.monotonic() < deadline:
            try:
                connection = self._usable()
                found = connection.execute(_FIND_INSERT, params).fetchall()
                if found:
                    self._troubled = False
                    return int(found[0][0])
                [(action_id, _)] = connection.execute(_INSERT, params).fetchall()
            except (self._driver.Error, StoreUnavailableError) as failed:
                error = failed
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
                continue
            self._troubled = False
            return int(action_id)
        failure = self._unavailable(error)
        raise StoreUnavailableError(
            f"{failure}; the server could not be asked within the lease whether the call was queued",
            store=self._where,
        ) from error

    def _change(self, statement: str, session: str, params: dict[str, Any]) -> Action | None:
        # One statement, which also returns what it overwrote: a row that does not read is put back.
        put_back, old_names = _PUT_BACK[statement]
        rows = self._execute(self._statement(statement), params)
        if not rows:
            return None
        try:
            return decode_action(rows[0], session, self._where)
        except CorruptStoreError:
            old = dict(zip(old_names, rows[0][-len(old_names) :], strict=True))
            self._execute(put_back, params | old)
            raise

    def _columns(self, execute: Execute) -> set[str]:
        return {name for (name,) in execute(_COLUMNS, {})}

    def _delete(self, sql: str, params: dict[str, Any]) -> int:
        with self._lock:
            connection = self._usable()
            try:  # not tried again: the count of a second try would miss what the first deleted
                count = int(connection.execute(sql, params).rowcount)
            except self._driver.Error as error:
                raise self._unavailable(error) from error
            self._troubled = False
            return count

    def _notify(self, execute: Execute, session: str) -> None:
        execute(f"SELECT pg_notify('{CHANNEL}', %(session)s)", {"session": session})

    @contextlib.contextmanager
    def _drain_lock(self, session: str) -> Iterator[None]:
        with self._pool_lock:
            connection = self._idle_lock_connections.pop() if self._idle_lock_connections else None
        if connection is None or connection.closed or connection.broken or _hung_up(connection):
            if connection is not None:
                with contextlib.suppress(Exception):
                    connection.close()
            connection = self._connect()
        keys = {"one": _LOCK_CLASS, "two": _session_key(session)}
        try:
            connection.execute("SELECT pg_advisory_lock(%(one)s, %(two)s)", keys)
        except self._driver.Error as error:
            connection.close()
            raise self._unavailable(error) from error
        reusable = False
        try:
            yield
        finally:
            try:
                connection.execute("SELECT pg_advisory_unlock(%(one)s, %(two)s)", keys)
                reusable = True
            except self._driver.Error:
                pass  # the connection broke, and the lock went with it
            with self._pool_lock:
                if reusable and len(self._idle_lock_connections) < _IDLE_LOCK_CONNECTIONS:
                    self._idle_lock_connections.append(connection)
                    reusable = False
            if not reusable:
                with contextlib.suppress(Exception):
                    if connection not in self._idle_lock_connections:
                        connection.close()

    # -- noticing other processes' changes ---------------------------------------------------------------

    def watch(self) -> None:
        with self._listener_lock:
            if self._listener is None and not self._closed.is_set():
                self._listener = threading.Thread(
                    target=self._listen, name=f"ask_permissions listener {self._where}", daemon=True
                )
                self._listener.start()
        # Changes are noticed from LISTEN on: a waiter looks at its action only after that.
        self._listening.wait(self._connect_timeout + 5)

    def _listen(self) -> None:
        """``LISTEN`` on a connection of its own; each notification wakes that session's waiters."""
        while not self._closed.is_set():
            try:
                with self._connect() as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    self._changed_elsewhere(None)  # whatever happened while not listening
                    while not self._closed.is_set():
                        for notification in connection.notifies(timeout=0.5):
                            self._changed_elsewhere(notification.payload)
                        if self._troubled:  # a waiter's look failed: let it look again
                            self._changed_elsewhere(None)
            except Exception:
                # The server went away: waiters poll nothing meanwhile, so wake them to look, and retry.
                self._listening.set()
                self._changed_elsewhere(None)
                self._closed.wait(0.5)

    def close(self) -> None:
        """Stop the listener and the lease renewer, and close the connections."""
        self._closed.set()
        listener = self._listener
        if listener is not None:
            listener.join(5)
        super().close()
        with self._pool_lock:
            idle, self._idle_lock_connections[:] = list(self._idle_lock_connections), []
        for connection in idle:
            connection.close()
        with self._lock:
            self._connection.close()


def _executor(cursor: psycopg.Cursor[Any]) -> Execute:
    def execute(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.rownumber is not None else []

    return execute


def _broke(connection: psycopg.Connection[Any]) -> bool:
    """Whether an error came from the connection itself (the server went away), not from a statement."""
    return bool(connection.closed or connection.broken)


def _hung_up(connection: psycopg.Connection[Any]) -> bool:
    """Whether the server hung up on an idle connection: it has something to say (an idle connection
    that listens to nothing hears only that), and reading it leaves the connection bad. One poll, no
    round trip."""
    try:
        pgconn = connection.pgconn
        poller = select.poll()
        poller.register(pgconn.socket, select.POLLIN)
        if not poller.poll(0):
            return False
        pgconn.consume_input()
        return bool(pgconn.status != _OK)
    except Exception:  # the socket is gone, or the server closed it
        return True
