"""A bound on this thread's CPU time, for the tests that catch a blow-up (a regex that backtracks, a reading
that grows quadratically).

A wall-clock bound fails when the machine is busy (the suite shares two cores with whatever else runs); the
CPU time of the test's own thread counts only what the code under test spent, so the bound catches a
blow-up and not a busy neighbour. The garbage collector is held off meanwhile: late in the suite the heap is
large, and one full collection of it (which the block did not cause) takes about a second. Speed itself is
measured in ``benchmarks/``, never asserted here.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator

__all__ = ["cpu_bound"]


@contextlib.contextmanager
def cpu_bound(seconds: float) -> Iterator[None]:
    """Fail if the block spends ``seconds`` or more of this thread's CPU time."""
    collecting = gc.isenabled()
    gc.disable()
    started = time.thread_time()
    try:
        yield
    finally:
        spent = time.thread_time() - started
        if collecting:
            gc.enable()
    assert spent < seconds, f"the block spent {spent:.3f} s of CPU time; the bound is {seconds} s"
