"""Hypothesis strategies shared by the property tests.

Tool names, patterns and arguments are drawn from small pools so that random rules and random calls
actually meet: a rule list of five entries over a thousand possible names would almost never match.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, TypeAlias, TypeVar

import pytest
from hypothesis import strategies as st

from ask_permissions import ALL, DANGEROUS_TOOLS, InvalidSnapshotError, PermissionRules
from ask_permissions._strict import child
from ask_permissions.policy._tool_metadata import SIDE_EFFECT_SCOPES
from ask_permissions.rules._patterns import AllType
from ask_permissions.typing import Decision

__all__ = [
    "DECISIONS",
    "TOOL_NAMES",
    "RuleSpec",
    "any_tool_names",
    "argument_patterns",
    "arguments",
    "assert_path_exists",
    "assert_snapshot_error",
    "build_rules",
    "calls",
    "decisions",
    "grants_snapshot_like",
    "hostile_values",
    "json_values",
    "mutate",
    "nested",
    "nodes_by_path",
    "permission_rules",
    "plain_json",
    "queue_snapshot_entries",
    "queue_snapshot_like",
    "queue_snapshots",
    "quiet_regex_warnings",
    "restored_or_rejected",
    "rule_lists",
    "rule_specs",
    "tool_metadata",
    "tool_names",
    "tool_patterns",
]

DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")

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
RuleSpec: TypeAlias = tuple[Decision, ToolPatternValue, ArgumentPatternValue]
"""``(decision, tool_pattern, argument_pattern)`` as passed to ``PermissionRules.add``."""

decisions: st.SearchStrategy[Decision] = st.sampled_from(DECISIONS)
tool_names = st.sampled_from(TOOL_NAMES)
any_tool_names = tool_names | st.text(min_size=1, max_size=4)
"""A pool name, or any short non-empty string (for code that must take every name, not only known ones)."""
tool_patterns: st.SearchStrategy[ToolPatternValue] = st.one_of(
    st.just(ALL), tool_names, st.sampled_from(_TOOL_REGEXES)
)
argument_patterns: st.SearchStrategy[ArgumentPatternValue] = st.one_of(
    st.none(), st.just(ALL), st.sampled_from(_SUBSTRINGS), st.sampled_from(_ARGUMENT_REGEXES)
)
rule_specs: st.SearchStrategy[RuleSpec] = st.tuples(decisions, tool_patterns, argument_patterns)
rule_lists: st.SearchStrategy[list[RuleSpec]] = st.lists(rule_specs, max_size=8)


def build_rules(specs: list[RuleSpec], *, auto_allow_dangerous: bool = False) -> PermissionRules:
    """A ruleset declaring ``specs`` in order."""
    rules = PermissionRules(auto_allow_dangerous=auto_allow_dangerous)
    for decision, tool_pattern, argument_pattern in specs:
        rules.add(decision, tool_pattern, argument_pattern)
    return rules


@st.composite
def permission_rules(draw: st.DrawFn) -> PermissionRules:
    """A ``PermissionRules`` of a few rules from ``rule_lists``, with or without ``auto_allow_dangerous``."""
    return build_rules(draw(rule_lists), auto_allow_dangerous=draw(st.booleans()))


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

plain_json: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
"""Arbitrary JSON data (string keys, finite numbers), with no bias towards any format."""

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


# -- snapshot fuzzing helpers ----------------------------------------------------------------------------

# Keys a snapshot reader may report as missing (required keys of every format).
_REQUIRED_KEYS = ("version", "rules", "decision", "tool_pattern", "type", "value", "source", "flags")


@contextmanager
def quiet_regex_warnings() -> Iterator[None]:
    """Silence ``re``'s FutureWarning (a random source such as ``[[`` triggers it): a warning, not an error.

    The test suite turns warnings into errors; outside it, compiling such a source only warns.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def mutate(snapshot: Any, data: st.DataObject, values: st.SearchStrategy[Any] | None = None) -> Any:
    """A deep copy of ``snapshot`` with one randomly chosen node replaced, dropped or given a sibling.

    New nodes are drawn from ``values`` (default: ``json_values``).
    """
    values = json_values if values is None else values
    snapshot = copy.deepcopy(snapshot)
    node = snapshot
    while isinstance(node, dict | list) and node:
        key: Any = (
            data.draw(st.sampled_from(sorted(node)))
            if isinstance(node, dict)
            else data.draw(st.integers(0, len(node) - 1))
        )
        child_node = node[key]
        if isinstance(child_node, dict | list) and child_node and data.draw(st.booleans()):
            node = child_node
            continue
        action = data.draw(st.sampled_from(("replace", "drop", "add")))
        if action == "replace":
            node[key] = data.draw(values)
        elif action == "drop":
            del node[key]
        elif isinstance(node, dict):
            node[data.draw(st.sampled_from(("extra", "value", "flags", "version", "rules")))] = data.draw(
                values
            )
        else:
            node.append(data.draw(values))
        break
    return snapshot


def _paths(node: object, path: str) -> Iterator[tuple[str, object]]:
    yield path, node
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str):
                yield from _paths(value, child(path, key))
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from _paths(value, child(path, index))


def nodes_by_path(snapshot: object) -> dict[str, object]:
    """Every node of ``snapshot`` by the path a snapshot error would name it with (``""`` for the root)."""
    return dict(_paths(snapshot, ""))


def assert_path_exists(snapshot: object, path: str) -> None:
    """An error path leads to a node of ``snapshot``, or names a required key missing from a mapping."""
    nodes = nodes_by_path(snapshot)
    if path in nodes:
        return
    missing = {
        child(parent, key)
        for parent, node in nodes.items()
        if isinstance(node, Mapping)
        for key in _REQUIRED_KEYS
        if key not in node
    }
    assert path in missing, f"error path {path!r} is not in the snapshot"


T = TypeVar("T")


def restored_or_rejected(read: Callable[[Any], T], snapshot: object) -> T | None:
    """``read(snapshot)``'s result, or None when it raised InvalidSnapshotError with a path into ``snapshot``.

    Any other exception propagates, failing the test: fuzzed input may be refused, never crash the reader.
    """
    with quiet_regex_warnings():
        try:
            return read(snapshot)
        except InvalidSnapshotError as error:
            assert_path_exists(snapshot, error.path)
            return None


def assert_snapshot_error(
    read: Callable[[Any], object], snapshot: object, path: str, match: str | None = None
) -> InvalidSnapshotError:
    """``read(snapshot)`` raises InvalidSnapshotError with ``path``; its message starts with the path."""
    with pytest.raises(InvalidSnapshotError, match=match) as caught:
        read(snapshot)
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path or 'snapshot'}: expected ")
    return caught.value


# -- approval queue snapshots ----------------------------------------------------------------------------

_queue_args = st.dictionaries(st.text(max_size=6), plain_json, max_size=4)
_offsets = st.integers(-23 * 60, 23 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
_timestamps = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.one_of(st.just(UTC), _offsets),
)


@st.composite
def queue_snapshot_entries(draw: st.DrawFn, action_id: int) -> dict[str, object]:
    """A valid ``pending_actions`` entry of a queue snapshot, with optional keys sometimes left out."""
    entry: dict[str, object] = {"id": action_id, "tool_name": draw(st.text(min_size=1, max_size=12))}
    optional: dict[str, object] = {
        "tool_call_id": draw(st.none() | st.text(max_size=8) | st.integers(0, 10**6)),
        "args": draw(st.none() | _queue_args),
        "auto_approvable": draw(st.none() | st.booleans()),
        "message": draw(st.none() | st.text(max_size=10)),
        "submitted_at": draw(st.none() | _timestamps.map(datetime.isoformat)),
    }
    kept = draw(st.sets(st.sampled_from(sorted(optional))))
    return entry | {key: value for key, value in optional.items() if key in kept}


@st.composite
def queue_snapshots(draw: st.DrawFn) -> dict[str, object]:
    """A valid ``ApprovalQueue`` snapshot: unique positive ids in any order, any ``next_id``."""
    ids = draw(st.lists(st.integers(1, 50), unique=True, max_size=6))
    return {
        "version": 1,
        "next_id": draw(st.integers(0, 60)),
        "pending_actions": [draw(queue_snapshot_entries(action_id)) for action_id in ids],
    }


_QUEUE_ENTRY_KEYS = (
    "id",
    "tool_name",
    "tool_call_id",
    "args",
    "auto_approvable",
    "message",
    "submitted_at",
    "x",
)
_queue_entry_values = st.one_of(
    plain_json,
    st.integers(-3, 60),
    st.sampled_from(["2026-01-01T00:00:00", "2026-01-01T00:00:00Z", "not a time", "", "bash"]),
)

queue_snapshot_like: st.SearchStrategy[Any] = st.one_of(
    json_values,
    queue_snapshots(),
    st.fixed_dictionaries(
        {},
        optional={
            "version": st.sampled_from([1, 2, "1", True, None]),
            "next_id": st.sampled_from([0, 3, -1, True, 1.5, None]),
            "pending_actions": st.lists(
                st.dictionaries(st.sampled_from(_QUEUE_ENTRY_KEYS), _queue_entry_values), max_size=4
            )
            | plain_json,
            "extra": plain_json,
        },
    ),
)
"""Anything a host may hand to ``ApprovalQueue.restore_pending``: valid snapshots, near misses, any JSON."""


def nested(depth: int, container: str = "list") -> object:
    """``0`` inside ``depth`` lists (``[[[0]]]``) or dicts (``{"k": {"k": 0}}``), built without recursion."""
    value: object = 0
    for _ in range(depth):
        value = [value] if container == "list" else {"k": value}
    return value


hostile_values: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(
        [10**5000, -(10**5000), 2**63, 2**64 + 1, float("nan"), float("inf"), "\ud800", "x" * 100_000]
    ),
    st.builds(nested, st.integers(200, 3000), st.sampled_from(["list", "dict"])),
    json_values,
)
"""Values that break naive readers: integers past Python's digit limit or 64 bits, NaN, a lone
surrogate, a long string, and lists or dicts nested thousands deep (``repr`` and ``json`` recurse)."""


# -- session grants snapshots ----------------------------------------------------------------------------

grants_snapshot_like: st.SearchStrategy[Any] = plain_json | st.builds(
    lambda version, tools, extra: {"version": version, "granted_tools": tools, **extra},
    st.sampled_from([1, 1, 1, 2, 0, "1", 1.0, True, None]),
    st.lists(any_tool_names | st.sampled_from(["", None, 1, ["bash"], {"name": "bash"}]), max_size=5)
    | plain_json,
    st.dictionaries(st.sampled_from(["extra", "version2", "tools"]), plain_json, max_size=1),
)
"""Anything a host may hand to ``SessionPermissionGrants.from_snapshot``: any JSON, or a near miss.

The near misses are mostly valid, so the fuzzing reaches the entry checks and not only the outer shape.
"""


# -- tool metadata ---------------------------------------------------------------------------------------


def tool_metadata(*, extra_scopes: tuple[str, ...] = ()) -> st.SearchStrategy[dict[str, object]]:
    """A tool's metadata mapping, each key present or not; ``extra_scopes`` adds undeclared scope names."""
    return st.fixed_dictionaries(
        {},
        optional={
            "approval_required": st.booleans(),
            "auto_approvable": st.booleans(),
            "always_ask": st.booleans(),
            "risk_level": st.sampled_from(("low", "medium", "high", "critical")),
            "side_effect_scope": st.sampled_from((*sorted(SIDE_EFFECT_SCOPES), *extra_scopes)),
        },
    )
