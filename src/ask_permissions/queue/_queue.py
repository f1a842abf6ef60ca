"""The approval queue: pending human decisions, resolved in order, safe to share across threads."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Final, TypeAlias, final

from ask_permissions._clock import utc_now
from ask_permissions._errors import ClaimLostError, StoreError, StoreUnavailableError, preview
from ask_permissions._names import require_tool_name
from ask_permissions._timeouts import check_timeout
from ask_permissions._vocabulary import (
    AUTO_APPROVER,
    EXPIRER,
    SCOPES,
    AskExplanation,
    Clock,
    ResolutionScope,
    one_of,
)

from ._action import RESOLVED, Action, Resolution, check_decided_by, is_id
from ._args import NotJSONError, freeze_args, json_call_id
from ._snapshot import read_snapshot, snapshot_data
from ._store import (
    DEFAULT_SESSION,
    ApprovalStore,
    Claim,
    QueueState,
    ResolutionObserver,
    check_session,
    store_or_memory,
)
from ._waiters import AsyncWaiter, wake
from ._why import read_why

__all__ = ["EXPIRED_FEEDBACK", "Action", "ApprovalQueue", "Callback"]

Callback: TypeAlias = Callable[["Action"], object]

_logger: Final = logging.getLogger("ask_permissions.queue")

"""A queue callback: called with one argument, the ``Action``; its return value is ignored."""

EXPIRED_FEEDBACK: Final = "expired"
"""The feedback of ``expire_pending``'s rejections (and of a policy's asks that ran out of time)."""
_AUTO_APPROVAL: Final = Resolution(True, "once", None, AUTO_APPROVER)


def _check_scope(scope: object) -> ResolutionScope:
    known = one_of(scope, SCOPES)
    if known is not None:
        return known
    raise ValueError(f"Unknown resolution scope: {preview(scope)}. Valid: {', '.join(SCOPES)}")


def _check_feedback(feedback: object) -> str | None:
    if feedback is None:
        return None
    if not isinstance(feedback, str):
        raise TypeError(f"feedback: expected a string or None; got {preview(feedback)}")
    return str.__str__(feedback)


def _check_arguments(arguments: object) -> object:
    """Edited arguments: a JSON object, copied read-only (``None``: not edited)."""
    if arguments is None:
        return None
    if not isinstance(arguments, Mapping):
        raise TypeError(
            "arguments: expected a JSON object (a mapping of names to values) or None; "
            f"got {preview(arguments)}"
        )
    try:
        return freeze_args(arguments, strict=True, path="arguments")
    except NotJSONError as error:
        raise ValueError(f"{error} (edited arguments must be JSON)") from None


def _check_why(why: object) -> AskExplanation | None:
    if why is None:
        return None
    try:
        return read_why(why)
    except NotJSONError as error:
        raise (TypeError if error.path == "why" else ValueError)(str(error)) from None


def _check_age(older_than: object, none_ok: bool) -> timedelta | None:
    if older_than is None and none_ok:
        return None
    if not isinstance(older_than, timedelta):
        expected = "a timedelta or None" if none_ok else "a timedelta"
        raise TypeError(f"older_than: expected {expected}; got {preview(older_than)}")
    if older_than < timedelta(0):
        raise ValueError(f"older_than: expected a non-negative timedelta; got {older_than!r}")
    return older_than


def _aware(moment: object, field: str) -> datetime:
    """An aware datetime (a naive one is taken as UTC)."""
    if not isinstance(moment, datetime):
        raise TypeError(f"{field}: expected a datetime; got {preview(moment)}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@final
class ApprovalQueue:
    """The source of truth for pending human decisions about tool calls.

    Each ``submit`` becomes an ``Action`` with the next sequential id (1, 2, 3, ...). Actions that are
    ``auto_approvable`` and whose tool maps to ``True`` in ``auto_approve`` are approved by the drain,
    in id order, never overtaking a manual item. Callbacks take one argument, the ``Action``.

    The state lives in a store: by default a ``MemoryStore`` of the queue's own. With a durable store
    (``SqliteStore``, ``PostgresStore``) every queue on the same ``session``, in any process, is one
    queue: ids stay sequential, one process drains at a time (held by a database lock), each action is
    resolved once, callbacks fire in the process that resolves, and ``wait`` wakes wherever it runs.

    Thread safety: every method may be called from any thread, including from inside the queue's own
    callbacks; a private lock guards the state and is never held while a callback (or the clock) runs.

    Args:
        auto_approve: tool name → ``True`` for the tools the drain may approve (copied; any value other
            than the object ``True`` means no).
        on_submit: called with each new action while it is still pending, before any auto-approval.
        on_approve: called with the action (status ``"applying"``) when it is approved.
        on_reject: called with the action (status ``"applying"``) when it is rejected.
        clock: returns the current aware ``datetime`` (default: now, UTC).
        require_json: refuse, at ``submit``, arguments or a ``tool_call_id`` that a snapshot could not
            carry (``ValueError`` naming the call), instead of finding out at ``snapshot()``. Always on
            with a durable store.
        store: where the state lives (default: a new ``MemoryStore``).
        session: which of the store's sessions this queue is (default ``"default"``): 1 to 200 printable
            characters.
    """

    __slots__ = (
        "_approves_none",
        "_auto_approve",
        "_changed",
        "_clock",
        "_durable",
        "_idle_head",
        "_local",
        "_require_json",
        "_session",
        "_state",
        "_store",
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
        require_json: bool = False,
        store: ApprovalStore | None = None,
        session: str = DEFAULT_SESSION,
    ) -> None:
        if not isinstance(require_json, bool):
            raise TypeError(f"require_json: expected True or False; got {preview(require_json)}")
        if auto_approve is None:
            auto_approve = {}
        if not isinstance(auto_approve, Mapping):
            raise TypeError(
                f"auto_approve: expected a mapping of tool name to True; got {preview(auto_approve)}"
            )
        for name in auto_approve:
            if not isinstance(name, str):
                raise TypeError(f"auto_approve: expected tool names (str) as keys; got {preview(name)}")
        store = store_or_memory(store)
        self._session: Final = check_session(session)
        self._store: Final = store
        self._durable: Final = store.durable
        self._local: Final = store.local(self._session)
        self._state: Final = self._local.state
        # The session's lock, shared with every queue of this process on the same store and session.
        self._changed: Final = self._local.changed
        self._auto_approve: Final[Mapping[str, object]] = MappingProxyType(dict(auto_approve))
        # No head can be eligible: the drain need not read the head at all.
        self._approves_none: Final = not any(value is True for value in self._auto_approve.values())
        self.on_submit = on_submit
        self.on_approve = on_approve
        self.on_reject = on_reject
        self._clock: Final[Clock] = utc_now if clock is None else clock
        self._require_json: Final = require_json or store.durable
        self._idle_head = False

    # -- reading ---------------------------------------------------------------------------------------

    @property
    def auto_approve(self) -> Mapping[str, object]:
        """The tools the drain may approve (read-only)."""
        return self._auto_approve

    def would_auto_approve(self, tool_name: str, auto_approvable: bool = True) -> bool:
        """Whether the drain approves a submission of this tool by itself, once no manual item is ahead of it:
        the submission is ``auto_approvable`` and ``auto_approve`` maps the tool to ``True`` (the object
        ``True``: any other value means no). The one place that says so, for the drain and for the policies
        that ask whether nobody need answer."""
        return auto_approvable and self._auto_approve.get(tool_name) is True

    @property
    def require_json(self) -> bool:
        """Whether ``submit`` refuses what a snapshot could not carry."""
        return self._require_json

    @property
    def store(self) -> ApprovalStore:
        """Where the queue's state lives."""
        return self._store

    @property
    def session(self) -> str:
        """The store's session this queue is."""
        return self._session

    @property
    def _async_waiters(self) -> dict[int, list[AsyncWaiter]]:
        """The event loops' futures by action id (for tests that look at who waits)."""
        return self._local.waiters.by_id

    def get(self, action_id: object) -> Action | None:
        """The action with this id (in any status), or ``None``; never raises for a bad id."""
        if not is_id(action_id):
            return None
        with self._changed:
            action = self._state.get(action_id)
            news = self._local.noticed(action)
        if news is not None:
            self._announce(news)
        return action

    def __getitem__(self, action_id: object) -> Action | None:
        """``queue[id]``: same as ``get``."""
        return self.get(action_id)

    @property
    def pending_actions(self) -> list[Action]:
        """The pending actions in id order (a fresh list; applying ones are not pending)."""
        with self._changed:
            return self._state.pending()

    def is_pending(self, action_id: object) -> bool:
        """Whether this id names a pending action."""
        action = self.get(action_id)
        return action is not None and action.status == "pending"

    def any_pending(self) -> bool:
        """Whether any action is pending."""
        with self._changed:
            return self._state.counts()[0] > 0

    def pending_for_call(self, tool_call_id: object) -> list[Action]:
        """The pending actions submitted for this ``tool_call_id``, in id order (a fresh list).

        Ids match by type and value: ``1`` is not ``True`` or ``1.0``. ``None`` matches nothing: a call
        without an id cannot be recognised again.
        """
        if tool_call_id is None:
            return []
        with self._changed:
            found = self._state.pending_for_call(tool_call_id)
            for action in found:
                self._local.noticed(action)
            return found

    def rejected_for_call(self, tool_call_id: object) -> list[Action]:
        """The rejected actions submitted for this ``tool_call_id`` and not forgotten, in id order.

        Ids match as for ``pending_for_call``; ``None`` matches nothing.
        """
        if tool_call_id is None:
            return []
        with self._changed:
            return self._state.rejected_for_call(tool_call_id)

    def __repr__(self) -> str:
        with self._changed:
            pending, last_id = self._state.counts()
        return f"<ApprovalQueue pending={pending} next_id={last_id + 1}>"

    # -- submitting ------------------------------------------------------------------------------------

    def submit(
        self,
        *,
        tool_call_id: Any,
        tool_name: str,
        args: Any = None,
        auto_approvable: bool = False,
        message: str | None = None,
        why: AskExplanation | None = None,
    ) -> int:
        """Queue a tool call for a decision; return its id.

        Fires ``on_submit`` while the action is pending, then drains. When this returns, no eligible
        action is left waiting at the head of the queue, whatever other threads were doing (unless it
        is called from inside one of this queue's callbacks: then the outer call's drain covers it; or
        the head's ``on_submit`` runs in another process: then that process drains once it returns).
        If ``on_submit`` raises, the action stays pending, the exception propagates and this submit
        does not drain. ``why`` (an ``AskExplanation``: why the call waits) is kept, read-only, as the
        action's ``why``. With a durable store the submit either queued the call and returns its id, or
        queued nothing and raises ``StoreUnavailableError`` (but see ``SubmitOutcomeUnknownError``): a
        store failure in the drain after the call was queued is logged (logger ``ask_permissions.queue``),
        not raised, and the next drain covers it.

        Raises:
            TypeError: ``tool_name`` is not a string, ``auto_approvable`` not a bool, ``message`` not a
                string or None, ``why`` not a mapping.
            ValueError: ``tool_name`` is empty; ``why`` lacks ``layer`` or ``reason``, has a value of the
                wrong type or an unknown key; or, with ``require_json``, ``args`` is not a JSON value or
                ``tool_call_id`` not a string, an integer or None (the message names the call).
            StoreUnavailableError: (durable stores) the store failed; nothing was queued.
            SubmitOutcomeUnknownError: (PostgreSQL) the connection broke with the call sent, and the
                server stayed out of reach: the call may be queued; submitted again on the same store, it
                is queued once.
        """
        name = require_tool_name(tool_name)
        if not isinstance(auto_approvable, bool):
            raise TypeError(f"auto_approvable: expected True or False; got {preview(auto_approvable)}")
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message: expected a string or None; got {preview(message)}")
        text = message if message is None else str.__str__(message)
        explanation = _check_why(why)
        try:
            if self._require_json:
                json_call_id(tool_call_id, "tool_call_id")
            # What a person approves is what was submitted, whatever the host does to its object later.
            frozen = freeze_args(args, strict=self._require_json)
        except NotJSONError as error:
            raise ValueError(
                f"cannot queue {preview(name)} (tool_call_id {preview(tool_call_id)}): {error}; "
                + (
                    "its store keeps JSON"
                    if self._durable
                    else "this queue requires JSON (require_json=True)"
                )
            ) from None
        submitted_at = self._now()

        def build(action_id: int) -> Action:
            return Action(
                id=action_id,
                tool_call_id=tool_call_id,
                tool_name=name,
                args=frozen,
                auto_approvable=auto_approvable,
                status="pending",
                submitted_at=submitted_at,
                message=text,
                why=explanation,
            )

        on_submit = self.on_submit
        submitting = self._local.drain.submitting
        with self._changed:
            action = self._state.insert(build, submitting=on_submit is not None)
            self._local.noticed(action)
            if on_submit is not None:
                submitting[action.id] = threading.get_ident()
        if on_submit is not None:
            try:
                on_submit(action)
            finally:
                with self._changed:
                    try:
                        del submitting[action.id]
                        self._state.end_submit(action.id)
                    finally:
                        self._changed.notify_all()
        try:
            self._drain()
        except StoreError as error:
            # The call is queued: the submit returns its id. The head waits for the next drain (any
            # submit or drain, in any process), as it would had this process stopped here.
            _logger.warning("action %s is queued, but the drain after it failed: %s", action.id, error)
        return action.id

    # -- resolving -------------------------------------------------------------------------------------

    def approve(
        self,
        *action_ids: object,
        scope: ResolutionScope = "once",
        arguments: Mapping[str, Any] | None = None,
        decided_by: str | None = None,
    ) -> list[Action]:
        """Approve these pending actions, in id order; return the ones approved.

        Unknown and already resolved ids are ignored. Fires ``on_approve`` for each; if one raises,
        that action rolls back to pending, the ones before it stay approved, the ones after it are
        not touched, and the exception propagates. Does not drain.

        ``arguments`` (with one id only) approves the call with these arguments instead of its own: a
        person's edit, kept read-only as the action's ``edited_args``, which is what the tool runs with.
        ``decided_by`` names who approved (a person, or a program acting for one), kept on the action.

        Raises:
            ValueError: ``scope`` is not ``"once"``, ``"session"`` or ``"project"``; ``arguments`` with
                more than one id, or holding a value JSON cannot carry; ``decided_by`` empty, longer than
                200 characters or unprintable (nothing approved, in each case).
            TypeError: ``arguments`` is not a mapping (a JSON object), ``decided_by`` not a string.
            ClaimLostError: (durable stores) the callback outlived the store's lease and another process
                took the action up meanwhile; this approval was not recorded.
            ResolutionNotRecordedError: (durable stores) the callback ran, but the store could not record
                the approval within the lease; the action stays applying, claimed by this process,
                which goes on trying to record it.
            StoreUnavailableError: (durable stores) the store failed before the action was claimed; nothing
                was approved.
        """
        checked = _check_scope(scope)
        edited = _check_arguments(arguments)
        decider = check_decided_by(decided_by)
        ids = _sorted_ids(action_ids)
        if edited is not None and len(action_ids) != 1:
            raise ValueError(f"arguments: edited arguments approve one action; got {len(action_ids)} ids")
        resolution = Resolution(True, checked, None, decider, edited)
        return self._resolve_all(ids, resolution)

    def reject(
        self, *action_ids: object, feedback: str | None = None, decided_by: str | None = None
    ) -> list[Action]:
        """Reject these pending actions, in id order; return the ones rejected.

        Same rules as ``approve``, with ``on_reject``; ``feedback`` (what the model reads) and
        ``decided_by`` are recorded on each action.

        Raises:
            TypeError: ``feedback`` or ``decided_by`` is not a string or None (nothing rejected).
            ValueError: ``decided_by`` is empty, too long or unprintable (nothing rejected).
        """
        resolution = Resolution(False, None, _check_feedback(feedback), check_decided_by(decided_by))
        return self._resolve_all(_sorted_ids(action_ids), resolution)

    def approve_all(self, scope: ResolutionScope = "once", *, decided_by: str | None = None) -> list[Action]:
        """Approve every pending action (see ``approve``)."""
        resolution = Resolution(True, _check_scope(scope), None, check_decided_by(decided_by))
        return self._resolve_all(self._pending_ids(), resolution)

    def reject_all(self, feedback: str | None = None, *, decided_by: str | None = None) -> list[Action]:
        """Reject every pending action (see ``reject``)."""
        resolution = Resolution(False, None, _check_feedback(feedback), check_decided_by(decided_by))
        return self._resolve_all(self._pending_ids(), resolution)

    def expire_pending(self, older_than: timedelta, *, decided_by: str = EXPIRER) -> list[Action]:
        """Reject, with feedback ``"expired"``, every action pending for more than ``older_than``.

        Age is ``now - submitted_at`` by the queue's clock; an action exactly ``older_than`` old has not
        expired. Same rules as ``reject``; ``decided_by`` is ``"expiry"`` unless named.

        Raises:
            TypeError: ``older_than`` is not a ``timedelta``.
            ValueError: ``older_than`` is negative.
        """
        age = _check_age(older_than, none_ok=False)
        assert age is not None
        resolution = Resolution(False, None, EXPIRED_FEEDBACK, check_decided_by(decided_by))
        now = self._now()
        with self._changed:
            pending = self._state.pending()
        expired = [action.id for action in pending if now - action.submitted_at > age]
        return self._resolve_all(expired, resolution)

    def forget_resolved(self, older_than: timedelta | None = None) -> int:
        """Drop approved and rejected actions from the queue's history; return how many were dropped.

        ``older_than`` keeps those resolved within that long: age is ``now - resolved at`` by the queue's
        clock, where an action is resolved at the moment ``approve``, ``reject`` or the drain took it up;
        one exactly ``older_than`` old is kept, and with a clock that goes back none is dropped early.
        ``None`` drops every resolved action. Pending and applying actions are never dropped, nor one a
        ``wait`` of this process has not yet returned. A dropped id reads as unknown (``queue[id]`` is
        ``None``) and is never given again; snapshots, which hold pending actions only, are unchanged.

        Raises:
            TypeError: ``older_than`` is not a ``timedelta`` or None.
            ValueError: ``older_than`` is negative.
        """
        age = _check_age(older_than, none_ok=True)
        cutoff = None if age is None else self._now() - age
        with self._changed:
            return self._state.forget_resolved(cutoff, self._local.waiters.waited)

    def drain(self) -> ApprovalQueue:
        """Approve from the head while the head is eligible; stop at the first manual item.

        Like ``submit``, returns only once no eligible action waits at the head. Returns the queue.
        """
        self._drain()
        return self

    # -- waiting ---------------------------------------------------------------------------------------

    def wait(self, action_id: object, timeout: float | None = None) -> Action | None:
        """Block until the action is approved or rejected; return it (at once if it already is).

        Returns ``None`` for an unknown id (or one another process's ``forget_resolved`` dropped
        meanwhile). With a durable store a resolution in another process wakes it too (see the store).
        While the store is unavailable (its server down, its file locked) the wait goes on, looking again
        now and then, until the store answers or the timeout passes.

        Raises:
            TimeoutError: ``timeout`` seconds passed with the action still pending (or applying), or with
                the store unavailable (then its ``StoreUnavailableError`` is the ``__cause__``).
            StoreClosedError: the store was closed, before the wait or during it (``close`` wakes it).
        """
        check_timeout(timeout)
        if not is_id(action_id):
            return None
        # A lock cannot wait longer than TIMEOUT_MAX (OverflowError): longer, infinity included, is no limit.
        limit = None if timeout is None or timeout > threading.TIMEOUT_MAX else timeout
        key, waiters = action_id, self._local.waiters
        look = _Look(self._store, self._state, key)
        with self._watching(), self._changed:
            decided = look.decided()
            news = self._local.noticed(look.seen)
            if not decided:
                waiters.enter(key)
                try:
                    if not self._changed.wait_for(look.decided, limit):
                        raise look.timed_out(timeout)
                    news = self._local.noticed(look.seen)
                finally:
                    waiters.leave(key)
        if news is not None:
            self._announce(news)
        return look.seen

    async def wait_async(self, action_id: object, timeout: float | None = None) -> Action | None:
        """``wait`` for asyncio: never blocks the event loop; woken by a resolution on any thread.

        Cancelling the awaiting task leaves the action as it is. While the store is unavailable the wait
        goes on, as ``wait``'s does.

        Raises:
            TimeoutError: as for ``wait``.
            StoreClosedError: as for ``wait``.
        """
        check_timeout(timeout)
        if not is_id(action_id):
            return None
        key = action_id
        loop = asyncio.get_running_loop()
        look = _Look(self._store, self._state, key)
        with self._watching():
            with self._changed:
                decided = look.decided()
                news = self._local.noticed(look.seen)
                waiter = None if decided else self._local.waiters.add_async(key, loop)
            if waiter is None:
                if news is not None:
                    self._announce(news)
                return look.seen
            try:
                if timeout is None:
                    resolved = await waiter[1]
                else:
                    try:
                        resolved = await asyncio.wait_for(waiter[1], timeout)
                    except TimeoutError:
                        with self._changed:
                            look.decided()
                        error = look.timed_out(timeout)
                        raise error from error.__cause__
            finally:
                with self._changed:
                    self._local.waiters.remove_async(key, waiter)
            with self._changed:
                news = self._local.noticed(resolved)
            if news is not None:
                self._announce(news)
            return resolved

    # -- snapshots -------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The pending actions as JSON-safe data (applying and resolved ones are left out).

        Format: ``{"version": 1, "next_id": <last id assigned>, "pending_actions": [{"id",
        "tool_call_id", "tool_name", "args", "auto_approvable", "message", "submitted_at"}]}``.

        Raises:
            ValueError: an action's ``args`` is not a JSON value, or its ``tool_call_id`` not a string,
                an integer or None: it could not be restored.
        """
        with self._changed:
            pending = self._state.pending()
            last_id = self._state.counts()[1]  # read second: no pending id exceeds it
        return snapshot_data(last_id, pending)

    def restore_pending(self, snapshot: object) -> int:
        """Put a snapshot's actions back as pending, with their ids; return how many.

        Fires no ``on_submit`` and drains nothing; the next submit gets ``max(next_id, largest restored
        id) + 1``. Validates everything before changing anything.

        Raises:
            InvalidSnapshotError: the snapshot is invalid (the path to the bad field is in the message).
            ValueError: this queue (its session of the store) already holds an action.
        """
        next_id, actions = read_snapshot(snapshot, self._now())
        with self._changed:
            try:
                last_id = self._state.restore(next_id, actions)
            finally:
                self._changed.notify_all()
        if last_id is not None:
            raise ValueError(
                f"restore_pending: the queue already holds actions (last id {last_id}); "
                "restore into a new queue"
            )
        return len(actions)

    # -- internals (the lock is held where a name says "locked") ----------------------------------------

    def _now(self) -> datetime:
        return _aware(self._clock(), "clock()")

    def _watching(self) -> contextlib.AbstractContextManager[None]:
        """While waiting: a durable store watches for changes made by other processes."""
        if not self._durable:
            return contextlib.nullcontext()
        return _Watching(self._store)

    def _pending_ids(self) -> list[int]:
        with self._changed:
            return [action.id for action in self._state.pending()]

    def _blocker(self) -> int | None:
        """Locked: the thread of this process running on_submit for an eligible head (the drain waits).

        Also notes whether that head needs no drain at all (``_idle_head``), for ``_drain`` to use while
        it still holds the lock.
        """
        if self._approves_none:
            self._idle_head = True
            return None
        head = self._state.head()
        self._idle_head = (
            head is None
            or not self.would_auto_approve(head.tool_name, head.auto_approvable)
            or (self._durable and self._state.submitting_elsewhere(head.id))
        )
        if self._idle_head:
            return None
        assert head is not None
        return self._local.drain.submitting.get(head.id)

    def observe_resolutions(self, observer: ResolutionObserver) -> Callable[[], None]:
        """Call ``observer(action, automatic)`` once for each resolution of this queue's session.

        Resolutions made by any queue object of this process on the same store and session are told in the
        resolving thread, outside the lock, after ``on_approve``/``on_reject`` and after the resolution is
        recorded. A resolution made by another process (a person's command, the web inbox) is told when this
        process first sees the action resolved — through ``get``, ``wait`` or ``wait_async`` — if it had seen
        it pending (it submitted it, or read it) since an observer was added; in the thread that read it.
        Each is told once per process. ``automatic`` is true for the drain's auto-approvals. A policy uses
        this to record how its asks end however, and wherever, a person resolves them. An observer that raises
        does not undo the resolution: its exception propagates from the call that resolved (or read), with a
        note saying so. Returns a function that removes the observer.

        Raises:
            TypeError: ``observer`` is not callable.
        """
        if not callable(observer):
            raise TypeError(f"observer: expected a callable; got {preview(observer)}")
        local = self._local
        with self._changed:
            local.observers = (*local.observers, observer)

        def remove() -> None:
            with self._changed:
                local.observers = tuple(known for known in local.observers if known is not observer)

        return remove

    def _apply(self, claim: Claim, callback: Callback | None, *, automatic: bool = False) -> Action:
        """Run the callback outside the lock, then finish the resolution or roll it back."""
        applying = claim.action
        try:
            resolved_at = self._now()
            if callback is not None:
                callback(applying)
        except BaseException:
            with self._changed:
                try:
                    self._state.release(claim)
                finally:
                    self._changed.notify_all()
            raise
        with self._changed:
            try:
                resolved = self._state.finish(claim, resolved_at)
                waiters = [] if resolved is None else self._local.waiters.take_async(applying.id)
                news = resolved is not None and self._local.resolved_here(resolved)
            finally:
                self._changed.notify_all()
        if resolved is None:
            raise ClaimLostError(
                f"action {applying.id}: the {'approval' if claim.approve else 'rejection'} outlived the "
                "store's lease and another process took the action up meanwhile; it was not recorded",
                action_id=applying.id,
            )
        wake(waiters, resolved)
        if news:
            self._announce(resolved, automatic)
        return resolved

    def _resolve_at_once(self, action_id: int, resolution: Resolution) -> Action | None:
        """Resolve an action no callback waits on, in one step of the store (no claim to hold)."""
        resolved_at = self._now()
        with self._changed:
            try:
                resolved = self._state.resolve(action_id, resolution, resolved_at)
                waiters = [] if resolved is None else self._local.waiters.take_async(action_id)
                news = resolved is not None and self._local.resolved_here(resolved)
            finally:
                self._changed.notify_all()
        if resolved is not None:
            wake(waiters, resolved)
            if news:
                self._announce(resolved, automatic=False)
        return resolved

    def _announce(self, action: Action, automatic: bool | None = None) -> None:
        """Tell the session's observers in this process of a resolution (outside the lock, once)."""
        if automatic is None:  # resolved by another process: its decided_by says whether the drain did
            automatic = action.decided_by == AUTO_APPROVER
        for observer in self._local.observers:
            try:
                observer(action, automatic)
            except BaseException as error:
                error.add_note(f"ask_permissions: action {action.id} is {action.status} all the same")
                raise

    def _resolve_all(self, action_ids: Iterable[int], resolution: Resolution) -> list[Action]:
        resolved: list[Action] = []
        for action_id in action_ids:
            if (self.on_approve if resolution.approve else self.on_reject) is None:
                done = self._resolve_at_once(action_id, resolution)
                if done is not None:
                    resolved.append(done)
                continue
            with self._changed:
                claim = self._state.claim(action_id, resolution)
                if claim is None:
                    continue
                callback = self.on_approve if resolution.approve else self.on_reject
            resolved.append(self._apply(claim, callback))
        return resolved

    def _drain(self) -> None:
        """Drain, or make sure the thread draining now covers this request before returning.

        One thread of this process owns the drain at a time (see ``DrainTickets``), and while its pass
        approves it holds the store's drain lock, so one process at a time drains a session and
        auto-approvals happen one by one in id order.
        """
        me = threading.get_ident()
        drain = self._local.drain
        with self._changed:
            ticket = drain.request(me)
            if ticket is None or not drain.take(ticket, me, self._blocker):
                return
            if self._idle_head:  # take() just read the head, under this hold of the lock: nothing to do
                drain.complete()
                return
        while self._drain_pass(me):
            with self._changed:
                if not drain.take(ticket, me, self._blocker):
                    return
                if self._idle_head:
                    drain.complete()
                    return

    def _drain_pass(self, me: int) -> bool:
        """As the drain's owner, approve eligible heads; False when done, True when handed over."""
        try:
            outcome = self._approve_heads(locked=not self._durable)
            if outcome is None:
                # Claim only under the store's drain lock, taken without the session's lock: it may wait
                # for another process's pass to end.
                with self._state.drain_lock():
                    outcome = self._approve_heads(locked=True)
            return bool(outcome)
        except BaseException:
            with self._changed:
                self._local.drain.abandon(me)
            raise

    def _approve_heads(self, *, locked: bool) -> bool | None:
        """Approve eligible heads: False when done, True when handed over, None to take the drain lock."""
        drain, state = self._local.drain, self._state
        while True:
            with self._changed:
                head = state.head()
                if (
                    head is None
                    or not self.would_auto_approve(head.tool_name, head.auto_approvable)
                    or (self._durable and state.submitting_elsewhere(head.id))
                ):
                    # The head is not eligible at this instant, so every request recorded so far is
                    # satisfied; a request recorded later waits for the next owner. (An on_submit
                    # running in another process: that process drains once it returns.)
                    drain.complete()
                    return False
                if head.id in drain.submitting:
                    # Its on_submit is still running: hand over, and wait for it with the others.
                    drain.hand_over()
                    return True
                if not locked:
                    return None
                claim = state.claim(head.id, _AUTO_APPROVAL)
                callback = self.on_approve
            if claim is not None:  # None: another process resolved the head meanwhile
                self._apply(claim, callback, automatic=True)


@final
class _Look:
    """A waiter's look at its action: what it saw, or why the store could not say."""

    __slots__ = ("_key", "_state", "_store", "seen", "unavailable")

    def __init__(self, store: ApprovalStore, state: QueueState, key: int) -> None:
        self._store: Final = store
        self._state: Final = state
        self._key: Final = key
        self.seen: Action | None = None
        self.unavailable: StoreUnavailableError | None = None

    def decided(self) -> bool:
        """Look again (locked): whether the action is resolved, or unknown.

        Raises:
            StoreClosedError: the store was closed (before the wait, or during it: closing wakes it).
        """
        self._store.check_open()
        try:
            self.seen = self._state.get(self._key)
        except StoreUnavailableError as error:  # the wait goes on: the store's watcher wakes it to look
            self.unavailable = error
            return False
        self.unavailable = None
        return self.seen is None or self.seen.status in RESOLVED

    def timed_out(self, timeout: float | None) -> TimeoutError:
        """The error for a wait that ran out (its cause is the store's error if the store was away)."""
        if self.unavailable is not None:
            error = TimeoutError(
                f"action {self._key}: no decision seen after {timeout} s; the store is unavailable "
                f"({self.unavailable})"
            )
            error.__cause__ = self.unavailable
            return error
        status = "pending" if self.seen is None else self.seen.status
        return TimeoutError(f"action {self._key} is still {status} after {timeout} s")


@final
class _Watching:
    """``store.watch()`` for the span of a ``with``."""

    __slots__ = ("_store",)

    def __init__(self, store: ApprovalStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        self._store.watch()

    def __exit__(self, *_: object) -> None:
        self._store.unwatch()


def _sorted_ids(values: tuple[object, ...]) -> list[int]:
    """Valid ids, each once, in ascending order; anything that cannot be an id is ignored."""
    if len(values) == 1:  # approve(id), the usual call
        return [int(values[0])] if is_id(values[0]) else []
    return sorted({int(value) for value in values if is_id(value)})
