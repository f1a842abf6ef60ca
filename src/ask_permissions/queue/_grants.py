"""SessionPermissionGrants: whole-tool grants for the current session."""

from __future__ import annotations

import threading
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

__all__ = ["SessionPermissionGrants"]

_GRANTED_TOOLS: Final = "granted_tools"


@final
class SessionPermissionGrants:
    """Tools granted for the current session: a granted tool skips the ordinary approval prompts.

    In memory and per instance: sharing one object shares its grants, separate objects are isolated.
    Grants never bypass an explicit deny, a tool's ``always_ask`` or read-only mode (the policy
    enforces that). Thread-safe: every method takes the object's private lock, readers get copies.

    Args:
        granted_tools: names to grant from the start.

    Raises:
        TypeError: ``granted_tools`` is a bare string, or holds a non-string.
        ValueError: ``granted_tools`` holds an empty string.
    """

    __slots__ = ("__weakref__", "_lock", "_tools")

    def __init__(self, granted_tools: Iterable[str] = ()) -> None:
        self._lock: Final = threading.Lock()
        self._tools: set[str] = set(require_tool_names(granted_tools, "granted_tools"))

    def grant(self, tool_name: str) -> SessionPermissionGrants:
        """Grant ``tool_name`` for the session; granting it again changes nothing. Returns the grants.

        Raises:
            TypeError: ``tool_name`` is not a string.
            ValueError: ``tool_name`` is empty.
        """
        name = require_tool_name(tool_name)
        with self._lock:
            self._tools.add(name)
        return self

    def revoke(self, tool_name: str) -> SessionPermissionGrants:
        """Withdraw the grant of ``tool_name``; a tool that is not granted is ignored. Returns the grants.

        Raises:
            TypeError: ``tool_name`` is not a string.
            ValueError: ``tool_name`` is empty.
        """
        name = require_tool_name(tool_name)
        with self._lock:
            self._tools.discard(name)
        return self

    def clear(self) -> SessionPermissionGrants:
        """Withdraw every grant. Returns the grants."""
        with self._lock:
            self._tools.clear()
        return self

    def is_granted(self, tool_name: object) -> bool:
        """Whether ``tool_name`` is granted.

        Never raises: the policy asks this about every tool call, so anything that is not a granted
        string (``None``, ``""``, a number) is simply not granted.
        """
        if not isinstance(tool_name, str):
            return False
        with self._lock:
            return tool_name in self._tools

    @property
    def granted_tools(self) -> list[str]:
        """The granted tool names, sorted (a fresh list each time)."""
        with self._lock:
            return sorted(self._tools)

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
        with self._lock:
            self._tools = tools
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
        grants._tools = _read_snapshot(snapshot, path)
        return grants

    def __contains__(self, tool_name: object) -> bool:
        return self.is_granted(tool_name)

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)

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
