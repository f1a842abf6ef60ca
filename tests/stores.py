"""The stores the queue and grants suites run against: memory (the default), SQLite and PostgreSQL.

A suite marks itself with ``pytestmark = pytest.mark.usefixtures("store_kind")`` (the fixture lives in
``conftest.py``) and builds its queues and grants with ``new_queue`` / ``new_grants``: with the memory
kind they are built exactly as before, with no store; with a database kind each one gets a session of its
own in that module's database, so the suite's assertions hold unchanged against every store.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterable, Iterator
from typing import Any, Final

import pytest

from ask_permissions import ApprovalQueue, ApprovalStore, SessionPermissionGrants

__all__ = [
    "STORE_KINDS",
    "current_store",
    "fresh_session",
    "memory_only",
    "new_grants",
    "new_queue",
    "using_store",
]

STORE_KINDS: Final = ("memory", "sqlite", "postgres")

_current: list[ApprovalStore] = []
_sessions = itertools.count(1)


def current_store() -> ApprovalStore | None:
    """The database store the running test uses, or None for the memory kind."""
    return _current[-1] if _current else None


@contextlib.contextmanager
def using_store(store: ApprovalStore | None) -> Iterator[None]:
    """Make ``store`` the one ``new_queue`` and ``new_grants`` use (None: memory, no store)."""
    if store is None:
        yield
        return
    _current.append(store)
    try:
        yield
    finally:
        _current.pop()


def fresh_session() -> str:
    """A session name no other test of this run uses (the PostgreSQL database lives for the whole run)."""
    return f"test-{os.getpid()}-{next(_sessions)}"


def _where() -> dict[str, Any]:
    store = current_store()
    return {} if store is None else {"store": store, "session": fresh_session()}


def new_queue(**kwargs: Any) -> ApprovalQueue:
    """``ApprovalQueue(**kwargs)``, in a session of its own of the current store."""
    return ApprovalQueue(**kwargs, **_where())


def new_grants(granted_tools: Iterable[str] = (), **kwargs: Any) -> SessionPermissionGrants:
    """``SessionPermissionGrants(granted_tools)``, in a session of its own of the current store."""
    return SessionPermissionGrants(granted_tools, **kwargs, **_where())


def memory_only(reason: str) -> None:
    """Skip the running test unless it runs against the memory store."""
    if current_store() is not None:
        pytest.skip(f"memory store only: {reason}")
