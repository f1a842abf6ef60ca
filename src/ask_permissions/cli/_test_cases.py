"""``ask-permissions test POLICY CASES.toml...``: the policy's intended decisions, pinned in case files."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Final, TextIO

from ask_permissions.evidence._cases import CaseResult, check_cases, read_cases, rule_name

from ._output import decision_lines, shown_call
from ._policies import load_cli_policy

__all__ = ["add_parser", "run_test"]

EXIT_ALL_HOLD: Final = 0
EXIT_SOME_FAIL: Final = 1


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``test``."""
    parser = commands.add_parser(
        "test",
        help="check that a policy decides the calls of case files as they expect",
        description="Decide each [[case]] of the case files with the policy (a dry run, as check does) and "
        "report each case whose outcome, layer, rule or source differs from what it expects, with the "
        "decision's explanation. Exit status 0 every case holds, 1 some case fails, 2 bad input (an "
        "unreadable or invalid policy or case file: one line naming the file, line and field).",
    )
    parser.add_argument(
        "policy",
        metavar="POLICY",
        help="policy file (.toml for TOML, JSON otherwise), or a project directory (its settings files)",
    )
    parser.add_argument("cases", metavar="CASES.toml", nargs="+", help="case files")
    parser.add_argument("--json", action="store_true", help="one JSON object per case, a line each")
    parser.set_defaults(run=run_test)


def run_test(options: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``test``; its exit status.

    Raises:
        InvalidEvidenceError, InvalidSnapshotError: a bad case or policy file (the caller exits 2).
        OSError: a file cannot be read.
    """
    out = sys.stdout if out is None else out
    cases = [case for path in options.cases for case in read_cases(path)]  # every file read first
    policy = load_cli_policy(options.policy)
    results = check_cases(policy, cases)
    failed = [result for result in results if not result.holds]
    if options.json:
        for result in results:
            print(json.dumps(_as_json(result), ensure_ascii=False), file=out)
        return EXIT_SOME_FAIL if failed else EXIT_ALL_HOLD
    for result in failed:
        case = result.case
        print(f"FAIL {case.label}: {shown_call(case.tool, case.args)}", file=out)
        for problem in result.problems:
            print(f"  {problem}", file=out)
        for line in decision_lines(result.record):
            print(line, file=out)
    print(f"{len(results)} cases, {len(results) - len(failed)} hold, {len(failed)} fail", file=out)
    return EXIT_SOME_FAIL if failed else EXIT_ALL_HOLD


def _as_json(result: CaseResult) -> dict[str, object]:
    case, record = result.case, result.record
    return {
        "file": case.file,
        "line": case.line,
        "case": case.index,
        "name": case.name,
        "holds": result.holds,
        "problems": list(result.problems),
        "expect": case.expect,
        "outcome": record.outcome,
        "layer": record.layer,
        "rule": rule_name(record.rule),
        "source": record.source,
        "reason": record.reason,
    }
