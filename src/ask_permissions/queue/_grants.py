"""SessionPermissionGrants: whole-tool grants for the current session."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, final

from ask_permissions._names import require_tool_name, require_tool_names
from ask_permissions._strict import (
    SNAPSHOT_VERSION,
    child,
    guard_reading,
    read_list,
    read_mapping,
    read_text,
    read_version,
)

from ._store import DEFAULT_SESSION, ApprovalStore, check_session, store_or_memory

__all__ = ["SessionPermissionGrants"]

_GRANTED_TOOLS: Final = "granted_tools"


@final
class SessionPermissionGrants:
    """Tools granted for the current session: a granted tool skips the ordinary approval prompts.

    By default in memory and per instance: sharing one object shares its grants, separate objects are
    isolated. With a ``store`` the grants are the store's ``session``'s, shared by every grants object on
    it, in any process (a durable store keeps them). Grants never bypass an explicit deny, a tool's
    ``always_ask`` or read-only mode (the policy enforces that). Thread-safe: the store guards them,
    readers get copies.

    Args:
        granted_tools: names to grant from the start (added to the session's grants).
        store: where the grants live (default: a new ``MemoryStore``).
        session: which of the store's sessions they are (default ``"default"``).

    Raises:
        TypeError: ``granted_tools`` is a bare string, or holds a non-string.
        ValueError: ``granted_tools`` holds an empty string.
    """

    __slots__ = ("__weakref__", "_session", "_store")

    def __init__(
        self,
        granted_tools: Iterable[str] = (),
        *,
        store: ApprovalStore | None = None,
        session: str = DEFAULT_SESSION,
    ) -> None:
        names = require_tool_names(granted_tools, "granted_tools")
        self._session: Final = check_session(session)
        self._store: Final = store_or_memory(store)
        if names:
            self._store.grant(self._session, names)

    @property
    def store(self) -> ApprovalStore:
        """Where the grants live."""
        return self._store

    @property
    def session(self) -> str:
        """The store's session these grants are."""
        return self._session

    def grant(self, tool_name: str) -> SessionPermissionGrants:
        """Grant ``tool_name`` for the session; granting it again changes nothing. Returns the grants.

        Raises:
            TypeError: ``tool_name`` is not a string.
            ValueError: ``tool_name`` is empty.
        """
        name = require_tool_name(tool_name)
        self._store.grant(self._session, [name])
        return self

    def revoke(self, tool_name: str) -> SessionPermissionGrants:
        """Withdraw the grant of ``tool_name``; a tool that is not granted is ignored. Returns the grants.

        Raises:
            TypeError: ``tool_name`` is not a string.
            ValueError: ``tool_name`` is empty.
        """
        name = require_tool_name(tool_name)
        self._store.revoke(self._session, name)
        return self

    def clear(self) -> SessionPermissionGrants:
        """Withdraw every grant. Returns the grants."""
        self._store.replace_grants(self._session, ())
        return self

    def is_granted(self, tool_name: object) -> bool:
        """Whether ``tool_name`` is granted.

        Never raises for a bad name: the policy asks this about every tool call, so anything that is not
        a granted string (``None``, ``""``, a number) is simply not granted.
        """
        if not isinstance(tool_name, str):
            return False
        return self._store.is_granted(self._session, str.__str__(tool_name))

    @property
    def granted_tools(self) -> list[str]:
        """The granted tool names, sorted (a fresh list each time)."""
        return self._store.granted(self._session)

    def snapshot(self) -> dict[str, object]:
        """JSON-safe state for durable resume: ``{"version": 1, "granted_tools": [sorted names]}``."""
        return {"version": SNAPSHOT_VERSION, _GRANTED_TOOLS: self.granted_tools}

    def restore_snapshot(self, snapshot: object) -> SessionPermissionGrants:
        """Replace every grant with those of ``snapshot``. Returns the grants.

        Raises:
            InvalidSnapshotError: the snapshot is invalid (whatever it holds: never another exception); the
                grants are left unchanged.
        """
        tools = _read_snapshot(snapshot)
        self._store.replace_grants(self._session, tools)
        return self

    @classmethod
    def from_snapshot(cls, snapshot: object, *, path: str = "") -> SessionPermissionGrants:
        """New grants holding those of ``snapshot`` (as made by :meth:`snapshot`).

        ``path`` is where the snapshot sits in a larger document (a policy file's ``session_grants``);
        error messages start from it.

        Raises:
            InvalidSnapshotError: the snapshot is invalid (whatever it holds: never another exception).
        """
        grants = cls()
        grants._store.replace_grants(grants._session, _read_snapshot(snapshot, path))
        return grants

    def __contains__(self, tool_name: object) -> bool:
        return self.is_granted(tool_name)

    def __len__(self) -> int:
        return len(self._store.granted(self._session))

    def __repr__(self) -> str:
        return f"<SessionPermissionGrants {self.granted_tools!r}>"


def _read_snapshot(snapshot: object, path: str = "") -> set[str]:
    return guard_reading(lambda: _read_tools(snapshot, path), snapshot, path)


def _read_tools(snapshot: object, path: str) -> set[str]:
    data = read_mapping(snapshot, path, required=("version", _GRANTED_TOOLS))
    read_version(data, path)
    path = child(path, _GRANTED_TOOLS)
    entries = read_list(data[_GRANTED_TOOLS], path)
    # Duplicates are accepted: grants are a set, as in the gem, so they simply collapse.
    return {read_text(entry, child(path, index), non_empty=True) for index, entry in enumerate(entries)}
