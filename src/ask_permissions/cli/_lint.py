"""Linting a policy: rules that are downgraded, unreachable, overridden or risky, and odd tool metadata.

Every finding is provable: a rule is called unreachable only when an earlier one matches every call it
could, a deny overridden only with a call that both rules match and the allow decides, and a regex slow
only with a measured example. Each check is indexed so a policy of 100,000 rules lints in seconds; where a
check would grow quadratically its work per rule is capped, and past the cap it reports nothing.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_left, insort
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Final, final

from ask_permissions._errors import InvalidSnapshotError
from ask_permissions._names import fold_tool_name
from ask_permissions._vocabulary import RuleSetLayer
from ask_permissions.policy._approval import ApprovalPolicy
from ask_permissions.policy._records import describe_patterns
from ask_permissions.policy._tool_metadata import RISK_LEVELS, read_metadata
from ask_permissions.policy._tool_names import BESIDE_REGISTRY, UnknownTool, registry_names, unknown_tools
from ask_permissions.rules._command import CommandPattern
from ask_permissions.rules._paths import PathPattern
from ask_permissions.rules._patterns import (
    ALL,
    StoredArgumentPattern,
    ToolPattern,
    argument_pattern_matches,
    encode_pattern,
)
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules, Rule
from ask_permissions.rules._specifiers import SpecifierPattern
from ask_permissions.rules._text import BUILTIN_KINDS, RuleTextError
from ask_permissions.settings._field_lines import source_place
from ask_permissions.settings._settings import PermissionSettings

from ._json_occurrence import can_occur_in_json
from ._regex_facts import MEASURING_BUDGET, RegexStudy

__all__ = [
    "Finding",
    "describe_patterns",
    "describe_rule",
    "lint_policy",
    "lint_rules",
    "lint_settings",
    "rule_label",
]


@final
@dataclass(frozen=True, slots=True)
class Finding:
    """One lint finding, printed as one line.

    Attributes:
        layer: the rule-set layer of the rule (``None`` for a plain ruleset or a tool finding).
        index: the rule's index into its layer's ``rules``; ``None`` for a finding about a tool.
        subject: the rule in one phrase (``deny bash``), or the tool (``tool 'deploy'``).
        why: what is wrong, in one line.
        witness: for a deny an earlier allow overrides: the tool name and serialized arguments of a call
            both match, which the allow decides.
        where: the field the finding is about, as its file spells it (``permissions.deny[0]``, with the
            settings file's path for a project), when the finding names a field rather than a rule index.
    """

    layer: RuleSetLayer | None
    index: int | None
    subject: str
    why: str
    witness: tuple[str, str] | None = None
    where: str | None = None

    def __str__(self) -> str:
        if self.where is not None:
            place = f"{self.where} ({self.subject})"
        elif self.index is None:
            place = self.subject
        else:
            place = f"{rule_label(self.layer, self.index)} ({self.subject})"
        return _one_line(f"{place}: {self.why}")

    def to_dict(self) -> dict[str, object]:
        """The finding as JSON-safe data (``lint --json``)."""
        return {
            "where": self.where,
            "layer": self.layer,
            "index": self.index,
            "subject": self.subject,
            "why": self.why,
            "witness": None if self.witness is None else list(self.witness),
            "text": str(self),
        }


def _one_line(text: str) -> str:
    # Sources and substrings may hold line breaks and control characters: show them escaped.
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text
    )


def rule_label(layer: RuleSetLayer | None, index: int) -> str:
    """``rule 2`` for a plain ruleset, ``project rule 2`` for a layer of a rule set."""
    return f"rule {index}" if layer is None else f"{layer} rule {index}"


def lint_policy(policy: ApprovalPolicy, *, measuring_budget: float = MEASURING_BUDGET) -> list[Finding]:
    """The findings about a policy: its rules layer by layer (default first) in rule order, then what names
    no tool of its registry, then its tools, then a ``"proceed"`` default beside shell or path tools.

    Only rule lists that are ``PermissionRules`` are inspected; a custom classifier is opaque. The tool
    registry is consulted when it is a mapping (as a policy file's ``tools`` is) or a sequence of named
    tools: rules, ``require_approval`` and ``auto_approve`` entries and hook matchers that name none of its
    tools are reported as ``require_known_tools`` would refuse them (a policy loaded with
    ``unknown_tools="keep"`` still gets them reported). Warnings are recorded while it runs (process-wide
    state), so run it apart from code that relies on them. ``measuring_budget`` is the most seconds spent
    timing regexes that may backtrack.
    """
    registry = policy.tools
    names = registry_names(registry) or ()
    findings: list[Finding] = []
    with RegexStudy(measuring_budget).recording() as study:
        for layer, rules in _layers(policy.rules):
            findings.extend(_Linter(rules.rules, layer, names, study).findings())
    if names:
        references = [ref for ref in policy.tool_references() if ref.kind in BESIDE_REGISTRY]
        findings.extend(_unknown_finding(found) for found in unknown_tools(references, names))
    findings.extend(_lint_tools(registry))
    findings.extend(_lint_default(policy))
    return findings


def lint_settings(
    settings: PermissionSettings,
    *,
    kinds: Mapping[str, str] | None = None,
    measuring_budget: float = MEASURING_BUDGET,
) -> list[Finding]:
    """The findings about a project's settings: every source's rules, merged as a ``LayeredPolicy`` merges
    them (every deny first, then every ask, then every allow, each in source order), each finding naming its
    file and list position (``/app/.agent/settings.json: permissions.allow[2]``).

    Raises:
        InvalidSnapshotError: a rule that cannot be read (as the policy would raise).
    """
    sources = [source for source in settings.sources if not source.is_empty]
    home = os.path.expanduser("~")
    read: dict[tuple[str, str], PermissionRules] = {}
    for source in sources:
        for decision, texts in source.rules():
            lists = {name: texts if name == decision else () for name in ("allow", "ask", "deny")}
            try:
                read[(source.name, decision)] = PermissionRules.from_text(
                    allow=lists["allow"],
                    ask=lists["ask"],
                    deny=lists["deny"],
                    cwd=source.anchor,
                    home=home,
                    kinds=kinds,
                )
            except RuleTextError as error:
                field = f"permissions.{error.where or decision}"
                place = source_place(source.path, source.name, field, error.text)
                raise InvalidSnapshotError(
                    f"{place}: {field}: {error.problem}", path=field, value=error.text
                ) from None
    merged: list[Rule] = []
    places: list[str] = []
    for decision in ("deny", "ask", "allow"):
        for source in sources:
            rules = read.get((source.name, decision))
            if rules is None:
                continue
            where = source.path or f"{source.name} settings"
            for position, rule in enumerate(rules.rules):
                merged.append(rule)
                places.append(f"{where}: permissions.{decision}[{position}]")
    return lint_rules(merged, None, (), measuring_budget=measuring_budget, places=places)


def _unknown_finding(found: UnknownTool) -> Finding:
    reference = found.reference
    return Finding(
        None, None, reference.text, found.phrase("in the policy's tools table"), where=reference.field
    )


_SHELL_OR_PATH: Final = ("shell", "path")


def _lint_default(policy: ApprovalPolicy) -> list[Finding]:
    """A ``"proceed"`` default next to tools that run commands or touch files: every call no rule decides
    runs, and with such tools that includes the ones no rule foresaw."""
    if policy.default != "proceed":
        return []
    registry = policy.tools
    entries: dict[str, object] = {}
    if isinstance(registry, Mapping):
        entries = {name: entry for name, entry in registry.items() if isinstance(name, str)}
    named = [ref.name for ref in policy.tool_references() if ref.name is not None]
    risky = []
    for name in dict.fromkeys([*entries, *named]):
        entry = entries.get(name)
        declared = entry.get("permission_kind") if isinstance(entry, Mapping) else None
        kind = declared.partition(":")[0] if isinstance(declared, str) else None
        builtin = BUILTIN_KINDS.get(name)
        if (kind or (builtin.kind if builtin is not None else None)) in _SHELL_OR_PATH:
            risky.append(name)
    if not risky:
        return []
    shown = ", ".join(repr(name) for name in risky[:5]) + (", ..." if len(risky) > 5 else "")
    return [
        Finding(
            None,
            None,
            'default "proceed"',
            f"every call no rule decides runs, and the policy has shell or path tools ({shown}): a command "
            'or a file no rule foresaw runs unasked; leave default out (it is "ask") or set it to "ask"',
        )
    ]


def lint_rules(
    rules: list[Rule],
    layer: RuleSetLayer | None,
    tool_names: Collection[str],
    *,
    measuring_budget: float = MEASURING_BUDGET,
    places: Sequence[str] | None = None,
) -> list[Finding]:
    """The findings about one ordered list of rules (see ``lint_policy``).

    ``places`` names each rule where it is written (``<file>: permissions.allow[2]``): findings then name
    rules by it, theirs as ``where`` and others' in their text, instead of by index.
    """
    with RegexStudy(measuring_budget).recording() as study:
        return _Linter(rules, layer, tuple(tool_names), study, places).findings()


def _layers(rules: object) -> list[tuple[RuleSetLayer | None, PermissionRules]]:
    if isinstance(rules, PermissionRules):
        return [(None, rules)]
    if isinstance(rules, PermissionRuleSet):
        layers: list[tuple[RuleSetLayer | None, PermissionRules]] = []
        if isinstance(rules.default_rules, PermissionRules):
            layers.append(("default", rules.default_rules))
        if isinstance(rules.project_rules, PermissionRules):
            layers.append(("project", rules.project_rules))
        return layers
    return []


def _lint_tools(registry: object) -> list[Finding]:
    """Risk levels outside ``RISK_LEVELS``: a policy reads them as not elevated; files refuse them."""
    if isinstance(registry, Mapping):
        entries: list[tuple[object, object]] = list(registry.items())
    elif isinstance(registry, Sequence) and not isinstance(registry, str | bytes):
        entries = [(getattr(tool, "name", None), tool) for tool in registry]
    else:
        return []
    findings = []
    for name, entry in entries:
        level = read_metadata(entry).risk_level
        if level is not None and level not in RISK_LEVELS:
            findings.append(
                Finding(
                    None,
                    None,
                    f"tool {name!r}",
                    f"its risk_level {level!r} is none of {', '.join(RISK_LEVELS)}: the policy reads it as "
                    "not elevated (only high and critical are), and a policy file refuses it",
                )
            )
    return findings


# -- the messages ------------------------------------------------------------------------------------------

_DOWNGRADED: Final = (
    "downgraded to ask by the dangerous-tool guard: it would allow any use of a tool that runs code; add an "
    "argument pattern, or declare it as ask"
)
_UNGUARDED: Final = (
    "allows every call of a tool that runs code: auto_allow_dangerous switches the dangerous-tool guard off, "
    "so nothing narrows this allow; add an argument pattern, or declare it as ask"
)
_NEVER_IN_JSON: Final = (
    'its substring never matches arguments given as a mapping: their JSON writes ", \\, tabs and line '
    'breaks inside values escaped (\\", \\\\, \\t, \\n), so it can match only raw string arguments'
)
_WILDCARD_PROGRAM: Final = (
    "its command specifier starts with '*', so it allows any program ending so (rm -rf ~ --version too); "
    "name the program first"
)
_WILDCARD_SERVER: Final = "allows the tools of every MCP server; name one: mcp__<server> or mcp__<server>__*"
_COMMAND_ON_PATH_TOOL: Final = (
    "its specifier reads like a command, but the tool is a path tool, so it is matched as a file path; "
    'declare the tool\'s kind (permission_kind = "shell")'
)


def _control_characters(source: str, verbose: bool) -> str | None:
    """The finding for control characters in a regex source (whitespace in a verbose regex is layout)."""
    if source.isprintable():
        return None
    found = sorted(
        {char for char in source if ord(char) < 0x20 or ord(char) == 0x7F}
        - (set("\t\n\r\f\v") if verbose else set())
    )
    if not found:
        return None
    names = ", ".join(f"U+{ord(char):04X}" + (" (backspace)" if char == "\b" else "") for char in found)
    why = f"its regex source holds the control character{'s' if len(found) > 1 else ''} {names}"
    if "\b" in found:
        why += (
            ': in a TOML basic string "\\b" is a backspace, not a word boundary; write the regex in a '
            "literal string ('...') or double the backslash"
        )
    return why


# -- the linter --------------------------------------------------------------------------------------------

# Caps on work per rule where a check would otherwise be quadratic in the number of rules; past a cap a
# check reports nothing for that rule (lint stays sound, only less complete).
_MOST_SUBSTRING_PROBES: Final = 4096  # substring lookups per rule in the shadow check
_MOST_ALLOWS_TRIED: Final = 8  # earlier allows tried per deny for an override
_MOST_RULES_SCANNED: Final = 256  # earlier rules of a tool looked at per deny
_MOST_MATCHES: Final = 512  # pattern matches per deny while looking for an override
_MOST_WILD_PATTERNS: Final = 256  # distinct regex tool patterns matched per tool name
_MOST_REGISTRY_NAMES: Final = 10_000  # tool names each tool regex is tried on


@final
class _Earlier:
    """The earlier rules of one tool name (or of every tool), indexed to find one that covers a later rule.

    An earlier rule covers a later one when its arguments match every serialization the later one's do:
    it has none or ``""``, or its substring is inside the later substring, or its regex is the same.
    Substrings are looked up by their first three characters, and only in the lengths that occur.
    """

    __slots__ = ("by_prefix", "regexes", "short", "specifiers", "substrings", "unrestricted")

    def __init__(self) -> None:
        self.unrestricted: int | None = None
        self.substrings: dict[str, int] = {}  # each substring: the first rule that has it
        self.by_prefix: dict[str, list[int]] = {}  # first three characters: the lengths, ascending
        self.short: list[int] = []  # the lengths under three that occur, ascending
        self.regexes: dict[tuple[str, int], int] = {}
        self.specifiers: dict[SpecifierPattern, int] = {}  # a specifier covers an equal one only

    def add(self, index: int, pattern: StoredArgumentPattern) -> None:
        if pattern is None or pattern == "":
            if self.unrestricted is None:
                self.unrestricted = index
        elif isinstance(pattern, str):
            if pattern not in self.substrings:
                self.substrings[pattern] = index
                lengths = (
                    self.by_prefix.setdefault(pattern[:_PREFIX], [])
                    if len(pattern) >= _PREFIX
                    else self.short
                )
                if len(pattern) not in lengths:
                    insort(lengths, len(pattern))
        elif isinstance(pattern, re.Pattern):
            self.regexes.setdefault((pattern.pattern, pattern.flags), index)
        else:
            self.specifiers.setdefault(pattern, index)

    def covering(self, pattern: StoredArgumentPattern) -> int | None:
        """The first earlier rule that covers a rule with this argument pattern, or ``None``."""
        found = self.unrestricted
        if isinstance(pattern, str) and pattern:
            candidates = [
                self.substrings.get(piece) for piece in _pieces(pattern, self.short, self.by_prefix)
            ]
            found = min((index for index in (found, *candidates) if index is not None), default=None)
        elif pattern is not None and not isinstance(pattern, str):
            index = (
                self.regexes.get((pattern.pattern, pattern.flags))
                if isinstance(pattern, re.Pattern)
                else self.specifiers.get(pattern)
            )
            if index is not None and (found is None or index < found):
                found = index
        return found


_PREFIX: Final = 3


def _pieces(text: str, short: list[int], by_prefix: Mapping[str, list[int]]) -> Iterator[str]:
    """The substrings of ``text`` that may be an earlier rule's substring (at most a cap of them)."""
    probes = 0
    size = len(text)
    for length in short:
        for start in range(size - length + 1):
            yield text[start : start + length]
        probes += size
    if not by_prefix:
        return
    for start in range(size - _PREFIX + 1):
        lengths = by_prefix.get(text[start : start + _PREFIX])
        if lengths is None:
            continue
        for length in lengths:
            if start + length > size:
                break
            yield text[start : start + length]
        probes += len(lengths)
        if probes > _MOST_SUBSTRING_PROBES:
            return


def _tool_key(pattern: ToolPattern) -> object:
    return pattern if pattern is ALL or isinstance(pattern, str) else (pattern.pattern, pattern.flags)


@final
class _Linter:
    """The findings about one ordered list of rules."""

    def __init__(
        self,
        rules: list[Rule],
        layer: RuleSetLayer | None,
        tool_names: tuple[str, ...],
        study: RegexStudy,
        places: Sequence[str] | None = None,
    ) -> None:
        self.rules = rules
        self.places = places
        self.layer = layer
        self.tool_names = tool_names
        self.study = study
        self.found: dict[int, list[Finding]] = {}
        self.unreachable: set[int] = set()
        # Rules by folded tool name, and the others (ALL or a regex) by their tool pattern and whether they
        # also meet folded names; which of them a call meets, Rule.tool_matches says.
        self.by_name: dict[str, list[int]] = {}
        self.wild: dict[tuple[object, bool], list[int]] = {}
        self.allows: list[int] = []
        self._applicable: dict[str, list[int]] = {}
        self._fragments: dict[int, tuple[str | None, str] | None] = {}
        self._in_json: dict[str, bool] = {}
        self._descriptions: dict[int, str] = {}
        self._meets: dict[tuple[object, bool, str], bool] = {}
        self._names: dict[tuple[object, bool], list[str]] = {}
        # The first deny or ask rule with a command specifier, by tool, key and specifier or literal prefix.
        self._command_blocks: dict[tuple[str, str | None, object], int] = {}

    def findings(self) -> list[Finding]:
        every_tool = _Earlier()
        earlier: dict[tuple[str, bool], _Earlier] = {}
        for index, rule in enumerate(self.rules):
            self._check_rule(index, rule)
            self._check_specifiers(index, rule)
            self._check_reachable(index, rule, every_tool, earlier)
            tool = rule.tool_pattern
            if tool is ALL:
                every_tool.add(index, rule.argument_pattern)
            elif isinstance(tool, str):
                earlier.setdefault((tool, _folds(rule)), _Earlier()).add(index, rule.argument_pattern)
            if isinstance(tool, str):
                self.by_name.setdefault(fold_tool_name(tool), []).append(index)
            else:
                self.wild.setdefault((_tool_key(tool), _folds(rule)), []).append(index)
            if rule.effective_decision == "allow":
                self.allows.append(index)
        for index, rule in enumerate(self.rules):
            if rule.effective_decision == "deny" and index not in self.unreachable:
                self._check_overridden(index, rule)
        return [finding for index in sorted(self.found) for finding in self.found[index]]

    def _report(self, index: int, why: str, witness: tuple[str, str] | None = None) -> None:
        where = None if self.places is None else self.places[index]
        finding = Finding(self.layer, index, self._describe(index), why, witness, where)
        self.found.setdefault(index, []).append(finding)

    def _describe(self, index: int) -> str:
        text = self._descriptions.get(index)
        if text is None:
            text = self._descriptions[index] = describe_rule(self.rules[index])
        return text

    def _label(self, index: int) -> str:
        place = rule_label(self.layer, index) if self.places is None else self.places[index]
        return f"{place} ({self._describe(index)})"

    # -- one rule at a time ---------------------------------------------------------------------------------

    def _check_specifiers(self, index: int, rule: Rule) -> None:
        """The traps of rule text: wildcard programs, covered allows, escaping paths, wildcard servers."""
        argument = rule.argument_pattern
        if rule.decision != "allow":
            if isinstance(argument, CommandPattern) and isinstance(rule.tool_pattern, str):
                place = (rule.tool_pattern, argument.key)
                self._command_blocks.setdefault((*place, argument), index)
                if argument.is_prefix_only:
                    self._command_blocks.setdefault((*place, argument.literal_prefix), index)
        else:
            if isinstance(argument, CommandPattern):
                if argument.starts_with_wildcard and not argument.is_unrestricted:
                    self._report(index, _WILDCARD_PROGRAM)
                covering = self._covering_block(index, rule, argument)
                if covering is not None:
                    self._report(index, f"always covered by {self._label(covering)}: it never allows")
            elif isinstance(argument, PathPattern) and argument.reaches_outside_root:
                self._report(index, f"allows paths outside the rules' root {argument.root!r}")
            tool = rule.tool_pattern
            if isinstance(tool, re.Pattern) and tool.pattern.startswith("^mcp__"):
                server = tool.pattern.removeprefix("^mcp__")
                if not server or "__" not in server or server.startswith(("_", ".", "(", "[")):
                    self._report(index, _WILDCARD_SERVER)
        if isinstance(argument, PathPattern) and re.search(r"\s", argument.text) and "/" not in argument.text:
            self._report(index, _COMMAND_ON_PATH_TOOL)

    def _covering_block(self, index: int, rule: Rule, argument: CommandPattern) -> int | None:
        """An earlier deny or ask of the same tool whose command specifier matches all the allow does."""
        tool = rule.tool_pattern
        if not isinstance(tool, str):
            return None
        # A deny of `git *` matches every command an allow of `git status ...` can; so does an equal one.
        blocks = self._command_blocks
        found = [blocks.get((tool, argument.key, argument))]
        prefix = argument.literal_prefix
        found.extend(
            blocks.get((tool, argument.key, prefix[:length])) for length in range(1, len(prefix) + 1)
        )
        return min((earlier for earlier in found if earlier is not None), default=None)

    def _check_rule(self, index: int, rule: Rule) -> None:
        if rule.effective_decision != rule.decision:
            self._report(index, _DOWNGRADED)
        elif rule.dangerous:
            self._report(index, _UNGUARDED)
        argument = rule.argument_pattern
        if isinstance(argument, str) and argument and not self._can_be_serialized(argument):
            self._report(index, _NEVER_IN_JSON)
        for pattern, kind in ((rule.tool_pattern, "tool"), (argument, "argument")):
            if isinstance(pattern, re.Pattern):
                self._check_regex(index, pattern, kind)

    def _can_be_serialized(self, substring: str) -> bool:
        known = self._in_json.get(substring)
        if known is None:
            known = self._in_json[substring] = can_occur_in_json(substring)
        return known

    def _check_regex(self, index: int, pattern: re.Pattern[str], kind: str) -> None:
        facts = self.study.facts(pattern)
        control = _control_characters(pattern.pattern, bool(pattern.flags & re.VERBOSE))
        if control is not None:
            self._report(index, control.replace("its regex", f"its {kind} regex", 1))
        for warning in facts.warnings:
            self._report(index, f"Python warns about its {kind} regex: {warning}")
        if facts.nested_repeat is None:
            return
        if self.study.measuring_left <= 0:
            self._report(
                index,
                f"its {kind} regex repeats a repeat (nested quantifiers), which can backtrack "
                "catastrophically; not measured: lint has spent its time for measuring regexes",
            )
            return
        slow = self.study.backtracking(pattern)
        if slow is not None:
            self._report(
                index, f"its {kind} regex has nested quantifiers and backtracks catastrophically: {slow}"
            )

    def _check_reachable(
        self, index: int, rule: Rule, every_tool: _Earlier, earlier: dict[tuple[str, bool], _Earlier]
    ) -> None:
        groups = [every_tool]
        tool = rule.tool_pattern
        if isinstance(tool, str):
            # A deny or ask rule also meets names that fold to its own, which an earlier allow of the same
            # name does not: only an earlier rule that folds too meets every call of such a rule.
            folding = (True,) if _folds(rule) else (True, False)
            groups.extend(earlier[(tool, folds)] for folds in folding if (tool, folds) in earlier)
        covering = [found for group in groups if (found := group.covering(rule.argument_pattern)) is not None]
        if covering:
            shadow = min(covering)
            self.unreachable.add(index)
            self._report(
                index,
                f"never matches: {self._label(shadow)} comes first and matches every call it could",
            )

    # -- denies an earlier allow overrides ---------------------------------------------------------------

    def _check_overridden(self, index: int, deny: Rule) -> None:
        """Report a call that an earlier allow decides although the deny matches it too, if one is found.

        Witness calls are built from both rules' patterns (their texts, or examples of their regexes)
        and checked: both rules match, and going down the rules the call meets, an allow decides it.
        """
        budget = _MOST_MATCHES
        for tried, (allow_index, name, earlier) in enumerate(self._allow_candidates(index, deny)):
            if tried >= _MOST_ALLOWS_TRIED or budget <= 0:
                return
            allow = self.rules[allow_index]
            for serialized in self._witnesses(allow_index, index):
                budget -= 2
                if not (
                    argument_pattern_matches(allow.argument_pattern, serialized)
                    and argument_pattern_matches(deny.argument_pattern, serialized)
                ):
                    continue
                budget -= len(earlier)
                decider = next(
                    (
                        at
                        for at in earlier
                        if argument_pattern_matches(self.rules[at].argument_pattern, serialized)
                    ),
                    allow_index,
                )
                if self.rules[decider].effective_decision == "allow":
                    self._report(
                        index,
                        f"overridden for some calls: {self._label(decider)} comes first and allows {name} "
                        f"{serialized}, which this rule would deny",
                        (name, serialized),
                    )
                    return

    def _allow_candidates(self, index: int, deny: Rule) -> Iterator[tuple[int, str, list[int]]]:
        """Earlier allows whose tool pattern meets the deny's: each with a tool name both match, and the
        rules before it that a call of that name meets, in order."""
        tool = deny.tool_pattern
        seen: set[int] = set()
        if tool is not ALL:
            for name in self._names_for(deny):
                met = self._rules_met(name, index)
                for position, allow_index in enumerate(met):
                    if self.rules[allow_index].effective_decision == "allow" and allow_index not in seen:
                        seen.add(allow_index)
                        yield allow_index, name, met[:position]
        if isinstance(tool, str):
            return
        # A regex or ALL meets allows for other names too: find a name each allow shares with the deny.
        for allow_index in self.allows[:_MOST_RULES_SCANNED]:
            if allow_index >= index:
                return
            if allow_index in seen:
                continue
            common = self._common_tool(self.rules[allow_index], deny)
            if common is None:
                continue
            met = self._rules_met(common, allow_index + 1)
            if met and met[-1] == allow_index:  # else the cap cut the rules short of the allow
                yield allow_index, common, met[:-1]

    def _names_for(self, rule: Rule) -> list[str]:
        """A few names a rule's tool pattern meets: its name, or its regex's example and registry names."""
        pattern = rule.tool_pattern
        if isinstance(pattern, str):
            return [pattern]
        key = (_tool_key(pattern), _folds(rule))
        names = self._names.get(key)
        if names is None:
            example = self.study.facts(pattern).example if isinstance(pattern, re.Pattern) else "tool"
            found = [example] if example else []
            for name in self.tool_names[:_MOST_REGISTRY_NAMES]:
                if len(found) >= 3:
                    break
                if rule.tool_matches(name):
                    found.append(name)
            names = self._names[key] = found
        return names

    def _common_tool(self, allow: Rule, deny: Rule) -> str | None:
        """A tool name both rules' tool patterns meet, if one of a few likely names is."""
        if isinstance(allow.tool_pattern, str):
            name = allow.tool_pattern
            key = (_tool_key(deny.tool_pattern), _folds(deny), name)
            meets = self._meets.get(key)
            if meets is None:
                meets = self._meets[key] = deny.tool_matches(name)
            return name if meets else None
        examples = [
            self.study.facts(pattern).example or "" if isinstance(pattern, re.Pattern) else ""
            for pattern in (allow.tool_pattern, deny.tool_pattern)
        ]
        # Each regex's example, and both run together (^mcp_ and _db$ meet in "mcp__db").
        candidates = [*examples, "".join(examples), "".join(reversed(examples)), *self.tool_names[:4], "tool"]
        return next(
            (
                name
                for name in filter(None, candidates)
                if allow.tool_matches(name) and deny.tool_matches(name)
            ),
            None,
        )

    def _rules_met(self, name: str, stop: int) -> list[int]:
        """The first rules before ``stop`` whose tool pattern matches ``name``, in order (at most a cap)."""
        applicable = self._applicable.get(name)
        if applicable is None:
            applicable = self._applicable[name] = self._applicable_to(name)
        return applicable[: min(bisect_left(applicable, stop), _MOST_RULES_SCANNED)]

    def _applicable_to(self, name: str) -> list[int]:
        """The rules whose tool pattern meets ``name``, in order (none when there are too many kinds)."""
        if len(self.wild) > _MOST_WILD_PATTERNS:
            return []  # too many distinct tool regexes to match against every name: no findings
        rules = self.rules
        lists = [
            [index for index in self.by_name.get(fold_tool_name(name), ()) if rules[index].tool_matches(name)]
        ]
        # The rules of one group share their tool pattern and whether they fold: one stands for all.
        lists.extend(indices for indices in self.wild.values() if rules[indices[0]].tool_matches(name))
        return sorted(chain.from_iterable(lists))  # sorted runs: timsort merges them in linear time

    def _witnesses(self, allow: int, deny: int) -> Iterator[str]:
        """Serialized mappings that may match both rules' argument patterns (to be checked)."""
        allow_fragment = self._fragment(allow)
        deny_fragment = self._fragment(deny)
        if allow_fragment is None or deny_fragment is None:
            return
        allow_key, allow_value = allow_fragment
        deny_key, deny_value = deny_fragment
        joined = (
            (f"{allow_value}; {deny_value}", f"{deny_value}; {allow_value}", allow_value + deny_value)
            if allow_value and deny_value
            else (allow_value + deny_value,)
        )
        values = [_json_string(value) for value in dict.fromkeys(joined)]
        # Written as serialize_arguments writes a mapping of strings (a test holds the two together).
        for key in dict.fromkeys(key for key in (allow_key, deny_key, "command") if key is not None):
            written = _json_string(key)
            for value in values:
                yield f"{{{written}:{value}}}"
        if allow_key is not None and deny_key is not None and allow_key != deny_key:
            yield (
                f"{{{_json_string(allow_key)}:{_json_string(allow_value)},"
                f"{_json_string(deny_key)}:{_json_string(deny_value)}}}"
            )

    def _fragment(self, index: int) -> tuple[str | None, str] | None:
        """A rule's argument pattern as a key (if it names one) and a value text; ``None``: no example."""
        if index in self._fragments:
            return self._fragments[index]
        pattern = self.rules[index].argument_pattern
        if pattern is None:
            text: str | None = ""
        elif isinstance(pattern, str):
            text = pattern
        elif isinstance(pattern, re.Pattern):
            text = self.study.facts(pattern).example
        else:
            text = None  # a specifier reads the arguments themselves: no text example stands for it
        fragment = None if text is None else _split_fragment(text)
        self._fragments[index] = fragment
        return fragment


def _folds(rule: Rule) -> bool:
    """Whether a rule may also meet names that fold to its own (deny and ask rules; see Rule.tool_matches)."""
    return rule.decision != "allow"


# A JSON string literal with non-ASCII kept, as the compact encoder writes it (the C implementation).
_json_string: Final = json.encoder.encode_basestring

# A key and the start of its string value, as a pattern on serialized arguments often spells them.
_FRAGMENT: Final = re.compile(r'"((?:[^"\\]|\\.)*)":"((?:[^"\\]|\\.)*)')


def _split_fragment(text: str) -> tuple[str | None, str]:
    """``("command", "git status")`` for ``"command":"git status``; ``(None, text)`` for plain text."""
    match = _FRAGMENT.search(text)
    if match is None:
        return None, text
    try:
        return json.loads(f'"{match.group(1)}"'), json.loads(f'"{match.group(2)}"')
    except ValueError:
        return None, text


# -- describing rules ----------------------------------------------------------------------------------------


def describe_rule(rule: Rule) -> str:
    """A rule in one short phrase: ``deny bash, arguments containing "rm -rf"``, or ``deny Bash(rm *)``."""
    if rule.text is not None:
        return f"{rule.decision} {rule.text}"
    argument = None if rule.argument_pattern is None else encode_pattern(rule.argument_pattern)
    return describe_patterns(rule.decision, encode_pattern(rule.tool_pattern), argument)
