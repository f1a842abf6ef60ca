"""The mode gate: Permissions blocks a fixed set of change tools until each call is approved."""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, final, overload

from ask_permissions._clock import utc_now
from ask_permissions._errors import preview
from ask_permissions._names import fold_tool_name, require_tool_names
from ask_permissions._tool_call import read_tool_call
from ask_permissions._vocabulary import Clock, Mode

from ._modes import read_access_mode
from ._results import BlockResult, ProceedResult, block, proceed

__all__ = ["Approval", "ApprovalStatus", "Permissions"]

_logger: Final = logging.getLogger("ask_permissions.gate")

ApprovalStatus: TypeAlias = Literal["pending", "approved"]
"""A gate approval's status: ``"pending"`` until :meth:`Permissions.approve`, then ``"approved"``.

There is no rejected status: an entry nobody approves keeps blocking.
"""


@final
@dataclass(frozen=True, slots=True)
class Approval:
    """A sticky approval the gate records for one blocked ``tool_call_id``: the gem's ``Approval``.

    Attributes:
        tool_call_id: the id of the blocked tool call (the key ``approve`` takes).
        tool_name: the blocked tool's name, as the call gave it.
        status: ``"pending"`` or ``"approved"``.
        created_at: when the gate recorded the entry (aware); a timeout is measured from it.
        arguments: the blocked call's arguments, as given (what the call would run).
        reason: the block reason the call got, e.g. ``"bash requires approval"``.
        approved_at: when :meth:`Permissions.approve` approved it, by the gate's clock; ``None`` before.
        tool_call: the tool call object the gate was given (not compared, not shown in the repr).
    """

    tool_call_id: Hashable
    tool_name: str
    status: ApprovalStatus
    created_at: datetime
    _: KW_ONLY
    arguments: Any = None
    reason: str = ""
    approved_at: datetime | None = None
    tool_call: object = field(default=None, repr=False, compare=False)

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
    def __getitem__(self, key: Literal["tool_name", "reason"]) -> str: ...
    @overload
    def __getitem__(self, key: Literal["status"]) -> ApprovalStatus: ...
    @overload
    def __getitem__(self, key: Literal["created_at"]) -> datetime: ...
    @overload
    def __getitem__(self, key: Literal["approved_at"]) -> datetime | None: ...
    @overload
    def __getitem__(self, key: str) -> object: ...

    def __getitem__(self, key: object) -> object:
        """A field by name, like the gem's ``approval[:status]``; ``KeyError`` for anything else."""
        if not isinstance(key, str) or key not in _APPROVAL_KEYS:
            raise KeyError(key)
        return getattr(self, key)


_APPROVAL_KEYS: Final = frozenset(item.name for item in dataclasses.fields(Approval))

_IdKey: TypeAlias = tuple[type, object]
"""How the gate keys an id: its type and value, so that ``1``, ``True`` and ``1.0`` are three ids."""


def _id_key(call_id: object) -> _IdKey:
    """The key of a tool call id; raises for an id that cannot be one (unhashable, or failing to hash)."""
    key: _IdKey
    if isinstance(call_id, str):
        key = (str, str.__str__(call_id))  # a str subclass (a StrEnum member) is its text
    elif isinstance(call_id, tuple):
        key = (tuple, tuple(_id_key(item) for item in call_id))  # (1,) == (True,) otherwise
    elif isinstance(call_id, frozenset):
        key = (frozenset, frozenset(_id_key(item) for item in call_id))
    else:
        key = (type(call_id), call_id)
    hash(key)
    return key


def _find_key(call_id: object) -> _IdKey | None:
    """The key of an id to look up, or ``None`` when no entry can have it."""
    if call_id is None:
        return None
    try:
        return _id_key(call_id)
    except Exception:  # approve and forget never raise: an id that cannot be a key has no entry
        return None


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
    unlocks another: ids are keyed by type and value, so approving ``1`` never approves ``True`` or ``1.0``.
    A call is blocked when its name is a blocked tool's, also after folding (``Bash``, ``bash `` or a
    fullwidth ``bash`` meet a blocked ``bash``). The first block of an id logs a reminder at WARNING on the
    ``ask_permissions.gate`` logger; :meth:`forget` drops an entry. Thread-safe: the approvals are guarded
    by a private lock, which is never held while the clock is called or a message is logged.

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

    __slots__ = (
        "__weakref__",
        "_approvals",
        "_blocked",
        "_blocked_folded",
        "_blocked_names",
        "_clock",
        "_lock",
        "_mode",
        "_timeout",
    )

    def __init__(
        self,
        *,
        mode: Mode | None = None,
        blocked_tools: Iterable[str] | None = None,
        timeout: float | timedelta | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._mode: Final[Mode | None] = read_access_mode(mode)
        if self._mode is not None:
            # As in the gem: an explicit mode decides, and blocked_tools is ignored.
            blocked: tuple[str, ...] = _ACCESS_MODES[self._mode]["blocked_tools"]
        elif blocked_tools is None:
            blocked = _DEFAULT_TOOLS
        else:
            blocked = tuple(dict.fromkeys(require_tool_names(blocked_tools, "blocked_tools")))
        self._blocked: Final = blocked
        self._blocked_names: Final = frozenset(blocked)
        self._blocked_folded: Final = frozenset(fold_tool_name(name) for name in blocked)
        self._timeout: Final = _read_timeout(timeout)
        if clock is not None and not callable(clock):
            raise TypeError(f"clock: expected a callable returning an aware datetime; got {preview(clock)}")
        self._clock: Final[Clock] = clock if clock is not None else utc_now
        self._lock: Final = threading.Lock()
        # Insertion order is creation order: approvals and pending_approvals list entries in that order.
        self._approvals: Final[dict[_IdKey, Approval]] = {}

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
    def approvals(self) -> list[Approval]:
        """Every entry, pending or approved, in creation order (a fresh list each time).

        Expired entries are listed too, as by ``pending_approvals``.
        """
        with self._lock:
            return list(self._approvals.values())

    @property
    def pending_approvals(self) -> list[Approval]:
        """Entries whose status is ``"pending"``, in creation order (a fresh list each time).

        Expired entries are listed too: only :meth:`before_tool_call` acts on expiry.
        """
        with self._lock:
            return [entry for entry in self._approvals.values() if entry.status == "pending"]

    def approve(self, tool_call_id: object) -> bool:
        """Approve the entry recorded for ``tool_call_id``, stamping its ``approved_at`` by the clock.

        Returns ``True`` for any existing entry, pending or already approved (which keeps its
        ``approved_at``), and ``False`` for an unknown id (``None`` included: calls without an id are never
        recorded). Never raises for any id; a clock that fails raises its error, the entry left pending.
        Approving an expired entry does not revive it: the next call with that id starts a fresh pending
        entry.
        """
        key = _find_key(tool_call_id)
        if key is None:
            return False
        while True:
            with self._lock:
                entry = self._approvals.get(key)
                if entry is None:
                    return False
                if entry.status != "pending":
                    return True
            now = self._now()  # outside the lock: the clock is the host's code
            with self._lock:
                if self._approvals.get(key) is entry:
                    self._approvals[key] = dataclasses.replace(entry, status="approved", approved_at=now)
                    return True
            # Another thread approved, replaced or forgot the entry meanwhile: look again.

    def forget(self, tool_call_id: object) -> bool:
        """Drop the entry recorded for ``tool_call_id``, pending or approved; whether there was one.

        For hosts that run long: an entry is otherwise kept for as long as the gate lives. The next call
        with that id blocks again and records a fresh entry. Never raises.
        """
        key = _find_key(tool_call_id)
        if key is None:
            return False
        with self._lock:
            return self._approvals.pop(key, None) is not None

    def before_tool_call(self, tool_call: object, context: object = None) -> ProceedResult | BlockResult:
        """Decide whether ``tool_call`` may run: proceed, or block until its id is approved.

        Args:
            tool_call: an object with ``name``, ``arguments`` and ``id``, or a mapping with those keys.
            context: ignored; accepted so the gate fits any ``before_tool_call`` hook.

        Raises:
            TypeError: the tool call has no string name, or a blocked call's id is not hashable.
            ValueError: the tool name is empty.
        """
        name, arguments, call_id = read_tool_call(tool_call)
        if name not in self._blocked_names and fold_tool_name(name) not in self._blocked_folded:
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
        try:
            key = _id_key(call_id)
        except Exception:
            raise TypeError(
                f"tool_call.id: expected a hashable id (a string); got {preview(call_id)}"
            ) from None
        now = self._now()
        created = False
        with self._lock:
            entry = self._approvals.get(key)
            if entry is not None and self._is_expired(entry, now):
                del self._approvals[key]
                entry = None
            if entry is None:
                self._approvals[key] = Approval(
                    call_id, name, "pending", now, arguments=arguments, reason=reason, tool_call=tool_call
                )
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
            raise TypeError(f"clock: expected an aware datetime; got {preview(now)}")
        if now.utcoffset() is None:
            raise ValueError(f"clock: expected an aware datetime; got naive {preview(now)}")
        return now

    def _is_expired(self, entry: Approval, now: datetime) -> bool:
        # Strictly greater: an entry exactly at the timeout is still live, as in the gem.
        return self._timeout is not None and now - entry.created_at > self._timeout

    def __repr__(self) -> str:
        with self._lock:
            pending = sum(1 for entry in self._approvals.values() if entry.status == "pending")
        return f"<Permissions mode={self._mode!r} blocked_tools={list(self._blocked)!r} pending={pending}>"


def _read_timeout(timeout: object) -> timedelta | None:
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        if timeout <= timedelta(0):
            raise ValueError(f"timeout: expected a positive duration; got {preview(timeout)}")
        return timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout: expected seconds (int or float) or a timedelta; got {preview(timeout)}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout: expected a positive, finite number of seconds; got {preview(timeout)}")
    try:
        return timedelta(seconds=timeout)
    except OverflowError:
        raise ValueError(
            f"timeout: expected a number of seconds a timedelta can hold; got {preview(timeout)}"
        ) from None
