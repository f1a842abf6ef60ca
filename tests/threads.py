"""Thread helpers for the concurrency tests: a deadlock fails the test instead of hanging the suite."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

__all__ = ["JOIN_TIMEOUT", "join", "run_threads", "start"]

JOIN_TIMEOUT: Final = 10.0
"""Seconds: a thread still alive after this is a deadlock, and fails the test."""


def start(target: Callable[[], object]) -> threading.Thread:
    """A started thread running ``target``; a daemon, so a deadlocked one cannot keep pytest alive."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def join(*threads: threading.Thread) -> None:
    """Join every thread within ``JOIN_TIMEOUT``; one still running fails the test."""
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
        assert not thread.is_alive(), "thread still running: deadlock?"


def run_threads(*targets: Callable[[], object]) -> None:
    """Run each target in its own thread, all at once, and join them all."""
    join(*[start(target) for target in targets])
