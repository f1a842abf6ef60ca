"""PlanModePolicy: the allowed tools and the exit tool proceed, everything else is blocked."""

from __future__ import annotations

import enum
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ask_permissions import PlanModePolicy, ToolCall

from .cases import bad_tool_name_lists
from .threads import run_threads

DEFAULT_REASON = "Plan mode: only read-only tools until the plan is approved"

DECISIONS: list[tuple[str, str, dict[str, str]]] = [
    ("allowed-read", "read_file", {"action": "proceed"}),
    ("allowed-grep", "grep", {"action": "proceed"}),
    ("exit-tool", "exit_plan_mode", {"action": "proceed"}),
    ("write-blocked", "write", {"action": "block", "reason": DEFAULT_REASON}),
    ("bash-blocked", "bash", {"action": "block", "reason": DEFAULT_REASON}),
    ("near-miss-blocked", "read_file2", {"action": "block", "reason": DEFAULT_REASON}),
    ("case-blocked", "READ_FILE", {"action": "block", "reason": DEFAULT_REASON}),
]

BAD_ARGUMENTS: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("empty-exit", {"allowed_tools": [], "exit_tool": ""}, ValueError, "exit_tool: .*got ''"),
    ("none-exit", {"allowed_tools": [], "exit_tool": None}, TypeError, "exit_tool: .*got None"),
    ("empty-reason", {"allowed_tools": [], "reason": ""}, ValueError, "reason: .*got ''"),
    ("none-reason", {"allowed_tools": [], "reason": None}, TypeError, "reason: .*got None"),
]


class Tool(enum.StrEnum):
    """A host's tool-name enum."""

    READ = "read_file"


def make_policy(**overrides: Any) -> PlanModePolicy:
    return PlanModePolicy(**{"allowed_tools": ["read_file", "grep"], **overrides})


class TestDecisions:
    """Only the allowed tools and the exit tool proceed."""

    @pytest.mark.parametrize(
        ("tool", "expected"),
        [case[1:] for case in DECISIONS],
        ids=[case[0] for case in DECISIONS],
    )
    def test_decision(self, tool: str, expected: dict[str, str]) -> None:
        """Exact names proceed; anything else blocks with the default reason."""
        assert make_policy().before_tool_call(ToolCall(tool, {}, "tc-1"), {}) == expected

    def test_custom_exit_tool_and_reason(self) -> None:
        """A custom exit tool proceeds, the default one does not, and blocks carry the custom reason."""
        policy = make_policy(exit_tool="finish_plan", reason="Planning: read only")
        assert policy.before_tool_call(ToolCall("finish_plan")) == {"action": "proceed"}
        assert policy.before_tool_call(ToolCall("exit_plan_mode")) == {
            "action": "block",
            "reason": "Planning: read only",
        }

    def test_no_allowed_tools_only_exit(self) -> None:
        """With no allowed tools only the exit tool proceeds."""
        policy = PlanModePolicy(allowed_tools=[])
        assert policy.before_tool_call(ToolCall("exit_plan_mode")) == {"action": "proceed"}
        assert policy.before_tool_call(ToolCall("read_file"))["action"] == "block"

    def test_mapping_tool_call(self) -> None:
        """A mapping tool call is read like an object."""
        assert make_policy().before_tool_call({"name": "grep", "arguments": {}, "id": "x"}) == {
            "action": "proceed"
        }

    def test_each_result_is_a_fresh_dict(self) -> None:
        """Mutating a returned dict does not change later results."""
        policy = make_policy()
        first = policy.before_tool_call(ToolCall("bash"))
        assert first["action"] == "block"
        first["reason"] = "changed"
        second = policy.before_tool_call(ToolCall("bash"))
        assert second["action"] == "block"
        assert second["reason"] == DEFAULT_REASON

    @given(st.text(min_size=1, max_size=12))
    def test_any_other_name_blocks(self, name: str) -> None:
        """Every name outside the allowed set and the exit tool is blocked."""
        result = make_policy().before_tool_call(ToolCall(name))
        allowed = name in {"read_file", "grep", "exit_plan_mode"}
        assert result == ({"action": "proceed"} if allowed else {"action": "block", "reason": DEFAULT_REASON})


class TestReaders:
    """Readers expose the configuration unchanged."""

    def test_readers(self) -> None:
        """allowed_tools is a frozenset; exit_tool and reason read back."""
        policy = make_policy()
        assert policy.allowed_tools == frozenset({"read_file", "grep"})
        assert isinstance(policy.allowed_tools, frozenset)
        assert policy.exit_tool == "exit_plan_mode"
        assert policy.reason == DEFAULT_REASON == PlanModePolicy.DEFAULT_REASON

    def test_str_enum_names_normalize(self) -> None:
        """StrEnum names are stored as plain strings."""
        policy = PlanModePolicy(allowed_tools=[Tool.READ])
        [name] = policy.allowed_tools
        assert type(name) is str
        assert policy.before_tool_call(ToolCall("read_file")) == {"action": "proceed"}

    def test_input_list_is_copied(self) -> None:
        """Changing the list passed in does not change the policy."""
        tools = ["read_file"]
        policy = PlanModePolicy(allowed_tools=tools)
        tools.append("bash")
        assert policy.before_tool_call(ToolCall("bash"))["action"] == "block"

    def test_generator_allowed_tools(self) -> None:
        """Any iterable of names is accepted, read once."""
        policy = PlanModePolicy(allowed_tools=(name for name in ["grep"]))
        assert policy.allowed_tools == frozenset({"grep"})

    def test_repr(self) -> None:
        """The repr shows the sorted allowed tools and the exit tool."""
        assert (
            repr(make_policy())
            == "<PlanModePolicy allowed_tools=['grep', 'read_file'] exit_tool='exit_plan_mode'>"
        )


class TestValidation:
    """Names and the reason must be non-empty strings."""

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [case[1:] for case in BAD_ARGUMENTS],
        ids=[case[0] for case in BAD_ARGUMENTS],
    )
    def test_bad_arguments(self, kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
        """Bad input raises the documented error naming the field."""
        with pytest.raises(error, match=match):
            PlanModePolicy(**kwargs)

    @pytest.mark.parametrize(("value", "error", "match"), bad_tool_name_lists("allowed_tools"))
    def test_bad_allowed_tools(self, value: Any, error: type[Exception], match: str) -> None:
        """allowed_tools must be an iterable of non-empty strings, the bad entry named by its index."""
        with pytest.raises(error, match=match):
            PlanModePolicy(allowed_tools=value)

    def test_allowed_tools_is_required(self) -> None:
        """allowed_tools has no default: plan mode must say what it allows."""
        with pytest.raises(TypeError, match="allowed_tools"):
            PlanModePolicy()  # type: ignore[call-arg]

    def test_tool_call_without_name(self) -> None:
        """A tool call with no name is a TypeError, not a silent block."""
        with pytest.raises(TypeError, match="tool_call"):
            make_policy().before_tool_call({"arguments": {}})


class TestThreads:
    """The policy is immutable, so concurrent calls agree."""

    def test_concurrent_calls(self) -> None:
        """Eight threads get the same answers."""
        policy = make_policy()
        barrier = threading.Barrier(8)
        wrong: list[str] = []

        def work() -> None:
            barrier.wait(timeout=5)
            for name in ["read_file", "bash", "exit_plan_mode", "write"] * 100:
                proceeded = policy.before_tool_call(ToolCall(name))["action"] == "proceed"
                if proceeded != (name in {"read_file", "exit_plan_mode"}):
                    wrong.append(name)

        run_threads(*[work] * 8)
        assert wrong == []
