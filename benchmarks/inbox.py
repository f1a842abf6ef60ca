"""The web inbox: how soon a page of 1,000 pending actions can be answered, and how soon an answer given on
the page wakes the agent that waits for it.

Both are measured in the system's headless Chromium (through Playwright) against the real inbox process on a
SQLite store, each against a baseline measured in the same run: the page with 10 pending actions, and the
same approval given straight through the queue from another process (the store's own wake-up time).

    python benchmarks/inbox.py [--quick]

Targets: the 1,000-action page interactive within 1 s; an answer on the page wakes the agent within the
store's wake-up time plus the page's own round trip (the target below says how much).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.inbox_web, tests.inbox_agent

from run import machine, print_targets  # this script's directory: benchmarks/run.py
from tests.inbox_agent import AgentProcess
from tests.inbox_web import InboxServer, chromium

from ask_permissions import ApprovalQueue, SqliteStore

INTERACTIVE_LIMIT = 1.0  # seconds: the target for the 1,000-action page
WAKE_ALLOWANCE = 0.5  # seconds the page may add to the store's wake-up time (its POST and the agent's read)
SHOWN_LIMIT = 1.0  # seconds: the "within a second of a change made by any process"


def _seed(store_path: Path, count: int) -> None:
    store = SqliteStore(store_path)
    try:
        queues = [ApprovalQueue(store=store, session=f"agent-{n}") for n in range(10)]
        for index in range(count):
            queues[index % 10].submit(
                tool_call_id=f"call-{index}",
                tool_name="Bash",
                args={"command": f"make test TARGET=module-{index}", "cwd": "/work/project"},
                why={
                    "layer": "default",
                    "rule": None,
                    "source": None,
                    "reason": "Tool 'Bash' requires approval",
                    "suggestions": [f"Bash(make test TARGET=module-{index})", "Bash(make test *)"],
                },
            )
    finally:
        store.close()


def _interactive(context: Any, url: str) -> float:
    """Seconds from the start of navigation until the page's script has set up every card."""
    page = context.new_page()
    try:
        page.goto(url)
        page.locator("body.ready").wait_for(state="attached", timeout=60_000)
        ready = page.evaluate("performance.getEntriesByName('inbox-ready')[0].startTime")
        return float(ready) / 1000
    finally:
        page.close()


def page_times(context: Any, count: int, repeats: int) -> list[float]:
    folder = Path(tempfile.mkdtemp(prefix="inbox-bench-"))
    store_path = folder / "approvals.db"
    _seed(store_path, count)
    server = InboxServer(f"sqlite:///{store_path}", user="bench")
    try:
        _interactive(context, server.url)  # warm up: the assets, the first render
        # Each measured page is a new tab opened at the printed address (its token in the fragment): the
        # time includes the script's fetch of the view with the token.
        return [_interactive(context, server.url) for _ in range(repeats)]
    finally:
        server.stop()


def _wait_for_answer(store_path: Path, session: str, folder: Path, answer: Any) -> float:
    """Seconds from an answer given by ``answer(pending event)`` until the waiting agent woke with it."""
    agent = AgentProcess(store_path, session, folder, [["Bash", {"command": "make deploy"}]], folder)
    try:
        pending = agent.until("pending")
        time.sleep(0.3)  # let the agent settle into its wait
        given = answer(pending)
        ran = agent.until("ran")
        agent.until("done")
    finally:
        agent.stop()
    return float(ran["at"]) - given


def wake_times(context: Any, repeats: int) -> tuple[list[float], list[float], list[float]]:
    """(woken through the queue from another process, woken through the page, a new call shown on the
    page), each ``repeats`` times."""
    folder = Path(tempfile.mkdtemp(prefix="inbox-wake-"))
    store_path = folder / "approvals.db"
    server = InboxServer(f"sqlite:///{store_path}", user="bench")
    page = context.new_page()
    direct: list[float] = []
    through_page: list[float] = []
    shown: list[float] = []
    try:
        page.goto(server.url)
        page.locator("#live.on").wait_for(timeout=60_000)
        person = SqliteStore(store_path)
        try:
            for round_ in range(repeats):
                session = f"direct-{round_}"

                def approve_directly(pending: dict[str, Any], session: str = session) -> float:
                    at = time.time()
                    queue = ApprovalQueue(store=person, session=session)
                    queue.approve(pending["action_id"], decided_by="bench")
                    return at

                direct.append(_wait_for_answer(store_path, session, folder, approve_directly))
                session = f"page-{round_}"

                def approve_on_the_page(pending: dict[str, Any], session: str = session) -> float:
                    card = page.locator(f'article.action[data-key="{pending["action_id"]}@{session}"]')
                    card.wait_for(timeout=60_000)
                    at = time.time()
                    shown.append(at - float(pending["at"]))  # from the agent's submit to the card on screen
                    card.get_by_role("button", name="Approve", exact=True).click()
                    return at

                through_page.append(_wait_for_answer(store_path, session, folder, approve_on_the_page))
        finally:
            person.close()
    finally:
        page.close()
        server.stop()
    return direct, through_page, shown


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer actions and repeats")
    options = parser.parse_args()
    count, repeats = (200, 1) if options.quick else (1000, 5)
    with chromium() as context:
        if context is None:
            print("no headless Chromium here (chromium-headless-shell or chromium): nothing measured")
            return 0
        baseline = statistics.median(page_times(context, 10, repeats))
        large = statistics.median(page_times(context, count, repeats))
        direct, through_page, shown = wake_times(context, 3 if options.quick else 7)
    wake_direct, wake_page = statistics.median(direct), statistics.median(through_page)
    appeared = statistics.median(shown)
    print(f"# The web inbox ({machine()})")
    print()
    print("| measurement | median | ratio to baseline |")
    print("| --- | ---: | ---: |")
    print(f"| page interactive, 10 pending actions (baseline) | {baseline * 1000:.0f} ms | 1.00 |")
    print(f"| page interactive, {count} pending actions | {large * 1000:.0f} ms | {large / baseline:.2f} |")
    print(f"| agent woken by an approval through the queue (baseline) | {wake_direct * 1000:.0f} ms | 1.00 |")
    print(
        f"| agent woken by Approve on the page | {wake_page * 1000:.0f} ms | {wake_page / wake_direct:.2f} |"
    )
    print(f"| a new call shown on the open page (from its submit) | {appeared * 1000:.0f} ms | - |")
    print()
    missed = print_targets(
        [
            (f"page with {count} pending actions interactive (s)", large, INTERACTIVE_LIMIT),
            ("answer on the page wakes the agent (s)", wake_page, wake_direct + WAKE_ALLOWANCE),
            ("a change by another process shown on the page (s)", appeared, SHOWN_LIMIT),
        ]
    )
    return 1 if missed and not options.quick else 0


if __name__ == "__main__":
    sys.exit(main())
