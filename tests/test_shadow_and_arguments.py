"""Decision records as evidence: a shadow policy's disagreements, kept arguments and call ids."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    DecisionRecord,
    LayeredPolicy,
    PermissionRules,
    PermissionSettings,
    ToolCall,
    args_digest,
)
from ask_permissions.settings._sources import runtime_source

from .evidence_samples import AutoApprovableTool


def _enforced(records: list[DecisionRecord], **options: object) -> ApprovalPolicy:
    return ApprovalPolicy(
        queue=ApprovalQueue(),
        rules=PermissionRules().deny("bash", "rm -rf").allow("read_file"),
        require_approval="deploy",
        on_decision=records.append,
        **options,  # type: ignore[arg-type]
    )


class _Broken:
    def evaluate(self, tool_call: object, context: object = None) -> DecisionRecord:
        raise RuntimeError("the shadow is broken")


class TestShadow:
    """shadow= decides beside the enforced policy; its disagreements are recorded, never enforced."""

    def test_disagreements_are_recorded_agreements_are_not(self) -> None:
        """Only calls the shadow decides otherwise carry a shadow entry; the enforced outcome stands."""
        shadow = ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules().allow("deploy"))
        records: list[DecisionRecord] = []
        policy = _enforced(records, shadow=shadow)
        result = policy.before_tool_call(ToolCall("deploy", {"target": "prod"}))
        policy.before_tool_call(ToolCall("read_file", {"path": "a"}))
        assert result["action"] == "pending"
        asked, read = records
        assert asked.shadow is not None
        assert (asked.shadow.outcome, asked.shadow.layer) == ("proceed", "allow_rule")
        assert read.shadow is None
        assert asked.to_dict()["shadow"]["outcome"] == "proceed"
        assert "shadow" not in read.to_dict()
        assert shadow.queue.pending_actions == []

    def test_a_shadow_that_raises_changes_nothing(self, caplog: pytest.LogCaptureFixture) -> None:
        """A failing shadow is recorded as an error and logged; the call is decided as ever."""
        records: list[DecisionRecord] = []
        policy = _enforced(records, shadow=_Broken())
        with caplog.at_level(logging.WARNING, logger="ask_permissions.policy"):
            result = policy.before_tool_call(ToolCall("bash", {"command": "rm -rf /"}))
        assert result["action"] == "block"
        (record,) = records
        assert record.shadow is not None
        assert record.shadow.error == "RuntimeError: the shadow is broken"
        assert "shadow policy failed" in caplog.text

    def test_a_shadow_that_answers_no_record_changes_nothing(self) -> None:
        """A shadow whose evaluate returns something else than a decision record (a result dict) is
        recorded as an error: nothing raises into the call, which is decided as ever."""

        class _Answering:
            def evaluate(self, tool_call: object, context: object = None) -> DecisionRecord:
                return {"action": "proceed"}  # type: ignore[return-value]  # what a careless host passes

        records: list[DecisionRecord] = []
        policy = _enforced(records, shadow=_Answering())
        result = policy.before_tool_call(ToolCall("bash", {"command": "rm -rf /"}))
        assert result["action"] == "block"
        (record,) = records
        assert record.shadow is not None
        assert record.shadow.outcome is None
        assert record.shadow.error is not None
        assert record.shadow.error.startswith("TypeError: ")

    def test_shadow_needs_a_record_to_write_to(self) -> None:
        """shadow= without on_decision is refused: its disagreements would go nowhere."""
        with pytest.raises(ValueError, match="on_decision"):
            ApprovalPolicy(queue=ApprovalQueue(), shadow=_Broken())
        with pytest.raises(TypeError, match="shadow: expected a policy"):
            ApprovalPolicy(queue=ApprovalQueue(), shadow=object(), on_decision=print)  # type: ignore[arg-type]

    def test_layered_policy_takes_a_shadow_too(self, tmp_path: object) -> None:
        """A LayeredPolicy records what its shadow would have done."""
        settings = PermissionSettings([runtime_source("cli", "/project", allow=["Bash(git *)"])])
        records: list[DecisionRecord] = []
        shadow = ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules().deny("Bash"))
        policy = LayeredPolicy(
            queue=ApprovalQueue(), settings=settings, shadow=shadow, on_decision=records.append
        )
        policy.before_tool_call(ToolCall("Bash", {"command": "git log"}))
        (record,) = records
        assert record.outcome == "proceed"
        assert record.shadow is not None
        assert (record.shadow.outcome, record.shadow.layer) == ("block", "deny_rule")


def _auto_approving(records: list[DecisionRecord]) -> ApprovalPolicy:
    return ApprovalPolicy(
        queue=ApprovalQueue(auto_approve={"deploy": True}),
        tools={"deploy": AutoApprovableTool(), "manual": AutoApprovableTool("manual", auto_approvable=False)},
        on_decision=records.append,
        record_arguments=True,
    )


class TestAutoApprovalRecords:
    """A call the queue approved by itself is recorded as answered: the ask, then its resolution."""

    def test_approved_at_once(self) -> None:
        """Approved as it is submitted: the pending record, then a resolution by auto_approve."""
        records: list[DecisionRecord] = []
        policy = _auto_approving(records)
        result = policy.before_tool_call(ToolCall("deploy", {"target": "prod"}, "tc-1"))
        assert policy.outcome(result).verdict == "run"
        asked, resolved = records
        assert (asked.outcome, asked.verdict) == ("pending", "ask")
        assert (resolved.outcome, resolved.verdict, resolved.decided_by) == (
            "proceed",
            "ask_allowed",
            "auto_approve",
        )
        assert resolved.action_id == asked.action_id
        assert resolved.arguments == {"target": "prod"}

    def test_approved_by_a_later_drain(self) -> None:
        """Waiting behind a manual ask, then approved by the drain: its resolution comes then, once."""
        records: list[DecisionRecord] = []
        policy = _auto_approving(records)
        first = policy.before_tool_call(ToolCall("manual", {}))
        second = policy.before_tool_call(ToolCall("deploy", {"target": "prod"}))
        assert [record.verdict for record in records] == ["ask", "ask"]
        policy.approve(first["action_id"])  # type: ignore[typeddict-item]
        policy.queue.drain()
        policy.queue.drain()
        assert policy.outcome(second).verdict == "run"
        verdicts = [(record.tool, record.verdict, record.decided_by) for record in records]
        assert verdicts[2:] == [("manual", "ask_allowed", None), ("deploy", "ask_allowed", "auto_approve")]

    def test_replay_tells_it_from_a_persons_answer(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """replay reports such a call as approved by the queue itself, not by a person."""
        from ask_permissions.cli._main import main

        records: list[DecisionRecord] = []
        _auto_approving(records).before_tool_call(ToolCall("deploy", {"target": "prod"}))
        audit = tmp_path / "audit.jsonl"
        audit.write_text("".join(json.dumps(record.to_dict()) + "\n" for record in records), encoding="utf-8")
        policy = tmp_path / "allowing.json"
        policy.write_text(json.dumps({"version": 1, "permissions": {"allow": ["deploy"]}}), encoding="utf-8")
        assert main(["replay", str(policy), "--from", str(audit), "--json"]) == 1
        (change,) = json.loads(capsys.readouterr().out)["changes"]
        assert change["answers"] == {"auto-approved": 1}


class TestKeptArguments:
    """record_arguments= keeps the call's arguments in the records, through a redaction hook if given."""

    def test_off_by_default(self) -> None:
        """Without the opt-in, no record holds the arguments."""
        records: list[DecisionRecord] = []
        _enforced(records).before_tool_call(ToolCall("read_file", {"path": "secret.txt"}, "tc-9"))
        (record,) = records
        assert not record.has_arguments
        assert "secret.txt" not in json.dumps(record.to_dict())
        assert record.to_dict()["tool_call_id"] == "tc-9"

    def test_kept_arguments_are_json_safe_and_in_order(self) -> None:
        """Kept arguments are plain JSON data, key order kept; the digest is still the call's."""
        records: list[DecisionRecord] = []
        arguments = {"z": 1, "a": {"set": {3}}, "path": "b"}
        _enforced(records, record_arguments=True).before_tool_call(ToolCall("read_file", arguments))
        data = records[0].to_dict()
        assert list(data["arguments"]) == ["z", "a", "path"]
        assert json.loads(json.dumps(data)) == data
        assert data["args_digest"] == args_digest(arguments)

    def test_the_redaction_hook_decides_what_is_kept(self) -> None:
        """The hook sees the tool and the arguments; the record keeps what it returns."""
        records: list[DecisionRecord] = []
        seen: list[str] = []

        def redact(tool: str, arguments: dict[str, object]) -> dict[str, object]:
            seen.append(tool)
            return {key: "***" if key == "token" else value for key, value in arguments.items()}

        policy = _enforced(records, record_arguments=redact)
        result = policy.before_tool_call(ToolCall("deploy", {"target": "prod", "token": "s3cr3t"}))
        policy.approve(result["action_id"])  # type: ignore[typeddict-item]
        asked, resolved = records
        assert asked.arguments == {"target": "prod", "token": "***"}
        assert resolved.verdict == "ask_allowed"
        assert resolved.arguments == asked.arguments
        assert seen == ["deploy"]
        assert "s3cr3t" not in json.dumps([record.to_dict() for record in records])

    def test_a_bad_opt_in_is_refused(self) -> None:
        """record_arguments takes True, False or a function."""
        with pytest.raises(TypeError, match="record_arguments"):
            ApprovalPolicy(queue=ApprovalQueue(), record_arguments="yes")  # type: ignore[arg-type]
