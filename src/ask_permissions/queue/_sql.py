"""What the database stores share: the schema, the statements, strict reading of rows, claims and leases.

Every column that holds a host's or a model's value holds it as JSON text (``args``, ``tool_call_id``,
``tool_name``, ``message``, ``feedback``, a grant's ``tool_name``): JSON escapes what a text column cannot
hold (NUL, a lone surrogate), so any value a queue accepts is stored as it is. Times of leases and
resolutions are seconds since the epoch (by the database's clock for PostgreSQL, this machine's for
SQLite). A row is read strictly: anything this package would not have written raises
``CorruptStoreError`` before any change is made on its account.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
import math
import re
import threading
import time
import uuid
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Final, NamedTuple, TypeAlias, TypeVar, final

from ask_permissions._errors import (
    CorruptStoreError,
    InvalidSnapshotError,
    ResolutionNotRecordedError,
    StoreClosedError,
    StoreUnavailableError,
    preview,
)
from ask_permissions._vocabulary import ACTION_STATUSES, SCOPES, AskExplanation, ResolutionScope

from ._action import Action, Resolution, check_decided_by
from ._action import resolved as resolved_action
from ._args import MAX_JSON_DEPTH, NotJSONError, read_json
from ._leases import RETRY_SECONDS, Leases, Recording, Renewals
from ._store import ApprovalStore, Claim, Head, LocalSession, QueueState, check_scopes, check_session
from ._why import read_why, why_data

__all__ = [
    "ACTION_COLUMNS",
    "CLAIMABLE",
    "DEFAULT_LEASE",
    "READ_COLUMNS",
    "SCHEMA_VERSION",
    "Execute",
    "Inserted",
    "SqlStore",
    "positive_seconds",
]

SCHEMA_VERSION: Final = "2"
"""The schema this version writes; ``MIGRATIONS`` upgrades each older one in place."""
DEFAULT_LEASE: Final = timedelta(seconds=30)
"""How long an applying action stays claimed by a process that stopped renewing it (it died)."""

Execute: TypeAlias = Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]
"""Runs one statement with named parameters; returns the rows it produced (none for most writes)."""
_T = TypeVar("_T")
_logger: Final = logging.getLogger("ask_permissions.stores")

ACTION_COLUMNS: Final = (
    "session",
    "id",
    "tool_call_id",
    "tool_name",
    "args",
    "auto_approvable",
    "message",
    "submitted_at",
    "status",
    "resolution_scope",
    "feedback",
    "resolved_at",
    "claim_token",
    "lease_until",
    "submit_owner",
    "submit_until",
    "why",
    "decided_by",
    "edited_args",
)
# What every read of an action returns, in this order, followed by the database's now.
_READ: Final = (
    "id, tool_call_id, tool_name, args, auto_approvable, message, submitted_at, status, "
    "resolution_scope, feedback, lease_until, submit_owner, submit_until, why, decided_by, edited_args, "
    "resolved_at"
)
_NOW_AT: Final = 17  # where the database's now follows a read's columns
READ_COLUMNS: Final = _READ
_PENDING_OR_LAPSED: Final = "(status = 'pending' OR (status = 'applying' AND lease_until < {now}))"
CLAIMABLE: Final = (
    f"(status IN ('pending', 'applying') AND {_PENDING_OR_LAPSED}"
    " OR (status = 'applying' AND claim_token = :token))"
)

SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS ask_permissions_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ask_permissions_sessions (session TEXT PRIMARY KEY, last_id BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ask_permissions_actions ("
    " session TEXT NOT NULL, id BIGINT NOT NULL, tool_call_id TEXT, tool_name TEXT NOT NULL,"
    " args TEXT NOT NULL, auto_approvable BOOLEAN NOT NULL, message TEXT, submitted_at TEXT NOT NULL,"
    " status TEXT NOT NULL, resolution_scope TEXT, feedback TEXT, resolved_at DOUBLE PRECISION,"
    " claim_token TEXT, lease_until DOUBLE PRECISION, submit_owner TEXT, submit_until DOUBLE PRECISION,"
    " why TEXT, decided_by TEXT, edited_args TEXT,"
    " PRIMARY KEY (session, id))",
    "CREATE TABLE IF NOT EXISTS ask_permissions_grants ("
    " session TEXT NOT NULL, tool_name TEXT NOT NULL, PRIMARY KEY (session, tool_name))",
    "CREATE TABLE IF NOT EXISTS ask_permissions_hosts ("
    " session TEXT PRIMARY KEY, scopes TEXT NOT NULL, recorded_at DOUBLE PRECISION NOT NULL)",
)
"""The tables: one row per session (its last id), per action, per granted tool of a session, and per
session whose agent's host said which answers it honours."""
MIGRATIONS: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    # schema version -> (the version it becomes, the statements that upgrade it, in one transaction)
    "1": (
        "2",
        (
            # Why an action waits, who resolved it, and the arguments a person's edit approved.
            "ALTER TABLE ask_permissions_actions ADD COLUMN why TEXT",
            "ALTER TABLE ask_permissions_actions ADD COLUMN decided_by TEXT",
            "ALTER TABLE ask_permissions_actions ADD COLUMN edited_args TEXT",
            # The answers each session's agent's host honours (CREATE TABLE above made it already).
        ),
    ),
}
"""The in-place upgrades of older schemas: each step runs in the transaction that opens the store, so a
database is either upgraded whole or not at all, and one opener at a time upgrades it."""
INDEXES: Final = (
    # The unresolved actions in id order (the head, the pending list), resolved ones by resolution time
    # (forget_resolved), and unresolved ones by call id (pending_for_call): no read walks the history.
    "CREATE INDEX IF NOT EXISTS ask_permissions_unresolved ON ask_permissions_actions (session, id)"
    " WHERE status IN ('pending', 'applying')",
    "CREATE INDEX IF NOT EXISTS ask_permissions_resolved ON ask_permissions_actions (session, resolved_at)"
    " WHERE status IN ('approved', 'rejected')",
    "CREATE INDEX IF NOT EXISTS ask_permissions_unresolved_calls ON ask_permissions_actions"
    " (session, tool_call_id) WHERE status IN ('pending', 'applying')",
    "CREATE INDEX IF NOT EXISTS ask_permissions_rejected_calls ON ask_permissions_actions"
    " (session, tool_call_id) WHERE status = 'rejected'",
)

_TEMPLATES: Final = {
    "get": f"SELECT {_READ}, {{now}} FROM ask_permissions_actions WHERE session = :session AND id = :id",
    "pending": f"SELECT {_READ}, {{now}} FROM ask_permissions_actions"
    f" WHERE session = :session AND status IN ('pending', 'applying') AND {_PENDING_OR_LAPSED} ORDER BY id",
    "for_call": f"SELECT {_READ}, {{now}} FROM ask_permissions_actions"
    " WHERE session = :session AND tool_call_id = :call AND status IN ('pending', 'applying')"
    f" AND {_PENDING_OR_LAPSED} ORDER BY id",
    "rejected_for_call": f"SELECT {_READ}, {{now}} FROM ask_permissions_actions"
    " WHERE session = :session AND tool_call_id = :call AND status = 'rejected' ORDER BY id",
    "head": "SELECT id, tool_name, auto_approvable, submit_owner, submit_until, {now}"
    " FROM ask_permissions_actions"
    f" WHERE session = :session AND status IN ('pending', 'applying') AND {_PENDING_OR_LAPSED}"
    " ORDER BY id LIMIT 1",
    "counts": "SELECT (SELECT count(*) FROM ask_permissions_actions WHERE session = :session"
    f" AND status IN ('pending', 'applying') AND {_PENDING_OR_LAPSED}),"
    " (SELECT last_id FROM ask_permissions_sessions WHERE session = :session)",
    # A claim matches its own token too, and a resolved row keeps the token of the claim that resolved it:
    # a statement tried again after its connection broke finds what the first try did.
    "claim": "UPDATE ask_permissions_actions SET status = 'applying', claim_token = :token,"
    " lease_until = {now} + :lease, resolution_scope = :scope, feedback = :feedback,"
    " decided_by = :decided_by, edited_args = :edited_args"
    f" WHERE session = :session AND id = :id AND {CLAIMABLE} RETURNING {_READ}, {{now}}",
    # The row was read whole when claimed: the finish returns only that it matched.
    "finish": "UPDATE ask_permissions_actions SET status = :status, lease_until = NULL,"
    " resolved_at = :resolved_at"
    " WHERE session = :session AND id = :id AND status = 'applying' AND claim_token = :token"
    " RETURNING id{notify}",
    "finished": "SELECT id FROM ask_permissions_actions"
    " WHERE session = :session AND id = :id AND status = :status AND claim_token = :token",
    # Approve or reject in one statement, for a resolution with no callback to run in between.
    "resolve": "UPDATE ask_permissions_actions SET status = :status, claim_token = :token,"
    " lease_until = NULL, resolution_scope = :scope, feedback = :feedback, resolved_at = :resolved_at,"
    " decided_by = :decided_by, edited_args = :edited_args"
    f" WHERE session = :session AND id = :id AND {CLAIMABLE} RETURNING {_READ}, {{now}}{{notify}}",
    "get_claimed": f"SELECT {_READ}, {{now}}, claim_token FROM ask_permissions_actions"
    " WHERE session = :session AND id = :id",
    "release": "UPDATE ask_permissions_actions SET status = 'pending', claim_token = NULL,"
    " lease_until = NULL, resolution_scope = NULL, feedback = NULL, decided_by = NULL, edited_args = NULL"
    " WHERE session = :session AND id = :id AND status = 'applying' AND claim_token = :token"
    " RETURNING id{notify}",
    "end_submit": "UPDATE ask_permissions_actions SET submit_owner = NULL, submit_until = NULL"
    " WHERE session = :session AND id = :id AND submit_owner = :owner",
    "renew_claim": "UPDATE ask_permissions_actions SET lease_until = {now} + :lease"
    " WHERE session = :session AND id = :id AND claim_token = :token AND status = 'applying' RETURNING id",
    "renew_submit": "UPDATE ask_permissions_actions SET submit_until = {now} + :lease"
    " WHERE session = :session AND id = :id AND submit_owner = :owner",
    # Locks the session's row (made if missing) for the rest of the transaction, and reads its last id as
    # last committed: concurrent restores into one session, and submits, wait for each other here.
    "lock_session": "INSERT INTO ask_permissions_sessions (session, last_id) VALUES (:session, 0)"
    " ON CONFLICT (session) DO UPDATE SET last_id = ask_permissions_sessions.last_id RETURNING last_id",
    "has_actions": "SELECT 1 FROM ask_permissions_actions WHERE session = :session LIMIT 1",
    "set_last_id": "INSERT INTO ask_permissions_sessions (session, last_id) VALUES (:session, :last_id)"
    " ON CONFLICT (session) DO UPDATE SET last_id = :last_id",
    "restore": "INSERT INTO ask_permissions_actions"
    " (session, id, tool_call_id, tool_name, args, auto_approvable, message, submitted_at, status, why)"
    " VALUES (:session, :id, :tool_call_id, :tool_name, :args, :auto_approvable, :message, :submitted_at,"
    " 'pending', :why)",
    "forget": "DELETE FROM ask_permissions_actions WHERE session = :session"
    " AND status IN ('approved', 'rejected') AND resolved_at < :cutoff{keep}",
    "grant": "INSERT INTO ask_permissions_grants (session, tool_name) VALUES (:session, :name)"
    " ON CONFLICT (session, tool_name) DO NOTHING",
    "revoke": "DELETE FROM ask_permissions_grants WHERE session = :session AND tool_name = :name",
    "revoke_all": "DELETE FROM ask_permissions_grants WHERE session = :session",
    "is_granted": "SELECT 1 FROM ask_permissions_grants WHERE session = :session AND tool_name = :name",
    "granted": "SELECT tool_name FROM ask_permissions_grants WHERE session = :session",
    "sessions": "SELECT session FROM ask_permissions_sessions ORDER BY session",
    "sessions_with": "SELECT session FROM ask_permissions_actions WHERE id = :id ORDER BY session",
    "resolved": f"SELECT session, {_READ}, {{now}} FROM ask_permissions_actions"
    " WHERE status IN ('approved', 'rejected') ORDER BY resolved_at DESC, id DESC LIMIT :limit",
    "resolved_in": f"SELECT session, {_READ}, {{now}} FROM ask_permissions_actions"
    " WHERE session = :session AND status IN ('approved', 'rejected') ORDER BY resolved_at DESC, id DESC"
    " LIMIT :limit",
    "all_pending": f"SELECT session, {_READ}, {{now}} FROM ask_permissions_actions"
    f" WHERE status IN ('pending', 'applying') AND {_PENDING_OR_LAPSED} ORDER BY session, id",
    "record_scopes": "INSERT INTO ask_permissions_hosts (session, scopes, recorded_at)"
    " VALUES (:session, :scopes, {now})"
    " ON CONFLICT (session) DO UPDATE SET scopes = :scopes, recorded_at = {now}",
    "honoured_scopes": "SELECT scopes FROM ask_permissions_hosts WHERE session = :session",
    "columns_meta": "SELECT value FROM ask_permissions_meta WHERE name = 'schema_version'",
    "set_meta": "INSERT INTO ask_permissions_meta (name, value) VALUES ('schema_version', :version)"
    " ON CONFLICT (name) DO NOTHING",
    "upgrade_meta": "UPDATE ask_permissions_meta SET value = :version WHERE name = 'schema_version'",
}
_NAME: Final = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


def render(template: str, *, now: str, notify: str, keep: str = "", named: bool) -> str:
    """A statement for one database: ``{now}`` its clock, ``:name`` its parameter style."""
    text = template.format(now=now, notify=notify, keep=keep)
    return text if named else _NAME.sub(r"%(\1)s", text)


def _where(store: str, session: str, action_id: object) -> str:
    return f"{store}: ask_permissions_actions[session={preview(session)}, id={preview(action_id)}]"


def corrupt(path: str, expected: str, value: object) -> CorruptStoreError:
    """The error for a value this package would not have written."""
    return CorruptStoreError(f"{path}: expected {expected}; got {preview(value)}", path=path, value=value)


@final
class _Row:
    """Where a row came from, for the error that names it (the path is built only then)."""

    __slots__ = ("action_id", "session", "store")

    def __init__(self, store: str, session: str, action_id: object) -> None:
        self.store, self.session, self.action_id = store, session, action_id

    def bad(self, column: str, expected: str, value: object) -> CorruptStoreError:
        return corrupt(f"{_where(self.store, self.session, self.action_id)}.{column}", expected, value)

    def json(self, raw: object, column: str) -> object:
        if isinstance(raw, str):
            try:
                return json.loads(raw)
            except (ValueError, RecursionError):
                pass
        raise self.bad(column, "JSON text", raw)

    def text(self, raw: object, column: str) -> str:
        """A JSON-encoded text column's non-empty string."""
        plain = _plain_string(raw)
        if plain:
            return plain
        value = self.json(raw, column)
        if not isinstance(value, str) or not value:
            raise self.bad(column, "a non-empty JSON string", raw)
        return value

    def optional_text(self, raw: object, column: str) -> str | None:
        """A JSON-encoded text column's string, or None."""
        if raw is None:
            return None
        value = self.json(raw, column)
        if not isinstance(value, str):
            raise self.bad(column, "a JSON string", raw)
        return value


def _plain_string(raw: object) -> str | None:
    """The string a JSON string literal without escapes holds (most names are), without parsing JSON."""
    if isinstance(raw, str) and len(raw) >= 2 and raw[0] == raw[-1] == '"':
        inner = raw[1:-1]
        if "\\" not in inner and '"' not in inner:
            return inner
    return None


def text_column(text: str | None) -> str | None:
    """How a text column holds ``text`` (see the module's docstring)."""
    return None if text is None else json.dumps(text)


def decode_action(row: Sequence[Any], session: str, store: str) -> Action:
    """The ``Action`` a row holds, as of the database's now (a claim whose lease lapsed reads pending).

    Raises:
        CorruptStoreError: anything ``insert``, ``claim``, ``finish`` or ``release`` would not have written.
    """
    (action_id, call_id, tool_name, args, auto, message, submitted, status, scope, feedback, lease) = row[:11]
    now = row[_NOW_AT]
    where = _Row(store, session, action_id)
    if type(action_id) is not int or not 0 < action_id < 2**63:
        raise where.bad("id", "a positive integer", action_id)
    if call_id is not None:
        call_id = where.json(call_id, "tool_call_id")
        if isinstance(call_id, bool) or not isinstance(call_id, str | int):
            raise where.bad("tool_call_id", "a JSON string or integer", call_id)
    name = where.text(tool_name, "tool_name")
    parsed = where.json(args, "args")
    try:
        frozen = read_json(parsed, "args")
    except InvalidSnapshotError:  # JSON past what a snapshot holds
        raise where.bad("args", f"JSON nested at most {MAX_JSON_DEPTH} deep", args) from None
    if auto not in (0, 1) or isinstance(auto, float):  # SQLite keeps 0 and 1, PostgreSQL booleans
        raise where.bad("auto_approvable", "true or false", auto)
    text = where.optional_text(message, "message")
    try:
        submitted_at = datetime.fromisoformat(submitted)
    except (TypeError, ValueError):
        raise where.bad("submitted_at", "an ISO 8601 timestamp", submitted) from None
    if submitted_at.tzinfo is None:
        raise where.bad("submitted_at", "a timestamp with its UTC offset", submitted)
    if status not in ACTION_STATUSES:
        raise where.bad("status", "one of " + ", ".join(ACTION_STATUSES), status)
    if scope is not None and scope not in SCOPES:
        raise where.bad("resolution_scope", "one of " + ", ".join(SCOPES) + " or null", scope)
    said = where.optional_text(feedback, "feedback")
    if status in ("pending", "rejected") and scope is not None:
        raise where.bad("resolution_scope", f"null for a {status} action", scope)
    if status == "pending" and said is not None:
        raise where.bad("feedback", "null for a pending action", said)
    if status == "approved" and (scope is None or said is not None):
        raise where.bad("resolution_scope", "a scope, and no feedback, for an approval", scope)
    why, decided_by, edited, resolved_at = _decode_answer(where, status, row[13:_NOW_AT])
    if status == "applying":
        if not isinstance(lease, int | float) or isinstance(lease, bool):
            raise where.bad("lease_until", "the claim's lease (seconds)", lease)
        if lease < now:  # the claiming process stopped renewing it: pending again
            status, scope, said, decided_by, edited = "pending", None, None, None, None
    return Action(
        id=action_id,
        tool_call_id=call_id,
        tool_name=name,
        args=frozen,
        auto_approvable=bool(auto),
        status=status,
        submitted_at=submitted_at,
        message=text,
        resolution_scope=scope,
        feedback=said,
        why=why,
        decided_by=decided_by,
        resolved_at=resolved_at,
        edited_args=edited,
    )


def _decode_answer(
    where: _Row, status: str, raw: Sequence[Any]
) -> tuple[AskExplanation | None, str | None, object, datetime | None]:
    """The columns schema 2 added (why the action waits, who resolved it, the edit), and when it resolved."""
    why_raw, decider_raw, edited_raw, resolved_raw = raw
    why = None
    if why_raw is not None:
        try:
            why = read_why(where.json(why_raw, "why"))
        except NotJSONError as error:
            raise where.bad("why", f"an explanation ({error.path}: {error.expected})", why_raw) from None
    decided_by = where.optional_text(decider_raw, "decided_by")
    if decided_by is not None:
        try:
            check_decided_by(decided_by)
        except ValueError:
            raise where.bad("decided_by", "a name of 1 to 200 printable characters", decided_by) from None
    edited = None
    if edited_raw is not None:
        parsed_edit = where.json(edited_raw, "edited_args")
        if not isinstance(parsed_edit, dict):
            raise where.bad("edited_args", "a JSON object", edited_raw)
        try:
            edited = read_json(parsed_edit, "edited_args")
        except InvalidSnapshotError:
            raise where.bad("edited_args", f"JSON nested at most {MAX_JSON_DEPTH} deep", edited_raw) from None
    if status == "pending" and (decided_by is not None or edited is not None):
        raise where.bad("decided_by", "null, with edited_args, for a pending action", decided_by)
    if status == "rejected" and edited is not None:
        raise where.bad("edited_args", "null for a rejected action", edited_raw)
    resolved_at = None
    if status in ("approved", "rejected"):
        if not isinstance(resolved_raw, int | float) or isinstance(resolved_raw, bool):
            raise where.bad("resolved_at", "the resolution's time (seconds)", resolved_raw)
        try:
            resolved_at = datetime.fromtimestamp(resolved_raw, UTC)
        except (ValueError, OverflowError, OSError):
            raise where.bad("resolved_at", "the resolution's time (seconds)", resolved_raw) from None
    return why, decided_by, edited, resolved_at


class _Head(NamedTuple):
    id: int
    tool_name: str
    auto_approvable: bool


def decode_head(row: Sequence[Any], session: str, store: str) -> Head:
    """What the drain needs of the head's row, read as strictly as ``decode_action`` reads it."""
    action_id, tool_name, auto = row[:3]
    where = _Row(store, session, action_id)
    if type(action_id) is not int or not 0 < action_id < 2**63:
        raise where.bad("id", "a positive integer", action_id)
    name = where.text(tool_name, "tool_name")
    if auto not in (0, 1) or isinstance(auto, float):
        raise where.bad("auto_approvable", "true or false", auto)
    return _Head(action_id, name, bool(auto))


def _json_text(value: object) -> str:
    """Arguments as a JSON column holds them (the queue checked that they are JSON)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def encode_action(action: Action) -> dict[str, Any]:
    """The columns of a new pending row (the queue checked, at submit, that they can be written)."""
    return {
        "id": action.id,
        "tool_call_id": None if action.tool_call_id is None else json.dumps(action.tool_call_id),
        "tool_name": text_column(action.tool_name),
        "args": _json_text(action.args),
        "auto_approvable": action.auto_approvable,
        "message": text_column(action.message),
        "submitted_at": action.submitted_at.isoformat(),
        "why": None if action.why is None else json.dumps(why_data(action.why)),
    }


class Inserted(NamedTuple):
    """Where a submit's call is: the row an insert wrote, or one a submit of the same call wrote before
    and could not tell of (see ``SubmitOutcomeUnknownError``)."""

    action_id: int
    mark: str
    """The row's ``submit_owner``: the mark of the insert that wrote it."""
    submitted_at: str | None = None
    """When that earlier submit was made (as the row holds it), if it is not this one."""


class SqlStore(ApprovalStore):
    """A store in a database: what SQLite and PostgreSQL share (see ``SqliteStore``, ``PostgresStore``).

    Claims carry a random token and a lease that a thread of the claiming store renews until the
    resolution is recorded; a claim whose lease ran out (its process died, or stopped) reads as pending
    again, and the late process's finish, whose token no longer matches, changes nothing
    (``ClaimLostError``). A recording that fails is tried again within the lease; past it the claim is
    kept and the recording deferred (``ResolutionNotRecordedError``). Every driver error is raised as
    ``StoreUnavailableError`` (or ``CorruptStoreError``), its message kept.
    """

    durable: ClassVar[bool] = True
    _named: ClassVar[bool]
    _now_sql: ClassVar[str]
    _notify_sql: ClassVar[str] = ""

    def __init__(self, *, lease: timedelta, where: str) -> None:
        super().__init__()
        if not isinstance(lease, timedelta):
            raise TypeError(f"lease: expected a timedelta; got {preview(lease)}")
        if lease <= timedelta(0):
            raise ValueError(f"lease: expected a positive timedelta; got {lease!r}")
        self._lease: Final = lease.total_seconds()
        self._where: Final = where
        self._owner: Final = uuid.uuid4().hex  # tells this store's submissions from other processes'
        self._marks: Final = itertools.count(1)  # with the owner, names each insert (see _SqlQueue.insert)
        self._statements: Final = {
            name: render(template, now=self._now_sql, notify=self._notify_sql, named=self._named)
            for name, template in _TEMPLATES.items()
        }
        self._leases: Final = Leases(
            self._lease,
            Renewals(self._renew_claim, self._renew_submit, self._record, self._changed_elsewhere),
            where,
        )
        # Set when an operation failed for the database, cleared when one succeeds: while set, the
        # store's watcher wakes the waiters now and then, to look again.
        self._troubled = False
        self._attempt_seconds = 0.0  # how long one attempt at a statement may block (a store sets it)
        # Closing (see close): the resolutions under way, counted by thread from before their claim to
        # their recording or release, which close waits for; whether the last of them is to finish
        # closing (close was called from one of their callbacks); and whether the connections are
        # released, after which every statement raises StoreClosedError. The gate guards the first two,
        # the store's statement lock the third.
        self._gate: Final = threading.Condition(threading.Lock())
        self._under_way: Final[Counter[int]] = Counter()
        self._close_when_done = False
        self._released = False

    @property
    def lease(self) -> timedelta:
        """How long a claim outlives the last renewal by its process."""
        return timedelta(seconds=self._lease)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._where}>"

    # -- what each database provides ---------------------------------------------------------------------

    @abstractmethod
    def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run one statement on its own (autocommit); its rows. The statement may be tried twice.

        Raises:
            StoreUnavailableError: the database failed (its message kept).
        """

    @abstractmethod
    def _run(self, work: Callable[[Execute], _T], *, retry: bool) -> _T:
        """``work(execute)`` in a write transaction: committed when it returns, rolled back if it raises.

        ``retry``: the work may run again on a new connection if the first one broke.

        Raises:
            StoreUnavailableError: the database failed (its message kept); nothing was committed, unless
                the connection broke during the commit itself.
        """

    @abstractmethod
    def _insert(self, session: str, row: dict[str, Any]) -> Inserted:
        """Insert a new pending action with the session's next id (atomically); where it is.

        Raises:
            StoreUnavailableError: nothing was inserted.
            SubmitOutcomeUnknownError: (PostgreSQL) whether it was inserted could not be found out.
        """

    @abstractmethod
    def _columns(self, execute: Execute) -> set[str]:
        """The columns the database's ``ask_permissions_actions`` table has."""

    @abstractmethod
    def _delete(self, sql: str, params: dict[str, Any]) -> int:
        """Run a ``DELETE`` on its own; how many rows it deleted."""

    @abstractmethod
    def _drain_lock(self, session: str) -> contextlib.AbstractContextManager[None]:
        """The lock one process at a time holds to drain ``session``; released if the process dies."""

    def _notify(self, execute: Execute, session: str) -> None:
        """Within a transaction: tell other processes' watchers that ``session`` changed."""
        return

    def _statement(self, name: str) -> str:
        return self._statements[name]

    def _now(self) -> float:
        """This machine's clock, for the databases whose statements take it as ``:now``."""
        return time.time()

    def _check_schema(self, execute: Execute) -> None:
        """Create the tables if missing (inside the caller's transaction), and refuse foreign ones."""
        for statement in SCHEMA:
            execute(statement, {})
        execute(self._statement("set_meta"), {"version": SCHEMA_VERSION})
        [(version,)] = execute(self._statement("columns_meta"), {})
        while version in MIGRATIONS:  # a database made by an earlier version: upgrade it in place
            old = version
            version, steps = MIGRATIONS[old]
            for statement in steps:
                try:
                    execute(statement, {})
                except Exception as error:  # the driver's: the table is not as schema `old` left it
                    raise corrupt(
                        f"{self._where}: ask_permissions_meta.schema_version",
                        f"the tables schema {old} has, to upgrade them to {version} (the step "
                        f"{statement!r} failed: {' '.join(str(error).split())})",
                        old,
                    ) from error
            execute(self._statement("upgrade_meta"), {"version": version})
        if version != SCHEMA_VERSION:
            raise corrupt(
                f"{self._where}: ask_permissions_meta.schema_version",
                f"{SCHEMA_VERSION} (this version of ask_permissions reads schema {SCHEMA_VERSION})",
                version,
            )
        columns = self._columns(execute)
        if columns != set(ACTION_COLUMNS):
            raise corrupt(
                f"{self._where}: ask_permissions_actions",
                "the columns ask_permissions writes (" + ", ".join(ACTION_COLUMNS) + ")",
                sorted(columns),
            )
        for statement in INDEXES:
            execute(statement, {})

    # -- the store ---------------------------------------------------------------------------------------

    def queue_state(self, session: str) -> QueueState:
        return _SqlQueue(self, session)

    def grant(self, session: str, names: Iterable[str]) -> None:
        rows = [{"session": session, "name": text_column(name)} for name in names]
        if len(rows) == 1:  # the usual grant: one statement is its own transaction
            self._execute(self._statement("grant"), rows[0])
            return

        def work(execute: Execute) -> None:
            for row in rows:
                execute(self._statement("grant"), row)

        self._run(work, retry=True)

    def revoke(self, session: str, name: str) -> None:
        self._execute(self._statement("revoke"), {"session": session, "name": text_column(name)})

    def replace_grants(self, session: str, names: Iterable[str]) -> None:
        rows = [{"session": session, "name": text_column(name)} for name in set(names)]

        def work(execute: Execute) -> None:
            execute(self._statement("revoke_all"), {"session": session})
            for row in rows:
                execute(self._statement("grant"), row)

        self._run(work, retry=True)

    def is_granted(self, session: str, name: str) -> bool:
        params = {"session": session, "name": text_column(name)}
        return bool(self._execute(self._statement("is_granted"), params))

    def granted(self, session: str) -> list[str]:
        names = []
        for (raw,) in self._execute(self._statement("granted"), {"session": session}):
            name = _plain_string(raw)
            if name is None:
                try:
                    name = json.loads(raw) if isinstance(raw, str) else None
                except (ValueError, RecursionError):
                    name = None
            if not isinstance(name, str) or not name:
                path = f"{self._where}: ask_permissions_grants[session={preview(session)}].tool_name"
                raise corrupt(path, "a non-empty JSON string", raw)
            names.append(name)
        return sorted(names)

    def record_scopes(self, session: str, scopes: Mapping[ResolutionScope, str]) -> None:
        text = json.dumps(check_scopes(scopes))
        self._execute(
            self._statement("record_scopes"), {"session": session, "scopes": text, "now": self._now()}
        )

    def honoured_scopes(self, session: str) -> dict[ResolutionScope, str] | None:
        rows = self._execute(self._statement("honoured_scopes"), {"session": session})
        if not rows:
            return None
        raw = rows[0][0]
        try:
            return check_scopes(json.loads(raw) if isinstance(raw, str) else raw)
        except (TypeError, ValueError, RecursionError):
            path = f"{self._where}: ask_permissions_hosts[session={preview(session)}].scopes"
            raise corrupt(path, "a JSON object of scope to description, with once", raw) from None

    def sessions(self) -> list[str]:
        return [self._session_name(session) for (session,) in self._execute(self._statement("sessions"), {})]

    def all_pending(self) -> list[tuple[str, Action]]:
        rows = self._execute(self._statement("all_pending"), {"now": self._now()})
        return [
            (session, decode_action(row[1:], session, self._where))
            for row in rows
            for session in (self._session_name(row[0]),)
        ]

    def sessions_with(self, action_id: int) -> list[str]:
        if not 0 < action_id < 2**63:
            return []
        rows = self._execute(self._statement("sessions_with"), {"id": action_id})
        return [self._session_name(session) for (session,) in rows]

    def resolved_actions(self, session: str | None = None, limit: int = 100) -> list[tuple[str, Action]]:
        params: dict[str, Any] = {"limit": max(0, int(limit)), "now": self._now()}
        if session is None:
            rows = self._execute(self._statement("resolved"), params)
        else:
            rows = self._execute(self._statement("resolved_in"), params | {"session": session})
        return [
            (name, decode_action(row[1:], name, self._where))
            for row in rows
            for name in (self._session_name(row[0]),)
        ]

    def _session_name(self, value: object) -> str:
        """A session name as read back; ``CorruptStoreError`` for anything ``check_session`` refuses."""
        try:
            return check_session(value)
        except (TypeError, ValueError):
            raise corrupt(
                f"{self._where}: ask_permissions_sessions.session", "a session name", value
            ) from None

    def close(self) -> None:
        """Refuse new work at once (submits, claims, drains and waits raise ``StoreClosedError``) and wake
        the waiters with it; wait for the resolutions other threads have under way (their callbacks
        running) to be recorded; record what waits to be recorded (see ``Leases.flush``); stop renewing,
        and release the connections, after which every operation raises ``StoreClosedError``.

        Called from a callback of this store, it does not wait for that resolution: the store finishes
        closing, in a thread of its own, once it is recorded. Closing a closed store does nothing.
        """
        me = threading.get_ident()
        with self._gate:
            if self._closed.is_set():
                return
            self._closed.set()
        self._wake_closed()
        with self._gate:
            self._gate.wait_for(lambda: self._under_way.keys() <= {me})
            self._close_when_done = me in self._under_way
            if self._close_when_done:
                return
        self._finish_closing()

    def _finish_closing(self) -> None:
        self._leases.flush()
        self._leases.close()
        self._release()

    @abstractmethod
    def _release(self) -> None:
        """Stop the store's threads and close its connections; from then on every statement raises
        ``StoreClosedError`` (see ``_refuse_if_released``)."""

    def _refuse_if_released(self) -> None:
        """With the statement lock held: ``StoreClosedError`` once the connections are released."""
        if self._released:
            raise self._closed_error()

    def _begin_resolution(self) -> None:
        """Before a claim: count a resolution under way in this thread (``close`` waits for it).

        Raises:
            StoreClosedError: the store is closing or closed.
        """
        with self._gate:
            self.check_open()
            self._under_way[threading.get_ident()] += 1

    def _end_resolution(self) -> None:
        """The resolution this thread began is over: recorded, released, deferred, lost or never claimed.
        The last one of a store closed from a callback finishes the closing, in a thread of its own (this
        one holds the session's lock, which the store's threads take as they stop)."""
        me = threading.get_ident()
        with self._gate:
            self._under_way[me] -= 1
            if not self._under_way[me]:
                del self._under_way[me]
            self._gate.notify_all()
            last = self._close_when_done and not self._under_way
            if last:
                self._close_when_done = False
        if last:
            threading.Thread(
                target=self._finish_closing, name=f"ask_permissions closer {self._where}", daemon=True
            ).start()

    def _name(self) -> str:
        return self._where

    # -- claims, their leases and their recording ------------------------------------------------------

    def _unavailable(self, error: BaseException) -> StoreUnavailableError:
        """The package's error for a database's failure: its message kept, on one line."""
        self._troubled = True
        message = " ".join(str(error).split()) or type(error).__name__
        return StoreUnavailableError(f"{self._where}: {message}", store=self._where)

    def _change(self, statement: str, session: str, params: dict[str, Any]) -> Action | None:
        """Run the ``claim`` or ``resolve`` statement: the action as changed, or None if it was not
        pending. A row that does not read is left as it was (the transaction rolls back):
        ``CorruptStoreError``."""

        def work(execute: Execute) -> Action | None:
            rows = execute(self._statement(statement), params)
            return decode_action(rows[0], session, self._where) if rows else None

        return self._run(work, retry=True)

    def _record(self, recording: Recording) -> bool:
        """Record a resolution once: whether it is recorded (False: the claim was lost)."""
        params = recording._asdict() | {"id": recording.action_id, "now": self._now()}
        if self._execute(self._statement("finish"), params):
            return True
        # Not applying under this token: lost, unless a try whose reply was lost recorded it.
        return bool(self._execute(self._statement("finished"), params))

    def _record_within_lease(self, recording: Recording) -> bool:
        """Record a resolution, trying again while the claim's lease lasts; False if the claim was lost.

        Raises:
            ResolutionNotRecordedError: the lease would end before another try; the claim is kept, and
                the recording deferred to the renewer.
        """
        try:
            return self._record_retrying(recording)
        except BaseException:
            # Interrupted too (a signal's exception in a try or a pause): the callback ran all the same,
            # so the renewer goes on recording it, as past the lease. Left alone, the claim would be
            # renewed for as long as this process lives, and the action stay applying for good.
            if self._leases.ends(recording.session, recording.action_id):
                self._leases.defer(recording)
            raise

    def _record_retrying(self, recording: Recording) -> bool:
        """``_record_within_lease``'s tries; past the lease, the recording deferred and the error raised."""
        pause = RETRY_SECONDS
        while True:
            try:
                recorded = self._record(recording)
            except StoreUnavailableError as error:
                what = "approval" if recording.status == "approved" else "rejection"
                ends = self._leases.ends(recording.session, recording.action_id)
                left = ends - time.monotonic() - self._attempt_seconds
                if left <= 0:
                    self._leases.defer(recording)
                    raise ResolutionNotRecordedError(
                        f"{self._where}: action {recording.action_id}: its callback ran, but the {what} "
                        f"could not be recorded within the lease ({error}); the action stays applying, "
                        "claimed by this process, which keeps trying to record it",
                        store=self._where,
                        action_id=recording.action_id,
                        status=recording.status,
                    ) from error
                _logger.warning(
                    "%s: action %s: the %s could not be recorded (%s); trying again",
                    self._where,
                    recording.action_id,
                    what,
                    error,
                )
                time.sleep(min(pause, left))
                pause = min(pause * 2, 1.0)
                continue
            self._leases.drop(recording.session, recording.action_id)
            return recorded

    def _renew_claim(self, session: str, action_id: int, token: str) -> bool:
        params = {"session": session, "id": action_id, "token": token, "lease": self._lease}
        return bool(self._execute(self._statement("renew_claim"), params | {"now": self._now()}))

    def _renew_submit(self, session: str, action_id: int, mark: str) -> None:
        params = {"session": session, "id": action_id, "owner": mark, "lease": self._lease}
        self._execute(self._statement("renew_submit"), params | {"now": self._now()})

    def _mine(self, owner: object) -> bool:
        """Whether an ``on_submit`` mark is this store's."""
        return isinstance(owner, str) and (owner == self._owner or owner.startswith(self._owner + ":"))

    def _changed_elsewhere(self, session: str | None) -> None:
        """Tell this process's waiters of ``session`` (None: every session) to look again."""
        self._noticed_change()
        locals_: list[LocalSession] = []
        with self._locals_lock:
            if session is None:
                locals_ = list(self._locals.values())
            elif session in self._locals:
                locals_ = [self._locals[session]]
        for local in locals_:
            with contextlib.suppress(Exception):  # a waiter finds a broken store itself
                local.changed_elsewhere()


def positive_seconds(value: object, option: str) -> float:
    """``value`` as seconds, if it is a positive number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{option}: expected a positive number of seconds; got {preview(value)}")
    return float(value)


@final
class _SqlQueue(QueueState):
    """One session's queue in a database."""

    __slots__ = ("_elsewhere", "_marks", "_session", "_store")

    def __init__(self, store: SqlStore, session: str) -> None:
        self._store: Final = store
        self._session: Final = session
        self._elsewhere: int | None = None  # the head just read, if another process runs its on_submit
        self._marks: Final[dict[int, str]] = {}  # the on_submit marks of this process's submits, by id

    def _params(self, **more: Any) -> dict[str, Any]:
        return {"session": self._session, "now": self._store._now(), **more}

    def _read(self, rows: list[tuple[Any, ...]]) -> list[Action]:
        return [decode_action(row, self._session, self._store._where) for row in rows]

    def insert(self, build: Callable[[int], Action], *, submitting: bool) -> Action:
        store = self._store
        store.check_open()
        row = encode_action(build(0))
        # A mark no other insert has: it tells this process's submissions from others' (submit_until says
        # whether its on_submit runs), and finds the row if the connection broke before the reply came.
        mark = f"{store._owner}:{next(store._marks)}"
        row["submit_owner"] = mark
        row["submitting"] = submitting
        row["submit_until"] = store._now() + store._lease if submitting else None
        inserted = store._insert(self._session, row)
        action_id = inserted.action_id
        if submitting:
            self._marks[action_id] = inserted.mark
            store._leases.hold_submit(self._session, action_id, inserted.mark)
        action = build(action_id)
        if inserted.submitted_at is not None:
            action = dataclasses.replace(action, submitted_at=datetime.fromisoformat(inserted.submitted_at))
        return action

    def end_submit(self, action_id: int) -> None:
        store = self._store
        store._leases.drop_submit(self._session, action_id)
        mark = self._marks.pop(action_id, None)
        if mark is None:
            return
        try:
            store._execute(store._statement("end_submit"), self._params(id=action_id, owner=mark))
        except (StoreUnavailableError, StoreClosedError) as error:  # queued all the same: the mark lapses
            _logger.warning(
                "%s: action %s: its on_submit mark lapses after the lease (%s)",
                store._where,
                action_id,
                error,
            )

    def get(self, action_id: int) -> Action | None:
        if not 0 < action_id < 2**63:
            return None
        store = self._store
        return next(
            iter(self._read(store._execute(store._statement("get"), self._params(id=action_id)))), None
        )

    def pending(self) -> list[Action]:
        return self._read(self._store._execute(self._store._statement("pending"), self._params()))

    def pending_for_call(self, tool_call_id: object) -> list[Action]:
        if isinstance(tool_call_id, bool) or not isinstance(tool_call_id, str | int):
            return []  # the only call ids a database holds are strings and integers
        params = self._params(call=json.dumps(tool_call_id))
        return self._read(self._store._execute(self._store._statement("for_call"), params))

    def rejected_for_call(self, tool_call_id: object) -> list[Action]:
        if isinstance(tool_call_id, bool) or not isinstance(tool_call_id, str | int):
            return []
        params = self._params(call=json.dumps(tool_call_id))
        return self._read(self._store._execute(self._store._statement("rejected_for_call"), params))

    def head(self) -> Head | None:
        store = self._store
        rows = store._execute(store._statement("head"), self._params())
        self._elsewhere = None
        if not rows:
            return None
        head = decode_head(rows[0], self._session, store._where)
        owner, until, now = rows[0][3:6]
        if owner is not None and not store._mine(owner) and isinstance(until, int | float) and until >= now:
            self._elsewhere = head.id
        return head

    def submitting_elsewhere(self, action_id: int) -> bool:
        return self._elsewhere == action_id

    def counts(self) -> tuple[int, int]:
        [(pending, last_id)] = self._store._execute(self._store._statement("counts"), self._params())
        return int(pending), 0 if last_id is None else int(last_id)

    def claim(self, action_id: int, resolution: Resolution) -> Claim | None:
        store = self._store
        if not 0 < action_id < 2**63:
            return None
        token = uuid.uuid4().hex
        approve = resolution.approve
        params = self._params(
            id=action_id,
            token=token,
            lease=store._lease,
            scope=resolution.scope if approve else None,
            feedback=None if approve else text_column(resolution.feedback),
            decided_by=text_column(resolution.decided_by),
            edited_args=None if resolution.edited_args is None else _json_text(resolution.edited_args),
        )
        store._begin_resolution()  # ended by finish or release, or below if nothing is claimed
        claimed = False
        try:
            if store._leases.resolving(self._session, action_id):
                return None  # another thread of this process resolves it
            issued = time.monotonic()  # the lease, as this process counts it, runs from before the claim
            applying = store._change("claim", self._session, params)
            if applying is None:
                self.get(action_id)  # not pending: resolved or unknown, unless its row is corrupt (raises)
                return None
            store._leases.hold(self._session, action_id, token, issued)
            claimed = True
        finally:
            if not claimed:
                store._end_resolution()
        return Claim(applying, approve, token)

    def finish(self, claim: Claim, resolved_at: datetime) -> Action | None:
        store = self._store
        recording = Recording(
            self._session,
            claim.action.id,
            claim.token or "",
            "approved" if claim.approve else "rejected",
            resolved_at.timestamp(),
        )
        # One statement: the row was read whole when claimed, and the resolution is a fact by now.
        try:
            recorded = store._record_within_lease(recording)
        finally:
            store._end_resolution()
        if not recorded:
            return None
        # The recorded time is read back as the seconds the database holds: the same value a read gives.
        return resolved_action(
            claim.action, claim.approve, datetime.fromtimestamp(recording.resolved_at, UTC)
        )

    def resolve(self, action_id: int, resolution: Resolution, resolved_at: datetime) -> Action | None:
        store = self._store
        store.check_open()
        if not 0 < action_id < 2**63 or store._leases.resolving(self._session, action_id):
            return None
        token = uuid.uuid4().hex
        approve = resolution.approve
        params = self._params(
            id=action_id,
            token=token,
            status="approved" if approve else "rejected",
            scope=resolution.scope if approve else None,
            feedback=None if approve else text_column(resolution.feedback),
            resolved_at=resolved_at.timestamp(),
            decided_by=text_column(resolution.decided_by),
            edited_args=None
            if resolution.edited_args is None or not approve
            else _json_text(resolution.edited_args),
        )
        resolved = store._change("resolve", self._session, params)
        if resolved is not None:
            return resolved
        # Not pending: resolved or unknown (its row raises if corrupt), or resolved by this very call on
        # a connection that broke before the reply came (then the row bears its token).
        rows = store._execute(store._statement("get_claimed"), self._params(id=action_id))
        if not rows:
            return None
        action = decode_action(rows[0], self._session, store._where)
        return action if rows[0][-1] == token and action.status in ("approved", "rejected") else None

    def release(self, claim: Claim) -> None:
        store = self._store
        store._leases.drop(self._session, claim.action.id)
        try:
            store._execute(store._statement("release"), self._params(id=claim.action.id, token=claim.token))
        except StoreUnavailableError as error:  # the callback's exception matters more: the claim lapses
            _logger.warning(
                "%s: action %s: pending again after the lease (%s)", store._where, claim.action.id, error
            )
        finally:
            store._end_resolution()

    def restore(self, next_id: int, actions: list[Action]) -> int | None:
        store = self._store
        rows = [encode_action(action) for action in actions]

        def work(execute: Execute) -> int | None:
            [(found,)] = execute(store._statement("lock_session"), self._params())
            last_id = int(found)
            if last_id or execute(store._statement("has_actions"), self._params()):
                return last_id
            last = max([next_id, *(action.id for action in actions)])
            execute(store._statement("set_last_id"), self._params(last_id=last))
            for row in rows:
                execute(store._statement("restore"), self._params(**row))
            store._notify(execute, self._session)
            return None

        # Not tried again on a new connection: had the commit gone through, the session would be in use.
        return store._run(work, retry=False)

    def forget_resolved(self, cutoff: datetime | None, keep: Collection[int]) -> int:
        store = self._store
        kept = sorted(keep)
        params = self._params(cutoff=math.inf if cutoff is None else cutoff.timestamp())
        params.update({f"keep{index}": action_id for index, action_id in enumerate(kept)})
        names = ", ".join(f":keep{index}" for index in range(len(kept)))
        sql = render(
            _TEMPLATES["forget"],
            now=store._now_sql,
            notify="",
            keep=f" AND id NOT IN ({names})" if kept else "",
            named=store._named,
        )
        return store._delete(sql, params)

    def drain_lock(self) -> contextlib.AbstractContextManager[None]:
        return self._store._drain_lock(self._session)
