"""ApprovalQueue.pending_for_call: the pending actions of one tool call, found without a scan."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ask_permissions import Action, ApprovalQueue

CALL_IDS = st.sampled_from(["a", "b", 1, True, 1.0, None, ("t", 1)])


def _reference(queue: ApprovalQueue, tool_call_id: object) -> list[Action]:
    return [
        action
        for action in queue.pending_actions
        if tool_call_id is not None
        and type(action.tool_call_id) is type(tool_call_id)
        and action.tool_call_id == tool_call_id
    ]


class TestPendingForCall:
    """Pending actions are found by their tool_call_id, by type and value."""

    def test_finds_the_pending_actions_of_a_call(self) -> None:
        """Every pending action of the id, in id order; resolved ones are gone."""
        queue = ApprovalQueue()
        first = queue.submit(tool_call_id="tc", tool_name="bash")
        queue.submit(tool_call_id="other", tool_name="bash")
        third = queue.submit(tool_call_id="tc", tool_name="write")
        assert [action.id for action in queue.pending_for_call("tc")] == [first, third]
        queue.approve(first)
        assert [action.id for action in queue.pending_for_call("tc")] == [third]
        queue.reject(third)
        assert queue.pending_for_call("tc") == []

    @pytest.mark.parametrize("other", [True, 1.0], ids=["True", "float"])
    def test_ids_match_by_type_and_value(self, other: object) -> None:
        """An action of call id 1 is not found for True or 1.0."""
        queue = ApprovalQueue()
        queue.submit(tool_call_id=1, tool_name="bash")
        assert queue.pending_for_call(other) == []
        assert len(queue.pending_for_call(1)) == 1

    def test_no_id_matches_nothing(self) -> None:
        """Calls without an id cannot be recognised again."""
        queue = ApprovalQueue()
        queue.submit(tool_call_id=None, tool_name="bash")
        assert queue.pending_for_call(None) == []

    def test_unhashable_ids_are_found_too(self) -> None:
        """A host whose call ids are lists still finds its action."""
        queue = ApprovalQueue()
        action_id = queue.submit(tool_call_id=["x", 1], tool_name="bash")
        assert [action.id for action in queue.pending_for_call(["x", 1])] == [action_id]

    def test_an_applying_action_is_not_pending_and_comes_back_on_rollback(self) -> None:
        """While its callback runs the action is not pending; a raising callback returns it."""
        seen: list[list[Action]] = []
        queue = ApprovalQueue()

        def on_approve(action: Action) -> None:
            seen.append(queue.pending_for_call("tc"))
            raise RuntimeError("host failed")

        queue.on_approve = on_approve
        action_id = queue.submit(tool_call_id="tc", tool_name="bash")
        with pytest.raises(RuntimeError):
            queue.approve(action_id)
        assert seen == [[]]
        assert [action.id for action in queue.pending_for_call("tc")] == [action_id]

    def test_restored_actions_are_found(self) -> None:
        """Actions put back by restore_pending are indexed like submitted ones."""
        queue = ApprovalQueue()
        queue.submit(tool_call_id="tc", tool_name="bash")
        restored = ApprovalQueue()
        restored.restore_pending(queue.snapshot())
        assert [action.id for action in restored.pending_for_call("tc")] == [1]

    @given(st.lists(st.tuples(st.sampled_from(["submit", "approve", "reject"]), CALL_IDS, st.integers(1, 8))))
    def test_agrees_with_a_scan_of_the_pending_actions(self, steps: list[tuple[str, object, int]]) -> None:
        """After any submits and resolutions, the index says what a scan of pending_actions says."""
        queue = ApprovalQueue()
        for operation, call_id, number in steps:
            if operation == "submit":
                queue.submit(tool_call_id=call_id, tool_name="bash")
            elif operation == "approve":
                queue.approve(number)
            else:
                queue.reject(number)
        for call_id in ["a", "b", 1, True, 1.0, None, ("t", 1)]:
            assert queue.pending_for_call(call_id) == _reference(queue, call_id)
