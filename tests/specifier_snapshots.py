"""Fuzzing help for the specifier patterns' snapshots, whose required keys the gem formats do not have."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ask_permissions import InvalidSnapshotError
from ask_permissions._strict import child

from .strategies import nodes_by_path, quiet_regex_warnings

__all__ = ["restored_or_rejected"]

_REQUIRED_KEYS = ("type", "text", "root", "home")

T = TypeVar("T")


def restored_or_rejected(read: Callable[[Any], T], snapshot: object) -> T | None:
    """``read(snapshot)``'s result, or None when it raised InvalidSnapshotError with a path into ``snapshot``.

    Any other exception propagates, failing the test: fuzzed input may be refused, never crash the reader.
    """
    with quiet_regex_warnings():
        try:
            return read(snapshot)
        except InvalidSnapshotError as error:
            path = error.path
    nodes = nodes_by_path(snapshot)
    mappings = [(parent, node) for parent, node in nodes.items() if isinstance(node, Mapping)]
    if isinstance(snapshot, Mapping):
        mappings.append(("", snapshot))  # a "" key's path is the root's own, so nodes may hide the root
    missing = {child(parent, key) for parent, node in mappings for key in _REQUIRED_KEYS if key not in node}
    assert path in nodes or path in missing, f"error path {path!r} is not in the snapshot"
    return None
