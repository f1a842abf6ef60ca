"""The calls the MCP proxy holds: found by tool and arguments, expiring when no client makes them again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ask_permissions.integrations import _mcp_held
from ask_permissions.integrations._mcp_held import HeldCall, HeldCalls
from tests.clock import FakeClock


def _held(clock: FakeClock, action_id: int, arguments: Any, name: str = "bash") -> HeldCall:
    result: Any = {"action": "pending", "action_id": action_id, "reason": "r"}
    return HeldCall(name, arguments, result, None, "digest", None, clock())


class TestHeldCalls:
    """HeldCalls keeps one entry per tool and arguments."""

    def test_found_by_tool_and_arguments(self) -> None:
        """The same tool and arguments find the entry; other arguments or another tool do not."""
        clock = FakeClock()
        held = HeldCalls(clock, None)
        held.hold(_held(clock, 1, {"command": "ls"}))
        found = held.find("bash", {"command": "ls"})
        assert found is not None
        assert found.action_id == 1
        assert held.find("bash", {"command": "ls -l"}) is None
        assert held.find("sh", {"command": "ls"}) is None

    def test_release_forgets(self) -> None:
        """A released call is gone; releasing again gives None."""
        clock = FakeClock()
        held = HeldCalls(clock, None)
        held.hold(_held(clock, 1, {"command": "ls"}))
        assert held.release("bash", {"command": "ls"}, 1) is not None
        assert held.release("bash", {"command": "ls"}, 1) is None
        assert len(held) == 0

    def test_only_the_held_action_is_released(self) -> None:
        """Releasing names the action: a verdict for another action leaves the held call in place."""
        clock = FakeClock()
        held = HeldCalls(clock, None)
        held.hold(_held(clock, 2, {"command": "ls"}))
        assert held.release("bash", {"command": "ls"}, 1) is None
        assert len(held) == 1
        released = held.release("bash", {"command": "ls"}, 2)
        assert released is not None
        assert released.action_id == 2

    def test_a_call_not_made_again_expires(self) -> None:
        """Past the expiry since it was last made, a call is taken out; one made again in time stays."""
        clock = FakeClock()
        held = HeldCalls(clock, timedelta(seconds=60))
        held.hold(_held(clock, 1, {"command": "ls"}))
        held.hold(_held(clock, 2, {"command": "pwd"}))
        clock.advance(seconds=50)
        assert held.find("bash", {"command": "pwd"}) is not None  # made again: its time starts anew
        assert held.next_expiry() == clock() + timedelta(seconds=10)
        clock.advance(seconds=20)
        assert [call.action_id for call in held.take_expired()] == [1]
        assert held.take_expired() == []
        clock.advance(seconds=40)
        assert [call.action_id for call in held.take_expired()] == [2]
        assert held.next_expiry() is None

    def test_without_an_expiry_nothing_expires(self) -> None:
        """expiry None: calls stay however old."""
        clock = FakeClock()
        held = HeldCalls(clock, None)
        held.hold(_held(clock, 1, {"command": "ls"}))
        clock.advance(days=400)
        assert held.take_expired() == []
        assert held.next_expiry() is None
        assert [call.action_id for call in held.take_all()] == [1]

    def test_a_full_memory_hands_back_the_oldest(self, monkeypatch: Any) -> None:
        """Past the memory's size the oldest call is dropped and returned, so its action can be expired."""
        monkeypatch.setattr(_mcp_held, "_HELD_MEMORY", 2)
        clock = FakeClock()
        held = HeldCalls(clock, None)
        assert held.hold(_held(clock, 1, {"n": 1})) == (None, None)
        assert held.hold(_held(clock, 2, {"n": 2})) == (None, None)
        replaced, dropped = held.hold(_held(clock, 3, {"n": 3}))
        assert replaced is None
        assert dropped is not None
        assert dropped.action_id == 1
        assert len(held) == 2

    def test_holding_a_call_of_another_action_hands_back_the_one_it_replaced(self) -> None:
        """The same call held for a second action replaces the first, which is handed back; holding it
        again for its own action replaces nothing."""
        clock = FakeClock()
        held = HeldCalls(clock, None)
        held.hold(_held(clock, 1, {"command": "ls"}))
        assert held.hold(_held(clock, 1, {"command": "ls"})) == (None, None)
        replaced, dropped = held.hold(_held(clock, 2, {"command": "ls"}))
        assert dropped is None
        assert replaced is not None
        assert replaced.action_id == 1
        found = held.find("bash", {"command": "ls"})
        assert found is not None
        assert found.action_id == 2
