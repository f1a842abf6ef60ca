"""DecisionRecord: every permission decision as data, for explaining and auditing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol, final

from ask_permissions._json_text import write_json
from ask_permissions._vocabulary import Decision, DecisionLayer, HookAction, RecordVerdict, RuleSetLayer
from ask_permissions.rules._patterns import StoredArgumentPattern, ToolPattern, encode_pattern
from ask_permissions.rules._rules import RuleMatch

__all__ = [
    "DecisionRecord",
    "Evaluator",
    "MatchedRule",
    "ShadowRecord",
    "describe_patterns",
    "kept_arguments",
    "record_call_id",
]


def _pattern_record(pattern: ToolPattern | StoredArgumentPattern) -> Mapping[str, object]:
    try:
        data = encode_pattern(pattern)
    except ValueError:  # a regex flag a snapshot cannot carry: keep the source, say the flags are unknown
        data = {"type": "regexp", "source": getattr(pattern, "pattern", str(pattern)), "flags": None}
    return MappingProxyType(data)


def describe_patterns(
    decision: str, tool_pattern: Mapping[str, object], argument_pattern: Mapping[str, object] | None
) -> str:
    """A rule in one short phrase, from its decision and its patterns in snapshot form."""
    kind = tool_pattern.get("type")
    if kind == "all":
        tool = "every tool"
    elif kind == "regexp":
        tool = f"tools matching {_regex(tool_pattern)}"
    else:
        tool = str(tool_pattern.get("value"))
    text = f"{decision} {tool}"
    if argument_pattern is None or argument_pattern.get("type") == "all":
        return text
    if argument_pattern.get("type") == "regexp":
        return f"{text}, arguments matching {_regex(argument_pattern)}"
    if argument_pattern.get("type") in ("command", "path", "domain"):
        return f"{text}({argument_pattern.get('text')})"
    return f"{text}, arguments containing {json.dumps(argument_pattern.get('value'), ensure_ascii=False)}"


def _regex(pattern: Mapping[str, object]) -> str:
    flags = pattern.get("flags")
    return f"/{pattern.get('source')}/{'' if flags is None else flags}"


@final
@dataclass(frozen=True, slots=True)
class MatchedRule:
    """The rule that matched a call: where it sits, what it declared and its patterns in snapshot form.

    ``text`` is the rule as written, for rules written as text (``Bash(git status)``); ``to_dict`` leaves it
    out otherwise.
    """

    index: int
    layer: RuleSetLayer
    declared_decision: Decision
    effective_decision: Decision
    tool_pattern: Mapping[str, object]
    argument_pattern: Mapping[str, object] | None
    text: str | None = None
    """The rule text the rule was read from (``Bash(npm test)``), or ``None`` for a gem-style rule."""
    parts: tuple[tuple[str, int, str | None], ...] = ()
    """For a call allowed sub-command by sub-command: each sub-command, its allow rule's index and text."""

    @classmethod
    def from_match(cls, match: RuleMatch) -> MatchedRule | None:
        """The record of a rule match (``None`` when the match names no rule)."""
        rule = match.rule
        if rule is None or match.index is None:
            return None
        return cls(
            index=match.index,
            layer=match.layer or "default",
            declared_decision=rule.declared_decision,
            effective_decision=rule.effective_decision,
            tool_pattern=_pattern_record(rule.tool_pattern),
            argument_pattern=None
            if rule.argument_pattern is None
            else _pattern_record(rule.argument_pattern),
            text=rule.text,
            parts=tuple((part.subcommand, part.index, part.rule.text) for part in match.parts),
        )

    @property
    def described(self) -> str:
        """The rule as a person reads it: its text (``Bash(git status)``), or its patterns in a phrase
        (``ask bash, arguments containing "rm"``) for a rule that was not written as text."""
        if self.text is not None:
            return self.text
        return describe_patterns(self.declared_decision, self.tool_pattern, self.argument_pattern)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data."""
        data: dict[str, Any] = {
            "index": self.index,
            "layer": self.layer,
            "declared_decision": self.declared_decision,
            "effective_decision": self.effective_decision,
            "tool_pattern": dict(self.tool_pattern),
            "argument_pattern": None if self.argument_pattern is None else dict(self.argument_pattern),
        }
        if self.text is not None:
            data["text"] = self.text
        if self.parts:
            data["parts"] = [
                {"subcommand": sub, "index": index, "text": text} for sub, index, text in self.parts
            ]
        return data


@final
@dataclass(frozen=True, slots=True)
class ShadowRecord:
    """What a policy's ``shadow=`` policy decided for a call where it disagreed with the enforced one.

    ``error`` names what the shadow raised instead of deciding (then ``outcome`` and ``layer`` are ``None``).
    """

    outcome: HookAction | None
    layer: str | None
    rule: MatchedRule | None = None
    reason: str | None = None
    source: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data; ``source`` and ``error`` only when set."""
        data: dict[str, Any] = {
            "outcome": self.outcome,
            "layer": self.layer,
            "rule": None if self.rule is None else self.rule.to_dict(),
            "reason": self.reason,
        }
        if self.source is not None:
            data["source"] = self.source
        if self.error is not None:
            data["error"] = self.error
        return data


def kept_arguments(arguments: object) -> object:
    """A call's arguments as JSON-safe data an audit line can hold, key order kept (any value has one)."""
    return json.loads(write_json(arguments))


def record_call_id(call_id: object) -> str | int | None:
    """A call id as a record holds it: a string or integer as it is, anything else as its ``str``."""
    if call_id is None or (isinstance(call_id, str | int) and not isinstance(call_id, bool)):
        return call_id
    return str(call_id)


@final
@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One decision of a policy, as data. The call's arguments are stored only when the policy was asked to
    keep them (``record_arguments=``).

    Attributes:
        tool: the tool's name.
        args_digest: FNV-1a-64 of the arguments' canonical JSON (16 hex characters).
        outcome: ``"proceed"``, ``"block"`` or ``"pending"``.
        layer: the policy layer that decided.
        rule: the rule that matched the call, whichever layer decided, or ``None``.
        reason: the result's reason, or ``None``.
        action_id: the queued action's id, or ``None`` (always ``None`` in a dry run).
        auto_approvable: what was (or would be) submitted; ``False`` when nothing was.
        ts: when the decision was taken, from the policy's clock.
        source: the settings source of the deciding rule, for policies that have sources (``None``
            otherwise; ``to_dict`` then leaves the key out).
        verdict: the decision in seed 001's vocabulary (``allow``, ``allow_modified``, ``deny``, ``ask``, and
            for an ask's resolution ``ask_allowed``, ``ask_denied``, ``ask_unresolved``, ``ask_expired``,
            ``cancelled``). Computed from ``outcome`` when not given.
        modified: the call runs with replaced arguments (``args_digest`` stays the digest of the model's
            original arguments: it identifies the call the model made).
        rule_id: the id of the check function that decided, if one did.
        sandboxed: the call proceeds because it runs in the policy's sandbox (the ``sandbox`` layer).
        tool_call_id: the call's id, as the framework gave it (``None`` when it gave none).
        arguments: the call's arguments (JSON-safe, as the policy's redaction hook left them), when
            ``has_arguments``; a replay of the record needs them.
        has_arguments: whether the policy kept the arguments (``record_arguments=``).
        shadow: what the policy's shadow policy decided, when it disagreed (else ``None``).
        decided_by: who decided: ``"rule"`` (the policy's own layers) or ``"reviewer"`` (``auto`` mode's
            reviewer) for a proceed or block; for an ask's resolution, the action's ``decided_by`` (a
            person's name, ``"auto_approve"``, ``"expiry"``, ``"policy"``); ``None`` for an ask, or an
            answer nobody named.
        edited_digest: for an approval with a person's edited arguments (verdict ``allow_modified``), the
            digest of those arguments (``args_digest`` stays the digest of the call the model made).
    """

    tool: str
    args_digest: str
    outcome: HookAction
    layer: DecisionLayer
    rule: MatchedRule | None
    reason: str | None
    action_id: int | None
    auto_approvable: bool
    ts: datetime
    source: str | None = None
    verdict: RecordVerdict | None = None
    modified: bool = False
    rule_id: str | None = None
    sandboxed: bool = False
    tool_call_id: str | int | None = None
    arguments: object = None
    has_arguments: bool = False
    shadow: ShadowRecord | None = None
    decided_by: str | None = None
    edited_digest: str | None = None

    def __post_init__(self) -> None:
        if self.verdict is None:
            # The verdict a decision's outcome implies; a resolution's is always given.
            implied = {
                "proceed": "allow_modified" if self.modified else "allow",
                "block": "deny",
                "pending": "ask",
            }
            object.__setattr__(self, "verdict", implied[self.outcome])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data: the field names as keys, ``ts`` in ISO 8601, ``rule`` as a nested dict.

        ``verdict`` is always there; keys of fields that do not apply (``source``, ``rule_id``,
        ``tool_call_id``, ``shadow``, ``decided_by``, ``edited_digest``, ``modified`` and ``sandboxed``
        when false, ``arguments`` when not kept) are left out.
        """
        data: dict[str, Any] = {
            "tool": self.tool,
            "args_digest": self.args_digest,
            "outcome": self.outcome,
            "layer": self.layer,
            "rule": None if self.rule is None else self.rule.to_dict(),
            "reason": self.reason,
            "action_id": self.action_id,
            "auto_approvable": self.auto_approvable,
            "ts": self.ts.isoformat(),
            "verdict": self.verdict,
        }
        if self.source is not None:
            data["source"] = self.source
        if self.modified:
            data["modified"] = True
        if self.rule_id is not None:
            data["rule_id"] = self.rule_id
        if self.sandboxed:
            data["sandboxed"] = True
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.has_arguments:
            data["arguments"] = self.arguments
        if self.shadow is not None:
            data["shadow"] = self.shadow.to_dict()
        if self.decided_by is not None:
            data["decided_by"] = self.decided_by
        if self.edited_digest is not None:
            data["edited_digest"] = self.edited_digest
        return data


class Evaluator(Protocol):
    """Anything that decides a call as a dry run, as every policy's ``evaluate`` does: what ``shadow=``
    takes."""

    def evaluate(self, tool_call: object, context: object = None) -> DecisionRecord:
        """Decide one call as a dry run, changing nothing."""
        ...
