"""The queue's snapshot format: the gem's pending actions, ``submitted_at`` and ``why``, read strictly."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from ask_permissions._strict import (
    child,
    fail,
    guard_reading,
    read_bool,
    read_list,
    read_mapping,
    read_str,
)

from ._action import Action
from ._args import NotJSONError, json_call_id, json_copy, read_json
from ._why import read_why, why_data

__all__ = ["MAX_ID", "QUEUE_SNAPSHOT_VERSION", "read_snapshot", "snapshot_data", "snapshot_entry"]

QUEUE_SNAPSHOT_VERSION: Final = 2
"""The queue snapshot's version: 2 adds each action's ``why``; version 1 (the gem's) is still read."""

MAX_ID: Final = 2**63 - 1
"""The largest action id: what a 64-bit database integer holds, so snapshots move between stores."""
_ENTRY_REQUIRED: Final = ("id", "tool_name")
_ENTRY_OPTIONAL: Final = ("tool_call_id", "args", "auto_approvable", "message", "submitted_at")
_ENTRY_OPTIONAL_BY_VERSION: Final = {1: _ENTRY_OPTIONAL, 2: (*_ENTRY_OPTIONAL, "why")}


def _read_id(value: object, path: str, expected: str, least: int) -> int:
    """An id (or ``next_id``): an int, not a bool, from ``least`` to ``MAX_ID`` (what a database holds)."""
    if type(value) is not int or value < least:
        fail(path, expected, value)
    if value > MAX_ID:
        fail(path, f"at most {MAX_ID} (2**63 - 1)", value)
    return value


def _read_entry(entry: object, path: str, default_time: datetime, version: int) -> Action:
    data = read_mapping(entry, path, required=_ENTRY_REQUIRED, optional=_ENTRY_OPTIONAL_BY_VERSION[version])
    action_id = _read_id(data["id"], child(path, "id"), "a positive integer", 1)
    tool_name = str.__str__(read_str(data["tool_name"], child(path, "tool_name"), non_empty=True))

    tool_call_id = data.get("tool_call_id")
    if tool_call_id is not None and (
        isinstance(tool_call_id, bool) or not isinstance(tool_call_id, str | int)
    ):
        fail(child(path, "tool_call_id"), "a string, an integer or null", tool_call_id)
    try:
        tool_call_id = json_call_id(tool_call_id, child(path, "tool_call_id"))
    except NotJSONError as error:
        fail(error.path, error.expected, error.value)

    args: object = {}
    if data.get("args") is not None:
        args = read_json(data["args"], child(path, "args"))

    auto_approvable = False
    if data.get("auto_approvable") is not None:
        auto_approvable = read_bool(data["auto_approvable"], child(path, "auto_approvable"))

    message = data.get("message")
    if message is not None:
        message = str.__str__(read_str(message, child(path, "message")))

    submitted_at = default_time
    if data.get("submitted_at") is not None:
        text = read_str(data["submitted_at"], child(path, "submitted_at"))
        try:
            parsed = datetime.fromisoformat(text)
        except (ValueError, OverflowError):
            fail(child(path, "submitted_at"), "an ISO 8601 timestamp", text)
        submitted_at = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)

    why = None
    if data.get("why") is not None:
        try:
            why = read_why(data["why"], child(path, "why"))
        except NotJSONError as error:
            fail(error.path, error.expected, error.value)

    return Action(
        id=action_id,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        args=args,
        auto_approvable=auto_approvable,
        status="pending",
        submitted_at=submitted_at,
        message=message,
        why=why,
    )


def read_snapshot(snapshot: object, default_time: datetime) -> tuple[int, list[Action]]:
    """Validate a queue snapshot completely; return ``(next_id, actions in id order)``.

    Raises ``InvalidSnapshotError`` only, also for objects that raise when merely read.
    """
    return guard_reading(lambda: _read_snapshot(snapshot, default_time), snapshot, "")


def _read_snapshot(snapshot: object, default_time: datetime) -> tuple[int, list[Action]]:
    data = read_mapping(snapshot, "", required=("version", "next_id", "pending_actions"))
    version = data.get("version")
    if type(version) is not int or version not in _ENTRY_OPTIONAL_BY_VERSION:
        fail("version", f"1 or {QUEUE_SNAPSHOT_VERSION}", version)
    next_id = _read_id(data["next_id"], "next_id", "a non-negative integer", 0)
    actions: dict[int, Action] = {}
    for index, entry in enumerate(read_list(data["pending_actions"], "pending_actions")):
        path = child("pending_actions", index)
        action = _read_entry(entry, path, default_time, version)
        if action.id in actions:
            fail(child(path, "id"), "an id not used by an earlier entry", action.id)
        actions[action.id] = action
    return next_id, [actions[action_id] for action_id in sorted(actions)]


def snapshot_entry(action: Action) -> dict[str, Any]:
    """One ``pending_actions`` entry; ``ValueError`` naming the field a restore could not read back."""
    where = f"action {action.id} "
    try:
        tool_call_id = json_call_id(action.tool_call_id, where + "tool_call_id")
    except NotJSONError as error:
        raise ValueError(f"{error} (tool_call_id must be JSON-safe to be snapshotted)") from None
    try:
        args = json_copy(action.args, where + "args")
    except NotJSONError as error:
        raise ValueError(f"{error} (args must be JSON-safe to be snapshotted)") from None
    return {
        "id": action.id,
        "tool_call_id": tool_call_id,
        "tool_name": action.tool_name,
        "args": args,
        "auto_approvable": action.auto_approvable,
        "message": action.message,
        "submitted_at": action.submitted_at.isoformat(),
        "why": why_data(action.why),
    }


def snapshot_data(last_id: int, pending: list[Action]) -> dict[str, Any]:
    """A queue snapshot; ``ValueError`` naming an action whose arguments or call id it cannot hold."""
    entries = [snapshot_entry(action) for action in pending]
    return {"version": QUEUE_SNAPSHOT_VERSION, "next_id": last_id, "pending_actions": entries}
