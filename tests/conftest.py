"""Fixtures shared by the suites: the stores under test, and a real PostgreSQL server for them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ask_permissions import ApprovalStore, PostgresStore, SqliteStore
from ask_permissions import open_store as open_url

from .postgres_server import PostgresUnavailable, postgres_server
from .stores import STORE_KINDS, using_store

REQUIRE_POSTGRES = "ASK_PERMISSIONS_REQUIRE_POSTGRES"
"""Set (CI sets it) to make a missing PostgreSQL an error instead of a skip."""
EXTERNAL_DSN = "ASK_PERMISSIONS_TEST_DSN"
"""A PostgreSQL connection string to test against instead of starting a server."""


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A connection string for a PostgreSQL server that lives as long as the test run."""
    external = os.environ.get(EXTERNAL_DSN)
    if external:
        yield external
        return
    try:
        with postgres_server() as dsn:
            yield dsn
    except PostgresUnavailable as error:
        if os.environ.get(REQUIRE_POSTGRES):
            pytest.fail(f"{REQUIRE_POSTGRES} is set: {error}")
        pytest.skip(str(error))


def open_store(
    kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> ApprovalStore:
    """A new store of ``kind`` ("sqlite" or "postgres") for one test module."""
    if kind == "sqlite":
        return SqliteStore(tmp_path_factory.mktemp("sqlite") / "approvals.db")
    return PostgresStore(request.getfixturevalue("postgres_dsn"))


@pytest.fixture(params=("sqlite", "postgres"))
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a durable store: a fresh SQLite file, or the test run's PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'approvals.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


@pytest.fixture(scope="module", params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Run a module's tests once per store kind: ``new_queue`` and ``new_grants`` use its store."""
    kind: str = request.param
    if kind == "memory":
        yield kind
        return
    store = open_store(kind, request, tmp_path_factory)
    try:
        with using_store(store):
            yield kind
    finally:
        store.close()


@pytest.fixture
def stores() -> Iterator[Callable[..., ApprovalStore]]:
    """Open stores by URL, with options (each closed at the end of the test)."""
    opened: list[ApprovalStore] = []

    def open_one(url: str, **options: Any) -> ApprovalStore:
        store = open_url(url, **options)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()
