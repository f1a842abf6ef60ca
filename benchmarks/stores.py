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
import contextlib
import io
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.postgres_server

from run import machine, print_targets  # this script's directory: benchmarks/run.py
from tests.postgres_server import PostgresUnavailable, postgres_server

from ask_permissions import ApprovalQueue, ApprovalStore, open_store

SUBMIT = "submit, 1 process (µs/op)"
APPROVE = "approve, 1 process (µs/op)"
ARGUMENTS: dict[str, Any] = {"path": "/srv/data/report.csv", "query": "select region, sum(total) from sales"}
PROCESSES = 4
BATCH = 50  # operations timed together in one process


@dataclass(frozen=True)
class Settings:
    operations: int  # per process
    wakes: int
    repeats: int
    load_seconds: float
    cycles: int  # interrupted calls persisted and resumed, per store


FULL = Settings(operations=1_000, wakes=40, repeats=7, load_seconds=10.0, cycles=300)
QUICK = Settings(operations=100, wakes=5, repeats=1, load_seconds=1.5, cycles=10)


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
    if role.startswith("load-"):
        load_worker(role, url, session, float(rest[0]), int(rest[1]))
        return
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


def emit(**record: Any) -> None:
    print(json.dumps(record), flush=True)


def load_worker(role: str, url: str, session: str, seconds: float, index: int) -> None:
    """One process of the load: ``load-submit`` submits (a third of its calls wait for a person, whose
    decision it waits for), ``load-resolve`` decides through the API, ``load-cli`` through the command
    ``ask-permissions approvals`` (a store opened per command, as a person's shell does)."""
    store = open_store(url)
    queue = ApprovalQueue(store=store, session=session, auto_approve={"read": True})
    queue.on_approve = lambda action: emit(event="callback", id=action.id)
    queue.on_reject = lambda action: emit(event="callback", id=action.id)
    stop = threading.Event()
    emit(ready=True)
    sys.stdin.readline()  # go

    def stop_on_a_line() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=stop_on_a_line, daemon=True).start()
    deadline = time.monotonic() + seconds
    try:
        if role == "load-submit":
            number = 0
            while time.monotonic() < deadline:
                manual = number % 3 == 0
                action_id = queue.submit(
                    tool_call_id=f"p{index}-{number}",
                    tool_name="bash" if manual else "read",
                    args=ARGUMENTS,
                    auto_approvable=not manual,
                )
                emit(event="submitted", id=action_id, manual=manual)
                if manual:
                    decided = queue.wait(action_id, timeout=60)
                    emit(event="woke", id=action_id, at=time.monotonic(), status=decided and decided.status)
                number += 1
        else:
            _resolve_load(
                role, url, session, queue=queue, store=store, stop=stop, chooser=random.Random(index)
            )
    finally:
        store.close()


def _resolve_load(
    role: str,
    url: str,
    session: str,
    *,
    queue: ApprovalQueue,
    store: ApprovalStore,
    stop: threading.Event,
    chooser: random.Random,
) -> None:
    """Decide the oldest pending actions, three at a time, until told to stop; idle, wait for a change."""
    store.watch()
    seen = store.change_number()
    try:
        while not stop.is_set():
            if role == "load-resolve":
                oldest = [action.id for action in queue.pending_actions[:12]]
            else:
                listed = _command(["approvals", "list", "--json", "--session", session, "--store", url])
                oldest = (
                    [record["id"] for record in json.loads(listed)[:12]] if listed.startswith("[") else []
                )
            if not oldest:
                seen = store.wait_for_change(seen, 0.5)
                continue
            ids = chooser.sample(oldest, min(3, len(oldest)))
            approve = chooser.random() < 0.5
            asked = time.monotonic()  # a wake-up counts from here: the decision is being recorded
            if role == "load-resolve":
                resolved = queue.approve(*ids, scope="session") if approve else queue.reject(*ids)
                decided = [action.id for action in resolved]
            else:
                verb = "approve" if approve else "reject"
                out = _command(["approvals", verb, *map(str, ids), "--session", session, "--store", url])
                decided = [
                    int(line.split()[1])
                    for line in out.splitlines()
                    if line.split()[:1] in (["approved"], ["rejected"])
                ]
                for action_id in decided:  # the command's callbacks are its printed lines
                    emit(event="callback", id=action_id)
            emit(event="resolved", ids=decided, at=asked)
    finally:
        store.unwatch()


def _command(argv: list[str]) -> str:
    """``ask-permissions ARGV`` in this process; what it printed (an exit status 2 prints nothing)."""
    from ask_permissions.cli._main import main as command

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        command(argv)
    return printed.getvalue()


def load(url: str, seconds: float) -> dict[str, float]:
    """Six submitting processes and two deciding ones on one session for ``seconds``: the figures, and
    the lost and doubled resolutions."""
    session = f"bench-load-{os.getpid()}-{time.monotonic_ns()}"
    submitters = Workers("load-submit", url, session, [[str(seconds), str(i)] for i in range(6)])
    resolvers = Workers("load-resolve", url, session, [[str(seconds), "0"]])
    command = Workers("load-cli", url, session, [[str(seconds), "1"]])
    everyone = [submitters, resolvers, command]
    began = time.monotonic()
    for workers in everyone:
        workers.go()
        workers.read_on()
    records = submitters.finish()
    elapsed = time.monotonic() - began
    for workers in (resolvers, command):
        workers.go()  # stop
        records += workers.finish()
    submitted = {r["id"]: r["manual"] for r in records if r.get("event") == "submitted"}
    callbacks = Counter(r["id"] for r in records if r.get("event") == "callback")
    resolved_at = {i: r["at"] for r in records if r.get("event") == "resolved" for i in r["ids"]}
    woke = {r["id"]: r for r in records if r.get("event") == "woke"}
    wakes = sorted((woke[i]["at"] - resolved_at[i]) * 1000 for i in woke if i in resolved_at)
    store = open_store(url)
    try:
        queue = ApprovalQueue(store=store, session=session, auto_approve={"read": True})
        finals = {action_id: queue[action_id] for action_id in submitted}
    finally:
        store.close()

    def is_lost(action_id: int, manual: bool) -> bool:
        """Gone from the store, resolved with no callback anywhere, or decided without its waiter waking."""
        final = finals[action_id]
        if final is None or (final.status != "pending" and callbacks[action_id] == 0):
            return True
        return manual and (action_id not in woke or woke[action_id]["status"] is None)

    lost = len([action_id for action_id, manual in submitted.items() if is_lost(action_id, manual)])
    return {
        "resolutions per second": sum(callbacks.values()) / elapsed,
        "submits per second": len(submitted) / elapsed,
        "wake-up p50 (ms)": statistics.median(wakes) if wakes else float("nan"),
        "wake-up p99 (ms)": wakes[min(len(wakes) - 1, int(len(wakes) * 0.99))] if wakes else float("nan"),
        "lost": lost,
        "doubled": sum(1 for count in callbacks.values() if count > 1),
    }


def round_trips(url: str) -> dict[str, float]:
    """What one operation sends: PostgreSQL round trips (libpq's trace: each Query or Sync the client
    sends waits for the server), SQLite statements (the connection's trace callback)."""
    operations = 50
    store = open_store(url)
    session = f"bench-trips-{os.getpid()}-{time.monotonic_ns()}"
    queue = ApprovalQueue(store=store, session=session)
    auto = ApprovalQueue(store=store, session=session + "-auto", auto_approve={"read": True})
    queue.submit(tool_call_id="warm", tool_name="bash")
    queue.approve(1)
    called = ApprovalQueue(store=store, session=session + "-called", on_approve=lambda action: None)
    for number in range(operations):
        called.submit(tool_call_id=f"d{number}", tool_name="bash")
    cases = {
        "submit": lambda n: queue.submit(tool_call_id=f"c{n}", tool_name="bash", args=ARGUMENTS),
        "approve": lambda n: queue.approve(n + 2),
        "approve, with an on_approve callback": lambda n: called.approve(n + 1),
        "submit, queue that auto-approves a tool": lambda n: auto.submit(
            tool_call_id=f"a{n}", tool_name="bash"
        ),
    }
    counts: dict[str, float] = {}
    try:
        for name, operation in cases.items():
            counts[name] = _count(store, operation, operations) / operations
    finally:
        store.close()
    return counts


def _count(store: ApprovalStore, operation: Any, operations: int) -> int:
    connection = store._connection  # type: ignore[attr-defined]  # measured from outside, by a benchmark
    if isinstance(connection, sqlite3.Connection):
        statements: list[str] = []
        connection.set_trace_callback(statements.append)
        try:
            for number in range(operations):
                operation(number)
        finally:
            connection.set_trace_callback(None)
        return len(statements)
    from psycopg import pq

    with tempfile.TemporaryFile("w+") as trace:
        connection.pgconn.trace(trace.fileno())
        connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            for number in range(operations):
                operation(number)
        finally:
            connection.pgconn.untrace()
        trace.seek(0)
        sent = [line.rstrip("\n").split("\t") for line in trace if line.startswith("F")]
    return sum(1 for parts in sent if len(parts) > 2 and parts[2] in ("Query", "Sync"))


def langgraph_side_by_side(name: str, url: str, cycles: int) -> dict[str, float] | None:
    """Microseconds per interrupted call persisted and resumed: LangGraph's checkpointer on the same
    database, against this package's submit + approve + wait (None: the checkpointer is not installed)."""
    try:
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Command, interrupt
    except ImportError:
        return None

    class State(TypedDict):
        command: str
        approved: bool

    def gate(state: State) -> dict[str, bool]:
        return {"approved": bool(interrupt({"tool": "bash", "command": state["command"]}))}

    builder = StateGraph(State)
    builder.add_node("gate", gate)
    builder.add_edge(START, "gate")
    builder.add_edge("gate", END)
    with _checkpointer(name, url) as saver:
        if saver is None:
            return None
        graph = builder.compile(checkpointer=saver)
        began = time.perf_counter()
        for number in range(cycles):
            config: Any = {"configurable": {"thread_id": f"bench-{os.getpid()}-{number}"}}
            graph.invoke({"command": "make test", "approved": False}, config)
            done = graph.invoke(Command(resume=True), config)
            assert done["approved"] is True
        theirs = (time.perf_counter() - began) / cycles * 1e6
    store = open_store(url)
    try:
        queue = ApprovalQueue(store=store, session=f"bench-lg-{os.getpid()}-{time.monotonic_ns()}")
        began = time.perf_counter()
        for number in range(cycles):
            action_id = queue.submit(
                tool_call_id=f"c{number}", tool_name="bash", args={"command": "make test"}
            )
            queue.approve(action_id)
            decided = queue.wait(action_id, timeout=30)
            assert decided is not None
            assert decided.is_approved
        ours = (time.perf_counter() - began) / cycles * 1e6
    finally:
        store.close()
    return {"LangGraph checkpointer": theirs, "ask_permissions": ours}


@contextmanager
def _checkpointer(name: str, url: str) -> Iterator[Any]:
    """LangGraph's checkpointer for this database, or None when its package is missing."""
    if name == "SQLite":
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ImportError:
            yield None
            return
        connection = sqlite3.connect(url[len("sqlite:///") :], check_same_thread=False)
        try:
            saver = SqliteSaver(connection)
            saver.setup()
            yield saver
        finally:
            connection.close()
        return
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        yield None
        return
    with PostgresSaver.from_conn_string(url) as postgres_saver:
        postgres_saver.setup()
        yield postgres_saver


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
        self.readers: list[tuple[threading.Thread, list[str]]] = []
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

    def read_on(self) -> None:
        """Read every worker's lines as they come, each in a thread (a worker that prints much would
        otherwise fill its pipe and stall)."""
        for process in self.processes:
            stdout, lines = process.stdout, list[str]()
            assert stdout is not None
            reader = threading.Thread(target=lines.extend, args=(stdout,), daemon=True)
            reader.start()
            self.readers.append((reader, lines))

    def finish(self) -> list[dict[str, Any]]:
        if not self.readers:
            results: list[dict[str, Any]] = []
            for process in self.processes:
                out, _ = process.communicate(timeout=600)
                assert process.returncode == 0, f"worker failed: {out}"
                results.extend(json.loads(line) for line in out.splitlines())
            return results
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.close()
        results = []
        for process, (reader, lines) in zip(self.processes, self.readers, strict=True):
            reader.join(600)
            process.wait(60)
            assert process.returncode == 0, f"worker failed: {lines[-3:]}"
            results.extend(json.loads(line) for line in lines)
        return results


# -- the benchmarks --------------------------------------------------------------------------------------


def one_process(url: str, settings: Settings) -> tuple[float, float, float, float]:
    """Microseconds per submit and per approve in this process, then the same for the in-memory queue.

    The two are measured in turn, in batches of ``BATCH`` operations (the machine's load changes from one
    moment to the next), and each figure is its fastest batch: what the operation costs when nothing
    else takes the processor.
    """
    batches = max(1, settings.operations // BATCH)
    times: dict[str, list[float]] = {"submit": [], "approve": [], "memory submit": [], "memory approve": []}
    for repeat in range(settings.repeats):
        memory = ApprovalQueue()
        queue, store = (None, None) if url == "memory:" else _queue(url, f"bench-1-{os.getpid()}-{repeat}")
        try:
            for _ in range(batches):
                times["memory submit"].append(submit_many(memory, BATCH) / BATCH)
                if queue is not None:
                    times["submit"].append(submit_many(queue, BATCH) / BATCH)
            for index in range(batches):
                ids = list(range(index * BATCH + 1, (index + 1) * BATCH + 1))
                times["memory approve"].append(approve_many(memory, ids) / BATCH)
                if queue is not None:
                    times["approve"].append(approve_many(queue, ids) / BATCH)
        finally:
            if store is not None:
                store.close()
    best = {name: min(values) * 1e6 if values else 0.0 for name, values in times.items()}
    if url == "memory:":
        best["submit"], best["approve"] = best["memory submit"], best["memory approve"]
    return best["submit"], best["approve"], best["memory submit"], best["memory approve"]


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
    baselines: dict[str, dict[str, float]] = {}  # the memory queue measured in turn with each store
    trips: dict[str, dict[str, float]] = {}
    loads: dict[str, dict[str, float]] = {}
    side_by_side: dict[str, dict[str, float]] = {}
    with databases(not options.no_postgres) as urls:
        for name, url in urls.items():
            if url is None:
                continue
            submit, approve, memory_submit, memory_approve = one_process(url, settings)
            baselines[name] = {SUBMIT: memory_submit, APPROVE: memory_approve}
            submit_many_, approve_many_ = many_processes(url, settings)
            wakes = wake_ups(url, settings)
            rows[name] = {
                SUBMIT: submit,
                APPROVE: approve,
                f"submit, {PROCESSES} processes on one session (µs/op)": submit_many_,
                f"approve, {PROCESSES} processes on one session (µs/op)": approve_many_,
                "wake-up across processes, median (ms)": statistics.median(wakes),
                "wake-up across processes, slowest (ms)": max(wakes),
            }
            if name == "memory":
                continue
            trips[name] = round_trips(url)
            loads[name] = load(url, settings.load_seconds)
            compared = langgraph_side_by_side(name, url, settings.cycles)
            if compared is not None:
                side_by_side[name] = compared
    elapsed = time.perf_counter() - started
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {machine()}")
    print(f"{'quick run (rough figures)' if options.quick else 'full run'}, {elapsed:.0f} s")
    print()
    missed = report(rows, baselines, trips=trips, loads=loads, side_by_side=side_by_side, settings=settings)
    return 1 if options.check and missed else 0


def report(
    rows: dict[str, dict[str, float]],
    baselines: dict[str, dict[str, float]],
    *,
    trips: dict[str, dict[str, float]],
    loads: dict[str, dict[str, float]],
    side_by_side: dict[str, dict[str, float]],
    settings: Settings,
) -> bool:
    """Print the tables and the targets; whether a target was missed."""
    stores = list(rows)
    print("| benchmark | " + " | ".join(stores) + " |")
    print("| --- |" + " ---: |" * len(stores))
    memory = rows["memory"]
    for measure in memory:
        cells = []
        for store in stores:
            value = rows[store][measure]
            base = baselines[store].get(measure, memory[measure])
            ratio = "" if store == "memory" or "wake" in measure else f" ({value / base:.1f}x)"
            cells.append(f"{value:,.1f}{ratio}")
        print(f"| {measure} | " + " | ".join(cells) + " |")
    _table("what one operation sends (PostgreSQL: round trips; SQLite: statements)", trips, digits=2)
    _table(f"load: 6 submitting and 2 deciding processes on one session, {settings.load_seconds:g} s", loads)
    _table(f"one interrupted call persisted and resumed, µs each ({settings.cycles} calls)", side_by_side)
    print()
    targets: list[tuple[str, float, float]] = []
    wake = "wake-up across processes, median (ms)"
    limits: dict[str, tuple[float, float | None, float]] = {
        "SQLite": (20.0, None, 10.0),
        "PostgreSQL": (30.0, 60.0, 50.0),
    }
    for kind, (submit_limit, approve_limit, wake_limit) in limits.items():
        if kind not in rows:
            continue
        paired = baselines[kind]
        targets.append((f"submit: {kind} / memory", rows[kind][SUBMIT] / paired[SUBMIT], submit_limit))
        if approve_limit is not None:
            targets.append(
                (f"approve: {kind} / memory", rows[kind][APPROVE] / paired[APPROVE], approve_limit)
            )
        targets.append((f"wake-up median, {kind} (ms)", rows[kind][wake], wake_limit))
        lost_and_doubled = loads[kind]["lost"] + loads[kind]["doubled"]
        targets.append((f"load, {kind}: lost + doubled resolutions", lost_and_doubled, 0.0))
    return bool(print_targets(targets, digits=1))


def _table(title: str, rows: dict[str, dict[str, float]], *, digits: int = 1) -> None:
    """A markdown table: one column per store, one row per measure."""
    if not rows:
        return
    stores = list(rows)
    print()
    print(f"| {title} | " + " | ".join(stores) + " |")
    print("| --- |" + " ---: |" * len(stores))
    for measure in rows[stores[0]]:
        cells = [f"{rows[store].get(measure, float('nan')):,.{digits}f}" for store in stores]
        print(f"| {measure} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
