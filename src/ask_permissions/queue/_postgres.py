"""``PostgresStore``: approvals and grants in PostgreSQL, for many hosts (extra ``[postgres]``, psycopg 3)."""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

from ._sql import DEFAULT_LEASE, Execute, SqlStore, positive_seconds

if TYPE_CHECKING:
    import psycopg

__all__ = ["CHANNEL", "PostgresStore"]

CHANNEL: Final = "ask_permissions"
"""The ``LISTEN``/``NOTIFY`` channel: every change to a session notifies it, with the session's name."""

_NOW: Final = "extract(epoch from clock_timestamp())::float8"
_LOCK_CLASS: Final = 0x41534B50  # "ASKP": the first key of every drain lock, the second names the session
_SCHEMA_LOCK: Final = 0x41534B50_00000000  # held while a first connection creates the tables
_IDLE_LOCK_CONNECTIONS: Final = 4

_INSERT: Final = (
    "WITH s AS (INSERT INTO ask_permissions_sessions AS s (session, last_id) VALUES (%(session)s, 1)"
    " ON CONFLICT (session) DO UPDATE SET last_id = s.last_id + 1 RETURNING last_id),"
    " a AS (INSERT INTO ask_permissions_actions (session, id, tool_call_id, tool_name, args, auto_approvable,"
    " message, submitted_at, status, submit_owner, submit_until, why)"
    " SELECT %(session)s, s.last_id, %(tool_call_id)s, %(tool_name)s, %(args)s, %(auto_approvable)s,"
    " %(message)s, %(submitted_at)s, 'pending', %(submit_owner)s::text,"
    f" CASE WHEN %(submit_owner)s::text IS NULL THEN NULL ELSE {_NOW} + %(lease)s END, %(why)s FROM s"
    " RETURNING id)"
    f" SELECT a.id, pg_notify('{CHANNEL}', %(session)s) FROM a"
)
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
        psycopg.Error: the server cannot be reached, or refuses.
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
        self._lock: Final = threading.Lock()
        self._connection: psycopg.Connection[Any] = self._connect()
        try:
            with self._transaction() as execute:
                execute("SELECT pg_advisory_xact_lock(%(key)s)", {"key": _SCHEMA_LOCK})
                self._check_schema(execute)
        except BaseException:
            self._connection.close()
            raise
        self._idle_lock_connections: Final[list[psycopg.Connection[Any]]] = []
        self._pool_lock: Final = threading.Lock()
        self._listener: threading.Thread | None = None
        self._listening: Final = threading.Event()
        self._listener_lock: Final = threading.Lock()

    def _connect(self) -> psycopg.Connection[Any]:
        connection: psycopg.Connection[Any] = self._driver.connect(
            self._dsn, autocommit=True, connect_timeout=self._connect_timeout
        )
        return connection

    def _usable(self) -> psycopg.Connection[Any]:
        """The main connection; a broken one (the server restarted) is replaced. Locked."""
        if self._connection.broken or self._connection.closed:
            self._connection = self._connect()
        return self._connection

    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            cursor = self._usable().execute(sql, params)
            return cursor.fetchall() if cursor.description is not None else []

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Execute]:
        with self._lock:
            connection = self._usable()
            with connection.transaction():
                cursor = connection.cursor()

                def execute(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
                    cursor.execute(sql, params)
                    return cursor.fetchall() if cursor.description is not None else []

                yield execute

    def _insert(self, session: str, row: dict[str, Any]) -> int:
        params = row | {"session": session, "lease": self._lease}
        [(action_id, _)] = self._execute(_INSERT, params)
        return int(action_id)

    def _columns(self, execute: Execute) -> set[str]:
        return {name for (name,) in execute(_COLUMNS, {})}

    def _delete(self, sql: str, params: dict[str, Any]) -> int:
        with self._lock:
            return int(self._usable().execute(sql, params).rowcount)

    def _notify(self, execute: Execute, session: str) -> None:
        execute(f"SELECT pg_notify('{CHANNEL}', %(session)s)", {"session": session})

    @contextlib.contextmanager
    def _drain_lock(self, session: str) -> Iterator[None]:
        with self._pool_lock:
            connection = self._idle_lock_connections.pop() if self._idle_lock_connections else None
        if connection is None or connection.broken or connection.closed:
            connection = self._connect()
        keys = {"one": _LOCK_CLASS, "two": _session_key(session)}
        reusable = False
        try:
            connection.execute("SELECT pg_advisory_lock(%(one)s, %(two)s)", keys)
            try:
                yield
            finally:
                connection.execute("SELECT pg_advisory_unlock(%(one)s, %(two)s)", keys)
                reusable = True
        finally:
            with self._pool_lock:
                if reusable and len(self._idle_lock_connections) < _IDLE_LOCK_CONNECTIONS:
                    self._idle_lock_connections.append(connection)
                    connection = None
            if connection is not None:
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
