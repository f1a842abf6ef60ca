"""DecisionTracer: decisions as guardrail spans, nested under pydantic-ai's own tool spans (in-memory SDK)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")  # a guard only: the test extra installs the SDK, so CI runs these

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.toolsets import FunctionToolset

from ask_permissions import ApprovalPolicy, ApprovalQueue, DecisionRecord, PermissionRules
from ask_permissions.integrations.otel import SPAN_NAME, DecisionTracer
from ask_permissions.integrations.pydantic_ai import PermissionToolset
from tests.evidence_samples import AutoApprovableTool

CALLS = [
    ("read_file", {"path": "notes.md"}),
    ("bash", {"command": "rm -rf /"}),
    ("deploy", {"target": "prod"}),
]


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    if any(isinstance(part, ToolReturnPart) for part in last.parts) or len(messages) > 1:
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(
        parts=[ToolCallPart(name, args, tool_call_id=f"tc-{n}") for n, (name, args) in enumerate(CALLS)]
    )


def _run() -> tuple[list[ReadableSpan], DecisionTracer, ApprovalPolicy, list[DecisionRecord]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = DecisionTracer(provider, arguments=True)
    records: list[DecisionRecord] = []

    def observe(record: DecisionRecord) -> None:
        records.append(record)
        tracer(record)

    policy = ApprovalPolicy(
        queue=ApprovalQueue(),
        rules=PermissionRules().deny("bash", "rm -rf").allow("read_file"),
        require_approval="deploy",
        on_decision=observe,
        record_arguments=lambda tool, arguments: (
            {**arguments, "target": "***"} if tool == "deploy" else arguments
        ),
    )
    tools: FunctionToolset[None] = FunctionToolset()

    @tools.tool_plain
    def read_file(path: str) -> str:
        return "contents"

    @tools.tool_plain
    def bash(command: str) -> str:
        raise AssertionError("never runs")

    @tools.tool_plain
    def deploy(target: str) -> str:
        return "deployed"

    agent: Agent[None, Any] = Agent(
        FunctionModel(_respond),
        toolsets=[PermissionToolset(tools, policy)],
        output_type=[str, DeferredToolRequests],
        capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))],
    )
    asyncio.run(agent.run("go"))
    return list(exporter.get_finished_spans()), tracer, policy, records


class TestSpans:
    """Each decision is an apply_guardrail span under the framework's tool span, with the GenAI attributes."""

    def test_decisions_nest_under_the_tool_spans(self) -> None:
        """A guardrail span per decided call, each a child of the span pydantic-ai made for that tool."""
        spans, tracer, _, _ = _run()
        guardrails = [span for span in spans if span.name == SPAN_NAME]
        by_id = {span.context.span_id: span for span in spans}
        finished = {str((span.attributes or {})["gen_ai.tool.name"]): span for span in guardrails}
        assert set(finished) == {"read_file", "bash"}  # deploy waits: its span is still open
        for tool, span in finished.items():
            assert span.parent is not None
            parent = by_id[span.parent.span_id]
            assert tool in str(parent.name)  # pydantic-ai's "running tool" / "execute_tool <name>" span
        tracer.close()

    def test_attributes_follow_the_guardrail_conventions(self) -> None:
        """Decision type, policy id (the rule), reason, tool name and call id are the conventions' names."""
        spans, tracer, _, _ = _run()
        (block,) = [
            s for s in spans if s.name == SPAN_NAME and (s.attributes or {})["gen_ai.tool.name"] == "bash"
        ]
        attributes = dict(block.attributes or {})
        assert attributes["gen_ai.operation.name"] == "apply_guardrail"
        assert attributes["gen_ai.security.target.type"] == "tool_call"
        assert attributes["gen_ai.security.decision.type"] == "deny"
        assert attributes["gen_ai.security.policy.name"] == "deny_rule"
        assert attributes["gen_ai.security.policy.id"] == "rule 0"
        assert attributes["gen_ai.security.decision.reason"] == "Denied by permission rules: 'bash'"
        assert attributes["gen_ai.tool.call.id"] == "tc-1"
        assert attributes["gen_ai.security.target.id"] == "tc-1"
        assert attributes["gen_ai.security.content.input.value"] == '{"command": "rm -rf /"}'
        tracer.close()

    def test_pending_and_resolution_are_events_of_one_span(self) -> None:
        """A call that waits opens a span with a pending event; the person's answer adds the resolution."""
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = DecisionTracer(provider)
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="deploy", on_decision=tracer)
        result = policy.before_tool_call({"name": "deploy", "arguments": {"target": "prod"}, "id": "tc-7"})
        assert exporter.get_finished_spans() == ()
        policy.reject(result["action_id"], feedback="not today")  # type: ignore[typeddict-item]
        (span,) = exporter.get_finished_spans()
        assert [event.name for event in span.events] == [
            "ask_permissions.pending",
            "ask_permissions.resolution",
        ]
        assert span.events[1].attributes["ask_permissions.verdict"] == "ask_denied"  # type: ignore[index]
        assert span.attributes["gen_ai.security.decision.type"] == "deny"  # type: ignore[index]
        assert "gen_ai.security.content.input.value" not in (span.attributes or {})

    def test_who_decided_and_an_edited_approval(self) -> None:
        """The resolution names who decided; approving edited arguments ends the span as a modify."""
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = DecisionTracer(provider)
        policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="deploy", on_decision=tracer)
        result = policy.before_tool_call({"name": "deploy", "arguments": {"target": "prod"}, "id": "tc-8"})
        action_id = result["action_id"]  # type: ignore[typeddict-item]
        policy.approve(action_id, arguments={"target": "staging"}, decided_by="ann")
        (span,) = exporter.get_finished_spans()
        assert [event.name for event in span.events] == [
            "ask_permissions.pending",
            "ask_permissions.resolution",
        ]
        assert span.events[1].attributes["ask_permissions.decided_by"] == "ann"  # type: ignore[index]
        assert span.attributes["gen_ai.security.decision.type"] == "modify"  # type: ignore[index]
        assert span.attributes["ask_permissions.resolution"] == "allow_modified"  # type: ignore[index]
        assert tracer.__repr__() == "<DecisionTracer pending=0>"

    def test_one_tracer_for_policies_whose_ids_meet(self) -> None:
        """Two policies, each with its own queue, share a tracer: each one's action 1 keeps its own span, and
        each span ends with its own call's answer (none is left open, none gets the other's verdict)."""
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = DecisionTracer(provider)
        first, second = (
            ApprovalPolicy(queue=ApprovalQueue(), require_approval="deploy", on_decision=tracer)
            for _ in range(2)
        )
        asked = first.before_tool_call({"name": "deploy", "arguments": {"target": "prod"}, "id": "a"})
        again = second.before_tool_call({"name": "deploy", "arguments": {"target": "test"}, "id": "b"})
        assert asked["action_id"] == again["action_id"] == 1  # type: ignore[typeddict-item]
        first.reject(1, feedback="no")
        second.approve(1)
        assert tracer.__repr__() == "<DecisionTracer pending=0>"
        spans = {
            str((span.attributes or {})["gen_ai.tool.call.id"]): span
            for span in exporter.get_finished_spans()
        }
        assert set(spans) == {"a", "b"}
        resolutions = {
            call: (span.attributes or {})["ask_permissions.resolution"] for call, span in spans.items()
        }
        assert resolutions == {"a": "ask_denied", "b": "ask_allowed"}
        for span in spans.values():
            assert [event.name for event in span.events] == [
                "ask_permissions.pending",
                "ask_permissions.resolution",
            ]

    def test_an_ask_the_queue_approves_by_itself_ends_its_span(self) -> None:
        """auto_approve answers the ask as it is made: the span ends with a resolution by auto_approve."""
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = DecisionTracer(provider)
        policy = ApprovalPolicy(
            queue=ApprovalQueue(auto_approve={"deploy": True}),
            tools={"deploy": AutoApprovableTool()},
            on_decision=tracer,
        )
        policy.before_tool_call({"name": "deploy", "arguments": {"target": "prod"}})
        assert tracer.__repr__() == "<DecisionTracer pending=0>"
        (span,) = exporter.get_finished_spans()
        assert span.events[1].attributes["ask_permissions.decided_by"] == "auto_approve"  # type: ignore[index]
        assert span.attributes["gen_ai.security.decision.type"] == "allow"  # type: ignore[index]

    def test_a_span_an_ask_displaces_still_ends(self) -> None:
        """A second ask the tracer cannot tell from one still open ends the first as unknown, not never."""
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = DecisionTracer(provider)
        for _ in range(2):
            policy = ApprovalPolicy(queue=ApprovalQueue(), require_approval="deploy", on_decision=tracer)
            policy.before_tool_call({"name": "deploy", "arguments": {"target": "prod"}})
        (ended,) = exporter.get_finished_spans()
        assert (ended.attributes or {})["ask_permissions.resolution"] == "unknown"
        assert tracer.__repr__() == "<DecisionTracer pending=1>"
        tracer.close()
        assert len(exporter.get_finished_spans()) == 2

    def test_redacted_arguments_only_when_opted_in(self) -> None:
        """The arguments a span shows are what the redaction hook kept."""
        _, tracer, policy, records = _run()
        (pending,) = [record for record in records if record.outcome == "pending"]
        policy.approve(pending.action_id)  # type: ignore[arg-type]
        assert pending.arguments == {"target": "***"}
        tracer.close()
