"""``ask-permissions replay NEW_POLICY --from AUDIT.jsonl | --store URL``: what a policy change would do."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Final, TextIO

from ask_permissions.evidence._audit import read_audit
from ask_permissions.evidence._replay import Replay, calls_from_audit, calls_from_store, replay
from ask_permissions.queue._open import describe_url

from ._approvals import _cell
from ._output import shown_call
from ._policies import load_cli_policy, read_history

__all__ = ["add_parser", "run_replay"]

EXIT_UNCHANGED: Final = 0
EXIT_CHANGED: Final = 1
_ANSWERS: Final = {
    "approved": "a person approved",
    "edited": "a person approved only as edited",
    "auto-approved": "the queue approved by itself (auto_approve)",
    "rejected": "a person rejected",
    "pending": "unanswered",
}


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``replay``."""
    parser = commands.add_parser(
        "replay",
        help="decide recorded calls again under another policy and report what would change",
        description="Decide every recorded call again under NEW_POLICY (a dry run: nothing is queued, the "
        "store is opened read-only) and report each change of outcome, grouped by the rule that decides it "
        "now, with counts, the answers people gave, and example calls. Audit lines need their arguments "
        "(a policy keeps them with record_arguments=True); the records without them are listed as not "
        "replayed. Exit status 0 no outcome changes, 1 some do, 2 bad input.",
    )
    parser.add_argument(
        "policy",
        metavar="NEW_POLICY",
        help="policy file (.toml for TOML, JSON otherwise), or a project directory (its settings files)",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from", dest="audit", metavar="AUDIT.jsonl", help="decision records, one JSON a line"
    )
    source.add_argument(
        "--store", metavar="URL", help="a store's recorded actions (sqlite:///PATH, postgresql://...)"
    )
    parser.add_argument("--json", action="store_true", help="the report as one JSON object")
    parser.set_defaults(run=run_replay)


def run_replay(options: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``replay``; its exit status.

    Raises:
        InvalidEvidenceError, InvalidSnapshotError, CorruptStoreError: bad input (the caller exits 2).
        OSError: a file cannot be read.
    """
    out = sys.stdout if out is None else out
    policy = load_cli_policy(options.policy)
    if options.audit is not None:
        found = replay(policy, calls_from_audit(read_audit(options.audit)))
        source = options.audit
    else:
        with read_history(options.store) as actions:
            found = replay(policy, calls_from_store(actions, describe_url(options.store)))
        source = describe_url(options.store)
    if options.json:
        print(json.dumps(found.to_dict(), indent=2, ensure_ascii=False, default=str), file=out)
    else:
        _print(out, found, options.policy, source)
    return EXIT_CHANGED if found.changed else EXIT_UNCHANGED


def _print(out: TextIO, found: Replay, policy: str, source: str) -> None:
    print(
        f"replayed {found.replayed} recorded calls from {_cell(source, limit=None)} under "
        f"{_cell(policy, limit=None)}: "
        f"{found.changed} would be decided otherwise",
        file=out,
    )
    if found.redacted:
        print(f"  ({found.redacted} were decided on arguments a redaction hook changed)", file=out)
    transition = None
    for change in found.ordered():
        if (change.before, change.after) != transition:
            transition = (change.before, change.after)
            total = sum(c.count for c in found.changes.values() if (c.before, c.after) == transition)
            print(f"{change.before} -> {change.after}: {total}", file=out)
        answers = ", ".join(
            f"{count} {_ANSWERS.get(answer, answer)}" for answer, count in sorted(change.answers.items())
        )
        print(
            f"  {change.count} by {_cell(change.rule, limit=None)}" + (f" ({answers})" if answers else ""),
            file=out,
        )
        was = ", ".join(
            f"{_cell(rule, limit=None)} x{count}"
            for rule, count in sorted(change.was.items(), key=lambda i: -i[1])
        )
        print(f"    before: {was}", file=out)
        for call in change.examples:
            print(
                f"    e.g. {shown_call(call.tool, call.arguments, limit=200)}  "
                f"[{_cell(call.where, limit=None)}]",
                file=out,
            )
    if found.unreplayable:
        print(
            f"not replayed: {found.unreplayable} records without their arguments "
            "(a policy keeps them with record_arguments=True):",
            file=out,
        )
        for call in found.unreplayable_examples:
            print(
                f"  {_cell(call.where, limit=None)}  {_cell(call.tool)}  args_digest {call.digest}", file=out
            )
        if found.unreplayable > len(found.unreplayable_examples):
            print(f"  ... and {found.unreplayable - len(found.unreplayable_examples)} more", file=out)
