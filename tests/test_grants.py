"""SessionPermissionGrants: grants, revocation, snapshots and thread safety."""

from __future__ import annotations

import enum
import functools
import json
import re
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ask_permissions import InvalidSnapshotError, SessionPermissionGrants

from .cases import bad_tool_name_lists
from .hostile import (
    HUGE_INT,
    HostileDict,
    HostileList,
    HostileObject,
    HostileStr,
    assert_reads_or_rejects,
    assert_refused,
    circular_dict,
    hostile_snapshots,
    nested,
)
from .strategies import any_tool_names, grants_snapshot_like, plain_json
from .threads import run_threads


class Tool(enum.StrEnum):
    """A host's tool-name enum."""

    BASH = "bash"


class TestSeedExamples:
    """The gem README's grants examples behave as documented."""

    def test_grant_check_revoke_list_clear(self) -> None:
        """grant / granted? / revoke / granted_tools / clear, in the README's order."""
        grants = SessionPermissionGrants()
        assert grants.grant("bash") is grants
        assert grants.is_granted("bash")
        assert grants.revoke("bash") is grants
        assert not grants.is_granted("bash")
        grants.grant("bash")
        assert grants.granted_tools == ["bash"]
        assert grants.clear() is grants
        assert grants.granted_tools == []

    def test_duplicate_grant_is_idempotent(self) -> None:
        """Granting a tool twice keeps one grant."""
        grants = SessionPermissionGrants().grant("bash").grant("bash")
        assert grants.granted_tools == ["bash"]
        assert len(grants) == 1

    def test_unknown_revoke_is_a_noop(self) -> None:
        """Revoking a tool that was never granted changes nothing and returns the grants."""
        grants = SessionPermissionGrants(["read_file"])
        assert grants.revoke("bash") is grants
        assert grants.granted_tools == ["read_file"]

    def test_snapshot_json_round_trip(self) -> None:
        """A snapshot survives JSON and restores the same grants."""
        grants = SessionPermissionGrants().grant("bash")
        restored = SessionPermissionGrants.from_snapshot(json.loads(json.dumps(grants.snapshot())))
        assert restored.is_granted("bash")
        assert restored.granted_tools == grants.granted_tools

    def test_instances_are_isolated(self) -> None:
        """Separate grants objects never share grants."""
        first, second = SessionPermissionGrants(), SessionPermissionGrants()
        first.grant("bash")
        assert not second.is_granted("bash")


class TestReaders:
    """Readers return copies and sorted names."""

    def test_granted_tools_sorted_and_fresh(self) -> None:
        """granted_tools is sorted, and mutating it does not touch the grants."""
        grants = SessionPermissionGrants(["write", "bash", "read_file"])
        tools = grants.granted_tools
        assert tools == ["bash", "read_file", "write"]
        tools.append("destroy")
        assert grants.granted_tools == ["bash", "read_file", "write"]

    def test_len_and_contains(self) -> None:
        """len() counts grants; ``in`` answers like is_granted."""
        grants = SessionPermissionGrants(["bash", "write"])
        assert len(grants) == 2
        assert "bash" in grants
        assert "read_file" not in grants
        assert None not in grants

    def test_str_enum_names_are_plain_strings(self) -> None:
        """A StrEnum name is granted and listed as the plain string."""
        grants = SessionPermissionGrants([Tool.BASH])
        assert grants.is_granted("bash")
        assert grants.is_granted(Tool.BASH)
        assert type(grants.granted_tools[0]) is str

    def test_repr(self) -> None:
        """The repr lists the sorted grants."""
        assert (
            repr(SessionPermissionGrants(["write", "bash"])) == "<SessionPermissionGrants ['bash', 'write']>"
        )

    def test_snapshot_shape(self) -> None:
        """snapshot() is the versioned, sorted, JSON-safe form."""
        grants = SessionPermissionGrants(["write", "bash"])
        assert grants.snapshot() == {"version": 1, "granted_tools": ["bash", "write"]}


IS_GRANTED_NEVER_RAISES = [None, "", 0, 1.5, b"bash", ["bash"], {"bash": True}, object()]


class TestValidation:
    """Names are non-empty strings; is_granted never raises."""

    @pytest.mark.parametrize(
        "value",
        IS_GRANTED_NEVER_RAISES,
        ids=lambda value: "object()" if type(value) is object else repr(value),
    )
    def test_is_granted_anything_else_is_false(self, value: object) -> None:
        """is_granted answers False for anything that is not a granted string."""
        grants = SessionPermissionGrants(["bash"])
        assert grants.is_granted(value) is False

    @pytest.mark.parametrize("method", ["grant", "revoke"])
    def test_empty_name_is_a_value_error(self, method: str) -> None:
        """grant('') and revoke('') raise ValueError and change nothing."""
        grants = SessionPermissionGrants(["bash"])
        with pytest.raises(ValueError, match="tool_name: expected a non-empty string; got ''"):
            getattr(grants, method)("")
        assert grants.granted_tools == ["bash"]

    @pytest.mark.parametrize("method", ["grant", "revoke"])
    @pytest.mark.parametrize("value", [None, 1, b"bash"], ids=repr)
    def test_non_string_name_is_a_type_error(self, method: str, value: object) -> None:
        """grant and revoke refuse a non-string with TypeError."""
        with pytest.raises(TypeError, match="tool_name: expected a non-empty string"):
            getattr(SessionPermissionGrants(), method)(value)

    @pytest.mark.parametrize(("value", "error", "match"), bad_tool_name_lists("granted_tools"))
    def test_constructor_refuses_bad_names(self, value: Any, error: type[Exception], match: str) -> None:
        """The constructor refuses a bare string (it would grant its letters); errors name the bad entry."""
        with pytest.raises(error, match=match):
            SessionPermissionGrants(value)


INVALID_SNAPSHOTS: list[tuple[str, object, str, str]] = [
    ("not-a-mapping", ["bash"], "", "snapshot: expected an object; got ['bash']"),
    ("none", None, "", "snapshot: expected an object; got None"),
    ("missing-version", {"granted_tools": []}, "version", "version: expected a value"),
    ("version-2", {"version": 2, "granted_tools": []}, "version", "version: expected 1; got 2"),
    ("version-string", {"version": "1", "granted_tools": []}, "version", "version: expected 1; got '1'"),
    ("version-true", {"version": True, "granted_tools": []}, "version", "version: expected 1; got True"),
    ("version-float", {"version": 1.0, "granted_tools": []}, "version", "version: expected 1; got 1.0"),
    ("missing-tools", {"version": 1}, "granted_tools", "granted_tools: expected a value"),
    (
        "tools-not-array",
        {"version": 1, "granted_tools": "bash"},
        "granted_tools",
        "granted_tools: expected an array; got 'bash'",
    ),
    (
        "blank-entry",
        {"version": 1, "granted_tools": ["bash", ""]},
        "granted_tools[1]",
        "granted_tools[1]: expected a non-empty string; got ''",
    ),
    (
        "non-string-entry",
        {"version": 1, "granted_tools": [7]},
        "granted_tools[0]",
        "granted_tools[0]: expected a non-empty string; got 7",
    ),
    (
        "unknown-key",
        {"version": 1, "granted_tools": [], "extra": 1},
        "extra",
        "extra: expected no such key",
    ),
]


class TestSnapshots:
    """Snapshots are strict: invalid input raises InvalidSnapshotError naming the path, changing nothing."""

    @pytest.mark.parametrize(
        ("snapshot", "path", "message"),
        [case[1:] for case in INVALID_SNAPSHOTS],
        ids=[case[0] for case in INVALID_SNAPSHOTS],
    )
    def test_invalid_snapshot(self, snapshot: object, path: str, message: str) -> None:
        """from_snapshot and restore_snapshot refuse it with the path; the target is untouched."""
        with pytest.raises(InvalidSnapshotError, match="^" + re.escape(message)) as info:
            SessionPermissionGrants.from_snapshot(snapshot)
        assert info.value.path == path
        grants = SessionPermissionGrants(["write"])
        with pytest.raises(InvalidSnapshotError):
            grants.restore_snapshot(snapshot)
        assert grants.granted_tools == ["write"]

    def test_duplicates_in_a_snapshot_collapse(self) -> None:
        """Duplicate names in a snapshot are accepted and deduplicated (set semantics)."""
        grants = SessionPermissionGrants.from_snapshot({"version": 1, "granted_tools": ["bash", "bash"]})
        assert grants.granted_tools == ["bash"]

    def test_restore_replaces_and_returns_the_grants(self) -> None:
        """restore_snapshot replaces every grant rather than merging, and returns the object."""
        grants = SessionPermissionGrants(["write"])
        assert grants.restore_snapshot({"version": 1, "granted_tools": ["bash"]}) is grants
        assert grants.granted_tools == ["bash"]

    def test_invalid_snapshot_is_a_value_error(self) -> None:
        """InvalidSnapshotError is also a ValueError and carries the bad value."""
        with pytest.raises(ValueError, match="granted_tools") as info:
            SessionPermissionGrants.from_snapshot({"version": 1, "granted_tools": [None]})
        assert isinstance(info.value, InvalidSnapshotError)
        assert info.value.value is None

    @settings(max_examples=200)
    @given(grants_snapshot_like)
    def test_fuzz_restore_works_or_raises_invalid_snapshot(self, snapshot: Any) -> None:
        """Any JSON-like input either restores or raises InvalidSnapshotError; a failure changes nothing."""
        grants = SessionPermissionGrants(["keep"])
        try:
            restored = SessionPermissionGrants.from_snapshot(snapshot)
        except InvalidSnapshotError:
            with pytest.raises(InvalidSnapshotError):
                grants.restore_snapshot(snapshot)
            assert grants.granted_tools == ["keep"]
        else:
            grants.restore_snapshot(snapshot)
            assert grants.granted_tools == restored.granted_tools
            assert grants.snapshot() == {
                "version": 1,
                "granted_tools": sorted(set(snapshot["granted_tools"])),
            }

    @given(st.lists(any_tool_names, max_size=6))
    def test_round_trip_property(self, names: list[str]) -> None:
        """snapshot -> JSON -> from_snapshot gives the same grants."""
        grants = SessionPermissionGrants(names)
        restored = SessionPermissionGrants.from_snapshot(json.loads(json.dumps(grants.snapshot())))
        assert restored.granted_tools == sorted(set(names))


HOSTILE_SNAPSHOTS = [
    pytest.param({"version": HUGE_INT, "granted_tools": []}, "version", id="huge-version"),
    pytest.param({"version": 1, "granted_tools": [HUGE_INT]}, "granted_tools[0]", id="huge-name"),
    pytest.param({"version": 1, "granted_tools": nested(5000)}, "granted_tools[0]", id="deep-names"),
    pytest.param(nested(5000), "", id="deep-root"),
    pytest.param(HostileDict(version=1, granted_tools=[]), "", id="hostile-dict"),
    pytest.param({"version": 1, "granted_tools": HostileList(["bash"])}, "", id="hostile-list"),
    pytest.param({"version": 1, "granted_tools": [HostileObject()]}, "granted_tools[0]", id="hostile-object"),
    pytest.param({"version": 1, HostileStr("granted_tools"): []}, "", id="hostile-str-key"),
    pytest.param({**circular_dict(), "granted_tools": []}, "self", id="circular"),
]

_grants_snapshots = st.lists(any_tool_names, max_size=4).map(
    lambda names: SessionPermissionGrants(names).snapshot()
)


class TestHostileSnapshots:
    """from_snapshot and restore_snapshot raise InvalidSnapshotError for any input, the grants unchanged."""

    @pytest.mark.parametrize(("snapshot", "path"), HOSTILE_SNAPSHOTS)
    def test_refused(self, snapshot: object, path: str) -> None:
        """Both readers refuse it at the path, with a bounded message; restore changes no grant."""
        assert_refused(SessionPermissionGrants.from_snapshot, snapshot, path)
        grants = SessionPermissionGrants(["read_file"])
        with pytest.raises(InvalidSnapshotError):
            grants.restore_snapshot(snapshot)
        assert grants.granted_tools == ["read_file"]

    def test_str_subclass_names_are_their_text(self) -> None:
        """A granted name given as a hostile str subclass is kept as its plain text."""
        grants = SessionPermissionGrants.from_snapshot({"version": 1, "granted_tools": [HostileStr("bash")]})
        [name] = grants.granted_tools
        assert type(name) is str
        assert grants.is_granted("bash")

    @given(snapshot=hostile_snapshots(_grants_snapshots))
    @settings(max_examples=150, deadline=None)
    def test_fuzz(self, snapshot: object) -> None:
        """A valid snapshot with one hostile node or key restores or is refused, never another error."""
        restored = assert_reads_or_rejects(SessionPermissionGrants.from_snapshot, snapshot)
        if restored is not None:
            json.dumps(restored.snapshot())
        grants = SessionPermissionGrants(["read_file"])
        if assert_reads_or_rejects(grants.restore_snapshot, snapshot) is None:
            assert grants.granted_tools == ["read_file"]


class GrantsMachine(RuleBasedStateMachine):
    """SessionPermissionGrants behaves like a set of names."""

    def __init__(self) -> None:
        super().__init__()
        self.grants = SessionPermissionGrants()
        self.model: set[str] = set()
        self.saved: dict[str, object] | None = None

    @rule(name=any_tool_names)
    def grant(self, name: str) -> None:
        assert self.grants.grant(name) is self.grants
        self.model.add(name)

    @rule(name=any_tool_names)
    def revoke(self, name: str) -> None:
        assert self.grants.revoke(name) is self.grants
        self.model.discard(name)

    @rule()
    def clear(self) -> None:
        assert self.grants.clear() is self.grants
        self.model.clear()

    @rule()
    def save(self) -> None:
        self.saved = json.loads(json.dumps(self.grants.snapshot()))

    @precondition(lambda self: self.saved is not None)
    @rule()
    def restore(self) -> None:
        assert self.saved is not None
        self.grants.restore_snapshot(self.saved)
        tools = self.saved["granted_tools"]
        assert isinstance(tools, list)
        self.model = set(tools)

    @rule(snapshot=plain_json)
    def restore_garbage(self, snapshot: object) -> None:
        try:
            self.grants.restore_snapshot(snapshot)
        except InvalidSnapshotError:
            return
        assert isinstance(snapshot, dict)
        self.model = set(snapshot["granted_tools"])

    @rule(name=any_tool_names)
    def check(self, name: str) -> None:
        assert self.grants.is_granted(name) == (name in self.model)

    @invariant()
    def matches_model(self) -> None:
        assert self.grants.granted_tools == sorted(self.model)
        assert len(self.grants) == len(self.model)


GrantsMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25)
TestGrantsMachine = GrantsMachine.TestCase


class TestThreads:
    """Concurrent grants and revokes never lose an update."""

    def test_concurrent_grants_all_land(self) -> None:
        """Eight threads granting distinct names leave every name granted."""
        grants = SessionPermissionGrants()
        barrier = threading.Barrier(8)

        def work(worker: int) -> None:
            barrier.wait(timeout=5)
            for index in range(200):
                grants.grant(f"tool-{worker}-{index}")
                grants.is_granted(f"tool-{worker}-{index}")
                grants.snapshot()

        run_threads(*[functools.partial(work, worker) for worker in range(8)])
        assert len(grants) == 8 * 200

    def test_concurrent_revokes_and_restores_stay_consistent(self) -> None:
        """Revokes racing restores always leave a state one of them produced."""
        grants = SessionPermissionGrants(["a", "b"])
        full = {"version": 1, "granted_tools": ["a", "b"]}
        barrier = threading.Barrier(2)

        def restorer() -> None:
            barrier.wait(timeout=5)
            for _ in range(300):
                grants.restore_snapshot(full)

        def revoker() -> None:
            barrier.wait(timeout=5)
            for _ in range(300):
                grants.revoke("a").revoke("b")

        run_threads(restorer, revoker)
        assert grants.granted_tools in (["a", "b"], ["b"], [])
