"""ApprovalPolicy under loose collaborators and replayed calls; resolving through the policy; outcomes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from ask_permissions import (
    Action,
    ApprovalPolicy,
    ApprovalQueue,
    DecisionRecord,
    Outcome,
    PermissionRules,
    PermissionRuleSet,
    RuleMatch,
    SessionPermissionGrants,
    ToolCall,
)

FOLDED_BASH = ["Bash", "BASH", "bash ", "\uff42\uff41\uff53\uff48", "bash\u200b"]


class _Disagreeing:
    """A rules object whose explain says the opposite of its classify."""

    def __init__(self, classify: str, explain: str) -> None:
        self._classify, self._explain = classify, explain

    def classify(self, tool_name: str, arguments: object = None) -> str:
        return self._classify

    def explain(self, tool_name: str, arguments: object = None) -> RuleMatch:
        return RuleMatch(None, None, None, self._explain)  # type: ignore[arg-type]


class TestClassifyDecides:
    """The policy decides with classify(); explain() only describes a decision it agrees with."""

    @pytest.mark.parametrize(
        ("classify", "explain", "outcome", "layer"),
        [
            ("deny", "allow", "block", "deny_rule"),
            ("allow", "deny", "proceed", "allow_rule"),
            ("ask", "allow", "pending", "ask_rule"),
        ],
        ids=["deny-explained-as-allow", "allow-explained-as-deny", "ask-explained-as-allow"],
    )
    def test_explain_never_overrules_classify(
        self, classify: str, explain: str, outcome: str, layer: str
    ) -> None:
        """Whatever explain says, classify's answer decides, and the record names no rule."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=_Disagreeing(classify, explain))  # type: ignore[arg-type]
        record = policy.evaluate(ToolCall("x"))
        assert (record.outcome, record.layer, record.rule) == (outcome, layer, None)
        assert policy.before_tool_call(ToolCall("x"))["action"] == outcome

    def test_a_rule_set_with_a_disagreeing_layer_decides_by_classify(self) -> None:
        """A rule set's explain follows its layers' explain: with a loose layer, classify decides."""
        loose: Any = _Disagreeing("deny", "allow")
        rules = PermissionRuleSet(default_rules=PermissionRules(), project_rules=loose)
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=rules)
        assert policy.before_tool_call(ToolCall("x")) == {
            "action": "block",
            "reason": "Denied by permission rules: 'x'",
        }

    def test_an_agreeing_explain_is_described(self) -> None:
        """When explain agrees, the record carries its rule."""
        own = PermissionRules().deny("x")
        match = own.explain("x")

        class Wrapper:
            def classify(self, tool_name: str, arguments: object = None) -> Any:
                return own.classify(tool_name, arguments)

            def explain(self, tool_name: str, arguments: object = None) -> RuleMatch | None:
                return own.explain(tool_name, arguments)

        record = ApprovalPolicy(queue=ApprovalQueue(), rules=Wrapper()).evaluate(ToolCall("x"))
        assert match is not None
        assert record.rule is not None
        assert (record.layer, record.rule.index) == ("deny_rule", match.index)

    def test_an_explain_returning_something_else_is_refused(self) -> None:
        """An explain() that returns no RuleMatch is a TypeError, never a proceed."""

        class Odd:
            def classify(self, tool_name: str, arguments: object = None) -> str:
                return "deny"

            def explain(self, tool_name: str, arguments: object = None) -> object:
                return "deny"

        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=Odd())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"rules\.explain\('x'\): expected a RuleMatch or None"):
            policy.before_tool_call(ToolCall("x"))


class _Grants:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def is_granted(self, tool_name: str) -> object:
        return self.answer


class TestGrantsMustSayTrue:
    """A grants collaborator grants only when is_granted returns exactly True."""

    @pytest.mark.parametrize("answer", ["yes", 1, [1], object()], ids=["yes", "one", "list", "object"])
    @pytest.mark.parametrize("which", ["session_grants", "project_grants"])
    def test_a_truthy_answer_is_not_a_grant(self, which: str, answer: object) -> None:
        """A truthy answer that is not True leaves the call waiting for a person."""
        grants: dict[str, Any] = {which: _Grants(answer)}
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="bash", **grants)
        assert policy.before_tool_call(ToolCall("bash", {}, "tc"))["action"] == "pending"

    @pytest.mark.parametrize("which", ["session_grants", "project_grants"])
    def test_true_grants(self, which: str) -> None:
        """True still grants."""
        grants: dict[str, Any] = {which: _Grants(True)}
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="bash", **grants)
        assert policy.before_tool_call(ToolCall("bash", {}, "tc")) == {"action": "proceed"}


@dataclass
class _Tool:
    name: str
    always_ask: bool = False
    side_effect_scope: str | None = None


class TestFoldedNames:
    """require_approval and always-ask declarations also meet look-alike names; allow rules do not."""

    @pytest.mark.parametrize("name", FOLDED_BASH, ids=ascii)
    @pytest.mark.parametrize("pattern", ["bash", r"^bash$"], ids=["name", "regex"])
    def test_require_approval_meets_look_alikes(self, name: str, pattern: str) -> None:
        """A call named like bash after folding needs the approval bash needs."""
        import re

        require = pattern if pattern == "bash" else re.compile(pattern)
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval=require)
        assert policy.before_tool_call(ToolCall(name, {}, "tc"))["action"] == "pending"

    @pytest.mark.parametrize("name", FOLDED_BASH, ids=ascii)
    @pytest.mark.parametrize("registry", ["mapping", "sequence"])
    def test_always_ask_meets_look_alikes(self, name: str, registry: str) -> None:
        """An unregistered name that folds to an always-ask tool is asked, whatever an allow rule says."""
        tool = _Tool("bash", always_ask=True, side_effect_scope="none")
        tools: object = {"bash": tool} if registry == "mapping" else [tool]
        policy = ApprovalPolicy(
            queue=ApprovalQueue(auto_approve={name: True}),
            rules=PermissionRules(auto_allow_dangerous=True).allow(name),
            tools=tools,
            unknown_tools="keep",  # the look-alike is no tool of the registry: that is the point
        )
        record = policy.evaluate(ToolCall(name, {}, "tc"))
        assert (record.outcome, record.layer, record.auto_approvable) == ("pending", "always_ask", False)

    @pytest.mark.parametrize(
        ("declared", "layer"),
        [({"approval_required": True}, "approval_required"), ({"risk_level": "critical"}, "elevated_risk")],
        ids=["approval-required", "elevated-risk"],
    )
    @pytest.mark.parametrize("name", ["Deploy", "DEPLOY", "deploy\u200b"], ids=ascii)
    def test_every_prompting_declaration_meets_look_alikes(
        self, declared: dict[str, object], layer: str, name: str
    ) -> None:
        """approval_required and an elevated risk level reach a look-alike name as always_ask does."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), tools={"deploy": declared})
        assert policy.evaluate(ToolCall("deploy", {}, "tc")).layer == layer
        record = policy.evaluate(ToolCall(name, {}, "tc"))
        assert (record.outcome, record.layer) == ("pending", layer)

    def test_folding_never_lends_a_registered_tools_other_declarations(self) -> None:
        """A look-alike name does not borrow "no side effects" from the tool it resembles."""
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), tools={"read": _Tool("read", side_effect_scope="none")}, mode="read_only"
        )
        assert policy.before_tool_call(ToolCall("Read", {}, "tc"))["action"] == "block"
        assert policy.before_tool_call(ToolCall("read", {}, "tc")) == {"action": "proceed"}


class TestReplayedCalls:
    """A call already pending under the same id, tool and arguments is not queued twice."""

    def _policy(self, rules: PermissionRules | None = None) -> ApprovalPolicy:
        return ApprovalPolicy(queue=ApprovalQueue(), rules=rules, require_approval="bash")

    def test_a_replay_names_the_pending_action(self) -> None:
        """The second identical call gets the first one's pending result; nothing new is queued."""
        policy = self._policy()
        first = policy.before_tool_call(ToolCall("bash", {"command": "ls"}, "tc-1"))
        again = policy.before_tool_call(ToolCall("bash", {"command": "ls"}, "tc-1"))
        assert (
            first == again == {"action": "pending", "action_id": 1, "reason": "Tool 'bash' requires approval"}
        )
        assert [action.id for action in policy.queue.pending_actions] == [1]

    @pytest.mark.parametrize(
        "call",
        [
            ToolCall("bash", {"command": "rm -rf ~"}, "tc-1"),
            ToolCall("bash", {"command": "ls"}, "tc-2"),
            ToolCall("bash", {"command": "ls"}, None),
            ToolCall("bash", {"command": True}, "tc-1"),
        ],
        ids=["other-arguments", "other-id", "no-id", "look-alike-arguments"],
    )
    def test_anything_else_is_queued_anew(self, call: ToolCall) -> None:
        """Other arguments (even == in Python), another id or no id make a new action."""
        policy = self._policy()
        policy.before_tool_call(ToolCall("bash", {"command": 1}, "tc-1"))
        policy.before_tool_call(ToolCall("bash", {"command": "ls"}, None))
        result = policy.before_tool_call(call)
        assert result["action"] == "pending"
        assert result["action_id"] == 3

    def test_a_resolved_action_is_not_reused(self) -> None:
        """Once the action is decided, the same call is decided and queued afresh."""
        policy = self._policy()
        policy.before_tool_call(ToolCall("bash", {}, "tc-1"))
        policy.queue.approve(1)
        assert policy.before_tool_call(ToolCall("bash", {}, "tc-1"))["action_id"] == 2  # type: ignore[typeddict-item]

    def test_a_deny_still_blocks_a_replay(self) -> None:
        """The pipeline runs first: a replay that a rule now denies is blocked, not sent to the old action."""
        rules = PermissionRules()
        policy = self._policy(rules)
        policy.before_tool_call(ToolCall("bash", {}, "tc-1"))
        rules.deny("bash")
        assert policy.before_tool_call(ToolCall("bash", {}, "tc-1"))["action"] == "block"

    def test_the_record_names_the_existing_action(self) -> None:
        """The replay's decision record carries the pending action's id."""
        records: list[DecisionRecord] = []
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="bash", on_decision=records.append)
        policy.before_tool_call(ToolCall("bash", {}, "tc-1"))
        policy.before_tool_call(ToolCall("bash", {}, "tc-1"))
        assert [record.action_id for record in records] == [1, 1]


class TestObserverFailure:
    """If on_decision raises after a submission, the caller still learns the action id."""

    def test_the_exception_names_the_queued_action(self) -> None:
        """The observer's own exception propagates, with a note naming the action; the action stays queued."""

        def observer(record: DecisionRecord) -> None:
            raise RuntimeError("audit log is down")

        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="bash", on_decision=observer)
        with pytest.raises(RuntimeError, match="audit log is down") as caught:
            policy.before_tool_call(ToolCall("bash", {}, "tc"))
        assert any("queued as action 1" in note for note in caught.value.__notes__)
        assert policy.queue.is_pending(1)

    def test_no_note_without_a_submission(self) -> None:
        """A block or proceed has no action to name."""

        def observer(record: DecisionRecord) -> None:
            raise RuntimeError("down")

        policy = ApprovalPolicy(queue=ApprovalQueue(), on_decision=observer)
        with pytest.raises(RuntimeError) as caught:
            policy.before_tool_call(ToolCall("read", {}, "tc"))
        assert not getattr(caught.value, "__notes__", [])


class TestResolvingThroughThePolicy:
    """policy.approve / policy.reject resolve through the queue and carry the scope."""

    def _setup(self, **kwargs: Any) -> tuple[ApprovalPolicy, SessionPermissionGrants]:
        grants = SessionPermissionGrants()
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), require_approval="bash", session_grants=grants, **kwargs
        )
        policy.before_tool_call(ToolCall("bash", {}, "tc"))
        return policy, grants

    def test_session_scope_grants_the_tool(self) -> None:
        """A session approval grants the tool: the next call proceeds."""
        policy, grants = self._setup()
        action = policy.approve(1, scope="session")
        assert action is not None
        assert action.is_approved
        assert action.resolution_scope == "session"
        assert grants.granted_tools == ["bash"]
        assert policy.before_tool_call(ToolCall("bash", {}, "tc-2")) == {"action": "proceed"}

    def test_once_scope_grants_nothing(self) -> None:
        """A one-off approval leaves the next call waiting again."""
        policy, grants = self._setup()
        policy.approve(1)
        assert grants.granted_tools == []
        assert policy.before_tool_call(ToolCall("bash", {}, "tc-2"))["action"] == "pending"

    def test_project_scope_calls_the_hook_once(self) -> None:
        """A project approval reaches on_project_grant exactly once, however often its outcome is read."""
        granted: list[Action] = []
        policy, grants = self._setup(on_project_grant=granted.append)
        action = policy.approve(1, scope="project")
        assert action is not None
        for _ in range(3):
            assert policy.outcome({"action": "pending", "action_id": 1, "reason": "r"}).runs
        assert [item.id for item in granted] == [1]
        assert grants.granted_tools == []

    def test_a_raising_hook_can_be_carried_again(self) -> None:
        """If the project hook raises, the scope counts as not carried, and the next reading tries again."""
        calls: list[int] = []

        def hook(action: Action) -> None:
            calls.append(action.id)
            if len(calls) == 1:
                raise RuntimeError("store down")

        policy, _ = self._setup(on_project_grant=hook)
        with pytest.raises(RuntimeError, match="store down"):
            policy.approve(1, scope="project")
        assert policy.outcome({"action": "pending", "action_id": 1, "reason": "r"}).runs
        assert calls == [1, 1]

    def test_unknown_and_resolved_ids_give_none(self) -> None:
        """Like the queue, the policy ignores ids that are not pending: None, nothing changes."""
        policy, _ = self._setup()
        assert policy.approve(99) is None
        assert policy.reject(1, feedback="no") is not None
        assert policy.approve(1) is None
        assert policy.reject(1) is None

    def test_a_bad_scope_approves_nothing(self) -> None:
        """An unknown scope is a ValueError, and the action stays pending."""
        policy, _ = self._setup()
        with pytest.raises(ValueError, match="Unknown resolution scope: 'forever'"):
            policy.approve(1, scope="forever")  # type: ignore[arg-type]
        assert policy.queue.is_pending(1)

    def test_on_project_grant_must_be_callable(self) -> None:
        """A hook that cannot be called is refused when the policy is built."""
        with pytest.raises(TypeError, match="on_project_grant: expected a callable"):
            ApprovalPolicy(queue=ApprovalQueue(), on_project_grant="store")  # type: ignore[arg-type]


class TestOutcome:
    """policy.outcome reads a hook result, and a queued action's current status, as run/refuse/wait."""

    def test_the_three_results(self) -> None:
        """Proceed runs, block refuses with its reason, pending waits."""
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), rules=PermissionRules().deny("rm"), require_approval="bash"
        )
        assert policy.outcome(policy.before_tool_call(ToolCall("ls"))) == Outcome("run")
        refused = policy.outcome(policy.before_tool_call(ToolCall("rm")))
        assert (refused.verdict, refused.reason) == ("refuse", "Denied by permission rules: 'rm'")
        waiting = policy.outcome(policy.before_tool_call(ToolCall("bash", {}, "tc")))
        assert waiting.waits
        assert waiting.action is not None
        assert waiting.action.id == 1

    def test_a_rejection_refuses_with_the_feedback(self) -> None:
        """After a rejection the same result refuses, and the model reads the feedback."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="bash")
        result = policy.before_tool_call(ToolCall("bash", {}, "tc"))
        policy.reject(1, feedback="use ls instead")
        outcome = policy.outcome(result)
        assert (outcome.verdict, outcome.reason) == (
            "refuse",
            "The call to 'bash' was rejected: use ls instead",
        )

    def test_a_lost_action_refuses(self) -> None:
        """A pending result whose action the queue does not know refuses: fail closed."""
        policy = ApprovalPolicy(queue=ApprovalQueue())
        outcome = policy.outcome(
            {"action": "pending", "action_id": 7, "reason": "Tool 'x' requires approval"}
        )
        assert (outcome.verdict, outcome.reason) == ("refuse", "Tool 'x' requires approval")
