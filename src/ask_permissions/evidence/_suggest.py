"""Allow rules learned from people's answers: the fewest rules that would have answered the most approvals.

Each approved call belongs to at most one family, and each family is a tree of ever narrower rules:

- a shell command: its word prefixes, never shorter than the first two words (``Bash(git diff *)``, as the
  "don't ask again" suggestions), down to the exact command (``Bash(git diff HEAD)``);
- a file path: its directories below the working directory (``Edit(./src/**)``; ``//`` for a path outside
  it, never ``/`` or a top-level directory), down to the file itself;
- a URL: its exact host (``WebFetch(domain:docs.python.org)``);
- an MCP tool: the tool itself (``mcp__github__create_issue``), when its name read as a rule names that
  tool alone (not ``mcp__github__*`` nor ``mcp__github__merge(*)``).

A rule is *eligible* when it answers at least ``min_count`` approvals, matches no call a person rejected,
and matches no call a deny rule covers (every recorded call the current policy denies, and witness calls
made from each deny rule's own text). Those forbidden calls go into the trees too, marking every node on
their path; one no tree holds (a compound or wrapped command) marks the command nodes along its
sub-commands' words whose rule matches it, and is tried with each rule of the other families. Eligibility
only shrinks going down a tree, so the topmost eligible rules are disjoint, answer every approval any
eligible rule answers, and no smaller set does as much: that is the smallest set. Each is then narrowed as
far as it answers the same approvals (never broader than the approvals need).

Last, the proof: each rule is tried on every forbidden call it could match (``_Index`` finds them without
trying each rule on each call), a call that the rules would let through part by part (a compound command)
costs the rule of its parts that saves the fewest prompts, and the policy with the rules kept decides every
forbidden call again: none of them may proceed. The cost grows with the answers and their words, not with
answers times rules.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, final

from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._records import DecisionRecord
from ask_permissions.rules._command import CommandPattern, command_readings, compound_allow
from ask_permissions.rules._domains import read_host
from ask_permissions.rules._paths import normalize_path
from ask_permissions.rules._patterns import tool_pattern_matches
from ask_permissions.rules._specifier_base import subject_values
from ask_permissions.rules._text import BUILTIN_KINDS, RuleText, RuleTextError, ToolKind, parse_rule_text
from ask_permissions.shell import SubCommand, command_words, read_command
from ask_permissions.shell._quoting import specifier_text
from ask_permissions.typing import Evaluator

__all__ = ["Answer", "Suggestion", "SuggestionContext", "Suggestions", "suggest"]

_SHELL_KEYS: Final = ("command", "cmd")
_PATH_KEYS: Final = ("file_path", "path", "notebook_path")
_URL_KEYS: Final = ("url",)
_GLOB: Final = re.compile(r"[*?\[\]{}]")
_MIN_PREFIX_WORDS: Final = 2
EXAMPLES_PER_RULE: Final = 3


@final
@dataclass(frozen=True, slots=True)
class Answer:
    """A call a person answered: approved or rejected (``where`` says which record it is)."""

    tool: str
    arguments: object
    approved: bool
    where: str = ""


@final
@dataclass(slots=True)
class Suggestion:
    """One allow rule: its text, its family, the approvals it answers and some of them as examples."""

    rule: str
    family: str
    tool: str
    saved: int
    examples: list[Answer] = field(default_factory=list)


@final
@dataclass(slots=True)
class Suggestions:
    """The rules, what they were proven against, and the approvals no rule answers."""

    rules: list[Suggestion]
    approvals: int
    rejections: int
    deny_covered: int
    witnesses: int
    uncovered_by_tool: dict[str, int]
    unfamilied: int
    proceeding: list[Answer] = field(default_factory=list)
    """Rejected or deny-covered calls the policy with the rules would let proceed (empty: proven)."""
    already_proceeding: list[Answer] = field(default_factory=list)
    """Rejected calls the current policy already lets proceed (the rules are not the cause)."""
    redecided: int = 0
    """How many forbidden calls some rule could match, in whole or in part: each was decided again with the
    rules added (by the policy, else by the rules alone); no rule can match the others."""

    @property
    def saved(self) -> int:
        """How many prompts the rules would have saved."""
        return sum(rule.saved for rule in self.rules)

    @property
    def proven(self) -> bool:
        """Whether no rejected or deny-covered call would proceed with the rules added."""
        return not self.proceeding


@final
@dataclass(frozen=True, slots=True)
class SuggestionContext:
    """What the rules are written for: the tools' kinds, where paths are read from, and the policies.

    ``policy`` is the current policy (``None``: no deny rules are known), ``with_rules`` builds it with
    allow rules added, ``denies`` the deny rule texts by tool for witness calls. ``relative`` says whether
    path rules may be written relative to ``root`` (``./src/**``): only when what will read them reads
    ``./`` from ``root`` too; else they name absolute paths (``//work/project/src/**``).
    """

    root: str
    home: str
    kinds: Mapping[str, ToolKind] = field(default_factory=dict)
    policy: Evaluator | None = None
    with_rules: Callable[[Sequence[str]], Evaluator] | None = None
    denies: Sequence[str] = ()
    relative: bool = True

    def kind(self, tool: str) -> ToolKind | None:
        return self.kinds.get(tool) or BUILTIN_KINDS.get(tool)

    def parse(self, text: str) -> RuleText | None:
        try:
            return parse_rule_text(text, "allow", kinds=self.kinds, cwd=self.root, home=self.home)
        except (RuleTextError, TypeError, ValueError):
            return None


@final
class _Parses:
    """Rule texts read once each: the search, the forbidden calls' marks and the proof read the same ones."""

    __slots__ = ("_context", "_read")

    def __init__(self, context: SuggestionContext) -> None:
        self._context = context
        self._read: dict[str, RuleText | None] = {}

    def __call__(self, text: str) -> RuleText | None:
        if text not in self._read:
            self._read[text] = self._context.parse(text)
        return self._read[text]


@final
class _Node:
    __slots__ = ("approvals", "children", "exact", "rejected")

    def __init__(self) -> None:
        self.approvals: list[Answer] = []
        self.exact = 0  # approvals whose path ends here
        self.rejected = False  # a rejected call's path passes through (or ends) here
        self.children: dict[str, _Node] = {}


@final
class _Family:
    """One tool's tree of one family: nodes by path component, the rule text of each."""

    __slots__ = ("family", "roots", "rule_of", "tool")

    def __init__(self, tool: str, family: str, rule_of: Callable[[tuple[str, ...], bool], str]) -> None:
        self.tool = tool
        self.family = family
        self.rule_of = rule_of  # (path, exact) -> rule text
        self.roots: dict[str, _Node] = {}

    def add(self, path: tuple[str, ...], first: int, answer: Answer) -> None:
        """Add a call whose nodes are ``path[:k]`` for ``k >= first``."""
        key = "\x00".join(path[:first])
        node = self.roots.get(key)
        if node is None:
            node = self.roots[key] = _Node()
        on_path = [node]
        for component in path[first:]:
            child = node.children.get(component)
            if child is None:
                child = node.children[component] = _Node()
            node = child
            on_path.append(node)
        for each in on_path:
            if answer.approved:
                each.approvals.append(answer)
            else:
                each.rejected = True  # every rule on the path, ``prefix *`` or exact, would match it
        if answer.approved:
            node.exact += 1

    def along(self, words: tuple[str, ...]) -> Iterator[tuple[_Node, tuple[str, ...]]]:
        """The nodes of a command family whose rules a command of these words could meet, with their paths:
        those of its word prefixes (the only rules that can match it; see ``_Index``)."""
        single = self.roots.get(words[0]) if words else None
        if single is not None:
            yield single, words[:1]
        if len(words) < _MIN_PREFIX_WORDS:
            return
        node = self.roots.get("\x00".join(words[:_MIN_PREFIX_WORDS]))
        path = words[:_MIN_PREFIX_WORDS]
        while node is not None:
            yield node, path
            if len(path) == len(words):
                return
            node = node.children.get(words[len(path)])
            path = words[: len(path) + 1]


@final
class _Forest:
    """Every family's tree, with the words of each command read once (a store repeats its commands)."""

    __slots__ = ("_names", "_words", "context", "families")

    def __init__(self, context: SuggestionContext) -> None:
        self.context = context
        self.families: dict[tuple[str, str], _Family] = {}
        self._words: dict[str, tuple[str, ...] | None] = {}
        self._names: dict[str, bool] = {}

    def place(self, answer: Answer) -> bool:
        """Put the call in its family's tree; ``False`` when no family fits it."""
        tool, context = answer.tool, self.context
        kind = context.kind(tool)
        if kind is None:
            if not self._mcp_tool(tool):
                return False
            self._family(tool, "mcp-tool", lambda path, exact: tool).add((tool,), 1, answer)
            return True
        keys = (kind.key,) if kind.key else None
        if kind.kind == "shell":
            words = self._single_command(_subject(answer.arguments, keys, _SHELL_KEYS))
            if words is None:
                return False
            family = self._family(tool, "command-prefix", _command_rule(tool))
            family.add(words, min(_MIN_PREFIX_WORDS, len(words)), answer)
            return True
        if kind.kind == "path":
            path = _path(_subject(answer.arguments, keys, _PATH_KEYS), context.root)
            if path is None:
                return False
            parts, first = _path_parts(path, context)
            if parts is None:
                return False
            self._family(tool, "path-directory", _path_rule(tool, context)).add(parts, first, answer)
            return True
        host = _host(_subject(answer.arguments, keys, _URL_KEYS))
        if host is None:
            return False
        family = self._family(tool, "domain", lambda path, exact: f"{tool}(domain:{path[0]})")
        family.add((host,), 1, answer)
        return True

    def block(self, call: Answer, parse: Callable[[str], RuleText | None]) -> bool:
        """Mark the command nodes whose rule matches a forbidden call no tree holds (a compound command, a
        wrapped one); ``False`` when the call's tool has no command family (its rules are tried on it)."""
        family = self.families.get((call.tool, "command-prefix"))
        kind = self.context.kind(call.tool)
        if family is None or kind is None:
            return False
        for reading in command_readings(call.arguments, kind.key):
            for sub in () if reading is None else reading.subcommands:
                for node, path in family.along(sub.words):
                    parsed = parse(family.rule_of(path, False))
                    if not node.rejected and parsed is not None and _matches(parsed, call):
                        node.rejected = True
        return True

    def _family(self, tool: str, name: str, rule_of: Callable[[tuple[str, ...], bool], str]) -> _Family:
        found = self.families.get((tool, name))
        if found is None:
            found = self.families[tool, name] = _Family(tool, name, rule_of)
        return found

    def _mcp_tool(self, tool: str) -> bool:
        """Whether the name is an MCP tool's that, written as a rule, names that one tool and no other: a
        tool may be named ``mcp__github__*`` or ``mcp__github__merge(*)``, which read as rules of others."""
        if tool not in self._names:
            parsed = self.context.parse(tool) if tool.startswith("mcp__") else None
            self._names[tool] = (
                parsed is not None and parsed.tool_pattern == tool and parsed.argument_pattern is None
            )
        return self._names[tool]

    def _single_command(self, command: str | None) -> tuple[str, ...] | None:
        if command is None:
            return None
        if command not in self._words:
            self._words[command] = _single_command(command)
        return self._words[command]


def suggest(answers: Iterable[Answer], context: SuggestionContext, *, min_count: int = 2) -> Suggestions:
    """The smallest set of allow rules that would have answered the most approvals, proven (see above)."""
    forest = _Forest(context)
    parse = _Parses(context)
    approved: list[Answer] = []
    rejected: list[Answer] = []
    unplaced: dict[str, list[Answer]] = {}  # forbidden calls no tree holds: tried with each rule itself
    unfamilied = 0
    for answer in answers:
        (approved if answer.approved else rejected).append(answer)
        if not forest.place(answer):
            if answer.approved:
                unfamilied += 1
            else:
                unplaced.setdefault(answer.tool, []).append(answer)
    before = None if context.policy is None else _Decided(context.policy)
    deny_covered = _deny_covered([*approved, *rejected], before)
    witnesses = _witnesses(context, before)
    for call in [*deny_covered, *witnesses]:
        forbidden = Answer(call.tool, call.arguments, False, call.where)
        if not forest.place(forbidden):
            unplaced.setdefault(call.tool, []).append(forbidden)
    # A command rule can match only commands that start with its words: each forbidden call marks the
    # nodes along its sub-commands' words, instead of every node trying every call.
    tried: dict[str, list[Answer]] = {
        tool: [call for call in calls if not forest.block(call, parse)] for tool, calls in unplaced.items()
    }
    chosen: list[tuple[Suggestion, _Node]] = []
    for family in forest.families.values():
        forbidden_calls = () if family.family == "command-prefix" else tried.get(family.tool, [])
        for top, top_path in _topmost(family, min_count, parse, forbidden_calls):
            node, path = _narrowed(top, top_path)
            text = family.rule_of(path, node.exact == len(node.approvals))
            examples = node.approvals[:EXAMPLES_PER_RULE]
            chosen.append((Suggestion(text, family.family, family.tool, len(node.approvals), examples), node))
    found = Suggestions(
        rules=[],
        approvals=len(approved),
        rejections=len(rejected),
        deny_covered=len(deny_covered),
        witnesses=len(witnesses),
        uncovered_by_tool={},
        unfamilied=unfamilied,
    )
    kept = _prove(found, chosen, rejected, [*deny_covered, *witnesses], context, parse=parse, before=before)
    kept.sort(key=lambda pair: (-pair[0].saved, pair[0].rule))
    found.rules = [suggestion for suggestion, _ in kept]
    covered = {id(answer) for _, node in kept for answer in node.approvals}
    uncovered: dict[str, int] = {}
    for answer in approved:
        if id(answer) not in covered:
            uncovered[answer.tool] = uncovered.get(answer.tool, 0) + 1
    found.uncovered_by_tool = dict(sorted(uncovered.items(), key=lambda item: -item[1]))
    return found


def _topmost(
    family: _Family,
    min_count: int,
    parse: Callable[[str], RuleText | None],
    forbidden: Sequence[Answer],
) -> Iterable[tuple[_Node, tuple[str, ...]]]:
    """The topmost eligible nodes of a family's tree, with their paths."""
    stack: list[tuple[_Node, tuple[str, ...]]] = [
        (node, tuple(key.split("\x00"))) for key, node in family.roots.items()
    ]
    while stack:
        node, path = stack.pop()
        if len(node.approvals) < min_count:
            continue  # nothing below answers more
        if not node.rejected and _clear(parse(family.rule_of(path, False)), forbidden):
            yield node, path
            continue
        stack.extend((child, (*path, name)) for name, child in node.children.items())


def _clear(parsed: RuleText | None, forbidden: Sequence[Answer]) -> bool:
    """Whether the rule reads and matches none of the forbidden calls (rejected, deny-covered, witnesses)."""
    return parsed is not None and not any(_matches(parsed, call) for call in forbidden)


def _matches(parsed: RuleText, call: Answer) -> bool:
    """Whether the rule matches the call, as an allow rule reads calls (its tool pattern as the policy
    compares it: an exact name, or an ``mcp__server`` prefix)."""
    if not tool_pattern_matches(parsed.tool_pattern, call.tool):
        return False
    pattern = parsed.argument_pattern
    return pattern is None or pattern.matches(call.arguments, "allow")


def _narrowed(node: _Node, path: tuple[str, ...]) -> tuple[_Node, tuple[str, ...]]:
    """The narrowest node below ``node`` that answers the same approvals."""
    while node.exact == 0:
        whole = [
            (name, child)
            for name, child in node.children.items()
            if len(child.approvals) == len(node.approvals)
        ]
        if len(whole) != 1:
            break
        name, node = whole[0]
        path = (*path, name)
    return node, path


def _subject(arguments: object, keys: tuple[str, ...] | None, defaults: tuple[str, ...]) -> str | None:
    values = subject_values(arguments, keys[0] if keys else None, defaults)
    return values[0] if len(values) == 1 and isinstance(values[0], str) else None


def _single_command(command: str | None) -> tuple[str, ...] | None:
    """The words of one understood command without assignments or wrappers (else ``None``)."""
    if command is None:
        return None
    parsed = read_command(command)
    if not parsed.understood or len(parsed.subcommands) != 1:
        return None
    sub = parsed.subcommands[0]
    if sub.assignments or sub.wrappers or not sub.words:
        return None
    return sub.words


def _command_rule(tool: str) -> Callable[[tuple[str, ...], bool], str]:
    def rule(words: tuple[str, ...], exact: bool) -> str:
        text = specifier_text(words)
        return f"{tool}({text})" if exact else f"{tool}({text} *)"

    return rule


def _path(value: str | None, root: str) -> str | None:
    if value is None or not value or _GLOB.search(value):
        return None
    expanded = os.path.expanduser(value) if value.startswith("~") else value
    return normalize_path(posixpath.join(root, expanded))


def _path_parts(path: str, context: SuggestionContext) -> tuple[tuple[str, ...] | None, int]:
    """A path's components, and how many make the broadest directory a rule may name."""
    parts = tuple(part for part in path.split("/") if part)
    root = tuple(part for part in context.root.split("/") if part)
    home = tuple(part for part in context.home.split("/") if part)
    if not parts:
        return None, 0
    if parts[: len(root)] == root and len(parts) > len(root):
        first = len(root) + 1  # one directory below the working directory, at the broadest
    elif parts[: len(home)] == home and len(parts) > len(home):
        first = len(home) + 1
    else:
        first = 2  # never / nor a top-level directory
    return parts, min(first, len(parts))


def _path_rule(tool: str, context: SuggestionContext) -> Callable[[tuple[str, ...], bool], str]:
    root = context.root.rstrip("/") + "/"

    def rule(parts: tuple[str, ...], exact: bool) -> str:
        path = "/" + "/".join(parts)
        shown = "./" + path[len(root) :] if context.relative and path.startswith(root) else "/" + path
        return f"{tool}({shown})" if exact else f"{tool}({shown}/**)"

    return rule


def _host(url: str | None) -> str | None:
    """The one host a URL names, as a domain allow reads it (``None`` when it is not that clear)."""
    if url is None:
        return None
    reading = read_host(url)
    if not reading.clear:
        return None  # a domain allow never matches it
    (host,) = reading.hosts
    return None if _GLOB.search(host) else host


def _deny_covered(calls: Sequence[Answer], decide: _Decided | None) -> list[Answer]:
    """The recorded calls a deny rule of the current policy covers."""
    if decide is None:
        return []
    return [call for call in calls if decide(call).layer == "deny_rule"]


def _witnesses(context: SuggestionContext, decide: _Decided | None) -> list[Answer]:
    """Calls made from each deny rule's own text, kept when the current policy does deny them."""
    made: list[Answer] = []
    for text in context.denies:
        open_at = text.find("(")
        if open_at < 0 or not text.endswith(")"):
            continue
        tool, specifier = text[:open_at], text[open_at + 1 : -1]
        kind = context.kind(tool)
        if kind is None or specifier == "*":
            continue
        key = kind.key
        if kind.kind == "shell":
            words = [("x" if word.stars else word.value) for word in command_words(specifier)]
            commands = sorted({" ".join(words), " ".join(word for word in words if word != "x")})
            made.extend(
                Answer(tool, {key or "command": command}, False, f"deny rule {text}")
                for command in commands
                if command
            )
        elif kind.kind == "path":
            path = re.sub(r"\*\*?", "x", specifier)
            if path.startswith("//"):
                path = path[1:]
            elif path.startswith("/"):
                path = posixpath.join(context.root, path[1:])
            made.append(Answer(tool, {key or "file_path": path}, False, f"deny rule {text}"))
        elif specifier.startswith("domain:"):
            host = specifier.removeprefix("domain:").replace("*", "x")
            made.append(Answer(tool, {key or "url": f"https://{host}/"}, False, f"deny rule {text}"))
    if decide is None:
        return made
    return [call for call in made if decide(call).outcome == "block"]


def _prove(
    found: Suggestions,
    chosen: list[tuple[Suggestion, _Node]],
    rejected: Sequence[Answer],
    forbidden: Sequence[Answer],
    context: SuggestionContext,
    *,
    parse: Callable[[str], RuleText | None],
    before: _Decided | None,
) -> list[tuple[Suggestion, _Node]]:
    """Try the rules on every rejected and deny-covered call: a rule that matches one is dropped; when a call
    would proceed part by part (decided by the policy with the rules added, else by the rules alone), the
    rule of its parts that saves the fewest prompts is dropped; and again, until no rule is. Then the policy
    with the rules kept decides again every one of those calls a rule could match, in whole or in part (the
    others it would decide as before): ``found.proceeding`` lists any that would proceed. Returns the rules
    kept (never one whose text does not read as a rule: written, it would fail its file).
    """
    proceeding = [] if before is None else [call for call in rejected if before(call).outcome == "proceed"]
    already = {id(call) for call in proceeding}
    found.already_proceeding = proceeding
    calls = [call for call in [*rejected, *forbidden] if id(call) not in already]
    kept = [pair for pair in chosen if parse(pair[0].rule) is not None]  # a rule must read to be offered
    after: _Decided | None = None  # the policy with the rules of ``kept`` added, once it is needed
    touched: list[Answer] = []  # the calls some rule of ``kept`` could match, in whole or in part
    while kept:
        index = _Index([parse(suggestion.rule) for suggestion, _ in kept])
        after = None
        culprits: set[int] = set()
        touched = []
        for call in calls:
            candidates = index.candidates(call)
            if not candidates:
                continue  # no rule can match it nor one of its sub-commands: decided as before
            touched.append(call)
            whole = [position for position in candidates if index.matches(position, call)]
            culprits.update(whole)
            if whole:
                continue
            if context.with_rules is None:
                proceeds = index.compound(candidates, call)
            else:
                after = after or _Decided(context.with_rules([suggestion.rule for suggestion, _ in kept]))
                proceeds = after(call).outcome == "proceed"
            parts = index.partial(candidates, call) if proceeds else []
            if parts:
                # It proceeds part by part: without the rule that saves the fewest prompts it may not (the
                # next round decides it again).
                culprits.add(min(parts, key=lambda position: (kept[position][0].saved, position)))
        if not culprits:
            break
        kept = [pair for position, pair in enumerate(kept) if position not in culprits]
    if not kept:
        return kept
    # Allow rules that match neither a call nor any of its sub-commands leave its decision as it was (not
    # to proceed): the policy with the rules decides again every call that some rule could meet.
    found.redecided = len(touched)
    if context.with_rules is not None:
        after = after or _Decided(context.with_rules([suggestion.rule for suggestion, _ in kept]))
        found.proceeding = [call for call in touched if after(call).outcome == "proceed"]
    return kept


@final
class _Decided:
    """A policy's dry-run decisions, each distinct call decided once: a store repeats its calls, and deciding
    is most of what the proof costs. Calls are told apart by their tool and exact JSON text."""

    __slots__ = ("_policy", "_seen")

    def __init__(self, policy: Evaluator) -> None:
        self._policy = policy
        self._seen: dict[tuple[str, str], DecisionRecord] = {}

    def __call__(self, call: Answer) -> DecisionRecord:
        try:
            key = (call.tool, json.dumps(call.arguments, ensure_ascii=False))
        except (TypeError, ValueError, RecursionError):
            return self._policy.evaluate(ToolCall(call.tool, call.arguments))  # no text to know it by
        record = self._seen.get(key)
        if record is None:
            record = self._seen[key] = self._policy.evaluate(ToolCall(call.tool, call.arguments))
        return record


@final
class _Index:
    """The rules by tool, the command rules also by their literal leading words: for a call, the rules that
    could match it or one of its sub-commands, found without trying each rule on it.

    An allow command specifier compares its literal leading words with the first words of every
    sub-command it matches, so only a rule whose leading words begin some sub-command of the call can match
    the call or a part of it. The other rules of the call's tool (directories, domains, MCP tools) are
    candidates for every call of the tool. A rule is filed under the tool its text names, whatever family
    made it; one of an ``mcp__server`` prefix, or one that does not read, is a candidate for every call.
    """

    __slots__ = ("_by_words", "_everywhere", "_keys", "_longest", "_others", "_rules")

    def __init__(self, rules: Sequence[RuleText | None]) -> None:
        self._rules = rules
        self._by_words: dict[tuple[str, str | None, tuple[str, ...]], list[int]] = {}
        self._keys: dict[str, dict[str | None, None]] = {}
        self._others: dict[str, list[int]] = {}
        self._everywhere: list[int] = []  # an unread rule too: it matches every call, so it is dropped
        self._longest = 0
        for position, parsed in enumerate(rules):
            tool = None if parsed is None else parsed.tool_pattern
            if not isinstance(tool, str):
                self._everywhere.append(position)
                continue
            pattern = None if parsed is None else parsed.argument_pattern
            words = pattern.literal_prefix if isinstance(pattern, CommandPattern) else ()
            if isinstance(pattern, CommandPattern) and words:
                self._by_words.setdefault((tool, pattern.key, words), []).append(position)
                self._keys.setdefault(tool, {})[pattern.key] = None
                self._longest = max(self._longest, len(words))
            else:
                self._others.setdefault(tool, []).append(position)

    def candidates(self, call: Answer) -> list[int]:
        """The rules that could match the call or one of its sub-commands, in order."""
        found = set(self._others.get(call.tool, ())) | set(self._everywhere)
        for key in self._keys.get(call.tool, ()):
            for sub in _subcommands(call.arguments, key):
                words = sub.words[: self._longest]
                for size in range(1, len(words) + 1):
                    found.update(self._by_words.get((call.tool, key, words[:size]), ()))
        return sorted(found)

    def matches(self, position: int, call: Answer) -> bool:
        """Whether the rule matches the call (a rule that does not read counts as matching: it is dropped)."""
        parsed = self._rules[position]
        return parsed is None or _matches(parsed, call)

    def partial(self, candidates: Sequence[int], call: Answer) -> list[int]:
        """The command rules among ``candidates`` that match one of the call's sub-commands."""
        found: list[int] = []
        for position in candidates:
            pattern = self._pattern(position)
            if pattern is not None and any(
                pattern.matches_subcommand(sub, "allow") for sub in _subcommands(call.arguments, pattern.key)
            ):
                found.append(position)
        return found

    def compound(self, candidates: Sequence[int], call: Answer) -> bool:
        """Whether the command rules among ``candidates`` allow the call sub-command by sub-command."""
        pairs = [(position, self._pattern(position)) for position in candidates]
        usable = [(position, pattern) for position, pattern in pairs if pattern is not None]
        return compound_allow(call.arguments, usable) is not None

    def _pattern(self, position: int) -> CommandPattern | None:
        parsed = self._rules[position]
        pattern = None if parsed is None else parsed.argument_pattern
        return pattern if isinstance(pattern, CommandPattern) else None


def _subcommands(arguments: object, key: str | None) -> Iterator[SubCommand]:
    """Every sub-command of every reading of a call's command (what allow specifiers match)."""
    for reading in command_readings(arguments, key):
        if reading is not None:
            yield from reading.subcommands
