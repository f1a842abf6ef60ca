"""Linting a policy's rules: downgraded allows, provably unreachable rules, regexes that name no tool."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import final

from ask_permissions.policy._approval import ApprovalPolicy
from ask_permissions.rules._patterns import ALL, StoredArgumentPattern, ToolPattern, encode_pattern
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules, Rule
from ask_permissions.typing import RuleSetLayer

__all__ = ["Finding", "describe_rule", "lint_policy", "rule_label"]


@final
@dataclass(frozen=True, slots=True)
class Finding:
    """One lint finding: the rule it is about (index into its layer's ``rules``) and why, in one line."""

    layer: RuleSetLayer | None
    index: int
    rule: str
    why: str

    def __str__(self) -> str:
        return f"{rule_label(self.layer, self.index)} ({self.rule}): {self.why}"


def rule_label(layer: RuleSetLayer | None, index: int) -> str:
    """``rule 2`` for a plain ruleset, ``project rule 2`` for a layer of a rule set."""
    return f"rule {index}" if layer is None else f"{layer} rule {index}"


def lint_policy(policy: ApprovalPolicy) -> list[Finding]:
    """The findings about a policy's rules, layer by layer (default first), in rule order.

    Only rule lists that are ``PermissionRules`` are inspected; a custom classifier is opaque. The tool
    registry is consulted only when it is a non-empty mapping (as a policy file's ``tools`` is).
    """
    registry = policy.tools
    names = tuple(registry) if isinstance(registry, Mapping) else ()
    findings: list[Finding] = []
    for layer, rules in _layers(policy.rules):
        findings.extend(lint_rules(rules.rules, layer, names))
    return findings


def _layers(rules: object) -> list[tuple[RuleSetLayer | None, PermissionRules]]:
    if isinstance(rules, PermissionRules):
        return [(None, rules)]
    if isinstance(rules, PermissionRuleSet):
        layers: list[tuple[RuleSetLayer | None, PermissionRules]] = []
        if isinstance(rules.default_rules, PermissionRules):
            layers.append(("default", rules.default_rules))
        if isinstance(rules.project_rules, PermissionRules):
            layers.append(("project", rules.project_rules))
        return layers
    return []


def lint_rules(rules: list[Rule], layer: RuleSetLayer | None, tool_names: Collection[str]) -> list[Finding]:
    """The findings about one ordered list of rules (see ``lint_policy``)."""
    findings: list[Finding] = []
    for index, rule in enumerate(rules):
        text = describe_rule(rule)
        if rule.effective_decision != rule.decision:
            findings.append(
                Finding(
                    layer,
                    index,
                    text,
                    "downgraded to ask by the dangerous-tool guard: it would allow any use of a tool that "
                    "runs code; add an argument pattern, or declare it as ask",
                )
            )
        shadow = next(
            (position for position in range(index) if _shadows(rules[position], rule)),
            None,
        )
        if shadow is not None:
            findings.append(
                Finding(
                    layer,
                    index,
                    text,
                    f"never matches: {rule_label(layer, shadow)} ({describe_rule(rules[shadow])}) comes "
                    "first and matches every call it could",
                )
            )
        pattern = rule.tool_pattern
        if (
            isinstance(pattern, re.Pattern)
            and tool_names
            and not any(pattern.search(name) for name in tool_names)
        ):
            findings.append(
                Finding(layer, index, text, "its tool regex matches no tool in the policy's tools table")
            )
    return findings


def _shadows(earlier: Rule, later: Rule) -> bool:
    """Whether ``earlier`` provably matches every call ``later`` matches (so ``later`` never decides).

    Deliberately incomplete: regexes are compared only for being identical, since anything more would
    risk reporting a reachable rule.
    """
    return _covers_tool(earlier.tool_pattern, later.tool_pattern) and _covers_arguments(
        earlier.argument_pattern, later.argument_pattern
    )


def _covers_tool(earlier: ToolPattern, later: ToolPattern) -> bool:
    if earlier is ALL:
        return True
    return isinstance(earlier, str) and isinstance(later, str) and earlier == later


def _covers_arguments(earlier: StoredArgumentPattern, later: StoredArgumentPattern) -> bool:
    if earlier is None or earlier == "":  # "" is a substring of every serialization
        return True
    if isinstance(earlier, str):
        # Every serialization containing ``later`` contains ``earlier`` too.
        return isinstance(later, str) and earlier in later
    return isinstance(later, re.Pattern) and (earlier.pattern, earlier.flags) == (later.pattern, later.flags)


def describe_rule(rule: Rule) -> str:
    """A rule in one short phrase, e.g. ``deny bash, arguments containing "rm -rf"``."""
    argument = None if rule.argument_pattern is None else encode_pattern(rule.argument_pattern)
    return describe_patterns(rule.decision, encode_pattern(rule.tool_pattern), argument)


def describe_patterns(
    decision: str, tool_pattern: Mapping[str, object], argument_pattern: Mapping[str, object] | None
) -> str:
    """A rule in one short phrase, from its decision and its patterns in snapshot form."""
    kind = tool_pattern.get("type")
    if kind == "all":
        tool = "every tool"
    elif kind == "regexp":
        tool = f"tools matching {_regex(tool_pattern)}"
    else:
        tool = str(tool_pattern.get("value"))
    text = f"{decision} {tool}"
    if argument_pattern is None or argument_pattern.get("type") == "all":
        return text
    if argument_pattern.get("type") == "regexp":
        return f"{text}, arguments matching {_regex(argument_pattern)}"
    return f"{text}, arguments containing {json.dumps(argument_pattern.get('value'), ensure_ascii=False)}"


def _regex(pattern: Mapping[str, object]) -> str:
    flags = pattern.get("flags")
    return f"/{pattern.get('source')}/{'' if flags is None else flags}"
