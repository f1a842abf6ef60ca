"""The calls the MCP proxy holds for a person: a retry of one gets its action's verdict, once.

MCP has no call ids, so a held call is known by its tool and arguments: the same call made again while its
action waits is answered by that action, not queued anew. Each entry also keeps the digest of the tool's
definition the call was held under, so an approval given for one definition never runs the call against
another. A held call that no client has made again for the expiry time expires (its client went away): the
proxy rejects its action, so nobody approves a call that can no longer run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, NamedTuple, final

from ask_permissions.policy._arguments import same_arguments
from ask_permissions.policy._digest import args_digest

if TYPE_CHECKING:
    from ask_permissions.policy._records import DecisionRecord
    from ask_permissions.typing import PendingResult

__all__ = ["PENDING_EXPIRY", "Displaced", "HeldCall", "HeldCalls"]

PENDING_EXPIRY: Final = 600.0
"""Seconds after which a held call that no client made again expires (its action is rejected)."""

# Enough for every call a client can still retry; older ones fall out (a retry is then decided afresh).
_HELD_MEMORY: Final = 4096


class HeldCall(NamedTuple):
    """A call answered with "pending": its result (the queued action), record, definition and last asking.

    ``warning`` is what the proxy added to the policy's reason (a changed tool, a destructive hint).
    """

    name: str
    arguments: Any
    result: PendingResult
    record: DecisionRecord | None
    definition: str
    warning: str | None
    made_at: datetime

    @property
    def action_id(self) -> int:
        return self.result["action_id"]


class Displaced(NamedTuple):
    """The calls a newly held call put out of the held calls (see ``HeldCalls.hold``)."""

    replaced: HeldCall | None
    dropped: HeldCall | None


@final
class HeldCalls:
    """Held calls by tool and arguments, oldest asking first.

    Thread-safe: a private lock guards the entries; nothing is called while it is held.
    """

    __slots__ = ("_calls", "_clock", "_expiry", "_lock")

    def __init__(self, clock: Callable[[], datetime], expiry: timedelta | None) -> None:
        self._clock = clock
        self._expiry = expiry
        self._lock = threading.Lock()
        self._calls: OrderedDict[tuple[str, str], HeldCall] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._calls)

    def __repr__(self) -> str:
        return f"<HeldCalls held={len(self)} expiry={self._expiry}>"

    def find(self, name: str, arguments: Any) -> HeldCall | None:
        """The held call with this tool and these arguments, noted as made again now; or ``None``."""
        key = (name, args_digest(arguments))
        now = self._clock()
        with self._lock:
            held = self._calls.get(key)
            if held is None or not same_arguments(held.arguments, arguments):
                return None
            held = held._replace(made_at=now)
            self._calls[key] = held
            self._calls.move_to_end(key)
            return held

    @property
    def expiry_seconds(self) -> float | None:
        """The expiry time in seconds, or ``None`` when held calls never expire."""
        return None if self._expiry is None else self._expiry.total_seconds()

    def hold(self, call: HeldCall) -> Displaced:
        """Hold a call (replacing an earlier one with the same tool and arguments); return the calls no
        longer held: the one it replaced when that one waits on another action (a retry now finds this
        one), and the oldest, dropped when the memory is full. Neither can be answered any more."""
        key = (call.name, args_digest(call.arguments))
        with self._lock:
            earlier = self._calls.get(key)
            self._calls[key] = call
            self._calls.move_to_end(key)
            dropped = self._calls.popitem(last=False)[1] if len(self._calls) > _HELD_MEMORY else None
        replaced = earlier if earlier is not None and earlier.action_id != call.action_id else None
        return Displaced(replaced, dropped)

    def release(self, name: str, arguments: Any, action_id: int) -> HeldCall | None:
        """Forget the held call with this tool, these arguments and this action (it got its verdict);
        return it, or ``None`` when no such call is held.

        Whoever gets the call back is the one making of it that carries out its action's verdict: two
        makings of one held call answered at the same time both read an approval, and only one may run.
        """
        key = (name, args_digest(arguments))
        with self._lock:
            held = self._calls.get(key)
            if held is None or held.action_id != action_id or not same_arguments(held.arguments, arguments):
                return None
            del self._calls[key]
            return held

    def take_expired(self) -> list[HeldCall]:
        """Remove and return the calls no client made for the expiry time (none without an expiry)."""
        if self._expiry is None:
            return []
        cutoff = self._clock() - self._expiry
        expired: list[HeldCall] = []
        with self._lock:
            while self._calls:
                key, held = next(iter(self._calls.items()))
                if held.made_at > cutoff:
                    break
                del self._calls[key]
                expired.append(held)
        return expired

    def take_all(self) -> list[HeldCall]:
        """Remove and return every held call."""
        with self._lock:
            calls = list(self._calls.values())
            self._calls.clear()
        return calls

    def next_expiry(self) -> datetime | None:
        """When the oldest held call expires, or ``None`` when none is held or nothing expires."""
        if self._expiry is None:
            return None
        with self._lock:
            if not self._calls:
                return None
            oldest = next(iter(self._calls.values()))
        return oldest.made_at + self._expiry
