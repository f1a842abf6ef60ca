"""ApprovalQueue and Action: the gem's queue semantics, snapshots, waiting, expiry and threads."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import json
import math
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, ParamSpec

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ask_permissions import Action, ApprovalQueue, InvalidSnapshotError, PermissionsError

from .clock import START, FakeClock
from .hostile import HostileDict, HostileList, HostileStr, assert_reads_or_rejects, hostile_snapshots
from .stores import memory_only, new_queue
from .strategies import (
    assert_snapshot_error,
    hostile_values,
    mutate,
    nested,
    nodes_by_path,
    plain_json,
    queue_snapshot_like,
    queue_snapshots,
)
from .threads import JOIN_TIMEOUT, join, start

pytestmark = pytest.mark.usefixtures("store_kind")

P = ParamSpec("P")
WOKEN = 2.0  # seconds: a waiter must wake well within this after the resolution (no reliance on timeouts)


class Boom(Exception):
    """Raised by test callbacks."""


class Interrupt(BaseException):
    """A BaseException that is not an Exception, like KeyboardInterrupt."""


def assert_unlocked(queue: ApprovalQueue) -> None:
    """Fail (rather than hang) if a callback runs while the queue's lock is held."""
    if not queue._changed.acquire(timeout=JOIN_TIMEOUT):
        pytest.fail("callback called while the queue's lock is held")
    queue._changed.release()


def bounded(test: Callable[P, None]) -> Callable[P, None]:
    """Run a test in a thread joined with a timeout, so a deadlock fails it instead of hanging."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        errors: list[BaseException] = []

        def target() -> None:
            try:
                test(*args, **kwargs)
            except BaseException as error:
                errors.append(error)

        join(start(target))
        if errors:
            raise errors[0]

    return run


class Recorder:
    """Callbacks that record (event, id, status, scope, feedback), and can be told to raise."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, str, str | None, str | None]] = []
        self.raise_on: dict[tuple[str, int], BaseException] = {}
        self.queues: list[ApprovalQueue] = []

    def _record(self, event: str, action: Action) -> None:
        for queue in self.queues:
            assert_unlocked(queue)
        self.events.append((event, action.id, action.status, action.resolution_scope, action.feedback))
        error = self.raise_on.get((event, action.id))
        if error is not None:
            raise error

    def on_submit(self, action: Action) -> None:
        self._record("submit", action)

    def on_approve(self, action: Action) -> None:
        self._record("approve", action)

    def on_reject(self, action: Action) -> None:
        self._record("reject", action)

    def queue(self, **kwargs: Any) -> ApprovalQueue:
        queue = new_queue(
            on_submit=self.on_submit, on_approve=self.on_approve, on_reject=self.on_reject, **kwargs
        )
        self.queues.append(queue)
        return queue

    def ids(self, event: str) -> list[int]:
        return [action_id for name, action_id, *_ in self.events if name == event]


def submit(queue: ApprovalQueue, name: str = "bash", *, auto: bool = False, **kwargs: Any) -> int:
    return queue.submit(tool_call_id=f"tc-{name}", tool_name=name, auto_approvable=auto, **kwargs)


def statuses(queue: ApprovalQueue) -> dict[int, str]:
    result: dict[int, str] = {}
    action_id = 1
    while (action := queue[action_id]) is not None:
        result[action_id] = action.status
        action_id += 1
    return result


class TestAction:
    """Action is an immutable value with predicates."""

    def make(self, **changes: Any) -> Action:
        action = Action(
            id=1,
            tool_call_id="tc-1",
            tool_name="bash",
            args={"command": "ls"},
            auto_approvable=False,
            status="pending",
            submitted_at=START,
            message="needs eyes",
        )
        return dataclasses.replace(action, **changes)

    @pytest.mark.parametrize(
        ("status", "flags"),
        [
            ("pending", (True, False, False, False)),
            ("applying", (False, True, False, False)),
            ("approved", (False, False, True, False)),
            ("rejected", (False, False, False, True)),
        ],
        ids=["pending", "applying", "approved", "rejected"],
    )
    def test_predicates(self, status: Any, flags: tuple[bool, bool, bool, bool]) -> None:
        """Exactly one of is_pending/is_applying/is_approved/is_rejected holds, matching status."""
        action = self.make(status=status)
        assert (action.is_pending, action.is_applying, action.is_approved, action.is_rejected) == flags

    def test_frozen_and_slotted(self) -> None:
        """An Action cannot be changed in place and has no __dict__."""
        action = self.make()
        with pytest.raises(dataclasses.FrozenInstanceError):
            action.status = "approved"  # type: ignore[misc]
        assert not hasattr(action, "__dict__")

    def test_defaults_and_scope_alias(self) -> None:
        """resolution_scope and feedback default to None; scope is an alias of resolution_scope."""
        action = self.make()
        assert (action.resolution_scope, action.feedback, action.scope) == (None, None, None)
        assert self.make(resolution_scope="session").scope == "session"

    def test_resolutions_change_only_their_fields(self) -> None:
        """Claiming, approving, rejecting and rolling back keep every other field of the submission."""
        recorder = Recorder()
        queue = recorder.queue()
        queue.submit(tool_call_id="tc-1", tool_name="bash", args={"command": "ls"}, message="m")
        queue.submit(tool_call_id=7, tool_name="write", auto_approvable=True)
        submitted = [queue[1], queue[2]]
        recorder.raise_on[("approve", 1)] = Boom()
        with pytest.raises(Boom):
            queue.approve(1, scope="project")
        queue.reject(2, feedback="no")
        assert (recorder.ids("approve"), recorder.ids("reject")) == ([1], [2])
        assert queue[1] == submitted[0]
        rejected = queue[2]
        assert rejected is not None
        assert rejected.resolved_at is not None
        assert rejected == dataclasses.replace(  # type: ignore[type-var]
            submitted[1], status="rejected", feedback="no", resolved_at=rejected.resolved_at
        )

    def test_repr(self) -> None:
        """The repr shows id, tool, status, scope/feedback when set, and the submission."""
        text = repr(self.make(status="rejected", feedback="no"))
        assert text.startswith("Action(id=1, tool_name='bash', status='rejected', feedback='no', ")
        assert "args={'command': 'ls'}" in text
        assert "submitted_at=2026-01-01T12:00:00+00:00" in text
        assert "scope=" not in text


class TestSubmit:
    """submit assigns sequential ids and stores the submission."""

    def test_ids_are_sequential_from_one(self) -> None:
        """The first id is 1 and each submission gets the next integer."""
        queue = new_queue()
        assert [submit(queue) for _ in range(4)] == [1, 2, 3, 4]

    def test_stores_the_submission(self) -> None:
        """Every field of the submission is on the Action, submitted_at from the queue's clock."""
        clock = FakeClock()
        queue = new_queue(clock=clock)
        action_id = queue.submit(
            tool_call_id="tc-1", tool_name="bash", args={"command": "ls"}, message="needs eyes"
        )
        assert queue[action_id] == Action(
            id=1,
            tool_call_id="tc-1",
            tool_name="bash",
            args={"command": "ls"},
            auto_approvable=False,
            status="pending",
            submitted_at=START,
            message="needs eyes",
        )

    def test_args_none_is_an_empty_dict(self) -> None:
        """Omitted or None args are stored as {}."""
        queue = new_queue()
        assert queue[submit(queue)].args == {}  # type: ignore[union-attr]
        assert queue[submit(queue, args=None)].args == {}  # type: ignore[union-attr]

    def test_str_enum_tool_name_is_stored_as_plain_str(self) -> None:
        """A str subclass tool name is stored as the plain string."""

        class Tool(enum.StrEnum):
            BASH = "bash"

        queue = new_queue()
        action = queue[queue.submit(tool_call_id=None, tool_name=Tool.BASH)]
        assert action is not None
        assert type(action.tool_name) is str
        assert action.tool_name == "bash"

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"tool_name": ""}, ValueError, "tool_name"),
            ({"tool_name": None}, TypeError, "tool_name"),
            ({"tool_name": b"bash"}, TypeError, "tool_name"),
            ({"tool_name": "bash", "auto_approvable": 1}, TypeError, "auto_approvable"),
            ({"tool_name": "bash", "auto_approvable": "yes"}, TypeError, "auto_approvable"),
            ({"tool_name": "bash", "message": 3}, TypeError, "message"),
        ],
        ids=["empty-name", "none-name", "bytes-name", "int-auto", "str-auto", "int-message"],
    )
    def test_invalid_submissions(self, kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
        """Bad submissions raise before anything is queued; no id is used."""
        recorder = Recorder()
        queue = recorder.queue()
        with pytest.raises(error, match=match):
            queue.submit(tool_call_id="tc", **kwargs)
        assert recorder.events == []
        assert submit(queue) == 1

    def test_on_submit_sees_pending_before_auto_approval(self) -> None:
        """on_submit fires with the pending action before on_approve auto-approves it."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})
        submit(queue, "read", auto=True)
        assert recorder.events == [
            ("submit", 1, "pending", None, None),
            ("approve", 1, "applying", "once", None),
        ]
        assert queue[1] is not None
        assert queue[1].status == "approved"
        assert queue[1].scope == "once"


def nested_lists(depth: int) -> list[object]:
    """``[[[...]]]``, ``depth`` lists deep."""
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _deep_clear(value: object) -> None:
    """Empty every dict and list inside ``value``, as a host reusing its objects might."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _deep_clear(item)
        value.clear()
    elif isinstance(value, list):
        for item in value:
            _deep_clear(item)
        value.clear()


class TestImmutableArgs:
    """What a person approves is what was submitted: args are copied at submit and read-only after."""

    @given(plain_json)
    @settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
    def test_host_changes_after_submit_change_nothing(self, args: object) -> None:
        """Emptying every container of the submitted object leaves the queued args as submitted."""
        queue = new_queue()
        expected = json.dumps({} if args is None else args)
        submit(queue, args=args)
        _deep_clear(args)
        assert json.dumps(queue[1].args) == expected  # type: ignore[union-attr]

    def test_on_submit_sees_the_copy(self) -> None:
        """on_submit already gets the copy, not the host's object."""
        given_args = {"paths": ["a"]}
        seen: list[object] = []
        queue = new_queue(on_submit=lambda action: seen.append(action.args))
        submit(queue, args=given_args)
        given_args["paths"].append("b")
        assert seen == [{"paths": ["a"]}]
        assert seen[0] is not given_args

    @pytest.mark.parametrize(
        "change",
        [
            lambda args: args.__setitem__("command", "rm -rf /"),
            lambda args: args.update(command="rm -rf /"),
            lambda args: args.pop("command"),
            lambda args: args.clear(),
            lambda args: args.setdefault("x", 1),
            lambda args: args["paths"].append("/"),
            lambda args: args["paths"].__setitem__(0, "/"),
            lambda args: args["paths"].extend(["/"]),
            lambda args: args["paths"].sort(),
        ],
        ids=["setitem", "update", "pop", "clear", "setdefault", "append", "list-setitem", "extend", "sort"],
    )
    def test_queued_args_are_read_only(self, change: Callable[[Any], object]) -> None:
        """Changing a queued action's args in place raises TypeError and changes nothing."""
        queue = new_queue()
        submit(queue, args={"command": "ls", "paths": ["b", "a"]})
        args = queue[1].args  # type: ignore[union-attr]
        with pytest.raises(TypeError, match="read-only"):
            change(args)
        assert queue[1].args == {"command": "ls", "paths": ["b", "a"]}  # type: ignore[union-attr]

    def test_read_only_args_behave_as_plain_json(self) -> None:
        """The copies compare, serialize, pickle and copy like the dicts and lists they hold."""
        memory_only("a durable store keeps tuples as JSON arrays")
        import pickle

        queue = new_queue()
        submit(queue, args={"command": "ls", "paths": ["a"], "n": (1, 2)})
        args = queue[1].args  # type: ignore[union-attr]
        assert args == {"command": "ls", "paths": ["a"], "n": (1, 2)}
        assert isinstance(args, dict)
        assert isinstance(args["paths"], list)
        assert json.dumps(args) == '{"command": "ls", "paths": ["a"], "n": [1, 2]}'
        assert pickle.loads(pickle.dumps(args)) == args
        changeable = args.copy()
        changeable["command"] = "pwd"
        assert type(changeable) is dict
        assert args["command"] == "ls"

    def test_circular_and_deep_args_are_accepted(self) -> None:
        """Without require_json, a cycle is copied as a cycle and deep nesting as it is."""
        memory_only("a durable store keeps JSON only")
        cyclic: dict[str, object] = {"name": "x"}
        cyclic["self"] = cyclic
        queue = new_queue()
        submit(queue, args=cyclic)
        submit(queue, args=nested_lists(5000))
        copied = queue[1].args  # type: ignore[union-attr]
        assert copied is not cyclic
        assert copied["self"] is copied
        with pytest.raises(ValueError, match=r"action 1 args\.self: expected JSON without cycles"):
            queue.snapshot()

    @pytest.mark.parametrize(
        ("args", "match"),
        [
            ({"a": [[[[]]]] * 2}, None),
            (nested_lists(300), "nested at most 256 deep"),
            ({"n": 10**5000}, "an integer of at most 4300 digits"),
        ],
        ids=["shared-list", "too-deep", "huge-int"],
    )
    def test_require_json_limits(self, args: object, match: str | None) -> None:
        """require_json copies shared parts once, and refuses nesting past 256 or digits past the limit."""
        queue = new_queue(require_json=True)
        if match is None:
            submit(queue, args=args)
            assert queue[1].args == args  # type: ignore[union-attr]
            return
        with pytest.raises(ValueError, match=match):
            submit(queue, args=args)
        assert queue.pending_actions == []


AUTO_APPROVE_CASES = [
    ({"read": True}, "read", True, "approved"),
    ({"read": True}, "read", False, "pending"),
    ({"read": True}, "other", True, "pending"),
    ({"read": 1}, "read", True, "pending"),
    ({"read": "true"}, "read", True, "pending"),
    ({"read": False}, "read", True, "pending"),
    ({}, "read", True, "pending"),
]


class TestAutoApproval:
    """Auto-approval needs auto_approvable=True and auto_approve[name] is True."""

    @pytest.mark.parametrize(
        ("auto_approve", "name", "auto", "status"),
        AUTO_APPROVE_CASES,
        ids=["both", "not-auto", "other-tool", "one", "string-true", "false", "empty"],
    )
    def test_opt_in_twice(self, auto_approve: dict[str, object], name: str, auto: bool, status: str) -> None:
        """Only the object True in auto_approve, with an auto_approvable submission, auto-approves."""
        queue = new_queue(auto_approve=auto_approve)
        assert queue[submit(queue, name, auto=auto)].status == status  # type: ignore[union-attr]

    def test_gem_example(self) -> None:
        """The gem's example: read auto-approves; read without auto and other with auto wait."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})
        queue.submit(tool_call_id="tc-1", tool_name="read", auto_approvable=True)
        queue.submit(tool_call_id="tc-2", tool_name="read")
        queue.submit(tool_call_id="tc-3", tool_name="other", auto_approvable=True)
        assert statuses(queue) == {1: "approved", 2: "pending", 3: "pending"}
        assert recorder.ids("approve") == [1]

    def test_auto_approve_is_a_read_only_copy(self) -> None:
        """Changing the mapping passed in changes nothing; the property cannot be changed."""
        given_mapping: dict[str, object] = {"read": True}
        queue = new_queue(auto_approve=given_mapping)
        given_mapping["write"] = True
        assert dict(queue.auto_approve) == {"read": True}
        with pytest.raises(TypeError):
            queue.auto_approve["write"] = True  # type: ignore[index]

    @pytest.mark.parametrize("bad", [["read"], {1: True}], ids=["list", "int-key"])
    def test_auto_approve_must_map_names(self, bad: Any) -> None:
        """auto_approve must be a mapping keyed by tool names."""
        with pytest.raises(TypeError, match="auto_approve"):
            new_queue(auto_approve=bad)


class TestDrain:
    """The drain approves from the head while eligible and never overtakes a manual item."""

    def test_stops_at_the_first_manual_item(self) -> None:
        """Auto items behind a manual one wait; the ones before it are approved."""
        queue = new_queue(auto_approve={"read": True})
        submit(queue, "read", auto=True)
        submit(queue, "bash")
        submit(queue, "read", auto=True)
        submit(queue, "read", auto=True)
        assert statuses(queue) == {1: "approved", 2: "pending", 3: "pending", 4: "pending"}

    def test_approve_and_reject_do_not_drain(self) -> None:
        """Resolving the manual head leaves the auto items behind it pending until a drain."""
        for resolve in (ApprovalQueue.approve, ApprovalQueue.reject):
            queue = new_queue(auto_approve={"read": True})
            submit(queue, "bash")
            submit(queue, "read", auto=True)
            resolve(queue, 1)
            assert queue.is_pending(2)
            assert queue.drain() is queue
            assert not queue.is_pending(2)
            assert queue[2].status == "approved"  # type: ignore[union-attr]

    def test_next_submit_drains(self) -> None:
        """The next submit drains the whole eligible head, in id order."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})
        submit(queue, "bash")
        submit(queue, "read", auto=True)
        submit(queue, "read", auto=True)
        queue.approve(1)
        submit(queue, "read", auto=True)
        assert recorder.ids("approve") == [1, 2, 3, 4]
        assert not queue.any_pending()

    def test_drain_on_empty_queue(self) -> None:
        """Draining with nothing pending does nothing and returns the queue."""
        queue = new_queue()
        assert queue.drain() is queue
        assert queue.pending_actions == []

    @bounded
    def test_an_applying_action_is_not_waited_for(self) -> None:
        """While the head is applying, the drain approves the eligible item behind it (as in the gem)."""
        queue = new_queue(auto_approve={"read": True})
        seen: list[str] = []

        def on_approve(action: Action) -> None:
            assert_unlocked(queue)
            if action.id == 1:
                submit(queue, "read", auto=True)
                seen.append(queue[2].status)  # type: ignore[union-attr]

        queue.on_approve = on_approve
        submit(queue, "bash")
        queue.approve(1)
        assert seen == ["approved"]


class TestResolution:
    """approve/reject resolve only pending ids, in id order, and record scope or feedback."""

    def queue_with(self, count: int, recorder: Recorder | None = None) -> ApprovalQueue:
        queue = recorder.queue() if recorder else new_queue()
        for _ in range(count):
            submit(queue)
        return queue

    def test_approve_returns_the_resolved_subset_in_id_order(self) -> None:
        """Unknown, duplicate, resolved and non-int ids are ignored; results are sorted by id."""
        recorder = Recorder()
        queue = self.queue_with(4, recorder)
        queue.reject(2)
        result = queue.approve(3, 1, 3, 99, 2, 0, -1, "1", None, True, 1.0)
        assert [action.id for action in result] == [1, 3]
        assert all(action.status == "approved" and action.scope == "once" for action in result)
        assert recorder.ids("approve") == [1, 3]

    def test_nothing_qualifies(self) -> None:
        """With nothing to resolve, every method returns an empty list."""
        queue = self.queue_with(0)
        assert queue.approve() == queue.approve(1) == queue.reject(1) == []
        assert queue.approve_all() == queue.reject_all() == []

    @pytest.mark.parametrize("scope", ["once", "session", "project"])
    def test_scope_is_recorded(self, scope: Any) -> None:
        """The callback already sees the scope on the applying action; the result keeps it."""
        recorder = Recorder()
        queue = self.queue_with(1, recorder)
        [action] = queue.approve(1, scope=scope)
        assert recorder.events[-1] == ("approve", 1, "applying", scope, None)
        assert (action.status, action.resolution_scope, action.feedback) == ("approved", scope, None)

    @pytest.mark.parametrize("scope", ["forever", "", None, 1, "ONCE"], ids=repr)
    def test_unknown_scope(self, scope: Any) -> None:
        """An unknown scope raises ValueError with the fixed text, and nothing is resolved."""
        recorder = Recorder()
        queue = self.queue_with(2, recorder)
        message = f"Unknown resolution scope: {scope!r}. Valid: once, session, project"
        with pytest.raises(ValueError, match="^" + message.replace(".", r"\.") + "$"):
            queue.approve(1, 2, scope=scope)
        with pytest.raises(ValueError, match="Unknown resolution scope"):
            queue.approve_all(scope=scope)
        assert recorder.ids("approve") == []
        assert statuses(queue) == {1: "pending", 2: "pending"}

    def test_reject_records_feedback(self) -> None:
        """A rejection sets feedback (seen by the callback) and leaves resolution_scope None."""
        recorder = Recorder()
        queue = self.queue_with(2, recorder)
        [first] = queue.reject(1, feedback="use ls -l instead")
        [second] = queue.reject(2)
        assert recorder.events[-2:] == [
            ("reject", 1, "applying", None, "use ls -l instead"),
            ("reject", 2, "applying", None, None),
        ]
        assert (first.status, first.scope, first.feedback) == ("rejected", None, "use ls -l instead")
        assert (second.status, second.feedback) == ("rejected", None)

    @pytest.mark.parametrize("feedback", [3, b"no", ["no"]], ids=["int", "bytes", "list"])
    def test_feedback_must_be_a_string(self, feedback: Any) -> None:
        """Non-string feedback raises TypeError and nothing is rejected."""
        queue = self.queue_with(1)
        with pytest.raises(TypeError, match="feedback"):
            queue.reject(1, feedback=feedback)
        with pytest.raises(TypeError, match="feedback"):
            queue.reject_all(feedback=feedback)
        assert queue.is_pending(1)

    def test_approve_all_and_reject_all(self) -> None:
        """approve_all/reject_all resolve every pending action in id order."""
        recorder = Recorder()
        queue = self.queue_with(3, recorder)
        queue.reject(2)
        assert [a.id for a in queue.approve_all(scope="session")] == [1, 3]
        submit(queue)
        submit(queue)
        assert [a.id for a in queue.reject_all(feedback="later")] == [4, 5]
        assert statuses(queue) == {1: "approved", 2: "rejected", 3: "approved", 4: "rejected", 5: "rejected"}
        assert queue[4].feedback == "later"  # type: ignore[union-attr]

    def test_resolved_actions_stay_retrievable(self) -> None:
        """queue[id] returns resolved actions too; they are no longer pending."""
        queue = self.queue_with(2)
        queue.approve(1)
        assert queue[1].is_approved  # type: ignore[union-attr]
        assert [a.id for a in queue.pending_actions] == [2]
        assert queue.approve(1) == []


class TestCallbackFailures:
    """A raising callback rolls its action back to pending and propagates."""

    @pytest.mark.parametrize("error", [Boom("x"), Interrupt()], ids=["exception", "base-exception"])
    def test_rollback(self, error: BaseException) -> None:
        """The action is pending again, with no scope or feedback, and the error propagates."""
        recorder = Recorder()
        queue = recorder.queue()
        submit(queue)
        recorder.raise_on[("approve", 1)] = error
        with pytest.raises(type(error)):
            queue.approve(1, scope="project")
        assert queue[1] is not None
        assert (queue[1].status, queue[1].scope, queue[1].feedback) == ("pending", None, None)
        recorder.raise_on[("reject", 1)] = error
        with pytest.raises(type(error)):
            queue.reject(1, feedback="no")
        assert (queue[1].status, queue[1].scope, queue[1].feedback) == ("pending", None, None)
        del recorder.raise_on[("approve", 1)]
        assert [a.id for a in queue.approve(1)] == [1]

    def test_earlier_stay_resolved_later_untouched(self) -> None:
        """Resolving 1..3 where 2's callback raises: 1 approved, 2 rolled back, 3 never tried."""
        recorder = Recorder()
        queue = recorder.queue()
        for _ in range(3):
            submit(queue)
        recorder.raise_on[("approve", 2)] = Boom()
        with pytest.raises(Boom):
            queue.approve(1, 2, 3)
        assert statuses(queue) == {1: "approved", 2: "pending", 3: "pending"}
        assert recorder.ids("approve") == [1, 2]

    def test_auto_approval_failure_propagates_from_submit(self) -> None:
        """A raising on_approve during the drain propagates out of submit; the action stays pending."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})
        recorder.raise_on[("approve", 1)] = Boom()
        with pytest.raises(Boom):
            submit(queue, "read", auto=True)
        assert queue.is_pending(1)
        del recorder.raise_on[("approve", 1)]
        submit(queue, "read", auto=True)
        assert statuses(queue) == {1: "approved", 2: "approved"}

    def test_on_submit_failure_leaves_the_action_pending_without_draining(self) -> None:
        """If on_submit raises, the id is used, the action stays pending and that submit does not drain."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})
        recorder.raise_on[("submit", 1)] = Boom()
        with pytest.raises(Boom):
            submit(queue, "read", auto=True)
        assert queue.is_pending(1)
        assert recorder.ids("approve") == []
        assert submit(queue, "read", auto=True) == 2
        assert statuses(queue) == {1: "approved", 2: "approved"}


class TestReentrancy:
    """Callbacks may call back into the queue without deadlock."""

    @bounded
    def test_submit_from_on_approve_during_drain(self) -> None:
        """An auto-approval that submits more eligible work gets it approved before submit returns."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})

        def on_approve(action: Action) -> None:
            recorder.on_approve(action)
            if action.id < 3:
                submit(queue, "read", auto=True)

        queue.on_approve = on_approve
        submit(queue, "read", auto=True)
        assert statuses(queue) == {1: "approved", 2: "approved", 3: "approved"}
        assert recorder.ids("approve") == [1, 2, 3]
        assert recorder.ids("submit") == [1, 2, 3]

    @bounded
    def test_approve_from_on_submit(self) -> None:
        """on_submit may approve the action it is told about."""
        recorder = Recorder()
        queue = recorder.queue()

        def on_submit(action: Action) -> None:
            recorder.on_submit(action)
            queue.approve(action.id, scope="session")

        queue.on_submit = on_submit
        submit(queue)
        assert queue[1].status == "approved"  # type: ignore[union-attr]
        assert recorder.events == [
            ("submit", 1, "pending", None, None),
            ("approve", 1, "applying", "session", None),
        ]

    @bounded
    def test_submit_and_drain_from_on_submit(self) -> None:
        """on_submit may submit and drain; the eligible head still waits for its own on_submit."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})

        def on_submit(action: Action) -> None:
            recorder.on_submit(action)
            if action.id == 1:
                submit(queue, "read", auto=True)
                queue.drain()
                assert queue.is_pending(1)

        queue.on_submit = on_submit
        submit(queue, "read", auto=True)
        assert statuses(queue) == {1: "approved", 2: "approved"}
        assert recorder.ids("approve") == [1, 2]
        assert recorder.events.index(("submit", 1, "pending", None, None)) < recorder.events.index(
            ("approve", 1, "applying", "once", None)
        )

    @bounded
    def test_reading_inside_callbacks(self) -> None:
        """Callbacks can read the queue; the applying action is neither pending nor resolved."""
        queue = new_queue()
        seen: list[object] = []

        def on_approve(action: Action) -> None:
            assert_unlocked(queue)
            seen.extend([queue.is_pending(action.id), queue.any_pending(), queue[action.id], repr(queue)])

        queue.on_approve = on_approve
        submit(queue)
        [approved] = queue.approve(1)
        assert seen[:2] == [False, False]
        assert seen[2] == dataclasses.replace(approved, status="applying", resolved_at=None)
        assert seen[3] == "<ApprovalQueue pending=0 next_id=2>"


class TestReading:
    """Readers never raise and return copies."""

    @pytest.mark.parametrize("key", [0, -1, 2, "1", None, True, 1.0, [1], {}], ids=repr)
    def test_unknown_ids(self, key: Any) -> None:
        """get and [] return None for unknown and non-int ids; is_pending is False."""
        queue = new_queue()
        submit(queue)
        assert queue.get(key) is None
        assert queue[key] is None
        assert queue.is_pending(key) is False

    def test_pending_actions_is_a_fresh_list(self) -> None:
        """Changing the returned list does not change the queue."""
        queue = new_queue()
        submit(queue)
        pending = queue.pending_actions
        pending.clear()
        assert [a.id for a in queue.pending_actions] == [1]
        assert queue.pending_actions is not queue.pending_actions

    def test_any_pending_and_repr(self) -> None:
        """any_pending follows the queue; the repr shows the pending count and the next id."""
        queue = new_queue()
        assert not queue.any_pending()
        assert repr(queue) == "<ApprovalQueue pending=0 next_id=1>"
        for _ in range(3):
            submit(queue)
        queue.approve(2)
        assert queue.any_pending()
        assert repr(queue) == "<ApprovalQueue pending=2 next_id=4>"

    def test_callbacks_are_assignable(self) -> None:
        """on_submit/on_approve/on_reject can be set after construction."""
        queue = new_queue()
        seen: list[int] = []
        queue.on_submit = lambda action: seen.append(action.id)
        submit(queue)
        assert seen == [1]


UNPERSISTABLE_SUBMISSIONS: list[tuple[dict[str, Any], str]] = [
    ({"args": {"when": START}}, "expected a JSON value"),
    ({"args": {1: "x"}}, "string keys"),
    ({"args": {"x": float("nan")}}, "finite"),
    ({"args": [float("inf")]}, "finite"),
    ({"args": START}, "expected a JSON value"),
    ({"tool_call_id": 1.5}, "tool_call_id"),
    ({"tool_call_id": True}, "tool_call_id"),
]
UNPERSISTABLE_SUBMISSION_IDS = [
    "datetime-leaf",
    "int-key",
    "nan",
    "inf-in-list",
    "datetime-args",
    "float-call-id",
    "bool-call-id",
]

JSON_ARGS: list[object] = [
    '{"command": "ls"}',
    ["ls", "-la"],
    42,
    2.5,
    True,
    False,
    "",
    [],
    {"nested": [{"deep": [1, None, 2.5]}]},
]
JSON_ARG_IDS = ["raw-json", "list", "int", "float", "true", "false", "empty-text", "empty-list", "nested"]


class TestJsonArgs:
    """A queued action's args may be any JSON value, as in the gem; only what JSON cannot carry is refused."""

    @pytest.mark.parametrize("args", JSON_ARGS, ids=JSON_ARG_IDS)
    def test_any_json_value_round_trips(self, args: object) -> None:
        """Strings, lists, numbers and bools as args are kept, snapshotted and restored as themselves."""
        queue = new_queue()
        submit(queue, args=args)
        assert json.dumps(queue[1].args) == json.dumps(args)  # type: ignore[union-attr]
        data = json.loads(json.dumps(queue.snapshot()))
        assert json.dumps(data["pending_actions"][0]["args"]) == json.dumps(args)
        restored = new_queue()
        assert restored.restore_pending(data) == 1
        assert json.dumps(restored[1].args) == json.dumps(args)  # type: ignore[union-attr]
        assert restored.pending_actions == queue.pending_actions

    @pytest.mark.parametrize(("kwargs", "match"), UNPERSISTABLE_SUBMISSIONS, ids=UNPERSISTABLE_SUBMISSION_IDS)
    def test_require_json_refuses_at_submit(self, kwargs: dict[str, Any], match: str) -> None:
        """With require_json=True, submit refuses what a snapshot cannot carry, naming the call."""
        recorder = Recorder()
        queue = recorder.queue(require_json=True)
        with pytest.raises(ValueError, match=match) as info:
            queue.submit(tool_name="bash", **{"tool_call_id": "tc", **kwargs})
        assert str(info.value).startswith("cannot queue 'bash' (tool_call_id ")
        assert not isinstance(info.value, InvalidSnapshotError)
        assert recorder.events == []
        assert queue.pending_actions == []
        assert submit(queue) == 1

    @pytest.mark.parametrize("args", JSON_ARGS, ids=JSON_ARG_IDS)
    def test_require_json_accepts_json_values(self, args: object) -> None:
        """With require_json=True, any JSON value is queued and its snapshot restores."""
        queue = new_queue(require_json=True)
        assert queue.require_json is True
        submit(queue, args=args)
        assert new_queue().restore_pending(queue.snapshot()) == 1

    @pytest.mark.parametrize("value", [1, "yes", None], ids=repr)
    def test_require_json_is_a_bool(self, value: Any) -> None:
        """require_json must be True or False."""
        with pytest.raises(TypeError, match="require_json"):
            new_queue(require_json=value)


class TestSnapshot:
    """snapshot() writes the gem's format: pending actions only, JSON-safe."""

    def test_format(self) -> None:
        """The exact snapshot of a queue with resolved and pending actions."""
        clock = FakeClock()
        queue = new_queue(clock=clock)
        submit(queue, "bash", args={"command": "ls"}, message="needs eyes")
        clock.advance(seconds=1)
        submit(queue, "write", auto=True)
        submit(queue, "other")
        queue.approve(1)
        assert queue.snapshot() == {
            "version": 2,
            "next_id": 3,
            "pending_actions": [
                {
                    "id": 2,
                    "tool_call_id": "tc-write",
                    "tool_name": "write",
                    "args": {},
                    "auto_approvable": True,
                    "message": None,
                    "submitted_at": "2026-01-01T12:00:01+00:00",
                    "why": None,
                },
                {
                    "id": 3,
                    "tool_call_id": "tc-other",
                    "tool_name": "other",
                    "args": {},
                    "auto_approvable": False,
                    "message": None,
                    "submitted_at": "2026-01-01T12:00:01+00:00",
                    "why": None,
                },
            ],
        }

    def test_round_trip_through_json(self) -> None:
        """A snapshot survives json and restores the same pending actions with their ids."""
        queue = new_queue(auto_approve={"read": True})
        submit(queue, "bash", args={"command": "ls", "n": [1, 2.5, None, True]}, message="m")
        submit(queue, "read", auto=True)
        queue.submit(tool_call_id=7, tool_name="x", args={"ü": "ß"})
        queue.approve(2)
        data = json.loads(json.dumps(queue.snapshot()))
        recorder = Recorder()
        restored = recorder.queue(auto_approve={"read": True})
        assert restored.restore_pending(data) == 2
        assert restored.pending_actions == queue.pending_actions
        assert restored.snapshot() == queue.snapshot()
        assert recorder.events == []

    def test_str_mixin_enum_values_snapshot_as_their_text(self) -> None:
        """Strings whose str() is not their text (str-mixin Enum members) are written as their text."""

        class Mode(str, enum.Enum):  # noqa: UP042  # str() of a member is "Mode.FAST", not "fast"
            FAST = "fast"

        queue = new_queue()
        queue.submit(tool_call_id="tc-1", tool_name="x", args={Mode.FAST: Mode.FAST}, message=Mode.FAST)
        entry = queue.snapshot()["pending_actions"][0]
        assert (entry["args"], entry["message"]) == ({"fast": "fast"}, "fast")
        assert json.loads(json.dumps(entry["args"])) == {"fast": "fast"}

    def test_snapshot_copies_args(self) -> None:
        """The snapshot's args are a copy: changing them changes nothing in the queue."""
        queue = new_queue()
        submit(queue, args={"paths": ["a"]})
        snap = queue.snapshot()
        snap["pending_actions"][0]["args"]["paths"].append("b")
        assert queue[1].args == {"paths": ["a"]}  # type: ignore[union-attr]

    @pytest.mark.parametrize(("kwargs", "match"), UNPERSISTABLE_SUBMISSIONS, ids=UNPERSISTABLE_SUBMISSION_IDS)
    def test_unpersistable_values(self, kwargs: dict[str, Any], match: str) -> None:
        """Values a restore could not read make snapshot() raise ValueError naming the action."""
        memory_only("a durable store refuses them at submit")
        queue = new_queue()
        queue.submit(tool_name="bash", **{"tool_call_id": "tc", **kwargs})
        with pytest.raises(ValueError, match=match) as info:
            queue.snapshot()
        assert "action 1" in str(info.value)
        assert not isinstance(info.value, InvalidSnapshotError)
        field = "tool_call_id" if "tool_call_id" in kwargs else "args"
        assert str(info.value).endswith(f"({field} must be JSON-safe to be snapshotted)")

    def test_applying_actions_are_left_out(self) -> None:
        """An action whose callback runs is not pending, so it is not in the snapshot."""
        queue = new_queue()
        snaps: list[dict[str, Any]] = []
        queue.on_approve = lambda action: snaps.append(queue.snapshot())
        submit(queue)
        submit(queue)
        queue.approve(1)
        assert [entry["id"] for entry in snaps[0]["pending_actions"]] == [2]

    @given(queue_snapshots())
    @settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
    def test_valid_snapshots_round_trip(self, snapshot: dict[str, Any]) -> None:
        """Restoring any valid snapshot then snapshotting gives the same actions back, through json."""
        queue = new_queue(clock=FakeClock())
        count = queue.restore_pending(json.loads(json.dumps(snapshot)))
        assert count == len(snapshot["pending_actions"])
        again = queue.snapshot()
        assert json.loads(json.dumps(again)) == again
        assert [e["id"] for e in again["pending_actions"]] == sorted(
            e["id"] for e in snapshot["pending_actions"]
        )
        other = new_queue()
        other.restore_pending(again)
        assert other.pending_actions == queue.pending_actions


RESTORE_NEXT_ID_CASES = [
    (0, [], 1),
    (5, [], 6),
    (3, [2, 3], 4),
    (1, [7, 4], 8),
    (10, [2], 11),
]


def _invalid_id(snapshot: object, path: str) -> str:
    """A case's id: the bad field and its value, or the required field that is missing."""
    nodes = nodes_by_path(snapshot)
    return f"{path or 'snapshot'}={nodes[path]!r}" if path in nodes else f"{path}-missing"


INVALID_SNAPSHOTS: list[tuple[object, str]] = [
    (None, ""),
    ([], ""),
    ({"version": 1, "next_id": 0}, "pending_actions"),
    ({"version": 3, "next_id": 0, "pending_actions": []}, "version"),
    ({"version": "1", "next_id": 0, "pending_actions": []}, "version"),
    ({"version": 1, "next_id": -1, "pending_actions": []}, "next_id"),
    ({"version": 1, "next_id": True, "pending_actions": []}, "next_id"),
    ({"version": 1, "next_id": 1.0, "pending_actions": []}, "next_id"),
    ({"version": 1, "next_id": 0, "pending_actions": {}}, "pending_actions"),
    ({"version": 1, "next_id": 0, "pending_actions": [], "extra": 1}, "extra"),
    ({"version": 1, "next_id": 0, "pending_actions": [1]}, "pending_actions[0]"),
    ({"version": 1, "next_id": 0, "pending_actions": [{"tool_name": "x"}]}, "pending_actions[0].id"),
    ({"version": 1, "next_id": 0, "pending_actions": [{"id": 0, "tool_name": "x"}]}, "pending_actions[0].id"),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": True, "tool_name": "x"}]},
        "pending_actions[0].id",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": "1", "tool_name": "x"}]},
        "pending_actions[0].id",
    ),
    (
        {
            "version": 1,
            "next_id": 0,
            "pending_actions": [{"id": 1, "tool_name": "x"}, {"id": 1, "tool_name": "y"}],
        },
        "pending_actions[1].id",
    ),
    ({"version": 1, "next_id": 0, "pending_actions": [{"id": 1}]}, "pending_actions[0].tool_name"),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": ""}]},
        "pending_actions[0].tool_name",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": None}]},
        "pending_actions[0].tool_name",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "args": [1, {2: 3}]}]},
        "pending_actions[0].args[1]",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "args": {"a": {1: 2}}}]},
        "pending_actions[0].args.a",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "auto_approvable": 1}]},
        "pending_actions[0].auto_approvable",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "message": 3}]},
        "pending_actions[0].message",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "tool_call_id": 1.5}]},
        "pending_actions[0].tool_call_id",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "tool_call_id": False}]},
        "pending_actions[0].tool_call_id",
    ),
    (
        {
            "version": 1,
            "next_id": 0,
            "pending_actions": [{"id": 1, "tool_name": "x", "submitted_at": "yesterday"}],
        },
        "pending_actions[0].submitted_at",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "submitted_at": 0}]},
        "pending_actions[0].submitted_at",
    ),
    (
        {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "status": "approved"}]},
        "pending_actions[0].status",
    ),
]


def _entry(**fields: object) -> dict[str, object]:
    """A snapshot holding one entry with id 1 and tool bash, changed by ``fields``."""
    return {"version": 1, "next_id": 1, "pending_actions": [{"id": 1, "tool_name": "bash", **fields}]}


HOSTILE_SNAPSHOTS: list[tuple[str, object, str, str]] = [
    ("huge-next-id", {"version": 1, "next_id": 10**5000, "pending_actions": []}, "next_id", "at most"),
    ("next-id-past-64-bits", {"version": 1, "next_id": 2**63, "pending_actions": []}, "next_id", "at most"),
    ("huge-id", _entry(id=10**5000), "pending_actions[0].id", "at most"),
    ("id-past-64-bits", _entry(id=2**63), "pending_actions[0].id", "at most"),
    ("huge-call-id", _entry(tool_call_id=-(10**5000)), "pending_actions[0].tool_call_id", "4300 digits"),
    ("huge-int-in-args", _entry(args={"n": [10**5000]}), "pending_actions[0].args.n[0]", "4300 digits"),
    ("nan-in-args", _entry(args=[float("nan")]), "pending_actions[0].args[0]", "finite"),
    ("deep-list-args", _entry(args=nested(5000)), "pending_actions[0].args" + "[0]" * 256, "256 deep"),
    ("deep-dict-args", _entry(args=nested(3000, "dict")), "pending_actions[0].args" + ".k" * 256, "256 deep"),
    ("deep-extra-key", {**_entry(), "extra": nested(5000)}, "extra", "no such key"),
    ("deep-version", {**_entry(), "version": nested(5000)}, "version", "1"),
    ("deep-entry", {**_entry(), "pending_actions": [nested(5000)]}, "pending_actions[0]", "an object"),
]


class TestRestore:
    """restore_pending validates everything, then restores pending actions quietly."""

    @pytest.mark.parametrize(
        ("next_id", "ids", "expected"),
        RESTORE_NEXT_ID_CASES,
        ids=["fresh", "only-next-id", "next-id-wins-ties", "largest-id-wins", "next-id-larger"],
    )
    def test_next_submit_id(self, next_id: int, ids: list[int], expected: int) -> None:
        """The next submit gets max(next_id, largest restored id) + 1."""
        queue = new_queue()
        snapshot = {
            "version": 1,
            "next_id": next_id,
            "pending_actions": [{"id": i, "tool_name": "bash"} for i in ids],
        }
        assert queue.restore_pending(snapshot) == len(ids)
        assert submit(queue) == expected
        assert [a.id for a in queue.pending_actions] == [*sorted(ids), expected]

    def test_fires_nothing_and_drains_nothing(self) -> None:
        """Restored eligible actions wait, with no on_submit, until the next drain."""
        recorder = Recorder()
        queue = recorder.queue(auto_approve={"read": True})
        snapshot = {
            "version": 1,
            "next_id": 2,
            "pending_actions": [{"id": 1, "tool_name": "read", "auto_approvable": True}],
        }
        assert queue.restore_pending(snapshot) == 1
        assert recorder.events == []
        assert queue.is_pending(1)
        queue.drain()
        assert recorder.events == [("approve", 1, "applying", "once", None)]

    def test_defaults_for_missing_and_null_keys(self) -> None:
        """Missing or null optional keys become {}, False, None and the queue's clock."""
        queue = new_queue(clock=FakeClock())
        entry = {"id": 3, "tool_name": "bash", "tool_call_id": None, "args": None, "message": None}
        queue.restore_pending({"version": 1, "next_id": 3, "pending_actions": [entry]})
        assert queue[3] == Action(
            id=3,
            tool_call_id=None,
            tool_name="bash",
            args={},
            auto_approvable=False,
            status="pending",
            submitted_at=START,
            message=None,
        )

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2026-01-01T12:00:00", START),
            ("2026-01-01T12:00:00Z", START),
            ("2026-01-01T14:00:00+02:00", START),
            ("2026-01-01T12:00:00.250000+00:00", START + timedelta(milliseconds=250)),
        ],
        ids=["naive-is-utc", "zulu", "offset", "fraction"],
    )
    def test_submitted_at(self, text: str, expected: datetime) -> None:
        """ISO 8601 timestamps are read; a naive one is UTC."""
        queue = new_queue()
        queue.restore_pending(
            {
                "version": 1,
                "next_id": 0,
                "pending_actions": [{"id": 1, "tool_name": "x", "submitted_at": text}],
            }
        )
        submitted_at = queue[1].submitted_at  # type: ignore[union-attr]
        assert submitted_at == expected
        assert submitted_at.tzinfo is not None

    def test_accepts_an_int_tool_call_id(self) -> None:
        """tool_call_id may be an integer, as the gem allows."""
        queue = new_queue()
        queue.restore_pending(
            {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x", "tool_call_id": 42}]}
        )
        assert queue[1].tool_call_id == 42  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("snapshot", "path"), INVALID_SNAPSHOTS, ids=[_invalid_id(s, p) for s, p in INVALID_SNAPSHOTS]
    )
    def test_invalid(self, snapshot: object, path: str) -> None:
        """Invalid input raises InvalidSnapshotError naming the path; nothing is restored."""
        queue = new_queue()
        error = assert_snapshot_error(queue.restore_pending, snapshot, path)
        assert isinstance(error, PermissionsError)
        assert isinstance(error, ValueError)
        assert queue.pending_actions == []
        assert submit(queue) == 1

    @pytest.mark.parametrize("resolve", [False, True], ids=["pending", "resolved"])
    def test_into_a_non_empty_queue(self, resolve: bool) -> None:
        """A queue that holds any action refuses to restore (ValueError), and is unchanged."""
        queue = new_queue()
        submit(queue)
        if resolve:
            queue.approve(1)
        before = queue.snapshot()
        with pytest.raises(ValueError, match="already holds") as info:
            queue.restore_pending(
                {"version": 1, "next_id": 0, "pending_actions": [{"id": 5, "tool_name": "x"}]}
            )
        assert not isinstance(info.value, InvalidSnapshotError)
        assert queue.snapshot() == before
        assert queue[5] is None

    def test_twice(self) -> None:
        """Restoring a second time fails once ids are used, even with no actions restored."""
        queue = new_queue()
        queue.restore_pending({"version": 1, "next_id": 4, "pending_actions": []})
        with pytest.raises(ValueError, match="already holds"):
            queue.restore_pending({"version": 1, "next_id": 0, "pending_actions": []})

    @pytest.mark.parametrize(
        ("snapshot", "path", "match"),
        [case[1:] for case in HOSTILE_SNAPSHOTS],
        ids=[case[0] for case in HOSTILE_SNAPSHOTS],
    )
    def test_hostile_values(self, snapshot: object, path: str, match: str) -> None:
        """Digits past the limit, 64 bits, NaN, deep nesting: InvalidSnapshotError, a short message."""
        queue = new_queue()
        error = assert_snapshot_error(queue.restore_pending, snapshot, path, match=match)
        assert len(str(error)) <= 2 * len(path) + 400
        assert queue.pending_actions == []
        assert submit(queue) == 1

    @pytest.mark.parametrize(
        "snapshot",
        [
            HostileDict(version=1),
            {"version": 1, "next_id": 0, "pending_actions": HostileList([{}])},
            {"version": 1, "next_id": 0, "pending_actions": [HostileDict(id=1, tool_name="bash")]},
            {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": HostileStr("bash")}]},
        ],
        ids=["root", "entries", "entry", "tool-name"],
    )
    def test_objects_that_raise_when_read(self, snapshot: object) -> None:
        """A mapping, list or str subclass that raises when read: InvalidSnapshotError, nothing restored."""
        queue = new_queue()
        assert assert_reads_or_rejects(queue.restore_pending, snapshot) is None
        assert queue.pending_actions == []
        assert submit(queue) == 1

    @given(hostile_snapshots(queue_snapshots()))
    @settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    def test_fuzz_hostile_nodes(self, snapshot: object) -> None:
        """A valid snapshot with one hostile node or key restores or raises InvalidSnapshotError only."""
        queue = new_queue(clock=FakeClock())
        if assert_reads_or_rejects(queue.restore_pending, snapshot) is None:
            assert queue.pending_actions == []

    @given(queue_snapshots(), st.data())
    @settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    def test_fuzz_hostile_values(self, snapshot: dict[str, Any], data: st.DataObject) -> None:
        """A hostile value anywhere in a valid snapshot restores, or raises InvalidSnapshotError only."""
        hostile = mutate(snapshot, data, values=hostile_values)
        queue = new_queue(clock=FakeClock())
        try:
            count = queue.restore_pending(hostile)
        except InvalidSnapshotError as error:
            message, path = str(error), error.path
            assert queue.pending_actions == []
            assert submit(queue) == 1
            assert len(message) <= 2 * len(path) + 400
        else:
            assert len(queue.pending_actions) == count
            assert json.loads(json.dumps(queue.snapshot()))["next_id"] >= count

    @given(queue_snapshot_like)
    @settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
    def test_fuzz(self, snapshot: object) -> None:
        """Any JSON-like input restores or raises InvalidSnapshotError; a failure leaves the queue empty."""
        queue = new_queue(clock=FakeClock())
        try:
            count = queue.restore_pending(snapshot)
        except InvalidSnapshotError:
            assert queue.pending_actions == []
            assert submit(queue) == 1
        else:
            assert len(queue.pending_actions) == count
            assert json.loads(json.dumps(queue.snapshot())) == queue.snapshot()
            if count:
                with pytest.raises(ValueError, match="already holds"):
                    queue.restore_pending(snapshot)


class TestWait:
    """wait blocks until the action is resolved, woken by any thread, without polling."""

    def test_already_resolved_and_unknown(self) -> None:
        """A resolved action is returned at once; an unknown id gives None."""
        queue = new_queue()
        submit(queue)
        queue.reject(1)
        assert queue.wait(1, timeout=0).status == "rejected"  # type: ignore[union-attr]
        assert queue.wait(2) is None
        assert queue.wait("1") is None

    @pytest.mark.parametrize("how", ["approve", "reject", "auto"])
    def test_woken_by_another_thread(self, how: str) -> None:
        """wait returns the resolved action when another thread approves, rejects or auto-approves it."""
        queue = new_queue(auto_approve={"read": True})
        submit(queue, "bash")
        submit(queue, "read", auto=True)
        target = 1 if how != "auto" else 2
        results: list[tuple[Action | None, float]] = []
        waiter = start(lambda: results.append((queue.wait(target, timeout=JOIN_TIMEOUT), time.monotonic())))
        time.sleep(0.02)
        resolved_at = time.monotonic()
        if how == "approve":
            start(lambda: queue.approve(1)).join(JOIN_TIMEOUT)
        elif how == "reject":
            start(lambda: queue.reject(1, feedback="no")).join(JOIN_TIMEOUT)
        else:
            queue.approve(1)
            start(queue.drain).join(JOIN_TIMEOUT)
        join(waiter)
        expected = {"approve": "approved", "reject": "rejected", "auto": "approved"}[how]
        [(action, woke_at)] = results
        assert action is not None
        assert action.status == expected
        assert woke_at - resolved_at < WOKEN

    def test_times_out(self) -> None:
        """A still-pending action raises TimeoutError after about timeout seconds."""
        queue = new_queue()
        submit(queue)
        began = time.monotonic()
        with pytest.raises(TimeoutError, match="action 1"):
            queue.wait(1, timeout=0.05)
        assert 0.05 <= time.monotonic() - began < 0.05 + 1.0

    def test_a_rollback_does_not_end_the_wait(self) -> None:
        """A resolution that rolls back leaves the waiter waiting (it then times out)."""
        recorder = Recorder()
        queue = recorder.queue()
        submit(queue)
        recorder.raise_on[("approve", 1)] = Boom()
        errors: list[BaseException] = []

        def wait() -> None:
            try:
                queue.wait(1, timeout=0.3)
            except TimeoutError as error:
                errors.append(error)

        waiter = start(wait)
        time.sleep(0.02)
        with pytest.raises(Boom):
            queue.approve(1)
        join(waiter)
        assert len(errors) == 1

    def test_many_waiters_all_wake(self) -> None:
        """Every thread waiting on the action wakes when it is approved."""
        queue = new_queue()
        submit(queue)
        results: list[str] = []
        waiters = [
            start(lambda: results.append(queue.wait(1, timeout=JOIN_TIMEOUT).status))  # type: ignore[union-attr]
            for _ in range(8)
        ]
        time.sleep(0.02)
        resolved_at = time.monotonic()
        queue.approve(1)
        join(*waiters)
        assert time.monotonic() - resolved_at < WOKEN
        assert results == ["approved"] * 8

    @pytest.mark.parametrize("timeout", [math.inf, 1e300], ids=["inf", "huge"])
    def test_unbounded_timeout_waits(self, timeout: float) -> None:
        """A timeout longer than threads can wait (infinity) waits without one, and returns the action."""
        queue = new_queue()
        submit(queue)
        results: list[Action | None] = []
        errors: list[BaseException] = []

        def wait() -> None:
            try:
                results.append(queue.wait(1, timeout=timeout))
            except BaseException as error:  # reported by the assertion below
                errors.append(error)

        waiter = start(wait)
        time.sleep(0.02)
        queue.approve(1)
        join(waiter)
        assert errors == []
        assert [action.status for action in results if action is not None] == ["approved"]

    @pytest.mark.parametrize(
        ("timeout", "error"), [(-1, ValueError), ("1", TypeError)], ids=["negative", "str"]
    )
    def test_bad_timeout(self, timeout: Any, error: type[Exception]) -> None:
        """A negative or non-numeric timeout is refused."""
        queue = new_queue()
        submit(queue)
        with pytest.raises(error, match="timeout"):
            queue.wait(1, timeout=timeout)


class TestWaitAsync:
    """wait_async never blocks the loop and is woken from any thread."""

    def test_woken_by_another_thread(self) -> None:
        """An approval on another thread completes the awaiting coroutine; the loop stays responsive."""
        queue = new_queue()
        submit(queue)

        async def main() -> tuple[Action | None, int]:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.001)

            task = asyncio.create_task(ticker())
            threading.Timer(0.05, queue.approve, args=(1,)).start()
            action = await queue.wait_async(1, timeout=JOIN_TIMEOUT)
            task.cancel()
            return action, ticks

        action, ticks = asyncio.run(main())
        assert action is not None
        assert action.status == "approved"
        assert ticks > 5

    def test_already_resolved_and_unknown(self) -> None:
        """A resolved action returns at once; an unknown id gives None."""
        queue = new_queue()
        submit(queue)
        queue.approve(1)

        async def main() -> tuple[Action | None, Action | None]:
            return await queue.wait_async(1), await queue.wait_async(9)

        resolved, unknown = asyncio.run(main())
        assert resolved is not None
        assert resolved.status == "approved"
        assert unknown is None

    def test_times_out(self) -> None:
        """A still-pending action raises TimeoutError, and the waiter is unregistered."""
        queue = new_queue()
        submit(queue)
        with pytest.raises(TimeoutError, match="action 1"):
            asyncio.run(queue.wait_async(1, timeout=0.02))
        assert queue._async_waiters == {}
        assert queue.is_pending(1)

    def test_cancellation_leaves_the_action_pending(self) -> None:
        """Cancelling the awaiting task changes nothing and unregisters the waiter."""
        queue = new_queue()
        submit(queue)

        async def main() -> None:
            task = asyncio.create_task(queue.wait_async(1))
            await asyncio.sleep(0.01)
            assert len(queue._async_waiters[1]) == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        assert queue.is_pending(1)
        assert queue._async_waiters == {}
        assert [a.id for a in queue.approve(1)] == [1]

    def test_many_waiters_on_two_loops(self) -> None:
        """Waiters on different event loops (threads) all wake from one approval."""
        queue = new_queue()
        submit(queue)
        results: list[str] = []

        async def waiters() -> None:
            actions = await asyncio.gather(*(queue.wait_async(1, timeout=JOIN_TIMEOUT) for _ in range(3)))
            results.extend(a.status for a in actions if a is not None)

        threads = [start(lambda: asyncio.run(waiters())) for _ in range(2)]
        deadline = time.monotonic() + JOIN_TIMEOUT
        while sum(len(w) for w in queue._async_waiters.values()) < 6 and time.monotonic() < deadline:
            time.sleep(0.005)
        queue.approve(1)
        join(*threads)
        assert results == ["approved"] * 6

    def test_closed_loop_is_tolerated(self) -> None:
        """A waiter left on a closed event loop does not break the resolution."""
        queue = new_queue()
        submit(queue)
        loop = asyncio.new_event_loop()
        queue._async_waiters[1] = [(loop, loop.create_future())]
        loop.close()
        assert [a.id for a in queue.approve(1)] == [1]


EXPIRY_CASES = [
    (timedelta(seconds=59), []),
    (timedelta(seconds=60), []),
    (timedelta(seconds=61), [1]),
    (timedelta(seconds=121), [1, 2]),
]


class TestExpirePending:
    """expire_pending rejects actions pending for longer than the given age."""

    @pytest.mark.parametrize(
        ("elapsed", "expected"),
        EXPIRY_CASES,
        ids=["before-boundary", "at-boundary", "after-boundary", "both"],
    )
    def test_boundary(self, elapsed: timedelta, expected: list[int]) -> None:
        """now - submitted_at > older_than expires; exactly at the boundary does not."""
        clock = FakeClock()
        recorder = Recorder()
        queue = recorder.queue(clock=clock)
        submit(queue)
        clock.advance(seconds=60)
        submit(queue)
        clock.now = START + elapsed
        expired = queue.expire_pending(timedelta(seconds=60))
        assert [a.id for a in expired] == expected
        assert all(a.status == "rejected" and a.feedback == "expired" for a in expired)
        assert recorder.ids("reject") == expected
        assert [a.id for a in queue.pending_actions] == [i for i in (1, 2) if i not in expected]

    def test_only_pending_and_raising_callback(self) -> None:
        """Resolved actions are skipped; a raising on_reject stops there like reject does."""
        clock = FakeClock()
        recorder = Recorder()
        queue = recorder.queue(clock=clock)
        for _ in range(4):
            submit(queue)
        queue.approve(1)
        recorder.raise_on[("reject", 3)] = Boom()
        clock.advance(hours=1)
        with pytest.raises(Boom):
            queue.expire_pending(timedelta(0))
        assert statuses(queue) == {1: "approved", 2: "rejected", 3: "pending", 4: "pending"}

    @pytest.mark.parametrize(
        ("value", "error"),
        [(60, TypeError), (timedelta(seconds=-1), ValueError)],
        ids=["int-not-timedelta", "negative"],
    )
    def test_bad_age(self, value: Any, error: type[Exception]) -> None:
        """older_than must be a non-negative timedelta."""
        with pytest.raises(error, match="older_than"):
            new_queue().expire_pending(value)

    def test_restored_naive_and_offset_times(self) -> None:
        """Restored timestamps in any offset compare correctly with the clock."""
        clock = FakeClock(START + timedelta(minutes=10))
        queue = new_queue(clock=clock)
        plus_two = START.astimezone(timezone(timedelta(hours=2)))
        queue.restore_pending(
            {
                "version": 1,
                "next_id": 0,
                "pending_actions": [
                    {"id": 1, "tool_name": "x", "submitted_at": plus_two.isoformat()},
                    {"id": 2, "tool_name": "x", "submitted_at": "2026-01-01T12:05:00"},
                ],
            }
        )
        assert [a.id for a in queue.expire_pending(timedelta(minutes=6))] == [1]


class TestForgetResolved:
    """forget_resolved drops resolved history only, by resolution time, and returns how many it dropped."""

    def test_drops_only_resolved_actions(self) -> None:
        """Approved and rejected actions go; pending ones stay; ids are never given again."""
        queue = new_queue()
        for _ in range(4):
            submit(queue)
        queue.approve(1)
        queue.reject(2)
        before = queue.snapshot()
        assert queue.forget_resolved() == 2
        assert (queue[1], queue[2], queue.wait(1)) == (None, None, None)
        assert [a.id for a in queue.pending_actions] == [3, 4]
        assert queue.snapshot() == before
        assert submit(queue) == 5
        assert queue.forget_resolved() == 0

    def test_never_drops_an_applying_action(self) -> None:
        """Called from inside on_approve, the action being approved stays, and goes on a later call."""
        queue = new_queue()
        dropped: list[int] = []
        queue.on_approve = lambda action: dropped.append(queue.forget_resolved())
        submit(queue)
        queue.approve(1)
        assert dropped == [0]
        assert queue[1].is_approved  # type: ignore[union-attr]
        assert queue.forget_resolved() == 1

    def test_older_than_is_by_resolution_time(self) -> None:
        """Age is now - resolved at by the queue's clock; exactly older_than old is kept."""
        clock = FakeClock()
        queue = new_queue(clock=clock)
        submit(queue)
        submit(queue)
        clock.advance(hours=1)
        queue.approve(1)  # submitted an hour before, resolved now
        clock.advance(minutes=10)
        queue.reject(2)
        assert queue.forget_resolved(timedelta(minutes=10)) == 0
        clock.advance(microseconds=1)
        assert queue.forget_resolved(timedelta(minutes=10)) == 1
        assert queue[1] is None
        assert queue[2].is_rejected  # type: ignore[union-attr]

    def test_a_clock_that_goes_back_drops_nothing_early(self) -> None:
        """An action stamped earlier but resolved later waits for those resolved before it."""
        memory_only("a database compares resolution times")
        clock = FakeClock()
        queue = new_queue(clock=clock)
        submit(queue)
        submit(queue)
        queue.approve(1)
        clock.advance(hours=-1)
        queue.approve(2)
        clock.advance(hours=1)
        assert queue.forget_resolved(timedelta(minutes=30)) == 0
        assert queue.forget_resolved() == 2

    @pytest.mark.parametrize(
        ("value", "error"),
        [(5, TypeError), ("1h", TypeError), (timedelta(seconds=-1), ValueError)],
        ids=["int", "str", "negative"],
    )
    def test_bad_age(self, value: Any, error: type[Exception]) -> None:
        """older_than must be a non-negative timedelta or None; nothing is dropped otherwise."""
        queue = new_queue()
        submit(queue)
        queue.approve(1)
        with pytest.raises(error, match="older_than"):
            queue.forget_resolved(value)
        assert queue[1] is not None

    def test_a_waiter_still_gets_its_action(self) -> None:
        """A wait() woken by a resolution returns the action even if it is forgotten at once."""

        def wait_approve_forget() -> Action | None:
            queue = new_queue()
            submit(queue)
            results: list[Action | None] = []
            waiter = start(lambda: results.append(queue.wait(1, timeout=JOIN_TIMEOUT)))
            time.sleep(0.002)
            queue.approve(1)
            queue.forget_resolved()
            join(waiter)
            queue.forget_resolved()
            assert queue[1] is None
            return results[0]

        for _ in range(20):
            woken = wait_approve_forget()
            assert woken is not None
            assert woken.is_approved


class TestThreads:
    """Under any interleaving: ids 1..n, one callback per resolution, no lost wakeup."""

    THREADS = 6
    PER_THREAD = 150

    def test_concurrent_eligible_submits_never_lose_a_wakeup(self) -> None:
        """With only eligible items, every submit returns with its own action already approved."""
        # Callbacks yield to other threads, and some approvals submit more work from inside the drain.
        approvals: list[int] = []
        nested: list[int] = []
        queue = new_queue(auto_approve={"read": True})

        def on_submit(action: Action) -> None:
            if action.id % 2:
                time.sleep(0)  # let other threads submit while this head is in on_submit

        def on_approve(action: Action) -> None:
            approvals.append(action.id)
            time.sleep(0)  # give other threads a chance to submit mid-drain
            if action.id % 40 == 0:
                nested.append(submit(queue, "read", auto=True))

        queue.on_submit, queue.on_approve = on_submit, on_approve
        late: list[tuple[int, str]] = []
        ids: list[int] = []

        def worker() -> None:
            for _ in range(self.PER_THREAD):
                action_id = submit(queue, "read", auto=True)
                ids.append(action_id)
                status = queue[action_id].status  # type: ignore[union-attr]
                if status != "approved":
                    late.append((action_id, status))

        join(*[start(worker) for _ in range(self.THREADS)])
        total = self.THREADS * self.PER_THREAD + len(nested)
        assert late == []
        assert sorted(ids + nested) == list(range(1, total + 1))
        assert approvals == list(range(1, total + 1))  # one at a time, in id order
        assert not queue.any_pending()

    def test_mixed_submitters_and_approvers(self) -> None:
        """Manual and eligible submits with concurrent approvals: one callback per resolution, in order."""
        lock = threading.Lock()
        counts: dict[tuple[str, int], int] = {}
        overtaken: list[int] = []
        queue = new_queue(auto_approve={"read": True})

        def count(event: str, action: Action) -> None:
            with lock:
                counts[event, action.id] = counts.get((event, action.id), 0) + 1

        def on_approve(action: Action) -> None:
            count("approve", action)
            if action.auto_approvable and action.resolution_scope == "once":
                pending_before = [a for a in queue.pending_actions if a.id < action.id]
                if any(not a.auto_approvable for a in pending_before):
                    overtaken.append(action.id)

        queue.on_approve = on_approve
        queue.on_reject = lambda action: count("reject", action)
        manual_ids: list[int] = []
        late: list[int] = []
        stop = threading.Event()

        def submitter(index: int) -> None:
            for n in range(self.PER_THREAD):
                auto = (n + index) % 3 != 0
                action_id = submit(queue, "read" if auto else "bash", auto=auto)
                if not auto:
                    manual_ids.append(action_id)
                elif (
                    all(queue[i].auto_approvable for i in range(1, action_id))  # type: ignore[union-attr]
                    and queue[action_id].status != "approved"  # type: ignore[union-attr]
                ):
                    late.append(action_id)

        def approver() -> None:
            while not stop.is_set():
                if manual_ids:
                    victim = manual_ids[-1]
                    queue.approve(victim, scope="session")
                    queue.reject(victim - 1 if victim > 1 else victim)
                time.sleep(0)

        approvers = [start(approver) for _ in range(2)]
        join(*[start(lambda i=i: submitter(i)) for i in range(self.THREADS)])  # type: ignore[misc]
        stop.set()
        join(*approvers)
        queue.approve_all()
        queue.drain()
        total = self.THREADS * self.PER_THREAD
        assert late == []
        assert overtaken == []
        assert sorted(statuses(queue)) == list(range(1, total + 1))
        assert not queue.any_pending()
        for action_id, status in statuses(queue).items():
            event = "approve" if status == "approved" else "reject"
            assert counts.get((event, action_id)) == 1, (action_id, status)
            other = "reject" if event == "approve" else "approve"
            assert (other, action_id) not in counts

    def test_submit_waits_for_the_running_drain(self) -> None:
        """A submit made while another thread's drain is in a callback returns only once it is approved."""
        release = threading.Event()
        entered = threading.Event()
        queue = new_queue(auto_approve={"read": True})

        def on_approve(action: Action) -> None:
            if action.id == 1:
                entered.set()
                assert release.wait(JOIN_TIMEOUT)

        queue.on_approve = on_approve
        first = start(lambda: submit(queue, "read", auto=True))
        assert entered.wait(JOIN_TIMEOUT)
        seen: list[str] = []
        second = start(lambda: seen.append(queue[submit(queue, "read", auto=True)].status))  # type: ignore[union-attr]
        second.join(0.05)
        assert second.is_alive(), "submit returned while its eligible action was still pending"
        release.set()
        join(first, second)
        assert seen == ["approved"]

    def test_drain_waits_for_the_heads_on_submit(self) -> None:
        """An eligible head is not approved before its on_submit returns, nor overtaken meanwhile."""
        release = threading.Event()
        entered = threading.Event()
        events: list[tuple[str, int]] = []
        queue = new_queue(auto_approve={"read": True})

        def on_submit(action: Action) -> None:
            events.append(("submit", action.id))
            if action.id == 1:
                entered.set()
                assert release.wait(JOIN_TIMEOUT)
            events.append(("submitted", action.id))

        queue.on_submit = on_submit
        queue.on_approve = lambda action: events.append(("approve", action.id))
        first = start(lambda: submit(queue, "read", auto=True))
        assert entered.wait(JOIN_TIMEOUT)
        second = start(lambda: submit(queue, "read", auto=True))
        second.join(0.05)
        assert ("approve", 2) not in events
        release.set()
        join(first, second)
        assert [e for e in events if e[0] == "approve"] == [("approve", 1), ("approve", 2)]
        assert events.index(("submitted", 1)) < events.index(("approve", 1))

    def test_a_running_drain_stops_at_a_head_in_on_submit(self) -> None:
        """A drain already running does not approve an eligible head whose on_submit has not returned."""
        in_approve, release_approve = threading.Event(), threading.Event()
        in_submit, release_submit = threading.Event(), threading.Event()
        events: list[tuple[str, int]] = []
        queue = new_queue(auto_approve={"read": True})

        def on_submit(action: Action) -> None:
            if action.id == 2:
                in_submit.set()
                assert release_submit.wait(JOIN_TIMEOUT)
            events.append(("submitted", action.id))

        def on_approve(action: Action) -> None:
            if action.id == 1:
                in_approve.set()
                assert release_approve.wait(JOIN_TIMEOUT)
            events.append(("approve", action.id))

        queue.on_submit, queue.on_approve = on_submit, on_approve
        first = start(lambda: submit(queue, "read", auto=True))  # owns the drain, stuck in on_approve(1)
        assert in_approve.wait(JOIN_TIMEOUT)
        second = start(lambda: submit(queue, "read", auto=True))  # stuck in on_submit(2)
        assert in_submit.wait(JOIN_TIMEOUT)
        release_approve.set()
        first.join(0.05)
        assert ("approve", 2) not in events
        release_submit.set()
        join(first, second)
        assert events == [("submitted", 1), ("approve", 1), ("submitted", 2), ("approve", 2)]

    def test_a_manual_head_in_on_submit_does_not_block(self) -> None:
        """A manual head still in on_submit stops the drain at once: other submits return."""
        release = threading.Event()
        entered = threading.Event()
        queue = new_queue(auto_approve={"read": True})

        def on_submit(action: Action) -> None:
            if action.id == 1:
                entered.set()
                assert release.wait(JOIN_TIMEOUT)

        queue.on_submit = on_submit
        first = start(lambda: submit(queue, "bash"))
        assert entered.wait(JOIN_TIMEOUT)
        join(start(lambda: submit(queue, "read", auto=True)))
        assert queue.is_pending(2)
        release.set()
        join(first)

    def test_a_failing_drain_hands_over(self) -> None:
        """When the draining thread's callback raises, a waiting submitter takes over the drain."""
        release = threading.Event()
        entered = threading.Event()
        queue = new_queue(auto_approve={"read": True})
        calls: list[int] = []

        def on_approve(action: Action) -> None:
            calls.append(action.id)
            if len(calls) == 1:
                entered.set()
                assert release.wait(JOIN_TIMEOUT)
                raise Boom

        queue.on_approve = on_approve
        errors: list[BaseException] = []

        def first_submit() -> None:
            try:
                submit(queue, "read", auto=True)
            except Boom as error:
                errors.append(error)

        first = start(first_submit)
        assert entered.wait(JOIN_TIMEOUT)
        seen: list[str] = []
        second = start(lambda: seen.append(queue[submit(queue, "read", auto=True)].status))  # type: ignore[union-attr]
        second.join(0.05)
        release.set()
        join(first, second)
        assert len(errors) == 1
        assert seen == ["approved"]
        assert calls == [1, 1, 2]
        assert statuses(queue) == {1: "approved", 2: "approved"}


class QueueMachine(RuleBasedStateMachine):
    """The queue against a simple model: lists of statuses, eligibility and failing callbacks."""

    def __init__(self) -> None:
        super().__init__()
        self.queue = new_queue(
            auto_approve={"read": True, "flag": 1},
            on_submit=self.on_submit,
            on_approve=self.on_approve,
            on_reject=self.on_reject,
        )
        self.status: list[str] = []  # index id - 1
        self.eligible: list[bool] = []
        self.scope: list[str | None] = []
        self.feedback: list[str | None] = []
        self.failing: set[int] = set()
        self.fail_next_submit = False
        self.draining = False

    # callbacks ---------------------------------------------------------------------------------------

    def on_submit(self, action: Action) -> None:
        assert_unlocked(self.queue)
        assert action.status == "pending"
        if self.fail_next_submit:
            self.fail_next_submit = False
            raise Boom

    def on_approve(self, action: Action) -> None:
        assert_unlocked(self.queue)
        assert action.status == "applying"
        if self.draining:
            # The drain never overtakes: nothing before an auto-approved action is still pending.
            assert all(p.id > action.id for p in self.queue.pending_actions)
        if action.id in self.failing:
            raise Boom

    def on_reject(self, action: Action) -> None:
        assert_unlocked(self.queue)
        assert action.status == "applying"
        if action.id in self.failing:
            raise Boom

    # model -------------------------------------------------------------------------------------------

    def pending(self) -> list[int]:
        return [i + 1 for i, status in enumerate(self.status) if status == "pending"]

    def model_resolve(
        self, ids: list[int], approve: bool, scope: str | None, feedback: str | None
    ) -> tuple[list[int], bool]:
        resolved: list[int] = []
        for action_id in ids:
            if not 1 <= action_id <= len(self.status) or self.status[action_id - 1] != "pending":
                continue
            if action_id in self.failing:
                return resolved, True
            self.status[action_id - 1] = "approved" if approve else "rejected"
            self.scope[action_id - 1] = scope if approve else None
            self.feedback[action_id - 1] = None if approve else feedback
            resolved.append(action_id)
        return resolved, False

    def model_drain(self) -> bool:
        for action_id in self.pending():
            if not self.eligible[action_id - 1]:
                return False
            if action_id in self.failing:
                return True
            self.status[action_id - 1] = "approved"
            self.scope[action_id - 1] = "once"
        return False

    def run(self, call: Callable[[], Any], raises: bool) -> Any:
        if raises:
            with pytest.raises(Boom):
                call()
            return None
        return call()

    # rules -------------------------------------------------------------------------------------------

    @rule(
        tool=st.sampled_from(["read", "bash", "flag"]),
        auto=st.booleans(),
        fail_submit=st.integers(0, 4).map(lambda n: n == 0),
    )
    def submit(self, tool: str, auto: bool, fail_submit: bool) -> None:
        self.status.append("pending")
        self.eligible.append(auto and tool == "read")
        self.scope.append(None)
        self.feedback.append(None)
        self.fail_next_submit = fail_submit
        raises = fail_submit or self.model_drain()
        self.draining = True
        try:
            result = self.run(
                lambda: self.queue.submit(tool_call_id=None, tool_name=tool, auto_approvable=auto), raises
            )
        finally:
            self.draining = False
        if not raises:
            assert result == len(self.status)

    @precondition(lambda self: self.status)
    @rule(data=st.data())
    def toggle_failing(self, data: st.DataObject) -> None:
        action_id = data.draw(st.integers(1, len(self.status)))
        self.failing ^= {action_id}

    @rule(
        ids=st.lists(st.integers(-1, 12), max_size=4), scope=st.sampled_from(["once", "session", "project"])
    )
    def approve(self, ids: list[int], scope: str) -> None:
        expected, raises = self.model_resolve(sorted(set(ids)), True, scope, None)
        result = self.run(lambda: self.queue.approve(*ids, scope=scope), raises)  # type: ignore[arg-type]
        if not raises:
            assert [a.id for a in result] == expected

    @rule(ids=st.lists(st.integers(-1, 12), max_size=4), feedback=st.none() | st.text(max_size=3))
    def reject(self, ids: list[int], feedback: str | None) -> None:
        expected, raises = self.model_resolve(sorted(set(ids)), False, None, feedback)
        result = self.run(lambda: self.queue.reject(*ids, feedback=feedback), raises)
        if not raises:
            assert [a.id for a in result] == expected

    @rule()
    def approve_all(self) -> None:
        expected, raises = self.model_resolve(self.pending(), True, "once", None)
        result = self.run(self.queue.approve_all, raises)
        if not raises:
            assert [a.id for a in result] == expected

    @rule()
    def reject_all(self) -> None:
        expected, raises = self.model_resolve(self.pending(), False, None, "no")
        result = self.run(lambda: self.queue.reject_all("no"), raises)
        if not raises:
            assert [a.id for a in result] == expected

    @rule()
    def drain(self) -> None:
        raises = self.model_drain()
        self.draining = True
        try:
            self.run(self.queue.drain, raises)
        finally:
            self.draining = False

    # invariants --------------------------------------------------------------------------------------

    @invariant()
    def ids_are_one_to_n_with_model_statuses(self) -> None:
        count = len(self.status)
        actions = [self.queue[i] for i in range(1, count + 1)]
        assert self.queue[count + 1] is None
        assert [a.status if a else None for a in actions] == self.status
        assert [a.resolution_scope if a else None for a in actions] == self.scope
        assert [a.feedback if a else None for a in actions] == self.feedback

    @invariant()
    def pending_readers_agree(self) -> None:
        pending = self.pending()
        assert [a.id for a in self.queue.pending_actions] == pending
        assert self.queue.any_pending() == bool(pending)
        assert [a["id"] for a in self.queue.snapshot()["pending_actions"]] == pending


class TestQueueMachine:
    """The queue agrees with the model over random runs of submits, resolutions and drains."""

    def test_runs(self) -> None:
        """Every run of rules keeps the machine's invariants, against every store."""
        run_state_machine_as_test(
            QueueMachine, settings=settings(max_examples=100, stateful_step_count=25, deadline=None)
        )
