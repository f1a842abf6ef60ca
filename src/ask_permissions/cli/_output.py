"""How the evidence commands show calls and decisions: one line each, safe for a terminal."""

from __future__ import annotations

import json

from ask_permissions.policy._records import DecisionRecord, MatchedRule

from ._approvals import _cell
from ._lint import describe_patterns

__all__ = ["decision_lines", "rule_text", "shown_call"]


def shown_call(tool: str, arguments: object, *, limit: int | None = None) -> str:
    """A call on one line, every unprintable character escaped: ``Bash {"command": "ls"}``."""
    try:
        text = json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(arguments)
    return _cell(f"{tool} {text}", limit=limit)


def rule_text(rule: MatchedRule | None, source: str | None = None) -> str:
    """A matched rule as a person reads it: ``deny Bash(rm *) (project settings)``, or its patterns."""
    if rule is None:
        return "(no rule)"
    described = (
        f"{rule.declared_decision} {rule.text}"
        if rule.text is not None
        else describe_patterns(rule.declared_decision, rule.tool_pattern, rule.argument_pattern)
    )
    if source is not None:
        described += f" ({source} settings)"
    return _cell(described, limit=None)


def decision_lines(record: DecisionRecord, indent: str = "  ") -> list[str]:
    """The explanation of a decision: its outcome, layer, rule and reason, a line each."""
    return [
        f"{indent}decided: {record.outcome} by layer {record.layer}",
        f"{indent}rule:    {rule_text(record.rule, record.source)}",
        f"{indent}reason:  {_cell(record.reason or '(none)', limit=None)}",
    ]
