"""Checks as functions, rewritten arguments (modify), hooks written in Python, and record verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    Check,
    DecisionRecord,
    PermissionCheck,
    PermissionRules,
    ToolCall,
    allow_all,
    args_digest,
    check,
    deny_all,
)


def _policy(**kwargs: Any) -> tuple[ApprovalPolicy, list[DecisionRecord]]:
    records: list[DecisionRecord] = []
    return ApprovalPolicy(queue=ApprovalQueue(), on_decision=records.append, **kwargs), records


def _rewrite(arguments: object, rule_id: str = "rewrite") -> Any:
    return check(lambda call: PermissionCheck.modify(arguments), rule_id=rule_id)


class TestCheckFunctions:
    """check(fn) makes a layer of a plain function; its id rides the record verbatim."""

    def test_a_checks_deny_blocks_with_its_reason_and_id(self) -> None:
        """The model reads the check's reason; the record carries its rule_id and verdict deny."""
        no_shell = check(
            lambda call: (
                PermissionCheck.deny("shell execution is disabled in this session")
                if call.name == "bash"
                else None
            ),
            rule_id="no-shell",
        )
        policy, records = _policy(checks=[no_shell])
        assert policy.before_tool_call(ToolCall("bash", {"command": "ls"})) == {
            "action": "block",
            "reason": "shell execution is disabled in this session",
        }
        assert (records[0].layer, records[0].rule_id, records[0].verdict) == ("check", "no-shell", "deny")
        assert policy.before_tool_call(ToolCall("read", {})) == {"action": "proceed"}

    def test_the_default_id_is_check(self) -> None:
        """Without a rule_id the record says "check"; a bare function works as a check too."""
        policy, records = _policy(checks=[lambda call: PermissionCheck.ask("Allow it?")])
        result = policy.before_tool_call(ToolCall("x", {}, "tc"))
        assert result == {"action": "pending", "action_id": 1, "reason": "Allow it?"}
        assert (records[0].rule_id, records[0].verdict) == ("check", "ask")

    def test_deny_all_is_a_sandbox(self) -> None:
        """deny_all blocks every call with "blocked by policy"."""
        policy, _ = _policy(checks=[deny_all()])
        assert policy.before_tool_call(ToolCall("read_file")) == {
            "action": "block",
            "reason": "blocked by policy",
        }

    def test_allow_all_never_lifts_a_deny_or_an_ask_rule(self) -> None:
        """allow_all passes everything except what the guards stop."""
        rules = PermissionRules().deny("rm").ask("bash")
        policy, _ = _policy(checks=[allow_all()], rules=rules, require_approval="write")
        assert policy.before_tool_call(ToolCall("write", {}, "tc"))["action"] == "proceed"
        assert policy.before_tool_call(ToolCall("rm"))["action"] == "block"
        assert policy.before_tool_call(ToolCall("bash", {}, "tc"))["action"] == "pending"

    @pytest.mark.parametrize(
        ("answers", "expected", "rule_id"),
        [
            (["allow", "deny", "ask", "modify"], "block", "deny"),
            (["modify", "ask", "allow"], "pending", "ask"),
            (["allow", "modify"], "proceed", "modify"),
            (["allow"], "proceed", "allow"),
            ([None, None], "proceed", None),
        ],
        ids=["deny-beats-all", "ask-beats-modify", "modify-beats-allow", "allow", "all-pass"],
    )
    def test_precedence_lattice(self, answers: list[str | None], expected: str, rule_id: str | None) -> None:
        """Deny beats ask beats modify beats allow, whatever the order; the deciding check is recorded."""
        made = {
            "allow": PermissionCheck.allow(),
            "deny": PermissionCheck.deny("no"),
            "ask": PermissionCheck.ask(),
            "modify": PermissionCheck.modify({"safe": True}),
        }

        def answering(answer: str | None) -> Check:
            return check(lambda call: None if answer is None else made[answer], rule_id=str(answer))

        checks = [answering(answer) for answer in answers]
        policy, records = _policy(checks=checks)
        assert policy.before_tool_call(ToolCall("x", {}, "tc"))["action"] == expected
        assert records[0].rule_id == rule_id

    def test_a_misspelt_answer_is_refused(self) -> None:
        """A check answering something that is not a PermissionCheck raises, never a proceed."""
        policy, _ = _policy(checks=[lambda call: "deny"])
        with pytest.raises(TypeError, match="check 'check': expected a PermissionCheck or None; got 'deny'"):
            policy.before_tool_call(ToolCall("x"))

    @pytest.mark.parametrize("bad", ["deny", 3, [None]], ids=["str", "int", "list-of-none"])
    def test_checks_must_be_checks(self, bad: object) -> None:
        """checks= refuses what is not a list of checks or functions."""
        with pytest.raises(TypeError, match="checks"):
            ApprovalPolicy(queue=ApprovalQueue(), checks=bad)  # type: ignore[arg-type]


class TestModify:
    """Proceed with replaced arguments: deny and ask rules see them; the digest stays the model's."""

    def test_the_result_carries_the_new_arguments(self) -> None:
        """The key appears only when the arguments were replaced; the record says allow_modified."""
        policy, records = _policy(checks=[_rewrite({"command": "ls --safe"})])
        result = policy.before_tool_call(ToolCall("bash", {"command": "ls"}))
        assert result == {"action": "proceed", "arguments": {"command": "ls --safe"}}
        (record,) = records
        assert (record.outcome, record.verdict, record.modified) == ("proceed", "allow_modified", True)
        assert record.args_digest == args_digest({"command": "ls"})
        assert record.to_dict()["modified"] is True
        assert policy.outcome(result).arguments == {"command": "ls --safe"}

    def test_a_rewrite_cannot_smuggle_a_denied_call(self) -> None:
        """A rewrite into a call a deny rule stops is blocked, by the deny rule."""
        policy, records = _policy(
            checks=[_rewrite({"command": "rm -rf ~"})], rules=PermissionRules().deny("bash", "rm -rf")
        )
        assert policy.before_tool_call(ToolCall("bash", {"command": "ls"})) == {
            "action": "block",
            "reason": "Denied by permission rules: 'bash'",
        }
        assert records[0].layer == "deny_rule"

    def test_an_ask_rule_on_the_new_arguments_queues_them(self) -> None:
        """What a person approves is the rewritten call, and that is what runs after the approval."""
        policy, _ = _policy(
            checks=[_rewrite({"command": "git push"})], rules=PermissionRules().ask("bash", "push")
        )
        result = policy.before_tool_call(ToolCall("bash", {"command": "git status"}, "tc"))
        assert result == {
            "action": "pending",
            "action_id": 1,
            "reason": "Tool 'bash' requires approval",
            "arguments": {"command": "git push"},
        }
        action = policy.lookup(1)
        assert action is not None
        assert action.args == {"command": "git push"}
        policy.approve(1)
        outcome = policy.outcome(result)
        assert (outcome.verdict, outcome.modified, outcome.arguments) == (
            "run",
            True,
            {"command": "git push"},
        )

    def test_rewrites_compose(self) -> None:
        """A later check sees the earlier check's rewrite; the last rewrite runs."""
        seen: list[object] = []

        def second(call: ToolCall) -> PermissionCheck:
            seen.append(call.arguments)
            return PermissionCheck.modify({"n": 2})

        policy, records = _policy(checks=[_rewrite({"n": 1}, "first"), check(second, rule_id="second")])
        assert policy.before_tool_call(ToolCall("x", {"n": 0})) == {
            "action": "proceed",
            "arguments": {"n": 2},
        }
        assert seen == [{"n": 1}]
        assert records[0].rule_id == "second"

    @given(
        original=st.text(max_size=12),
        replacement=st.text(max_size=12),
        denied=st.lists(st.text(min_size=1, max_size=3), max_size=4),
    )
    def test_a_modify_never_turns_a_denied_call_into_a_proceed(
        self, original: str, replacement: str, denied: list[str]
    ) -> None:
        """Whatever the rewrite, a call the deny rules block (before or after it) never proceeds."""
        rules = PermissionRules()
        for text in denied:
            rules.deny("bash", text)
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), rules=rules, checks=[_rewrite({"command": replacement})]
        )
        result = policy.before_tool_call(ToolCall("bash", {"command": original}))
        if rules.denies("bash", {"command": original}) or rules.denies("bash", {"command": replacement}):
            assert result["action"] == "block"
        else:
            assert result == {"action": "proceed", "arguments": {"command": replacement}}


class TestFunctionHooks:
    """Hooks written in Python run first; their deny blocks, anything else passes the guards."""

    def test_a_hooks_deny_blocks_before_any_rule(self) -> None:
        """A hook's deny blocks with its reason; the record names the hook."""

        def never_rm(call: ToolCall) -> PermissionCheck | None:
            return PermissionCheck.deny("rm is never used here") if "rm" in str(call.arguments) else None

        policy, records = _policy(hooks=[never_rm], rules=PermissionRules().allow("bash", "rm"))
        assert policy.before_tool_call(ToolCall("bash", {"command": "rm x"})) == {
            "action": "block",
            "reason": "rm is never used here",
        }
        assert (records[0].layer, records[0].rule_id) == ("hook", "never_rm")

    def test_a_hooks_allow_cannot_lift_a_deny_rule(self) -> None:
        """A hook that allows everything still meets the deny rules."""
        policy, _ = _policy(hooks=[lambda call: PermissionCheck.allow()], rules=PermissionRules().deny("rm"))
        assert policy.before_tool_call(ToolCall("rm"))["action"] == "block"
        assert policy.before_tool_call(ToolCall("ls")) == {"action": "proceed"}

    def test_unattended_asks_from_hooks_become_blocks(self) -> None:
        """Headless with hooks: the hooks answer first; what is still an ask is blocked, ask_unresolved."""
        records: list[DecisionRecord] = []
        policy = ApprovalPolicy(
            queue=ApprovalQueue(),
            hooks=[lambda call: PermissionCheck.ask() if call.name == "deploy" else PermissionCheck.allow()],
            interactive=False,
            on_decision=records.append,
        )
        assert policy.before_tool_call(ToolCall("read", {}, "tc")) == {"action": "proceed"}
        assert policy.before_tool_call(ToolCall("deploy", {}, "tc"))["action"] == "block"
        assert records[-1].verdict == "ask_unresolved"
        assert policy.queue.pending_actions == []

    def test_unused_layers_are_not_run_but_still_listed(self) -> None:
        """A policy without hooks or checks lists every layer of its table."""
        assert ApprovalPolicy(queue=ApprovalQueue()).layers[:6] == (
            "hook",
            "deny_rule",
            "read_limit",
            "always_ask",
            "read_only",
            "check",
        )
