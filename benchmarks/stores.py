"""Benchmarks of the stores: submit and approve throughput, and how fast a wait wakes, per store.

Plain script. ``python benchmarks/stores.py`` measures the in-memory queue, SQLite (a file in a temporary
directory) and PostgreSQL (a throwaway server started as the test suite starts one), with one process and
with four processes on one session, and prints microseconds per operation and each database figure as a
ratio to the in-memory queue in the same run, then the targets (``--check``: exit status 1 when one is
missed). Four in-memory "processes" are four queues of their own (a memory store is one process's), so
that row is the parallel ceiling. A wake-up is the time from ``approve`` in this process to the return of
``wait`` in another (for memory: another thread). ``--quick`` runs in seconds, only to prove the script
still works (CI does that); its figures are rough.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.postgres_server

from run import machine, print_targets  # this script's directory: benchmarks/run.py
from tests.postgres_server import PostgresUnavailable, postgres_server

from ask_permissions import ApprovalQueue, ApprovalStore, open_store

ARGUMENTS: dict[str, Any] = {"path": "/srv/data/report.csv", "query": "select region, sum(total) from sales"}
PROCESSES = 4


@dataclass(frozen=True)
class Settings:
    operations: int  # per process
    wakes: int
    repeats: int


FULL = Settings(operations=2_000, wakes=40, repeats=3)
QUICK = Settings(operations=100, wakes=5, repeats=1)


# -- the measured work, in this process or in a worker ---------------------------------------------------


def _queue(url: str, session: str) -> tuple[ApprovalQueue, ApprovalStore]:
    store = open_store(url)
    return ApprovalQueue(store=store, session=session), store


def submit_many(queue: ApprovalQueue, count: int) -> float:
    """Seconds for ``count`` submits of a call that waits for a person."""
    submit = queue.submit
    began = time.perf_counter()
    for number in range(count):
        submit(tool_call_id=f"call-{number}", tool_name="write_file", args=ARGUMENTS)
    return time.perf_counter() - began


def approve_many(queue: ApprovalQueue, ids: list[int]) -> float:
    """Seconds to approve these pending ids one call each."""
    approve = queue.approve
    began = time.perf_counter()
    for action_id in ids:
        approve(action_id)
    return time.perf_counter() - began


def worker(argv: list[str]) -> None:
    """``--worker ROLE URL SESSION ...``: one process's part; prints one JSON line per result."""
    role, url, session, *rest = argv
    queue, store = _queue(url, session) if url != "memory:" else (ApprovalQueue(), None)
    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.readline()  # go
    try:
        if role == "submit":
            print(json.dumps({"seconds": submit_many(queue, int(rest[0]))}), flush=True)
        elif role == "approve":
            first, count = int(rest[0]), int(rest[1])
            if store is None:  # a memory "process": its own queue, filled first
                submit_many(queue, count)
                first = 1
            ids = list(range(first, first + count))
            print(json.dumps({"seconds": approve_many(queue, ids)}), flush=True)
        elif role == "wait":
            for action_id in range(1, int(rest[0]) + 1):
                print(json.dumps({"waiting": action_id}), flush=True)
                queue.wait(action_id, timeout=30)
                print(json.dumps({"woke": action_id, "at": time.monotonic()}), flush=True)
    finally:
        if store is not None:
            store.close()


class Workers:
    """Worker processes of this script, started at once with a line on their standard input."""

    def __init__(self, role: str, url: str, session: str, per_worker: list[list[str]]) -> None:
        self.processes = [
            subprocess.Popen(
                [sys.executable, __file__, "--worker", role, url, session, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for args in per_worker
        ]
        for process in self.processes:
            assert process.stdout is not None
            json.loads(process.stdout.readline())

    def go(self) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()

    def lines(self, index: int) -> Iterator[dict[str, Any]]:
        stdout = self.processes[index].stdout
        assert stdout is not None
        for line in stdout:
            yield json.loads(line)

    def finish(self) -> list[dict[str, Any]]:
        results = []
        for process in self.processes:
            out, _ = process.communicate(timeout=600)
            assert process.returncode == 0, f"worker failed: {out}"
            results.extend(json.loads(line) for line in out.splitlines())
        return results


# -- the benchmarks --------------------------------------------------------------------------------------


def one_process(url: str, settings: Settings) -> tuple[float, float]:
    """Microseconds per submit and per approve, in this process (best of the repeats)."""
    submits, approves = [], []
    for repeat in range(settings.repeats):
        session = f"bench-1-{os.getpid()}-{repeat}-{time.monotonic_ns()}"
        if url == "memory:":
            queue, store = ApprovalQueue(), None
        else:
            queue, store = _queue(url, session)
        try:
            submits.append(submit_many(queue, settings.operations) / settings.operations)
            ids = list(range(1, settings.operations + 1))
            approves.append(approve_many(queue, ids) / settings.operations)
        finally:
            if store is not None:
                store.close()
    return min(submits) * 1e6, min(approves) * 1e6


def many_processes(url: str, settings: Settings) -> tuple[float, float]:
    """Microseconds per operation of ``PROCESSES`` processes at once on one session (wall time / all ops)."""
    count = settings.operations
    session = f"bench-{PROCESSES}-{os.getpid()}-{time.monotonic_ns()}"
    figures = []
    for role in ("submit", "approve"):
        if role == "submit":
            per_worker = [[str(count)] for _ in range(PROCESSES)]
        else:
            # Approve what the submit round queued: each worker its own quarter of the ids.
            per_worker = [[str(1 + index * count), str(count)] for index in range(PROCESSES)]
        workers = Workers(role, url, session, per_worker)
        workers.go()
        # They start together; the slowest one's time is the round's (their starts and exits are not).
        slowest = max(result["seconds"] for result in workers.finish())
        figures.append(slowest / (count * PROCESSES) * 1e6)
    return figures[0], figures[1]


def wake_ups(url: str, settings: Settings) -> list[float]:
    """Milliseconds from approve here to wait returning elsewhere, once per action."""
    if url == "memory:":
        return _wake_ups_in_threads(settings)
    session = f"bench-wake-{os.getpid()}-{time.monotonic_ns()}"
    queue, store = _queue(url, session)
    latencies = []
    chooser = random.Random(7)
    try:
        for _ in range(settings.wakes):
            queue.submit(tool_call_id="wake", tool_name="bash")
        workers = Workers("wait", url, session, [[str(settings.wakes)]])
        workers.go()
        lines = workers.lines(0)
        for action_id in range(1, settings.wakes + 1):
            assert next(lines) == {"waiting": action_id}
            # Nothing tells another process's wait() has begun: give it the time, at a random phase of
            # the SQLite watcher's polling (a person's approval comes at any moment).
            time.sleep(0.05 + chooser.random() * 0.05)
            approved_at = time.monotonic()
            queue.approve(action_id)
            woke = next(lines)
            latencies.append((woke["at"] - approved_at) * 1000)
        workers.finish()
    finally:
        store.close()
    return latencies


def _wake_ups_in_threads(settings: Settings) -> list[float]:
    queue = ApprovalQueue()
    latencies = []
    for _ in range(settings.wakes):
        action_id = queue.submit(tool_call_id="wake", tool_name="bash")
        woke: list[float] = []

        def wait(action_id: int = action_id, woke: list[float] = woke) -> None:
            queue.wait(action_id, timeout=30)
            woke.append(time.monotonic())

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.01)
        approved_at = time.monotonic()
        queue.approve(action_id)
        waiter.join(30)
        latencies.append((woke[0] - approved_at) * 1000)
    return latencies


@contextmanager
def databases(with_postgres: bool) -> Iterator[dict[str, str | None]]:
    """The stores' URLs: memory, a fresh SQLite file, and a throwaway PostgreSQL server (or None)."""
    with tempfile.TemporaryDirectory() as directory:
        urls: dict[str, str | None] = {
            "memory": "memory:",
            "SQLite": f"sqlite:///{Path(directory) / 'bench.db'}",
            "PostgreSQL": None,
        }
        if not with_postgres:
            yield urls
            return
        try:
            with postgres_server() as dsn:
                urls["PostgreSQL"] = dsn
                yield urls
        except PostgresUnavailable as error:
            print(f"PostgreSQL skipped: {error}", file=sys.stderr)
            yield urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run (rough figures)")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when a target is missed")
    parser.add_argument("--no-postgres", action="store_true", help="leave PostgreSQL out")
    parser.add_argument("--worker", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        worker(options.worker)
        return 0
    settings = QUICK if options.quick else FULL
    started = time.perf_counter()
    rows: dict[str, dict[str, float]] = {}
    with databases(not options.no_postgres) as urls:
        for name, url in urls.items():
            if url is None:
                continue
            submit, approve = one_process(url, settings)
            submit_many_, approve_many_ = many_processes(url, settings)
            wakes = wake_ups(url, settings)
            rows[name] = {
                "submit, 1 process (µs/op)": submit,
                "approve, 1 process (µs/op)": approve,
                f"submit, {PROCESSES} processes on one session (µs/op)": submit_many_,
                f"approve, {PROCESSES} processes on one session (µs/op)": approve_many_,
                "wake-up across processes, median (ms)": statistics.median(wakes),
                "wake-up across processes, slowest (ms)": max(wakes),
            }
    elapsed = time.perf_counter() - started
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {machine()}")
    print(f"{'quick run (rough figures)' if options.quick else 'full run'}, {elapsed:.0f} s")
    print()
    stores = list(rows)
    print("| benchmark | " + " | ".join(stores) + " |")
    print("| --- |" + " ---: |" * len(stores))
    memory = rows["memory"]
    for measure in memory:
        cells = []
        for store in stores:
            value = rows[store][measure]
            ratio = "" if store == "memory" or "wake" in measure else f" ({value / memory[measure]:.1f}x)"
            cells.append(f"{value:,.1f}{ratio}")
        print(f"| {measure} | " + " | ".join(cells) + " |")
    print()
    targets = []
    submit, wake = "submit, 1 process (µs/op)", "wake-up across processes, median (ms)"
    for store, submit_limit, wake_limit in (("SQLite", 20.0, 250.0), ("PostgreSQL", 50.0, 50.0)):
        if store in rows:
            targets.append((f"submit: {store} / memory", rows[store][submit] / memory[submit], submit_limit))
            targets.append((f"wake-up median, {store} (ms)", rows[store][wake], wake_limit))
    missed = print_targets(targets, digits=1)
    return 1 if options.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
