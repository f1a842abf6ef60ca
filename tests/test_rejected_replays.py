"""A call a person rejected stays rejected: replayed, it is blocked with the rejection, never asked again.

A framework replays a paused call after the person's answer (LangGraph re-runs the node, ADK replays the
confirmed call, the Agents SDK resumes its run), possibly in another process. If the answer came through
another way first (the approvals inbox, an expiry), the replay must not queue the call anew, where the
framework's own "yes" would approve it: against every store.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from ask_permissions import ApprovalPolicy, HookResult, ToolCall

from .clock import FakeClock
from .stores import new_queue

pytestmark = pytest.mark.usefixtures("store_kind")


def _queued(result: HookResult) -> int:
    assert result["action"] == "pending"
    return result["action_id"]


def _policy() -> ApprovalPolicy:
    return ApprovalPolicy(queue=new_queue(), require_approval="bash")


class TestRejectedReplays:
    """The rejected action of the same call id, tool and arguments decides a replay."""

    def test_a_rejected_call_is_blocked_with_its_feedback(self) -> None:
        """Rejected through the queue, the replay is refused with the person's words; nothing is queued."""
        policy = _policy()
        call = ToolCall("bash", {"command": "ls"}, "tc-1")
        first = policy.before_tool_call(call)
        assert first["action"] == "pending"
        policy.queue.reject(_queued(first), feedback="not now")
        assert policy.before_tool_call(call) == {
            "action": "block",
            "reason": "The call to 'bash' was rejected: not now",
        }
        assert policy.queue.pending_actions == []
        assert [action.id for action in policy.queue.rejected_for_call("tc-1")] == [_queued(first)]

    def test_an_expired_call_is_blocked(self) -> None:
        """An action expire_pending rejected blocks its replay too."""
        clock = FakeClock()
        policy = ApprovalPolicy(queue=new_queue(clock=clock), require_approval="bash")
        call = ToolCall("bash", {"command": "ls"}, "tc-1")
        policy.before_tool_call(call)
        clock.advance(seconds=120)
        assert len(policy.queue.expire_pending(timedelta(seconds=60))) == 1
        assert policy.before_tool_call(call) == {
            "action": "block",
            "reason": "The call to 'bash' was rejected: expired",
        }

    @pytest.mark.parametrize(
        "other",
        [
            ToolCall("bash", {"command": "ls -la"}, "tc-1"),
            ToolCall("bash", {"command": "ls"}, "tc-2"),
            ToolCall("bash", {"command": "ls"}, None),
            ToolCall("sh", {"command": "ls"}, "tc-1"),
        ],
        ids=["other-arguments", "other-id", "no-id", "other-tool"],
    )
    def test_another_call_is_asked_anew(self, other: ToolCall) -> None:
        """A rejection decides only its own call: other arguments, id or tool are asked about."""
        policy = ApprovalPolicy(queue=new_queue(), require_approval=["bash", "sh"])
        first = policy.before_tool_call(ToolCall("bash", {"command": "ls"}, "tc-1"))
        policy.queue.reject(_queued(first))
        assert policy.before_tool_call(other)["action"] == "pending"

    def test_an_approved_call_is_asked_anew(self) -> None:
        """An approval counts once: the same call made again is decided afresh, as in the gem."""
        policy = _policy()
        call = ToolCall("bash", {"command": "ls"}, "tc-1")
        first = policy.before_tool_call(call)
        policy.queue.approve(_queued(first))
        again = policy.before_tool_call(call)
        assert again["action"] == "pending"
        assert _queued(again) != _queued(first)

    def test_a_forgotten_rejection_no_longer_decides(self) -> None:
        """forget_resolved drops the history, rejections with it: the call is asked about again."""
        policy = _policy()
        call = ToolCall("bash", {"command": "ls"}, "tc-1")
        policy.queue.reject(_queued(policy.before_tool_call(call)))
        policy.queue.forget_resolved()
        assert policy.queue.rejected_for_call("tc-1") == []
        assert policy.before_tool_call(call)["action"] == "pending"

    def test_a_rule_that_now_allows_the_call_wins(self) -> None:
        """The rejection answered an ask: where the pipeline no longer asks, it does not decide."""
        from ask_permissions import PermissionRules

        rules = PermissionRules()
        policy = ApprovalPolicy(queue=new_queue(), rules=rules, require_approval="deploy")
        call = ToolCall("deploy", {"env": "staging"}, "tc-1")
        policy.queue.reject(_queued(policy.before_tool_call(call)))
        rules.allow("deploy")
        assert policy.before_tool_call(call) == {"action": "proceed"}

    def test_the_record_is_a_block(self) -> None:
        """The decision record says block, with the rejection as its reason."""
        records: list[object] = []
        policy = ApprovalPolicy(queue=new_queue(), require_approval="bash", on_decision=records.append)
        call = ToolCall("bash", {"command": "ls"}, "tc-1")
        policy.queue.reject(_queued(policy.before_tool_call(call)), feedback="no")
        policy.before_tool_call(call)
        last = records[-1]
        assert (last.outcome, last.reason, last.action_id) == (  # type: ignore[attr-defined]
            "block",
            "The call to 'bash' was rejected: no",
            None,
        )
