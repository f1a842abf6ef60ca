"""Waiting for a decision: which threads and event loops of this process wait on which action."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Final, TypeAlias, final

if TYPE_CHECKING:
    from ._action import Action

__all__ = ["AsyncWaiter", "Waiters", "fail", "wake"]

AsyncWaiter: TypeAlias = "tuple[asyncio.AbstractEventLoop, asyncio.Future[Action | None]]"


@final
class Waiters:
    """The waiters of one session in this process; the session's lock guards it (callers hold it).

    A ``wait`` counts itself in while it waits, so that ``forget_resolved`` keeps the action it is about
    to return; a ``wait_async`` leaves a future, completed with the resolved action.
    """

    __slots__ = ("_async", "_sync")

    def __init__(self) -> None:
        self._async: Final[dict[int, list[AsyncWaiter]]] = {}
        self._sync: Final[Counter[int]] = Counter()

    def enter(self, action_id: int) -> None:
        """A thread starts waiting on ``action_id``."""
        self._sync[action_id] += 1

    def leave(self, action_id: int) -> None:
        """A thread stops waiting on ``action_id``."""
        self._sync[action_id] -= 1
        if not self._sync[action_id]:
            del self._sync[action_id]

    @property
    def waited(self) -> Collection[int]:
        """The ids a thread waits on right now."""
        return self._sync.keys()

    def add_async(self, action_id: int, loop: asyncio.AbstractEventLoop) -> AsyncWaiter:
        """A new future on ``loop`` for ``action_id``'s resolution."""
        waiter: AsyncWaiter = (loop, loop.create_future())
        self._async.setdefault(action_id, []).append(waiter)
        return waiter

    def remove_async(self, action_id: int, waiter: AsyncWaiter) -> None:
        """Forget a future (its coroutine returned, timed out or was cancelled)."""
        waiters = self._async.get(action_id)
        if waiters is not None and waiter in waiters:
            waiters.remove(waiter)
            if not waiters:
                del self._async[action_id]

    def take_async(self, action_id: int) -> list[AsyncWaiter]:
        """The futures waiting on ``action_id``, removed: it has just been resolved."""
        return self._async.pop(action_id, [])

    @property
    def by_id(self) -> dict[int, list[AsyncWaiter]]:
        """The futures by action id (the very dict: callers hold the session's lock)."""
        return self._async

    @property
    def async_ids(self) -> list[int]:
        """The ids some event loop waits on."""
        return list(self._async)


def wake(waiters: Iterable[AsyncWaiter], action: Action | None) -> None:
    """Complete async waiters from any thread; a closed loop has no one left to wake."""
    for loop, future in waiters:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_complete, future, action)


def fail(waiters: Iterable[AsyncWaiter], error: Callable[[], BaseException]) -> None:
    """Make async waiters raise ``error()`` (one each), from any thread."""
    for loop, future in waiters:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_fail, future, error())


def _complete(future: asyncio.Future[Action | None], action: Action | None) -> None:
    if not future.done():
        future.set_result(action)


def _fail(future: asyncio.Future[Action | None], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
