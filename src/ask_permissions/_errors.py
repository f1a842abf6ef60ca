"""The package's own exceptions."""

from __future__ import annotations

import reprlib
from typing import Final

__all__ = [
    "ClaimLostError",
    "CorruptStoreError",
    "InvalidEvidenceError",
    "InvalidSnapshotError",
    "PermissionsError",
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


class InvalidEvidenceError(PermissionsError, ValueError):
    """A case file or an audit line is not what it claims to be; nothing was decided on its account.

    The message is one line: ``cases.toml:12: case[2].expect: expected one of ...; got 'allow'``.

    Attributes:
        file: the file it came from.
        line: the line (1-based; 0 when the file as a whole is at fault).
        field: the bad field (``case[2].expect``, ``outcome``), empty for the line as a whole.
        value: the offending value.
    """

    def __init__(self, file: str, line: int, field: str, expected: str, value: object) -> None:
        where = f"{file}:{line}: " if line else f"{file}: "
        what = f"{field}: " if field else ""
        super().__init__(f"{where}{what}expected {expected}; got {preview(value)}")
        self.file = file
        self.line = line
        self.field = field
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
