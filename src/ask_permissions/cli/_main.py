"""The ``ask-permissions`` command: ``demo``, ``check`` and ``lint``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Final, NoReturn

from ask_permissions._tool_call import ToolCall
from ask_permissions._vocabulary import RuleSetLayer
from ask_permissions.rules._command import CommandPattern, command_readings
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules

from ._approvals import add_parser as add_approvals_parser
from ._approvals import run_approvals
from ._demo import run_demo
from ._demo_layered import run_layered_demo
from ._evidence import add_evidence_parsers
from ._inbox import COMMAND as INBOX
from ._inbox import add_inbox_parser, run_inbox
from ._lint import describe_patterns, describe_rule, rule_label
from ._lint_command import COMMAND as LINT
from ._lint_command import add_lint_parser, run_lint
from ._mcp_proxy import COMMAND as MCP_PROXY
from ._mcp_proxy import add_mcp_proxy_parser, run_mcp_proxy
from ._policies import load_cli_policy

__all__ = [
    "EXIT_AUTO_APPROVED",
    "EXIT_BAD_INPUT",
    "EXIT_BLOCK",
    "EXIT_FINDINGS",
    "EXIT_PENDING",
    "EXIT_PROCEED",
    "main",
    "run",
]

PROG: Final = "ask-permissions"

EXIT_PROCEED: Final = 0
"""``check``: the call would proceed. (``lint``: no findings; ``demo``: done.)"""
EXIT_FINDINGS: Final = 1
"""``lint``: at least one finding."""
EXIT_BAD_INPUT: Final = 2
"""Bad input: a usage error, an unreadable or invalid policy file, ``ARGS_JSON`` that is not JSON."""
EXIT_PENDING: Final = 3
"""``check``: the call would wait for a person's approval."""
EXIT_BLOCK: Final = 4
"""``check``: the call would be blocked."""
EXIT_AUTO_APPROVED: Final = 5
"""``check``: the call would be queued, and the queue would approve it by itself (the file's
``auto_approve`` lists the tool, and the call is auto-approvable)."""

_EXIT_BROKEN_PIPE: Final = 141  # what a shell reports for a process SIGPIPE stopped

_EXIT_BY_OUTCOME: Final = {"proceed": EXIT_PROCEED, "pending": EXIT_PENDING, "block": EXIT_BLOCK}

_EXIT_STATUSES: Final = (
    "Exit status: check 0 proceed, 3 pending (a person decides), 5 pending and approved by the queue "
    "itself (auto_approve), 4 block; lint 0 clean, 1 findings; 2 for bad input (usage, unreadable or "
    "invalid policy file, bad ARGS_JSON)."
)


class _UsageError(Exception):
    """A usage error argparse found, with its message (printed as one line, not argparse's block)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # The subcommands' parsers are of this class too; their prog is "ask-permissions check".
        command = self.prog.removeprefix(PROG).strip()
        where = f"{command}: " if command else ""
        raise _UsageError(f"{where}{message}; see {self.prog} --help")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="May this agent tool call proceed? Check calls against a policy file, lint it, "
        "or watch a scripted session (the default).",
        epilog=_EXIT_STATUSES,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="run a scripted agent session through the example policy (default)"
    )
    demo.add_argument(
        "--layered",
        action="store_true",
        help="a coding-agent session through settings files and modes (LayeredPolicy) instead",
    )
    check = commands.add_parser(
        "check",
        help="dry-run one tool call against a policy file",
        description="Dry-run one tool call (policy.evaluate): nothing is queued.",
        epilog=_EXIT_STATUSES,
    )
    check.add_argument(
        "policy",
        metavar="POLICY",
        help="policy file (.toml for TOML, JSON otherwise), or a project directory: its .agent settings "
        "files (and the user's ~/.agent/settings.json) decide, as a LayeredPolicy",
    )
    check.add_argument("tool", metavar="TOOL", help="the tool's name")
    check.add_argument("args_json", metavar="ARGS_JSON", nargs="?", help="the call's arguments, as JSON")
    check.add_argument("--json", action="store_true", help="print the decision record as JSON")
    add_lint_parser(commands, _EXIT_STATUSES)
    add_approvals_parser(commands)
    add_mcp_proxy_parser(commands)
    add_inbox_parser(commands)
    add_evidence_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    with warnings.catch_warnings():
        # The command's output is its answer and, for bad input, one line on stderr. A regex Python warns
        # about is a lint finding (lint finds it itself), and -W error must not turn it into a traceback.
        warnings.simplefilter("ignore")
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        options = _parser().parse_args(argv)
    except _UsageError as error:
        _error(str(error))
        return EXIT_BAD_INPUT
    except SystemExit as exit_:  # --help and --version: argparse has printed already
        return exit_.code if isinstance(exit_.code, int) else EXIT_BAD_INPUT
    try:
        if options.command == "check":
            return _check(options.policy, options.tool, options.args_json, as_json=options.json)
        if options.command == LINT:
            return run_lint(options, sys.stdout)
        if options.command == "approvals":
            return run_approvals(options)
        if options.command == MCP_PROXY:
            return run_mcp_proxy(options)
        if options.command == INBOX:
            return run_inbox(options)
        if hasattr(options, "run"):  # a sub-command that names its own runner
            return int(options.run(options))
        if getattr(options, "layered", False):
            return run_layered_demo(sys.stdout)
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
    policy = load_cli_policy(path)
    record = policy.evaluate(ToolCall(tool, arguments))
    # A dry run queues nothing, so nothing waits ahead of this call: the queue would approve it at once.
    by_queue = record.outcome == "pending" and policy.queue.would_auto_approve(
        record.tool, record.auto_approvable
    )
    status = EXIT_AUTO_APPROVED if by_queue else _EXIT_BY_OUTCOME[record.outcome]
    if as_json:
        print(json.dumps(record.to_dict(), indent=2, ensure_ascii=False))
        return status
    rules = getattr(policy, "rules", None)
    rule = record.rule
    if rule is None:
        matched = "(no rule matched)"
    else:
        layer = rule.layer if isinstance(rules, PermissionRuleSet) else None
        described = (
            f"{rule.declared_decision} {rule.text}"
            if rule.text is not None
            else describe_patterns(rule.declared_decision, rule.tool_pattern, rule.argument_pattern)
        )
        matched = f"{rule_label(layer, rule.index)}: {described}"
        if record.source is not None:
            matched = f"{described} ({record.source} settings)"
        if rule.effective_decision != rule.declared_decision:
            matched += f" (applied as {rule.effective_decision}: the dangerous-tool guard)"
    if by_queue:
        outcome = "pending (approved by the queue itself: auto_approve)"
    else:
        outcome = record.outcome + (" (auto-approvable)" if record.auto_approvable else "")
    print(f"outcome: {outcome}")
    print(f"layer:   {record.layer}")
    print(f"rule:    {matched}")
    print(f"reason:  {record.reason or '(none)'}")
    for line in _subcommand_lines(rules, tool, arguments):
        print(line)
    return status


def _subcommand_lines(rules: object, tool: str, arguments: object) -> list[str]:
    """For a command of several sub-commands, each one's decision by the rules and the rule that took it."""
    layers = [layer for _, layer in _rule_layers(rules)]
    if not any(isinstance(rule.argument_pattern, CommandPattern) for layer in layers for rule in layer.rules):
        return []
    values = [value for value in command_readings(arguments, None) if value is not None]
    if len(values) != 1 or len(values[0].subcommands) < 2:
        return []
    explain = getattr(rules, "explain", None)
    if explain is None:
        return []
    lines = ["sub-commands:"]
    width = max(len(sub.text) for sub in values[0].subcommands)
    for sub in values[0].subcommands:
        match = explain(tool, {"command": sub.text})
        if match is None or match.rule is None:
            lines.append(f"  {sub.text:<{width}}  -> (no rule matched)")
            continue
        label = rule_label(match.layer if isinstance(rules, PermissionRuleSet) else None, match.index or 0)
        text = match.rule.text or describe_rule(match.rule)
        lines.append(f"  {sub.text:<{width}}  -> {match.decision:<5} ({label}: {text})")
    return lines


def _rule_layers(rules: object) -> list[tuple[RuleSetLayer | None, PermissionRules]]:
    if isinstance(rules, PermissionRules):
        return [(None, rules)]
    if isinstance(rules, PermissionRuleSet):
        layers: list[tuple[RuleSetLayer | None, PermissionRules]] = []
        for name, layer in (("default", rules.default_rules), ("project", rules.project_rules)):
            if isinstance(layer, PermissionRules):
                layers.append((name, layer))  # type: ignore[arg-type]
        return layers
    return []
