"""``ask-permissions lint``: a policy file's or a project's settings' findings, one a line (or as JSON).

A policy file is loaded with its unknown tool names kept, so that they are reported beside every other
finding rather than stopping at the first; a project directory is read as ``check`` reads it (its
``.agent`` settings files and the user's ``~/.agent/settings.json``, checked by building the policy).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

from ask_permissions._errors import InvalidSnapshotError
from ask_permissions.loading._policy_file import load_policy
from ask_permissions.policy._layered import LayeredPolicy
from ask_permissions.policy._tool_names import registry_names
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules
from ask_permissions.settings._settings import PermissionSettings

from ._lint import Finding, lint_policy, lint_settings
from ._policies import is_project
from ._regex_facts import MEASURING_BUDGET

__all__ = ["add_lint_parser", "run_lint"]

COMMAND: Final = "lint"

EXIT_CLEAN: Final = 0
EXIT_FINDINGS: Final = 1


def add_lint_parser(commands: Any, epilog: str) -> None:
    """Add the ``lint`` subcommand to the command's subparsers."""
    lint = commands.add_parser(
        COMMAND,
        help="report rules that are downgraded, unreachable, shadowed or risky, and names of no tool",
        description="Report, one finding a line: allow rules the dangerous-tool guard downgrades or, "
        "with auto_allow_dangerous, lets through unrestricted; rules an earlier rule provably shadows; "
        "denies an earlier allow overrides for some calls (with such a call); substrings that can never "
        "occur in serialized arguments; regexes with control characters, with nested quantifiers that "
        "backtrack catastrophically (with a measured example) or that Python warns about; rules, "
        "require_approval and auto_approve entries and hook matchers that name no tool of the policy's "
        'tools table (with the nearest name); and a default of "proceed" beside shell or path tools. '
        "A clean policy prints one line saying so.",
        epilog=epilog,
    )
    lint.add_argument(
        "policy",
        metavar="POLICY",
        help="policy file (.toml for TOML, JSON otherwise), or a project directory: its .agent settings "
        "files (and the user's ~/.agent/settings.json), as check reads them",
    )
    lint.add_argument(
        "--json",
        action="store_true",
        help="print the findings as one JSON object (see the command reference)",
    )


def run_lint(options: argparse.Namespace, out: Any) -> int:
    """Lint the policy file or project directory ``options.policy``; return the exit status.

    Raises:
        OSError: a file cannot be read.
        InvalidSnapshotError: a file is invalid (naming the file, its line where found, and the field).
    """
    path: str = options.policy
    if is_project(path):
        kind = "project"
        findings, counted = _lint_project(path)
    else:
        kind = "policy"
        findings, counted = _lint_file(path)
    if options.json:
        document = {
            "path": path,
            "kind": kind,
            **counted,
            "findings": [finding.to_dict() for finding in findings],
        }
        out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    elif findings:
        for finding in findings:
            out.write(f"{finding}\n")
    else:
        sizes = ", ".join(f"{count} {noun if count == 1 else noun + 's'}" for noun, count in _nouns(counted))
        out.write(f"{path}: no findings ({sizes})\n")
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _nouns(counted: dict[str, int]) -> list[tuple[str, int]]:
    names = {"rules": "rule", "tools": "tool", "settings_files": "settings file"}
    return [(names[key], count) for key, count in counted.items()]


def _lint_file(path: str) -> tuple[list[Finding], dict[str, int]]:
    # Unknown tool names are findings here, beside the others, whatever the file says to do with them.
    try:
        policy = load_policy(path, unknown_tools="keep")
    except InvalidSnapshotError:
        # A rule of a misspelt tool may not read at all (its tool has no kind): then the file's own reading
        # says most, naming the unknown tool before its kind.
        load_policy(path)
        raise
    rules = policy.rules
    layers = (
        [rules]
        if isinstance(rules, PermissionRules)
        else [
            layer
            for layer in (rules.default_rules, rules.project_rules)
            if isinstance(layer, PermissionRules)
        ]
        if isinstance(rules, PermissionRuleSet)
        else []
    )
    counted = {
        "rules": sum(len(layer.rules) for layer in layers),
        "tools": len(registry_names(policy.tools) or ()),
    }
    return lint_policy(policy, measuring_budget=MEASURING_BUDGET), counted


def _lint_project(path: str) -> tuple[list[Finding], dict[str, int]]:
    settings = PermissionSettings.load(project_dir=path)
    LayeredPolicy(queue=ApprovalQueue(), settings=settings)  # reads every rule and hook, as check would
    counted = {
        "rules": sum(len(source.allow) + len(source.ask) + len(source.deny) for source in settings.sources),
        "settings_files": sum(1 for source in settings.sources if source.path is not None),
    }
    return lint_settings(settings), counted
