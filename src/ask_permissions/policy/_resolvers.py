"""Asking a resolver (seed 001's ask resolver): sync or async, bounded by a deadline, beaten by a cancel."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Final, TypeVar

from ask_permissions._vocabulary import Answer, PermissionRequest, Resolver

__all__ = [
    "CANCELLED_FEEDBACK",
    "FAILED_FEEDBACK",
    "UNANSWERED_FEEDBACK",
    "UNREADABLE_FEEDBACK",
    "ask_async",
    "ask_sync",
    "call_with_deadline",
    "unresolved_reason",
]

CANCELLED_FEEDBACK: Final = "cancelled while awaiting approval"
"""The feedback of an action rejected because the awaiting task was cancelled (seed 001's text)."""
UNANSWERED_FEEDBACK: Final = "no one could answer"
"""The feedback of an action rejected because nobody could answer it (no resolver, or it said "queue")."""
FAILED_FEEDBACK: Final = "the resolver failed"
"""The feedback of an action rejected because its resolver raised."""
UNREADABLE_FEEDBACK: Final = "the resolver's answer could not be read"
"""The feedback of an action rejected because its resolver's answer was no answer."""


def unresolved_reason(reason: str) -> str:
    """What the model reads when an ask had no one to answer it (seed 001's headless default)."""
    return f"permission required: {reason}"


def ask_sync(resolver: Resolver, request: PermissionRequest, timeout: float | None) -> Answer:
    """The resolver's answer, in this thread; with a timeout, from a helper thread waited for that long.

    Raises:
        TimeoutError: no answer within ``timeout`` seconds (a late answer is then ignored).
        TypeError: the resolver is async (use ``adecide``).
        Whatever the resolver raises.
    """
    return call_with_deadline(lambda: _sync_answer(resolver(request)), timeout, "the resolver")


T = TypeVar("T")


def call_with_deadline(function: Callable[[], T], timeout: float | None, who: str) -> T:
    """``function()`` in this thread, or, with a timeout, in a helper thread waited for that long.

    The helper is a daemon of its own: a callable that never returns must neither keep the process alive nor
    hold a pool's thread. Its late result is dropped.

    Raises:
        TimeoutError: no result within ``timeout`` seconds.
        Whatever ``function`` raises.
    """
    if timeout is None:
        return function()
    box: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["result"] = function()
        except BaseException as error:  # handed to the waiting thread
            box["error"] = error
        finally:
            done.set()

    threading.Thread(target=run, name="ask_permissions-deadline", daemon=True).start()
    if not done.wait(timeout):
        raise TimeoutError(f"{who} did not answer within {timeout} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]  # a BaseException, stored above
    return box["result"]  # type: ignore[return-value]  # what function returned


def _sync_answer(answer: object) -> Answer:
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()  # never awaited: close it, so Python does not warn about it
        raise TypeError("the resolver is async: call adecide() instead of decide()")
    return answer  # type: ignore[return-value]  # read strictly by read_answer


async def ask_async(resolver: Resolver, request: PermissionRequest, timeout: float | None) -> Answer:
    """The resolver's answer, awaited; a sync resolver runs in a worker thread so the loop keeps running.

    Raises:
        TimeoutError: no answer within ``timeout`` seconds.
        asyncio.CancelledError: the awaiting task was cancelled.
        Whatever the resolver raises.
    """

    async def answer() -> Answer:
        given: object
        if inspect.iscoroutinefunction(resolver):
            given = await resolver(request)
        else:
            given = await asyncio.to_thread(resolver, request)
            if inspect.isawaitable(given):
                given = await given
        return given  # type: ignore[return-value]  # read strictly by read_answer

    if timeout is None:
        return await answer()
    return await asyncio.wait_for(answer(), timeout)
