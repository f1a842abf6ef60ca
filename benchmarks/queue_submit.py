"""How submit's cost depends on the queue's history: it should not.

Measures ``ApprovalQueue.submit`` for a manual action (it stays pending) and for an auto-approvable one
(the drain approves it, firing ``on_approve``) on queues that already hold 100, 10 000 and 100 000
resolved actions. Each repeat builds a fresh queue with exactly that history, then times one batch of
each kind (with the garbage collector paused, as ``timeit`` does); the table shows the median ns per
submit and its ratio to the 100 case of the same run. ``--quick`` builds one queue per size and reuses
it across repeats (its history grows by the batches), so its ratios are rougher.

    python benchmarks/queue_submit.py            # full run
    python benchmarks/queue_submit.py --quick    # a second or two (CI smoke run)
    python benchmarks/queue_submit.py --check    # exit 1 if the largest case is over 1.5x the smallest
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from ask_permissions import Action, ApprovalQueue

SIZES = (100, 10_000, 100_000)
LIMIT = 1.5


def on_approve(action: Action) -> None:
    """A callback that does nothing, so the numbers are the queue's own cost."""


def build(history: int) -> ApprovalQueue:
    """A queue holding ``history`` resolved actions: half approved by hand, half auto-approved."""
    queue = ApprovalQueue(auto_approve={"read": True}, on_approve=on_approve)
    manual = history // 2
    for _ in range(manual):
        queue.submit(tool_call_id="tc", tool_name="bash", args={"command": "ls"})
    queue.approve_all()
    for _ in range(history - manual):
        queue.submit(tool_call_id="tc", tool_name="read", args={"path": "a"}, auto_approvable=True)
    assert not queue.any_pending()
    return queue


def timed_batch(queue: ApprovalQueue, batch: int, *, auto: bool) -> float:
    """Nanoseconds per submit over one batch."""
    name, args = ("read", {"path": "a"}) if auto else ("bash", {"command": "ls"})
    submit = queue.submit
    gc.disable()
    try:
        began = time.perf_counter_ns()
        for _ in range(batch):
            submit(tool_call_id="tc", tool_name=name, args=args, auto_approvable=auto)
        elapsed = time.perf_counter_ns() - began
    finally:
        gc.enable()
    return elapsed / batch


def measure(history: int, repeats: int, batch: int, *, fresh: bool) -> tuple[float, float]:
    """Median ns per submit (manual, auto-approved) with ``history`` resolved actions in the queue."""
    manual: list[float] = []
    auto: list[float] = []
    queue = build(history)
    for repeat in range(repeats):
        if fresh and repeat:
            queue = build(history)
        manual.append(timed_batch(queue, batch, auto=False))
        queue.approve_all()  # so the auto-approvable batch is not stuck behind manual items
        auto.append(timed_batch(queue, batch, auto=True))
    return statistics.median(manual), statistics.median(auto)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a short smoke run (about a second)")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if a ratio exceeds {LIMIT}")
    options = parser.parse_args(argv)
    repeats, batch = (3, 200) if options.quick else (11, 2_000)

    began = time.perf_counter()
    results = {size: measure(size, repeats, batch, fresh=not options.quick) for size in SIZES}
    base_manual, base_auto = results[SIZES[0]]
    print(f"ApprovalQueue.submit, median of {repeats} batches of {batch} (ns per submit)")
    print(f"{'resolved actions':>17} | {'manual':>8} | {'ratio':>5} | {'auto-approved':>13} | {'ratio':>5}")
    print(f"{'-' * 17}-+-{'-' * 8}-+-{'-' * 5}-+-{'-' * 13}-+-{'-' * 5}")
    worst = 1.0
    for size, (manual, auto) in results.items():
        manual_ratio, auto_ratio = manual / base_manual, auto / base_auto
        worst = max(worst, manual_ratio, auto_ratio)
        print(f"{size:>17,} | {manual:>8.0f} | {manual_ratio:>5.2f} | {auto:>13.0f} | {auto_ratio:>5.2f}")
    print(f"worst ratio {worst:.2f} (limit {LIMIT}); {time.perf_counter() - began:.1f} s")
    return 1 if options.check and worst > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
