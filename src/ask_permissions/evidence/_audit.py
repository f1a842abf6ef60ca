"""Audit lines: decision records as JSON lines (``record.to_dict()``, one a line), read strictly.

A line is what a policy's ``on_decision`` wrote, or the MCP proxy's ``--audit`` log (which adds a ``proxy``
key); keys this reader does not know are the writer's and are left alone. A line that is not such a
record is an ``InvalidEvidenceError`` naming the file, the line and the field.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, final, get_args

from ask_permissions._errors import InvalidEvidenceError
from ask_permissions.policy._engine import REVIEWER, RULE_DECIDER
from ask_permissions.typing import HookAction, RecordVerdict

__all__ = ["APPROVALS", "AuditLine", "AuditSummary", "is_resolution", "read_audit", "summarize"]

_OUTCOMES: Final = get_args(HookAction)
_VERDICTS: Final = get_args(RecordVerdict)
_DIGEST: Final = re.compile(r"[0-9a-f]{16}")
RESOLUTIONS: Final = frozenset({"ask_allowed", "ask_denied", "ask_unresolved", "ask_expired", "cancelled"})
"""The verdicts of a record that tells how an ask ended, rather than a decision of a call (and
``allow_modified`` with an ``edited_digest``: a person approved edited arguments)."""
APPROVALS: Final = frozenset({"ask_allowed", "allow_modified"})
"""The verdicts of a resolution that approved the ask."""
_RESOLVED_BY: Final = {
    "ask_allowed": "person",
    "allow_modified": "person",
    "ask_denied": "person",
    "ask_expired": "expiry",
    "ask_unresolved": "nobody",
    "cancelled": "cancellation",
}
_VERDICTS_OF: Final[dict[str, frozenset[str]]] = {
    "proceed": frozenset({"allow", "allow_modified", "ask_allowed"}),
    "block": frozenset({"deny", "ask_denied", "ask_unresolved", "ask_expired", "cancelled"}),
    "pending": frozenset({"ask"}),
}
"""The verdicts a record of each outcome can carry (as the policies write them): a line whose two disagree
is not a record a policy wrote."""
_ASKED: Final = "asked"
"""Who decided a call that waits for an answer: nobody yet (the policy asked)."""
PROXY_KEY: Final = "proxy"
"""The key under which the MCP proxy's ``AuditLog`` adds what it did to a record (or writes it alone)."""


def is_resolution(verdict: str | None, edited_digest: object) -> bool:
    """Whether a record with this verdict tells how an ask ended: ``allow_modified`` is a resolution only
    with the digest of a person's edit (else a call that ran with arguments a hook rewrote)."""
    return verdict in RESOLUTIONS or (verdict == "allow_modified" and edited_digest is not None)


@final
@dataclass(frozen=True, slots=True)
class AuditLine:
    """One decision record read back from an audit file.

    ``rule`` is the record's rule as written (a ``MatchedRule.to_dict()``), ``arguments`` the call's
    arguments when the policy kept them (``has_arguments``), ``decided_by`` who resolved an ask when the
    writer recorded it.
    """

    file: str
    line: int
    tool: str
    outcome: HookAction
    layer: str
    verdict: RecordVerdict
    ts: datetime
    args_digest: str
    rule: Mapping[str, Any] | None = None
    reason: str | None = None
    action_id: int | None = None
    source: str | None = None
    rule_id: str | None = None
    tool_call_id: str | int | None = None
    arguments: object = None
    has_arguments: bool = False
    decided_by: str | None = None
    edited_digest: str | None = None
    shadow: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def is_resolution(self) -> bool:
        """Whether the record tells how an ask ended (a second record with the same action id)."""
        return is_resolution(self.verdict, self.edited_digest)

    @property
    def decider(self) -> str:
        """Who decided: the recorded ``decided_by``; else (a line written before records named it)
        ``person`` (or ``expiry``, ...) for a resolution, ``asked`` for a call that waits, ``reviewer`` when
        ``auto`` mode's reviewer answered, ``rule`` otherwise (the names the policies record)."""
        if self.decided_by:
            return self.decided_by
        if self.is_resolution:
            return _RESOLVED_BY[self.verdict]
        if self.outcome == "pending":
            return _ASKED
        return REVIEWER if self.rule_id == REVIEWER else RULE_DECIDER

    @property
    def rule_label(self) -> str:
        """The deciding rule as a person reads it: its text and source, or its patterns; else the layer."""
        rule = self.rule
        if rule is None:
            return f"(no rule: {self.layer})"
        text = rule.get("text")
        decision = rule.get("declared_decision", "")
        if isinstance(text, str):
            label = f"{decision} {text}"
        else:
            label = (
                f"{decision} {_pattern(rule.get('tool_pattern'))} {_pattern(rule.get('argument_pattern'))}"
            )
        return f"{label} ({self.source} settings)" if self.source else label.strip()


def _pattern(pattern: object) -> str:
    if not isinstance(pattern, Mapping):
        return "*"
    kind = pattern.get("type")
    if kind == "string":
        return repr(pattern.get("value"))
    if kind == "regexp":
        return f"/{pattern.get('source')}/{pattern.get('flags') or ''}"
    if kind == "all":
        return "ALL"
    return str(pattern.get("text", kind))


def read_audit(path: str, *, undecided: list[int] | None = None) -> Iterator[AuditLine]:
    """The records of an audit file, line by line (blank lines skipped); read as the file is consumed.

    A line of the MCP proxy for a call no policy decided (a tool the upstream server does not list: the
    ``proxy`` object alone) holds no record: it is passed over, its number appended to ``undecided``.

    Raises:
        OSError: the file cannot be read.
        InvalidEvidenceError: a line that is not a decision record, naming the file, line and field.
    """
    with open(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            if not raw.strip():
                continue
            line = read_audit_line(raw, path, number)
            if line is not None:
                yield line
            elif undecided is not None:
                undecided.append(number)


def read_audit_line(raw: bytes | str, file: str, number: int) -> AuditLine | None:
    """One audit line, read strictly (see ``read_audit``); ``None`` for a proxy line without a record."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        shown = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        raise InvalidEvidenceError(
            file, number, "", "a JSON object (a decision record)", shown.strip()
        ) from None
    if not isinstance(data, dict):
        raise InvalidEvidenceError(file, number, "", "a JSON object (a decision record)", data)
    if data.keys() == {PROXY_KEY} and isinstance(data[PROXY_KEY], dict):
        return None
    read = _Fields(data, file, number)
    tool, layer = read.text("tool"), read.text("layer")
    outcome = read.choice("outcome", _OUTCOMES)
    verdict = read.choice("verdict", _VERDICTS)
    if verdict not in _VERDICTS_OF[outcome]:
        allowed = ", ".join(sorted(_VERDICTS_OF[outcome]))
        raise read.bad("verdict", f"one of {allowed} (the outcome is {outcome})")
    return AuditLine(
        file=file,
        line=number,
        tool=tool,
        outcome=outcome,  # type: ignore[arg-type]  # one of the outcomes
        layer=layer,
        verdict=verdict,  # type: ignore[arg-type]  # one of the verdicts
        ts=read.timestamp("ts"),
        args_digest=read.digest("args_digest"),
        rule=read.mapping("rule"),
        reason=read.optional_text("reason", non_empty=False),
        action_id=read.optional_integer("action_id"),
        source=read.optional_text("source"),
        rule_id=read.optional_text("rule_id"),
        tool_call_id=read.optional_call_id("tool_call_id"),
        arguments=data.get("arguments"),
        has_arguments="arguments" in data,
        decided_by=read.optional_text("decided_by"),
        edited_digest=read.optional_digest("edited_digest"),
        shadow=read.mapping("shadow"),
    )


@final
class _Fields:
    """The fields of one audit line, each read strictly: a bad one is an error naming file, line and field."""

    __slots__ = ("_data", "_file", "_number")

    def __init__(self, data: Mapping[str, Any], file: str, number: int) -> None:
        self._data = data
        self._file = file
        self._number = number

    def bad(self, key: str, expected: str) -> InvalidEvidenceError:
        return InvalidEvidenceError(self._file, self._number, key, expected, self._data.get(key))

    def text(self, key: str) -> str:
        value = self._data.get(key)
        if not isinstance(value, str) or not value:
            raise self.bad(key, "a non-empty string")
        return value

    def optional_text(self, key: str, *, non_empty: bool = True) -> str | None:
        value = self._data.get(key)
        if value is not None and (not isinstance(value, str) or (non_empty and not value)):
            raise self.bad(key, "a non-empty string or null" if non_empty else "a string or null")
        return value

    def choice(self, key: str, choices: tuple[str, ...]) -> str:
        value = self._data.get(key)
        if value not in choices:
            raise self.bad(key, "one of " + ", ".join(choices))
        return str(value)

    def digest(self, key: str) -> str:
        value = self.optional_digest(key)
        if value is None:
            raise self.bad(key, "16 lowercase hex characters")
        return value

    def optional_digest(self, key: str) -> str | None:
        value = self._data.get(key)
        if value is not None and (not isinstance(value, str) or _DIGEST.fullmatch(value) is None):
            raise self.bad(key, "16 lowercase hex characters")
        return value

    def timestamp(self, key: str) -> datetime:
        try:
            ts = datetime.fromisoformat(self._data[key])
        except (KeyError, TypeError, ValueError):
            raise self.bad(key, "an ISO 8601 timestamp") from None
        if ts.tzinfo is None:
            raise self.bad(key, "a timestamp with its UTC offset")
        return ts

    def mapping(self, key: str) -> Mapping[str, Any] | None:
        value = self._data.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.bad(key, "an object or null")
        return value

    def optional_integer(self, key: str) -> int | None:
        value = self._data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.bad(key, "an integer or null")
        return value

    def optional_call_id(self, key: str) -> str | int | None:
        value = self._data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
            raise self.bad(key, "a string, an integer or null")
        return value


@final
@dataclass(slots=True)
class AuditSummary:
    """Counts of audit lines by outcome, verdict, tool, rule and who decided (most frequent first)."""

    records: int = 0
    first: datetime | None = None
    last: datetime | None = None
    outcomes: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)
    tools: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    deciders: Counter[str] = field(default_factory=Counter)
    shadow_disagreements: int = 0
    undecided: int = 0
    """Lines of the MCP proxy without a decision (calls to tools the upstream does not list)."""

    def add(self, line: AuditLine) -> None:
        self.records += 1
        self.first = line.ts if self.first is None else min(self.first, line.ts)
        self.last = line.ts if self.last is None else max(self.last, line.ts)
        self.outcomes[line.outcome] += 1
        self.verdicts[line.verdict] += 1
        self.tools[line.tool] += 1
        self.rules[line.rule_label] += 1
        self.deciders[line.decider] += 1
        if line.shadow is not None:
            self.shadow_disagreements += 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data: each count as an object, most frequent first."""
        return {
            "records": self.records,
            "first": None if self.first is None else self.first.isoformat(),
            "last": None if self.last is None else self.last.isoformat(),
            "outcomes": dict(self.outcomes.most_common()),
            "verdicts": dict(self.verdicts.most_common()),
            "tools": dict(self.tools.most_common()),
            "rules": dict(self.rules.most_common()),
            "decided_by": dict(self.deciders.most_common()),
            "shadow_disagreements": self.shadow_disagreements,
            "undecided": self.undecided,
        }


def summarize(
    lines: Iterator[AuditLine],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    tools: Collection[str] = (),
    outcomes: Collection[str] = (),
) -> AuditSummary:
    """Count the lines that pass the filters: ``since <= ts < until``, one of ``tools`` and ``outcomes``
    (each filter off when empty or ``None``)."""
    summary = AuditSummary()
    for line in lines:
        if since is not None and line.ts < since:
            continue
        if until is not None and line.ts >= until:
            continue
        if tools and line.tool not in tools:
            continue
        if outcomes and line.outcome not in outcomes:
            continue
        summary.add(line)
    return summary
