"""Hypothesis strategies shared by the test modules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import strategies as st

__all__ = [
    "json_objects",
    "json_values",
    "queue_snapshot_entries",
    "queue_snapshots",
    "snapshot_like",
    "tool_names",
]

tool_names = st.text(min_size=1, max_size=12)
"""Tool names: any non-empty string."""

_json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)

json_values = st.recursive(
    _json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
"""Any value ``json.loads`` can return."""

json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
"""JSON objects (dicts with string keys)."""

_timestamps = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
) | st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.builds(timezone, st.integers(-23 * 60, 23 * 60).map(lambda m: timedelta(minutes=m))),
)


@st.composite
def queue_snapshot_entries(draw: st.DrawFn, action_id: int) -> dict[str, object]:
    """A valid ``pending_actions`` entry of a queue snapshot, with optional keys sometimes left out."""
    entry: dict[str, object] = {"id": action_id, "tool_name": draw(tool_names)}
    optional: dict[str, object] = {
        "tool_call_id": draw(st.none() | st.text(max_size=8) | st.integers(0, 10**6)),
        "args": draw(st.none() | json_objects),
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


_ENTRY_KEYS = ("id", "tool_name", "tool_call_id", "args", "auto_approvable", "message", "submitted_at", "x")
_entry_values = (
    json_values
    | st.integers(-3, 60)
    | st.sampled_from(["2026-01-01T00:00:00", "2026-01-01T00:00:00Z", "not a time", "", "bash"])
)

snapshot_like = (
    json_values
    | queue_snapshots()
    | st.fixed_dictionaries(
        {},
        optional={
            "version": st.sampled_from([1, 2, "1", True, None]),
            "next_id": st.sampled_from([0, 3, -1, True, 1.5, None]),
            "pending_actions": st.lists(
                st.dictionaries(st.sampled_from(_ENTRY_KEYS), _entry_values), max_size=4
            )
            | json_values,
            "extra": json_values,
        },
    )
)
"""Anything a host might hand to ``restore_pending``: valid snapshots, near misses and random JSON."""
