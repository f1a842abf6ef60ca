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
    "ResolutionNotRecordedError",
    "SandboxUnavailableError",
    "StoreClosedError",
    "StoreError",
    "StoreUnavailableError",
    "SubmitOutcomeUnknownError",
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


class StoreError(PermissionsError):
    """An operation failed because of its store (a database): the base of the store errors below.

    Each also subclasses the built-in it semantically is. A database driver's error is never raised as
    it is: the package's error carries its message, and the driver's exception is its ``__cause__``.
    """


class CorruptStoreError(StoreError, ValueError):
    """A store holds data this package did not write (a hand-edited row, another program's table, another
    schema version, a file that is not a database); the operation that met it changed nothing.

    Attributes:
        path: where the bad data is, e.g. ``actions[session='s', id=3].status``.
        value: the offending value.
    """

    def __init__(self, message: str, *, path: str = "", value: object = None) -> None:
        super().__init__(message)
        self.path = path
        self.value = value


class StoreUnavailableError(StoreError, ConnectionError):
    """The store could not carry out an operation now: its server is down or unreachable, the connection
    broke, the database file is locked by another process past the timeout, its disk is full, or it is
    read-only. Whatever the operation would have changed is unchanged (see ``ResolutionNotRecordedError``
    and ``SubmitOutcomeUnknownError`` for the two exceptions), so it can be tried again.

    Attributes:
        store: the store, as its messages name it (a PostgreSQL URL without its password).
    """

    def __init__(self, message: str, *, store: str) -> None:
        super().__init__(message)
        self.store = store


class ResolutionNotRecordedError(StoreUnavailableError):
    """An approval's or rejection's callback ran, but the store could not record the resolution within
    the claim's lease. The action stays claimed by this process (``"applying"`` everywhere): no other
    process runs its callback, and this process keeps renewing the claim and trying to record the
    resolution until it succeeds (or the process ends: then the action is pending again after the lease).

    Attributes:
        action_id: the action's id.
        status: ``"approved"`` or ``"rejected"``, the resolution that waits to be recorded.
    """

    def __init__(self, message: str, *, store: str, action_id: int, status: str) -> None:
        super().__init__(message, store=store)
        self.action_id = action_id
        self.status = status


class SubmitOutcomeUnknownError(StoreUnavailableError):
    """A submit's connection broke with its insert sent, and the server could not be asked within the
    store's ``lost_reply_timeout`` (or before the store was closed) whether the insert was written: the
    call may be queued. The store remembers it: submitted again on the same store (same session, tool,
    arguments and call id), the call is queued once, with the id the first insert took if it was written.

    Attributes:
        session: the session the call was submitted to.
    """

    def __init__(self, message: str, *, store: str, session: str) -> None:
        super().__init__(message, store=store)
        self.session = session


class StoreClosedError(StoreError, RuntimeError):
    """The store was closed: ``store.close()`` wakes whoever waits on it (``wait``, ``wait_async``) with
    this error, and a wait begun afterwards raises it at once. A database store raises it for every
    submit, approval, rejection and drain once ``close()`` began, and for every operation once it has
    returned; the operation changed nothing. A closed store cannot be used again: open another.

    Attributes:
        store: the store, as its messages name it (``memory:`` for a ``MemoryStore``).
    """

    def __init__(self, message: str, *, store: str) -> None:
        super().__init__(message)
        self.store = store


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


class ClaimLostError(StoreError, RuntimeError):
    """A resolution outlived its lease: another process took the action up meanwhile, so this one's
    approval or rejection was not recorded (its callback had already run).

    Attributes:
        action_id: the action's id.
    """

    def __init__(self, message: str, *, action_id: int) -> None:
        super().__init__(message)
        self.action_id = action_id


class SandboxUnavailableError(PermissionsError, OSError):
    """A sandbox cannot be built or cannot start here, so nothing ran: bubblewrap is missing, the kernel
    refuses the namespaces it needs, or it could not set the walls up for one command.

    Attributes:
        missing: what is missing, in a few words (``"bwrap"``, ``"user namespaces"``, ...).
        detail: what the system said (bubblewrap's own message), or ``None``.
    """

    def __init__(self, message: str, *, missing: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.missing = missing
        self.detail = detail


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
