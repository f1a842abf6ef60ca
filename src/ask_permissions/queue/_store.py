"""Stores: where approval queues and session grants keep their state, and the in-memory default."""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from datetime import datetime
from typing import ClassVar, Final, NamedTuple, Protocol, TypeAlias, final

from ask_permissions._errors import StoreClosedError, StoreUnavailableError, preview
from ask_permissions._vocabulary import SCOPES, ResolutionScope, one_of

from ._action import RESOLVED, Action, Resolution, applying, printable_name, released, resolved
from ._drain import DrainTickets
from ._waiters import Waiters, fail, wake

__all__ = [
    "DEFAULT_SESSION",
    "ApprovalStore",
    "Claim",
    "Head",
    "LocalSession",
    "MemoryStore",
    "QueueState",
    "ResolutionObserver",
    "check_scopes",
    "check_session",
    "store_or_memory",
]

DEFAULT_SESSION: Final = "default"
"""The session a queue or grants object uses when none is named."""
_SESSION_LIMIT: Final = 200


def store_or_memory(store: object) -> ApprovalStore:
    """``store``, or a new ``MemoryStore`` for None.

    Raises:
        TypeError: ``store`` is not an ``ApprovalStore``.
    """
    if store is None:
        return MemoryStore()
    if not isinstance(store, ApprovalStore):
        raise TypeError(f"store: expected an ApprovalStore; got {preview(store)}")
    return store


def check_scopes(scopes: object) -> dict[ResolutionScope, str]:
    """What a host honours: a mapping of ``"once"``, ``"session"``, ``"project"`` to a description.

    Raises:
        TypeError: not a mapping, or a description that is not a string.
        ValueError: an unknown scope, or ``"once"`` missing (every host runs an approved call once).
    """
    if not isinstance(scopes, Mapping):
        raise TypeError(f"scopes: expected a mapping of scope to description; got {preview(scopes)}")
    checked: dict[ResolutionScope, str] = {}
    for scope, description in scopes.items():
        known = one_of(scope, SCOPES)
        if known is None:
            raise ValueError(f"scopes: expected keys among {', '.join(SCOPES)}; got {preview(scope)}")
        if not isinstance(description, str):
            raise TypeError(
                f"scopes[{known!r}]: expected a description (a string); got {preview(description)}"
            )
        checked[known] = str.__str__(description)
    if "once" not in checked:
        raise ValueError(f"scopes: expected 'once' among the keys; got {preview(sorted(checked))}")
    return {name: checked[name] for name in SCOPES if name in checked}


def check_session(session: object) -> str:
    """A session name: a non-empty string of at most 200 printable characters.

    Raises:
        TypeError: not a string.
        ValueError: empty, too long, or holding a control character.
    """
    return printable_name(session, "session", _SESSION_LIMIT)


class Head(Protocol):
    """What the drain needs of the head: an ``Action`` is one, and a database reads no more."""

    @property
    def id(self) -> int: ...

    @property
    def tool_name(self) -> str: ...

    @property
    def auto_approvable(self) -> bool: ...


class Claim(NamedTuple):
    """A pending action this process took up to resolve: the ``"applying"`` action, and its claim."""

    action: Action
    approve: bool
    token: str | None = None
    """What tells this claim from a later one on the same action (durable stores)."""


@final
class LocalSession:
    """What this process holds of one session of a store: its state, its lock, its drain and its waiters.

    Every queue object of this process on the same store and session shares it, so they lock, drain
    and wake as one queue. ``changed`` is the session's lock and condition: notified on every change,
    and by a durable store's watcher when another process changed the session.
    """

    __slots__ = ("announced", "changed", "drain", "known_pending", "observers", "state", "waiters")

    def __init__(self, state: QueueState) -> None:
        self.state: Final = state
        self.changed: Final = threading.Condition(threading.Lock())
        self.drain: Final = DrainTickets(self.changed)
        self.waiters: Final = Waiters()
        # Who hears of the session's resolutions in this process (policies recording how their asks
        # end), and the pending ids this process has seen while someone listened: the ones whose
        # resolution by another process it announces, once, when it first sees them resolved.
        self.observers: tuple[ResolutionObserver, ...] = ()
        self.known_pending: Final[set[int]] = set()
        self.announced: Final = _Announced()

    def noticed(self, action: Action | None) -> Action | None:
        """Locked: note an action just read; returns it if its resolution is news to this process."""
        if action is None or not self.observers:
            return None
        if action.status == "pending":
            self.known_pending.add(action.id)
            return None
        if action.status in RESOLVED and action.id in self.known_pending:
            self.known_pending.discard(action.id)
            if self.announced.add(action.id):
                return action
        return None

    def resolved_here(self, action: Action) -> bool:
        """Locked: this process resolved ``action``; whether its observers are still to hear of it."""
        self.known_pending.discard(action.id)
        return self.announced.add(action.id)

    def store_closed(self, error: Callable[[], StoreClosedError]) -> None:
        """The store was closed: async waiters raise ``error()``, and threads wake to look (and raise)."""
        with self.changed:
            try:
                for action_id in self.waiters.async_ids:
                    fail(self.waiters.take_async(action_id), error)
            finally:
                self.changed.notify_all()

    def changed_elsewhere(self) -> None:
        """Another process may have changed the session: wake whoever waits, to look again."""
        with self.changed:
            try:
                for action_id in self.waiters.async_ids:
                    try:
                        action = self.state.get(action_id)
                    except StoreUnavailableError:  # the store's watcher wakes them again to look
                        continue
                    if action is None or action.status in RESOLVED:
                        # None: another process forgot it; the wait returns None, as for an unknown id.
                        wake(self.waiters.take_async(action_id), action)
            finally:
                self.changed.notify_all()


ResolutionObserver: TypeAlias = Callable[[Action, bool], object]
"""Told of each resolution: the resolved action, and whether the queue's drain auto-approved it."""

_ANNOUNCED_MEMORY: Final = 4096


@final
class _Announced:
    """The ids whose resolution this process's observers have heard of (the most recent ones)."""

    __slots__ = ("_ids",)

    def __init__(self) -> None:
        self._ids: OrderedDict[int, None] = OrderedDict()

    def add(self, action_id: int) -> bool:
        """Note ``action_id``; whether it is new."""
        if action_id in self._ids:
            return False
        self._ids[action_id] = None
        if len(self._ids) > _ANNOUNCED_MEMORY:
            self._ids.popitem(last=False)
        return True


class QueueState(ABC):
    """One session's queue as a store keeps it.

    A queue calls every method with its ``LocalSession``'s lock held; none calls back into a queue. A
    durable store's methods raise only the package's ``StoreError``s: ``StoreUnavailableError`` having
    changed nothing, except ``finish``, which raises ``ResolutionNotRecordedError`` when the recording of
    a resolution whose callback ran is deferred (the claim kept).
    """

    __slots__ = ()

    @abstractmethod
    def insert(self, build: Callable[[int], Action], *, submitting: bool) -> Action:
        """Store ``build(id)``, a pending action, with the session's next id; return it.

        ``submitting``: its ``on_submit`` runs now, in this process (see ``end_submit``).
        """

    def end_submit(self, action_id: int) -> None:
        """The ``on_submit`` of ``action_id`` has returned."""
        return

    @abstractmethod
    def get(self, action_id: int) -> Action | None:
        """The action with this id, or None."""

    @abstractmethod
    def pending(self) -> list[Action]:
        """The pending actions, in id order (an applying one whose lease ran out is pending again)."""

    @abstractmethod
    def head(self) -> Head | None:
        """The pending action with the lowest id (what the drain needs of it), or None."""

    @abstractmethod
    def pending_for_call(self, tool_call_id: object) -> list[Action]:
        """The pending actions of this ``tool_call_id`` (not None), matched by type and value, by id."""

    @abstractmethod
    def rejected_for_call(self, tool_call_id: object) -> list[Action]:
        """The rejected actions of this ``tool_call_id`` (not None) not yet forgotten, matched by type and
        value, by id."""

    def submitting_elsewhere(self, action_id: int) -> bool:
        """Whether another process runs the ``on_submit`` of ``action_id``, the head just read."""
        return False

    @abstractmethod
    def counts(self) -> tuple[int, int]:
        """``(how many actions are pending, the last id given)``."""

    @abstractmethod
    def claim(self, action_id: int, resolution: Resolution) -> Claim | None:
        """Mark a pending action applying, with what ``resolution`` says, for this process to resolve;
        None if it is not pending."""

    @abstractmethod
    def finish(self, claim: Claim, resolved_at: datetime) -> Action | None:
        """Record the claimed action approved or rejected at ``resolved_at``; None if the claim was lost
        meanwhile."""

    def resolve(self, action_id: int, resolution: Resolution, resolved_at: datetime) -> Action | None:
        """Approve or reject a pending action at once, as ``resolution`` says, no callback running in
        between; None if it is not pending. A database does it in one statement."""
        claim = self.claim(action_id, resolution)
        return None if claim is None else self.finish(claim, resolved_at)

    @abstractmethod
    def release(self, claim: Claim) -> None:
        """Put the claimed action back to pending (its callback raised); nothing if the claim was lost."""

    @abstractmethod
    def restore(self, next_id: int, actions: list[Action]) -> int | None:
        """Put ``actions`` (valid, in id order) back as pending into an empty session.

        Returns None, or the session's last id if it is not empty (then nothing is restored).
        """

    @abstractmethod
    def forget_resolved(self, cutoff: datetime | None, keep: Collection[int]) -> int:
        """Drop the actions resolved before ``cutoff`` (all if None), except ``keep``; how many."""

    def drain_lock(self) -> contextlib.AbstractContextManager[None]:
        """Held while this process's drain claims and approves heads, so one process drains at a time.

        Nothing to hold where no other process sees the session.
        """
        return contextlib.nullcontext()


class ApprovalStore(ABC):
    """Where approval queues and session grants keep their state, by session.

    ``MemoryStore`` keeps it in this process (the default); ``SqliteStore`` and ``PostgresStore`` keep it
    in a database, where queues of many processes on the same session share it. A queue calls every
    method but ``close`` with its ``LocalSession``'s lock held; none calls back into a queue.
    """

    durable: ClassVar[bool] = False
    """Whether the state outlives the process: then arguments must be JSON and text UTF-8."""

    def __init__(self) -> None:
        self._locals: Final[dict[str, LocalSession]] = {}
        self._locals_lock: Final = threading.Lock()
        self._changes: Final = threading.Condition(threading.Lock())
        self._change_number = 0
        self._closed: Final = threading.Event()  # set by close(), never cleared

    def local(self, session: str) -> LocalSession:
        """This process's ``LocalSession`` of ``session`` (one per store and session)."""
        with self._locals_lock:
            local = self._locals.get(session)
            if local is None:
                local = self._locals[session] = LocalSession(self.queue_state(session))
            return local

    def _local_sessions(self) -> list[LocalSession]:
        with self._locals_lock:
            return list(self._locals.values())

    @abstractmethod
    def queue_state(self, session: str) -> QueueState:
        """A new handle on ``session``'s queue (a queue gets it through ``local``)."""

    def watch(self) -> None:
        """Someone in this process waits: from now on, tell its ``LocalSession`` when another process
        changes the session. Returns once the watch has begun, so no change made after it is missed."""
        return

    def unwatch(self) -> None:
        """A wait that ``watch`` announced is over."""
        return

    def change_number(self) -> int:
        """How many changes by other processes this process has noticed (while watching)."""
        with self._changes:
            return self._change_number

    def wait_for_change(self, seen: int, timeout: float) -> int:
        """Block until a change after number ``seen`` is noticed, or ``timeout`` seconds; the number now."""
        with self._changes:
            self._changes.wait_for(lambda: self._change_number != seen, timeout)
            return self._change_number

    def _noticed_change(self) -> None:
        with self._changes:
            self._change_number += 1
            self._changes.notify_all()

    @abstractmethod
    def sessions(self) -> list[str]:
        """Every session that holds (or held) an action, sorted."""

    def all_pending(self) -> list[tuple[str, Action]]:
        """``(session, action)`` for every pending action of every session, by session and id."""
        pending: list[tuple[str, Action]] = []
        for session in self.sessions():
            local = self.local(session)
            with local.changed:
                pending.extend((session, action) for action in local.state.pending())
        return pending

    def sessions_with(self, action_id: int) -> list[str]:
        """The sessions that hold an action with this id (in any status), sorted."""
        found = []
        for session in self.sessions():
            local = self.local(session)
            with local.changed:
                if local.state.get(action_id) is not None:
                    found.append(session)
        return found

    @abstractmethod
    def resolved_actions(self, session: str | None = None, limit: int = 100) -> list[tuple[str, Action]]:
        """``(session, action)`` for the most recently resolved actions (of one session, or of all), newest
        first, at most ``limit``: the history a person looks back on (forgotten ones are gone)."""

    # -- the grants --------------------------------------------------------------------------------------

    @abstractmethod
    def grant(self, session: str, names: Iterable[str]) -> None:
        """Grant these tool names."""

    @abstractmethod
    def revoke(self, session: str, name: str) -> None:
        """Withdraw one grant (nothing if it is not granted)."""

    @abstractmethod
    def replace_grants(self, session: str, names: Iterable[str]) -> None:
        """Make ``names`` the session's whole grants, at once."""

    @abstractmethod
    def is_granted(self, session: str, name: str) -> bool:
        """Whether ``name`` is granted."""

    @abstractmethod
    def granted(self, session: str) -> list[str]:
        """The granted names, sorted."""

    # -- what the session's host honours -------------------------------------------------------------------

    @abstractmethod
    def record_scopes(self, session: str, scopes: Mapping[ResolutionScope, str]) -> None:
        """Record the answers the agent's host of ``session`` carries out: scope → what it does.

        A policy built over a durable queue records them, so that a person answering from another process
        (the command, the web inbox) is offered only what the agent will honour. Recording them also says
        that the host runs a person's edit (``Action.approved_args``): without it, the command and the web
        inbox offer no edit of a call no policy queued.
        """

    @abstractmethod
    def honoured_scopes(self, session: str) -> dict[ResolutionScope, str] | None:
        """What ``record_scopes`` recorded last for ``session``, or None when no host recorded any."""

    def close(self) -> None:
        """Release what the store holds (connections, threads), and wake whoever waits on it: their
        ``wait`` or ``wait_async`` raises ``StoreClosedError``, as does any wait begun afterwards. A closed
        store must not be used again (a database store refuses to, with ``StoreClosedError``). Closing a
        closed store does nothing."""
        self._closed.set()
        self._wake_closed()

    def _wake_closed(self) -> None:
        """The store was just closed: wake every waiter of this process, to raise ``StoreClosedError``."""
        for local in self._local_sessions():
            local.store_closed(self._closed_error)

    def check_open(self) -> None:
        """Raise ``StoreClosedError`` if the store was closed."""
        if self._closed.is_set():
            raise self._closed_error()

    def _closed_error(self) -> StoreClosedError:
        name = self._name()
        return StoreClosedError(
            f"{name}: the store is closed; a closed store cannot be used again", store=name
        )

    def _name(self) -> str:
        """The store, as its messages name it."""
        return "memory:"


@final
class _MemoryQueue(QueueState):
    """A memory session: every action by id, and the bookkeeping that keeps reads off history."""

    __slots__ = (
        "actions",
        "applying",
        "by_call",
        "last_id",
        "rejected_by_call",
        "resolved_ids",
        "resolved_times",
        "unresolved",
    )

    def __init__(self) -> None:
        # Every action submitted or restored and not forgotten, by id.
        self.actions: dict[int, Action] = {}
        # Ids of the pending and applying actions in id order (ids only ever grow, and a rollback does
        # not move an id), so the head, the pending list and any_pending never look at history.
        self.unresolved: OrderedDict[int, None] = OrderedDict()
        # The same ids by the call they stand for, so a host re-running a call finds its action without
        # scanning every pending one.
        self.by_call: Final[dict[tuple[type, Hashable], list[int]]] = {}
        # The rejected ones by call too, so that a call a person refused is not asked about again.
        self.rejected_by_call: Final[dict[tuple[type, Hashable], list[int]]] = {}
        self.applying: Final[set[int]] = set()
        # The resolved actions in the order they resolved, and when by the queue's clock (two deques
        # rather than one of pairs: a pair per action would cost more than the time itself).
        self.resolved_ids: deque[int] = deque()
        self.resolved_times: deque[datetime] = deque()
        self.last_id = 0

    def insert(self, build: Callable[[int], Action], *, submitting: bool) -> Action:
        self.last_id += 1
        action = build(self.last_id)
        self.actions[action.id] = action
        self._track(action)
        return action

    def _track(self, action: Action) -> None:
        self.unresolved[action.id] = None
        key = _call_key(action.tool_call_id)
        if key is not None:
            self.by_call.setdefault(key, []).append(action.id)

    def _untrack(self, action: Action) -> None:
        del self.unresolved[action.id]
        key = _call_key(action.tool_call_id)
        if key is not None:
            ids = self.by_call[key]
            ids.remove(action.id)
            if not ids:
                del self.by_call[key]

    def pending_for_call(self, tool_call_id: object) -> list[Action]:
        key = _call_key(tool_call_id)
        if key is None:  # an unhashable id: compare it with each unresolved action's own
            ids = [i for i in self.unresolved if _same_call_id(self.actions[i].tool_call_id, tool_call_id)]
        else:
            ids = self.by_call.get(key, [])
        return [self.actions[action_id] for action_id in ids if action_id not in self.applying]

    def rejected_for_call(self, tool_call_id: object) -> list[Action]:
        key = _call_key(tool_call_id)
        if key is None:
            return []  # an unhashable id is never held by a snapshot or a database either
        return [self.actions[action_id] for action_id in self.rejected_by_call.get(key, [])]

    def get(self, action_id: int) -> Action | None:
        return self.actions.get(action_id)

    def pending(self) -> list[Action]:
        actions, applying = self.actions, self.applying
        return [actions[action_id] for action_id in self.unresolved if action_id not in applying]

    def head(self) -> Action | None:
        for action_id in self.unresolved:
            if action_id not in self.applying:
                return self.actions[action_id]
        return None

    def counts(self) -> tuple[int, int]:
        return len(self.unresolved) - len(self.applying), self.last_id

    def claim(self, action_id: int, resolution: Resolution) -> Claim | None:
        action = self.actions.get(action_id)
        if action is None or action.status != "pending":
            return None
        taken = applying(action, resolution)
        self.actions[action_id] = taken
        self.applying.add(action_id)
        return Claim(taken, resolution.approve)

    def finish(self, claim: Claim, resolved_at: datetime) -> Action | None:
        taken = claim.action
        done = self.actions[taken.id] = resolved(taken, claim.approve, resolved_at)
        self.applying.discard(taken.id)
        self._untrack(taken)
        key = _call_key(taken.tool_call_id)
        if key is not None and not claim.approve:
            self.rejected_by_call.setdefault(key, []).append(taken.id)
        self.resolved_ids.append(taken.id)
        self.resolved_times.append(resolved_at)
        return done

    def _forget_rejected(self, action: Action) -> None:
        key = _call_key(action.tool_call_id)
        if key is None or action.status != "rejected":
            return
        ids = self.rejected_by_call[key]
        ids.remove(action.id)
        if not ids:
            del self.rejected_by_call[key]

    def release(self, claim: Claim) -> None:
        self.actions[claim.action.id] = released(claim.action)
        self.applying.discard(claim.action.id)

    def restore(self, next_id: int, actions: list[Action]) -> int | None:
        if self.last_id or self.actions:
            return self.last_id
        for action in actions:
            self.actions[action.id] = action
            self._track(action)
        self.last_id = max([next_id, *(action.id for action in actions)])
        return None

    def forget_resolved(self, cutoff: datetime | None, keep: Collection[int]) -> int:
        ids, times, actions = self.resolved_ids, self.resolved_times, self.actions
        kept: list[tuple[int, datetime]] = []
        dropped = 0
        # Resolution order is clock order unless the clock went back: stop at the first one too young.
        while ids and (cutoff is None or times[0] < cutoff):
            action_id, resolved_at = ids.popleft(), times.popleft()
            if action_id in keep:
                kept.append((action_id, resolved_at))
            else:
                self._forget_rejected(actions.pop(action_id))
                dropped += 1
        for action_id, resolved_at in reversed(kept):
            ids.appendleft(action_id)
            times.appendleft(resolved_at)
        if dropped >= len(actions):
            # A dict keeps the size it grew to, a deque a few spare blocks: copy them, so the memory goes
            # back to what is left.
            self.actions = dict(actions)
            self.unresolved = OrderedDict(self.unresolved)
            self.resolved_ids, self.resolved_times = deque(ids), deque(times)
        return dropped


@final
class MemoryStore(ApprovalStore):
    """State in this process's memory: the default, private to each queue or grants object made without
    a store. Share one to share sessions between objects of one process; it is gone with the process.

    Thread-safe: a queue's session is guarded by its ``LocalSession``'s lock, the grants by the store's.
    """

    def __init__(self) -> None:
        super().__init__()
        self._queues: Final[dict[str, _MemoryQueue]] = {}
        self._grants: Final[dict[str, set[str]]] = {}
        self._scopes: Final[dict[str, dict[ResolutionScope, str]]] = {}
        self._lock: Final = threading.Lock()

    def __repr__(self) -> str:
        return f"<MemoryStore sessions={len(self._queues)}>"

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._queues)

    def queue_state(self, session: str) -> QueueState:
        # One state per session, so that every queue of the store on a session shares it.
        with self._lock:
            state = self._queues.get(session)
            if state is None:
                state = self._queues[session] = _MemoryQueue()
            return state

    def grant(self, session: str, names: Iterable[str]) -> None:
        with self._lock:
            self._grants.setdefault(session, set()).update(names)

    def revoke(self, session: str, name: str) -> None:
        with self._lock:
            self._grants.get(session, set()).discard(name)

    def replace_grants(self, session: str, names: Iterable[str]) -> None:
        with self._lock:
            self._grants[session] = set(names)

    def is_granted(self, session: str, name: str) -> bool:
        with self._lock:
            return name in self._grants.get(session, ())

    def granted(self, session: str) -> list[str]:
        with self._lock:
            return sorted(self._grants.get(session, ()))

    def resolved_actions(self, session: str | None = None, limit: int = 100) -> list[tuple[str, Action]]:
        with self._lock:
            queues = (
                sorted(self._queues.items()) if session is None else [(session, self._queues.get(session))]
            )
        found: list[tuple[datetime, int, str, Action]] = []
        for name, state in queues:
            if state is None:
                continue
            with self.local(name).changed:
                for taken, action_id in enumerate(reversed(state.resolved_ids)):
                    if taken >= limit:
                        break
                    action = state.actions[action_id]
                    found.append((action.resolved_at or action.submitted_at, action_id, name, action))
        found.sort(key=lambda entry: (entry[0], entry[1]), reverse=True)
        return [(name, action) for _, _, name, action in found[:limit]]

    def record_scopes(self, session: str, scopes: Mapping[ResolutionScope, str]) -> None:
        checked = check_scopes(scopes)
        with self._lock:
            self._scopes[session] = checked

    def honoured_scopes(self, session: str) -> dict[ResolutionScope, str] | None:
        with self._lock:
            found = self._scopes.get(session)
            return None if found is None else dict(found)


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
