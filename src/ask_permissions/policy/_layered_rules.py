"""The rules of every settings source, merged: deny beats ask beats allow, whatever the source.

Each source's rule texts are read with that source's anchor (``/path`` is relative to the project for the
project and local files, to the user directory for the user's, to the file's own folder for managed and cli),
then all deny rules come first, then all ask rules, then all allow rules — each group in source priority
order — and the first rule that matches a call decides, as everywhere in this package. When no single rule
matches a shell call but each of its sub-commands is allowed by some allow rule, of any source, the call is
allowed, and the match names the rule of each sub-command.
"""

from __future__ import annotations

import functools
import posixpath
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, final

from ask_permissions._errors import InvalidSnapshotError
from ask_permissions._names import fold_tool_name
from ask_permissions.rules._command import COMMAND_KEYS, CommandPattern, compound_allow
from ask_permissions.rules._examples import RuleExamples, check_examples
from ask_permissions.rules._specifier_base import subject_values
from ask_permissions.rules._text import RuleText, RuleTextError, ToolKind, parse_rule_text
from ask_permissions.settings._field_lines import source_place
from ask_permissions.settings._sources import SettingsSource
from ask_permissions.shell import command_words, read_command
from ask_permissions.typing import Decision, SettingsSourceName

__all__ = ["LayeredMatch", "LayeredRule", "LayeredRules"]


@final
@dataclass(frozen=True, slots=True)
class LayeredRule:
    """One rule of one settings source, read.

    Attributes:
        decision: ``"allow"``, ``"ask"`` or ``"deny"``.
        text: the rule text as written.
        source: the settings source it comes from.
        position: its place in that source's list for its decision (``permissions.allow[2]``).
        parsed: the rule text read into its patterns.
    """

    decision: Decision
    text: str
    source: SettingsSourceName
    position: int
    parsed: RuleText
    lead: tuple[str, ...] = ()
    """A command specifier's first one or two literal words (the name case-folded for deny and ask): a
    command must start with them for the rule to match it. Empty when the specifier starts with a glob."""
    match: LayeredMatch = field(init=False, repr=False, compare=False)
    """The match of this rule alone, made once: deciding by it builds nothing on the hot path."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "match", LayeredMatch(self.decision, (self,)))

    def tool_matches(self, name: str, folded: str) -> bool:
        """Whether the rule is about this tool: exactly for an allow, also by folded name for deny and ask."""
        pattern = self.parsed.tool_pattern
        loose = self.decision != "allow"
        if isinstance(pattern, str):
            return pattern == name or (loose and fold_tool_name(pattern) == folded)
        return pattern.search(name) is not None or (loose and pattern.search(folded) is not None)


@final
class LayeredMatch:
    """The rule that decided a call, or for a compound command the allow rule of each sub-command.

    It keeps what the policy made from it (its record entry, its opinions), so that a rule deciding call
    after call builds them once.
    """

    __slots__ = ("decision", "made", "rules")

    def __init__(self, decision: Decision, rules: tuple[LayeredRule, ...]) -> None:
        self.decision: Final = decision
        self.rules: Final = rules
        self.made: dict[str, object] = {}

    def __repr__(self) -> str:
        return f"<LayeredMatch {self.decision} {self.text!r} from {self.source}>"

    @property
    def rule(self) -> LayeredRule:
        """The deciding rule (the first sub-command's, for a compound allow)."""
        return self.rules[0]

    @property
    def text(self) -> str:
        """The deciding rule's text; for a compound allow, each sub-command's rule joined by ``" + "``."""
        return " + ".join(dict.fromkeys(rule.text for rule in self.rules))

    @property
    def source(self) -> SettingsSourceName:
        """Where the deciding rule came from."""
        return self.rules[0].source


def _lead(parsed: RuleText, decision: Decision) -> tuple[str, ...]:
    pattern = parsed.argument_pattern
    if not isinstance(pattern, CommandPattern) or pattern.key is not None:
        return ()
    lead: list[str] = []
    for word in command_words(pattern.text)[:2]:
        if word.stars:
            break  # a glob: any word from here on
        lead.append(word.value)
    if lead and decision != "allow":
        lead[0] = lead[0].casefold()
    return tuple(lead)


@final
class _CommandNames:
    """How the commands a call runs start, read once per call, for skipping rules that cannot match.

    Pruning only ever skips a rule that could not match: an allow must match every sub-command, so every
    one starts with its words; a deny or an ask must match one visible command (its name compared by file
    name too, case-folded). A call whose command is not a single readable string, or not fully scanned, or
    runs a program named by a glob, skips nothing.
    """

    __slots__ = ("_arguments", "_keys", "_leads", "_read", "_starts")

    def __init__(self, arguments: object) -> None:
        self._arguments = arguments
        self._read = False
        self._starts: tuple[tuple[str, ...], ...] | None = None
        self._leads: frozenset[tuple[str, ...]] | None = None
        self._keys: frozenset[tuple[str, ...]] | None = None

    def may_match(self, rule: LayeredRule) -> bool:
        if not self._read:
            self._read = True
            self._scan()
        if rule.decision == "allow":
            starts = self._starts
            size = len(rule.lead)
            return starts is None or all(start[:size] == rule.lead for start in starts)
        return self._leads is None or rule.lead in self._leads

    def keys(self) -> frozenset[tuple[str, ...]] | None:
        """Every lead a rule that can match the call may have (``None``: every rule must be tried)."""
        if not self._read:
            self._read = True
            self._scan()
        return self._keys

    def _scan(self) -> None:
        values = subject_values(self._arguments, None, COMMAND_KEYS)
        if len(values) != 1 or not isinstance(values[0], str):
            return
        command = values[0]
        if type(command) is str and len(command) <= _CACHEABLE_COMMAND:
            names = _names_of_cached(command)
        else:
            names = _names_of(str.__str__(command))
        if names is not None:
            self._starts, self._leads, self._keys = names


_CACHEABLE_COMMAND: Final = 16 * 1024

_Names = tuple[tuple[tuple[str, ...], ...], frozenset[tuple[str, ...]], frozenset[tuple[str, ...]]]


def _names_of(command: str) -> _Names | None:
    """How a command's sub-commands start (the plain reading) and the leads of every command deny and ask
    see, and both as one set of keys; ``None`` when a rule of any lead may match (not fully read, or a
    command name the shell works out). A function of the text alone."""
    parsed = read_command(command)
    if not parsed.fully_read or any(sub.name_is_glob for sub in parsed.visible):
        return None
    starts = tuple(sub.words[:2] for sub in parsed.subcommands)
    leads: set[tuple[str, ...]] = set()
    for sub in parsed.visible:
        if not sub.words:
            continue
        folded = sub.words[0].casefold()
        base = posixpath.basename(folded)
        for form in (folded, base, base.lstrip("=")):
            leads.add((form,))
            if len(sub.words) > 1:
                leads.add((form, sub.words[1]))
    keys = {start[:size] for start in starts for size in (1, 2)} | leads
    return starts, frozenset(leads), frozenset(keys)


_names_of_cached: Final = functools.lru_cache(maxsize=512)(_names_of)


# Hosts may see unboundedly many tool names; the per-name candidate cache stays this small.
_CACHE_SIZE: Final = 1024
_CACHEABLE_NAME: Final = 256


@final
class LayeredRules:
    """The merged rules of a set of sources; thread-safe (the candidate cache has a lock).

    Raises:
        InvalidSnapshotError: a rule text that cannot be read, naming the source's file (if any) and the
            field (``permissions.allow[2]``).
    """

    __slots__ = ("_cache", "_lock", "_rules")

    def __init__(
        self, sources: Sequence[SettingsSource], *, kinds: Mapping[str, ToolKind], home: str | None
    ) -> None:
        rules: list[LayeredRule] = []
        for decision in ("deny", "ask", "allow"):
            for source in sources:
                texts: tuple[str, ...] = getattr(source, decision)
                for position, text in enumerate(texts):
                    try:
                        parsed = parse_rule_text(text, decision, kinds=kinds, cwd=source.anchor, home=home)
                    except RuleTextError as error:
                        where = f"permissions.{decision}[{position}]"
                        place = source_place(source.path, source.name, where, text)
                        raise InvalidSnapshotError(
                            f"{place}: {where}: {error.problem}", path=where, value=text
                        ) from None
                    lead = _lead(parsed, decision)
                    rule = LayeredRule(decision, text, source.name, position, parsed, lead)
                    examples = source.examples.get((decision, position))
                    if examples is not None:
                        _check_examples(rule, examples, source, kinds)
                    rules.append(rule)
        self._rules: Final = tuple(rules)
        self._lock: Final = threading.Lock()
        self._cache: dict[str, _Candidates] = {}

    @property
    def rules(self) -> tuple[LayeredRule, ...]:
        """Every rule, in the order they are consulted (deny, ask, allow; sources by priority)."""
        return self._rules

    def __len__(self) -> int:
        return len(self._rules)

    def explain(self, name: str, arguments: object) -> LayeredMatch | None:
        """The rule that decides the call, or ``None`` when none does."""
        candidates = self._candidates(name)
        rules = candidates.rules
        names = _CommandNames(arguments)
        keys = names.keys() if candidates.by_lead else None
        if keys is None:
            positions: Iterable[int] = range(len(rules))
        else:
            chosen = set(candidates.unleaded)
            for key in keys:
                chosen.update(candidates.by_lead.get(key, ()))
            positions = sorted(chosen)
        for position in positions:
            rule = rules[position]
            pattern = rule.parsed.argument_pattern
            if pattern is None:
                return rule.match
            if rule.lead and not names.may_match(rule):
                continue  # no command of the call starts with its words: it cannot match
            if pattern.matches(arguments, rule.decision):
                return rule.match
        if candidates.shell_allows:
            covered = compound_allow(arguments, candidates.shell_allows)
            if covered is not None:
                return LayeredMatch("allow", tuple(rule for _, rule in covered))
        return None

    def _candidates(self, name: str) -> _Candidates:
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None:
            return cached
        folded = fold_tool_name(name)
        found = _Candidates(tuple(rule for rule in self._rules if rule.tool_matches(name, folded)))
        if len(name) <= _CACHEABLE_NAME:
            with self._lock:
                if len(self._cache) >= _CACHE_SIZE:
                    del self._cache[next(iter(self._cache))]
                self._cache[name] = found
        return found


def _check_examples(
    rule: LayeredRule, examples: RuleExamples, source: SettingsSource, kinds: Mapping[str, ToolKind]
) -> None:
    """A rule's examples, checked as the rule reads calls (naming the source's file, as rule errors do)."""
    pattern = rule.parsed.argument_pattern

    def matches(name: str, arguments: object) -> bool:
        if not rule.tool_matches(name, fold_tool_name(name)):
            return False
        return pattern is None or pattern.matches(arguments, rule.decision)

    tool = rule.parsed.tool_pattern
    try:
        check_examples(
            examples, rule.text, matches, tool=tool if isinstance(tool, str) else None, kinds=kinds
        )
    except InvalidSnapshotError as error:
        prefix = f"{source.path}: " if source.path else f"{source.name} settings: "
        raise InvalidSnapshotError(f"{prefix}{error}", path=error.path, value=error.value) from None


@final
class _Candidates:
    """The rules that can apply to one tool name, in order, indexed by their commands' leading words."""

    __slots__ = ("by_lead", "rules", "shell_allows", "unleaded")

    def __init__(self, rules: tuple[LayeredRule, ...]) -> None:
        self.rules: Final = rules
        by_lead: dict[tuple[str, ...], list[int]] = {}
        unleaded: list[int] = []
        for position, rule in enumerate(rules):
            if rule.lead:
                by_lead.setdefault(rule.lead, []).append(position)
            else:
                unleaded.append(position)
        self.by_lead: Final = {lead: tuple(positions) for lead, positions in by_lead.items()}
        self.unleaded: Final = tuple(unleaded)
        self.shell_allows: Final = tuple(
            (rule, rule.parsed.argument_pattern)
            for rule in rules
            if rule.decision == "allow" and isinstance(rule.parsed.argument_pattern, CommandPattern)
        )
