"""The approval queue: pending human decisions, resolved in order, safe to share across threads."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Final, TypeAlias, TypeGuard, final

from ask_permissions._clock import utc_now
from ask_permissions._errors import InvalidSnapshotError
from ask_permissions._names import require_tool_name
from ask_permissions._strict import (
    SNAPSHOT_VERSION,
    child,
    fail,
    read_bool,
    read_list,
    read_mapping,
    read_str,
    read_version,
)
from ask_permissions.typing import ActionStatus, Clock, ResolutionScope

__all__ = ["Action", "ApprovalQueue", "Callback"]

Callback: TypeAlias = Callable[["Action"], object]
"""A queue callback: called with one argument, the ``Action``; its return value is ignored."""

_SCOPES: Final[tuple[ResolutionScope, ...]] = ("once", "session", "project")
_RESOLVED: Final = frozenset({"approved", "rejected"})
_EXPIRED_FEEDBACK: Final = "expired"
_ENTRY_REQUIRED: Final = ("id", "tool_name")
_ENTRY_OPTIONAL: Final = ("tool_call_id", "args", "auto_approvable", "message", "submitted_at")


@final
@dataclass(frozen=True, slots=True, repr=False)
class Action:
    """One submission to the queue: immutable; each change of status is a new ``Action``.

    ``status`` goes ``"pending"`` → ``"applying"`` (while ``on_approve``/``on_reject`` runs) →
    ``"approved"`` or ``"rejected"``, or back to ``"pending"`` when that callback raises.
    ``resolution_scope`` is set on approval (``"once"`` for auto-approvals), ``feedback`` on rejection.
    """

    id: int
    tool_call_id: Any
    tool_name: str
    args: Any
    auto_approvable: bool
    status: ActionStatus
    submitted_at: datetime
    message: str | None
    resolution_scope: ResolutionScope | None = None
    feedback: str | None = None

    @property
    def is_pending(self) -> bool:
        """Whether it waits for a decision."""
        return self.status == "pending"

    @property
    def is_applying(self) -> bool:
        """Whether its ``on_approve``/``on_reject`` callback is running right now."""
        return self.status == "applying"

    @property
    def is_approved(self) -> bool:
        """Whether it was approved."""
        return self.status == "approved"

    @property
    def is_rejected(self) -> bool:
        """Whether it was rejected."""
        return self.status == "rejected"

    @property
    def scope(self) -> ResolutionScope | None:
        """Alias of ``resolution_scope``."""
        return self.resolution_scope

    def __repr__(self) -> str:
        extra = ""
        if self.resolution_scope is not None:
            extra += f", scope={self.resolution_scope!r}"
        if self.feedback is not None:
            extra += f", feedback={self.feedback!r}"
        return (
            f"Action(id={self.id!r}, tool_name={self.tool_name!r}, status={self.status!r}{extra}, "
            f"tool_call_id={self.tool_call_id!r}, args={self.args!r}, "
            f"auto_approvable={self.auto_approvable!r}, message={self.message!r}, "
            f"submitted_at={self.submitted_at.isoformat()})"
        )


def _is_id(value: object) -> TypeGuard[int]:
    """Whether ``value`` can be an action id (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_scope(scope: object) -> ResolutionScope:
    for known in _SCOPES:
        if scope == known:
            return known
    raise ValueError(f"Unknown resolution scope: {scope!r}. Valid: {', '.join(_SCOPES)}")


def _check_feedback(feedback: object) -> str | None:
    if feedback is None:
        return None
    if not isinstance(feedback, str):
        raise TypeError(f"feedback: expected a string or None; got {feedback!r}")
    return str.__str__(feedback)


def _check_timeout(timeout: float | None) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout: expected seconds (a number) or None; got {timeout!r}")
    if math.isnan(timeout) or timeout < 0:
        raise ValueError(f"timeout: expected a non-negative number of seconds or None; got {timeout!r}")


def _aware(moment: object, field: str) -> datetime:
    """An aware datetime (a naive one is taken as UTC)."""
    if not isinstance(moment, datetime):
        raise TypeError(f"{field}: expected a datetime; got {moment!r}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class _NotJSON(ValueError):
    """A value that JSON cannot hold as is, at ``path``."""

    def __init__(self, path: str, expected: str, value: object) -> None:
        super().__init__(f"{path}: expected {expected}; got {value!r}")
        self.path = path
        self.value = value


def _json_copy(value: object, path: str) -> object:
    """A copy of ``value`` made of dict/list/str/int/float/bool/None only (``_NotJSON`` otherwise)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)  # the text: a str-mixin Enum member's str() is not its value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJSON(path, "a finite number", value)
        return float(value)
    if isinstance(value, Mapping):
        copied: dict[str, object] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotJSON(path, "string keys", key)
            copied[str.__str__(key)] = _json_copy(item, child(path, key))
        return copied
    if isinstance(value, list | tuple):
        return [_json_copy(item, child(path, index)) for index, item in enumerate(value)]
    raise _NotJSON(path, "a JSON value (dict, list, str, int, float, bool or None)", value)


def _read_json(value: object, path: str) -> object:
    """A JSON-safe copy of snapshot data, or ``InvalidSnapshotError`` naming the path."""
    try:
        return _json_copy(value, path)
    except _NotJSON as error:
        raise InvalidSnapshotError(str(error), path=error.path, value=error.value) from None
    except RecursionError:
        fail(path, "JSON nested less deeply", value)


def _read_entry(entry: object, path: str, default_time: datetime) -> Action:
    data = read_mapping(entry, path, required=_ENTRY_REQUIRED, optional=_ENTRY_OPTIONAL)
    action_id = data["id"]
    if type(action_id) is not int or action_id < 1:
        fail(child(path, "id"), "a positive integer", action_id)
    tool_name = str.__str__(read_str(data["tool_name"], child(path, "tool_name"), non_empty=True))

    tool_call_id = data.get("tool_call_id")
    if tool_call_id is not None and (
        isinstance(tool_call_id, bool) or not isinstance(tool_call_id, str | int)
    ):
        fail(child(path, "tool_call_id"), "a string, an integer or null", tool_call_id)

    args: object = {}
    if data.get("args") is not None:
        if not isinstance(data["args"], Mapping):
            fail(child(path, "args"), "an object", data["args"])
        args = _read_json(data["args"], child(path, "args"))

    auto_approvable = False
    if data.get("auto_approvable") is not None:
        auto_approvable = read_bool(data["auto_approvable"], child(path, "auto_approvable"))

    message = data.get("message")
    if message is not None:
        message = str.__str__(read_str(message, child(path, "message")))

    submitted_at = default_time
    if data.get("submitted_at") is not None:
        text = read_str(data["submitted_at"], child(path, "submitted_at"))
        try:
            parsed = datetime.fromisoformat(text)
        except (ValueError, OverflowError):
            fail(child(path, "submitted_at"), "an ISO 8601 timestamp", text)
        submitted_at = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)

    return Action(
        id=action_id,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        args=args,
        auto_approvable=auto_approvable,
        status="pending",
        submitted_at=submitted_at,
        message=message,
    )


def _read_snapshot(snapshot: object, default_time: datetime) -> tuple[int, list[Action]]:
    """Validate a queue snapshot completely; return ``(next_id, actions in id order)``."""
    data = read_mapping(snapshot, "", required=("version", "next_id", "pending_actions"))
    read_version(data, "")
    next_id = data["next_id"]
    if type(next_id) is not int or next_id < 0:
        fail("next_id", "a non-negative integer", next_id)
    actions: dict[int, Action] = {}
    for index, entry in enumerate(read_list(data["pending_actions"], "pending_actions")):
        path = child("pending_actions", index)
        action = _read_entry(entry, path, default_time)
        if action.id in actions:
            fail(child(path, "id"), "an id not used by an earlier entry", action.id)
        actions[action.id] = action
    return next_id, [actions[action_id] for action_id in sorted(actions)]


def _snapshot_entry(action: Action) -> dict[str, Any]:
    """One ``pending_actions`` entry; ``_NotJSON`` when a restore could not read it back."""
    where = f"action {action.id} "
    if not isinstance(action.args, Mapping):
        raise _NotJSON(where + "args", "a mapping", action.args)
    call_id = action.tool_call_id
    if call_id is not None and (isinstance(call_id, bool) or not isinstance(call_id, str | int)):
        raise _NotJSON(where + "tool_call_id", "a string, an integer or None", call_id)
    return {
        "id": action.id,
        "tool_call_id": _json_copy(call_id, where + "tool_call_id"),
        "tool_name": action.tool_name,
        "args": _json_copy(action.args, where + "args"),
        "auto_approvable": action.auto_approvable,
        "message": action.message,
        "submitted_at": action.submitted_at.isoformat(),
    }


def _wake(
    waiters: Iterable[tuple[asyncio.AbstractEventLoop, asyncio.Future[Action]]], action: Action
) -> None:
    """Complete async waiters from any thread; a closed loop has no one left to wake."""
    for loop, future in waiters:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_complete, future, action)


def _complete(future: asyncio.Future[Action], action: Action) -> None:
    if not future.done():
        future.set_result(action)


@final
class ApprovalQueue:
    """The source of truth for pending human decisions about tool calls.

    Each ``submit`` becomes an ``Action`` with the next sequential id (1, 2, 3, ...). Actions that are
    ``auto_approvable`` and whose tool maps to ``True`` in ``auto_approve`` are approved by the drain,
    in id order, never overtaking a manual item. Callbacks take one argument, the ``Action``.

    Thread safety: every method may be called from any thread, including from inside the queue's own
    callbacks; a private lock guards the state and is never held while a callback (or the clock) runs.

    Args:
        auto_approve: tool name → ``True`` for the tools the drain may approve (copied; any value other
            than the object ``True`` means no).
        on_submit: called with each new action while it is still pending, before any auto-approval.
        on_approve: called with the action (status ``"applying"``) when it is approved.
        on_reject: called with the action (status ``"applying"``) when it is rejected.
        clock: returns the current aware ``datetime`` (default: now, UTC).
    """

    __slots__ = (
        "_actions",
        "_applying",
        "_async_waiters",
        "_auto_approve",
        "_changed",
        "_clock",
        "_completed",
        "_drain_owner",
        "_last_id",
        "_requested",
        "_submitting",
        "_unresolved",
        "_unresolved_by_call",
        "on_approve",
        "on_reject",
        "on_submit",
    )

    def __init__(
        self,
        *,
        auto_approve: Mapping[str, object] | None = None,
        on_submit: Callback | None = None,
        on_approve: Callback | None = None,
        on_reject: Callback | None = None,
        clock: Clock | None = None,
    ) -> None:
        if auto_approve is None:
            auto_approve = {}
        if not isinstance(auto_approve, Mapping):
            raise TypeError(f"auto_approve: expected a mapping of tool name to True; got {auto_approve!r}")
        for name in auto_approve:
            if not isinstance(name, str):
                raise TypeError(f"auto_approve: expected tool names (str) as keys; got {name!r}")
        self._auto_approve: Final[Mapping[str, object]] = MappingProxyType(dict(auto_approve))
        self.on_submit = on_submit
        self.on_approve = on_approve
        self.on_reject = on_reject
        self._clock: Final[Clock] = utc_now if clock is None else clock

        self._changed: Final = threading.Condition(threading.Lock())
        # Every action ever submitted or restored, by id; resolved ones stay here for queue[id].
        self._actions: Final[dict[int, Action]] = {}
        # Ids of the pending and applying actions in id order (ids only ever grow, and a rollback does
        # not move an id), so the head, the pending list and any_pending never look at history.
        self._unresolved: Final[OrderedDict[int, None]] = OrderedDict()
        # The same ids by the call they stand for, so a host re-running a call finds its action without
        # scanning every pending one.
        self._unresolved_by_call: Final[dict[tuple[type, Hashable], list[int]]] = {}
        self._applying: Final[set[int]] = set()
        # id -> thread ident, while that thread runs on_submit for it: the drain must not approve an
        # action before its on_submit returns, nor overtake it.
        self._submitting: Final[dict[int, int]] = {}
        self._async_waiters: Final[
            dict[int, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Action]]]]
        ] = {}
        self._last_id = 0
        # Drain bookkeeping: requests are numbered; a drain owner marks all requests recorded so far as
        # completed at an instant (under the lock) when the head is not eligible, so none is lost.
        self._drain_owner: int | None = None
        self._requested = 0
        self._completed = 0

    # -- reading ---------------------------------------------------------------------------------------

    @property
    def auto_approve(self) -> Mapping[str, object]:
        """The tools the drain may approve (read-only)."""
        return self._auto_approve

    def get(self, action_id: object) -> Action | None:
        """The action with this id (in any status), or ``None``; never raises."""
        if not _is_id(action_id):
            return None
        with self._changed:
            return self._actions.get(action_id)

    def __getitem__(self, action_id: object) -> Action | None:
        """``queue[id]``: same as ``get``."""
        return self.get(action_id)

    @property
    def pending_actions(self) -> list[Action]:
        """The pending actions in id order (a fresh list; applying ones are not pending)."""
        with self._changed:
            return self._pending()

    def is_pending(self, action_id: object) -> bool:
        """Whether this id names a pending action."""
        action = self.get(action_id)
        return action is not None and action.status == "pending"

    def any_pending(self) -> bool:
        """Whether any action is pending."""
        with self._changed:
            return len(self._unresolved) > len(self._applying)

    def pending_for_call(self, tool_call_id: object) -> list[Action]:
        """The pending actions submitted for this ``tool_call_id``, in id order (a fresh list).

        Ids match by type and value: ``1`` is not ``True`` or ``1.0``. ``None`` matches nothing: a call
        without an id cannot be recognised again.
        """
        if tool_call_id is None:
            return []
        key = _call_key(tool_call_id)
        with self._changed:
            if key is None:  # an unhashable id: compare it with each unresolved action's own
                ids = [
                    action_id
                    for action_id in self._unresolved
                    if _same_call_id(self._actions[action_id].tool_call_id, tool_call_id)
                ]
            else:
                indexed = self._unresolved_by_call.get(key)
                if not indexed:
                    return []
                ids = indexed
            return [self._actions[action_id] for action_id in ids if action_id not in self._applying]

    def __repr__(self) -> str:
        with self._changed:
            pending = len(self._unresolved) - len(self._applying)
            next_id = self._last_id + 1
        return f"<ApprovalQueue pending={pending} next_id={next_id}>"

    # -- submitting ------------------------------------------------------------------------------------

    def submit(
        self,
        *,
        tool_call_id: Any,
        tool_name: str,
        args: Any = None,
        auto_approvable: bool = False,
        message: str | None = None,
    ) -> int:
        """Queue a tool call for a decision; return its id.

        Fires ``on_submit`` while the action is pending, then drains. When this returns, no eligible
        action is left waiting at the head of the queue, whatever other threads were doing (unless it
        is called from inside one of this queue's callbacks: then the outer call's drain covers it).
        If ``on_submit`` raises, the action stays pending, the exception propagates and this submit
        does not drain.

        Raises:
            TypeError: ``tool_name`` is not a string, ``auto_approvable`` not a bool, ``message`` not a
                string or None.
            ValueError: ``tool_name`` is empty.
        """
        name = require_tool_name(tool_name)
        if not isinstance(auto_approvable, bool):
            raise TypeError(f"auto_approvable: expected True or False; got {auto_approvable!r}")
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message: expected a string or None; got {message!r}")
        submitted_at = self._now()
        on_submit = self.on_submit
        with self._changed:
            self._last_id += 1
            action = Action(
                id=self._last_id,
                tool_call_id=tool_call_id,
                tool_name=name,
                args={} if args is None else args,
                auto_approvable=auto_approvable,
                status="pending",
                submitted_at=submitted_at,
                message=message if message is None else str.__str__(message),
            )
            self._actions[action.id] = action
            self._track(action)
            if on_submit is not None:
                self._submitting[action.id] = threading.get_ident()
        if on_submit is not None:
            try:
                on_submit(action)
            finally:
                with self._changed:
                    del self._submitting[action.id]
                    self._changed.notify_all()
        self._drain()
        return action.id

    # -- resolving -------------------------------------------------------------------------------------

    def approve(self, *action_ids: object, scope: ResolutionScope = "once") -> list[Action]:
        """Approve these pending actions, in id order; return the ones approved.

        Unknown and already resolved ids are ignored. Fires ``on_approve`` for each; if one raises,
        that action rolls back to pending, the ones before it stay approved, the ones after it are
        not touched, and the exception propagates. Does not drain.

        Raises:
            ValueError: ``scope`` is not ``"once"``, ``"session"`` or ``"project"`` (nothing approved).
        """
        checked = _check_scope(scope)
        return self._resolve_all(_sorted_ids(action_ids), approve=True, scope=checked, feedback=None)

    def reject(self, *action_ids: object, feedback: str | None = None) -> list[Action]:
        """Reject these pending actions, in id order; return the ones rejected.

        Same rules as ``approve``, with ``on_reject``; ``feedback`` is recorded on each action.

        Raises:
            TypeError: ``feedback`` is not a string or None (nothing rejected).
        """
        checked = _check_feedback(feedback)
        return self._resolve_all(_sorted_ids(action_ids), approve=False, scope=None, feedback=checked)

    def approve_all(self, scope: ResolutionScope = "once") -> list[Action]:
        """Approve every pending action (see ``approve``)."""
        checked = _check_scope(scope)
        return self._resolve_all(self._pending_ids(), approve=True, scope=checked, feedback=None)

    def reject_all(self, feedback: str | None = None) -> list[Action]:
        """Reject every pending action (see ``reject``)."""
        checked = _check_feedback(feedback)
        return self._resolve_all(self._pending_ids(), approve=False, scope=None, feedback=checked)

    def expire_pending(self, older_than: timedelta) -> list[Action]:
        """Reject, with feedback ``"expired"``, every action pending for more than ``older_than``.

        Age is ``now - submitted_at`` by the queue's clock; an action exactly ``older_than`` old has not
        expired. Same rules as ``reject``.

        Raises:
            TypeError: ``older_than`` is not a ``timedelta``.
            ValueError: ``older_than`` is negative.
        """
        if not isinstance(older_than, timedelta):
            raise TypeError(f"older_than: expected a timedelta; got {older_than!r}")
        if older_than < timedelta(0):
            raise ValueError(f"older_than: expected a non-negative timedelta; got {older_than!r}")
        now = self._now()
        with self._changed:
            expired = [action.id for action in self._pending() if now - action.submitted_at > older_than]
        return self._resolve_all(expired, approve=False, scope=None, feedback=_EXPIRED_FEEDBACK)

    def drain(self) -> ApprovalQueue:
        """Approve from the head while the head is eligible; stop at the first manual item.

        Like ``submit``, returns only once no eligible action waits at the head. Returns the queue.
        """
        self._drain()
        return self

    # -- waiting ---------------------------------------------------------------------------------------

    def wait(self, action_id: object, timeout: float | None = None) -> Action | None:
        """Block until the action is approved or rejected; return it (at once if it already is).

        Returns ``None`` for an unknown id.

        Raises:
            TimeoutError: ``timeout`` seconds passed with the action still pending (or applying).
        """
        _check_timeout(timeout)
        if not _is_id(action_id):
            return None
        # A lock cannot wait longer than TIMEOUT_MAX (OverflowError): longer, infinity included, is no limit.
        limit = None if timeout is None or timeout > threading.TIMEOUT_MAX else timeout
        with self._changed:
            if action_id not in self._actions:
                return None
            actions, key = self._actions, action_id
            if not self._changed.wait_for(lambda: actions[key].status in _RESOLVED, limit):
                raise TimeoutError(f"action {key} is still {actions[key].status} after {timeout} s")
            return actions[key]

    async def wait_async(self, action_id: object, timeout: float | None = None) -> Action | None:
        """``wait`` for asyncio: never blocks the event loop; woken by a resolution on any thread.

        Cancelling the awaiting task leaves the action as it is.

        Raises:
            TimeoutError: ``timeout`` seconds passed with the action still pending (or applying).
        """
        _check_timeout(timeout)
        if not _is_id(action_id):
            return None
        key = action_id
        loop = asyncio.get_running_loop()
        with self._changed:
            action = self._actions.get(key)
            if action is None or action.status in _RESOLVED:
                return action
            future: asyncio.Future[Action] = loop.create_future()
            waiter = (loop, future)
            self._async_waiters.setdefault(key, []).append(waiter)
        try:
            if timeout is None:
                return await future
            try:
                return await asyncio.wait_for(future, timeout)
            except TimeoutError:
                raise TimeoutError(f"action {key} is still pending after {timeout} s") from None
        finally:
            with self._changed:
                waiters = self._async_waiters.get(key)
                if waiters is not None and waiter in waiters:
                    waiters.remove(waiter)
                    if not waiters:
                        del self._async_waiters[key]

    # -- snapshots -------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The pending actions as JSON-safe data (applying and resolved ones are left out).

        Format: ``{"version": 1, "next_id": <last id assigned>, "pending_actions": [{"id",
        "tool_call_id", "tool_name", "args", "auto_approvable", "message", "submitted_at"}]}``.

        Raises:
            ValueError: an action's ``args`` is not a mapping of JSON values, or its ``tool_call_id``
                not a string, an integer or None: it could not be restored.
        """
        with self._changed:
            last_id = self._last_id
            pending = self._pending()
        try:
            entries = [_snapshot_entry(action) for action in pending]
        except _NotJSON as error:
            raise ValueError(f"{error} (args must be JSON-safe to be snapshotted)") from None
        return {"version": SNAPSHOT_VERSION, "next_id": last_id, "pending_actions": entries}

    def restore_pending(self, snapshot: object) -> int:
        """Put a snapshot's actions back as pending, with their ids; return how many.

        Fires no ``on_submit`` and drains nothing; the next submit gets ``max(next_id, largest restored
        id) + 1``. Validates everything before changing anything.

        Raises:
            InvalidSnapshotError: the snapshot is invalid (the path to the bad field is in the message).
            ValueError: this queue already holds an action.
        """
        next_id, actions = _read_snapshot(snapshot, self._now())
        with self._changed:
            if self._last_id or self._actions:
                raise ValueError(
                    f"restore_pending: the queue already holds actions (last id {self._last_id}); "
                    "restore into a new queue"
                )
            for action in actions:
                self._actions[action.id] = action
                self._track(action)
            self._last_id = max([next_id, *(action.id for action in actions)])
            self._changed.notify_all()
        return len(actions)

    # -- internals (the lock is held where a name says "locked") ----------------------------------------

    def _now(self) -> datetime:
        return _aware(self._clock(), "clock()")

    def _track(self, action: Action) -> None:
        """Locked: record a new unresolved action."""
        self._unresolved[action.id] = None
        key = _call_key(action.tool_call_id)
        if key is not None:
            self._unresolved_by_call.setdefault(key, []).append(action.id)

    def _untrack(self, action: Action) -> None:
        """Locked: forget a resolved action's place among the unresolved ones."""
        del self._unresolved[action.id]
        key = _call_key(action.tool_call_id)
        if key is not None:
            ids = self._unresolved_by_call[key]
            ids.remove(action.id)
            if not ids:
                del self._unresolved_by_call[key]

    def _pending(self) -> list[Action]:
        """Locked: pending actions in id order."""
        actions, applying = self._actions, self._applying
        return [actions[action_id] for action_id in self._unresolved if action_id not in applying]

    def _pending_ids(self) -> list[int]:
        with self._changed:
            return [action_id for action_id in self._unresolved if action_id not in self._applying]

    def _head(self) -> Action | None:
        """Locked: the pending action with the lowest id (applying ones are skipped, as in the gem)."""
        for action_id in self._unresolved:
            if action_id not in self._applying:
                return self._actions[action_id]
        return None

    def _eligible(self, action: Action) -> bool:
        return action.auto_approvable and self._auto_approve.get(action.tool_name) is True

    def _blocker(self) -> int | None:
        """Locked: the thread running on_submit for an eligible head (the drain must wait for it)."""
        head = self._head()
        if head is None or not self._eligible(head):
            return None
        return self._submitting.get(head.id)

    def _claim(
        self, action: Action, *, approve: bool, scope: ResolutionScope | None, feedback: str | None
    ) -> Action:
        """Locked: mark a pending action applying."""
        applying = _evolve(action, "applying", scope if approve else None, None if approve else feedback)
        self._actions[action.id] = applying
        self._applying.add(action.id)
        return applying

    def _apply(self, applying: Action, callback: Callback | None, approve: bool) -> Action:
        """Run the callback outside the lock, then finish the resolution or roll it back."""
        action_id = applying.id
        try:
            if callback is not None:
                callback(applying)
        except BaseException:
            with self._changed:
                try:
                    self._actions[action_id] = _evolve(applying, "pending", None, None)
                    self._applying.discard(action_id)
                finally:
                    self._changed.notify_all()
            raise
        with self._changed:
            try:
                resolved = _evolve(
                    applying,
                    "approved" if approve else "rejected",
                    applying.resolution_scope,
                    applying.feedback,
                )
                self._actions[action_id] = resolved
                self._applying.discard(action_id)
                self._untrack(resolved)
                waiters = self._async_waiters.pop(action_id, ())
            finally:
                self._changed.notify_all()
        _wake(waiters, resolved)
        return resolved

    def _resolve_all(
        self,
        action_ids: Iterable[int],
        *,
        approve: bool,
        scope: ResolutionScope | None,
        feedback: str | None,
    ) -> list[Action]:
        resolved: list[Action] = []
        for action_id in action_ids:
            with self._changed:
                action = self._actions.get(action_id)
                if action is None or action.status != "pending":
                    continue
                applying = self._claim(action, approve=approve, scope=scope, feedback=feedback)
                callback = self.on_approve if approve else self.on_reject
            resolved.append(self._apply(applying, callback, approve))
        return resolved

    def _drain(self) -> None:
        """Drain, or make sure the thread draining now covers this request before returning.

        One thread owns the drain at a time, so auto-approvals happen one by one in id order. Another
        thread records a request and waits until the owner has finished a pass that began after it
        (the gem returns at once instead, and can lose that wakeup). A call from inside a callback of
        this thread's own drain only records the request: the loop below passes over it before
        returning, so waiting would deadlock for nothing.
        """
        me = threading.get_ident()
        with self._changed:
            self._requested += 1
            ticket = self._requested
            if self._drain_owner == me or not self._take_drain(ticket, me):
                return
        while self._drain_pass(me):
            with self._changed:
                if not self._take_drain(ticket, me):
                    return

    def _take_drain(self, ticket: int, me: int) -> bool:
        """Locked: wait until this thread owns the drain (True) or need not drain at all (False)."""
        while True:
            if self._completed >= ticket:
                return False
            if self._drain_owner is None:
                blocker = self._blocker()
                if blocker is None:
                    self._drain_owner = me
                    return True
                if blocker == me:
                    # Inside our own on_submit for the head: that submit drains once it returns.
                    return False
            self._changed.wait()

    def _drain_pass(self, me: int) -> bool:
        """As the drain's owner, approve eligible heads; False when done, True when handed over."""
        try:
            while True:
                with self._changed:
                    head = self._head()
                    if head is None or not self._eligible(head):
                        # The head is not eligible at this instant, so every request recorded so far is
                        # satisfied; a request recorded later waits for the next owner.
                        self._completed = self._requested
                        self._drain_owner = None
                        self._changed.notify_all()
                        return False
                    if head.id in self._submitting:
                        # Its on_submit is still running: hand over, and wait for it with the others.
                        self._drain_owner = None
                        self._changed.notify_all()
                        return True
                    applying = self._claim(head, approve=True, scope="once", feedback=None)
                    callback = self.on_approve
                self._apply(applying, callback, approve=True)
        except BaseException:
            with self._changed:
                if self._drain_owner == me:
                    self._drain_owner = None
                self._changed.notify_all()
            raise


def _evolve(
    action: Action, status: ActionStatus, scope: ResolutionScope | None, feedback: str | None
) -> Action:
    """``dataclasses.replace`` for the fields a resolution changes, without its per-call overhead."""
    return Action(
        action.id,
        action.tool_call_id,
        action.tool_name,
        action.args,
        action.auto_approvable,
        status,
        action.submitted_at,
        action.message,
        scope,
        feedback,
    )


def _call_key(tool_call_id: object) -> tuple[type, Hashable] | None:
    """An index key for a call id, by type and value; ``None`` for no id or an unhashable one."""
    kind = type(tool_call_id)
    if kind is str or kind is int:  # what frameworks send: no need to ask whether it hashes
        return (kind, tool_call_id)
    if tool_call_id is None:
        return None
    try:
        hash(tool_call_id)
    except TypeError:
        return None
    return (type(tool_call_id), tool_call_id)


def _same_call_id(left: object, right: object) -> bool:
    try:
        return type(left) is type(right) and bool(left == right)
    except Exception:  # a host's id type whose comparison raises is not the same id
        return False


def _sorted_ids(values: Iterable[object]) -> list[int]:
    """Valid ids, each once, in ascending order; anything that cannot be an id is ignored."""
    return sorted({int(value) for value in values if _is_id(value)})
