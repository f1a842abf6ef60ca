"""``PostgresStore``: approvals and grants in PostgreSQL, for many hosts (extra ``[postgres]``, psycopg 3)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import select
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar, final

from ask_permissions._errors import (
    CorruptStoreError,
    StoreError,
    StoreUnavailableError,
    SubmitOutcomeUnknownError,
)

from ._action import Action
from ._leases import RETRY_SECONDS
from ._sql import (
    CLAIMABLE,
    DEFAULT_LEASE,
    READ_COLUMNS,
    Execute,
    Inserted,
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
# "ASKC": the first key of the lock the main connection holds for its life, the second chosen at random.
# Whoever holds it is the server process that ran what the connection sent (see _end_holder).
_CONNECTION_LOCK: Final = 0x41534B43
_LOST_MEMORY: Final = 1000  # submits per session that could not tell, remembered until settled
_IDLE_LOCK_CONNECTIONS: Final = 4
_LOCK_TIMEOUT: Final = 5.0
_OK: Final = 0  # libpq's CONNECTION_OK
_T = TypeVar("_T")
_logger: Final = logging.getLogger("ask_permissions.stores")

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
_SETUP: Final = (
    "SELECT set_config('lock_timeout', %(lock_timeout)s, false), pg_try_advisory_lock(%(one)s, %(two)s)"
)
# Ends the server process that holds a connection's lock, and says whether one still holds it. Once none
# does, whatever that connection sent has committed or never will: the lock is released after the
# process's transaction is rolled back, as it exits.
_END_HOLDER: Final = (
    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND pid <> pg_backend_pid()"  # a new connection that drew the same key: the old holder is gone
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid::bigint = %(one)s AND objid::bigint = %(two)s AND objsubid = 2"
)
# What a call is, to tell a submit of it again: the columns the host gave (not when, nor the mark).
_CALL_COLUMNS: Final = ("tool_call_id", "tool_name", "args", "auto_approvable", "message", "why")
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
    made), and a statement whose connection broke is tried once more on a new one where that is safe.
    A submit whose reply was lost ends the server process that received its insert (it holds a lock
    of its connection's), looks for its row, and inserts it if it is not there, for up to
    ``lost_reply_timeout`` seconds; past that it raises ``SubmitOutcomeUnknownError``, and the store
    settles that insert before its next one into the session: a submit of the same call again returns
    the id the first one took, if it was written.

    Thread-safe: one connection for the queues and grants, guarded by a lock; drain locks use
    connections of their own (a few are kept for reuse).

    Args:
        dsn: a libpq connection string or URL (``postgresql://user@host/db``); the extra
            ``ask-permissions[postgres]`` installs psycopg 3.
        lease: how long a claim outlives its process (renewed every third of it while alive).
        connect_timeout: seconds to wait for the server when connecting.
        lost_reply_timeout: seconds a submit whose connection broke with its insert sent goes on asking
            the server whether the insert was written (reconnecting), before it raises
            ``SubmitOutcomeUnknownError``.

    Raises:
        ImportError: psycopg is not installed.
        CorruptStoreError: the database holds tables of another schema (version) under this package's names.
        StoreUnavailableError: the server cannot be reached, or refuses (psycopg's message kept).
    """

    _named: ClassVar[bool] = False
    _now_sql: ClassVar[str] = _NOW
    _notify_sql: ClassVar[str] = f", pg_notify('{CHANNEL}', :session)"

    def __init__(
        self,
        dsn: str,
        *,
        lease: timedelta = DEFAULT_LEASE,
        connect_timeout: float = 10.0,
        lost_reply_timeout: float = 60.0,
    ) -> None:
        if not isinstance(dsn, str):
            raise TypeError(f"dsn: expected a connection string; got {type(dsn).__name__}")
        timeout = positive_seconds(connect_timeout, "connect_timeout")
        self._lost_reply_timeout: Final = positive_seconds(lost_reply_timeout, "lost_reply_timeout")
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
        # The submits that could not tell whether their insert was written, by session. Locked.
        self._lost: Final[dict[str, list[_LostReply]]] = {}
        self._connection: psycopg.Connection[Any]
        self._connection, self._key = self._connect_main()
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
        return self._set_up(lambda connection: connection.execute(f"SET lock_timeout = {self._lock_ms}"))

    def _connect_main(self) -> tuple[psycopg.Connection[Any], int]:
        """A new connection for the queues and grants, and the key of the lock it holds for its life."""
        key = 0

        def hold_a_key(connection: psycopg.Connection[Any]) -> None:
            nonlocal key
            for _ in range(8):  # another connection holds one key in 2**31 by chance
                key = secrets.randbelow(1 << 31)
                params = {"lock_timeout": str(self._lock_ms), "one": _CONNECTION_LOCK, "two": key}
                [(_, held)] = connection.execute(_SETUP, params).fetchall()
                if held:
                    return
            raise self._driver.OperationalError("no free key for the connection's lock")

        return self._set_up(hold_a_key), key

    @property
    def _lock_ms(self) -> int:
        return max(1, round(self._attempt_seconds * 1000))

    def _set_up(self, setup: Callable[[psycopg.Connection[Any]], object]) -> psycopg.Connection[Any]:
        try:
            connection: psycopg.Connection[Any] = self._driver.connect(
                self._dsn, autocommit=True, connect_timeout=self._connect_timeout
            )
        except self._driver.Error as error:
            raise self._unavailable(error) from error
        try:
            setup(connection)
        except self._driver.Error as error:
            connection.close()
            raise self._unavailable(error) from error
        return connection

    def _usable(self) -> psycopg.Connection[Any]:
        """The main connection, or a new one if it broke or its server hung up. Locked.

        Raises:
            StoreClosedError: the store was closed.
        """
        self._refuse_if_released()
        connection = self._connection
        if connection.closed or connection.broken or _hung_up(connection):
            with contextlib.suppress(Exception):
                connection.close()
            self._connection, self._key = self._connect_main()
        return self._connection

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

    def _insert(self, session: str, row: dict[str, Any]) -> Inserted:
        params = row | {"session": session, "lease": self._lease}
        with self._lock:
            connection = self._usable()  # fails before anything is sent: nothing was queued
            try:
                settled = self._settle(connection, params)
            except self._driver.Error as error:
                raise self._unavailable(error) from error
            if settled is not None:
                self._troubled = False
                return settled
            sent_on = self._key
            try:
                [(action_id, _)] = connection.execute(_INSERT, params).fetchall()
            except self._driver.Error as error:
                if not _broke(connection):
                    raise self._unavailable(error) from error
                lost = error
            else:
                self._troubled = False
                return Inserted(int(action_id), params["submit_owner"])
        return self._insert_again(params, sent_on, lost)

    def _insert_again(self, params: dict[str, Any], sent_on: int, first: Exception) -> Inserted:
        """The connection holding the key ``sent_on`` broke with the insert sent. Until
        ``lost_reply_timeout``: end the server process that received it (then the insert has committed
        or never will), look for its row by its mark, and insert it if it is not there.

        Raises:
            SubmitOutcomeUnknownError: the server could not be asked in time, or the store was closed
                meanwhile; the insert is remembered.
            StoreUnavailableError: the insert was not written (a later try failed in its statement).
            StoreClosedError: the store was closed meanwhile, and the insert is known not written.
        """
        deadline = time.monotonic() + self._lost_reply_timeout
        closed = False
        unknown: int | None = sent_on  # the key of the connection whose insert may be written, if any
        error: BaseException = first
        pause = RETRY_SECONDS
        while True:
            with self._lock:
                connection, sending = None, False
                try:
                    connection = self._usable()
                    if unknown is not None:
                        self._end_holder(connection, unknown, deadline)
                        found = connection.execute(_FIND_INSERT, params).fetchall()
                        if found:
                            self._troubled = False
                            return self._found(connection, params, int(found[0][0]), params)
                        unknown = None
                    sending, sent_on = True, self._key
                    [(action_id, _)] = connection.execute(_INSERT, params).fetchall()
                    self._troubled = False
                    return Inserted(int(action_id), params["submit_owner"])
                except (self._driver.Error, StoreUnavailableError) as failed:
                    error = failed
                    if sending and connection is not None and _broke(connection):
                        unknown = sent_on
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # A close waits for the session's lock, which this submit holds: it gives up at once.
            if self._closed.wait(min(pause, left)):
                closed = True
                break
            pause = min(pause * 2, 1.0)
        if unknown is None:
            if closed:
                raise self._closed_error() from error
            raise StoreUnavailableError(
                f"{self._unavailable(error)}; the call was not queued", store=self._where
            ) from error
        # The package's errors name the store already; a driver's is named as every failure is.
        failure = error if isinstance(error, StoreError) else self._unavailable(error)
        session = params["session"]
        with self._lock:
            lost = self._lost.setdefault(session, [])
            lost.append(_LostReply(params, unknown))
            del lost[:-_LOST_MEMORY]
        asked, again = (
            (
                "the store was closed before the server could be asked",
                "Look for it before submitting it again",
            )
            if closed
            else (
                f"the server could not be asked within {self._lost_reply_timeout:g} s",
                "Submitted again on this store, the call is queued once",
            )
        )
        raise SubmitOutcomeUnknownError(
            f"{failure}; the connection broke with the insert sent, and {asked} whether it was written: "
            f"the submit may have queued the call. {again}",
            store=self._where,
            session=session,
        ) from error

    def _settle(self, connection: psycopg.Connection[Any], params: dict[str, Any]) -> Inserted | None:
        """Locked, before an insert: learn what became of the session's inserts whose submits could not
        tell; where the call ``params`` is if one of them wrote it.

        Raises:
            StoreUnavailableError: a server process that received such an insert did not end in time.
        """
        lost = self._lost.get(params["session"])
        if not lost:
            return None
        deadline = time.monotonic() + self._attempt_seconds
        call = _call_of(params)
        for entry in list(lost):
            if entry.unknown is not None:
                self._end_holder(connection, entry.unknown, deadline)
                found = connection.execute(_FIND_INSERT, entry.params).fetchall()
                entry.unknown = None
                if not found:
                    lost.remove(entry)
                    continue
                entry.queued = int(found[0][0])
                if _call_of(entry.params) != call:
                    _logger.warning(
                        "%s: action %s was queued by a submit that raised SubmitOutcomeUnknownError; it "
                        "stays pending, and a submit of the same call again returns its id",
                        self._where,
                        entry.queued,
                    )
            if entry.queued is not None and _call_of(entry.params) == call:
                lost.remove(entry)
                return self._found(connection, entry.params, entry.queued, params)
        return None

    def _found(
        self, connection: psycopg.Connection[Any], first: dict[str, Any], action_id: int, now: dict[str, Any]
    ) -> Inserted:
        """Locked: where the call is, written by the insert ``first`` and found for the submit ``now``;
        its ``on_submit`` mark is renewed at once if this submit runs one (the renewer renews it after)."""
        mark = first["submit_owner"]
        if now["submitting"]:
            params = {"session": now["session"], "id": action_id, "owner": mark, "lease": self._lease}
            with contextlib.suppress(self._driver.Error):  # else the renewer renews it, a little later
                connection.execute(self._statement("renew_submit"), params)
        return Inserted(action_id, mark, None if first is now else first["submitted_at"])

    def _end_holder(self, connection: psycopg.Connection[Any], key: int, deadline: float) -> None:
        """Locked: end the server process that holds the lock ``key`` of a connection that broke, and
        wait until it has gone.

        Raises:
            StoreUnavailableError: it is still there at ``deadline``, or the store is closing.
        """
        pause = 0.005
        params = {"one": _CONNECTION_LOCK, "two": key}
        while connection.execute(_END_HOLDER, params).fetchall():
            if time.monotonic() >= deadline or self._closed.wait(pause):
                raise self._unavailable(
                    RuntimeError("the server process of the connection that broke has not ended yet")
                )
            pause = min(pause * 2, 0.1)

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
        self.check_open()
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
                # Closing: the store closes the idle connections once, after it stopped new drains.
                kept = reusable and not self._closed.is_set()
                if kept and len(self._idle_lock_connections) < _IDLE_LOCK_CONNECTIONS:
                    self._idle_lock_connections.append(connection)
                else:
                    kept = False
            if not kept:
                with contextlib.suppress(Exception):
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

    def _wake_closed(self) -> None:
        self._listening.set()  # a watch that waits for the listener to begin: it never will
        super()._wake_closed()

    def _release(self) -> None:
        """Stop the listener, and close the connections (see ``SqlStore.close``)."""
        listener = self._listener
        if listener is not None:
            listener.join(5)
        with self._lock:
            self._released = True
            self._connection.close()
        with self._pool_lock:
            idle, self._idle_lock_connections[:] = list(self._idle_lock_connections), []
        for connection in idle:
            connection.close()


@dataclasses.dataclass(slots=True)
class _LostReply:
    """A submit's insert that it could not tell was written, until the store learns (``_settle``)."""

    params: dict[str, Any]
    unknown: int | None
    """The key of the connection that sent it, until its server process is known to have ended."""
    queued: int | None = None
    """Its id, once found written."""


def _call_of(params: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(params[name] for name in _CALL_COLUMNS)


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
