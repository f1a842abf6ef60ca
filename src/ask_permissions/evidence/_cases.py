"""Policy cases: calls with the outcome a policy must give them, read from TOML case files and checked.

A case file is a list of ``[[case]]`` tables::

    [[case]]
    name = "no removals hidden behind a harmless command"   # optional
    tool = "Bash"
    args = { command = "git status && rm -rf ~" }
    expect = "block"          # proceed | pending | block
    layer = "deny_rule"       # optional: the layer that must decide
    rule = "Bash(rm *)"       # optional: the text of the rule that must decide ("rule 2" for a gem rule)
    source = "project"        # optional: the settings source that rule must come from

Each case is decided as a dry run (``policy.evaluate``): nothing is queued. A file that is not such a list
is an ``InvalidEvidenceError`` naming the file, the line and the field.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, final

from ask_permissions._errors import InvalidEvidenceError
from ask_permissions._tool_call import ToolCall
from ask_permissions._vocabulary import HOOK_ACTIONS, HookAction
from ask_permissions.policy._policy import PolicyLike
from ask_permissions.policy._records import DecisionRecord, MatchedRule

__all__ = ["CaseResult", "PolicyCase", "check_cases", "read_cases", "rule_name"]

_CASE_KEYS: Final = ("name", "tool", "args", "expect", "layer", "rule", "source")
_HEADER: Final = re.compile(r"^\s*\[\[\s*case\s*\]\]")
_TOML_LINE: Final = re.compile(r"at line (\d+)")


@final
@dataclass(frozen=True, slots=True)
class PolicyCase:
    """One case of a case file: a call, and what the policy must decide for it.

    Attributes:
        file: the case file.
        line: the line of its ``[[case]]`` header.
        index: its position in the file (``case[0]`` is the first).
        tool: the tool's name.
        args: the call's arguments.
        expect: ``"proceed"``, ``"pending"`` or ``"block"``.
        name: a title for the report, if given.
        layer: the layer that must decide, if given.
        rule: the text (or ``rule N`` label) of the rule that must decide, if given.
        source: the settings source the deciding rule must come from, if given.
    """

    file: str
    line: int
    index: int
    tool: str
    args: object
    expect: HookAction
    name: str | None = None
    layer: str | None = None
    rule: str | None = None
    source: str | None = None
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    """The line of each of its keys, for messages about them."""

    def line_of(self, key: str) -> int:
        """The line that sets ``key`` (the case's own line when the key is not set on one of its own)."""
        return self.lines.get(key, self.line)

    @property
    def label(self) -> str:
        """Where the case is and what it is called: ``cases.toml:7 case[1] "rm in a compound"``."""
        title = f" {self.name!r}" if self.name else ""
        return f"{self.file}:{self.line} case[{self.index}]{title}"


@final
@dataclass(frozen=True, slots=True)
class CaseResult:
    """A case and the decision the policy took for it; ``problems`` says what differed (empty: it holds)."""

    case: PolicyCase
    record: DecisionRecord
    problems: tuple[str, ...]

    @property
    def holds(self) -> bool:
        """Whether the policy decided as the case expects."""
        return not self.problems


def rule_name(rule: MatchedRule | None) -> str | None:
    """How a case names a rule: its text, or ``rule N`` (``project rule N`` in a rule set) for a gem rule."""
    if rule is None:
        return None
    if rule.text is not None:
        return rule.text
    return f"rule {rule.index}" if rule.layer == "default" else f"{rule.layer} rule {rule.index}"


def read_cases(path: str) -> list[PolicyCase]:
    """The cases of one TOML case file, read strictly.

    Raises:
        OSError: the file cannot be read.
        InvalidEvidenceError: not UTF-8 TOML, or not a list of ``[[case]]`` tables as described above.
    """
    with open(path, "rb") as file:
        raw = file.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InvalidEvidenceError(path, line, "", "UTF-8 text", raw[error.start : error.end]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = _TOML_LINE.search(str(error))
        line = int(found.group(1)) if found else 0
        raise InvalidEvidenceError(path, line, "", "a TOML case file", str(error).split(" (at")[0]) from None
    lines = _Lines(path, text)
    unknown = [key for key in data if key != "case"]
    if unknown:
        expected = "no such key (a case file holds [[case]] tables)"
        raise InvalidEvidenceError(path, lines.of_key(unknown[0]), unknown[0], expected, None)
    entries = data.get("case")
    if not isinstance(entries, list) or not entries:
        raise InvalidEvidenceError(path, lines.of_key("case"), "case", "at least one [[case]] table", entries)
    return [_read_case(entry, index, lines) for index, entry in enumerate(entries)]


def check_cases(policy: PolicyLike, cases: Sequence[PolicyCase]) -> list[CaseResult]:
    """Decide every case with ``policy.evaluate`` and compare; a case naming a layer the policy does not
    have is bad input, found before any case is decided.

    Raises:
        InvalidEvidenceError: a case's ``layer`` is not one of the policy's layers.
    """
    layers = tuple(getattr(policy, "layers", ()))
    if layers:
        for case in cases:
            if case.layer is not None and case.layer not in layers:
                raise InvalidEvidenceError(
                    case.file,
                    case.line_of("layer"),
                    f"case[{case.index}].layer",
                    "one of the policy's layers (" + ", ".join(layers) + ")",
                    case.layer,
                )
    return [_check(policy, case) for case in cases]


def _check(policy: PolicyLike, case: PolicyCase) -> CaseResult:
    record = policy.evaluate(ToolCall(case.tool, case.args))
    problems: list[str] = []
    if record.outcome != case.expect:
        problems.append(f"expected {case.expect}, got {record.outcome}")
    if case.layer is not None and record.layer != case.layer:
        problems.append(f"expected layer {case.layer}, got {record.layer}")
    if case.rule is not None and rule_name(record.rule) != case.rule:
        problems.append(f"expected rule {case.rule!r}, got {rule_name(record.rule) or '(no rule)'}")
    if case.source is not None and record.source != case.source:
        problems.append(f"expected source {case.source}, got {record.source or '(none)'}")
    return CaseResult(case, record, tuple(problems))


def _read_case(entry: object, index: int, lines: _Lines) -> PolicyCase:
    path = f"case[{index}]"
    line = lines.of_case(index)
    if not isinstance(entry, Mapping):
        raise InvalidEvidenceError(lines.file, line, path, "a table", entry)
    for key in entry:
        if key not in _CASE_KEYS:
            known = ", ".join(_CASE_KEYS)
            raise InvalidEvidenceError(
                lines.file, lines.of_field(index, key), f"{path}.{key}", f"no such key (known: {known})", None
            )
    for key in ("tool", "expect"):
        if key not in entry:
            expected = "a value (the key is required)"
            raise InvalidEvidenceError(lines.file, line, f"{path}.{key}", expected, None)

    def text(key: str, *, choices: Iterable[str] = ()) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        allowed = tuple(choices)
        if allowed and value not in allowed:
            expected = "one of " + ", ".join(repr(choice) for choice in allowed)
        elif not isinstance(value, str) or not value:
            expected = "a non-empty string"
        else:
            return value
        raise InvalidEvidenceError(lines.file, lines.of_field(index, key), f"{path}.{key}", expected, value)

    tool = text("tool")
    expect = text("expect", choices=HOOK_ACTIONS)
    assert tool is not None  # required above
    assert expect is not None
    return PolicyCase(
        file=lines.file,
        line=line,
        index=index,
        tool=tool,
        args=entry.get("args", {}),
        expect=expect,  # type: ignore[arg-type]  # one of the outcomes, checked above
        name=text("name"),
        layer=text("layer"),
        rule=text("rule"),
        source=text("source"),
        lines={key: lines.of_field(index, key) for key in entry},
    )


@final
class _Lines:
    """Where things are in a case file's text: tomllib gives values, not lines, so the lines are found."""

    __slots__ = ("_headers", "_lines", "file")

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self._lines = text.splitlines()
        self._headers = [number for number, line in enumerate(self._lines) if _HEADER.match(line)]

    def of_case(self, index: int) -> int:
        """The 1-based line of the case's ``[[case]]`` header (that of ``case`` itself when inline)."""
        if index < len(self._headers):
            return self._headers[index] + 1
        return self.of_key("case")

    def of_field(self, index: int, key: str) -> int:
        """The line of ``key = ...`` inside the case's table, else the case's own line."""
        if index < len(self._headers):
            end = self._headers[index + 1] if index + 1 < len(self._headers) else len(self._lines)
            pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
            for number in range(self._headers[index] + 1, end):
                if pattern.match(self._lines[number]):
                    return number + 1
        return self.of_case(index)

    def of_key(self, key: str) -> int:
        """The first line that sets or opens ``key`` at any level (0 when none does)."""
        pattern = re.compile(rf"^\s*(?:\[+\s*)?{re.escape(key)}\b")
        for number, line in enumerate(self._lines):
            if pattern.match(line):
                return number + 1
        return 0
