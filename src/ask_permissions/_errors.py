"""The package's own exceptions."""

from __future__ import annotations

import reprlib
from typing import Final

__all__ = [
    "ClaimLostError",
    "CorruptStoreError",
    "InvalidSnapshotError",
    "PermissionsError",
    "UnknownToolError",
    "preview",
]


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


class UnknownToolError(InvalidSnapshotError):
    """A policy names tools that none of the known tools is: a rule, ``require_approval`` or ``auto_approve``
    entry or hook matcher that could never apply (a typo, say ``run_shel`` for ``run_shell``).

    An ``InvalidSnapshotError`` (so a ``ValueError``), raised where the tools are known: loading a policy file
    with a ``[tools]`` table, building a policy with a ``tools=`` registry, wiring an adapter to an agent.

    Attributes:
        path: the field of the first unknown reference (``permissions.deny[0]``).
        value: its tool name (or its text, for a pattern).
        unknown: every reference that names no known tool, each with the nearest known name.
        known: the known tool names.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str = "",
        value: object = None,
        unknown: tuple[object, ...] = (),
        known: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message, path=path, value=value)
        self.unknown = unknown
        self.known = known


class CorruptStoreError(PermissionsError, ValueError):
    """A store holds data this package did not write (a hand-edited row, another program's table, another
    schema version); the operation that met it changed nothing.

    Attributes:
        path: where the bad data is, e.g. ``actions[session='s', id=3].status``.
        value: the offending value.
    """

    def __init__(self, message: str, *, path: str = "", value: object = None) -> None:
        super().__init__(message)
        self.path = path
        self.value = value


class ClaimLostError(PermissionsError, RuntimeError):
    """A resolution outlived its lease: another process took the action up meanwhile, so this one's
    approval or rejection was not recorded (its callback had already run).

    Attributes:
        action_id: the action's id.
    """

    def __init__(self, message: str, *, action_id: int) -> None:
        super().__init__(message)
        self.action_id = action_id


PREVIEW_LIMIT: Final = 200
"""The most characters ``preview`` shows of a value."""


class _Preview(reprlib.Repr):
    """``reprlib`` with an int that may be too long to turn into text at all."""

    def repr_int(self, x: int, level: int) -> str:
        # Past sys.get_int_max_str_digits() (4300 digits), repr() of an int raises ValueError.
        if x.bit_length() > 3000:
            return f"<int of about {int(x.bit_length() * 0.30103)} digits>"
        return super().repr_int(x, level)


_PREVIEW: Final = _Preview()
_PREVIEW.maxlevel = 3
_PREVIEW.maxstring = 80
_PREVIEW.maxother = 80
_PREVIEW.maxlong = 60


def preview(value: object) -> str:
    """A short ``repr`` of a value for an error message, which never fails and is never long.

    Values come from hosts and models: a string of megabytes, an int past Python's digit limit, lists nested
    thousands deep or an object whose ``__repr__`` raises must still give a one-line message.
    """
    try:
        text = _PREVIEW.repr(value)
    except Exception:  # reprlib already guards instances; this guards everything else
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= PREVIEW_LIMIT else text[: PREVIEW_LIMIT - 3] + "..."
