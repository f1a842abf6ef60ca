"""Worker processes for the multi-process store tests: ``python -m tests.store_workers ROLE STORE_URL ...``.

Each worker opens the store itself, prints ``{"event": "ready"}``, and for the timed roles starts when a
line arrives on its standard input (the test sends it once every worker is ready); it does its part on
one session and prints one JSON object per line (a line per callback or result), flushed at once, so
that the test reads what a killed worker did before it died.

Roles:
    submit SESSION SECONDS INDEX         submit for SECONDS: "read" items auto-approve, "bash" wait
    resolve SESSION SECONDS INDEX        approve or reject pending actions for SECONDS
    hang SESSION ACTION_ID LEASE         approve ACTION_ID with an on_approve that never returns
    stall SESSION ACTION_ID LEASE GO     approve ACTION_ID; on_approve waits for the file GO
    wait SESSION ACTION_ID               wait for ACTION_ID; report when it woke
    wait_async SESSION ACTION_ID         the same with wait_async, in an event loop
    wait_later SESSION ID TIMEOUT ASYNC  after the start line, wait (ASYNC 1: wait_async) for TIMEOUT s
    approve SESSION ACTION_ID            after the start line, approve ACTION_ID; report what it did
    restore SESSION INDEX                after the start line, restore a snapshot of ids INDEX*10+1..+3
    submit_retrying SESSION              after the start line, submit auto-approved calls until a "stop"
                                         line: each is submitted again, with its call id, until it
                                         returns an id

With ``ASK_PERMISSIONS_TEST_CLOCK_STEP=SECONDS`` in its environment a worker's wall clock (``time.time``)
runs that many seconds ahead (or behind, if negative) of the machine's: a clock step, which a test
cannot make on a shared machine. ``ASK_PERMISSIONS_TEST_LEASE=SECONDS`` sets the lease of the roles that
take none as an argument (default 30), and ``ASK_PERMISSIONS_TEST_LOST_REPLY=SECONDS`` a PostgreSQL
store's ``lost_reply_timeout``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from ask_permissions import (
    Action,
    ApprovalQueue,
    ApprovalStore,
    ClaimLostError,
    PostgresStore,
    StoreError,
    open_store,
)

CLOCK_STEP = "ASK_PERMISSIONS_TEST_CLOCK_STEP"
LEASE = "ASK_PERMISSIONS_TEST_LEASE"
LOST_REPLY = "ASK_PERMISSIONS_TEST_LOST_REPLY"

AUTO_APPROVE = {"read": True}


def emit(**record: Any) -> None:
    """One line of JSON on standard output, flushed."""
    sys.stdout.write(json.dumps({"pid": os.getpid(), **record}) + "\n")
    sys.stdout.flush()


def recorder(event: str) -> Callable[[Action], None]:
    def record(action: Action) -> None:
        emit(event=event, id=action.id, status=action.status, scope=action.resolution_scope)

    return record


def go() -> float:
    """Wait for the test's start line; the time it came."""
    sys.stdin.readline()
    return time.time()


def submit(queue: ApprovalQueue, seconds: float, index: int) -> None:
    def on_approve(action: Action) -> None:
        overtaken = action.resolution_scope == "once" and any(
            not (pending.auto_approvable and pending.tool_name == "read")
            for pending in queue.pending_actions
            if pending.id < action.id
        )
        emit(event="approve", id=action.id, status=action.status, scope=action.scope, overtaken=overtaken)

    queue.on_approve = on_approve
    queue.on_reject = recorder("reject")
    start = go()
    number = 0
    while time.time() < start + seconds:
        auto = (number + index) % 3 != 0
        action_id = queue.submit(
            tool_call_id=f"w{index}-{number}", tool_name="read" if auto else "bash", auto_approvable=auto
        )
        emit(event="submitted", id=action_id, auto=auto)
        number += 1


def resolve(queue: ApprovalQueue, seconds: float, index: int) -> None:
    """Approve or reject, three at a time, among the oldest pending: the resolvers contend for the same ids,
    and clearing the head lets the submitters' drains run."""
    queue.on_approve = recorder("approve")
    queue.on_reject = recorder("reject")
    chooser = random.Random(index)
    start = go()
    oldest: list[int] = []
    rounds = 0
    while time.time() < start + seconds:
        if rounds % 8 == 0 or not oldest:
            oldest = [action.id for action in queue.pending_actions[:12]]
        rounds += 1
        if not oldest:
            continue
        ids = chooser.sample(oldest, min(len(oldest), 3))
        if chooser.random() < 0.5:
            resolved = queue.approve(*ids, scope="session")
        else:
            resolved = queue.reject(*ids, feedback=f"resolver {index}")
        emit(event="resolved", ids=[action.id for action in resolved])


def hang(queue: ApprovalQueue, action_id: int) -> None:
    def on_approve(action: Action) -> None:
        emit(event="entered", id=action.id, status=action.status)
        time.sleep(3600)

    queue.on_approve = on_approve
    queue.approve(action_id)


def stall(queue: ApprovalQueue, action_id: int, go: Path) -> None:
    def on_approve(action: Action) -> None:
        emit(event="entered", id=action.id, status=action.status)
        while not go.exists():
            time.sleep(0.01)

    queue.on_approve = on_approve
    try:
        queue.approve(action_id)
    except ClaimLostError as error:
        emit(event="claim_lost", id=error.action_id)
    else:
        emit(event="recorded", id=action_id)


def wait(queue: ApprovalQueue, action_id: int, *, in_loop: bool) -> None:
    emit(event="waiting", id=action_id)
    if in_loop:
        action = asyncio.run(queue.wait_async(action_id, timeout=30))
    else:
        action = queue.wait(action_id, timeout=30)
    emit(event="woke", id=action_id, status=None if action is None else action.status, at=time.monotonic())


def wait_later(queue: ApprovalQueue, action_id: int, timeout: float, *, in_loop: bool) -> None:
    go()
    emit(event="waiting", id=action_id)
    try:
        if in_loop:
            action = asyncio.run(queue.wait_async(action_id, timeout=timeout))
        else:
            action = queue.wait(action_id, timeout=timeout)
    except TimeoutError as error:
        cause = type(error.__cause__).__name__ if error.__cause__ is not None else None
        emit(event="timed_out", id=action_id, message=str(error), cause=cause)
        return
    emit(event="woke", id=action_id, status=None if action is None else action.status)


def approve(queue: ApprovalQueue, action_id: int) -> None:
    queue.on_approve = recorder("approve")
    go()
    try:
        resolved = queue.approve(action_id)
    except StoreError as error:
        emit(event="failed", id=action_id, error=type(error).__name__, message=str(error))
    else:
        emit(event="resolved", ids=[action.id for action in resolved])


def restore(queue: ApprovalQueue, index: int) -> None:
    first = index * 10 + 1
    snapshot = {
        "version": 1,
        "next_id": first + 2,
        "pending_actions": [
            {"id": action_id, "tool_name": "bash", "tool_call_id": f"r{index}-{action_id}"}
            for action_id in range(first, first + 3)
        ],
    }
    go()
    try:
        count = queue.restore_pending(snapshot)
    except ValueError as error:
        emit(event="refused", index=index, error=type(error).__name__, message=str(error))
    else:
        emit(event="restored", index=index, count=count)


def submit_retrying(queue: ApprovalQueue) -> None:
    """Submit calls one by one until told to stop; a call that raised is submitted again with its id."""
    queue.on_approve = recorder("approve")
    stop = threading.Event()

    def listen() -> None:
        sys.stdin.readline()
        stop.set()

    go()
    threading.Thread(target=listen, daemon=True).start()
    number = 0
    while not stop.is_set():
        call = f"s{number}"
        while True:
            try:
                action_id = queue.submit(tool_call_id=call, tool_name="read", auto_approvable=True)
            except StoreError as error:
                emit(event="failed", call=call, error=type(error).__name__, message=str(error))
                time.sleep(0.05)  # a host's pause before it tries again, not a wait for an event
                continue
            break
        emit(event="submitted", id=action_id, call=call, auto=True)
        number += 1


def main(argv: list[str]) -> None:
    role, url, session, *rest = argv
    step = float(os.environ.get(CLOCK_STEP, "0"))
    if step:
        wall = time.time
        time.time = lambda: wall() + step  # see the module's docstring
    if role in ("hang", "stall"):
        lease = timedelta(seconds=float(rest[1]))
    else:
        lease = timedelta(seconds=float(os.environ.get(LEASE, "30")))
    store: ApprovalStore
    if LOST_REPLY in os.environ:
        store = PostgresStore(url, lease=lease, lost_reply_timeout=float(os.environ[LOST_REPLY]))
    else:
        store = open_store(url, lease=lease)
    queue = ApprovalQueue(store=store, session=session, auto_approve=AUTO_APPROVE)
    emit(event="ready")
    try:
        if role == "submit":
            submit(queue, float(rest[0]), int(rest[1]))
        elif role == "resolve":
            resolve(queue, float(rest[0]), int(rest[1]))
        elif role == "hang":
            hang(queue, int(rest[0]))
        elif role == "stall":
            stall(queue, int(rest[0]), Path(rest[2]))
        elif role in ("wait", "wait_async"):
            wait(queue, int(rest[0]), in_loop=role == "wait_async")
        elif role == "wait_later":
            wait_later(queue, int(rest[0]), float(rest[1]), in_loop=rest[2] == "1")
        elif role == "approve":
            approve(queue, int(rest[0]))
        elif role == "restore":
            restore(queue, int(rest[0]))
        elif role == "submit_retrying":
            submit_retrying(queue)
        else:
            raise SystemExit(f"unknown role {role!r}")
    finally:
        store.close()
    emit(event="done")


if __name__ == "__main__":
    main(sys.argv[1:])
