"""``ask-permissions audit FILE``: what an audit log says, counted."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO, get_args

from ask_permissions.evidence._audit import read_audit, summarize
from ask_permissions.typing import HookAction

from ._approvals import _cell

__all__ = ["add_parser", "run_audit"]

_TOP: int = 20  # rows of each table in the text report


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``audit``."""
    parser = commands.add_parser(
        "audit",
        help="count an audit log's decisions by outcome, tool, rule and who decided",
        description="Read JSON-lines decision records (what on_decision or mcp-proxy --audit wrote) and "
        "count them by outcome, verdict, tool, rule and who decided, with the shadow policy's disagreements. "
        "Exit status 0, or 2 for bad input (a line that is not a decision record: one line naming the "
        "file, line and field).",
    )
    parser.add_argument("file", metavar="FILE", help="the audit file (JSON lines)")
    parser.add_argument(
        "--since", metavar="TIME", type=_time, help="only records at or after TIME (ISO 8601)"
    )
    parser.add_argument("--until", metavar="TIME", type=_time, help="only records before TIME (ISO 8601)")
    parser.add_argument("--tool", metavar="NAME", action="append", default=[], help="only this tool (repeat)")
    parser.add_argument(
        "--outcome",
        choices=get_args(HookAction),
        action="append",
        default=[],
        help="only this outcome (repeat)",
    )
    parser.add_argument("--json", action="store_true", help="the counts as one JSON object")
    parser.set_defaults(run=run_audit)


def run_audit(options: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``audit``; its exit status.

    Raises:
        InvalidEvidenceError: a bad line (the caller exits 2).
        OSError: the file cannot be read.
    """
    out = sys.stdout if out is None else out
    undecided: list[int] = []
    summary = summarize(
        read_audit(options.file, undecided=undecided),
        since=options.since,
        until=options.until,
        tools=options.tool,
        outcomes=options.outcome,
    )
    summary.undecided = len(undecided)  # such a line has no time, tool or outcome to filter by
    if options.json:
        print(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False), file=out)
        return 0
    span = ""
    if summary.first is not None and summary.last is not None:
        span = f", {summary.first.isoformat()} to {summary.last.isoformat()}"
    print(f"{summary.records} records{span}", file=out)
    tables = (
        ("outcome", summary.outcomes),
        ("verdict", summary.verdicts),
        ("tool", summary.tools),
        ("rule", summary.rules),
        ("who decided", summary.deciders),
    )
    for title, counts in tables:
        if not counts:
            continue
        print(f"by {title}:", file=out)
        rows = counts.most_common()
        width = max(len(str(count)) for _, count in rows)
        for key, count in rows[:_TOP]:
            print(f"  {count:>{width}}  {_cell(key, limit=None)}", file=out)
        if len(rows) > _TOP:
            print(f"  ... and {len(rows) - _TOP} more (--json lists them all)", file=out)
    if summary.shadow_disagreements:
        print(f"shadow policy disagreed: {summary.shadow_disagreements}", file=out)
    if summary.undecided:
        lines = "line of the MCP proxy holds" if summary.undecided == 1 else "lines of the MCP proxy hold"
        print(
            f"{summary.undecided} {lines} no decision (calls to tools the upstream server does not list; "
            "not counted above)",
            file=out,
        )
    return 0


def _time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time; got {text!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
