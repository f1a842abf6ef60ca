"""PermissionRules and Rule: ordered allow/ask/deny rules, first match wins."""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Self, final

from ask_permissions._errors import preview
from ask_permissions._names import fold_tool_name, require_tool_names
from ask_permissions._strict import (
    SNAPSHOT_VERSION,
    child,
    fail,
    guard_reading,
    read_bool,
    read_list,
    read_mapping,
    read_text,
    read_version,
)
from ask_permissions._vocabulary import DECISIONS, Decision, RuleSetLayer
from ask_permissions.shell import READ_LIMIT, Reading

from ._command import READ_LIMIT_TEXT, CommandPattern, command_readings, compound_allow
from ._patterns import (
    ALL,
    SPECIFIER_CLASSES,
    StoredArgumentPattern,
    ToolPattern,
    argument_pattern_matches,
    decode_argument_pattern,
    decode_pattern,
    encode_pattern,
    is_unrestricted,
    normalize_argument_pattern,
    normalize_tool_pattern,
    serialize_arguments,
    tool_pattern_matches,
)
from ._text import BUILTIN_KINDS, RuleTextError, parse_rule_text, read_kinds

__all__ = [
    "DANGEROUS_TOOLS",
    "CompoundPart",
    "DecisionPredicates",
    "PermissionRules",
    "Rule",
    "RuleMatch",
    "checked_decision",
    "checked_match_decision",
]

DANGEROUS_TOOLS: Final[tuple[str, ...]] = ("bash", "code", "repl")
"""Tools that execute arbitrary code: an unrestricted ``allow`` on any of them is downgraded to ``ask``.

The gem's three; ``PermissionRules(dangerous_tools=...)`` adds a host's own (``sh``, ``python``, ...).
"""


def checked_decision(decision: object, source: str) -> Decision | None:
    """A custom classifier's answer, refused unless it is a decision or ``None``.

    A misspelt ``"DENY"`` or ``"block"`` would otherwise match no layer and let the call proceed.

    Raises:
        ValueError: anything but ``"allow"``, ``"ask"``, ``"deny"`` or ``None``.
    """
    if decision is None or decision in DECISIONS:
        return decision
    raise ValueError(f"{source}: expected 'allow', 'ask', 'deny' or None; got {preview(decision)}")


def checked_match_decision(decision: object, source: str) -> Decision:
    """The decision a custom ``explain`` put in its ``RuleMatch``; ``None`` is not one.

    Raises:
        ValueError: anything but ``"allow"``, ``"ask"`` or ``"deny"``.
    """
    if decision in DECISIONS:
        return decision
    raise ValueError(
        f"{source}: expected a match with the decision 'allow', 'ask' or 'deny'; got {preview(decision)}"
    )


# Hosts may see unboundedly many tool names (MCP servers, generated names), of any length; the per-name
# candidate cache stays this small, whatever they send: at most this many names, of at most this many
# characters in all, none longer than the name limit (a longer name is worked out on every call).
_CANDIDATE_CACHE_SIZE: Final = 1024
_CANDIDATE_CACHE_CHARS: Final = 64 * 1024
_CACHED_NAME_LIMIT: Final = 256


@final
@dataclass(frozen=True, slots=True)
class Rule:
    """One declared rule.

    ``decision`` (also ``declared_decision``) is the decision as written; ``effective_decision`` is what
    ``classify`` returns for it, after the dangerous-tool guard. ``dangerous`` marks an ``allow`` whose tool
    pattern covers a code-executing tool and whose argument pattern restricts nothing.

    A ``deny`` or ``ask`` rule also matches a tool name that equals its own after folding (NFKC, case
    folding, invisible characters and surrounding whitespace removed: ``Bash``, ``bash `` and a fullwidth
    ``bash`` all meet a deny for ``bash``); a regex tool pattern of such a rule is also tried on the folded
    name. An ``allow`` rule matches names exactly.
    """

    decision: Decision
    tool_pattern: ToolPattern
    argument_pattern: StoredArgumentPattern
    dangerous: bool
    effective_decision: Decision
    # Not in the repr, which keeps the gem-style fields only (the text repeats the patterns).
    text: str | None = field(default=None, repr=False)
    """The rule text it was read from (``Bash(npm test)``), for display; ``None`` for a gem-style rule."""
    # What a deny or ask rule compares folded names with: its folded exact name, or its regex. Derived from
    # the fields above, so it is no part of the value: not compared, not shown.
    _folded_tool_pattern: str | re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        folded: str | re.Pattern[str] | None = None
        if self.decision != "allow" and self.tool_pattern is not ALL:
            pattern = self.tool_pattern
            folded = fold_tool_name(pattern) if isinstance(pattern, str) else pattern
        object.__setattr__(self, "_folded_tool_pattern", folded)

    @property
    def declared_decision(self) -> Decision:
        """The decision as declared (the same as ``decision``)."""
        return self.decision

    @property
    def is_universal(self) -> bool:
        """Whether the rule has no argument pattern at all (it then matches any arguments)."""
        return self.argument_pattern is None

    def tool_matches(self, tool_name: str) -> bool:
        """Whether the tool pattern matches ``tool_name`` (also after folding, for a deny or ask rule)."""
        return self._tool_matches(tool_name, None)

    def _tool_matches(self, tool_name: str, folded_name: str | None) -> bool:
        """``tool_matches``, given ``fold_tool_name(tool_name)`` when the caller has it already."""
        if tool_pattern_matches(self.tool_pattern, tool_name):
            return True
        folded_pattern = self._folded_tool_pattern
        if folded_pattern is None or not isinstance(tool_name, str):
            return False
        if folded_name is None:
            folded_name = fold_tool_name(tool_name)
        if isinstance(folded_pattern, str):
            return folded_pattern == folded_name
        return folded_name != tool_name and folded_pattern.search(folded_name) is not None

    def argument_matches(self, arguments: object = None) -> bool:
        """Whether the argument pattern matches ``arguments`` (serialized as classify does).

        A specifier pattern (``CommandPattern``, ``PathPattern``, ``DomainPattern``) reads the arguments
        themselves, as the rule's declared decision reads them: every sub-command for an allow, any for a
        deny or ask.
        """
        pattern = self.argument_pattern
        if pattern is None:
            return True
        if isinstance(pattern, SPECIFIER_CLASSES):
            return pattern.matches(arguments, self.decision)
        return argument_pattern_matches(pattern, serialize_arguments(arguments))

    def matches(self, tool_name: str, arguments: object = None) -> bool:
        """Whether the rule matches the call."""
        return self.tool_matches(tool_name) and self.argument_matches(arguments)

    def snapshot(self) -> dict[str, object]:
        """The rule in snapshot form (raises ``ValueError`` for a regex flag that cannot be recorded)."""
        data: dict[str, object] = {
            "decision": self.decision,
            "tool_pattern": encode_pattern(self.tool_pattern),
        }
        if self.argument_pattern is not None:
            data["argument_pattern"] = encode_pattern(self.argument_pattern)
        if self.text is not None:
            data["text"] = self.text
        return data


@final
@dataclass(frozen=True, slots=True)
class RuleMatch:
    """The rule that decided a classification, with where it sits.

    ``index`` is the rule's 0-based position in its ruleset's ``rules``; ``layer`` is the rule-set layer it
    came from (``None`` for a plain ``PermissionRules``); ``decision`` is what ``classify`` returned. ``rule``
    and ``index`` are ``None`` when a rule-set layer is a custom classifier that cannot explain itself.
    """

    rule: Rule | None
    index: int | None
    layer: RuleSetLayer | None
    decision: Decision
    parts: tuple[CompoundPart, ...] = ()
    """For a call allowed sub-command by sub-command (no single rule matched it), each sub-command and the
    allow rule that took it, in order; ``rule`` and ``index`` are then the first part's."""
    unread: str | None = None
    """Why the rule could not read the call, which then asks instead of being denied (``decision`` is
    ``"ask"``): a deny or ask command rule met a command past the read limit. The reason names the limit."""


@final
@dataclass(frozen=True, slots=True)
class CompoundPart:
    """One sub-command of a compound shell command and the allow rule that allowed it."""

    subcommand: str
    rule: Rule
    index: int


@final
class _Guard:
    """The dangerous-tool guard of one ruleset: which allow rules are downgraded to ask.

    Names are compared folded, as deny rules compare them: ``allow("Bash")`` covers ``bash``. A regex,
    which cannot be folded, is tried on each dangerous name as written, folded, in Title Case and in
    UPPER CASE, so that ``^(Bash|Read)$`` covers ``bash`` too.
    """

    __slots__ = ("_folded", "_probes")

    def __init__(self, extra_tools: tuple[str, ...]) -> None:
        names = (*DANGEROUS_TOOLS, *extra_tools)
        self._folded: Final = frozenset(fold_tool_name(name) for name in names)
        self._probes: Final = tuple(
            dict.fromkeys(
                variant
                for name in names
                for folded in (fold_tool_name(name),)
                for variant in (name, folded, folded.title(), folded.upper())
            )
        )

    def covers(self, pattern: ToolPattern) -> bool:
        """Whether ``pattern`` matches a dangerous tool's name."""
        if pattern is ALL:
            return True
        if isinstance(pattern, str):
            return fold_tool_name(pattern) in self._folded
        return any(pattern.search(name) is not None for name in self._probes)

    def make_rule(
        self,
        decision: Decision,
        tool_pattern: ToolPattern,
        argument_pattern: StoredArgumentPattern,
        auto_allow_dangerous: bool,
        text: str | None = None,
    ) -> Rule:
        """The rule, marked dangerous and downgraded to ask when it allows a dangerous tool unrestricted."""
        # Deliberate hardening: "unrestricted" also covers patterns such as "", "{" or ".*" that every
        # call's arguments match, which the gem misses.
        dangerous = decision == "allow" and self.covers(tool_pattern) and is_unrestricted(argument_pattern)
        effective: Decision = "ask" if dangerous and not auto_allow_dangerous else decision
        return Rule(decision, tool_pattern, argument_pattern, dangerous, effective, text)


_Entry = tuple[StoredArgumentPattern, RuleMatch]
"""A rule as the hot loop reads it: its argument pattern (no attribute lookup) and the ``RuleMatch`` that
``explain`` returns for it."""

_Candidates = tuple[_Entry, ...]
"""The entries of the rules whose tool pattern matches one tool name, in declaration order."""


class _State:
    """One version of a ruleset: its rules and the per-tool-name candidate cache built for them.

    A registration makes a new state, so a cache entry can never describe another version's rules.
    Each rule's entry is made once per version, when a name first needs it, and shared by every name's
    candidates: the cache then holds references, at most ``_CANDIDATE_CACHE_SIZE`` x the rule count, and
    names of at most ``_CANDIDATE_CACHE_CHARS`` characters in all.
    """

    __slots__ = ("cached_chars", "candidates", "entries", "has_command_allows", "rules")

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        # Only then can a call no single rule matches be allowed sub-command by sub-command.
        self.has_command_allows = any(
            rule.effective_decision == "allow" and isinstance(rule.argument_pattern, CommandPattern)
            for rule in rules
        )
        self.candidates: dict[str, _Candidates] = {}
        self.cached_chars = 0  # the total length of the names in candidates
        self.entries: list[_Entry | None] = [None] * len(rules)


class DecisionPredicates:
    """``allows`` / ``asks`` / ``denies`` for any class with ``classify`` (the gem's ``allow?`` and kin)."""

    __slots__ = ()

    def classify(self, tool_name: str, arguments: object = None) -> Decision | None:
        raise NotImplementedError

    def allows(self, tool_name: str, arguments: object = None) -> bool:
        """Whether the call classifies as ``"allow"``."""
        return self.classify(tool_name, arguments) == "allow"

    def asks(self, tool_name: str, arguments: object = None) -> bool:
        """Whether the call classifies as ``"ask"``."""
        return self.classify(tool_name, arguments) == "ask"

    def denies(self, tool_name: str, arguments: object = None) -> bool:
        """Whether the call classifies as ``"deny"``."""
        return self.classify(tool_name, arguments) == "deny"


@final
class PermissionRules(DecisionPredicates):
    """Ordered allow/ask/deny rules; the first rule that matches a call decides it.

    Thread-safe: rules may be registered while other threads classify; a classification sees the rule
    list either before or after a registration, never a torn one.

    Deny and ask rules also match tool names that equal theirs after folding (see :class:`Rule`); allow
    rules match names exactly.

    Args:
        configure: optional callable that receives the new ruleset (to declare rules in one expression).
        auto_allow_dangerous: keep unrestricted ``allow`` rules on code-executing tools as ``allow``
            instead of downgrading them to ``ask``. An explicit opt-out: leave it off.
        dangerous_tools: tool names the guard treats as code-executing besides ``DANGEROUS_TOOLS``
            (``sh``, ``shell``, ``python``, ``terminal``: whatever runs code in your host).

    Raises:
        TypeError: ``auto_allow_dangerous`` is not a bool; ``dangerous_tools`` is a bare string or holds
            a non-string.
        ValueError: ``dangerous_tools`` holds an empty name.
    """

    __slots__ = ("_auto_allow_dangerous", "_dangerous_tools", "_guard", "_lock", "_state")

    def __init__(
        self,
        configure: Callable[[PermissionRules], object] | None = None,
        *,
        auto_allow_dangerous: bool = False,
        dangerous_tools: Iterable[str] = (),
    ) -> None:
        if not isinstance(auto_allow_dangerous, bool):
            raise TypeError(f"auto_allow_dangerous: expected a bool; got {preview(auto_allow_dangerous)}")
        self._auto_allow_dangerous: Final = auto_allow_dangerous
        self._dangerous_tools: Final = tuple(
            dict.fromkeys(require_tool_names(dangerous_tools, "dangerous_tools"))
        )
        self._guard: Final = _Guard(self._dangerous_tools)
        self._lock = threading.Lock()
        self._state = _State(())
        if configure is not None:
            configure(self)

    @classmethod
    def from_text(
        cls,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        cwd: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        kinds: Mapping[str, str] | None = None,
        auto_allow_dangerous: bool = False,
    ) -> PermissionRules:
        """Rules from rule text: ``Tool``, ``Tool(*)``, ``mcp__server``, ``mcp__server__tool``, ``Tool(x)``.

        Every deny rule comes first, then every ask rule, then every allow rule, each list in its own order:
        deny beats ask beats allow whatever the order of the lists, and first-match still describes the
        result. A call that no rule matches is still allowed when each of its shell sub-commands is allowed
        by some allow rule (``explain`` names the rule of each sub-command). Tools declared as shell tools
        (built in: ``bash``, ``sh``, ``Bash``) count as code-executing for the dangerous-tool guard.

        Args:
            allow: allow rule texts (the forms: docs/reference/rule-text.md).
            ask: ask rule texts.
            deny: deny rule texts.
            cwd: the root of path specifiers (default: the working directory now); stored in each.
            home: the directory ``~/`` names (default: the user's home); stored in each.
            kinds: tool name to ``"shell"``, ``"path"`` or ``"url"``, optionally with the argument key
                (``{"run": "shell:script"}``); fills in for tools the built-in kinds do not know.
            auto_allow_dangerous: as for ``PermissionRules``.

        Raises:
            RuleTextError: a malformed rule (a ``ValueError`` naming the text; a note names its list and
                position).
            TypeError: a list that is a bare string or holds a non-string; ``kinds`` not a mapping.
        """
        table = read_kinds(kinds)
        root = os.fspath(cwd) if cwd is not None else os.getcwd()
        home_dir = None if home is None else os.fspath(home)
        shell_tools = [name for name, kind in {**BUILTIN_KINDS, **table}.items() if kind.kind == "shell"]
        ruleset = cls(auto_allow_dangerous=auto_allow_dangerous, dangerous_tools=shell_tools)
        rules: list[Rule] = []
        lists: tuple[tuple[Decision, Iterable[str]], ...] = (("deny", deny), ("ask", ask), ("allow", allow))
        for decision, texts in lists:
            for index, text in enumerate(require_rule_texts(texts, decision)):
                try:
                    parsed = parse_rule_text(text, decision, kinds=table, cwd=root, home=home_dir)
                except RuleTextError as error:
                    error.where = f"{decision}[{index}]"
                    error.add_note(f"in {error.where}")
                    raise
                rules.append(
                    ruleset._guard.make_rule(
                        decision, parsed.tool_pattern, parsed.argument_pattern, auto_allow_dangerous, text
                    )
                )
        ruleset._extend(tuple(rules))
        return ruleset

    # -- declaring -----------------------------------------------------------------------------------

    def allow(self, tool_pattern: ToolPattern, argument_pattern: object = None) -> Self:
        """Declare an ``allow`` rule; returns the ruleset so calls chain."""
        return self.add("allow", tool_pattern, argument_pattern)

    def ask(self, tool_pattern: ToolPattern, argument_pattern: object = None) -> Self:
        """Declare an ``ask`` rule; returns the ruleset so calls chain."""
        return self.add("ask", tool_pattern, argument_pattern)

    def deny(self, tool_pattern: ToolPattern, argument_pattern: object = None) -> Self:
        """Declare a ``deny`` rule; returns the ruleset so calls chain."""
        return self.add("deny", tool_pattern, argument_pattern)

    def add(self, decision: Decision, tool_pattern: ToolPattern, argument_pattern: object = None) -> Self:
        """Declare a rule with the given decision; returns the ruleset.

        Args:
            decision: ``"allow"``, ``"ask"`` or ``"deny"``.
            tool_pattern: an exact tool name, a compiled regex searched in the name, or ``ALL``.
            argument_pattern: a substring of the serialized arguments, a compiled regex searched in them,
                or ``None``/``ALL`` for any arguments.

        Raises:
            ValueError: an unknown decision or an empty tool name.
            TypeError: a pattern of the wrong type (bytes regexes included).
        """
        if decision not in DECISIONS:
            raise ValueError(f"decision: expected one of allow, ask, deny; got {preview(decision)}")
        rule = self._guard.make_rule(
            decision,
            normalize_tool_pattern(tool_pattern),
            normalize_argument_pattern(argument_pattern),
            self._auto_allow_dangerous,
        )
        self._extend((rule,))
        return self

    def _extend(self, rules: tuple[Rule, ...]) -> None:
        with self._lock:
            # Copy-on-write: readers hold the old state, whose rules and cache stay consistent.
            self._state = _State(self._state.rules + rules)

    # -- reading -------------------------------------------------------------------------------------

    @property
    def auto_allow_dangerous(self) -> bool:
        """Whether the dangerous-tool guard is switched off."""
        return self._auto_allow_dangerous

    @property
    def dangerous_tools(self) -> list[str]:
        """The guard's additions to ``DANGEROUS_TOOLS``, as given (a fresh list)."""
        return list(self._dangerous_tools)

    @property
    def rules(self) -> list[Rule]:
        """The declared rules, in declaration order (a fresh list)."""
        return list(self._state.rules)

    @property
    def dangerous_rules(self) -> list[Rule]:
        """The rules that would allow unrestricted use of a code-executing tool, in declaration order."""
        return [rule for rule in self._state.rules if rule.dangerous]

    def __len__(self) -> int:
        return len(self._state.rules)

    def __repr__(self) -> str:
        state = self._state
        guard = " auto_allow_dangerous" if self._auto_allow_dangerous else ""
        if self._dangerous_tools:
            guard += f" dangerous_tools={list(self._dangerous_tools)!r}"
        return f"<PermissionRules rules={len(state.rules)}{guard}>"

    # -- classifying ---------------------------------------------------------------------------------

    def classify(self, tool_name: str, arguments: object = None) -> Decision | None:
        """The effective decision of the first rule that matches the call, or ``None`` if none does."""
        match = self._first_match(tool_name, arguments)
        return None if match is None else match.decision

    def explain(self, tool_name: str, arguments: object = None) -> RuleMatch | None:
        """The rule ``classify`` uses for the call, with its index, or ``None`` if no rule matches."""
        return self._first_match(tool_name, arguments)

    def _first_match(self, tool_name: str, arguments: object) -> RuleMatch | None:
        if type(tool_name) is not str:
            # Checked before the cache lookup: an unhashable name would fail there with a message that
            # does not name the field.
            if not isinstance(tool_name, str):
                raise TypeError(f"tool_name: expected a string; got {preview(tool_name)}")
            # A str subclass such as a StrEnum member hashes differently from its text: look up the text
            # (str.__str__, not str(): a str-mixin Enum member's str() is "Tools.BASH", not "bash").
            tool_name = str.__str__(tool_name)
        state = self._state  # one read: the rules and cache of a single version
        candidates = state.candidates.get(tool_name)
        if candidates is None:
            candidates = self._candidates(state, tool_name)
        # Rules for other tools are not looked at; the arguments are serialized once, and only when a
        # candidate has an argument pattern.
        serialized: str | None = None
        commands: dict[str | None, tuple[Reading | None, ...]] | None = None
        for pattern, match in candidates:
            if pattern is None:
                return match
            if isinstance(pattern, str):
                if serialized is None:
                    serialized = serialize_arguments(arguments)
                if pattern in serialized:
                    return match
            elif isinstance(pattern, re.Pattern):
                if serialized is None:
                    serialized = serialize_arguments(arguments)
                if pattern.search(serialized) is not None:
                    return match
            elif isinstance(pattern, CommandPattern):
                # One reading of the command per argument key, shared by the call's command rules.
                if commands is None:
                    commands = {}
                readings = commands.get(pattern.key)
                if readings is None:
                    readings = commands[pattern.key] = command_readings(arguments, pattern.key)
                if pattern.matches_readings(readings, match.rule.decision):  # type: ignore[union-attr]
                    if match.decision != "allow" and any(r is not None and r.too_long for r in readings):
                        # Not read, so not known to be denied: a person decides (never a block for length).
                        unread = READ_LIMIT_TEXT.format(tool=tool_name, limit=READ_LIMIT)
                        return dataclasses.replace(match, decision="ask", unread=unread)
                    return match
            elif pattern.matches(arguments, match.rule.decision):  # type: ignore[union-attr]
                return match
        if state.has_command_allows:
            return _compound_allow(candidates, arguments)
        return None

    def _candidates(self, state: _State, tool_name: str) -> _Candidates:
        """Work out, once per name and version, which rules can apply to ``tool_name``; cache that."""
        entries = state.entries
        folded = fold_tool_name(tool_name)  # once per name, not once per rule
        found: list[_Entry] = []
        for index, rule in enumerate(state.rules):
            if rule._tool_matches(tool_name, folded):
                entry = entries[index]
                if entry is None:
                    # Two threads may both make it: equal values, either one will do.
                    entry = (rule.argument_pattern, RuleMatch(rule, index, None, rule.effective_decision))
                    entries[index] = entry
                found.append(entry)
        candidates = tuple(found)
        if len(tool_name) > _CACHED_NAME_LIMIT:
            return candidates  # no declared tool has such a name: keeping it would only hold its memory
        with self._lock:
            cache = state.candidates
            if tool_name not in cache:
                state.cached_chars += len(tool_name)
                # The oldest names go first: a FIFO bound is enough here.
                while cache and (
                    len(cache) >= _CANDIDATE_CACHE_SIZE or state.cached_chars > _CANDIDATE_CACHE_CHARS
                ):
                    oldest = next(iter(cache))
                    del cache[oldest]
                    state.cached_chars -= len(oldest)
            cache[tool_name] = candidates
        return candidates

    # -- snapshots -----------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The ruleset as versioned, JSON-safe data (``from_snapshot`` restores it).

        ``dangerous_tools`` is written only when some were given, so a snapshot without them is the gem's.

        Raises:
            ValueError: a regex carries a flag other than IGNORECASE, DOTALL or VERBOSE.
        """
        data: dict[str, Any] = {
            "version": SNAPSHOT_VERSION,
            "auto_allow_dangerous": self._auto_allow_dangerous,
        }
        if self._dangerous_tools:
            data[_DANGEROUS_TOOLS_KEY] = list(self._dangerous_tools)
        data["rules"] = [rule.snapshot() for rule in self._state.rules]
        return data

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any], *, path: str = "") -> PermissionRules:
        """Build a ruleset from ``snapshot()`` data (also the Ruby gem's); strict.

        Raises:
            InvalidSnapshotError: anything unknown, missing, mistyped or uncompilable, naming its path; and
                for any other input (an object that fails when read), never another exception.
        """
        return guard_reading(lambda: cls._read_snapshot(snapshot, path), snapshot, path)

    @classmethod
    def _read_snapshot(cls, snapshot: object, path: str) -> PermissionRules:
        data = read_mapping(
            snapshot,
            path,
            required=("version", "rules"),
            optional=("auto_allow_dangerous", _DANGEROUS_TOOLS_KEY),
        )
        read_version(data, path)
        auto_allow_dangerous = read_bool(
            data.get("auto_allow_dangerous", False), child(path, "auto_allow_dangerous")
        )
        tools_path = child(path, _DANGEROUS_TOOLS_KEY)
        dangerous_tools = [
            read_text(name, child(tools_path, index), non_empty=True)
            for index, name in enumerate(read_list(data.get(_DANGEROUS_TOOLS_KEY, []), tools_path))
        ]
        ruleset = cls(auto_allow_dangerous=auto_allow_dangerous, dangerous_tools=dangerous_tools)
        rules_path = child(path, "rules")
        parsed = tuple(
            _read_rule(entry, child(rules_path, position), ruleset)
            for position, entry in enumerate(read_list(data["rules"], rules_path))
        )
        ruleset._extend(parsed)
        return ruleset


_DANGEROUS_TOOLS_KEY: Final = "dangerous_tools"


def require_rule_texts(texts: Iterable[str], field: str) -> list[str]:
    """A list of rule texts; a bare string is refused (it would read as one rule per letter)."""
    if isinstance(texts, str):
        raise TypeError(f"{field}: expected a list of rule texts, not a string; got {preview(texts)}")
    try:
        items = list(texts)
    except TypeError:
        raise TypeError(f"{field}: expected a list of rule texts; got {preview(texts)}") from None
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"{field}[{index}]: expected a rule text; got {preview(text)}")
    return items


def _compound_allow(candidates: _Candidates, arguments: object) -> RuleMatch | None:
    """The compound-allow rule: when every sub-command of the call is allowed by some allow rule."""
    allows = [
        (match, pattern)
        for pattern, match in candidates
        if isinstance(pattern, CommandPattern) and match.decision == "allow"
    ]
    covered = compound_allow(arguments, allows)
    if not covered:
        return None
    parts = tuple(CompoundPart(sub.text, match.rule, match.index) for sub, match in covered)  # type: ignore[arg-type]
    first = covered[0][1]
    return RuleMatch(first.rule, first.index, first.layer, "allow", parts)


def _read_decision(value: object, path: str) -> Decision:
    # Compared as plain text: a str subclass's own __eq__ is never called.
    if isinstance(value, str):
        text = str.__str__(value)
        for decision in DECISIONS:
            if text == decision:
                return decision
    fail(path, "one of 'allow', 'ask', 'deny'", value)


def _read_rule(entry: object, path: str, ruleset: PermissionRules) -> Rule:
    data = read_mapping(
        entry, path, required=("decision", "tool_pattern"), optional=("argument_pattern", "text")
    )
    decision = _read_decision(data["decision"], child(path, "decision"))
    tool_path = child(path, "tool_pattern")
    tool_pattern = decode_pattern(data["tool_pattern"], tool_path)
    if tool_pattern == "":
        fail(child(tool_path, "value"), "a non-empty tool name", tool_pattern)
    raw_argument = data.get("argument_pattern")
    argument_pattern = (
        None
        if raw_argument is None
        else decode_argument_pattern(raw_argument, child(path, "argument_pattern"))
    )
    text = read_text(data["text"], child(path, "text"), non_empty=True) if "text" in data else None
    return ruleset._guard.make_rule(
        decision,
        tool_pattern,
        None if argument_pattern is ALL else argument_pattern,
        ruleset._auto_allow_dangerous,
        text,
    )
