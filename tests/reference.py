"""A naive reference model of rule classification, written from SPEC.md without the package's helpers.

Property tests compare ``PermissionRules`` and ``PermissionRuleSet`` with it on random rules and calls.
Only ``fold_tool_name`` is the package's (it has its own tests): how names fold is not what this models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from ask_permissions import ALL
from ask_permissions._names import fold_tool_name

from .strategies import RuleSpec

__all__ = ["reference_classify", "reference_compose", "reference_serialize"]

_DANGEROUS = ("bash", "code", "repl")
# What the guard tries a regex tool pattern on: each dangerous name, also in Title Case and UPPER CASE.
_DANGEROUS_SPELLINGS = tuple(
    spelling for name in _DANGEROUS for spelling in (name, name.title(), name.upper())
)
# An argument pattern matching any of these restricts nothing: no arguments, {} and {"command": ""}.
_UNRESTRICTED_TEXTS = ("", "{}", '{"command":""}')


def reference_serialize(arguments: object) -> str:
    """SPEC "Argument matching", word for word."""
    if isinstance(arguments, Mapping):
        return json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False, default=str)
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    return str(arguments)


def _tool_matches(pattern: object, name: str) -> bool:
    if pattern is ALL:
        return True
    if isinstance(pattern, re.Pattern):
        return pattern.search(name) is not None
    return pattern == name


def _rule_tool_matches(decision: str, pattern: object, name: str) -> bool:
    """An allow rule compares names exactly; deny and ask rules also compare them folded."""
    if _tool_matches(pattern, name):
        return True
    if decision == "allow":
        return False
    if isinstance(pattern, str):
        return fold_tool_name(pattern) == fold_tool_name(name)
    return _tool_matches(pattern, fold_tool_name(name))


def _argument_matches(pattern: object, serialized: str) -> bool:
    if pattern is None or pattern is ALL:
        return True
    if isinstance(pattern, re.Pattern):
        return pattern.search(serialized) is not None
    assert isinstance(pattern, str)
    return pattern in serialized


def _is_dangerous(decision: str, tool_pattern: object, argument_pattern: object) -> bool:
    if isinstance(tool_pattern, str):
        covers = fold_tool_name(tool_pattern) in _DANGEROUS
    else:
        covers = any(_tool_matches(tool_pattern, name) for name in _DANGEROUS_SPELLINGS)
    unrestricted = (
        argument_pattern is None
        or argument_pattern is ALL
        or any(_argument_matches(argument_pattern, text) for text in _UNRESTRICTED_TEXTS)
    )
    return decision == "allow" and covers and unrestricted


def reference_classify(
    specs: Iterable[RuleSpec], name: str, arguments: object, *, auto_allow_dangerous: bool = False
) -> str | None:
    """The effective decision of the first matching rule, or ``None``."""
    serialized = reference_serialize(arguments)
    for decision, tool_pattern, argument_pattern in specs:
        if _rule_tool_matches(decision, tool_pattern, name) and _argument_matches(
            argument_pattern, serialized
        ):
            if _is_dangerous(decision, tool_pattern, argument_pattern) and not auto_allow_dangerous:
                return "ask"
            return decision
    return None


def reference_compose(default: str | None, project: str | None) -> str | None:
    """A deny in either layer wins; else the project decision; else the default."""
    if "deny" in (default, project):
        return "deny"
    return project if project is not None else default
