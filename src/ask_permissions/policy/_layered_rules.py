"""The rules of every settings source, merged: deny beats ask beats allow, whatever the source.

Each source's rule texts are read with that source's anchor (``/path`` is relative to the project for the
project and local files, to the user directory for the user's, to the file's own folder for managed and cli),
then all deny rules come first, then all ask rules, then all allow rules — each group in source priority
order — and the first rule that matches a call decides, as everywhere in this package. When no single rule
matches a shell call but each of its sub-commands is allowed by some allow rule, of any source, the call is
allowed, and the match names the rule of each sub-command.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, final

from ask_permissions._errors import InvalidSnapshotError
from ask_permissions._names import fold_tool_name
from ask_permissions.rules._command import CommandPattern, compound_allow
from ask_permissions.rules._text import RuleText, RuleTextError, ToolKind, parse_rule_text
from ask_permissions.settings._sources import SettingsSource
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

    def tool_matches(self, name: str, folded: str) -> bool:
        """Whether the rule is about this tool: exactly for an allow, also by folded name for deny and ask."""
        pattern = self.parsed.tool_pattern
        loose = self.decision != "allow"
        if isinstance(pattern, str):
            return pattern == name or (loose and fold_tool_name(pattern) == folded)
        return pattern.search(name) is not None or (loose and pattern.search(folded) is not None)


@final
@dataclass(frozen=True, slots=True)
class LayeredMatch:
    """The rule that decided a call, or for a compound command the allow rule of each sub-command."""

    decision: Decision
    rules: tuple[LayeredRule, ...]

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
                        prefix = f"{source.path}: " if source.path else f"{source.name} settings: "
                        raise InvalidSnapshotError(
                            f"{prefix}{where}: {error.problem}", path=where, value=text
                        ) from None
                    rules.append(LayeredRule(decision, text, source.name, position, parsed))
        self._rules: Final = tuple(rules)
        self._lock: Final = threading.Lock()
        self._cache: dict[str, tuple[LayeredRule, ...]] = {}

    @property
    def rules(self) -> tuple[LayeredRule, ...]:
        """Every rule, in the order they are consulted (deny, ask, allow; sources by priority)."""
        return self._rules

    def __len__(self) -> int:
        return len(self._rules)

    def explain(self, name: str, arguments: object) -> LayeredMatch | None:
        """The rule that decides the call, or ``None`` when none does."""
        candidates = self._candidates(name)
        for rule in candidates:
            pattern = rule.parsed.argument_pattern
            if pattern is None or pattern.matches(arguments, rule.decision):
                return LayeredMatch(rule.decision, (rule,))
        shell_allows = [
            (rule, rule.parsed.argument_pattern)
            for rule in candidates
            if rule.decision == "allow" and isinstance(rule.parsed.argument_pattern, CommandPattern)
        ]
        if shell_allows:
            covered = compound_allow(arguments, shell_allows)
            if covered is not None:
                return LayeredMatch("allow", tuple(rule for _, rule in covered))
        return None

    def _candidates(self, name: str) -> tuple[LayeredRule, ...]:
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None:
            return cached
        folded = fold_tool_name(name)
        found = tuple(rule for rule in self._rules if rule.tool_matches(name, folded))
        if len(name) <= _CACHEABLE_NAME:
            with self._lock:
                if len(self._cache) >= _CACHE_SIZE:
                    del self._cache[next(iter(self._cache))]
                self._cache[name] = found
        return found
