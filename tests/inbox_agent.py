"""An agent's process for the inbox tests: it asks a LayeredPolicy over a SQLite store about each call of a
plan, waits for a person's answer, and "runs" what was approved by recording it. Nothing is executed.

Usage: ``python -m tests.inbox_agent STORE_PATH SESSION PROJECT_DIR PLAN_JSON_FILE``

``PLAN_JSON_FILE`` holds a JSON list of ``[tool, arguments]`` pairs. Every line on standard output is one JSON
object: ``{"event": "pending", "action_id": N, "tool": ...}`` when a call waits (after it is queued),
``{"event": "record", ...}`` for each decision record, ``{"event": "ran", "tool": ..., "args": ...}`` for
what would run, ``{"event": "refused", "reason": ...}`` otherwise, and ``{"event": "done"}`` at the end.
"""

from __future__ import annotations

import json
import os
import queue as queues
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Final

from ask_permissions import (
    ApprovalQueue,
    DecisionRecord,
    LayeredPolicy,
    PermissionSettings,
    SessionPermissionGrants,
    SettingsSource,
    SqliteStore,
    ToolCall,
)

WAIT_SECONDS = 120.0
EVENT_SECONDS: Final = 60.0  # the most a test waits for the agent's next line
_ROOT: Final = Path(__file__).resolve().parent.parent


def _say(**event: Any) -> None:
    print(json.dumps(event, default=str), flush=True)


def main(argv: list[str]) -> int:
    store_path, session, project, plan_file = argv
    with open(plan_file, encoding="utf-8") as file:
        plan = json.load(file)
    store = SqliteStore(store_path)
    try:
        queue = ApprovalQueue(store=store, session=session)
        source = SettingsSource("project", project, None, deny=("Bash(rm -rf /*)",))
        policy = LayeredPolicy(
            queue=queue,
            settings=PermissionSettings([source], project_dir=project),
            session_grants=SessionPermissionGrants(store=store, session=session),
            on_decision=_record,
        )
        for index, (tool, arguments) in enumerate(plan):
            result = policy.before_tool_call(ToolCall(tool, arguments, f"call-{index}"))
            if result["action"] == "pending":
                _say(event="pending", action_id=result["action_id"], tool=tool)
                queue.wait(result["action_id"], timeout=WAIT_SECONDS)
            outcome = policy.outcome(result)
            if outcome.runs:
                _say(event="ran", tool=tool, args=outcome.arguments if outcome.modified else arguments)
            else:
                _say(event="refused", tool=tool, reason=outcome.reason)
        _say(event="done")
    finally:
        store.close()
    return 0


def _record(record: DecisionRecord) -> None:
    _say(event="record", **record.to_dict())


class AgentProcess:
    """The agent program run as its own process by a test, its output read line by line as events."""

    def __init__(self, store_path: Path, session: str, project: Path, plan: list[Any], folder: Path) -> None:
        plan_file = folder / f"plan-{session}.json"
        plan_file.write_text(json.dumps(plan), encoding="utf-8")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.inbox_agent",
                str(store_path),
                session,
                str(project),
                str(plan_file),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=_ROOT,
        )
        self.events: list[dict[str, Any]] = []
        self._lines: queues.Queue[str | None] = queues.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def until(self, kind: str) -> dict[str, Any]:
        """The next event of this kind (every event before it is kept in ``events``)."""
        while True:
            try:
                line = self._lines.get(timeout=EVENT_SECONDS)
            except queues.Empty:
                raise AssertionError(f"the agent printed no {kind!r} event in {EVENT_SECONDS} s") from None
            if line is None:
                error = self.process.stderr.read() if self.process.stderr is not None else ""
                raise AssertionError(f"the agent ended before a {kind!r} event: {error[-2000:]}")
            event: dict[str, Any] = json.loads(line)
            self.events.append(event)
            if event["event"] == kind:
                return event

    def stop(self) -> None:
        """End the process (it is waiting, or done) and the reader."""
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(30)
        self._reader.join(30)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
