"""The mode gate: Permissions blocks a fixed set of change tools until each call is approved."""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, final, overload

from ask_permissions._clock import utc_now
from ask_permissions._names import require_tool_names
from ask_permissions._tool_call import read_tool_call
from ask_permissions.typing import Clock, Mode

from ._results import BlockResult, ProceedResult, block, proceed

__all__ = ["Approval", "ApprovalStatus", "Permissions"]

_logger: Final = logging.getLogger("ask_permissions.gate")

ApprovalStatus: TypeAlias = Literal["pending", "approved"]
"""A gate approval's status: ``"pending"`` until :meth:`Permissions.approve`, then ``"approved"``.

There is no rejected status: an entry nobody approves keeps blocking.
"""

_APPROVAL_KEYS: Final = frozenset({"tool_call_id", "tool_name", "status", "created_at"})


@final
@dataclass(frozen=True, slots=True)
class Approval:
    """A sticky approval the gate records for one blocked ``tool_call_id``.

    Attributes:
        tool_call_id: the id of the blocked tool call (the key ``approve`` takes).
        tool_name: the blocked tool's name.
        status: ``"pending"`` or ``"approved"``.
        created_at: when the gate recorded the entry (aware); a timeout is measured from it.
    """

    tool_call_id: Hashable
    tool_name: str
    status: ApprovalStatus
    created_at: datetime

    @property
    def is_pending(self) -> bool:
        """Whether the entry still waits for :meth:`Permissions.approve`."""
        return self.status == "pending"

    @property
    def is_approved(self) -> bool:
        """Whether the entry was approved."""
        return self.status == "approved"

    @overload
    def __getitem__(self, key: Literal["tool_call_id"]) -> Hashable: ...
    @overload
    def __getitem__(self, key: Literal["tool_name"]) -> str: ...
    @overload
    def __getitem__(self, key: Literal["status"]) -> ApprovalStatus: ...
    @overload
    def __getitem__(self, key: Literal["created_at"]) -> datetime: ...
    @overload
    def __getitem__(self, key: str) -> object: ...

    def __getitem__(self, key: object) -> object:
        """A field by name, like the gem's ``approval[:status]``; ``KeyError`` for anything else."""
        if not isinstance(key, str) or key not in _APPROVAL_KEYS:
            raise KeyError(key)
        return getattr(self, key)


_DEFAULT_TOOLS: Final[tuple[str, ...]] = ("write", "edit", "bash", "destroy")
_ACCESS_MODES: Final[Mapping[Mode, Mapping[str, tuple[str, ...]]]] = MappingProxyType(
    {
        "full_access": MappingProxyType({"blocked_tools": ()}),
        "ask_before_changes": MappingProxyType({"blocked_tools": _DEFAULT_TOOLS}),
        "read_only": MappingProxyType({"blocked_tools": _DEFAULT_TOOLS}),
    }
)


@final
class Permissions:
    """The simple mode gate: blocks a fixed set of change tools and records a sticky approval per call id.

    A blocked call records one pending :class:`Approval` keyed by its ``tool_call_id``; once
    :meth:`approve` is called with that id, later calls with the same id proceed. Approving one id never
    unlocks another. The first block of an id logs a reminder at WARNING on the ``ask_permissions.gate``
    logger. Thread-safe: the approvals are guarded by a private lock, which is never held while the
    clock is called or a message is logged.

    Args:
        mode: ``"full_access"`` (blocks nothing), ``"ask_before_changes"`` or ``"read_only"`` (both block
            ``DEFAULT_TOOLS``), or ``None``. With a mode, ``blocked_tools`` is ignored.
        blocked_tools: without a mode, the tool names to block instead of ``DEFAULT_TOOLS``.
        timeout: seconds (``int``/``float``) or a ``timedelta`` after which an entry, pending or approved,
            expires; ``None`` means never.
        clock: a zero-argument callable returning an aware ``datetime``; defaults to now in UTC.

    Raises:
        ValueError: unknown mode, empty tool name, or a timeout that is not positive and finite.
        TypeError: a blocked tool name that is not a string, a timeout of another type, a clock
            that is not callable.
    """

    DEFAULT_TOOLS: Final[tuple[str, ...]] = _DEFAULT_TOOLS
    """The tools blocked when no mode and no ``blocked_tools`` are given."""

    ACCESS_MODES: Final[Mapping[Mode, Mapping[str, tuple[str, ...]]]] = _ACCESS_MODES
    """Each mode's read-only configuration: ``{"blocked_tools": (...)}``."""

    DEFAULT_BLOCKED_TOOLS: Final[tuple[str, ...]] = _DEFAULT_TOOLS
    """Alias of ``DEFAULT_TOOLS``."""

    MODE_BLOCKED_TOOLS: Final[Mapping[Mode, tuple[str, ...]]] = MappingProxyType(
        {mode: config["blocked_tools"] for mode, config in _ACCESS_MODES.items()}
    )
    """Each mode's blocked tools, derived from ``ACCESS_MODES``."""

    __slots__ = ("__weakref__", "_approvals", "_blocked", "_clock", "_lock", "_mode", "_timeout")

    def __init__(
        self,
        *,
        mode: Mode | None = None,
        blocked_tools: Iterable[str] | None = None,
        timeout: float | timedelta | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._mode: Final[Mode | None] = _read_mode(mode)
        if self._mode is not None:
            # As in the gem: an explicit mode decides, and blocked_tools is ignored.
            blocked: tuple[str, ...] = _ACCESS_MODES[self._mode]["blocked_tools"]
        elif blocked_tools is None:
            blocked = _DEFAULT_TOOLS
        else:
            blocked = tuple(dict.fromkeys(require_tool_names(blocked_tools, "blocked_tools")))
        self._blocked: Final = blocked
        self._timeout: Final = _read_timeout(timeout)
        if clock is not None and not callable(clock):
            raise TypeError(f"clock: expected a callable returning an aware datetime; got {clock!r}")
        self._clock: Final[Clock] = clock if clock is not None else utc_now
        self._lock: Final = threading.Lock()
        # Insertion order is creation order: pending_approvals lists entries in that order.
        self._approvals: Final[dict[Hashable, Approval]] = {}

    @property
    def mode(self) -> Mode | None:
        """The access mode, or ``None`` when none was given."""
        return self._mode

    @property
    def blocked_tools(self) -> list[str]:
        """The blocked tool names (a fresh list each time)."""
        return list(self._blocked)

    @property
    def timeout(self) -> timedelta | None:
        """How long an entry lives, as a ``timedelta``; ``None`` means entries never expire."""
        return self._timeout

    @property
    def clock(self) -> Clock:
        """The clock the gate stamps entries with."""
        return self._clock

    @property
    def pending_approvals(self) -> list[Approval]:
        """Entries whose status is ``"pending"``, in creation order (a fresh list each time).

        Expired entries are listed too: only :meth:`before_tool_call` acts on expiry.
        """
        with self._lock:
            return [entry for entry in self._approvals.values() if entry.status == "pending"]

    def approve(self, tool_call_id: object) -> bool:
        """Approve the entry recorded for ``tool_call_id``.

        Returns ``True`` for any existing entry, pending or already approved, and ``False`` for an
        unknown id (``None`` included: calls without an id are never recorded). Never raises. Approving
        an expired entry does not revive it: the next call with that id starts a fresh pending entry.
        """
        if tool_call_id is None or not _is_hashable(tool_call_id):
            return False
        with self._lock:
            entry = self._approvals.get(tool_call_id)
            if entry is None:
                return False
            if entry.status == "pending":
                self._approvals[tool_call_id] = dataclasses.replace(entry, status="approved")
            return True

    def before_tool_call(self, tool_call: object, context: object = None) -> ProceedResult | BlockResult:
        """Decide whether ``tool_call`` may run: proceed, or block until its id is approved.

        Args:
            tool_call: an object with ``name``, ``arguments`` and ``id``, or a mapping with those keys.
            context: ignored; accepted so the gate fits any ``before_tool_call`` hook.

        Raises:
            TypeError: the tool call has no string name, or a blocked call's id is not hashable.
            ValueError: the tool name is empty.
        """
        name, _, call_id = read_tool_call(tool_call)
        if name not in self._blocked:
            return proceed()
        reason = (
            f"{name} requires approval"
            if self._mode is None
            else f"{name} requires approval (mode: {self._mode})"
        )
        if call_id is None:
            # No key to approve by: such a call can never be approved, so it always blocks.
            _logger.warning(
                "[Permissions] Tool '%s' requires approval, but the call has no id to approve it by.", name
            )
            return block(reason)
        if not _is_hashable(call_id):
            raise TypeError(f"tool_call.id: expected a hashable id (a string); got {call_id!r}")
        now = self._now()
        created = False
        with self._lock:
            entry = self._approvals.get(call_id)
            if entry is not None and self._is_expired(entry, now):
                del self._approvals[call_id]
                entry = None
            if entry is None:
                self._approvals[call_id] = Approval(call_id, name, "pending", now)
                created = True
            elif entry.status == "approved":
                # As in the gem, the approval is sticky per id: later calls with this id proceed.
                return proceed()
        if created:
            _logger.warning(
                "[Permissions] Tool '%s' requires approval. Call approve('%s') to allow.", name, call_id
            )
        return block(reason)

    def _now(self) -> datetime:
        now = self._clock()
        if not isinstance(now, datetime):
            raise TypeError(f"clock: expected an aware datetime; got {now!r}")
        if now.utcoffset() is None:
            raise ValueError(f"clock: expected an aware datetime; got naive {now!r}")
        return now

    def _is_expired(self, entry: Approval, now: datetime) -> bool:
        # Strictly greater: an entry exactly at the timeout is still live, as in the gem.
        return self._timeout is not None and now - entry.created_at > self._timeout

    def __repr__(self) -> str:
        with self._lock:
            pending = sum(1 for entry in self._approvals.values() if entry.status == "pending")
        return f"<Permissions mode={self._mode!r} blocked_tools={list(self._blocked)!r} pending={pending}>"


def _read_mode(mode: object) -> Mode | None:
    if mode is None:
        return None
    # Anything that is not one of the three names, whatever its type, is an unknown mode.
    if isinstance(mode, str):
        for known in _ACCESS_MODES:
            if mode == known:
                return known
    raise ValueError(f"Unknown access mode: {mode!r}. Valid: {', '.join(_ACCESS_MODES)}")


def _read_timeout(timeout: object) -> timedelta | None:
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        if timeout <= timedelta(0):
            raise ValueError(f"timeout: expected a positive duration; got {timeout!r}")
        return timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout: expected seconds (int or float) or a timedelta; got {timeout!r}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout: expected a positive, finite number of seconds; got {timeout!r}")
    try:
        return timedelta(seconds=timeout)
    except OverflowError:
        raise ValueError(
            f"timeout: expected a number of seconds a timedelta can hold; got {timeout!r}"
        ) from None


def _is_hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
