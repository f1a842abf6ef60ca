"""Reading a store's whole history, read-only: every action of every session, as recorded.

``replay`` and ``suggest`` learn from what a store holds, and must never change it: this reader opens the
database read-only (SQLite's ``mode=ro``, a PostgreSQL session whose transactions are read-only) and creates
nothing. A database of an older schema is not upgraded (that would be a write): the columns a migration
added since are read as null, as the store itself would have had them.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from typing import Any, Final, NamedTuple, final
from urllib.parse import quote, unquote

from ask_permissions._errors import preview

from ._action import Action
from ._open import describe_url
from ._sql import _NOW_AT, _READ, MIGRATIONS, corrupt, decode_action
from ._store import check_session

__all__ = ["HistoryEntry", "StoreHistory", "open_history"]

_SQLITE: Final = "sqlite:///"
_POSTGRES: Final = ("postgresql://", "postgres://")
_NOW: Final = {"sqlite": ":now", "postgres": "extract(epoch from clock_timestamp())::float8"}
_COLUMNS: Final = tuple(name.strip() for name in _READ.split(","))
_ADDED: Final = frozenset(
    statement.split("ADD COLUMN ", 1)[1].split()[0]
    for _, statements in MIGRATIONS.values()
    for statement in statements
    if "ADD COLUMN " in statement
)
"""The columns a schema migration added: an older database has none of them."""


class HistoryEntry(NamedTuple):
    """One recorded action: its session and the action (``action.decided_by`` says who resolved it, when the
    store records that)."""

    session: str
    action: Action


@final
class StoreHistory:
    """A read-only view of a store's actions; ``close`` it when done (it is a context manager).

    Not thread-safe: one reader, one thread.
    """

    __slots__ = ("_connection", "_kind", "_select", "_where")

    def __init__(self, connection: Any, kind: str, where: str) -> None:
        self._connection = connection
        self._kind = kind
        self._where = where
        present = self._columns()
        self._select = ", ".join(name if name in present else "NULL" for name in _COLUMNS)

    def __enter__(self) -> StoreHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<StoreHistory {self._where}>"

    def _rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if self._kind == "sqlite":
            return self._connection.execute(sql, params).fetchall()  # type: ignore[no-any-return]
        with self._connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()  # type: ignore[no-any-return]

    def _columns(self) -> set[str]:
        if self._kind == "sqlite":
            rows = self._rows("PRAGMA table_info(ask_permissions_actions)", {})
            columns = {row[1] for row in rows}
        else:
            rows = self._rows(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = 'ask_permissions_actions'",
                {},
            )
            columns = {row[0] for row in rows}
        needed = set(_COLUMNS) - _ADDED
        if not needed <= columns:
            raise corrupt(
                f"{self._where}: ask_permissions_actions",
                "the table ask_permissions writes (" + ", ".join(sorted(needed)) + ")",
                sorted(columns),
            )
        return columns

    def actions(self) -> Iterator[HistoryEntry]:
        """Every action of every session, by session and id, whatever its status.

        Raises:
            CorruptStoreError: a row this package would not have written (naming it).
        """
        sql = f"SELECT session, {self._select}, {_NOW[self._kind]} FROM ask_permissions_actions"
        for row in self._rows(sql + " ORDER BY session, id", {"now": time.time()}):
            session = self._session(row[0])
            action = decode_action(row[1 : _NOW_AT + 2], session, self._where)
            yield HistoryEntry(session, action)

    def _session(self, value: object) -> str:
        try:
            return check_session(value)
        except (TypeError, ValueError):
            raise corrupt(
                f"{self._where}: ask_permissions_actions.session", "a session name", value
            ) from None

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()


def open_history(url: str) -> StoreHistory:
    """A read-only reader of the store a URL names (``sqlite:///PATH`` or ``postgresql://...``).

    Raises:
        ValueError: a URL of no durable store (``memory:`` holds no history another process can read).
        FileNotFoundError: an SQLite file that does not exist (a read-only reader never creates one).
        sqlite3.Error, psycopg.Error: the database cannot be opened or read.
        CorruptStoreError: its tables are not this package's.
    """
    if not isinstance(url, str):
        raise TypeError(f"store URL: expected a string; got {preview(url)}")
    if url.startswith(_SQLITE):
        path = unquote(url[len(_SQLITE) :].split("?", 1)[0])
        if not path:
            raise ValueError(f"store URL: expected a database file after sqlite:///; got {preview(url)}")
        if not os.path.exists(path):
            raise FileNotFoundError(2, "no such database file", path)
        connection = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
        try:
            return StoreHistory(connection, "sqlite", f"sqlite:///{path}")
        except BaseException:
            connection.close()
            raise
    if url.startswith(_POSTGRES):
        from ._postgres import _describe, _psycopg  # noqa: PLC0415  # psycopg is optional

        driver = _psycopg()
        connection = driver.connect(url, autocommit=True, connect_timeout=10)
        try:
            # Every statement of this session runs in a read-only transaction: the server refuses writes.
            connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            return StoreHistory(connection, "postgres", _describe(url))
        except BaseException:
            connection.close()
            raise
    shown = preview(describe_url(url))
    raise ValueError(f"store URL: expected sqlite:///PATH or postgresql://... (a durable store); got {shown}")
