"""Arguments models and hosts really send, which JSON encoders choke on, never break a decision.

A lone surrogate (valid JSON text, but no UTF-8 encoding), values nested about 100,000 deep, and containers
that contain themselves go through serialize_arguments, args_digest, PermissionRules.classify and the
policy's evaluate and before_tool_call like any others; a deny rule still finds its text in them.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    PermissionRules,
    ToolCall,
    args_digest,
)
from ask_permissions.policy._digest import canonical_json, fnv1a_64
from ask_permissions.rules._patterns import serialize_arguments

DEPTH = 100_000

# Each value is built once and shared by the tests (nothing here changes arguments): building and freeing
# 100,000 nested containers per test would cost more than the tests themselves.


@functools.cache
def deep_arguments(command: str = "rm -rf /") -> dict[str, Any]:
    """{"command": ..., "o": {"o": ...}} nested DEPTH deep (built without recursion)."""
    inner: dict[str, Any] = {"leaf": [1, 2]}
    for _ in range(DEPTH):
        inner = {"o": inner}
    return {"command": command, "o": inner}


@functools.cache
def deep_list(command: str = "rm -rf /") -> list[Any]:
    """[command, [[[...]]]] nested DEPTH deep."""
    inner: list[Any] = []
    for _ in range(DEPTH):
        inner = [inner]
    return [command, inner]


@functools.cache
def circular_arguments(command: str = "rm -rf /") -> dict[str, Any]:
    """{"command": ..., "self": <itself>, "list": [<itself>]}."""
    arguments: dict[str, Any] = {"command": command}
    arguments["self"] = arguments
    arguments["list"] = [arguments, "tail"]
    return arguments


@functools.cache
def surrogate_arguments(command: str = "rm -rf /") -> dict[str, Any]:
    """JSON text a model emitted, with a lone surrogate escape, parsed as hosts parse it."""
    parsed: dict[str, Any] = json.loads('{"command": "%s", "note": "\\ud800 half an emoji"}' % command)  # noqa: UP031
    return parsed


HOSTILE: list[Any] = [
    pytest.param(surrogate_arguments, id="lone-surrogate"),
    pytest.param(deep_arguments, id="deep-mapping"),
    pytest.param(circular_arguments, id="circular"),
]
HOSTILE_ANY: list[Any] = [*HOSTILE, pytest.param(deep_list, id="deep-list")]

Make = Callable[..., Any]


def make_policy(rules: PermissionRules) -> ApprovalPolicy:
    return ApprovalPolicy(queue=ApprovalQueue(), rules=rules)


class TestSerialization:
    """serialize_arguments gives every argument value a text, and the text holds what the arguments hold."""

    def test_circular_container_is_a_marker(self) -> None:
        """A container met again inside itself is written as the string "<circular reference>"."""
        assert serialize_arguments(circular_arguments("ls")) == (
            '{"command":"ls","self":"<circular reference>","list":["<circular reference>","tail"]}'
        )

    def test_deep_mapping_is_json(self) -> None:
        """A mapping nested 100,000 deep is the JSON the C encoder would write, could it go that deep."""
        text = serialize_arguments(deep_arguments())
        assert text.startswith('{"command":"rm -rf /","o":{"o":{"o":')
        assert text.endswith('{"leaf":[1,2]}' + "}" * (DEPTH + 1))

    def test_deep_list_is_its_repr(self) -> None:
        """A list nested 100,000 deep is written as repr would write it."""
        assert (
            serialize_arguments(deep_list()) == "['rm -rf /', " + "[" * (DEPTH + 1) + "]" * (DEPTH + 1) + "]"
        )

    def test_surrogate_is_kept(self) -> None:
        """A lone surrogate stays in the text patterns match: it is text, never encoded here."""
        assert (
            serialize_arguments(surrogate_arguments())
            == '{"command":"rm -rf /","note":"\ud800 half an emoji"}'
        )


class TestDigest:
    """args_digest digests any arguments; its canonical text is valid UTF-8."""

    @pytest.mark.parametrize("make", HOSTILE_ANY)
    def test_digest_of_the_canonical_text(self, make: Make) -> None:
        """The digest is FNV-1a-64 of the canonical text, which encodes as UTF-8, and tells commands apart."""
        digest = args_digest(make())
        assert digest == fnv1a_64(canonical_json(make()).encode("utf-8"))
        assert args_digest(make("ls")) != digest

    def test_surrogate_is_escaped(self) -> None:
        """A lone surrogate is written as its \\u escape, which JSON parsers read back as the same string."""
        arguments = surrogate_arguments()
        text = canonical_json(arguments)
        assert "\\ud800" in text
        assert json.loads(text) == arguments


class TestClassify:
    """classify decides hostile arguments by the same rules; a deny substring still finds its text."""

    @pytest.mark.parametrize("make", HOSTILE_ANY)
    def test_deny_substring_still_matches(self, make: Make) -> None:
        """The deny for "rm -rf" denies; the same shape without it falls to the allow."""
        rules = PermissionRules().deny("bash", "rm -rf").allow("bash", re.compile("ls|rm"))
        match = rules.explain("bash", make())
        assert match is not None
        assert (match.index, match.decision) == (0, "deny")
        assert rules.classify("bash", make("ls")) == "allow"

    @pytest.mark.parametrize(
        "make", [surrogate_arguments, circular_arguments], ids=["lone-surrogate", "circular"]
    )
    def test_deny_regex_still_matches(self, make: Make) -> None:
        """A regex deny matches the command in the serialized arguments."""
        rules = PermissionRules().deny(ALL_TOOLS, re.compile(r'"command":"rm\s+-rf'))
        assert rules.classify("anything", make()) == "deny"
        assert rules.classify("anything", make("ls")) is None


ALL_TOOLS = re.compile("")


class TestPolicy:
    """evaluate and before_tool_call decide hostile arguments, and record their digest."""

    @pytest.mark.parametrize("make", HOSTILE)
    def test_evaluate_blocks_by_the_deny(self, make: Make) -> None:
        """The dry run blocks by the deny rule and records the arguments' digest."""
        policy = make_policy(PermissionRules().deny("bash", "rm -rf"))
        record = policy.evaluate(ToolCall("bash", make(), "tc-1"))
        assert (record.outcome, record.layer) == ("block", "deny_rule")
        assert record.args_digest == args_digest(make())

    @pytest.mark.parametrize("make", HOSTILE)
    def test_before_tool_call_blocks_and_queues(self, make: Make) -> None:
        """Blocked by the deny, queued by the ask: the queued action keeps the arguments it was given."""
        records: list[Any] = []
        queue = ApprovalQueue()
        policy = ApprovalPolicy(
            queue=queue,
            rules=PermissionRules().deny("bash", "rm -rf").ask("bash", "ls"),
            on_decision=records.append,
        )
        assert policy.before_tool_call(ToolCall("bash", make(), "tc-1"))["action"] == "block"
        arguments = make("ls")
        result = policy.before_tool_call(ToolCall("bash", arguments, "tc-2"))
        assert result["action"] == "pending"
        assert [record.outcome for record in records] == ["block", "pending"]
        assert all(re.fullmatch("[0-9a-f]{16}", record.args_digest) for record in records)
        [action] = queue.pending_actions
        assert action.tool_call_id == "tc-2"

    def test_deep_list_through_the_policy(self) -> None:
        """A deep list as the arguments is denied by a substring of its repr."""
        policy = make_policy(PermissionRules().deny("bash", "'rm -rf /'"))
        assert policy.before_tool_call(ToolCall("bash", deep_list(), "tc-1"))["action"] == "block"
