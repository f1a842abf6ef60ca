"""The layered table: seed 002's permission pipeline, its layers read top to bottom in one place.

Hooks; deny rules; ask rules; the tool's own check and the host's checks; safety checks; the mode; allow
rules; a shell call's sandbox, when the host has one; then "ask". The rules come from every settings source,
merged so that deny beats ask beats allow whatever the source. Then the rewrites: ``auto`` mode lets a
reviewer answer asks, ``dontAsk`` turns asks into blocks, and without a person (``interactive=False``) an
ask is a block. Each layer is a function of the call's facts (``LayeredCall``) alone.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from ask_permissions._tool_call import ToolCall
from ask_permissions._vocabulary import (
    REVIEWER,
    ReviewRequest,
)
from ask_permissions.rules._command import READ_LIMIT_TEXT
from ask_permissions.rules._paths import normalize_path, resolve_links
from ask_permissions.shell import READ_LIMIT, SubCommand
from ask_permissions.shell._effects import plain_reading, simple_effects
from ask_permissions.shell._programs import EDIT_COMMANDS, read_argv

from ._checks import run_checks
from ._hooks import hook_layer
from ._layered_facts import LayeredCall, LayeredState, matched_rule
from ._layered_rules import LayeredMatch
from ._plan_mode import PlanModePolicy
from ._reviewer import Review, review
from ._safety import SafetyFinding, check_paths, check_shell
from ._table import UNATTENDED, Decided, Layer, Opinion, Rewrite, Table, Texts, unanswerable

if TYPE_CHECKING:
    pass


__all__ = ["DENY_TEXT", "DONT_ASK_TEXT", "LAYERED_LAYERS", "LAYERED_TABLE", "REVIEWER_DENIED_TEXT"]

DENY_TEXT: Final = "Denied by permission rules: '{tool}' ({rule}, {source} settings)"
DONT_ASK_TEXT: Final = "Tool '{tool}' requires approval, and dontAsk mode turns every ask into a refusal"
REVIEWER_DENIED_TEXT: Final = "The reviewer denied the call to '{tool}'"


def _from_rules(
    matched: LayeredMatch, verdict: str, *, reviewable: bool = True, reason: str | None = None
) -> Opinion:
    """The opinion a rules layer gives for a match, made once per match (and reason) and kept on it."""
    key = f"{verdict}:{reviewable}:{reason}"
    made = matched.made.get(key)
    if made is None:
        made = Opinion(
            verdict,  # type: ignore[arg-type]  # a verdict
            reason,
            rule=matched_rule(matched),
            source=matched.source,
            reviewable=reviewable,
        )
        matched.made[key] = made
    return made  # type: ignore[return-value]  # an Opinion, stored above


_PROCEED: Final = Opinion("proceed")
_ASK: Final = Opinion("ask")
_BLOCK: Final = Opinion("block")


def _read_limit(call: LayeredCall) -> Opinion | None:
    """0b. A shell command past the read limit asks a person, in every mode: it was not read, so no rule may
    allow it and none may block it for its length alone, and no reviewer answers it (as a safety check)."""
    subjects = call.subjects
    if subjects.kind is None or subjects.kind.kind != "shell":
        return None
    if any(command is not None and len(command) > READ_LIMIT for command in subjects.commands):
        return Opinion("ask", READ_LIMIT_TEXT.format(tool=call.name, limit=READ_LIMIT), reviewable=False)
    return None


def _deny_rule(call: LayeredCall) -> Opinion | None:
    """1. A deny rule from any source blocks: denied at any level, no other level can allow it.

    The reason names the rule and its source, so the model can see what to avoid.
    """
    matched = call.matched
    if matched is None or matched.decision != "deny":
        return None
    reason = DENY_TEXT.format(tool=call.name, rule=matched.text, source=matched.source)
    return _from_rules(matched, "block", reason=reason)


def _ask_rule(call: LayeredCall) -> Opinion | None:
    """2. An ask rule from any source asks a person, in every mode (and no reviewer may answer it)."""
    matched = call.matched
    if matched is not None and matched.decision == "ask":
        return _from_rules(matched, "ask", reviewable=False)
    return None


def _tool_check(call: LayeredCall) -> Opinion | None:
    """3. The tool's own check: it can neither lift a deny nor needs to repeat an allow.

    A deny blocks; a safety-check ask asks whatever the mode; an allow or a rewrite must still pass the
    guards; a plain ask leaves the decision to the mode and the allow rules (its prompt is the default's).
    """
    answer = call.tool_check()
    if answer is None:
        return None
    if answer.verdict == "deny":
        return Opinion("block", answer.reason)
    if answer.verdict == "ask":
        return Opinion("ask", answer.reason, reviewable=answer.reviewable) if answer.safety else None
    return Opinion("proceed", provisional=True, arguments=answer.arguments)


def _check(call: LayeredCall) -> Opinion | None:
    """3b. The host's check functions, where the tool's own check sits (provisional, as for the gem's)."""
    checks = call.state.checks
    return run_checks(checks, ToolCall(call.name, call.arguments, call.call_id)) if checks else None


def _safety_check(call: LayeredCall) -> Opinion | None:
    """4. Safety checks: writes to protected paths and removals of whole trees ask, immune to every mode
    and allow rule. A look-alike of a tool's name (``write``, ``BASH``) is checked as that tool."""
    state = call.state
    subjects = call.subjects
    kind = subjects.kind
    finding: SafetyFinding | None = None
    if kind is not None and kind.kind == "path" and not call.tool.read_only:
        paths = subjects.paths
        finding = (
            check_paths(paths, cwd=state.cwd, protected=state.protected) if paths is not None else _UNREADABLE
        )
    elif kind is not None and kind.kind == "shell":
        # Every command the call holds, however it holds it: a tool may run any of them.
        for command in subjects.commands:
            if command is None:
                finding = _UNREADABLE
            else:
                finding = check_shell(command, cwd=state.cwd, home=state.home, protected=state.protected)
            if finding is not None:
                break
    return None if finding is None else Opinion("ask", finding.reason, reviewable=finding.reviewable)


_UNREADABLE: Final = SafetyFinding(
    "The call's arguments could not be read for the safety checks, which needs a person's approval"
)


def _inside(path: str, directories: Iterable[str]) -> bool:
    return any(path == directory or path.startswith(directory.rstrip("/") + "/") for directory in directories)


def _edit_inside(path: str, directories: tuple[str, ...]) -> bool:
    """Whether a path (absolute, as joined) lies inside the working directories, as written and where its
    symbolic links on disk lead (a link out of the project does not count as inside it)."""
    if not _inside(normalize_path(path), directories):
        return False
    target = resolve_links(path)
    if target is None:
        return False  # more links than are followed: no one can say where it goes
    physical = [found for directory in directories if (found := resolve_links(directory)) is not None]
    return _inside(target, (*directories, *physical))


def _edits_inside(call: LayeredCall) -> bool:
    """acceptEdits: a path tool's write, or the table's edit commands (mkdir, touch, mv, cp), every path
    they touch inside the working directories after symbolic links, nothing the shell expands, and no
    option of theirs whose value is anything but such a path."""
    state = call.state
    subjects = call.subjects
    kind = subjects.kind
    if kind is not None and kind.kind == "path":
        paths = subjects.paths
        return bool(paths) and all(_edit_inside(path, state.directories) for path in paths or ())
    command = subjects.command if kind is not None and kind.kind == "shell" else None
    commands = None if command is None else plain_reading(command)
    if not commands:
        return False
    return all(_edit_accepted(simple, state) for simple in commands)


def _edit_accepted(simple: SubCommand, state: LayeredState) -> bool:
    """Whether acceptEdits accepts one simple command of the plain reading."""
    words = simple.words
    if simple.assignments or simple.wrappers or not words or words[0] not in EDIT_COMMANDS:
        return False
    reading = read_argv(words)
    if reading.uncertain or not reading.programs or not reading.programs[0].edit:
        return False
    operands = [part for part in reading.parts if part.option is None]
    if not operands or any(part.role not in _PATH_ROLES for part in reading.parts):
        return False  # an option whose value is no path (cp -S SUFFIX, mkdir -m MODE) is not read here
    if any(
        part.text(words).rstrip("/").endswith("/.") or part.text(words).rstrip("/") == "."
        for part in operands[:-1]
    ):
        return False  # cp -r payload/. . merges a folder, its .git and .vscode included, into this one
    uses = simple_effects(simple)
    if any(use.expands for use in uses):
        return False  # a glob (.?/x, ./*), ~, ~+ ($PWD), an expansion: a path the shell works out
    return all(_edit_inside(posixpath.join(state.cwd, use.path), state.directories) for use in uses)


_PATH_ROLES: Final = frozenset({"read", "write", "remove"})


def _mode(call: LayeredCall) -> Opinion | None:
    """5. The mode: plan allows only read-only tools and its exit tool; acceptEdits allows edits inside the
    working directories, unless the tool declares itself destructive; bypassPermissions allows what nothing
    above stopped."""
    mode = call.state.mode
    if mode == "plan":
        return _PROCEED if call.tool.read_only or call.name == call.state.exit_tool else _BLOCK
    if mode == "bypassPermissions":
        return _PROCEED
    tool = call.tool
    if mode == "acceptEdits" and not tool.read_only and not tool.destructive and _edits_inside(call):
        return _PROCEED
    return None


def _allow_rule(call: LayeredCall) -> Opinion | None:
    """6. An allow rule from any source proceeds (a compound command when each part is allowed); so does a
    whole-tool session grant."""
    matched = call.matched
    if matched is not None and matched.decision == "allow":
        return _from_rules(matched, "proceed")
    grants = call.state.grants
    if grants is not None and grants.is_granted(call.name) is True:
        return Opinion("proceed", source="session")
    return None


_SANDBOXED: Final = Opinion("proceed", sandboxed=True)


def _sandboxed(call: LayeredCall) -> Opinion | None:
    """6b. A shell call that no rule decided proceeds when the policy's sandbox runs it: what the static
    reading left uncertain, the kernel's walls hold. Every guard above came first (deny and ask rules,
    safety checks, the mode), and a tool's own check that asks still asks."""
    if call.state.sandbox is None or call.command() is None:
        return None
    answer = call.tool_check()
    if answer is not None and answer.verdict == "ask":
        return None
    return _SANDBOXED


def _default(call: LayeredCall) -> Opinion | None:
    """7. Nothing decided: ask a person (with the tool's own prompt, if its check asked)."""
    answer = call.tool_check()
    if answer is not None and answer.verdict == "ask":
        return Opinion("ask", answer.reason, reviewable=answer.reviewable)
    return _ASK


def _auto(call: LayeredCall, decided: Decided) -> Decided:
    """auto: a reviewer answers a reviewable ask, until too many denials hand asks back to a person; an
    irreversible call (its tool declares itself destructive) is always a person's to answer."""
    state = call.state
    opinion = decided.opinion
    if state.mode != "auto" or state.reviewer is None or not opinion.reviewable or state.denials.tripped:
        return decided
    if call.tool.destructive:
        return decided
    request: ReviewRequest = {
        "tool": call.name,
        "tool_call_id": None if call.call_id is None else str(call.call_id),
        "args": call.arguments,
        "reason": decided.reason or opinion.reason or f"Tool '{call.name}' requires approval",
    }
    verdict: Review | None = review(state.reviewer, request, state.reviewer_timeout)
    if verdict is None:
        return decided  # the reviewer could not answer: a person will
    if not call.dry_run:
        state.denials.record(verdict.verdict)
    if verdict.verdict == "allow":
        return decided._replace(
            opinion=Opinion("proceed", rule=opinion.rule, source=opinion.source, rule_id=REVIEWER)
        )
    reason = verdict.reason or REVIEWER_DENIED_TEXT.format(tool=call.name)
    return decided._replace(
        opinion=Opinion("block", reason, rule=opinion.rule, source=opinion.source, rule_id=REVIEWER)
    )


def _dont_ask(call: LayeredCall, decided: Decided) -> Decided:
    """dontAsk: every ask becomes a block (for background agents no person attends)."""
    if call.state.mode != "dontAsk":
        return decided
    return decided._replace(opinion=unanswerable(decided.opinion, DONT_ASK_TEXT.format(tool=call.name)))


LAYERED_TABLE: Final[Table[LayeredCall]] = Table(
    (
        Layer("hook", hook_layer, blocking=True),  # 0. hooks see the call first
        Layer("read_limit", _read_limit, guard=True),
        Layer("deny_rule", _deny_rule, guard=True),
        Layer("ask_rule", _ask_rule, guard=True),
        Layer("tool_check", _tool_check),
        Layer("check", _check),
        Layer("safety_check", _safety_check, guard=True),
        Layer("mode", _mode, guard=True),
        Layer("allow_rule", _allow_rule),
        Layer("sandbox", _sandboxed),
        Layer("default", _default),
        Rewrite("auto", _auto, frozenset({"ask"}), blocking=True),
        Rewrite("dont_ask", _dont_ask, frozenset({"ask"})),
        UNATTENDED,
    ),
    Texts({"deny_rule": "Denied by permission rules: '{tool}'", "mode": PlanModePolicy.DEFAULT_REASON}),
)
"""Seed 002's order: the first layer with an opinion decides; then the rewrites; then the fixed texts."""

LAYERED_LAYERS: Final = LAYERED_TABLE.names
"""The names a ``LayeredPolicy``'s decision records report, in the order the layers are consulted."""
