"""Sample evidence for the replay, audit and suggest tests: a real policy's audit log and a real store."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    ApprovalStore,
    DecisionRecord,
    PermissionRules,
    SqliteStore,
    ToolCall,
)
from ask_permissions.typing import Redactor

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

OLD_POLICY = """\
version = 1
require_approval = ["Bash", "WebFetch", "Edit", { type = "regexp", source = "^mcp__", flags = "" }]

[permissions]
deny = ["Bash(rm -rf *)"]
allow = ["Bash(git status)"]
"""

NEW_POLICY = """\
version = 1
require_approval = ["Bash", "WebFetch", "Edit", { type = "regexp", source = "^mcp__", flags = "" }]

[permissions]
deny = ["Bash(rm -rf *)", "Bash(git push --force *)"]
allow = ["Bash(git status)", "Bash(git diff *)", "Bash(git push *)"]
"""

# (tool, arguments, what a person answers when it waits: True approve, False reject, None nobody)
CALLS: list[tuple[str, dict[str, str], bool | None]] = [
    ("Bash", {"command": "git status"}, None),
    ("Bash", {"command": "git diff HEAD"}, True),
    ("Bash", {"command": "git diff --stat"}, True),
    ("Bash", {"command": "git diff main"}, True),
    ("Bash", {"command": "git push origin main"}, True),
    ("Bash", {"command": "git push --force origin main"}, False),
    ("Bash", {"command": "rm -rf /"}, None),
    ("Bash", {"command": "npm test"}, True),
    ("Bash", {"command": "npm test -- --watch"}, True),
    ("Bash", {"command": "npm test src"}, True),
    ("Bash", {"command": "npm publish"}, False),
    ("WebFetch", {"url": "https://docs.python.org/3/library/json.html"}, True),
    ("WebFetch", {"url": "https://docs.python.org/3/library/re.html"}, True),
    ("WebFetch", {"url": "https://evil.example/x"}, False),
    ("Edit", {"file_path": "/work/project/src/app.py"}, True),
    ("Edit", {"file_path": "/work/project/src/util.py"}, True),
    ("Edit", {"file_path": "/work/project/src/lib/deep.py"}, True),
    ("Edit", {"file_path": "/work/project/.env"}, False),
    ("mcp__github__create_issue", {"title": "a"}, True),
    ("mcp__github__create_issue", {"title": "b"}, True),
    ("mcp__github__delete_repo", {"name": "x"}, False),
]


@dataclass(frozen=True)
class AutoApprovableTool:
    """A tool that needs approval, which a queue may give by itself (``auto_approve``)."""

    name: str = "deploy"
    approval_required: bool = True
    auto_approvable: bool = True
    always_ask: bool = False
    risk_level: str | None = None
    side_effect_scope: str | None = None


def _clock() -> Iterator[datetime]:
    moment = START
    while True:
        yield moment
        moment += timedelta(minutes=1)


def record_session(
    policy_path: Path,
    *,
    store_path: Path | None = None,
    store: ApprovalStore | None = None,
    audit_path: Path | None = None,
    keep: bool | Redactor = True,
    deciders: Sequence[str | None] = (None,),
) -> None:
    """Run CALLS through the policy file's policy: each ask answered as CALLS says, through the queue, by
    ``deciders`` in turn (``decided_by``; ``None`` names nobody).

    The audit log gets every decision record (with the arguments when ``keep``, through it when a redaction
    hook); the store (a SQLite file at
    ``store_path``, or ``store``, left open) keeps the asks.
    """
    from ask_permissions import load_policy

    ticks = _clock()
    lines: list[str] = []

    def write(record: DecisionRecord) -> None:
        lines.append(json.dumps(record.to_dict()))

    opened = None if store_path is None else SqliteStore(store_path)
    store = opened or store
    turns = itertools.cycle(deciders)
    try:
        policy = load_policy(
            policy_path,
            store=store,
            on_decision=write,
            clock=lambda: next(ticks),
            record_arguments=keep,
        )
        for number, (tool, arguments, answer) in enumerate(CALLS):
            result = policy.before_tool_call(ToolCall(tool, arguments, f"call-{number}"))
            if result["action"] != "pending" or answer is None:
                continue
            if answer:
                policy.approve(result["action_id"], decided_by=next(turns))
            else:
                policy.reject(result["action_id"], feedback="no", decided_by=next(turns))
    finally:
        if opened is not None:
            opened.close()
    if audit_path is not None:
        audit_path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def plain_policy() -> ApprovalPolicy:
    """A small policy for tests that need one in code."""
    return ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules().deny("bash", "rm -rf"))
