"""Allow rules learned from people's answers: the fewest rules that would have answered the most approvals.

Each approved call belongs to at most one family, and each family is a tree of ever narrower rules:

- a shell command: its word prefixes, never shorter than the first two words (``Bash(git diff *)``, as the
  "don't ask again" suggestions), down to the exact command (``Bash(git diff HEAD)``);
- a file path: its directories below the working directory (``Edit(./src/**)``; ``//`` for a path outside
  it, never ``/`` or a top-level directory), down to the file itself;
- a URL: its exact host (``WebFetch(domain:docs.python.org)``);
- an MCP tool: the tool itself (``mcp__github__create_issue``).

A rule is *eligible* when it answers at least ``min_count`` approvals, matches no call a person rejected
(tried with the rule itself, on every rejected call of the tool), and matches no call a deny rule covers
(every recorded call the current policy denies, and witness calls made from each deny rule's own text).
Eligibility only shrinks going down a tree, so the topmost eligible rules are disjoint, answer every
approval any eligible rule answers, and no smaller set does as much: that is the smallest set. Each is
then narrowed as far as it answers the same approvals (never broader than the approvals need). Last, the
policy with the rules added decides every rejected and deny-covered call again: the proof that none of them
would proceed.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, final

from ask_permissions._tool_call import ToolCall
from ask_permissions.rules._paths import normalize_path
from ask_permissions.rules._shell import command_words, parse_command
from ask_permissions.rules._specifier_base import subject_values
from ask_permissions.rules._text import BUILTIN_KINDS, RuleText, RuleTextError, ToolKind, parse_rule_text
from ask_permissions.typing import Evaluator

__all__ = ["Answer", "Suggestion", "SuggestionContext", "Suggestions", "suggest"]

_SHELL_KEYS: Final = ("command", "cmd")
_PATH_KEYS: Final = ("file_path", "path", "notebook_path")
_URL_KEYS: Final = ("url",)
_PLAIN_WORD: Final = re.compile(r"[\w@%+=:,./^-][\w@%+=:,./~^-]*")
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
    allow rules added, ``denies`` the deny rule texts by tool for witness calls.
    """

    root: str
    home: str
    kinds: Mapping[str, ToolKind] = field(default_factory=dict)
    policy: Evaluator | None = None
    with_rules: Callable[[Sequence[str]], Evaluator] | None = None
    denies: Sequence[str] = ()

    def kind(self, tool: str) -> ToolKind | None:
        return self.kinds.get(tool) or BUILTIN_KINDS.get(tool)

    def parse(self, text: str) -> RuleText | None:
        try:
            return parse_rule_text(text, "allow", kinds=self.kinds, cwd=self.root, home=self.home)
        except (RuleTextError, TypeError, ValueError):
            return None


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


def suggest(answers: Iterable[Answer], context: SuggestionContext, *, min_count: int = 2) -> Suggestions:
    """The smallest set of allow rules that would have answered the most approvals, proven (see above)."""
    families: dict[tuple[str, str], _Family] = {}
    approved: list[Answer] = []
    rejected: list[Answer] = []
    unplaced: dict[str, list[Answer]] = {}  # forbidden calls no tree holds: tried with each rule itself
    unfamilied = 0
    for answer in answers:
        (approved if answer.approved else rejected).append(answer)
        if not _place(answer, context, families):
            if answer.approved:
                unfamilied += 1
            else:
                unplaced.setdefault(answer.tool, []).append(answer)
    deny_covered = _deny_covered([*approved, *rejected], context)
    witnesses = _witnesses(context)
    for call in [*deny_covered, *witnesses]:
        forbidden = Answer(call.tool, call.arguments, False, call.where)
        if not _place(forbidden, context, families):
            unplaced.setdefault(call.tool, []).append(forbidden)
    chosen: list[tuple[Suggestion, _Node]] = []
    for family in families.values():
        for top, top_path in _topmost(family, min_count, context, unplaced.get(family.tool, [])):
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
    kept = _prove(found, chosen, rejected, [*deny_covered, *witnesses], context)
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
    family: _Family, min_count: int, context: SuggestionContext, forbidden: Sequence[Answer]
) -> Iterable[tuple[_Node, tuple[str, ...]]]:
    """The topmost eligible nodes of a family's tree, with their paths."""
    stack: list[tuple[_Node, tuple[str, ...]]] = [
        (node, tuple(key.split("\x00"))) for key, node in family.roots.items()
    ]
    while stack:
        node, path = stack.pop()
        if len(node.approvals) < min_count:
            continue  # nothing below answers more
        if not node.rejected and _clear(family.rule_of(path, False), family.tool, context, forbidden):
            yield node, path
            continue
        stack.extend((child, (*path, name)) for name, child in node.children.items())


def _clear(text: str, tool: str, context: SuggestionContext, forbidden: Sequence[Answer]) -> bool:
    """Whether the rule reads and matches none of the forbidden calls (rejected, deny-covered, witnesses)."""
    parsed = context.parse(text)
    if parsed is None:
        return False
    return not any(_matches(parsed, call) for call in forbidden)


def _matches(parsed: RuleText, call: Answer) -> bool:
    if parsed.tool_pattern != call.tool:
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


def _place(answer: Answer, context: SuggestionContext, families: dict[tuple[str, str], _Family]) -> bool:
    """Put the call in its family's tree; ``False`` when no family fits it."""
    tool = answer.tool
    kind = context.kind(tool)
    if kind is None:
        if not tool.startswith("mcp__") or tool.count("__") < 2:
            return False
        family = _family(families, tool, "mcp-tool", lambda path, exact: tool)
        family.add((tool,), 1, answer)
        return True
    keys = (kind.key,) if kind.key else None
    if kind.kind == "shell":
        words = _single_command(_subject(answer.arguments, keys, _SHELL_KEYS))
        if words is None:
            return False
        family = _family(families, tool, "command-prefix", _command_rule(tool))
        family.add(words, min(_MIN_PREFIX_WORDS, len(words)), answer)
        return True
    if kind.kind == "path":
        path = _path(_subject(answer.arguments, keys, _PATH_KEYS), context.root)
        if path is None:
            return False
        parts, first = _path_parts(path, context)
        if parts is None:
            return False
        family = _family(families, tool, "path-directory", _path_rule(tool, context))
        family.add(parts, first, answer)
        return True
    host = _host(_subject(answer.arguments, keys, _URL_KEYS))
    if host is None:
        return False
    family = _family(families, tool, "domain", lambda path, exact: f"{tool}(domain:{path[0]})")
    family.add((host,), 1, answer)
    return True


def _family(
    families: dict[tuple[str, str], _Family],
    tool: str,
    name: str,
    rule_of: Callable[[tuple[str, ...], bool], str],
) -> _Family:
    found = families.get((tool, name))
    if found is None:
        found = families[tool, name] = _Family(tool, name, rule_of)
    return found


def _subject(arguments: object, keys: tuple[str, ...] | None, defaults: tuple[str, ...]) -> str | None:
    values = subject_values(arguments, keys[0] if keys else None, defaults)
    return values[0] if len(values) == 1 and isinstance(values[0], str) else None


def _single_command(command: str | None) -> tuple[str, ...] | None:
    """The words of one understood command without assignments or wrappers (else ``None``)."""
    if command is None:
        return None
    parsed = parse_command(command)
    if not parsed.understood or len(parsed.subcommands) != 1:
        return None
    sub = parsed.subcommands[0]
    if sub.assignments or sub.wrappers or not sub.words:
        return None
    return sub.words


def _command_rule(tool: str) -> Callable[[tuple[str, ...], bool], str]:
    def rule(words: tuple[str, ...], exact: bool) -> str:
        text = " ".join(word if _PLAIN_WORD.fullmatch(word) else shlex.quote(word) for word in words)
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
        shown = "./" + path[len(root) :] if path.startswith(root) else "/" + path
        return f"{tool}({shown})" if exact else f"{tool}({shown}/**)"

    return rule


def _host(url: str | None) -> str | None:
    import urllib.parse  # noqa: PLC0415  # only URL calls need it

    if url is None:
        return None
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return None
    return None if not host or _GLOB.search(host) else host


def _deny_covered(calls: Sequence[Answer], context: SuggestionContext) -> list[Answer]:
    """The recorded calls a deny rule of the current policy covers."""
    policy = context.policy
    if policy is None:
        return []
    return [
        call for call in calls if policy.evaluate(ToolCall(call.tool, call.arguments)).layer == "deny_rule"
    ]


def _witnesses(context: SuggestionContext) -> list[Answer]:
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
    policy = context.policy
    if policy is None:
        return made
    return [call for call in made if policy.evaluate(ToolCall(call.tool, call.arguments)).outcome == "block"]


def _prove(
    found: Suggestions,
    chosen: list[tuple[Suggestion, _Node]],
    rejected: Sequence[Answer],
    forbidden: Sequence[Answer],
    context: SuggestionContext,
) -> list[tuple[Suggestion, _Node]]:
    """Decide every rejected and deny-covered call with the rules added; a rule that lets one proceed is
    dropped and the rest decided again, until none does. Returns the rules kept."""
    kept = list(chosen)
    calls = [*rejected, *forbidden]
    before = context.policy
    already = (
        set()
        if before is None
        else {
            id(call)
            for call in rejected
            if before.evaluate(ToolCall(call.tool, call.arguments)).outcome == "proceed"
        }
    )
    found.already_proceeding = [call for call in rejected if id(call) in already]
    while kept:
        rules = [(suggestion, context.parse(suggestion.rule)) for suggestion, _ in kept]
        leads = [_rule_lead(suggestion) for suggestion, _ in kept]
        after = None if context.with_rules is None else context.with_rules([s.rule for s, _ in kept])
        culprits: set[int] = set()
        for call in calls:
            if id(call) in already:
                continue
            if after is not None:
                if after.evaluate(ToolCall(call.tool, call.arguments)).outcome != "proceed":
                    continue
                found.proceeding.append(call)
            lead = _lead(call)
            for position, (suggestion, parsed) in enumerate(rules):
                if suggestion.tool != call.tool or (lead is not None and leads[position] not in (None, lead)):
                    continue  # a command rule matches only commands that start with its first word
                if parsed is None or _matches(parsed, call):
                    culprits.add(position)
        if not culprits and not found.proceeding:
            return kept
        if (
            not culprits
        ):  # something proceeds, but not by a rule of ours alone (a compound): drop none, say so
            return kept
        kept = [pair for position, pair in enumerate(kept) if position not in culprits]
        found.proceeding = []
    return kept


def _lead(call: Answer) -> str | None:
    """A shell call's first word, when it is a plain word (``None``: try every rule of the tool)."""
    arguments = call.arguments
    command = arguments.get("command") if isinstance(arguments, Mapping) else None
    if not isinstance(command, str):
        return None
    words = command.split(None, 1)
    return words[0] if words and _PLAIN_WORD.fullmatch(words[0]) else None


def _rule_lead(suggestion: Suggestion) -> str | None:
    """A command-prefix rule's first word (``None`` for the other families)."""
    if suggestion.family != "command-prefix":
        return None
    inner = suggestion.rule[len(suggestion.tool) + 1 : -1]
    return inner.split(None, 1)[0] if inner else None
