"""Hypothesis strategies shared by the property tests.

Tool names, patterns and arguments are drawn from small pools so that random rules and random calls
actually meet: a rule list of five entries over a thousand possible names would almost never match.
"""

from __future__ import annotations

import re
from typing import Any, TypeAlias

from hypothesis import strategies as st

from ask_permissions import ALL, DANGEROUS_TOOLS
from ask_permissions._patterns import AllType

__all__ = [
    "DECISIONS",
    "TOOL_NAMES",
    "RuleSpec",
    "argument_patterns",
    "arguments",
    "calls",
    "decisions",
    "json_values",
    "rule_specs",
    "tool_names",
    "tool_patterns",
]

DECISIONS = ("allow", "ask", "deny")

# The dangerous names, near misses of them, the string "all", and ordinary tools.
TOOL_NAMES = (*DANGEROUS_TOOLS, "Bash", "bashful", "all", "read_file", "write_file", "search", "édit")

_TOOL_REGEXES = (
    re.compile("^ba"),
    re.compile("sh$"),
    re.compile("_file$"),
    re.compile("^(read|write)_"),
    re.compile("e"),
    re.compile("BASH", re.IGNORECASE),
    re.compile("^r"),
    re.compile("x{2}"),
    re.compile(""),
)

# Fragments that occur in the serialized arguments below, and some that do not.
_SUBSTRINGS = ("", "rm", "-rf", "ls", '"command"', '"command":"ls"', "é", "/docs/", "{", "42", "None", " ")

_ARGUMENT_REGEXES = (
    re.compile(r"rm\s+-rf"),
    re.compile("^$"),
    re.compile("x*"),
    re.compile("."),
    re.compile("(?i)RM"),
    re.compile("^ls"),
    re.compile(r"/docs/.*\.md"),
    re.compile("é"),
    re.compile(r"\d+"),
    re.compile("a.b", re.DOTALL),
    re.compile("r m  # a comment", re.VERBOSE),
)

_TEXTS = ("ls", "ls -la", "rm -rf /tmp", "sudo rm  -rf /", "/docs/readme.md", "é", "a\nb", "", "42")

ToolPatternValue: TypeAlias = str | re.Pattern[str] | AllType
ArgumentPatternValue: TypeAlias = str | re.Pattern[str] | AllType | None
RuleSpec: TypeAlias = tuple[str, ToolPatternValue, ArgumentPatternValue]
"""``(decision, tool_pattern, argument_pattern)`` as passed to ``PermissionRules.add``."""

decisions = st.sampled_from(DECISIONS)
tool_names = st.sampled_from(TOOL_NAMES)
tool_patterns: st.SearchStrategy[ToolPatternValue] = st.one_of(
    st.just(ALL), tool_names, st.sampled_from(_TOOL_REGEXES)
)
argument_patterns: st.SearchStrategy[ArgumentPatternValue] = st.one_of(
    st.none(), st.just(ALL), st.sampled_from(_SUBSTRINGS), st.sampled_from(_ARGUMENT_REGEXES)
)
rule_specs: st.SearchStrategy[RuleSpec] = st.tuples(decisions, tool_patterns, argument_patterns)

_leaves = st.one_of(st.none(), st.booleans(), st.integers(-50, 50), st.sampled_from(_TEXTS))
arguments: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.sampled_from(_TEXTS),
    st.integers(-5, 50),
    st.dictionaries(st.sampled_from(("command", "path", "q", "é")), _leaves, max_size=3),
    st.fixed_dictionaries({"command": st.sampled_from(_TEXTS)}),
    st.fixed_dictionaries({"path": st.sampled_from(_TEXTS), "options": st.lists(_leaves, max_size=2)}),
)
calls: st.SearchStrategy[tuple[str, Any]] = st.tuples(tool_names, arguments)

json_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=8),
        st.sampled_from(("allow", "deny", "all", "regexp", "string", "symbol", "i", "mx", "(", "version")),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(
                st.text(max_size=6),
                st.sampled_from(
                    (
                        "version",
                        "rules",
                        "decision",
                        "tool_pattern",
                        "argument_pattern",
                        "type",
                        "value",
                        "source",
                        "flags",
                        "auto_allow_dangerous",
                        "default_rules",
                        "project_rules",
                    )
                ),
            ),
            children,
            max_size=4,
        ),
    ),
    max_leaves=20,
)
"""Arbitrary JSON-like data, biased towards the snapshot formats' own keys and words."""
