"""Store schema migrations: a database made by the previous schema is upgraded in place when opened."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pytest

from ask_permissions import (
    ApprovalQueue,
    ApprovalStore,
    CorruptStoreError,
    PostgresStore,
    SessionPermissionGrants,
    SqliteStore,
)
from ask_permissions.queue._sql import SCHEMA_VERSION
from ask_permissions.typing import AskExplanation

FIXTURE: Final = json.loads((Path(__file__).parent / "fixtures" / "store_schema_v1.json").read_text())
_COLUMNS: Final = (
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
)

Run = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]


def _build(run: Run, *, sqlite: bool) -> None:
    """Lay out the schema-1 database of the fixture, with its rows, as the previous version left it."""
    for statement in FIXTURE["tables"]:
        run(statement, ())
    run(
        "INSERT INTO ask_permissions_meta (name, value) VALUES ('schema_version', ?)",
        (FIXTURE["schema_version"],),
    )
    for statement in FIXTURE["indexes"]:
        run(statement, ())
    if sqlite:
        run(FIXTURE["sqlite_trigger"], ())
    marks = ", ".join("?" for _ in _COLUMNS)
    for row in FIXTURE["actions"]:
        run(
            f"INSERT INTO ask_permissions_actions ({', '.join(_COLUMNS)}) VALUES ({marks})",
            tuple(row[c] for c in _COLUMNS),
        )
    for session, last_id in FIXTURE["sessions"]:
        run(
            "INSERT INTO ask_permissions_sessions (session, last_id) VALUES (?, ?)"
            " ON CONFLICT (session) DO UPDATE SET last_id = excluded.last_id",
            (session, last_id),
        )
    for session, name in FIXTURE["grants"]:
        run("INSERT INTO ask_permissions_grants (session, tool_name) VALUES (?, ?)", (session, name))


@contextlib.contextmanager
def _sqlite_database(tmp_path: Path) -> Iterator[tuple[str, Run]]:
    path = tmp_path / "old.db"
    connection = sqlite3.connect(path, isolation_level=None)

    def run(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return connection.execute(sql, params).fetchall()

    try:
        yield str(path), run
    finally:
        connection.close()


@contextlib.contextmanager
def _postgres_database(dsn: str) -> Iterator[tuple[str, Run]]:
    import psycopg
    from psycopg.conninfo import make_conninfo

    name = f"migration_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as server:
        server.execute(f"DROP DATABASE IF EXISTS {name}")
        server.execute(f"CREATE DATABASE {name}")
    own = make_conninfo(dsn, dbname=name)
    try:
        with psycopg.connect(own, autocommit=True) as connection:

            def run(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                cursor = connection.execute(sql.replace("?", "%s"), params)
                return cursor.fetchall() if cursor.description is not None else []

            yield own, run
    finally:
        with psycopg.connect(dsn, autocommit=True) as server:
            server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=("sqlite", "postgres"))
def old_database(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Callable[[], ApprovalStore], Run]]:
    """A schema-1 database made as the previous version made it, and a way to open today's store on it."""
    if request.param == "sqlite":
        with _sqlite_database(tmp_path) as (path, run):
            _build(run, sqlite=True)
            yield (lambda: SqliteStore(path)), run
        return
    with _postgres_database(request.getfixturevalue("postgres_dsn")) as (dsn, run):
        _build(run, sqlite=False)
        yield (lambda: PostgresStore(dsn)), run


class TestUpgradeInPlace:
    """Opening a schema-1 database upgrades it to the current schema, keeping every row as it was."""

    def test_the_rows_read_back_as_before(
        self, old_database: tuple[Callable[[], ApprovalStore], Run]
    ) -> None:
        """Pending, approved and rejected actions and the grants of the old database read as they were."""
        open_store, run = old_database
        store = open_store()
        try:
            queue = ApprovalQueue(store=store, session="agent-1")
            approved, rejected, pending = queue[1], queue[2], queue[3]
            assert approved is not None
            assert rejected is not None
            assert pending is not None
            assert (approved.status, approved.scope, approved.tool_name) == ("approved", "once", "bash")
            assert approved.args == {"command": "git status"}
            assert approved.resolved_at == datetime(2026, 11, 30, 9, 1, tzinfo=UTC)
            assert (approved.decided_by, approved.edited_args, approved.why) == (None, None, None)
            assert (rejected.status, rejected.feedback) == ("rejected", "not that file")
            assert pending.is_pending
            assert pending.why is None
            assert pending.resolved_at is None
            assert [action.id for action in queue.pending_actions] == [3]
            assert SessionPermissionGrants(store=store, session="agent-1").granted_tools == ["read_file"]
            [(version,)] = run("SELECT value FROM ask_permissions_meta WHERE name = 'schema_version'", ())
            assert version == SCHEMA_VERSION
        finally:
            store.close()

    def test_the_new_columns_work_on_the_upgraded_database(
        self, old_database: tuple[Callable[[], ApprovalStore], Run]
    ) -> None:
        """After the upgrade, ids go on from the old last id and who decided and edits are kept."""
        open_store, _ = old_database
        store = open_store()
        try:
            queue = ApprovalQueue(store=store, session="agent-1")
            why: AskExplanation = {
                "layer": "ask_rule",
                "rule": "Bash(make *)",
                "source": "project",
                "reason": "r",
                "suggestions": [],
            }
            new_id = queue.submit(tool_call_id="tc-4", tool_name="bash", args={"command": "make"}, why=why)
            assert new_id == 4
            [edited] = queue.approve(3, arguments={"env": "dev"}, decided_by="ann")
            assert (edited.edited_args, edited.decided_by) == ({"env": "dev"}, "ann")
            queue.reject(4, feedback="later", decided_by="bob")
        finally:
            store.close()
        reopened = open_store()  # a second opening finds schema 2: nothing to upgrade
        try:
            queue = ApprovalQueue(store=reopened, session="agent-1")
            again, later = queue[3], queue[4]
            assert again is not None
            assert later is not None
            assert (again.edited_args, again.decided_by, again.approved_args) == (
                {"env": "dev"},
                "ann",
                {"env": "dev"},
            )
            assert (later.decided_by, later.feedback, later.why) == ("bob", "later", why)
        finally:
            reopened.close()

    def test_an_upgrade_that_fails_changes_nothing(
        self, old_database: tuple[Callable[[], ApprovalStore], Run]
    ) -> None:
        """A failing step refuses the store and leaves the database at schema 1, whole (one transaction)."""
        open_store, run = old_database
        run("ALTER TABLE ask_permissions_actions ADD COLUMN decided_by TEXT", ())  # not as schema 1 left it
        with pytest.raises(
            CorruptStoreError, match="schema_version: expected the tables schema 1 has"
        ) as info:
            open_store()
        assert info.value.value == "1"
        [(version,)] = run("SELECT value FROM ask_permissions_meta WHERE name = 'schema_version'", ())
        assert version == "1"
        assert "why" not in _columns(run)  # the step before the failing one was rolled back too


def _columns(run: Run) -> set[str]:
    try:
        return {row[1] for row in run("PRAGMA table_info(ask_permissions_actions)", ())}
    except Exception:  # PostgreSQL
        rows = run(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'ask_permissions_actions'",
            (),
        )
        return {name for (name,) in rows}
