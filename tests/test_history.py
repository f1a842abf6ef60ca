"""The read-only history reader (``queue/_history.py``) behind ``replay --store`` and ``suggest --store``.

Against a real SQLite file and the real PostgreSQL server the test run starts: a replay and a suggest read
every action and leave the database as it was (its rows, its tables and indexes, and for PostgreSQL no
transaction id spent, so nothing was written), and a database of the previous schema is read without being
upgraded.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ask_permissions import PostgresStore
from ask_permissions.cli._main import main
from ask_permissions.queue._history import open_history

from .evidence_samples import NEW_POLICY, OLD_POLICY, record_session
from .test_store_migration import _build

EXPECTED_RULES = {
    "Bash(git diff *)": 3,
    "Bash(npm test *)": 3,
    "Edit(//work/project/src/**)": 3,
    "WebFetch(domain:docs.python.org)": 2,
    "mcp__github__create_issue": 2,
}
"""What suggest learns from the sample session (as tests/test_cli_suggest.py finds on SQLite)."""

Snapshot = Callable[[], object]


@pytest.fixture
def postgres_url(postgres_dsn: str) -> Iterator[str]:
    """A URL of a new, empty database on the test run's server, dropped afterwards."""
    psycopg = pytest.importorskip("psycopg")
    parts = urlsplit(postgres_dsn)
    if parts.scheme not in ("postgresql", "postgres"):
        pytest.skip("the replay's --store takes a postgresql:// URL; the test DSN is not one")
    name = f"evidence_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as server:
        server.execute(f'CREATE DATABASE "{name}"')
    try:
        query = f"?{parts.query}" if parts.query else ""
        yield f"{parts.scheme}://{parts.netloc}/{name}{query}"
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as server:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _postgres_state(url: str) -> dict[str, Any]:
    """Every row of every table of the database's schema, its tables and indexes, and the next
    transaction id: a write of any kind changes one of them."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        objects = connection.execute(
            "SELECT relname, relkind FROM pg_class JOIN pg_namespace ON pg_namespace.oid = relnamespace"
            " WHERE nspname = current_schema() ORDER BY relname"
        ).fetchall()
        tables = [name for name, kind in objects if kind == "r"]
        rows = {
            table: sorted(repr(row) for row in connection.execute(f'SELECT * FROM "{table}"').fetchall())
            for table in tables
        }
        (next_xid,) = connection.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()  # type: ignore[misc]
    return {"objects": objects, "rows": rows, "next_xid": next_xid}


def _sqlite_state(path: Path) -> dict[str, Any]:
    """The file's bytes, and whether a write-ahead log holds anything (a reader may leave an empty one)."""
    wal = path.with_name(path.name + "-wal")
    return {
        "digest": hashlib.sha256(path.read_bytes()).hexdigest(),
        "wal": wal.exists() and wal.stat().st_size > 0,
    }


@pytest.fixture(params=("sqlite", "postgres"))
def recorded(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path, Path, Snapshot]:
    """The sample session recorded in a store: its URL, the old and new policy files, and a snapshot of
    the database's state."""
    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(OLD_POLICY, encoding="utf-8")
    new.write_text(NEW_POLICY, encoding="utf-8")
    if request.param == "sqlite":
        database = tmp_path / "store.db"
        record_session(old, store_path=database, deciders=["ada"])
        return f"sqlite:///{database}", old, new, lambda: _sqlite_state(database)
    url: str = request.getfixturevalue("postgres_url")
    store = PostgresStore(url)
    try:
        record_session(old, store=store, deciders=["ada"])
    finally:
        store.close()
    return url, old, new, lambda: _postgres_state(url)


class TestReadOnly:
    """replay and suggest read every recorded action and change nothing in the database."""

    def test_replay(
        self, recorded: tuple[str, Path, Path, Snapshot], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every ask is decided again with its answer; the database is as it was, byte for byte or row for
        row, with no transaction id spent."""
        url, _, new, state = recorded
        before = state()
        assert main(["replay", str(new), "--store", url, "--json"]) == 1
        report = json.loads(capsys.readouterr().out)
        assert state() == before
        assert report["replayed"] == 19  # every call but git status (allowed) and rm -rf (denied)
        changes = {(c["from"], c["to"], c["rule"]): c for c in report["changes"]}
        assert changes["pending", "block", "deny Bash(git push --force *)"]["answers"] == {"rejected": 1}
        assert changes["pending", "proceed", "allow Bash(git diff *)"]["answers"] == {"approved": 3}

    def test_suggest(
        self, recorded: tuple[str, Path, Path, Snapshot], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """suggest learns the same rules from either store, proven, and changes nothing."""
        url, old, _, state = recorded
        before = state()
        assert main(["suggest", "--store", url, "--policy", str(old), "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert state() == before
        assert {rule["rule"]: rule["saved"] for rule in found["rules"]} == EXPECTED_RULES
        assert found["proof"]["proven"] is True

    def test_who_decided_is_read(self, recorded: tuple[str, Path, Path, Snapshot]) -> None:
        """Each resolved action reads back with the name of who decided it."""
        url, _, _, _ = recorded
        with open_history(url) as history:
            entries = list(history.actions())
        assert len(entries) == 19
        assert {entry.action.decided_by for entry in entries} == {"ada"}

    def test_machine_approvals_teach_nothing(
        self, recorded: tuple[str, Path, Path, Snapshot], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Approvals the queue gave by itself (auto_approve) saved no prompt: suggest learns no rule."""
        _, old, _, _ = recorded
        database = tmp_path / "machine.db"
        record_session(old, store_path=database, deciders=["auto_approve"])
        main(["suggest", "--store", f"sqlite:///{database}", "--policy", str(old), "--json"])
        found = json.loads(capsys.readouterr().out)
        assert found["rules"] == []
        assert found["approvals"] == 0
        assert found["rejections"] == 5


@pytest.fixture(params=("sqlite", "postgres"))
def schema_one(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Callable[[], str]]:
    """A database of the previous schema (tests/fixtures/store_schema_v1.json), and its schema version."""
    if request.param == "sqlite":
        path = tmp_path / "old.db"
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            _build(lambda sql, params: connection.execute(sql, params).fetchall(), sqlite=True)
        finally:
            connection.close()

        def sqlite_version() -> str:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as reader:
                (value,) = reader.execute(
                    "SELECT value FROM ask_permissions_meta WHERE name = 'schema_version'"
                ).fetchone()
            return str(value)

        return f"sqlite:///{path}", sqlite_version
    import psycopg

    url: str = request.getfixturevalue("postgres_url")
    with psycopg.connect(url, autocommit=True) as server:

        def run(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            cursor = server.execute(sql.replace("?", "%s"), params)
            return cursor.fetchall() if cursor.description is not None else []

        _build(run, sqlite=False)

    def postgres_version() -> str:
        with psycopg.connect(url, autocommit=True) as reader:
            row = reader.execute("SELECT value FROM ask_permissions_meta WHERE name = 'schema_version'")
            (value,) = row.fetchone()  # type: ignore[misc]
        return str(value)

    return url, postgres_version


class TestOlderSchema:
    """A read-only reader cannot upgrade a database: it reads the previous schema as it is."""

    def test_read_without_upgrading(self, schema_one: tuple[str, Callable[[], str]]) -> None:
        """The schema-1 rows read back (nobody named as having decided); the version stays 1."""
        url, version = schema_one
        with open_history(url) as history:
            entries = list(history.actions())
        assert [entry.action.status for entry in entries] == ["approved", "rejected", "pending"]
        assert [entry.action.tool_name for entry in entries] == ["bash", "write_file", "deploy"]
        assert all(entry.action.decided_by is None and entry.action.why is None for entry in entries)
        assert version() == "1"

    def test_replay_reads_it(
        self, schema_one: tuple[str, Callable[[], str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A replay of a schema-1 store decides its calls again, and leaves it at schema 1."""
        url, version = schema_one
        policy = tmp_path / "policy.toml"
        policy.write_text('version = 1\n\n[permissions]\nallow = ["bash(git *)"]\n', encoding="utf-8")
        assert main(["replay", str(policy), "--store", url, "--json"]) == 1
        report = json.loads(capsys.readouterr().out)
        assert report["replayed"] == 3
        assert report["changed"] >= 1
        assert version() == "1"
