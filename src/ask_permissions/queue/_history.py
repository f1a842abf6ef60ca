"""Reading a store's whole history, read-only: every action of every session, as recorded.

``replay`` and ``suggest`` learn from what a store holds, and must never change it: this reader opens the
database read-only (SQLite's ``mode=ro``, a PostgreSQL session whose transactions are read-only), creates
nothing, and reads only the columns every schema version has (and ``decided_by`` where it exists).
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
from ._sql import _READ, corrupt, decode_action
from ._store import check_session

__all__ = ["HistoryEntry", "StoreHistory", "open_history"]

_SQLITE: Final = "sqlite:///"
_POSTGRES: Final = ("postgresql://", "postgres://")
_NOW: Final = {"sqlite": ":now", "postgres": "extract(epoch from clock_timestamp())::float8"}


class HistoryEntry(NamedTuple):
    """One recorded action: its session, the action, and who resolved it (when the store records that)."""

    session: str
    action: Action
    decided_by: str | None


@final
class StoreHistory:
    """A read-only view of a store's actions; ``close`` it when done (it is a context manager).

    Not thread-safe: one reader, one thread.
    """

    __slots__ = ("_connection", "_decided_by", "_kind", "_where")

    def __init__(self, connection: Any, kind: str, where: str) -> None:
        self._connection = connection
        self._kind = kind
        self._where = where
        self._decided_by = "decided_by" in self._columns()

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
        needed = {name.strip() for name in _READ.split(",")}
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
        extra = ", decided_by" if self._decided_by else ""
        sql = f"SELECT session, {_READ}, {_NOW[self._kind]}{extra} FROM ask_permissions_actions"
        for row in self._rows(sql + " ORDER BY session, id", {"now": time.time()}):
            session = self._session(row[0])
            action = decode_action(row[1:15], session, self._where)
            decided_by = row[15] if self._decided_by else None
            yield HistoryEntry(session, action, decided_by if isinstance(decided_by, str) else None)

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
