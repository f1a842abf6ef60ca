"""Replaying recorded calls under another policy: which outcomes would change, grouped by rule.

Recorded calls come from audit lines (decision records whose policy kept the arguments,
``record_arguments=``) or from a store's actions (every call that waited for a person, with the person's
answer). Each is decided again as a dry run (``policy.evaluate``): nothing is queued, nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Final, final

from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._digest import args_digest
from ask_permissions.queue._history import HistoryEntry
from ask_permissions.queue._queue import AUTO_APPROVER
from ask_permissions.typing import Evaluator

from ._audit import APPROVALS, AuditLine

__all__ = ["Change", "RecordedCall", "Replay", "calls_from_audit", "calls_from_store", "replay"]

EXAMPLES_PER_CHANGE: Final = 3
EDITED: Final = "edited"
"""The answer of an ask a person approved only with arguments of their own (the call as made was not)."""
AUTO_APPROVED: Final = "auto-approved"
"""The answer of an ask the queue approved by itself (``auto_approve``): no person answered it."""
UNREPLAYABLE_SHOWN: Final = 20


@final
@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A call as recorded: where, what, what was decided then, and a person's answer if there was one.

    ``answer`` is ``"approved"``, ``"edited"`` (approved only with a person's own arguments),
    ``"auto-approved"`` (by the queue itself), ``"rejected"`` or ``"pending"`` for a call that waited for a
    person (as far as the record tells), else ``None``.
    ``arguments`` is ``None`` with ``has_arguments`` false when the record did not keep them; ``redacted``
    when what it kept is not what the model sent.
    """

    where: str
    tool: str
    arguments: object
    has_arguments: bool
    outcome: str
    rule: str
    answer: str | None = None
    tool_call_id: object = None
    digest: str = ""
    redacted: bool = False


@final
@dataclass(slots=True)
class Change:
    """Calls whose outcome changes the same way, because of the same rule of the new policy."""

    before: str
    after: str
    rule: str
    count: int = 0
    answers: dict[str, int] = field(default_factory=dict)
    examples: list[RecordedCall] = field(default_factory=list)
    was: dict[str, int] = field(default_factory=dict)
    """The rules that decided these calls before, with counts."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.before,
            "to": self.after,
            "rule": self.rule,
            "count": self.count,
            "answers": dict(sorted(self.answers.items())),
            "was": dict(sorted(self.was.items(), key=lambda item: -item[1])),
            "examples": [
                {"where": call.where, "tool": call.tool, "arguments": call.arguments}
                for call in self.examples
            ],
        }


@final
@dataclass(slots=True)
class Replay:
    """What a replay found: how many calls it decided again, the changes, and what it could not replay."""

    replayed: int = 0
    redacted: int = 0
    unreplayable: int = 0
    unreplayable_examples: list[RecordedCall] = field(default_factory=list)
    changes: dict[tuple[str, str, str], Change] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        """How many replayed calls the new policy decides differently."""
        return sum(change.count for change in self.changes.values())

    def ordered(self) -> list[Change]:
        """The changes, by transition (``pending -> proceed`` first) and then most calls first."""
        return sorted(
            self.changes.values(), key=lambda c: (_ORDER.get((c.before, c.after), 99), -c.count, c.rule)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "replayed": self.replayed,
            "changed": self.changed,
            "redacted": self.redacted,
            "unreplayable": self.unreplayable,
            "unreplayable_examples": [
                {"where": call.where, "tool": call.tool, "args_digest": call.digest}
                for call in self.unreplayable_examples
            ],
            "changes": [change.to_dict() for change in self.ordered()],
        }


# Loosening first: what a change lets through is what a reviewer must read first.
_ORDER: Final = {
    ("block", "proceed"): 0,
    ("pending", "proceed"): 1,
    ("block", "pending"): 2,
    ("pending", "block"): 3,
    ("proceed", "pending"): 4,
    ("proceed", "block"): 5,
}


def calls_from_audit(lines: Iterable[AuditLine]) -> Iterable[RecordedCall]:
    """The decided calls of audit lines (resolution records give the asks their answers, not calls).

    An ask's answer is taken from the resolution record of the same action (its id, tool and arguments'
    digest) that comes later in the same file; until then the ask counts as unanswered. Action ids are a
    queue's own, so runs appended to one file reuse them: a resolution answers the latest ask before it
    that it can be, never one of a run that came after it.
    """
    waiting: dict[tuple[int, str, str], list[int]] = {}  # unanswered asks' positions, oldest first
    calls: list[RecordedCall] = []
    for line in lines:
        if line.is_resolution:
            if line.action_id is not None:
                asks = waiting.get((line.action_id, line.tool, line.args_digest))
                if asks:
                    position = asks.pop()
                    calls[position] = replace(calls[position], answer=_answer(line))
            continue
        redacted = line.has_arguments and args_digest(line.arguments) != line.args_digest
        call = RecordedCall(
            where=f"{line.file}:{line.line}",
            tool=line.tool,
            arguments=line.arguments,
            has_arguments=line.has_arguments,
            outcome=line.outcome,
            rule=line.rule_label,
            answer="pending" if line.outcome == "pending" else None,
            tool_call_id=line.tool_call_id,
            digest=line.args_digest,
            redacted=redacted,
        )
        if line.outcome == "pending" and line.action_id is not None:
            waiting.setdefault((line.action_id, line.tool, line.args_digest), []).append(len(calls))
        calls.append(call)
    return calls


def _answer(resolution: AuditLine) -> str:
    """How a resolution record answered its ask: ``approved``, ``edited`` (a person approved arguments of
    their own instead) or ``rejected``."""
    if resolution.verdict == "allow_modified":
        return EDITED
    if resolution.verdict in APPROVALS:
        return AUTO_APPROVED if resolution.decided_by == AUTO_APPROVER else "approved"
    return "rejected"


def calls_from_store(entries: Iterable[HistoryEntry], store: str) -> Iterable[RecordedCall]:
    """The calls of a store's actions: each waited for a person (``pending`` then), with its answer."""
    for entry in entries:
        action = entry.action
        status: str = "pending" if action.status == "applying" else action.status
        if action.is_approved and action.is_edited:
            status = EDITED
        elif action.is_approved and action.decided_by == AUTO_APPROVER:
            status = AUTO_APPROVED
        yield RecordedCall(
            where=f"{store} session {entry.session!r} action {action.id}",
            tool=action.tool_name,
            arguments=action.args,
            has_arguments=True,
            outcome="pending",
            rule="(asked)",
            answer=status,
            tool_call_id=action.tool_call_id,
            digest=args_digest(action.args),
        )


def replay(policy: Evaluator, calls: Iterable[RecordedCall]) -> Replay:
    """Decide every recorded call again with ``policy`` (a dry run) and group the changes of outcome."""
    found = Replay()
    for call in calls:
        if not call.has_arguments:
            found.unreplayable += 1
            if len(found.unreplayable_examples) < UNREPLAYABLE_SHOWN:
                found.unreplayable_examples.append(call)
            continue
        found.replayed += 1
        if call.redacted:
            found.redacted += 1
        record = policy.evaluate(ToolCall(call.tool, call.arguments, call.tool_call_id))
        if record.outcome == call.outcome:
            continue
        rule = _rule_label(record)
        key = (call.outcome, record.outcome, rule)
        change = found.changes.get(key)
        if change is None:
            change = found.changes[key] = Change(call.outcome, record.outcome, rule)
        change.count += 1
        if call.answer is not None:
            change.answers[call.answer] = change.answers.get(call.answer, 0) + 1
        change.was[call.rule] = change.was.get(call.rule, 0) + 1
        if len(change.examples) < EXAMPLES_PER_CHANGE:
            change.examples.append(call)
    return found


def _rule_label(record: Any) -> str:
    rule = record.rule
    if rule is None:
        return f"(no rule: {record.layer})"
    text = rule.text
    if text is None:
        return f"{record.layer}: {rule.declared_decision} rule {rule.index}"
    label = f"{rule.declared_decision} {text}"
    return f"{label} ({record.source} settings)" if record.source else label
