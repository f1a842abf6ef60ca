"""A person's answers: why a call waits, who decided, and approvals that edit the call's arguments."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    DecisionRecord,
    InvalidSnapshotError,
    LayeredPolicy,
    MemoryStore,
    PermissionRules,
    PermissionSettings,
    SessionPermissionGrants,
    SettingsSource,
    SqliteStore,
    ToolCall,
)
from ask_permissions.policy._digest import args_digest
from ask_permissions.typing import AskExplanation

from .clock import FakeClock
from .stores import new_queue

pytestmark = pytest.mark.usefixtures("store_kind")

PROJECT = "/work/project"
WHY: AskExplanation = {
    "layer": "ask_rule",
    "rule": "Bash(git push *)",
    "source": "project",
    "reason": "Tool 'Bash' requires approval",
    "suggestions": ["Bash(git push origin main)"],
}


def _queue(**kwargs: Any) -> ApprovalQueue:
    return new_queue(**kwargs)


def _layered(queue: ApprovalQueue, **rules: list[str]) -> tuple[LayeredPolicy, list[DecisionRecord]]:
    records: list[DecisionRecord] = []
    source = SettingsSource("project", PROJECT, None, **{key: tuple(value) for key, value in rules.items()})  # type: ignore[arg-type]
    settings = PermissionSettings([source], project_dir=PROJECT)
    return LayeredPolicy(queue=queue, settings=settings, on_decision=records.append), records


def _approval(queue: ApprovalQueue, rules: PermissionRules) -> tuple[ApprovalPolicy, list[DecisionRecord]]:
    records: list[DecisionRecord] = []
    return ApprovalPolicy(queue=queue, rules=rules, on_decision=records.append), records


class TestWhy:
    """submit(why=) keeps why a call waits, complete and read-only; bad explanations are refused."""

    def test_kept_whole_and_read_only(self) -> None:
        """The explanation reads back as given, with rule, source and suggestions defaulted when left out."""
        queue = _queue()
        full = queue.submit(tool_call_id="a", tool_name="Bash", why=WHY)
        partial: Any = {"layer": "default", "reason": "r"}  # rule, source and suggestions may be left out
        bare = queue.submit(tool_call_id="b", tool_name="Bash", why=partial)
        assert queue[full] is not None
        assert queue[full].why == WHY  # type: ignore[union-attr]
        assert queue[bare].why == {  # type: ignore[union-attr]
            "layer": "default",
            "rule": None,
            "source": None,
            "reason": "r",
            "suggestions": [],
        }
        kept = queue[full].why  # type: ignore[union-attr]
        assert kept is not None
        with pytest.raises(TypeError, match="read-only"):
            kept["reason"] = "changed"
        with pytest.raises(TypeError, match="read-only"):
            kept["suggestions"].append("Bash")

    @pytest.mark.parametrize(
        ("why", "error", "match"),
        [
            ("because", TypeError, "why: expected an object"),
            ({"reason": "r"}, ValueError, r"why\.layer: expected a string \(the key is required\)"),
            ({"layer": "", "reason": "r"}, ValueError, r"why\.layer: expected a non-empty string"),
            ({"layer": "l", "reason": 3}, ValueError, r"why\.reason: expected a string"),
            ({"layer": "l", "reason": "r", "rule": 1}, ValueError, r"why\.rule: expected a string or null"),
            (
                {"layer": "l", "reason": "r", "suggestions": "Bash"},
                ValueError,
                r"why\.suggestions: expected a list",
            ),
            (
                {"layer": "l", "reason": "r", "suggestions": [""]},
                ValueError,
                r"why\.suggestions\[0\]: expected a non",
            ),
            ({"layer": "l", "reason": "r", "extra": 1}, ValueError, r"why\.extra: expected no such key"),
        ],
        ids=[
            "not-a-mapping",
            "no-layer",
            "empty-layer",
            "reason-number",
            "rule-number",
            "suggestions-str",
            "empty-suggestion",
            "unknown-key",
        ],
    )
    def test_bad_explanations_queue_nothing(self, why: object, error: type[Exception], match: str) -> None:
        """An explanation of the wrong shape raises naming the field, and nothing is queued."""
        queue = _queue()
        with pytest.raises(error, match=match):
            queue.submit(tool_call_id="a", tool_name="Bash", why=why)  # type: ignore[arg-type]
        assert queue.pending_actions == []

    def test_snapshots_carry_it(self) -> None:
        """Snapshot version 2 holds why; version 1 (the gem's) still restores, and may not hold it."""
        queue = _queue()
        queue.submit(tool_call_id="a", tool_name="Bash", why=WHY)
        snapshot = queue.snapshot()
        assert snapshot["version"] == 2
        assert snapshot["pending_actions"][0]["why"] == WHY
        restored = _queue()
        assert restored.restore_pending(snapshot) == 1
        assert restored[1].why == WHY  # type: ignore[union-attr]
        gem = {"version": 1, "next_id": 0, "pending_actions": [{"id": 1, "tool_name": "x"}]}
        assert _queue().restore_pending(gem) == 1
        with pytest.raises(InvalidSnapshotError, match=r"pending_actions\[0\]\.why: expected no such key"):
            _queue().restore_pending({**gem, "pending_actions": [{"id": 1, "tool_name": "x", "why": WHY}]})
        bad = {
            "version": 2,
            "next_id": 0,
            "pending_actions": [{"id": 1, "tool_name": "x", "why": {"layer": 1, "reason": "r"}}],
        }
        with pytest.raises(InvalidSnapshotError, match=r"pending_actions\[0\]\.why\.layer"):
            _queue().restore_pending(bad)


class TestWhoDecided:
    """Every resolution records who made it and when: the caller's name or the machine path."""

    def test_people_are_named(self) -> None:
        """approve and reject keep decided_by and stamp resolved_at by the queue's clock."""
        clock = FakeClock()
        queue = _queue(clock=clock)
        for call in ("a", "b", "c"):
            queue.submit(tool_call_id=call, tool_name="Bash")
        clock.advance(seconds=5)
        [approved] = queue.approve(1, decided_by="ann")
        [rejected] = queue.reject(2, feedback="no", decided_by="bob")
        [anonymous] = queue.approve(3)
        assert (approved.decided_by, rejected.decided_by, anonymous.decided_by) == ("ann", "bob", None)
        assert queue[1].decided_by == "ann"  # type: ignore[union-attr]
        assert queue[2].decided_by == "bob"  # type: ignore[union-attr]
        assert approved.resolved_at is not None
        assert abs(approved.resolved_at - clock()) < timedelta(seconds=1)

    def test_a_callback_sees_who_and_the_edit(self) -> None:
        """With on_approve set (a claim, then the record), the applying action already carries the answer."""
        seen: list[tuple[str, object, object]] = []
        queue = _queue(
            on_approve=lambda action: seen.append((action.status, action.decided_by, action.edited_args))
        )
        queue.submit(tool_call_id="a", tool_name="Bash", args={"command": "ls"})
        [approved] = queue.approve(1, arguments={"command": "pwd"}, decided_by="ann")
        assert seen == [("applying", "ann", {"command": "pwd"})]
        assert (approved.status, approved.decided_by, approved.edited_args) == (
            "approved",
            "ann",
            {"command": "pwd"},
        )
        assert queue[1] == approved

    def test_machine_paths_name_themselves(self) -> None:
        """The drain's approvals say auto_approve, expire_pending's rejections expiry."""
        clock = FakeClock()
        queue = _queue(clock=clock, auto_approve={"read": True})
        queue.submit(tool_call_id="a", tool_name="read", auto_approvable=True)
        queue.submit(tool_call_id="b", tool_name="Bash")
        clock.advance(minutes=10)
        queue.expire_pending(timedelta(minutes=5))
        assert queue[1].decided_by == "auto_approve"  # type: ignore[union-attr]
        assert queue[2].decided_by == "expiry"  # type: ignore[union-attr]
        assert queue[2].feedback == "expired"  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("name", "error"),
        [(3, TypeError), ("", ValueError), ("x" * 201, ValueError), ("ann\x1b[2J", ValueError)],
        ids=["number", "empty", "too-long", "control-character"],
    )
    def test_bad_names_resolve_nothing(self, name: object, error: type[Exception]) -> None:
        """A decided_by that is not 1 to 200 printable characters raises; the action stays pending."""
        queue = _queue()
        queue.submit(tool_call_id="a", tool_name="Bash")
        with pytest.raises(error, match="decided_by: expected"):
            queue.approve(1, decided_by=name)  # type: ignore[arg-type]
        with pytest.raises(error, match="decided_by: expected"):
            queue.reject(1, decided_by=name)  # type: ignore[arg-type]
        assert queue.is_pending(1)

    def test_a_rollback_forgets_the_answer(self) -> None:
        """An approval whose callback raised leaves the action pending with no decided_by or edit."""
        queue = _queue()
        queue.submit(tool_call_id="a", tool_name="Bash", args={"command": "ls"})

        def refuse(_: object) -> None:
            raise RuntimeError("no")

        queue.on_approve = refuse
        with pytest.raises(RuntimeError):
            queue.approve(1, arguments={"command": "pwd"}, decided_by="ann")
        action = queue[1]
        assert action is not None
        assert (action.status, action.decided_by, action.edited_args) == ("pending", None, None)


class TestEditedArguments:
    """approve(id, arguments=...) records a person's edit; the original arguments stay as they were."""

    def test_the_edit_is_kept_read_only(self) -> None:
        """edited_args holds the edit, approved_args what runs; args is still the model's call."""
        queue = _queue()
        queue.submit(tool_call_id="a", tool_name="Bash", args={"command": "rm -rf build dist"})
        [action] = queue.approve(1, arguments={"command": "rm -rf build"}, decided_by="ann")
        assert action.is_edited
        assert action.args == {"command": "rm -rf build dist"}
        assert action.edited_args == action.approved_args == {"command": "rm -rf build"}
        assert queue[1].edited_args == {"command": "rm -rf build"}  # type: ignore[union-attr]
        with pytest.raises(TypeError, match="read-only"):
            action.edited_args["command"] = "rm -rf /"

    def test_unedited_approvals_run_their_own_arguments(self) -> None:
        """Without arguments, approved_args is args and is_edited is false."""
        queue = _queue()
        queue.submit(tool_call_id="a", tool_name="Bash", args={"command": "ls"})
        [action] = queue.approve(1)
        assert (action.is_edited, action.approved_args) == (False, {"command": "ls"})

    @pytest.mark.parametrize(
        ("arguments", "ids", "error", "match"),
        [
            ([1, 2], (1,), TypeError, "arguments: expected a JSON object"),
            ("{}", (1,), TypeError, "arguments: expected a JSON object"),
            ({"when": timedelta(1)}, (1,), ValueError, r"arguments\.when: expected a JSON value"),
            ({"n": float("nan")}, (1,), ValueError, r"arguments\.n: expected a finite number"),
            ({"command": "ls"}, (1, 2), ValueError, "edited arguments approve one action; got 2 ids"),
        ],
        ids=["list", "json-text", "not-json", "nan", "two-ids"],
    )
    def test_bad_edits_approve_nothing(
        self, arguments: object, ids: tuple[int, ...], error: type[Exception], match: str
    ) -> None:
        """Edited arguments that are not one JSON object for one action raise; nothing is approved."""
        queue = _queue()
        queue.submit(tool_call_id="a", tool_name="Bash")
        queue.submit(tool_call_id="b", tool_name="Bash")
        with pytest.raises(error, match=match):
            queue.approve(*ids, arguments=arguments)  # type: ignore[arg-type]
        assert [action.id for action in queue.pending_actions] == [1, 2]

    def test_a_rejection_has_no_edit(self) -> None:
        """reject takes no arguments: a rejected action's edited_args is None."""
        queue = _queue()
        queue.submit(tool_call_id="a", tool_name="Bash")
        [action] = queue.reject(1, feedback="no")
        assert (action.edited_args, action.is_edited) == (None, False)


class TestPoliciesExplain:
    """Both policies say why a call waits when they queue it: layer, rule, source, reason, suggestions."""

    def test_layered_policy(self) -> None:
        """An ask rule's text and source, the model's reason, and no suggestions (an allow cannot lift it)."""
        policy, _ = _layered(_queue(), ask=["Bash(git push *)"])
        result = policy.before_tool_call(ToolCall("Bash", {"command": "git push origin main"}, "tc-1"))
        assert result["action"] == "pending"
        action = policy.queue[result["action_id"]]
        assert action is not None
        assert action.why == {
            "layer": "ask_rule",
            "rule": "Bash(git push *)",
            "source": "project",
            "reason": result["reason"],
            "suggestions": [],
            "scopes": {"once": "runs this call once"},  # an allow rule would not lift an ask rule
        }

    def test_layered_default_asks_with_suggestions(self) -> None:
        """A call nothing decided asks in the default layer, with the rules "don't ask again" writes."""
        policy, _ = _layered(_queue())
        result = policy.before_tool_call(ToolCall("Bash", {"command": "npm test"}, "tc-1"))
        assert result["action"] == "pending"
        why = policy.queue[result["action_id"]].why  # type: ignore[union-attr]
        assert why is not None
        assert (why["layer"], why["rule"], why["source"]) == ("default", None, None)
        assert why["suggestions"] == result["suggestions"] == ["Bash(npm test)"]
        assert why["scopes"] == {
            "once": "runs this call once",
            "session": "adds Bash(npm test) to the session's allow rules",
            "project": f"always: writes Bash(npm test) to {PROJECT}/.agent/settings.local.json",
        }

    def test_approval_policy_gem_rule(self) -> None:
        """A gem-style ask rule reads as a phrase; the reason is the pending result's."""
        policy, _ = _approval(_queue(), PermissionRules().ask("deploy", "prod"))
        result = policy.before_tool_call(ToolCall("deploy", {"env": "prod"}, "tc-1"))
        assert result["action"] == "pending"
        why = policy.queue[result["action_id"]].why  # type: ignore[union-attr]
        assert why == {
            "layer": "ask_rule",
            "rule": 'ask deploy, arguments containing "prod"',
            "source": None,
            "reason": "Tool 'deploy' requires approval",
            "suggestions": [],
            "scopes": {"once": "runs this call once"},  # no session grants, no project hook
        }


class TestPoliciesPassAnswersOn:
    """policy.approve / reject pass edits and names on; records say who decided and what ran."""

    def test_an_edited_approval_runs_the_edit(self) -> None:
        """outcome() runs the edited arguments; the resolution record is allow_modified with both digests."""
        policy, records = _layered(_queue())
        call = ToolCall("Bash", {"command": "rm -rf build dist"}, "tc-1")
        result = policy.before_tool_call(call)
        assert result["action"] == "pending"
        policy.approve(result["action_id"], arguments={"command": "rm -rf build"}, decided_by="ann")
        outcome = policy.outcome(result)
        assert outcome.runs
        assert outcome.modified
        assert outcome.arguments == {"command": "rm -rf build"}
        resolution = records[-1]
        assert (resolution.verdict, resolution.decided_by, resolution.modified) == (
            "allow_modified",
            "ann",
            True,
        )
        assert resolution.args_digest == args_digest({"command": "rm -rf build dist"})
        assert resolution.edited_digest == args_digest({"command": "rm -rf build"})
        assert resolution.to_dict()["edited_digest"] == resolution.edited_digest

    def test_an_edit_into_a_denied_call_is_refused(self) -> None:
        """An edit the policy would block outright (a deny rule) is refused, never run, and recorded once."""
        policy, records = _layered(_queue(), deny=["Bash(rm -rf /*)"])
        result = policy.before_tool_call(ToolCall("Bash", {"command": "rm -rf build"}, "tc-1"))
        assert result["action"] == "pending"
        policy.approve(result["action_id"], arguments={"command": "rm -rf /etc"}, decided_by="mallory")
        first, again = policy.outcome(result), policy.outcome(result)
        assert not first.runs
        assert not again.runs
        assert first.reason is not None
        assert "as edited is blocked by the policy" in first.reason
        blocked = [record for record in records if record.outcome == "block"]
        assert len(blocked) == 1
        assert blocked[0].layer == "deny_rule"

    @pytest.mark.parametrize("scope", ["session", "project"])
    def test_a_refused_edit_carries_no_scope(self, tmp_path: Path, scope: str) -> None:
        """An edit the policy refuses runs nothing, so no allow rule is written for it, here or elsewhere."""
        granted: list[int] = []
        source = SettingsSource("project", str(tmp_path), None, deny=("Bash(rm -rf /*)",))
        settings = PermissionSettings([source], project_dir=str(tmp_path))
        queue = _queue()
        policy = LayeredPolicy(
            queue=queue, settings=settings, on_project_grant=lambda action: granted.append(action.id)
        )
        here = policy.before_tool_call(ToolCall("Bash", {"command": "rm -rf build"}, "tc-1"))
        elsewhere = policy.before_tool_call(ToolCall("Bash", {"command": "rm -rf dist"}, "tc-2"))
        assert here["action"] == elsewhere["action"] == "pending"
        policy.approve(here["action_id"], scope=scope, arguments={"command": "rm -rf /etc"})  # type: ignore[arg-type]
        # The same answer through another queue object (as the command or the web inbox give it).
        ApprovalQueue(store=queue.store, session=queue.session).approve(
            elsewhere["action_id"],
            scope=scope,  # type: ignore[arg-type]
            arguments={"command": "rm -rf /usr"},
        )
        assert not policy.outcome(here).runs
        assert not policy.outcome(elsewhere).runs
        assert [(s.name, s.allow) for s in settings.sources if s.allow] == []
        assert not Path(settings.local_path).exists()
        assert granted == []

    def test_an_edit_that_would_ask_runs(self) -> None:
        """An edit the policy would only ask about runs: the person who edited it approved it."""
        policy, _ = _layered(_queue(), ask=["Bash(git push *)"])
        result = policy.before_tool_call(ToolCall("Bash", {"command": "git status"}, "tc-1"))
        policy.approve(result["action_id"], arguments={"command": "git push origin main"})  # type: ignore[typeddict-item]
        assert policy.outcome(result).arguments == {"command": "git push origin main"}

    def test_rejections_and_records_name_who(self) -> None:
        """A rejection's record says decided_by; a decision the rules took says rule."""
        policy, records = _approval(_queue(), PermissionRules().ask("deploy").allow("read"))
        policy.before_tool_call(ToolCall("read", {}, "tc-0"))
        assert records[-1].decided_by == "rule"
        result = policy.before_tool_call(ToolCall("deploy", {}, "tc-1"))
        assert records[-1].decided_by is None  # an ask: nobody has decided yet
        assert result["action"] == "pending"
        policy.reject(result["action_id"], feedback="not today", decided_by="bob")
        assert (records[-1].verdict, records[-1].decided_by) == ("ask_denied", "bob")
        assert policy.queue[result["action_id"]].decided_by == "bob"

    def test_a_resolver_may_edit_and_name_itself(self) -> None:
        """decide()'s resolver answers with arguments and decided_by; the edit is what proceeds."""
        policy, records = _layered(_queue())

        def resolver(request: object) -> dict[str, object]:
            return {"decision": "approve", "arguments": {"command": "ls -la"}, "decided_by": "chat:ann"}

        decided = policy.decide(ToolCall("Bash", {"command": "ls"}, "tc-1"), resolver=resolver)
        assert decided == {"action": "proceed", "arguments": {"command": "ls -la"}}
        assert (records[-1].verdict, records[-1].decided_by) == ("allow_modified", "chat:ann")

    def test_a_resolver_edit_that_is_not_an_object_rejects(self) -> None:
        """A resolver's arguments that are not a mapping are bad input: the action is rejected, never run."""
        policy, _ = _layered(_queue())
        with pytest.raises(ValueError, match=r"decision\.arguments: expected the edited arguments"):
            policy.decide(
                ToolCall("Bash", {"command": "ls"}, "tc-1"),
                resolver=lambda _: {"decision": "approve", "arguments": ["ls"]},
            )
        [action] = [policy.queue[1]]
        assert action is not None
        assert action.is_rejected


class TestAnswersReachTheAgent:
    """An answer given through another queue object or process is recorded by the agent once, and its
    session or project scope is carried out by the agent's process."""

    @pytest.fixture
    def two_processes(self, tmp_path: Path) -> Iterator[tuple[SqliteStore, SqliteStore]]:
        """Two stores on one database file: as separate as two processes (each its own session state)."""
        agent, person = SqliteStore(tmp_path / "approvals.db"), SqliteStore(tmp_path / "approvals.db")
        try:
            yield agent, person
        finally:
            agent.close()
            person.close()

    def test_another_process_approval_is_recorded_once(
        self, two_processes: tuple[SqliteStore, SqliteStore]
    ) -> None:
        """The agent's record of ask_allowed names who approved, however often the agent looks."""
        agent, person = two_processes
        policy, records = _layered(ApprovalQueue(store=agent, session="s"))
        result = policy.before_tool_call(ToolCall("Bash", {"command": "make"}, "tc-1"))
        assert result["action"] == "pending"
        ApprovalQueue(store=person, session="s").approve(result["action_id"], decided_by="ann")
        assert policy.outcome(result).runs
        assert policy.outcome(result).runs
        resolutions = [record for record in records if record.verdict == "ask_allowed"]
        assert len(resolutions) == 1
        assert (resolutions[0].decided_by, resolutions[0].layer) == ("ann", "default")

    def test_a_waiting_agent_records_the_answer(self, two_processes: tuple[SqliteStore, SqliteStore]) -> None:
        """queue.wait() woken by another process's rejection tells the policy: one ask_denied record."""
        agent, person = two_processes
        queue = ApprovalQueue(store=agent, session="s")
        policy, records = _layered(queue)
        result = policy.before_tool_call(ToolCall("Bash", {"command": "make"}, "tc-1"))
        assert result["action"] == "pending"
        waiting = threading.Event()
        done: list[object] = []

        def agent_waits() -> None:
            waiting.set()
            done.append(queue.wait(result["action_id"], timeout=10))

        thread = threading.Thread(target=agent_waits)
        thread.start()
        waiting.wait(5)
        ApprovalQueue(store=person, session="s").reject(result["action_id"], feedback="no", decided_by="bob")
        thread.join(10)
        assert not thread.is_alive()
        assert [(r.verdict, r.decided_by) for r in records if r.verdict == "ask_denied"] == [
            ("ask_denied", "bob")
        ]
        assert policy.outcome(result).reason == "The call to 'Bash' was rejected: no"
        assert len([r for r in records if r.verdict == "ask_denied"]) == 1

    def test_a_session_answer_elsewhere_is_honoured(
        self, two_processes: tuple[SqliteStore, SqliteStore]
    ) -> None:
        """A session approval given in another process adds the agent's session rule: the next call runs."""
        agent, person = two_processes
        policy, _ = _layered(ApprovalQueue(store=agent, session="s"))
        result = policy.before_tool_call(ToolCall("Bash", {"command": "npm test"}, "tc-1"))
        assert result["action"] == "pending"
        ApprovalQueue(store=person, session="s").approve(
            result["action_id"], scope="session", decided_by="ann"
        )
        assert policy.outcome(result).runs
        assert policy.before_tool_call(ToolCall("Bash", {"command": "npm test"}, "tc-2")) == {
            "action": "proceed"
        }

    def test_a_session_grant_elsewhere_is_honoured(
        self, two_processes: tuple[SqliteStore, SqliteStore]
    ) -> None:
        """ApprovalPolicy: a session approval from another process grants the tool in the agent's grants."""
        agent, person = two_processes
        grants = SessionPermissionGrants(store=agent, session="s")
        policy = ApprovalPolicy(
            queue=ApprovalQueue(store=agent, session="s"), require_approval=["deploy"], session_grants=grants
        )
        result = policy.before_tool_call(ToolCall("deploy", {}, "tc-1"))
        assert result["action"] == "pending"
        ApprovalQueue(store=person, session="s").approve(result["action_id"], scope="session")
        assert policy.lookup(result["action_id"]) is not None  # the agent reads the answer
        assert grants.is_granted("deploy")

    def test_another_queue_object_in_this_process(self) -> None:
        """An answer through a second queue object of the same process and session reaches the policy."""
        queue = _queue()
        policy, records = _layered(queue)
        result = policy.before_tool_call(ToolCall("Bash", {"command": "make"}, "tc-1"))
        assert result["action"] == "pending"
        other = ApprovalQueue(store=queue.store, session=queue.session)
        other.approve(result["action_id"], decided_by="ann")
        assert [(r.verdict, r.decided_by) for r in records][-1] == ("ask_allowed", "ann")
        policy.outcome(result)
        assert len([r for r in records if r.verdict == "ask_allowed"]) == 1


class TestHonouredScopes:
    """A policy over a durable queue records, per session, the answers its host carries out."""

    def test_recorded_per_session(self, tmp_path: Path) -> None:
        """Each policy records its own: a layered policy all three, a bare ApprovalPolicy once only."""
        store = SqliteStore(tmp_path / "approvals.db")
        try:
            assert store.honoured_scopes("a") is None
            _layered(ApprovalQueue(store=store, session="a"))
            ApprovalPolicy(queue=ApprovalQueue(store=store, session="b"))
            ApprovalPolicy(
                queue=ApprovalQueue(store=store, session="c"),
                session_grants=SessionPermissionGrants(store=store, session="c"),
                on_project_grant=lambda action: None,
            )
            assert sorted(store.honoured_scopes("a") or {}) == ["once", "project", "session"]
            assert store.honoured_scopes("b") == {"once": "runs this call once"}
            assert list(store.honoured_scopes("c") or {}) == ["once", "session", "project"]
        finally:
            store.close()

    def test_bad_records_are_refused(self) -> None:
        """record_scopes refuses unknown scopes, a missing once and descriptions that are not text."""
        store = MemoryStore()
        with pytest.raises(ValueError, match="expected keys among once, session, project; got 'always'"):
            store.record_scopes("s", {"once": "x", "always": "y"})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match="expected 'once' among the keys"):
            store.record_scopes("s", {"session": "x"})
        with pytest.raises(TypeError, match="expected a description"):
            store.record_scopes("s", {"once": 1})  # type: ignore[dict-item]
        assert store.honoured_scopes("s") is None
