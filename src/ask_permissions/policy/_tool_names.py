"""Tools a policy names that none of the known tools is: a typo in a rule's tool name must never pass quietly.

Wherever the tools are known — a policy file's ``[tools]`` table, the ``tools=`` registry, the tools an
adapter sees, the tool list an MCP server returns — every rule, ``require_approval`` entry, ``auto_approve``
entry and hook matcher must name one of them. ``deny = ["run_shel(rm *)"]`` beside a tool ``run_shell``
would otherwise never match, and the tool would run ``rm``. One function decides it for every caller:
``unknown_tools``; ``require_known_tools`` raises its findings as an ``UnknownToolError``.
"""

from __future__ import annotations

import bisect
import dataclasses
import difflib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final, get_args

from ask_permissions._errors import UnknownToolError, preview
from ask_permissions._names import fold_tool_name
from ask_permissions._vocabulary import UnknownTools
from ask_permissions.rules._patterns import ALL, ToolPattern
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules, Rule

__all__ = [
    "BESIDE_REGISTRY",
    "KEEP_HINT",
    "UNKNOWN_TOOLS",
    "ReferenceKind",
    "ToolReference",
    "UnknownTool",
    "pattern_references",
    "read_unknown_tools",
    "registry_names",
    "require_known_tools",
    "rule_references",
    "unknown_tools",
]

UNKNOWN_TOOLS: Final[tuple[UnknownTools, ...]] = get_args(UnknownTools)

KEEP_HINT: Final = 'pass unknown_tools="keep" to keep rules for tools that come later'
"""What an error tells a host that wires a policy in code."""

ReferenceKind: TypeAlias = Literal["rule", "require_approval", "auto_approve", "tool", "kind", "hook"]
"""What names the tool: a rule, a ``require_approval`` entry, an ``auto_approve`` entry, a tool registry
entry, a ``kinds`` entry, or a hook's matcher."""

BESIDE_REGISTRY: Final[tuple[ReferenceKind, ...]] = (
    "rule",
    "require_approval",
    "auto_approve",
    "kind",
    "hook",
)
"""What a policy's ``tools=`` registry must cover: every reference but the registry's own names."""

_SHOWN_KNOWN: Final = 20  # known names an error lists before "..."
_SHOWN_UNKNOWN: Final = 5  # unknown references an error spells out before "and N more"


@final
@dataclass(frozen=True, slots=True)
class ToolReference:
    """One place where a policy names tools.

    Attributes:
        field: where it is, as its file or its policy spells it (``permissions.deny[0]``,
            ``/app/.agent/settings.json: permissions.allow[2]``, ``require_approval[1]``).
        text: how it is written (the rule text, or the tool pattern described).
        name: the one tool name it names exactly, or ``None`` for a pattern (a regex, an MCP server's
            prefix, a hook matcher), which must meet at least one known tool.
        folds: whether it also meets names that fold to its own (deny and ask rules, hooks).
        kind: what names the tool.
        regex: the tool regex of a pattern reference (a regex rule, an MCP server's prefix).
        meets: whether it names a tool of this name, for any other pattern (a hook's matcher).
    """

    field: str
    text: str
    name: str | None
    folds: bool
    kind: ReferenceKind = "rule"
    regex: re.Pattern[str] | None = dataclasses.field(default=None, compare=False, repr=False)
    meets: Callable[[str], bool] | None = dataclasses.field(default=None, compare=False, repr=False)


@final
@dataclass(frozen=True, slots=True)
class UnknownTool:
    """A reference that names no known tool, with the known name nearest to it (``None``: none is near)."""

    reference: ToolReference
    suggestion: str | None

    def __str__(self) -> str:
        return f"{self.reference.field} ({preview(self.reference.text)}): {self.problem}"

    @property
    def problem(self) -> str:
        """What is wrong, without the field: ``names the tool 'x', which is not known; did you mean 'y'?``."""
        return self.phrase()

    def phrase(self, among: str | None = None) -> str:
        """``problem``, saying where the tools are known (``among="in the tools table"``) if given."""
        name = self.reference.name
        if name is None:
            text = "matches no known tool" if among is None else f"matches no tool {among}"
        else:
            text = f"names the tool {preview(name)}, which is not {'known' if among is None else among}"
        return text if self.suggestion is None else f"{text}; did you mean {self.suggestion!r}?"


def unknown_tools(references: Iterable[ToolReference], known: Iterable[str]) -> list[UnknownTool]:
    """The references that name none of the ``known`` tool names, in order, each with its nearest known name.

    An exact name is known when a known tool has it (a deny, an ask or a hook also when a known name folds
    to the same text: they meet ``Bash`` for ``bash``); a pattern when it meets at least one known name.
    ``ALL`` is always known. The nearest name is ``difflib``'s closest match (also ignoring case).
    """
    names = _plain_names(known)
    exact = frozenset(names)
    folded = frozenset(fold_tool_name(name) for name in names)
    regexes = _Regexes(names, tuple(sorted(folded - exact)))
    by_case = {name.casefold(): name for name in names}
    found: list[UnknownTool] = []
    for reference in references:
        if reference.name is not None:
            name = reference.name
            if name in exact or (reference.folds and fold_tool_name(name) in folded):
                continue
            found.append(UnknownTool(reference, _nearest(name, names, by_case)))
        elif reference.regex is not None:
            if not regexes.meet_one(reference.regex, reference.folds):
                found.append(UnknownTool(reference, None))
        elif reference.meets is not None and not any(reference.meets(name) for name in names):
            found.append(UnknownTool(reference, None))
    return found


@final
class _Regexes:
    """Whether tool regexes meet a known name: each regex tried once, on the names and their folded forms;
    an MCP server's prefix (``^mcp__github__``, a literal after ``^``) looked up in the sorted names."""

    __slots__ = ("_folded", "_names", "_seen", "_sorted", "_sorted_folded")

    def __init__(self, names: tuple[str, ...], folded: tuple[str, ...]) -> None:
        self._names = names
        self._folded = folded  # the folded forms that are no name themselves
        self._sorted = sorted(names)
        self._sorted_folded = sorted(folded)
        self._seen: dict[tuple[str, int, bool], bool] = {}

    def meet_one(self, regex: re.Pattern[str], folds: bool) -> bool:
        key = (regex.pattern, regex.flags, folds)
        known = self._seen.get(key)
        if known is None:
            known = self._seen[key] = self._meets(regex, folds)
        return known

    def _meets(self, regex: re.Pattern[str], folds: bool) -> bool:
        prefix = _literal_prefix(regex)
        if prefix is not None:
            return _has_prefix(self._sorted, prefix) or (folds and _has_prefix(self._sorted_folded, prefix))
        search = regex.search
        return any(map(search, self._names)) or (folds and any(map(search, self._folded)))


_ANY_REST: Final = frozenset({".*", ".*$", ".+", ".+$", "$"})


def _literal_prefix(regex: re.Pattern[str]) -> str | None:
    """``p`` when the regex is ``^`` then the literal ``p`` (as ``re.escape`` writes it), else ``None``."""
    source = regex.pattern
    if regex.flags & ~re.UNICODE or not source.startswith("^"):
        return None
    literal: list[str] = []
    position = 1
    while position < len(source):
        char = source[position]
        if char == "\\":
            following = source[position + 1 : position + 2]
            if not following or following.isalnum():
                return None  # \d, \b, ...: a class or an anchor, not a character
            literal.append(following)
            position += 2
        elif char in ".^$*+?{}[]|()":
            # "^mcp__db__.*$": whatever follows the prefix. Read as the prefix alone, such a regex counts as
            # known also where the rest would not match (a name with a line break): never a false error.
            return "".join(literal) if source[position:] in _ANY_REST else None
        else:
            literal.append(char)
            position += 1
    return "".join(literal)


def _has_prefix(ordered: Sequence[str], prefix: str) -> bool:
    at = bisect.bisect_left(ordered, prefix)
    return at < len(ordered) and ordered[at].startswith(prefix)


def _plain_names(known: Iterable[object]) -> tuple[str, ...]:
    """The known names, each once; anything that is not a name (a host's list may hold junk) is none."""
    return tuple(dict.fromkeys(name for name in known if isinstance(name, str) and name))


def _nearest(name: str, names: Sequence[str], by_case: Mapping[str, str]) -> str | None:
    same_letters = by_case.get(name.casefold())
    if same_letters is not None:
        return same_letters
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return close[0]
    lowered = difflib.get_close_matches(name.casefold(), list(by_case), n=1, cutoff=0.6)
    return by_case[lowered[0]] if lowered else None


def require_known_tools(
    policy: object,
    known: Iterable[str],
    *,
    where: str,
    keep_hint: str = KEEP_HINT,
    kinds: Collection[ReferenceKind] | None = None,
) -> None:
    """Refuse a policy that names tools none of ``known`` is (the tools an agent or a server has).

    The policy's references come from its ``tool_references()`` (``ApprovalPolicy`` and ``LayeredPolicy``
    have one; a policy without it names nothing this can check).

    Args:
        policy: the policy.
        known: the names of the tools that exist.
        where: who is checking, for the message (``PermissionMiddleware``, a file's path).
        keep_hint: how to keep rules for tools that come later, for the message.
        kinds: only references of these kinds (all by default).

    Raises:
        UnknownToolError: at least one reference names no known tool; the message names each one's field,
            the nearest known name (``did you mean 'run_shell'?``) and the known tools.
    """
    known_names = _plain_names(known)
    references = [
        reference for reference in policy_references(policy) if kinds is None or reference.kind in kinds
    ]
    raise_unknown(unknown_tools(references, known_names), known_names, where=where, keep_hint=keep_hint)


def raise_unknown(
    unknown: Sequence[UnknownTool], known: Sequence[str], *, where: str, keep_hint: str
) -> None:
    """Raise ``UnknownToolError`` for these findings, if there are any."""
    if not unknown:
        return
    # One sentence per unknown name (a misspelt tool is often in several rules), in the order first met.
    by_name: dict[str | int, list[UnknownTool]] = {}
    for position, finding in enumerate(unknown):
        name = finding.reference.name
        by_name.setdefault(position if name is None else name, []).append(finding)
    groups = list(by_name.values())
    sentences = [_sentence(_group_text(group)) for group in groups[:_SHOWN_UNKNOWN]]
    if len(groups) > _SHOWN_UNKNOWN:
        sentences.append(f"And {len(groups) - _SHOWN_UNKNOWN} more.")
    shown = ", ".join(repr(name) for name in sorted(known)[:_SHOWN_KNOWN])
    if len(known) > _SHOWN_KNOWN:
        shown += ", ..."
    sentences.append(_sentence(f"The known tools: {shown or 'none'}; {keep_hint}"))
    first = unknown[0].reference
    raise UnknownToolError(
        f"{where}: {' '.join(sentences)}",
        path=first.field,
        value=first.name if first.name is not None else first.text,
        unknown=tuple(unknown),
        known=tuple(known),
    )


_SHOWN_PLACES: Final = 3  # places named for one unknown name before "and N more"


def _group_text(group: Sequence[UnknownTool]) -> str:
    """One finding as it reads alone, or the places that name one unknown tool, named together."""
    if len(group) == 1:
        return str(group[0])
    places = [
        f"{finding.reference.field} ({preview(finding.reference.text)})" for finding in group[:_SHOWN_PLACES]
    ]
    if len(group) > _SHOWN_PLACES:
        places.append(f"{len(group) - _SHOWN_PLACES} more")
    # The same name in each: the problem reads for all of them ("name" for "names").
    return ", ".join(places[:-1]) + " and " + places[-1] + " " + group[0].problem.replace("names", "name", 1)


def _sentence(text: str) -> str:
    return text if text.endswith(("?", ".")) else text + "."


def policy_references(policy: object) -> list[ToolReference]:
    """A policy's ``tool_references()``, or none for a policy that cannot list them."""
    listing = getattr(policy, "tool_references", None)
    if not callable(listing):
        return []
    references = listing()
    return [reference for reference in references if isinstance(reference, ToolReference)]


def read_unknown_tools(value: object, field_name: str = "unknown_tools") -> UnknownTools:
    """``"error"`` or ``"keep"``, refused otherwise.

    Raises:
        ValueError: anything else.
    """
    for option in UNKNOWN_TOOLS:
        if value == option and isinstance(value, str):
            return option
    raise ValueError(f"{field_name}: expected 'error' or 'keep'; got {preview(value)}")


# -- what policies name -------------------------------------------------------------------------------------


def rule_references(rules: object, field_name: str = "rules") -> Iterator[ToolReference]:
    """The tools a ``PermissionRules`` or ``PermissionRuleSet`` names (a custom classifier names none).

    A rule read from rule text is named as its ``permissions`` list spells it (``permissions.deny[0]``: the
    position in that list), a gem-style rule by its place among those (``rules.rules[2]``, or
    ``rules.default_rules.rules[2]`` in a rule set), as a policy file writes them.
    """
    if isinstance(rules, PermissionRules):
        yield from _rules_references(rules.rules, f"{field_name}.rules")
    elif isinstance(rules, PermissionRuleSet):
        for layer, layer_rules in (
            ("default_rules", rules.default_rules),
            ("project_rules", rules.project_rules),
        ):
            if isinstance(layer_rules, PermissionRules):
                yield from _rules_references(layer_rules.rules, f"{field_name}.{layer}.rules")


def _rules_references(rules: Iterable[Rule], field_name: str) -> Iterator[ToolReference]:
    by_decision: dict[str, int] = {}
    plain = 0
    for rule in rules:
        if rule.text is not None:
            position = by_decision.get(rule.decision, 0)
            by_decision[rule.decision] = position + 1
            where = f"permissions.{rule.decision}[{position}]"
            text = rule.text
        else:
            where = f"{field_name}[{plain}]"
            plain += 1
            text = _describe(rule.tool_pattern)
        reference = pattern_reference(where, rule.tool_pattern, text, folds=rule.decision != "allow")
        if reference is not None:
            yield reference


def pattern_references(
    field_name: str, patterns: Sequence[ToolPattern], *, single: bool, kind: ReferenceKind
) -> Iterator[ToolReference]:
    """The tools a list of tool patterns names (``require_approval``: a single one is not indexed)."""
    for position, pattern in enumerate(patterns):
        where = field_name if single else f"{field_name}[{position}]"
        reference = pattern_reference(where, pattern, _describe(pattern), folds=True, kind=kind)
        if reference is not None:
            yield reference


def pattern_reference(
    where: str, pattern: ToolPattern, text: str, *, folds: bool, kind: ReferenceKind = "rule"
) -> ToolReference | None:
    """The reference of one tool pattern (``None`` for ``ALL``, which every tool meets)."""
    if pattern is ALL:
        return None
    if isinstance(pattern, str):
        return ToolReference(where, text, pattern, folds, kind)
    return ToolReference(where, text, None, folds, kind, regex=pattern)


def name_references(field_name: str, names: Iterable[object], kind: ReferenceKind) -> Iterator[ToolReference]:
    """A reference for each plain tool name (``auto_approve``'s keys, a registry's names)."""
    for name in names:
        if isinstance(name, str) and name:
            yield ToolReference(f"{field_name}.{name}", name, name, False, kind)  # looked up exactly


def hook_references(hooks: Iterable[object]) -> Iterator[ToolReference]:
    """The tools each hook with a matcher names (a hook for every call, or a function, names none)."""
    for position, hook in enumerate(hooks):
        matcher = getattr(hook, "matcher", None)
        matches = getattr(hook, "matches", None)
        if not isinstance(matcher, str) or matcher == "*" or not callable(matches):
            continue
        # One rule text names its tool before the parentheses; several, or an MCP prefix, are a pattern.
        name = matcher.partition("(")[0]
        plain = None if "|" in matcher or name.startswith("mcp__") else name
        yield ToolReference(f"hooks[{position}]", matcher, plain, True, "hook", meets=matches)


def registry_names(tools: object) -> tuple[str, ...] | None:
    """The names a ``tools=`` registry lists: a mapping's keys or a sequence's names; ``None`` when it cannot
    list them (an indexable) or lists none."""
    if isinstance(tools, Mapping):
        names = tuple(name for name in tools if isinstance(name, str))
    elif isinstance(tools, Sequence) and not isinstance(tools, str | bytes):
        names = tuple(name for tool in tools if isinstance(name := getattr(tool, "name", None), str))
    else:
        return None
    return names or None


def _describe(pattern: ToolPattern) -> str:
    if isinstance(pattern, str):
        return pattern
    if pattern is ALL:
        return "every tool"
    return f"the tool regex /{pattern.pattern}/"
