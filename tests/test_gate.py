"""Permissions (the mode gate) and Approval: modes, sticky approvals, reminders, expiry, threads."""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
import threading
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import Approval, Permissions, ToolCall

from .cases import bad_tool_name_lists
from .clock import START, FakeClock
from .test_names import FOLDED_TO_BASH
from .threads import run_threads

LOGGER = "ask_permissions"


class Tool(enum.StrEnum):
    """A host's tool-name enum."""

    DEPLOY = "deploy"


def reminder(name: str, call_id: str) -> str:
    return f"[Permissions] Tool '{name}' requires approval. Call approve('{call_id}') to allow."


def reminders(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith(LOGGER) and record.levelno == logging.WARNING
    ]


class TestSeedExamples:
    """The gem README's gate example behaves as documented."""

    def test_block_approve_proceed(self) -> None:
        """Blocked, listed as pending, approved, then the same id proceeds."""
        gate = Permissions()
        call = ToolCall("bash", {"command": "ls"}, "tc-1")
        assert gate.mode is None
        assert gate.before_tool_call(call, {}) == {"action": "block", "reason": "bash requires approval"}
        [entry] = gate.pending_approvals
        assert (entry.tool_call_id, entry.tool_name, entry.status) == ("tc-1", "bash", "pending")
        assert gate.approve("tc-1") is True
        assert gate.before_tool_call(call, {}) == {"action": "proceed"}
        assert gate.pending_approvals == []

    def test_unblocked_tool_proceeds_without_an_entry(self) -> None:
        """A tool outside blocked_tools proceeds and records nothing."""
        gate = Permissions()
        assert gate.before_tool_call(ToolCall("read_file", None, "tc-1")) == {"action": "proceed"}
        assert gate.pending_approvals == []
        assert gate.approve("tc-1") is False

    def test_mapping_tool_call(self) -> None:
        """A mapping with name/arguments/id works like an object."""
        gate = Permissions()
        call = {"name": "write", "arguments": {}, "id": "tc-9"}
        assert gate.before_tool_call(call)["action"] == "block"
        gate.approve("tc-9")
        assert gate.before_tool_call(call) == {"action": "proceed"}


MODE_CASES: list[tuple[str, str | None, str, dict[str, str]]] = [
    ("none-bash", None, "bash", {"action": "block", "reason": "bash requires approval"}),
    ("none-read", None, "read_file", {"action": "proceed"}),
    (
        "ask-edit",
        "ask_before_changes",
        "edit",
        {"action": "block", "reason": "edit requires approval (mode: ask_before_changes)"},
    ),
    (
        "read-only-destroy",
        "read_only",
        "destroy",
        {"action": "block", "reason": "destroy requires approval (mode: read_only)"},
    ),
    ("read-only-read", "read_only", "read_file", {"action": "proceed"}),
    ("full-bash", "full_access", "bash", {"action": "proceed"}),
    ("full-destroy", "full_access", "destroy", {"action": "proceed"}),
]


class TestModes:
    """A mode fixes the blocked tools and the block reason."""

    @pytest.mark.parametrize(
        ("mode", "tool", "expected"),
        [case[1:] for case in MODE_CASES],
        ids=[case[0] for case in MODE_CASES],
    )
    def test_mode_decides(self, mode: Any, tool: str, expected: dict[str, str]) -> None:
        """Each mode blocks its tools with the documented reason."""
        assert Permissions(mode=mode).before_tool_call(ToolCall(tool, None, "tc-1")) == expected

    @pytest.mark.parametrize("mode", ["full_access", "ask_before_changes", "read_only"])
    def test_explicit_mode_ignores_blocked_tools(self, mode: Any) -> None:
        """With a mode, blocked_tools comes from the mode and the argument is ignored."""
        gate = Permissions(mode=mode, blocked_tools=["read_file"])
        assert gate.mode == mode
        assert gate.blocked_tools == list(Permissions.MODE_BLOCKED_TOOLS[mode])
        assert gate.before_tool_call(ToolCall("read_file", None, "tc-1")) == {"action": "proceed"}

    def test_custom_blocked_tools_replace_the_default(self) -> None:
        """Without a mode, a custom list replaces the default entirely."""
        gate = Permissions(blocked_tools=["deploy", "write"])
        assert gate.blocked_tools == ["deploy", "write"]
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1")) == {"action": "proceed"}
        assert gate.before_tool_call(ToolCall("deploy", None, "tc-2"))["action"] == "block"

    def test_empty_blocked_tools_blocks_nothing(self) -> None:
        """An empty custom list blocks no tool."""
        gate = Permissions(blocked_tools=[])
        assert gate.blocked_tools == []
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1")) == {"action": "proceed"}

    def test_str_enum_names_normalize(self) -> None:
        """StrEnum entries become plain strings, and duplicates collapse."""
        gate = Permissions(blocked_tools=[Tool.DEPLOY, "deploy"])
        assert gate.blocked_tools == ["deploy"]
        assert type(gate.blocked_tools[0]) is str
        gate.before_tool_call(ToolCall(Tool.DEPLOY, None, "tc-1"))
        assert type(gate.pending_approvals[0].tool_name) is str

    def test_str_mixin_enum_names_are_their_text(self) -> None:
        """A name whose str() is not its text (a str-mixin Enum member) is blocked by its text."""

        class Names(str, enum.Enum):  # noqa: UP042  # str() of a member is "Names.BASH", not "bash"
            BASH = "bash"

        gate = Permissions(blocked_tools=[Names.BASH])
        assert gate.blocked_tools == ["bash"]
        assert Permissions().before_tool_call(ToolCall(Names.BASH, None, "tc-1")) == {
            "action": "block",
            "reason": "bash requires approval",
        }

    def test_default_blocked_tools(self) -> None:
        """No mode and no list: the four default tools, in order, as a fresh list."""
        gate = Permissions()
        assert gate.blocked_tools == ["write", "edit", "bash", "destroy"]
        gate.blocked_tools.append("read_file")
        assert gate.blocked_tools == ["write", "edit", "bash", "destroy"]

    @pytest.mark.parametrize("mode", ["x", "READ_ONLY", "", 5, ["read_only"]], ids=repr)
    def test_unknown_mode_message(self, mode: Any) -> None:
        """An unknown mode raises ValueError with the fixed text and the value's repr."""
        expected = f"Unknown access mode: {mode!r}. Valid: full_access, ask_before_changes, read_only"
        with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
            Permissions(mode=mode)

    def test_unknown_mode_exact_text(self) -> None:
        """The message for 'x' is exactly the one SPEC.md fixes."""
        with pytest.raises(ValueError, match="x") as info:
            Permissions(mode="x")  # type: ignore[arg-type]
        assert (
            str(info.value) == "Unknown access mode: 'x'. Valid: full_access, ask_before_changes, read_only"
        )

    @pytest.mark.parametrize(
        ("value", "error", "match"),
        bad_tool_name_lists("blocked_tools"),
    )
    def test_bad_blocked_tools(self, value: Any, error: type[Exception], match: str) -> None:
        """Custom blocked_tools must be an iterable of non-empty strings."""
        with pytest.raises(error, match=match):
            Permissions(blocked_tools=value)


class TestConstants:
    """The public constants are immutable and agree with each other."""

    def test_default_tools(self) -> None:
        """DEFAULT_TOOLS is the tuple of the four change tools; DEFAULT_BLOCKED_TOOLS aliases it."""
        assert Permissions.DEFAULT_TOOLS == ("write", "edit", "bash", "destroy")
        assert Permissions.DEFAULT_BLOCKED_TOOLS is Permissions.DEFAULT_TOOLS

    def test_access_modes(self) -> None:
        """ACCESS_MODES maps each mode to its blocked tools, in the documented order."""
        assert list(Permissions.ACCESS_MODES) == ["full_access", "ask_before_changes", "read_only"]
        assert Permissions.ACCESS_MODES["full_access"]["blocked_tools"] == ()
        assert Permissions.ACCESS_MODES["read_only"]["blocked_tools"] == Permissions.DEFAULT_TOOLS
        assert Permissions.ACCESS_MODES["ask_before_changes"]["blocked_tools"] == Permissions.DEFAULT_TOOLS
        assert dict(Permissions.MODE_BLOCKED_TOOLS) == {
            mode: config["blocked_tools"] for mode, config in Permissions.ACCESS_MODES.items()
        }

    def test_mappings_are_read_only(self) -> None:
        """The mode tables cannot be changed at run time."""
        with pytest.raises(TypeError):
            Permissions.ACCESS_MODES["full_access"] = {}  # type: ignore[index]
        with pytest.raises(TypeError):
            Permissions.ACCESS_MODES["read_only"]["blocked_tools"] = ()  # type: ignore[index]
        with pytest.raises(TypeError):
            Permissions.MODE_BLOCKED_TOOLS["read_only"] = ()  # type: ignore[index]


class TestStickyApprovals:
    """Approvals are keyed by tool_call_id and never leak to another id."""

    def test_repeated_calls_reuse_the_entry(self) -> None:
        """Blocking the same id twice keeps one pending entry with its original created_at."""
        clock = FakeClock()
        gate = Permissions(clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        clock.advance(seconds=5)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        [entry] = gate.pending_approvals
        assert entry.created_at == START

    def test_approving_one_id_never_unlocks_another(self) -> None:
        """Approving tc-1 leaves tc-2 blocked and pending."""
        gate = Permissions()
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        gate.before_tool_call(ToolCall("bash", None, "tc-2"))
        assert gate.approve("tc-1") is True
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1")) == {"action": "proceed"}
        assert gate.before_tool_call(ToolCall("bash", None, "tc-2"))["action"] == "block"
        assert [entry.tool_call_id for entry in gate.pending_approvals] == ["tc-2"]

    def test_approve_results(self) -> None:
        """approve is True for pending or approved entries, False for unknown ids, and never raises."""
        gate = Permissions()
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        assert gate.approve("tc-1") is True
        assert gate.approve("tc-1") is True
        assert gate.approve("tc-unknown") is False
        assert gate.approve(None) is False
        assert gate.approve(["unhashable"]) is False

    def test_approve_before_any_call_does_not_pre_approve(self) -> None:
        """Approving an id the gate has not seen records nothing; its first call still blocks."""
        gate = Permissions()
        assert gate.approve("tc-1") is False
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1"))["action"] == "block"

    def test_pending_approvals_in_creation_order_and_fresh(self) -> None:
        """pending_approvals lists pending entries in creation order as a fresh list."""
        gate = Permissions()
        for call_id in ("c", "a", "b"):
            gate.before_tool_call(ToolCall("write", None, call_id))
        gate.approve("a")
        listed = gate.pending_approvals
        assert [entry.tool_call_id for entry in listed] == ["c", "b"]
        listed.clear()
        assert len(gate.pending_approvals) == 2

    def test_none_id_always_blocks(self, caplog: pytest.LogCaptureFixture) -> None:
        """A call without an id records nothing, cannot be approved and always blocks."""
        gate = Permissions()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert gate.before_tool_call(ToolCall("bash")) == {
                "action": "block",
                "reason": "bash requires approval",
            }
        assert gate.pending_approvals == []
        assert gate.approve(None) is False
        assert gate.before_tool_call(ToolCall("bash"))["action"] == "block"
        no_id = "[Permissions] Tool 'bash' requires approval, but the call has no id to approve it by."
        assert reminders(caplog) == [no_id, no_id]

    def test_unhashable_id_is_a_type_error(self) -> None:
        """A blocked call whose id cannot be a key raises TypeError; an unblocked one proceeds."""
        gate = Permissions()
        with pytest.raises(TypeError, match=r"tool_call.id: expected a hashable id"):
            gate.before_tool_call({"name": "bash", "id": ["tc-1"]})
        assert gate.before_tool_call({"name": "read_file", "id": ["tc-1"]}) == {"action": "proceed"}

    def test_approval_is_sticky_per_id_whatever_the_tool(self, caplog: pytest.LogCaptureFixture) -> None:
        """As in the gem, an approval is keyed by tool_call_id alone: later calls with that id proceed."""
        gate = Permissions()
        gate.before_tool_call(ToolCall("write", None, "tc-1"))
        gate.approve("tc-1")
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert gate.before_tool_call(ToolCall("bash", None, "tc-1")) == {"action": "proceed"}
        assert reminders(caplog) == [reminder("write", "tc-1")]

    @settings(max_examples=100)
    @given(
        st.lists(
            st.tuples(st.sampled_from(["call", "approve"]), st.sampled_from(["t1", "t2", "t3"])),
            max_size=20,
        )
    )
    def test_proceeds_iff_approved_after_being_blocked(self, ops: list[tuple[str, str]]) -> None:
        """Without a timeout, a call proceeds exactly when its id was blocked earlier and then approved."""
        gate = Permissions()
        seen: set[str] = set()
        approved: set[str] = set()
        for op, call_id in ops:
            if op == "approve":
                assert gate.approve(call_id) is (call_id in seen)
                if call_id in seen:
                    approved.add(call_id)
            else:
                result = gate.before_tool_call(ToolCall("bash", None, call_id))
                assert (result["action"] == "proceed") is (call_id in approved)
                seen.add(call_id)
        assert {entry.tool_call_id for entry in gate.pending_approvals} == seen - approved


class TestReminder:
    """The first block of an id logs one WARNING on the ask_permissions logger."""

    def test_reminder_once_per_new_entry(self, caplog: pytest.LogCaptureFixture) -> None:
        """The first block warns with the fixed text; repeats and approved calls stay silent."""
        gate = Permissions()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            gate.before_tool_call(ToolCall("bash", None, "tc-1"))
            gate.before_tool_call(ToolCall("bash", None, "tc-1"))
            gate.before_tool_call(ToolCall("read_file", None, "tc-2"))
            gate.approve("tc-1")
            gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        assert reminders(caplog) == [reminder("bash", "tc-1")]
        [record] = caplog.records
        assert record.name.startswith("ask_permissions")

    def test_each_new_id_warns(self, caplog: pytest.LogCaptureFixture) -> None:
        """Every new tool_call_id gets its own reminder."""
        gate = Permissions(mode="ask_before_changes")
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            gate.before_tool_call(ToolCall("bash", None, "tc-1"))
            gate.before_tool_call(ToolCall("write", None, "tc-2"))
        assert reminders(caplog) == [reminder("bash", "tc-1"), reminder("write", "tc-2")]

    def test_recreated_expired_entry_warns_again(self, caplog: pytest.LogCaptureFixture) -> None:
        """An expired entry that is recreated warns again."""
        clock = FakeClock()
        gate = Permissions(timeout=60, clock=clock)
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            gate.before_tool_call(ToolCall("bash", None, "tc-1"))
            clock.advance(seconds=61)
            gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        assert reminders(caplog) == [reminder("bash", "tc-1")] * 2

    def test_package_attaches_no_handler(self) -> None:
        """The package leaves handler configuration to the application."""
        assert logging.getLogger("ask_permissions").handlers == []
        assert logging.getLogger("ask_permissions.gate").handlers == []


BAD_TIMEOUTS: list[tuple[object, type[Exception], str]] = [
    (0, ValueError, "positive"),
    (-1, ValueError, "positive"),
    (float("nan"), ValueError, "positive"),
    (float("inf"), ValueError, "positive"),
    (10**20, ValueError, "timedelta can hold"),
    (timedelta(0), ValueError, "positive"),
    (timedelta(seconds=-1), ValueError, "positive"),
    (True, TypeError, "expected seconds"),
    ("60", TypeError, "expected seconds"),
]


class TestTimeout:
    """Entries expire once now - created_at > timeout, and only before_tool_call acts on it."""

    @pytest.mark.parametrize("timeout", [60, 60.0, timedelta(minutes=1)], ids=["int", "float", "timedelta"])
    def test_exactly_at_the_timeout_is_live(self, timeout: float | timedelta) -> None:
        """At exactly the timeout an approved entry still proceeds; a microsecond later it blocks again."""
        clock = FakeClock()
        gate = Permissions(timeout=timeout, clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        gate.approve("tc-1")
        clock.advance(seconds=60)
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1")) == {"action": "proceed"}
        clock.advance(microseconds=1)
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1"))["action"] == "block"
        [entry] = gate.pending_approvals
        assert entry.created_at == START + timedelta(seconds=60, microseconds=1)

    def test_expiry_measured_from_original_created_at(self) -> None:
        """Approving later does not restart the clock: expiry counts from when the entry was recorded."""
        clock = FakeClock()
        gate = Permissions(timeout=60, clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        clock.advance(seconds=50)
        gate.approve("tc-1")
        clock.advance(seconds=11)
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1"))["action"] == "block"

    def test_pending_entries_expire_and_are_recreated(self) -> None:
        """An expired pending entry is replaced by a fresh one with a new created_at."""
        clock = FakeClock()
        gate = Permissions(timeout=10, clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        clock.advance(seconds=11)
        [stale] = gate.pending_approvals
        assert stale.created_at == START, "pending_approvals never purges expired entries"
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1"))["action"] == "block"
        [fresh] = gate.pending_approvals
        assert fresh.created_at == START + timedelta(seconds=11)

    def test_approving_an_expired_entry_does_not_revive_it(self) -> None:
        """approve on an expired entry answers True, but the next call starts over."""
        clock = FakeClock()
        gate = Permissions(timeout=10, clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        clock.advance(seconds=11)
        assert gate.approve("tc-1") is True
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1"))["action"] == "block"
        assert [entry.status for entry in gate.pending_approvals] == ["pending"]

    def test_without_timeout_nothing_expires(self) -> None:
        """No timeout: an approval holds forever."""
        clock = FakeClock()
        gate = Permissions(clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        gate.approve("tc-1")
        clock.advance(days=10_000)
        assert gate.timeout is None
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1")) == {"action": "proceed"}

    def test_timeout_property_is_a_timedelta(self) -> None:
        """timeout reads back as a timedelta, whatever form it was given in."""
        assert Permissions(timeout=1.5).timeout == timedelta(seconds=1.5)
        assert Permissions(timeout=timedelta(hours=1)).timeout == timedelta(hours=1)

    @pytest.mark.parametrize(
        ("timeout", "error", "match"),
        BAD_TIMEOUTS,
        ids=["zero", "negative", "nan", "inf", "huge", "zero-delta", "negative-delta", "bool", "string"],
    )
    def test_bad_timeout(self, timeout: Any, error: type[Exception], match: str) -> None:
        """A timeout must be a positive, finite duration given as seconds or a timedelta."""
        with pytest.raises(error, match=f"timeout: .*{match}"):
            Permissions(timeout=timeout)


class TestClock:
    """The injected clock stamps entries and must return aware datetimes."""

    def test_clock_property(self) -> None:
        """The clock reads back; by default entries are stamped in UTC."""
        clock = FakeClock()
        assert Permissions(clock=clock).clock is clock
        gate = Permissions()
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        assert gate.pending_approvals[0].created_at.utcoffset() == timedelta(0)

    def test_naive_clock_is_refused(self) -> None:
        """A clock returning a naive datetime fails loudly instead of comparing wrongly."""
        gate = Permissions(clock=lambda: datetime(2026, 1, 1))  # naive on purpose
        with pytest.raises(ValueError, match="clock: expected an aware datetime"):
            gate.before_tool_call(ToolCall("bash", None, "tc-1"))

    def test_non_callable_clock_is_refused(self) -> None:
        """clock must be callable."""
        with pytest.raises(TypeError, match="clock: expected a callable"):
            Permissions(clock=START)  # type: ignore[arg-type]


class TestApproval:
    """Approval is a frozen value with dict-style field access."""

    ENTRY = Approval("tc-1", "bash", "pending", START)

    def test_fields_and_getitem(self) -> None:
        """approval["status"] reads the field, like the gem's approval[:status]."""
        assert self.ENTRY["status"] == "pending"
        assert self.ENTRY["tool_name"] == "bash"
        assert self.ENTRY["tool_call_id"] == "tc-1"
        assert self.ENTRY["created_at"] == START

    @pytest.mark.parametrize("key", ["nope", "is_pending", "__class__", 0], ids=repr)
    def test_unknown_key_is_a_key_error(self, key: Any) -> None:
        """Only the four fields are readable by key."""
        with pytest.raises(KeyError):
            self.ENTRY[key]

    def test_predicates(self) -> None:
        """is_pending / is_approved follow the status."""
        assert self.ENTRY.is_pending
        assert not self.ENTRY.is_approved
        approved = dataclasses.replace(self.ENTRY, status="approved")
        assert approved.is_approved
        assert not approved.is_pending

    def test_frozen_and_slotted(self) -> None:
        """An Approval cannot be changed in place."""
        with pytest.raises(dataclasses.FrozenInstanceError):
            self.ENTRY.status = "approved"  # type: ignore[misc]
        assert not hasattr(self.ENTRY, "__dict__")

    def test_gate_hands_out_values(self) -> None:
        """Approving replaces the entry; an Approval read earlier keeps its old status."""
        gate = Permissions()
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        [before] = gate.pending_approvals
        gate.approve("tc-1")
        assert before.is_pending


class TestRepr:
    """The gate's repr shows its configuration at a glance."""

    def test_repr(self) -> None:
        """Mode, blocked tools and the pending count."""
        gate = Permissions(mode="read_only")
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        assert repr(gate) == (
            "<Permissions mode='read_only' blocked_tools=['write', 'edit', 'bash', 'destroy'] pending=1>"
        )


class TestThreads:
    """Concurrent callers see one entry per id and one reminder."""

    def test_same_id_from_many_threads(self, caplog: pytest.LogCaptureFixture) -> None:
        """Eight threads blocking the same id create one entry and log one reminder."""
        gate = Permissions()
        barrier = threading.Barrier(8)
        results: list[str] = []
        lock = threading.Lock()

        def work() -> None:
            barrier.wait(timeout=5)
            for _ in range(50):
                action = gate.before_tool_call(ToolCall("bash", None, "tc-1"))["action"]
                with lock:
                    results.append(action)

        with caplog.at_level(logging.WARNING, logger=LOGGER):
            run_threads(*[work] * 8)
        assert results == ["block"] * 400
        assert len(gate.pending_approvals) == 1
        assert reminders(caplog) == [reminder("bash", "tc-1")]

    def test_approvals_racing_calls(self) -> None:
        """Approving ids while other threads call never unlocks an id that was not approved."""
        gate = Permissions()
        ids = [f"tc-{index}" for index in range(100)]
        for call_id in ids:
            gate.before_tool_call(ToolCall("bash", None, call_id))
        approved = set(ids[::2])
        barrier = threading.Barrier(2)
        leaked: list[str] = []

        def approver() -> None:
            barrier.wait(timeout=5)
            for call_id in sorted(approved):
                gate.approve(call_id)

        def caller() -> None:
            barrier.wait(timeout=5)
            for _ in range(5):
                for call_id in ids:
                    result = gate.before_tool_call(ToolCall("bash", None, call_id))
                    if result["action"] == "proceed" and call_id not in approved:
                        leaked.append(call_id)

        run_threads(approver, caller)
        assert leaked == []
        assert {entry.tool_call_id for entry in gate.pending_approvals} == set(ids) - approved


class TestApprovalFields:
    """An Approval carries every field of the gem's: what the call runs, why it blocked, when approved."""

    def test_pending_entry_shows_the_call(self) -> None:
        """A pending entry holds the call's arguments, the block reason and the tool call object itself."""
        clock = FakeClock()
        gate = Permissions(mode="ask_before_changes", clock=clock)
        call = ToolCall("bash", {"command": "rm -rf build"}, "tc-1")
        gate.before_tool_call(call)
        [entry] = gate.pending_approvals
        assert entry.arguments == {"command": "rm -rf build"}
        assert entry.reason == "bash requires approval (mode: ask_before_changes)"
        assert entry.tool_call is call
        assert entry.created_at == START
        assert entry.approved_at is None

    def test_mapping_tool_call_is_kept_as_given(self) -> None:
        """A mapping tool call is the entry's tool_call, and its arguments are the entry's."""
        gate = Permissions()
        call = {"name": "write", "arguments": {"path": "x"}, "id": "tc-1"}
        gate.before_tool_call(call)
        [entry] = gate.approvals
        assert entry.tool_call is call
        assert entry.arguments is call["arguments"]
        assert entry.reason == "write requires approval"

    def test_approve_stamps_approved_at_from_the_clock(self) -> None:
        """approve sets approved_at from the gate's clock; approving again keeps the first stamp."""
        clock = FakeClock()
        gate = Permissions(clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        clock.advance(seconds=30)
        assert gate.approve("tc-1") is True
        clock.advance(seconds=30)
        assert gate.approve("tc-1") is True
        [entry] = gate.approvals
        assert entry.status == "approved"
        assert entry.approved_at == START + timedelta(seconds=30)
        assert entry.created_at == START

    def test_clock_is_not_called_under_the_lock(self) -> None:
        """approve calls the clock without holding the gate's lock: a clock that reads the gate works."""
        gate_holder: list[Permissions] = []
        seen: list[int] = []

        def clock() -> datetime:
            if gate_holder:
                seen.append(len(gate_holder[0].approvals))  # takes the gate's lock
            return START

        gate = Permissions(clock=clock)
        gate_holder.append(gate)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        done = threading.Event()

        def approve() -> None:
            gate.approve("tc-1")
            done.set()

        run_threads(approve)
        assert done.is_set()
        assert seen == [0, 1]  # read while blocking, then while approving: neither deadlocked
        assert gate.approvals[0].approved_at == START

    def test_failing_clock_leaves_the_entry_pending(self) -> None:
        """A clock that raises during approve propagates, and the entry stays pending."""
        calls = [0]

        def clock() -> datetime:
            calls[0] += 1
            if calls[0] > 1:
                raise RuntimeError("clock broke")
            return START

        gate = Permissions(clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        with pytest.raises(RuntimeError, match="clock broke"):
            gate.approve("tc-1")
        assert [entry.status for entry in gate.approvals] == ["pending"]

    def test_approve_of_unknown_id_does_not_call_the_clock(self) -> None:
        """approve of an id without an entry answers False without reading the clock."""

        def clock() -> datetime:
            raise AssertionError("the clock was called")

        assert Permissions(clock=clock).approve("tc-unknown") is False

    @pytest.mark.parametrize(
        "key",
        [
            "tool_call_id",
            "tool_name",
            "arguments",
            "reason",
            "status",
            "created_at",
            "approved_at",
            "tool_call",
        ],
    )
    def test_item_access_for_every_field(self, key: str) -> None:
        """approval[key] reads every field, like the gem's approval[:key]."""
        clock = FakeClock()
        gate = Permissions(clock=clock)
        call = ToolCall("edit", {"path": "a.txt"}, "tc-1")
        gate.before_tool_call(call)
        gate.approve("tc-1")
        [entry] = gate.approvals
        assert entry[key] is getattr(entry, key)

    def test_positional_fields_keep_their_order(self) -> None:
        """The four original fields stay positional; the gem's others are keywords with defaults."""
        entry = Approval("tc-1", "bash", "pending", START, arguments={"command": "ls"}, reason="r")
        assert (entry.arguments, entry.reason, entry.approved_at, entry.tool_call) == (
            {"command": "ls"},
            "r",
            None,
            None,
        )

    def test_tool_call_is_neither_compared_nor_shown(self) -> None:
        """Two entries differing only in the tool call object are equal, and the repr leaves it out."""
        first = Approval("tc-1", "bash", "pending", START, tool_call=ToolCall("bash", None, "tc-1"))
        second = dataclasses.replace(first, tool_call={"name": "bash", "id": "tc-1"})
        assert first == second
        assert "tool_call=" not in repr(first)
        assert "arguments=None" in repr(first)


class TestApprovalsList:
    """gate.approvals lists every entry, pending or approved, in creation order, as a fresh list."""

    def test_every_entry_in_creation_order(self) -> None:
        """Pending and approved entries alike, oldest first."""
        gate = Permissions()
        for call_id in ("c", "a", "b"):
            gate.before_tool_call(ToolCall("write", None, call_id))
        gate.approve("a")
        assert [(entry.tool_call_id, entry.status) for entry in gate.approvals] == [
            ("c", "pending"),
            ("a", "approved"),
            ("b", "pending"),
        ]

    def test_fresh_list(self) -> None:
        """Changing the list returned changes nothing in the gate."""
        gate = Permissions()
        gate.before_tool_call(ToolCall("write", None, "tc-1"))
        gate.approvals.clear()
        assert len(gate.approvals) == 1

    def test_recreated_entry_moves_to_the_end(self) -> None:
        """An expired entry recreated by a call is the newest entry."""
        clock = FakeClock()
        gate = Permissions(timeout=10, clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        gate.before_tool_call(ToolCall("bash", None, "tc-2"))
        clock.advance(seconds=11)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        assert [entry.tool_call_id for entry in gate.approvals] == ["tc-2", "tc-1"]


# Ids equal in Python (1 == True == 1.0) that are three different ids to the gate.
EQUAL_IDS: list[tuple[object, object]] = [
    (1, True),
    (True, 1),
    (1, 1.0),
    (1.0, 1),
    (0, False),
    ((1, "a"), (True, "a")),
    (frozenset({1}), frozenset({True})),
]


class TestIdsKeyedByTypeAndValue:
    """Approving one id never approves another that merely compares equal to it."""

    @pytest.mark.parametrize(("approved", "other"), EQUAL_IDS, ids=repr)
    def test_equal_ids_of_other_types_stay_blocked(self, approved: object, other: object) -> None:
        """Both calls block; approving the first leaves the second pending and blocked."""
        gate = Permissions()
        gate.before_tool_call({"name": "bash", "id": approved})
        gate.before_tool_call({"name": "bash", "id": other})
        assert len(gate.approvals) == 2
        assert gate.approve(approved) is True
        assert gate.before_tool_call({"name": "bash", "id": approved}) == {"action": "proceed"}
        assert gate.before_tool_call({"name": "bash", "id": other})["action"] == "block"
        [pending] = gate.pending_approvals
        assert pending.tool_call_id is other

    def test_approving_an_id_of_another_type_finds_nothing(self) -> None:
        """approve(True) for a call blocked with id 1 answers False."""
        gate = Permissions()
        gate.before_tool_call({"name": "bash", "id": 1})
        assert gate.approve(True) is False
        assert gate.approve(1.0) is False
        assert gate.approve(1) is True

    def test_str_subclass_ids_are_their_text(self) -> None:
        """A StrEnum id and its plain text are one id."""

        class Ids(enum.StrEnum):
            FIRST = "tc-1"

        gate = Permissions()
        gate.before_tool_call(ToolCall("bash", None, Ids.FIRST))
        assert gate.approve("tc-1") is True
        assert gate.before_tool_call(ToolCall("bash", None, Ids.FIRST)) == {"action": "proceed"}

    def test_id_whose_hash_raises(self) -> None:
        """An id whose __hash__ raises: a TypeError naming the field when blocked; approve answers False."""

        class BadId:
            def __hash__(self) -> int:
                raise RuntimeError("no hash")

        gate = Permissions()
        with pytest.raises(TypeError, match=r"^tool_call.id: expected a hashable id \(a string\); got "):
            gate.before_tool_call({"name": "bash", "id": BadId()})
        assert gate.approve(BadId()) is False
        assert gate.forget(BadId()) is False
        assert gate.approvals == []


class TestForget:
    """forget drops one entry, pending or approved, so long-running hosts can bound the gate's memory."""

    def test_forget_pending_and_approved(self) -> None:
        """forget answers True for an entry it dropped, False for an unknown id; the others stay."""
        gate = Permissions()
        for call_id in ("tc-1", "tc-2", "tc-3"):
            gate.before_tool_call(ToolCall("bash", None, call_id))
        gate.approve("tc-2")
        assert gate.forget("tc-2") is True
        assert gate.forget("tc-1") is True
        assert gate.forget("tc-1") is False
        assert gate.forget("no-such-id") is False
        assert [entry.tool_call_id for entry in gate.approvals] == ["tc-3"]

    def test_forgotten_approval_blocks_again(self) -> None:
        """After forget, the id's next call blocks and records a fresh pending entry with a reminder."""
        clock = FakeClock()
        gate = Permissions(clock=clock)
        gate.before_tool_call(ToolCall("bash", None, "tc-1"))
        gate.approve("tc-1")
        gate.forget("tc-1")
        clock.advance(seconds=5)
        assert gate.before_tool_call(ToolCall("bash", None, "tc-1"))["action"] == "block"
        [entry] = gate.pending_approvals
        assert entry.created_at == START + timedelta(seconds=5)
        assert gate.approve("tc-1") is True

    @pytest.mark.parametrize("call_id", [None, ["unhashable"], 1], ids=["none", "unhashable", "unknown-int"])
    def test_never_raises(self, call_id: object) -> None:
        """forget of None, an unhashable or an unknown id answers False."""
        assert Permissions().forget(call_id) is False

    def test_forget_is_keyed_by_type(self) -> None:
        """forget(True) does not drop the entry of id 1."""
        gate = Permissions()
        gate.before_tool_call({"name": "bash", "id": 1})
        assert gate.forget(True) is False
        assert gate.forget(1) is True


# Names a model may write for a blocked "bash": each meets the block.
LOOK_ALIKES = [name for name in FOLDED_TO_BASH if name != "bash"]


class TestFoldedNames:
    """A call whose name equals a blocked tool's after folding is blocked too."""

    @pytest.mark.parametrize("name", LOOK_ALIKES, ids=ascii)
    def test_folded_name_is_blocked(self, name: str) -> None:
        """The call is blocked with a reason naming it as it was written, and recorded as written."""
        gate = Permissions()
        assert gate.before_tool_call(ToolCall(name, None, "tc-1")) == {
            "action": "block",
            "reason": f"{name} requires approval",
        }
        [entry] = gate.pending_approvals
        assert entry.tool_name == name

    def test_blocked_names_are_folded_too(self) -> None:
        """A blocked_tools entry written in another case blocks the call's plain name."""
        gate = Permissions(blocked_tools=["Deploy"])
        assert gate.before_tool_call(ToolCall("deploy", None, "tc-1"))["action"] == "block"
        assert gate.blocked_tools == ["Deploy"]

    def test_other_names_still_proceed(self) -> None:
        """Names that do not fold to a blocked one proceed: bashful, ba sh."""
        gate = Permissions()
        for name in ("bashful", "ba sh", "read_file"):
            assert gate.before_tool_call(ToolCall(name, None, "tc-1")) == {"action": "proceed"}
        assert gate.approvals == []
