"""Decisions as OpenTelemetry spans, after the GenAI semantic conventions for guardrails on tool calls.

``DecisionTracer`` is a decision observer: pass it as a policy's ``on_decision`` (or call it from yours).
Each decision becomes an ``apply_guardrail ask_permissions`` span (kind ``INTERNAL``), started in the
current context, so it nests under the framework's tool span when there is one (pydantic-ai's instrumented
``execute_tool``, say). Its attributes follow the GenAI conventions' guardrail (security) span:

- ``gen_ai.operation.name`` = ``apply_guardrail``, ``gen_ai.guardian.name`` = ``ask_permissions`` (and
  ``gen_ai.guardian.version``), ``gen_ai.security.target.type`` = ``tool_call``;
- ``gen_ai.security.decision.type``: ``allow``, ``modify`` (it runs with rewritten arguments) or ``deny``;
- ``gen_ai.security.policy.id``: the deciding rule (its text, ``rule N`` for a gem rule, or the id of the
  check, hook or reviewer that answered), ``gen_ai.security.policy.name``: the layer;
- ``gen_ai.security.decision.reason`` (for what is not an allow), ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id`` and ``gen_ai.security.target.id`` (the call id), and
  ``gen_ai.security.content.input.hash`` (the record's FNV-1a-64 ``args_digest``);
- ``ask_permissions.*``: the outcome, verdict, layer, source, action id, who decided, and a shadow policy's
  disagreement.

A call that waits for a person gets the event ``ask_permissions.pending`` and its span stays open until the
resolution record arrives: then the event ``ask_permissions.resolution`` (with the verdict and, when
recorded, who decided), the decision type, and the span ends. Argument values are written
(``gen_ai.security.content.input.value``) only with ``arguments=True``, and only when the policy kept them
(``record_arguments=``). The conventions are in development; the names follow them as published.

Needs ``pip install 'ask-permissions[otel]'`` (the OpenTelemetry API; the SDK is the host's).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Final, final

try:
    from opentelemetry import trace
    from opentelemetry.trace import Span, SpanKind, Tracer, TracerProvider
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.otel needs the OpenTelemetry API: pip install 'ask-permissions[otel]'"
    ) from error

from ask_permissions._version import __version__
from ask_permissions.evidence._audit import is_resolution
from ask_permissions.evidence._cases import rule_name
from ask_permissions.policy._records import DecisionRecord

__all__ = ["SPAN_NAME", "DecisionTracer"]

SPAN_NAME: Final = "apply_guardrail ask_permissions"
_OPEN_LIMIT: Final = 4096  # pending spans kept open; the oldest is ended as unresolved past this
_DECISION_TYPE: Final = {"proceed": "allow", "block": "deny"}
_AskKey = tuple[int, str, str]


@final
class DecisionTracer:
    """Turns decision records into guardrail spans (see the module's docstring).

    Thread-safe: the open spans of pending calls are kept under a private lock; spans are started and ended
    outside it.

    Args:
        tracer_provider: where the spans go (default: the global provider).
        arguments: also write the call's arguments, when the record kept them (off by default: they may
            hold secrets).
    """

    __slots__ = ("_arguments", "_lock", "_open", "_tracer")

    def __init__(self, tracer_provider: TracerProvider | None = None, *, arguments: bool = False) -> None:
        self._tracer: Final[Tracer] = trace.get_tracer("ask_permissions", __version__, tracer_provider)
        self._arguments: Final = arguments
        self._lock: Final = threading.Lock()
        self._open: OrderedDict[_AskKey, Span] = OrderedDict()

    def __repr__(self) -> str:
        with self._lock:
            return f"<DecisionTracer pending={len(self._open)}>"

    def __call__(self, record: DecisionRecord) -> None:
        """Record one decision (a policy's ``on_decision``)."""
        key = _ask_key(record)
        if key is not None and is_resolution(record.verdict, record.edited_digest):
            with self._lock:
                span = self._open.pop(key, None)
            if span is not None:
                self._resolve(span, record)
                return
        span = self._tracer.start_span(SPAN_NAME, kind=SpanKind.INTERNAL, attributes=self._attributes(record))
        if record.outcome == "pending" and key is not None:
            span.add_event("ask_permissions.pending", {"ask_permissions.action_id": key[0]})
            with self._lock:
                ended = [self._open.pop(key)] if key in self._open else []
                self._open[key] = span
                if len(self._open) > _OPEN_LIMIT:
                    ended.append(self._open.popitem(last=False)[1])
            for each in ended:  # a span no resolution can reach any more ends now, not never
                each.set_attribute("ask_permissions.resolution", "unknown")
                each.end()
            return
        span.end()

    def close(self) -> None:
        """End every span still waiting for its resolution (marked ``unknown``)."""
        with self._lock:
            spans = list(self._open.values())
            self._open.clear()
        for span in spans:
            span.set_attribute("ask_permissions.resolution", "unknown")
            span.end()

    def _resolve(self, span: Span, record: DecisionRecord) -> None:
        event: dict[str, Any] = {"ask_permissions.verdict": record.verdict or ""}
        if record.decided_by is not None:
            event["ask_permissions.decided_by"] = record.decided_by
        if record.reason:
            event["gen_ai.security.decision.reason"] = record.reason
        span.add_event("ask_permissions.resolution", event)
        span.set_attribute("gen_ai.security.decision.type", _decision_type(record))
        span.set_attribute("ask_permissions.resolution", record.verdict or "")
        if record.reason and record.outcome != "proceed":
            span.set_attribute("gen_ai.security.decision.reason", record.reason)
        span.end()

    def _attributes(self, record: DecisionRecord) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "apply_guardrail",
            "gen_ai.guardian.name": "ask_permissions",
            "gen_ai.guardian.version": __version__,
            "gen_ai.security.target.type": "tool_call",
            "gen_ai.tool.name": record.tool,
            "gen_ai.security.policy.name": record.layer,
            "gen_ai.security.content.input.hash": f"fnv1a64:{record.args_digest}",
            "ask_permissions.outcome": record.outcome,
            "ask_permissions.verdict": record.verdict or "",
            "ask_permissions.layer": record.layer,
        }
        if record.outcome != "pending":
            attributes["gen_ai.security.decision.type"] = _decision_type(record)
        if record.outcome != "proceed" and record.reason:
            attributes["gen_ai.security.decision.reason"] = record.reason
        policy_id = record.rule_id or rule_name(record.rule)
        if policy_id is not None:
            attributes["gen_ai.security.policy.id"] = policy_id
        if record.tool_call_id is not None:
            attributes["gen_ai.tool.call.id"] = str(record.tool_call_id)
            attributes["gen_ai.security.target.id"] = str(record.tool_call_id)
        if record.source is not None:
            attributes["ask_permissions.source"] = record.source
        if record.action_id is not None:
            attributes["ask_permissions.action_id"] = record.action_id
        if record.decided_by is not None:
            attributes["ask_permissions.decided_by"] = record.decided_by
        if record.shadow is not None:
            attributes["ask_permissions.shadow.outcome"] = record.shadow.outcome or "error"
            if record.shadow.layer is not None:
                attributes["ask_permissions.shadow.layer"] = record.shadow.layer
        if self._arguments and record.has_arguments:
            attributes["gen_ai.security.content.input.value"] = json.dumps(
                record.arguments, ensure_ascii=False
            )
        return attributes


def _ask_key(record: DecisionRecord) -> _AskKey | None:
    """What ties an ask's resolution to its pending record: the action id, which is only its queue's own
    (policies sharing a tracer reuse ids), with the tool and the digest of the arguments asked about."""
    if record.action_id is None:
        return None
    return (record.action_id, record.tool, record.args_digest)


def _decision_type(record: DecisionRecord) -> str:
    """``allow``, ``deny``, or ``modify`` for a call that runs with other arguments (a hook's, a person's)."""
    if record.outcome == "proceed" and record.modified:
        return "modify"
    return _DECISION_TYPE[record.outcome]
