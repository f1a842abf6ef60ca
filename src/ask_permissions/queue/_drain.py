"""The drain protocol: one thread of a process drains a session at a time, and no request is lost."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final, final

__all__ = ["DrainTickets"]


@final
class DrainTickets:
    """Who drains one session in this process, and which drain requests a finished pass has covered.

    Requests are numbered; the owner marks every request recorded so far as completed at an instant when
    the head is not eligible, so none is lost, and a request recorded later waits for the next owner
    (the gem returns at once instead, and can lose that wakeup). ``submitting`` maps the ids whose
    ``on_submit`` runs now to the thread running it: the drain must not approve such an action, nor
    overtake it. Every method is called with the session's lock (``changed``) held.

    Across processes a store's drain lock serializes the owners of each process (see ``ApprovalQueue``).
    """

    __slots__ = ("_changed", "_completed", "_owner", "_requested", "submitting")

    def __init__(self, changed: threading.Condition) -> None:
        self._changed: Final = changed
        self._owner: int | None = None
        self._requested = 0
        self._completed = 0
        self.submitting: Final[dict[int, int]] = {}

    def request(self, me: int) -> int | None:
        """Record a drain request of thread ``me``; its ticket, or None when ``me`` drains already.

        A call from inside a callback of this thread's own drain only records the request: that drain's
        loop passes over it before returning, so waiting would deadlock for nothing.
        """
        self._requested += 1
        return None if self._owner == me else self._requested

    def take(self, ticket: int, me: int, blocker: Callable[[], int | None]) -> bool:
        """Wait until ``me`` owns the drain (True) or need not drain at all (False).

        ``blocker()`` is the thread running ``on_submit`` for an eligible head, which the drain waits for.
        """
        while True:
            if self._completed >= ticket:
                return False
            if self._owner is None:
                blocking = blocker()
                if blocking is None:
                    self._owner = me
                    return True
                if blocking == me:
                    # Inside our own on_submit for the head: that submit drains once it returns.
                    return False
            self._changed.wait()

    def complete(self) -> None:
        """The owner found the head not eligible: every request recorded so far is covered."""
        self._completed = self._requested
        self._owner = None
        self._changed.notify_all()

    def hand_over(self) -> None:
        """The owner stops at a head whose ``on_submit`` runs: it waits for it with the others."""
        self._owner = None
        self._changed.notify_all()

    def abandon(self, me: int) -> None:
        """The owner's pass raised: let another thread take over."""
        if self._owner == me:
            self._owner = None
        self._changed.notify_all()
