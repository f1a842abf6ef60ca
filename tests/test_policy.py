"""ApprovalPolicy: the nine layers, their precedence, results, records, dry runs and unattended sessions."""

from __future__ import annotations

import enum
import functools
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import (
    ALL,
    ApprovalPolicy,
    ApprovalQueue,
    DecisionRecord,
    PermissionRules,
    RuleMatch,
    SessionPermissionGrants,
    ToolCall,
    UnknownToolError,
    args_digest,
)

from .strategies import tool_metadata

FIXED_TS = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@dataclass
class Tool:
    """A tool declaring metadata as plain attributes."""

    name: str = "tool"
    approval_required: bool = False
    auto_approvable: bool = False
    always_ask: bool = False
    risk_level: str | None = None
    side_effect_scope: str | None = None


class ProjectGrants:
    """A host-owned project grants collaborator."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)

    def is_granted(self, tool_name: str) -> bool:
        return tool_name in self.names


@dataclass(frozen=True)
class Case:
    """One row of the precedence table."""

    id: str
    call: str
    expect: tuple[str, str | None, str, bool]  # action, reason, layer, auto_approvable submitted
    rules: list[tuple[str, Any, Any]] = field(default_factory=list)
    tools: dict[str, Tool] = field(default_factory=dict)
    mode: str | None = None
    session: tuple[str, ...] = ()
    project: tuple[str, ...] = ()
    require_approval: Any = None
    auto_approve: tuple[str, ...] = ()
    arguments: Any = None
    approved: bool | None = None  # for pending rows: whether the queue approved the action at once


PROCEED = "proceed"
BLOCK = "block"
PENDING = "pending"


def deny_reason(name: str) -> str:
    return f"Denied by permission rules: '{name}'"


def pending_reason(name: str) -> str:
    return f"Tool '{name}' requires approval"


def read_only_reason(name: str) -> str:
    return f"Read-only mode blocks tools with side effects ({name})"


SIDE = Tool(side_effect_scope="workspace")
PURE = Tool(side_effect_scope="none")
RISKY = Tool(risk_level="high", side_effect_scope="none")
ALWAYS = Tool(always_ask=True, side_effect_scope="none")
AUTO = Tool(approval_required=True, auto_approvable=True, side_effect_scope="none")

CASES = [
    # 1. explicit deny
    Case(
        "deny beats session grant",
        "bash",
        (BLOCK, deny_reason("bash"), "deny_rule", False),
        rules=[("deny", "bash", None)],
        session=("bash",),
    ),
    Case(
        "deny beats project grant",
        "bash",
        (BLOCK, deny_reason("bash"), "deny_rule", False),
        rules=[("deny", "bash", None)],
        project=("bash",),
    ),
    Case(
        "deny beats always_ask",
        "x",
        (BLOCK, deny_reason("x"), "deny_rule", False),
        rules=[("deny", "x", None)],
        tools={"x": ALWAYS},
    ),
    Case(
        "deny beats full_access",
        "x",
        (BLOCK, deny_reason("x"), "deny_rule", False),
        rules=[("deny", "x", None)],
        mode="full_access",
    ),
    # 2. always_ask
    Case(
        "always_ask beats allow rule",
        "x",
        (PENDING, pending_reason("x"), "always_ask", False),
        rules=[("allow", "x", None)],
        tools={"x": ALWAYS},
        approved=False,
    ),
    Case(
        "always_ask beats full_access",
        "x",
        (PENDING, pending_reason("x"), "always_ask", False),
        tools={"x": ALWAYS},
        mode="full_access",
        approved=False,
    ),
    Case(
        "always_ask beats session grant",
        "x",
        (PENDING, pending_reason("x"), "always_ask", False),
        tools={"x": ALWAYS},
        session=("x",),
        approved=False,
    ),
    Case(
        "always_ask beats project grant",
        "x",
        (PENDING, pending_reason("x"), "always_ask", False),
        tools={"x": ALWAYS},
        project=("x",),
        approved=False,
    ),
    Case(
        "always_ask is never auto-approved",
        "x",
        (PENDING, pending_reason("x"), "always_ask", False),
        tools={"x": Tool(always_ask=True, approval_required=True, auto_approvable=True)},
        auto_approve=("x",),
        approved=False,
    ),
    Case(
        "always_ask comes before read_only",
        "x",
        (PENDING, pending_reason("x"), "always_ask", False),
        tools={"x": Tool(always_ask=True)},
        mode="read_only",
        approved=False,
    ),
    # 3. read_only
    Case(
        "read_only beats session grant",
        "x",
        (BLOCK, read_only_reason("x"), "read_only", False),
        tools={"x": SIDE},
        mode="read_only",
        session=("x",),
    ),
    Case(
        "read_only beats project grant",
        "x",
        (BLOCK, read_only_reason("x"), "read_only", False),
        tools={"x": SIDE},
        mode="read_only",
        project=("x",),
    ),
    Case(
        "read_only beats allow rule",
        "x",
        (BLOCK, read_only_reason("x"), "read_only", False),
        rules=[("allow", "x", None)],
        tools={"x": SIDE},
        mode="read_only",
    ),
    Case(
        "read_only blocks an undeclared scope",
        "x",
        (BLOCK, read_only_reason("x"), "read_only", False),
        mode="read_only",
    ),
    Case(
        "read_only blocks an unknown scope value",
        "x",
        (BLOCK, read_only_reason("x"), "read_only", False),
        tools={"x": Tool(side_effect_scope="galaxy")},
        mode="read_only",
    ),
    Case(
        "read_only lets a scope of none through",
        "x",
        (PROCEED, None, "default", False),
        tools={"x": PURE},
        mode="read_only",
    ),
    # 4. explicit allow
    Case(
        "allow beats require_approval",
        "x",
        (PROCEED, None, "allow_rule", False),
        rules=[("allow", "x", None)],
        require_approval="x",
    ),
    Case(
        "allow beats approval_required metadata",
        "x",
        (PROCEED, None, "allow_rule", False),
        rules=[("allow", "x", None)],
        tools={"x": AUTO},
    ),
    Case(
        "allow beats elevated risk",
        "x",
        (PROCEED, None, "allow_rule", False),
        rules=[("allow", "x", None)],
        tools={"x": RISKY},
    ),
    Case(
        "allow beats ask_before_changes",
        "x",
        (PROCEED, None, "allow_rule", False),
        rules=[("allow", "x", None)],
        tools={"x": SIDE},
        mode="ask_before_changes",
    ),
    Case(
        "downgraded dangerous allow is an ask rule",
        "bash",
        (PENDING, pending_reason("bash"), "ask_rule", False),
        rules=[("allow", "bash", None)],
        approved=False,
    ),
    # 5. grants
    Case(
        "session grant beats ask rule",
        "x",
        (PROCEED, None, "session_grant", False),
        rules=[("ask", "x", None)],
        session=("x",),
    ),
    Case(
        "project grant beats ask rule",
        "x",
        (PROCEED, None, "project_grant", False),
        rules=[("ask", "x", None)],
        project=("x",),
    ),
    Case(
        "session grant is checked before project grant",
        "x",
        (PROCEED, None, "session_grant", False),
        session=("x",),
        project=("x",),
        require_approval="x",
    ),
    Case(
        "grant beats require_approval",
        "x",
        (PROCEED, None, "session_grant", False),
        session=("x",),
        require_approval=ALL,
    ),
    Case(
        "grant beats approval_required metadata",
        "x",
        (PROCEED, None, "project_grant", False),
        tools={"x": AUTO},
        project=("x",),
    ),
    Case(
        "grant beats elevated risk",
        "x",
        (PROCEED, None, "session_grant", False),
        tools={"x": RISKY},
        session=("x",),
    ),
    Case(
        "grant beats ask_before_changes",
        "x",
        (PROCEED, None, "project_grant", False),
        tools={"x": SIDE},
        mode="ask_before_changes",
        project=("x",),
    ),
    Case(
        "a grant for another tool does nothing",
        "x",
        (PENDING, pending_reason("x"), "ask_rule", False),
        rules=[("ask", "x", None)],
        session=("y",),
        project=("y",),
        approved=False,
    ),
    # 6. ask rule
    Case(
        "ask rule is never auto-approvable",
        "x",
        (PENDING, pending_reason("x"), "ask_rule", False),
        rules=[("ask", "x", None)],
        tools={"x": AUTO},
        auto_approve=("x",),
        approved=False,
    ),
    Case(
        "ask rule beats full_access",
        "x",
        (PENDING, pending_reason("x"), "ask_rule", False),
        rules=[("ask", "x", None)],
        mode="full_access",
        approved=False,
    ),
    Case(
        "ask rule matches on arguments",
        "bash",
        (PENDING, pending_reason("bash"), "ask_rule", False),
        rules=[("ask", "bash", "rm -rf")],
        arguments={"command": "rm -rf /"},
        approved=False,
    ),
    # 7. full_access
    Case(
        "full_access beats elevated risk",
        "x",
        (PROCEED, None, "full_access", False),
        tools={"x": RISKY},
        mode="full_access",
    ),
    Case(
        "full_access beats require_approval",
        "x",
        (PROCEED, None, "full_access", False),
        require_approval=ALL,
        mode="full_access",
    ),
    Case(
        "full_access beats approval_required metadata",
        "x",
        (PROCEED, None, "full_access", False),
        tools={"x": AUTO},
        mode="full_access",
    ),
    # 8. ask_before_changes, elevated risk, require_approval / metadata
    Case(
        "ask_before_changes queues side effects",
        "x",
        (PENDING, pending_reason("x"), "ask_before_changes", False),
        tools={"x": SIDE},
        mode="ask_before_changes",
        approved=False,
    ),
    Case(
        "ask_before_changes queues an undeclared scope",
        "x",
        (PENDING, pending_reason("x"), "ask_before_changes", False),
        mode="ask_before_changes",
        approved=False,
    ),
    Case(
        "ask_before_changes lets a scope of none through",
        "x",
        (PROCEED, None, "default", False),
        tools={"x": PURE},
        mode="ask_before_changes",
    ),
    Case(
        "ask_before_changes comes before auto-approvable metadata",
        "x",
        (PENDING, pending_reason("x"), "ask_before_changes", False),
        tools={"x": Tool(approval_required=True, auto_approvable=True, side_effect_scope="workspace")},
        mode="ask_before_changes",
        auto_approve=("x",),
        approved=False,
    ),
    Case(
        "high risk queues",
        "x",
        (PENDING, pending_reason("x"), "elevated_risk", False),
        tools={"x": RISKY},
        approved=False,
    ),
    Case(
        "critical risk queues",
        "x",
        (PENDING, pending_reason("x"), "elevated_risk", False),
        tools={"x": Tool(risk_level="critical")},
        approved=False,
    ),
    Case(
        "medium risk is not elevated",
        "x",
        (PROCEED, None, "default", False),
        tools={"x": Tool(risk_level="medium")},
    ),
    Case(
        "elevated risk is never auto-approved",
        "x",
        (PENDING, pending_reason("x"), "elevated_risk", False),
        tools={"x": Tool(risk_level="high", approval_required=True, auto_approvable=True)},
        auto_approve=("x",),
        approved=False,
    ),
    Case(
        "require_approval by name",
        "x",
        (PENDING, pending_reason("x"), "approval_required", False),
        require_approval="x",
        approved=False,
    ),
    Case(
        "require_approval by regex",
        "write_file",
        (PENDING, pending_reason("write_file"), "approval_required", False),
        require_approval=re.compile(r"^write_"),
        approved=False,
    ),
    Case(
        "require_approval ALL",
        "x",
        (PENDING, pending_reason("x"), "approval_required", False),
        require_approval=ALL,
        approved=False,
    ),
    Case(
        "require_approval list",
        "y",
        (PENDING, pending_reason("y"), "approval_required", False),
        require_approval=["x", re.compile("^y$")],
        approved=False,
    ),
    Case(
        "require_approval of another tool",
        "z",
        (PROCEED, None, "default", False),
        require_approval=["x", re.compile("^y$")],
    ),
    Case("the string 'all' is a tool name", "x", (PROCEED, None, "default", False), require_approval="all"),
    Case(
        "metadata auto-approves when the queue allows it",
        "x",
        (PENDING, pending_reason("x"), "approval_required", True),
        tools={"x": AUTO},
        auto_approve=("x",),
        approved=True,
    ),
    Case(
        "metadata auto-approvable waits without auto_approve",
        "x",
        (PENDING, pending_reason("x"), "approval_required", True),
        tools={"x": AUTO},
        approved=False,
    ),
    Case(
        "require_approval takes auto_approvable from metadata",
        "x",
        (PENDING, pending_reason("x"), "approval_required", True),
        tools={"x": Tool(auto_approvable=True)},
        require_approval="x",
        auto_approve=("x",),
        approved=True,
    ),
    Case(
        "approval_required without auto_approvable waits",
        "x",
        (PENDING, pending_reason("x"), "approval_required", False),
        tools={"x": Tool(approval_required=True)},
        auto_approve=("x",),
        approved=False,
    ),
    # 9. default
    Case("unconfigured policy proceeds", "anything", (PROCEED, None, "default", False)),
    Case("unmatched rules proceed", "x", (PROCEED, None, "default", False), rules=[("deny", "y", None)]),
]


def build(case: Case, **extra: Any) -> tuple[ApprovalPolicy, ApprovalQueue, list[DecisionRecord]]:
    rules = PermissionRules()
    for decision, tool_pattern, argument_pattern in case.rules:
        rules.add(decision, tool_pattern, argument_pattern)  # type: ignore[arg-type]
    queue = ApprovalQueue(auto_approve=dict.fromkeys(case.auto_approve, True))
    records: list[DecisionRecord] = []
    policy = ApprovalPolicy(
        queue=queue,
        rules=rules if case.rules else None,
        require_approval=case.require_approval,
        tools=case.tools,
        mode=case.mode,  # type: ignore[arg-type]
        session_grants=SessionPermissionGrants(case.session) if case.session else None,
        project_grants=ProjectGrants(*case.project) if case.project else None,
        clock=lambda: FIXED_TS,
        on_decision=records.append,
        **extra,
    )
    return policy, queue, records


def decision_record(case: Case, records: list[DecisionRecord]) -> DecisionRecord:
    """The call's one decision record; an ask the queue approves by itself is followed by exactly one
    more, its resolution by ``auto_approve``."""
    if not case.approved:
        (record,) = records
        return record
    record, resolved = records
    assert (resolved.verdict, resolved.decided_by, resolved.action_id) == (
        "ask_allowed",
        "auto_approve",
        record.action_id,
    )
    return record


class TestPrecedence:
    """The nine layers of seed 000 decide in their order: each case pins one layer beating the next."""

    @pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
    def test_layer_decides(self, case: Case) -> None:
        """Each layer decides where seed 000 says it does, with the fixed result shape and text."""
        policy, queue, records = build(case)
        result = policy.before_tool_call(ToolCall(case.call, case.arguments, "tc-1"))
        action, reason, layer, auto_approvable = case.expect
        assert result["action"] == action
        assert result.get("reason") == reason
        record = decision_record(case, records)
        assert (record.outcome, record.layer, record.auto_approvable) == (action, layer, auto_approvable)
        if action == PENDING:
            assert set(result) == {"action", "action_id", "reason"}
            queued = queue[result["action_id"]]  # type: ignore[typeddict-item]
            assert queued is not None
            assert queued.auto_approvable is auto_approvable
            assert queued.message == f'Calling "{case.call}" requires approval'
            assert queued.tool_call_id == "tc-1"
            assert queued.is_approved is case.approved
            assert record.action_id == queued.id
        else:
            assert not queue.pending_actions
            assert queue.get(1) is None
            assert record.action_id is None
            assert set(result) == ({"action"} if action == PROCEED else {"action", "reason"})

    @pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
    def test_dry_run_agrees(self, case: Case) -> None:
        """evaluate() reports what before_tool_call does, and leaves the queue and observer untouched."""
        policy, queue, records = build(case)
        dry = policy.evaluate(ToolCall(case.call, case.arguments, "tc-1"))
        assert queue.get(1) is None
        assert records == []
        policy.before_tool_call(ToolCall(case.call, case.arguments, "tc-1"))
        real = decision_record(case, records)
        assert (dry.outcome, dry.layer, dry.reason, dry.auto_approvable, dry.rule) == (
            real.outcome,
            real.layer,
            real.reason,
            real.auto_approvable,
            real.rule,
        )
        assert dry.action_id is None


LAYERS_THAT_SUBMIT = [case for case in CASES if case.expect[0] == PENDING]


class TestUnattended:
    """interactive=False: what would wait for a person is blocked instead."""

    @pytest.mark.parametrize("case", LAYERS_THAT_SUBMIT, ids=[case.id for case in LAYERS_THAT_SUBMIT])
    def test_would_be_submission_blocks(self, case: Case) -> None:
        """interactive=False blocks what would wait for a person, and still submits what approves itself."""
        policy, queue, records = build(case, interactive=False)
        result = policy.before_tool_call(ToolCall(case.call, case.arguments, "tc-1"))
        record = decision_record(case, records)
        assert record.layer == case.expect[2]
        if case.approved:
            assert result["action"] == PENDING
            assert queue[result["action_id"]].is_approved  # type: ignore[typeddict-item, union-attr]
            assert record.outcome == PENDING
        else:
            assert result == {
                "action": "block",
                "reason": f"Tool '{case.call}' requires approval, and no one can approve it in this session",
            }
            assert queue.get(1) is None
            assert record.outcome == BLOCK
            assert record.auto_approvable is False
            assert policy.evaluate(ToolCall(case.call, case.arguments)).outcome == BLOCK


# Arguments of the wrong type, and the field the TypeError must start with.
WRONG_TYPES = [
    pytest.param({"rules": object()}, "rules", id="rules"),
    pytest.param({"session_grants": object()}, "session_grants", id="session_grants"),
    pytest.param({"project_grants": object()}, "project_grants", id="project_grants"),
    pytest.param({"require_approval": 3}, "require_approval", id="require_approval"),
    pytest.param({"require_approval": [b"bash"]}, r"require_approval\[0\]", id="require_approval-entry"),
    pytest.param({"tools": 5}, "tools", id="tools"),
    pytest.param({"tools": "fetch"}, "tools", id="tools-str"),
    pytest.param({"tools": b"fetch"}, "tools", id="tools-bytes"),
    pytest.param({"tools": [object()]}, "tools", id="unnamed-tool"),
    pytest.param({"interactive": "no"}, "interactive", id="interactive"),
    pytest.param({"on_decision": 3}, "on_decision", id="on_decision"),
    pytest.param({"clock": "now"}, "clock", id="clock"),
]


class TestConstruction:
    """The constructor checks its arguments, and every argument reads back."""

    def test_unknown_mode(self) -> None:
        """An unknown mode is a ValueError with the fixed text."""
        with pytest.raises(ValueError, match=r"^Unknown permission mode: 'turbo'$"):
            ApprovalPolicy(queue=ApprovalQueue(), mode="turbo")  # type: ignore[arg-type]

    def test_readers(self) -> None:
        """Every constructor argument has a reader returning what was passed."""
        queue = ApprovalQueue()
        rules = PermissionRules()
        grants = SessionPermissionGrants()
        project = ProjectGrants()
        tools = {"x": Tool()}
        policy = ApprovalPolicy(
            queue=queue,
            rules=rules,
            require_approval=["x"],
            tools=tools,
            mode="full_access",
            session_grants=grants,
            project_grants=project,
        )
        assert policy.queue is queue
        assert policy.rules is rules
        assert policy.require_approval == ["x"]
        assert policy.tools is tools
        assert policy.mode == "full_access"
        assert policy.session_grants is grants
        assert policy.project_grants is project
        assert policy.interactive is True
        assert policy.project_rules is None

    def test_project_rules_compose_with_rules(self) -> None:
        """project_rules composes with rules as a PermissionRuleSet, a deny in either layer winning."""
        defaults = PermissionRules().deny("bash", re.compile(r"rm\s+-rf")).allow("fetch")
        project = PermissionRules().allow("bash").ask("fetch")
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=defaults, project_rules=project)
        assert policy.project_rules is project
        assert policy.before_tool_call(ToolCall("bash", {"command": "rm -rf /"}))["action"] == BLOCK
        assert policy.before_tool_call(ToolCall("fetch"))["action"] == PENDING
        record = policy.evaluate(ToolCall("fetch"))
        assert record.rule is not None
        assert (record.rule.layer, record.rule.index) == ("project", 1)

    @pytest.mark.parametrize(("kwargs", "field"), WRONG_TYPES)
    def test_wrong_argument_types(self, kwargs: dict[str, Any], field: str) -> None:
        """A collaborator or option of the wrong type is a TypeError whose message starts with its name."""
        with pytest.raises(TypeError, match=f"^{field}"):
            ApprovalPolicy(queue=ApprovalQueue(), **kwargs)

    def test_queue_is_required(self) -> None:
        """The queue is required."""
        with pytest.raises(TypeError, match="queue"):
            ApprovalPolicy(queue=None)  # type: ignore[arg-type]


class TestToolCalls:
    """Tool calls and tool metadata in every accepted form; action ids and lookup come from the queue."""

    def test_mapping_tool_call(self) -> None:
        """A mapping with name, arguments and id is a tool call."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="x")
        result = policy.before_tool_call({"name": "x", "arguments": {"a": 1}, "id": "tc-9"})
        assert result["action"] == PENDING
        action = policy.lookup(result["action_id"])  # type: ignore[typeddict-item]
        assert action is not None
        assert (action.tool_call_id, action.args) == ("tc-9", {"a": 1})

    def test_lookup_unknown_is_none(self) -> None:
        """lookup delegates to the queue: None for an unknown id."""
        assert ApprovalPolicy(queue=ApprovalQueue()).lookup(42) is None

    def test_action_ids_are_the_queue_ids(self) -> None:
        """action_id is exactly what the queue assigned, sequentially."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval=ALL)
        ids = [policy.before_tool_call(ToolCall("x"))["action_id"] for _ in range(3)]  # type: ignore[typeddict-item]
        assert ids == [1, 2, 3]

    def test_registry_forms(self) -> None:
        """The registry may be a mapping, a sequence of named tools, or any indexable."""

        class Indexable:
            def __getitem__(self, name: str) -> Tool:
                if name == "x":
                    return Tool(name="x", approval_required=True)
                raise KeyError(name)

        for tools in (
            {"x": Tool(approval_required=True)},
            [Tool(name="x", approval_required=True)],
            Indexable(),
        ):
            policy = ApprovalPolicy(queue=ApprovalQueue(), tools=tools)
            assert policy.before_tool_call(ToolCall("x"))["action"] == PENDING
            assert policy.before_tool_call(ToolCall("y"))["action"] == PROCEED

    def test_metadata_methods_mappings_and_enums(self) -> None:
        """Metadata may be zero-argument methods, mapping keys, or enums whose value is the string."""
        import enum

        class Risk(enum.Enum):
            HIGH = "high"

        class MethodTool:
            def risk_level(self) -> Risk:
                return Risk.HIGH

        policy = ApprovalPolicy(queue=ApprovalQueue(), tools={"m": MethodTool(), "d": {"always_ask": True}})
        assert policy.evaluate(ToolCall("m")).layer == "elevated_risk"
        assert policy.evaluate(ToolCall("d")).layer == "always_ask"

    def test_auto_approvable_must_be_true(self) -> None:
        """A truthy non-True auto_approvable declaration does not make a call auto-approvable."""
        policy = ApprovalPolicy(
            queue=ApprovalQueue(auto_approve={"x": True}),
            tools={"x": {"approval_required": True, "auto_approvable": "yes"}},
        )
        result = policy.before_tool_call(ToolCall("x"))
        assert policy.lookup(result["action_id"]).is_pending  # type: ignore[typeddict-item, union-attr]


class TestDecisionRecords:
    """Every decision is recorded for on_decision, with the matched rule and a JSON-safe form."""

    def test_record_fields(self) -> None:
        """A record names the tool, digest, layer, rule, reason, id and time; to_dict is JSON-safe."""
        rules = PermissionRules().allow("read_file").ask("bash", "rm -rf")
        policy, records = _observed(rules)
        policy.before_tool_call(ToolCall("bash", {"command": "rm -rf /"}, "tc-1"))
        (record,) = records
        assert record.tool == "bash"
        assert record.args_digest == args_digest({"command": "rm -rf /"})
        assert record.rule is not None
        assert record.rule.index == 1
        assert record.rule.layer == "default"
        assert record.rule.argument_pattern == {"type": "string", "value": "rm -rf"}
        data = record.to_dict()
        assert json.loads(json.dumps(data)) == data
        assert data["ts"] == FIXED_TS.isoformat()
        assert data["rule"]["tool_pattern"] == {"type": "string", "value": "bash"}
        assert set(data) == {
            "tool",
            "args_digest",
            "outcome",
            "layer",
            "rule",
            "reason",
            "action_id",
            "auto_approvable",
            "ts",
            "verdict",
            "tool_call_id",
        }
        assert data["verdict"] == "ask"
        assert data["tool_call_id"] == "tc-1"
        assert "rm -rf /" not in json.dumps(data)

    def test_overridden_allow_rule_still_shows(self) -> None:
        """An allow rule overridden by always_ask is still the record's rule."""
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), rules=PermissionRules().allow("x"), tools={"x": {"always_ask": True}}
        )
        record = policy.evaluate(ToolCall("x"))
        assert record.layer == "always_ask"
        assert record.rule is not None
        assert record.rule.declared_decision == "allow"

    def test_unsnapshottable_pattern_is_recorded(self) -> None:
        """A regex whose flags cannot be snapshotted is recorded with flags None."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules().deny(re.compile("^x$", re.M)))
        record = policy.evaluate(ToolCall("x"))
        assert record.rule is not None
        assert record.rule.tool_pattern == {"type": "regexp", "source": "^x$", "flags": None}

    def test_observer_error_reaches_caller_after_submission(self) -> None:
        """An observer that raises propagates, and the submission it observed stays in the queue."""

        def explode(record: DecisionRecord) -> None:
            raise RuntimeError("audit sink down")

        queue = ApprovalQueue()
        policy = ApprovalPolicy(queue=queue, require_approval=ALL, on_decision=explode)
        with pytest.raises(RuntimeError, match="audit sink down"):
            policy.before_tool_call(ToolCall("x"))
        assert queue.is_pending(1)

    def test_default_clock_is_aware_utc(self) -> None:
        """Without a clock, records are stamped with an aware UTC now."""
        record = ApprovalPolicy(queue=ApprovalQueue()).evaluate(ToolCall("x"))
        assert record.ts.tzinfo is not None


def _observed(rules: PermissionRules) -> tuple[ApprovalPolicy, list[DecisionRecord]]:
    records: list[DecisionRecord] = []
    policy = ApprovalPolicy(
        queue=ApprovalQueue(), rules=rules, clock=lambda: FIXED_TS, on_decision=records.append
    )
    return policy, records


# -- properties: the dry run agrees with the hook, and both agree with a plain reading of seed 000 ---------


NAMES = ["bash", "read_file", "fetch", "deploy"]

configurations = st.fixed_dictionaries(
    {
        "rules": st.lists(
            st.tuples(
                st.sampled_from(["allow", "ask", "deny"]),
                st.sampled_from([*NAMES, ALL, re.compile("^(ba|fe)")]),
                st.sampled_from([None, "rm", "prod", re.compile(r"\d")]),
            ),
            max_size=5,
        ),
        "tools": st.dictionaries(st.sampled_from(NAMES), tool_metadata(extra_scopes=("odd",)), max_size=4),
        "mode": st.sampled_from([None, "full_access", "ask_before_changes", "read_only"]),
        "session": st.lists(st.sampled_from(NAMES), max_size=2),
        "project": st.lists(st.sampled_from(NAMES), max_size=2),
        "require_approval": st.sampled_from([None, ALL, "deploy", ["bash", re.compile("^f")]]),
        "auto_approve": st.lists(st.sampled_from(NAMES), max_size=3),
        "interactive": st.booleans(),
        "default": st.sampled_from(["proceed", "ask"]),
    }
)

calls = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from([None, {"cmd": "rm -rf"}, {"env": "prod", "n": 3}])),
    min_size=1,
    max_size=5,
)


def _policy_from(config: dict[str, Any], records: list[DecisionRecord]) -> ApprovalPolicy:
    rules = PermissionRules()
    for decision, tool_pattern, argument_pattern in config["rules"]:
        rules.add(decision, tool_pattern, argument_pattern)
    return ApprovalPolicy(
        queue=ApprovalQueue(auto_approve=dict.fromkeys(config["auto_approve"], True)),
        rules=rules,
        tools=config["tools"],
        mode=config["mode"],
        session_grants=SessionPermissionGrants(config["session"]),
        project_grants=ProjectGrants(*config["project"]),
        require_approval=config["require_approval"],
        interactive=config["interactive"],
        on_decision=records.append,
        default=config["default"],
        # The drawn rules name any tools, the drawn registry some: the seed's layers keep them.
        unknown_tools="keep",
    )


def _names_an_unregistered_tool(config: dict[str, Any]) -> bool:
    """Whether a rule, require_approval or auto_approve names no tool of a non-empty registry (the model of
    the unknown-tools check): an exact name not registered (deny and ask rules, require_approval also after
    folding), a regex that matches no registered name."""
    registry = list(config["tools"])
    if not registry:
        return False
    folded = {name.casefold() for name in registry}

    def unknown(pattern: object, folds: bool) -> bool:
        if pattern is ALL:
            return False
        if isinstance(pattern, str):
            return pattern not in registry and not (folds and pattern.casefold() in folded)
        return not any(pattern.search(name) for name in registry)  # type: ignore[attr-defined]

    required = config["require_approval"]
    patterns = [] if required is None else required if isinstance(required, list) else [required]
    return (
        any(unknown(tool, decision != "allow") for decision, tool, _ in config["rules"])
        or any(unknown(pattern, True) for pattern in patterns)
        or any(unknown(name, False) for name in config["auto_approve"])
    )


def _reference(config: dict[str, Any], name: str, arguments: Any) -> tuple[str, str, bool]:
    """The nine layers as seed 000 words them: (outcome before queueing, layer, auto_approvable)."""
    decision = PermissionRules(lambda rules: [rules.add(*rule) for rule in config["rules"]]).classify(
        name, arguments
    )
    tool = config["tools"].get(name, {})
    scope = tool.get("side_effect_scope", "unknown")
    side_effects = scope != "none"
    mode = config["mode"]
    required = config["require_approval"]
    if decision == "deny":
        return "block", "deny_rule", False
    if tool.get("always_ask"):
        return "submit", "always_ask", False
    if mode == "read_only" and side_effects:
        return "block", "read_only", False
    if decision == "allow":
        return "proceed", "allow_rule", False
    if name in config["session"]:
        return "proceed", "session_grant", False
    if name in config["project"]:
        return "proceed", "project_grant", False
    if decision == "ask":
        return "submit", "ask_rule", False
    if mode == "full_access":
        return "proceed", "full_access", False
    if mode == "ask_before_changes" and side_effects:
        return "submit", "ask_before_changes", False
    if tool.get("risk_level") in ("high", "critical"):
        return "submit", "elevated_risk", False
    listed = required is ALL or (
        any(p == name if isinstance(p, str) else p.search(name) for p in required)
        if isinstance(required, list)
        else required == name
    )
    if tool.get("approval_required") or listed:
        return "submit", "approval_required", tool.get("auto_approvable") is True
    return ("proceed" if config["default"] == "proceed" else "submit"), "default", False


class TestProperties:
    """Properties: the hook follows seed 000's layers, and the dry run agrees with it."""

    @settings(max_examples=150, deadline=None)
    @given(configurations, calls)
    def test_hook_matches_the_seed_and_the_dry_run(self, config: dict[str, Any], sample: list[Any]) -> None:
        """before_tool_call follows the nine layers; evaluate agrees with it and changes nothing."""
        records: list[DecisionRecord] = []
        policy = _policy_from(config, records)
        for name, arguments in sample:
            before = policy.queue.snapshot()
            dry = policy.evaluate(ToolCall(name, arguments, "tc"))
            assert policy.queue.snapshot() == before
            assert records == []
            result = policy.before_tool_call(ToolCall(name, arguments, "tc"))
            record, *after = records
            records.clear()
            # An ask the queue approved by itself at once is followed by its resolution, and only then.
            queued = None if record.action_id is None else policy.queue.get(record.action_id)
            answered = [("ask_allowed", "auto_approve")] if queued is not None and queued.is_approved else []
            assert [(later.verdict, later.decided_by) for later in after] == answered
            assert (dry.outcome, dry.layer, dry.reason) == (record.outcome, record.layer, record.reason)
            verdict, layer, auto_approvable = _reference(config, name, arguments)
            assert record.layer == layer
            self_approving = auto_approvable and name in config["auto_approve"]
            if verdict == "submit" and (config["interactive"] or self_approving):
                assert result["action"] == "pending"
                assert record.auto_approvable is auto_approvable
            elif verdict == "submit":
                assert result["action"] == "block"
                assert "no one can approve it" in result["reason"]
            else:
                assert result["action"] == verdict

    @settings(max_examples=150, deadline=None)
    @given(configurations)
    def test_a_registry_refuses_what_names_no_tool_of_it(self, config: dict[str, Any]) -> None:
        """With a registry, the policy is refused exactly when something names none of its tools."""
        build = functools.partial(
            ApprovalPolicy,
            queue=ApprovalQueue(auto_approve=dict.fromkeys(config["auto_approve"], True)),
            rules=PermissionRules(lambda rules: [rules.add(*rule) for rule in config["rules"]]),
            tools=config["tools"],
            require_approval=config["require_approval"],
        )
        if _names_an_unregistered_tool(config):
            with pytest.raises(UnknownToolError, match=r"^ApprovalPolicy\(tools=\.\.\.\): ") as raised:
                build()
            assert raised.value.known == tuple(config["tools"])
            assert build(unknown_tools="keep").tools == config["tools"]
        else:
            assert build().tools == config["tools"]


class TestEdges:
    """Readers of the optional arguments, opaque classifiers and malformed tool calls."""

    def test_clock_and_observer_readers(self) -> None:
        """clock and on_decision read back what was passed."""
        records: list[DecisionRecord] = []

        def clock() -> datetime:
            return FIXED_TS

        policy = ApprovalPolicy(queue=ApprovalQueue(), clock=clock, on_decision=records.append)
        assert policy.clock is clock
        assert policy.on_decision == records.append

    def test_custom_classifier_without_explain(self) -> None:
        """A rules object with only classify decides; its records name no rule."""

        class DenyEverything:
            def classify(self, tool_name: str, arguments: object = None) -> str:
                return "deny"

        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=DenyEverything())  # type: ignore[arg-type]
        assert policy.before_tool_call(ToolCall("x"))["action"] == BLOCK
        record = policy.evaluate(ToolCall("x"))
        assert (record.layer, record.rule) == ("deny_rule", None)

    def test_rule_set_with_an_opaque_layer(self) -> None:
        """A rule-set layer that cannot explain itself still decides; the record names no rule."""

        class AskEverything:
            def classify(self, tool_name: str, arguments: object = None) -> str:
                return "ask"

        policy = ApprovalPolicy(
            queue=ApprovalQueue(),
            rules=PermissionRules().allow("read_file"),
            project_rules=AskEverything(),  # type: ignore[arg-type]
        )
        record = policy.evaluate(ToolCall("read_file"))
        assert (record.outcome, record.layer, record.rule) == (PENDING, "ask_rule", None)

    def test_str_mixin_enum_tool_name(self) -> None:
        """A tool name whose str() is not its text (a str-mixin Enum member) is decided by its text."""

        class Tools(str, enum.Enum):  # noqa: UP042  # str() of a member is "Tools.BASH", not "bash"
            BASH = "bash"

        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules().deny("bash"))
        assert policy.before_tool_call(ToolCall(Tools.BASH)) == {
            "action": BLOCK,
            "reason": "Denied by permission rules: 'bash'",
        }

    def test_tool_call_without_a_name(self) -> None:
        """An object that is not a tool call is a TypeError, not a silent proceed."""
        policy = ApprovalPolicy(queue=ApprovalQueue())
        with pytest.raises(TypeError, match="tool_call"):
            policy.before_tool_call(object())
        with pytest.raises(TypeError, match="tool_call"):
            policy.before_tool_call({"arguments": {}})
        with pytest.raises(ValueError, match=r"tool_call\.name"):
            policy.before_tool_call(ToolCall(""))

    @pytest.mark.parametrize("answer", ["DENY", "block", True, 0], ids=["DENY", "block", "True", "zero"])
    def test_custom_classifier_with_an_unknown_answer(self, answer: object) -> None:
        """A custom classifier answering anything but a decision or None is refused, never a proceed."""

        class Misspelt:
            def classify(self, tool_name: str, arguments: object = None) -> object:
                return answer

        for policy in (
            ApprovalPolicy(queue=ApprovalQueue(), rules=Misspelt()),  # type: ignore[arg-type]
            ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules(), project_rules=Misspelt()),  # type: ignore[arg-type]
            ApprovalPolicy(queue=ApprovalQueue(), rules=Misspelt(), project_rules=PermissionRules()),  # type: ignore[arg-type]
        ):
            with pytest.raises(ValueError, match=f"expected 'allow', 'ask', 'deny' or None; got {answer!r}"):
                policy.before_tool_call(ToolCall("x"))
            assert policy.queue.get(1) is None

    @pytest.mark.parametrize("answer", ["DENY", None], ids=["DENY", "None"])
    def test_custom_explain_with_an_unknown_decision(self, answer: object) -> None:
        """A custom explain() whose match carries no valid decision is refused, never a proceed."""

        class MisspeltExplainer:
            def classify(self, tool_name: str, arguments: object = None) -> object:
                return answer

            def explain(self, tool_name: str, arguments: object = None) -> RuleMatch:
                return RuleMatch(None, None, None, answer)  # type: ignore[arg-type]

        for policy in (
            ApprovalPolicy(queue=ApprovalQueue(), rules=MisspeltExplainer()),  # type: ignore[arg-type]
            ApprovalPolicy(
                queue=ApprovalQueue(),
                rules=PermissionRules(),
                project_rules=MisspeltExplainer(),  # type: ignore[arg-type]
            ),
        ):
            with pytest.raises(ValueError, match=r"explain\('x'\): expected a match with the decision"):
                policy.before_tool_call(ToolCall("x"))
            assert policy.queue.get(1) is None
