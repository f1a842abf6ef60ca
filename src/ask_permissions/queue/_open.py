"""``open_store(url)``: a store from a URL, as a host's configuration or the command line names it."""

from __future__ import annotations

from datetime import timedelta
from typing import Final
from urllib.parse import unquote, urlsplit, urlunsplit

from ask_permissions._errors import preview

from ._postgres import PostgresStore
from ._sql import DEFAULT_LEASE
from ._sqlite import SqliteStore
from ._store import ApprovalStore, MemoryStore

__all__ = ["describe_url", "open_store"]

_SQLITE: Final = "sqlite:///"
_POSTGRES: Final = ("postgresql://", "postgres://")


def open_store(url: str, *, lease: timedelta = DEFAULT_LEASE, read_only: bool = False) -> ApprovalStore:
    """The store a URL names.

    ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` (SQLAlchemy's spelling: the path
    follows the third slash), ``postgresql://user@host/dbname`` (or ``postgres://``, any libpq URL), or
    ``memory:`` for a new ``MemoryStore``. ``read_only`` opens a SQLite file for reading only (see
    ``SqliteStore``).

    Raises:
        ValueError: the URL names no store this package has, or ``read_only`` is asked of a store that
            is not SQLite.
        StoreUnavailableError: the database cannot be reached or opened.
        CorruptStoreError: it holds what this package did not write.
    """
    if not isinstance(url, str):
        raise TypeError(f"store URL: expected a string; got {preview(url)}")
    if read_only and not url.startswith(_SQLITE):
        raise ValueError(
            f"read_only: only a sqlite:/// store opens read-only; got {preview(describe_url(url))}"
        )
    if url.startswith(_SQLITE):
        path = unquote(url[len(_SQLITE) :].split("?", 1)[0])
        if not path:
            raise ValueError(f"store URL: expected a database file after sqlite:///; got {preview(url)}")
        return SqliteStore(path, lease=lease, read_only=read_only)
    if url.startswith(_POSTGRES):
        return PostgresStore(url, lease=lease)
    if url == "memory:":
        return MemoryStore()
    raise ValueError(f"store URL: expected sqlite:///PATH, postgresql://... or memory:; got {preview(url)}")


def describe_url(url: str) -> str:
    """``url`` for a message: a PostgreSQL URL without its password (and query, which may hold one)."""
    if not url.startswith(_POSTGRES):
        return url
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")
        user = host[0].partition(":")[0]
        netloc = f"{user}@{host[2]}" if host[1] else host[2]
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "postgresql://(unparsed)"
