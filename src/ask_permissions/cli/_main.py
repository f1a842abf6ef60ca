"""The ``ask-permissions`` command: ``demo``, ``check`` and ``lint``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Final, NoReturn

from ask_permissions._tool_call import ToolCall
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.settings._policy_file import load_policy

from ._approvals import add_parser as add_approvals_parser
from ._approvals import run_approvals
from ._demo import run_demo
from ._lint import describe_patterns, lint_policy, rule_label

__all__ = ["EXIT_BAD_INPUT", "EXIT_BLOCK", "EXIT_PENDING", "EXIT_PROCEED", "main", "run"]

PROG: Final = "ask-permissions"

EXIT_PROCEED: Final = 0
"""``check``: the call would proceed. (``lint``: no findings; ``demo``: done.)"""
EXIT_FINDINGS: Final = 1
"""``lint``: at least one finding."""
EXIT_BAD_INPUT: Final = 2
"""Bad input: a usage error, an unreadable or invalid policy file, ``ARGS_JSON`` that is not JSON."""
EXIT_PENDING: Final = 3
"""``check``: the call would wait for approval."""
EXIT_BLOCK: Final = 4
"""``check``: the call would be blocked."""

_EXIT_BROKEN_PIPE: Final = 141  # what a shell reports for a process SIGPIPE stopped

_EXIT_BY_OUTCOME: Final = {"proceed": EXIT_PROCEED, "pending": EXIT_PENDING, "block": EXIT_BLOCK}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="May this agent tool call proceed? Check calls against a policy file, lint it, "
        "or watch a scripted session (the default).",
        epilog="Exit status: check 0 proceed, 3 pending, 4 block; lint 0 clean, 1 findings; "
        "2 for bad input (usage, unreadable or invalid policy file, bad ARGS_JSON).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("demo", help="run a scripted agent session through the example policy (default)")
    check = commands.add_parser(
        "check",
        help="dry-run one tool call against a policy file",
        description="Dry-run one tool call (policy.evaluate): nothing is queued. "
        "Exit status 0 proceed, 3 pending, 4 block, 2 bad input.",
    )
    check.add_argument("policy", metavar="POLICY", help="policy file (.toml for TOML, JSON otherwise)")
    check.add_argument("tool", metavar="TOOL", help="the tool's name")
    check.add_argument("args_json", metavar="ARGS_JSON", nargs="?", help="the call's arguments, as JSON")
    check.add_argument("--json", action="store_true", help="print the decision record as JSON")
    lint = commands.add_parser(
        "lint",
        help="report rules that are downgraded, unreachable or name no tool",
        description="Report, one finding a line: allow rules the dangerous-tool guard downgrades, rules "
        "an earlier rule provably shadows, and tool regexes that match no tool of the policy's tools "
        "table. Exit status 0 clean, 1 findings, 2 bad input.",
    )
    lint.add_argument("policy", metavar="POLICY", help="policy file (.toml for TOML, JSON otherwise)")
    add_approvals_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    try:
        options = _parser().parse_args(argv)
    except SystemExit as exit_:  # usage errors (2) and --help (0): argparse has printed already
        return exit_.code if isinstance(exit_.code, int) else EXIT_BAD_INPUT
    try:
        if options.command == "check":
            return _check(options.policy, options.tool, options.args_json, as_json=options.json)
        if options.command == "lint":
            return _lint(options.policy)
        if options.command == "approvals":
            return run_approvals(options)
        return run_demo(sys.stdout)
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep the interpreter's final flush quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _EXIT_BROKEN_PIPE
    except OSError as error:
        where = error.filename if error.filename is not None else getattr(options, "policy", "a file")
        _error(f"cannot read {where}: {error.strerror or error}")
    except (ValueError, TypeError) as error:  # InvalidSnapshotError is a ValueError
        _error(str(error))
    return EXIT_BAD_INPUT


def run() -> NoReturn:
    """The console script's entry point: exit with ``main``'s status."""
    sys.exit(main())


def _error(message: str) -> None:
    # One line, whatever the message holds.
    print(f"{PROG}: error: {' '.join(message.splitlines())}", file=sys.stderr)


def _check(path: str, tool: str, args_json: str | None, *, as_json: bool) -> int:
    if not tool:
        raise ValueError(f"TOOL: expected a tool name; got {tool!r}")
    arguments = None
    if args_json is not None:
        try:
            arguments = json.loads(args_json)
        except ValueError as error:
            raise ValueError(f"ARGS_JSON is not valid JSON ({error}): {args_json!r}") from None
        except RecursionError:
            raise ValueError("ARGS_JSON is nested too deeply to read") from None
    policy = load_policy(path)
    record = policy.evaluate(ToolCall(tool, arguments))
    if as_json:
        print(json.dumps(record.to_dict(), indent=2, ensure_ascii=False))
        return _EXIT_BY_OUTCOME[record.outcome]
    rule = record.rule
    if rule is None:
        matched = "(no rule matched)"
    else:
        layer = rule.layer if isinstance(policy.rules, PermissionRuleSet) else None
        matched = f"{rule_label(layer, rule.index)}: " + describe_patterns(
            rule.declared_decision, rule.tool_pattern, rule.argument_pattern
        )
        if rule.effective_decision != rule.declared_decision:
            matched += f" (applied as {rule.effective_decision}: the dangerous-tool guard)"
    outcome = record.outcome + (" (auto-approvable)" if record.auto_approvable else "")
    print(f"outcome: {outcome}")
    print(f"layer:   {record.layer}")
    print(f"rule:    {matched}")
    print(f"reason:  {record.reason or '(none)'}")
    return _EXIT_BY_OUTCOME[record.outcome]


def _lint(path: str) -> int:
    findings = lint_policy(load_policy(path))
    for finding in findings:
        print(finding)
    return EXIT_FINDINGS if findings else EXIT_PROCEED
