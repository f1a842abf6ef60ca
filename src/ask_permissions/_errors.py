"""The package's own exceptions."""

from __future__ import annotations

__all__ = ["InvalidSnapshotError", "PermissionsError"]


class PermissionsError(Exception):
    """Base class of every exception this package defines."""


class InvalidSnapshotError(PermissionsError, ValueError):
    """A snapshot (or policy file) failed validation; nothing was restored.

    Attributes:
        path: where in the snapshot the problem is, e.g. ``rules[2].tool_pattern.flags``
            (empty for the snapshot as a whole).
        value: the offending value.
    """

    def __init__(self, message: str, *, path: str = "", value: object = None) -> None:
        super().__init__(message)
        self.path = path
        self.value = value
