"""policy.decide / adecide: resolvers answer asks, with a deadline and a cancel that wins; verdict records."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    DecisionRecord,
    PermissionCheck,
    SessionPermissionGrants,
    ToolCall,
    check,
)
from ask_permissions.typing import PermissionRequest

from .threads import JOIN_TIMEOUT


class FetchTool:
    approval_required = True
    auto_approvable = True


def _policy(**kwargs: Any) -> tuple[ApprovalPolicy, list[DecisionRecord]]:
    records: list[DecisionRecord] = []
    policy = ApprovalPolicy(
        queue=kwargs.pop("queue", ApprovalQueue()),
        require_approval="bash",
        on_decision=records.append,
        **kwargs,
    )
    return policy, records


def _verdicts(records: list[DecisionRecord]) -> list[tuple[str | None, int | None]]:
    return [(record.verdict, record.action_id) for record in records]


CALL = ToolCall("bash", {"command": "make"}, "tc-1")


class TestNoResolver:
    """Headless: an ask nobody can answer is blocked, and nothing waits in the queue for nobody."""

    def test_an_ask_blocks_as_permission_required(self) -> None:
        """seed 001's headless default: blocked with "permission required: <reason>", ask_unresolved."""
        policy, records = _policy()
        assert policy.decide(CALL) == {
            "action": "block",
            "reason": "permission required: Tool 'bash' requires approval",
        }
        assert policy.queue.pending_actions == []
        assert _verdicts(records) == [("ask_unresolved", None)]

    def test_what_the_queue_approves_by_itself_still_runs(self) -> None:
        """An auto-approvable ask the queue's auto_approve lists proceeds without a resolver."""
        policy, records = _policy(
            queue=ApprovalQueue(auto_approve={"fetch": True}), tools={"bash": {}, "fetch": FetchTool()}
        )
        assert policy.decide(ToolCall("fetch", {}, "tc")) == {"action": "proceed"}
        assert [(record.verdict, record.decided_by) for record in records] == [
            ("ask", None),
            ("ask_allowed", "auto_approve"),
        ]

    def test_proceed_and_block_are_as_before_tool_call(self) -> None:
        """decide of a call that does not ask is exactly before_tool_call's result."""
        policy, _ = _policy(
            checks=[check(lambda call: PermissionCheck.deny("no") if call.name == "rm" else None)]
        )
        assert policy.decide(ToolCall("ls")) == {"action": "proceed"}
        assert policy.decide(ToolCall("rm")) == {"action": "block", "reason": "no"}


class TestSyncResolver:
    """A resolver answers; the queued action is resolved through the policy; one record per resolution."""

    def test_yes_proceeds(self) -> None:
        """True approves the action once; records: ask, then ask_allowed with the same action id."""
        seen: list[PermissionRequest] = []
        policy, records = _policy()

        def resolver(request: PermissionRequest) -> bool:
            seen.append(request)
            return True

        assert policy.decide(CALL, resolver=resolver) == {"action": "proceed"}
        assert seen == [
            {
                "action_id": 1,
                "tool_call_id": "tc-1",
                "tool": "bash",
                "args": {"command": "make"},
                "reason": "Tool 'bash' requires approval",
                "layer": "approval_required",
                "rule": None,
                "source": None,
                "suggestions": [],
            }
        ]
        action = policy.lookup(1)
        assert action is not None
        assert action.is_approved
        assert _verdicts(records) == [("ask", 1), ("ask_allowed", 1)]
        assert records[1].layer == records[0].layer == "approval_required"
        assert records[1].outcome == "proceed"

    def test_no_blocks_with_the_feedback(self) -> None:
        """A rejection with feedback blocks, and the model reads the feedback; verdict ask_denied."""
        policy, records = _policy()
        result = policy.decide(
            CALL, resolver=lambda request: {"decision": "reject", "feedback": "use make test"}
        )
        assert result == {"action": "block", "reason": "The call to 'bash' was rejected: use make test"}
        assert _verdicts(records) == [("ask", 1), ("ask_denied", 1)]

    def test_a_session_scope_grants_the_tool(self) -> None:
        """An approval's scope is carried as policy.approve carries it."""
        grants = SessionPermissionGrants()
        policy, _ = _policy(session_grants=grants)
        assert policy.decide(CALL, resolver=lambda request: {"decision": "approve", "scope": "session"})[
            "action"
        ] == ("proceed")
        assert grants.granted_tools == ["bash"]

    def test_a_deadline_blocks_and_expires_the_action(self) -> None:
        """Past the timeout the action is rejected as expired; a late yes changes nothing."""
        release = threading.Event()
        answered = threading.Event()
        policy, records = _policy()

        def slow(request: PermissionRequest) -> bool:
            release.wait(JOIN_TIMEOUT)
            answered.set()
            return True

        result = policy.decide(CALL, resolver=slow, timeout=0.05)
        assert result == {"action": "block", "reason": "The call to 'bash' was rejected: expired"}
        release.set()
        assert answered.wait(JOIN_TIMEOUT)
        action = policy.lookup(1)
        assert action is not None
        assert (action.status, action.feedback) == ("rejected", "expired")
        assert _verdicts(records) == [("ask", 1), ("ask_expired", 1)]

    @pytest.mark.parametrize(
        ("answer", "error"),
        [
            ("yes", TypeError),
            ({"decision": "aprove"}, ValueError),
            ({"decision": "approve", "scope": "x"}, ValueError),
        ],
        ids=["not-an-answer", "misspelt", "bad-scope"],
    )
    def test_an_unreadable_answer_rejects_and_raises(self, answer: object, error: type[Exception]) -> None:
        """An answer that is not one raises, after the action was rejected (nothing left waiting)."""
        policy, _ = _policy()
        with pytest.raises(error):
            policy.decide(CALL, resolver=lambda request: answer)  # type: ignore[arg-type, return-value]
        action = policy.lookup(1)
        assert action is not None
        assert action.is_rejected

    def test_a_raising_resolver_rejects_and_propagates(self) -> None:
        """A resolver that fails leaves no action pending, and its exception reaches the caller."""
        policy, _ = _policy()

        def broken(request: PermissionRequest) -> bool:
            raise ConnectionError("approval service down")

        with pytest.raises(ConnectionError):
            policy.decide(CALL, resolver=broken)
        assert policy.queue.pending_actions == []

    def test_an_async_resolver_needs_adecide(self) -> None:
        """decide with an async resolver is a TypeError, and the action is not left pending."""

        async def resolver(request: PermissionRequest) -> bool:
            return True

        policy, _ = _policy()
        with pytest.raises(TypeError, match="adecide"):
            policy.decide(CALL, resolver=resolver)
        assert policy.queue.pending_actions == []

    def test_a_rewritten_call_runs_as_rewritten(self) -> None:
        """A check's rewrite that still asks runs, once approved, with the rewritten arguments."""
        policy, _ = _policy(checks=[check(lambda call: PermissionCheck.modify({"command": "make -n"}))])
        assert policy.decide(CALL, resolver=lambda request: True) == {
            "action": "proceed",
            "arguments": {"command": "make -n"},
        }

    @pytest.mark.parametrize("timeout", [-1, float("nan"), "1"], ids=["negative", "nan", "string"])
    def test_bad_timeouts(self, timeout: object) -> None:
        """A timeout that is not a non-negative number is refused before anything happens."""
        policy, _ = _policy()
        with pytest.raises((TypeError, ValueError), match="timeout"):
            policy.decide(CALL, resolver=lambda request: True, timeout=timeout)  # type: ignore[arg-type]
        assert policy.lookup(1) is None


class TestAsyncResolver:
    """adecide awaits a resolver (sync or async); a cancel rejects the action and always wins."""

    def test_an_async_yes_proceeds(self) -> None:
        """An async resolver's approval proceeds."""

        async def resolver(request: PermissionRequest) -> bool:
            await asyncio.sleep(0)
            return True

        policy, records = _policy()
        assert asyncio.run(policy.adecide(CALL, resolver=resolver)) == {"action": "proceed"}
        assert _verdicts(records) == [("ask", 1), ("ask_allowed", 1)]

    def test_a_sync_resolver_runs_off_the_loop(self) -> None:
        """A blocking resolver does not block the event loop: another task runs meanwhile."""
        progressed = threading.Event()

        def resolver(request: PermissionRequest) -> bool:
            return progressed.wait(JOIN_TIMEOUT)

        async def main() -> object:
            async def other() -> None:
                progressed.set()

            decision = asyncio.create_task(policy.adecide(CALL, resolver=resolver))
            await other()
            return await decision

        policy, _ = _policy()
        assert asyncio.run(main()) == {"action": "proceed"}

    def test_a_timeout_expires(self) -> None:
        """Past the timeout, adecide blocks and the action is expired."""

        async def resolver(request: PermissionRequest) -> bool:
            await asyncio.sleep(JOIN_TIMEOUT)
            return True

        policy, records = _policy()
        result = asyncio.run(policy.adecide(CALL, resolver=resolver, timeout=0.01))
        assert result["action"] == "block"
        assert _verdicts(records)[-1] == ("ask_expired", 1)

    def test_a_cancel_rejects_the_action(self) -> None:
        """Cancelling the awaiting task rejects with seed 001's text and records cancelled."""
        waiting = asyncio.Event()

        async def resolver(request: PermissionRequest) -> bool:
            waiting.set()
            await asyncio.sleep(JOIN_TIMEOUT)
            return True

        async def main() -> None:
            task = asyncio.create_task(policy.adecide(CALL, resolver=resolver))
            await waiting.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        policy, records = _policy()
        asyncio.run(main())
        action = policy.lookup(1)
        assert action is not None
        assert (action.status, action.feedback) == ("rejected", "cancelled while awaiting approval")
        assert _verdicts(records) == [("ask", 1), ("cancelled", 1)]

    def test_a_cancel_that_lands_with_the_approval_wins(self) -> None:
        """The approval and the cancel arrive together: the call never proceeds, so the tool never runs."""
        answer = asyncio.Event()

        async def resolver(request: PermissionRequest) -> bool:
            await answer.wait()
            return True

        async def main() -> None:
            task = asyncio.create_task(policy.adecide(CALL, resolver=resolver))
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            answer.set()  # the resolver can now answer yes...
            task.cancel()  # ...but the cancel lands in the same moment
            with pytest.raises(asyncio.CancelledError):
                await task

        policy, records = _policy()
        asyncio.run(main())
        assert records[-1].verdict == "cancelled"
        action = policy.lookup(1)
        assert action is not None
        assert action.is_rejected

    def test_a_cancel_while_the_approval_is_applied_wins(self) -> None:
        """A cancel that lands inside the approval (from its callback, in the task): no proceed returns."""
        returned: list[object] = []

        def cancel_the_task(action: object) -> None:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()

        async def resolver(request: PermissionRequest) -> bool:
            return True

        async def main() -> None:
            async def step() -> None:
                returned.append(await policy.adecide(CALL, resolver=resolver))

            task = asyncio.create_task(step())
            with pytest.raises(asyncio.CancelledError):
                await task

        policy, _ = _policy(queue=ApprovalQueue(on_approve=cancel_the_task))
        asyncio.run(main())
        assert returned == []


class TestResolutionRecords:
    """An ask resolved later, through the policy, emits one more record with the same action id."""

    def test_a_persons_approval_is_recorded(self) -> None:
        """policy.approve after before_tool_call records ask_allowed for that action."""
        policy, records = _policy()
        policy.before_tool_call(CALL)
        policy.approve(1)
        assert _verdicts(records) == [("ask", 1), ("ask_allowed", 1)]
        assert records[1].args_digest == records[0].args_digest

    def test_a_persons_rejection_is_recorded_once(self) -> None:
        """A rejection is recorded once; rejecting again records nothing."""
        policy, records = _policy()
        policy.before_tool_call(CALL)
        policy.reject(1, feedback="no")
        policy.reject(1)
        assert _verdicts(records) == [("ask", 1), ("ask_denied", 1)]
        assert records[1].reason == "The call to 'bash' was rejected: no"


class TestBlockingHooksOffTheLoop:
    """A policy with hooks takes adecide's decision in a worker thread: the loop keeps running."""

    def test_the_loop_runs_while_a_hook_waits(self) -> None:
        """A hook waiting on the loop's own progress finishes: it was not run on the loop."""
        started = threading.Event()
        release = threading.Event()
        released: list[bool] = []

        def hook(call: ToolCall) -> None:
            started.set()
            released.append(release.wait(JOIN_TIMEOUT))

        policy = ApprovalPolicy(queue=ApprovalQueue(), hooks=[hook])

        async def main() -> object:
            task = asyncio.create_task(policy.adecide(ToolCall("ls", {}, "tc")))
            assert await asyncio.to_thread(started.wait, JOIN_TIMEOUT)
            release.set()
            return await task

        assert asyncio.run(main()) == {"action": "proceed"}
        assert released == [True]

    def test_a_cancel_during_the_decision_rejects_what_it_queued(self) -> None:
        """Cancelled while the hook runs, adecide still rejects the action the hook's ask queued."""
        started = threading.Event()
        release = threading.Event()

        def hook(call: ToolCall) -> PermissionCheck:
            started.set()
            release.wait(JOIN_TIMEOUT)
            return PermissionCheck.ask()

        records: list[DecisionRecord] = []
        policy = ApprovalPolicy(queue=ApprovalQueue(), hooks=[hook], on_decision=records.append)

        async def main() -> None:
            task = asyncio.create_task(
                policy.adecide(ToolCall("ls", {}, "tc"), resolver=lambda request: True)
            )
            assert await asyncio.to_thread(started.wait, JOIN_TIMEOUT)
            task.cancel()
            await asyncio.sleep(0)
            release.set()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        action = policy.lookup(1)
        assert action is not None
        assert (action.status, action.feedback) == ("rejected", "cancelled while awaiting approval")
        assert [record.verdict for record in records] == ["ask", "cancelled"]


class TestResolutionsThroughTheQueue:
    """A person resolving through the queue directly still gets the ask's resolution recorded, once."""

    def test_a_queue_approval_is_recorded(self) -> None:
        """queue.approve after before_tool_call records ask_allowed, with the ask's layer."""
        policy, records = _policy()
        policy.before_tool_call(CALL)
        policy.queue.approve(1)
        assert _verdicts(records) == [("ask", 1), ("ask_allowed", 1)]
        assert records[1].layer == "approval_required"

    def test_expiry_is_recorded_as_expired(self) -> None:
        """expire_pending's rejections read as ask_expired."""
        from datetime import timedelta

        from .clock import FakeClock

        clock = FakeClock()
        policy, records = _policy(queue=ApprovalQueue(clock=clock))
        policy.before_tool_call(CALL)
        clock.advance(minutes=5)
        policy.queue.expire_pending(timedelta(minutes=1))
        assert _verdicts(records) == [("ask", 1), ("ask_expired", 1)]

    def test_auto_approvals_are_recorded_as_the_queues(self) -> None:
        """The drain's own approvals answer the ask: its resolution names auto_approve, no person."""
        policy, records = _policy(
            queue=ApprovalQueue(auto_approve={"fetch": True}), tools={"bash": {}, "fetch": FetchTool()}
        )
        policy.before_tool_call(ToolCall("fetch", {}, "tc"))
        assert [(record.verdict, record.decided_by) for record in records] == [
            ("ask", None),
            ("ask_allowed", "auto_approve"),
        ]

    def test_approving_through_the_policy_records_once(self) -> None:
        """policy.approve goes through the queue: one resolution record, not two."""
        policy, records = _policy()
        policy.before_tool_call(CALL)
        policy.approve(1, scope="session")
        assert _verdicts(records) == [("ask", 1), ("ask_allowed", 1)]
