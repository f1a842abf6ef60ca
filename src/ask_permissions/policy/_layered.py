"""LayeredPolicy: seed 002's layered permission pipeline, as a table on the pipeline engine.

Read the table top to bottom: hooks; deny rules; ask rules; the tool's own check and the host's checks;
safety checks; the mode; allow rules; a shell call's sandbox, when the host has one; then "ask". The rules
come from every settings source, merged so that deny beats ask beats allow whatever the source. Then the
rewrites: ``auto`` mode lets a reviewer answer asks, ``dontAsk`` turns asks into blocks, and without a
person (``interactive=False``) an ask is a block.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, final

from ask_permissions._errors import InvalidSnapshotError, preview
from ask_permissions._tool_call import ToolCall
from ask_permissions._vocabulary import (
    REVIEWER,
    Clock,
    GrantsLike,
    LayeredMode,
    Redactor,
    ResolutionScope,
    ReviewRequest,
    SandboxLike,
)
from ask_permissions.policy._records import Evaluator
from ask_permissions.rules._command import READ_LIMIT_TEXT
from ask_permissions.rules._paths import normalize_path, resolve_links
from ask_permissions.rules._text import BUILTIN_KINDS, RuleTextError, ToolKind, parse_rule_text, read_kinds
from ask_permissions.settings._field_lines import source_place
from ask_permissions.settings._settings import PermissionSettings
from ask_permissions.shell import READ_LIMIT, SubCommand, read_command
from ask_permissions.shell._effects import plain_reading, simple_effects
from ask_permissions.shell._programs import EDIT_COMMANDS, read_argv
from ask_permissions.shell._quoting import specifier_text

from ._checks import Check, PermissionCheck, read_checks, run_checks
from ._engine import (
    ONCE_ONLY,
    UNATTENDED,
    Decided,
    Engine,
    Layer,
    Opinion,
    Rewrite,
    Table,
    Texts,
    unanswerable,
)
from ._hooks import Hooks, hook_layer, read_hooks
from ._layered_rules import LayeredMatch, LayeredRules
from ._modes import read_layered_mode
from ._outcome import ProjectGrantHook
from ._plan_mode import PlanModePolicy
from ._records import DecisionRecord, MatchedRule
from ._reviewer import DenialTracker, Review, Reviewer, review
from ._safety import PROTECTED_PATHS, ProtectedPaths, SafetyFinding, check_paths, check_shell
from ._sandbox_view import SandboxView, sandbox_view
from ._subjects import Subjects, folded_kinds, kind_of, read_subjects
from ._tool_metadata import ToolMetadata, ToolRegistry
from ._tool_names import (
    ToolReference,
    hook_references,
    name_references,
    pattern_reference,
    registry_names,
)

if TYPE_CHECKING:
    from ask_permissions.queue._queue import Action, ApprovalQueue

__all__ = ["LAYERED_LAYERS", "LayeredPolicy", "ModeChange"]

_logger: Final = logging.getLogger("ask_permissions.policy")


DENY_TEXT: Final = "Denied by permission rules: '{tool}' ({rule}, {source} settings)"
DONT_ASK_TEXT: Final = "Tool '{tool}' requires approval, and dontAsk mode turns every ask into a refusal"
REVIEWER_DENIED_TEXT: Final = "The reviewer denied the call to '{tool}'"


@final
@dataclass(frozen=True, slots=True)
class ModeChange:
    """A change of a layered policy's mode, as its history and ``on_mode_change`` report it."""

    old: LayeredMode
    new: LayeredMode
    ts: datetime


@final
class _State:
    """What the layers read of the policy at one moment: replaced whole when the mode or settings change."""

    __slots__ = (
        "checks",
        "cwd",
        "denials",
        "directories",
        "exit_tool",
        "folded_kinds",
        "grants",
        "home",
        "hooks",
        "interactive",
        "kinds",
        "mode",
        "protected",
        "queue",
        "reviewer",
        "reviewer_timeout",
        "rules",
        "sandbox",
        "tools",
        "version",
    )

    def __init__(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)

    def with_changes(self, **changes: Any) -> _State:
        return _State(**{name: changes.get(name, getattr(self, name)) for name in _State.__slots__})

    checks: tuple[Check, ...]
    cwd: str
    denials: DenialTracker
    directories: tuple[str, ...]
    exit_tool: str
    folded_kinds: Mapping[str, ToolKind]
    grants: GrantsLike | None
    home: str
    hooks: Hooks
    interactive: bool
    kinds: Mapping[str, ToolKind]
    mode: LayeredMode
    protected: ProtectedPaths
    queue: ApprovalQueue
    reviewer: Reviewer | None
    reviewer_timeout: float | None
    rules: LayeredRules
    sandbox: SandboxLike | None
    tools: ToolRegistry
    version: int


@final
class _Call:
    """One call's facts for the layered table: its subjects (commands, paths, URL), rules match and tool
    metadata, read once; the tool's own check, read when first asked for."""

    __slots__ = (
        "_checked",
        "_tool_check",
        "arguments",
        "call_id",
        "context",
        "dry_run",
        "matched",
        "name",
        "state",
        "subjects",
        "tool",
    )

    def __init__(
        self,
        state: _State,
        name: str,
        arguments: object,
        call_id: object,
        context: object,
        *,
        dry_run: bool = False,
    ) -> None:
        self.state = state
        self.dry_run = dry_run  # evaluate(): layers may consult, but record nothing
        self.name = name
        self.arguments = arguments
        self.call_id = call_id
        self.context = context
        self.subjects: Final = read_subjects(
            arguments, kind_of(name, state.kinds, state.folded_kinds), state.cwd
        )
        self.matched: LayeredMatch | None = _explained(state, name, self.subjects)
        self.tool: ToolMetadata = state.tools.lookup(name)
        self._checked = False
        self._tool_check: PermissionCheck | None = None

    @property
    def interactive(self) -> bool:
        return self.state.interactive

    @property
    def match(self) -> MatchedRule | None:
        return None if self.matched is None else _matched_rule(self.matched)

    def queue_approves(self) -> bool:
        return self.state.queue.would_auto_approve(self.name)

    def with_arguments(self, arguments: object) -> _Call:
        return _Call(self.state, self.name, arguments, self.call_id, self.context, dry_run=self.dry_run)

    # -- what the call touches ------------------------------------------------------------------------------

    @property
    def kind(self) -> ToolKind | None:
        """The kind declared or built in for the call's exact name (what suggested rules are written for)."""
        return self.state.kinds.get(self.name) or BUILTIN_KINDS.get(self.name)

    def command(self) -> str | None:
        """The one command string a shell tool's call holds, else ``None``."""
        return self.subjects.command if self._is("shell") else None

    def paths(self) -> tuple[str, ...] | None:
        """The absolute, normalized paths a path tool's call names (``None``: not a path tool, unreadable)."""
        return self.subjects.normalized_paths if self._is("path") else None

    def url(self) -> str | None:
        """The one URL a URL tool's call names, else ``None``."""
        return self.subjects.url if self._is("url") else None

    def _is(self, kind: str) -> bool:
        exact = self.kind
        return exact is not None and exact.kind == kind

    def tool_check(self) -> PermissionCheck | None:
        """The tool's own check (``check_permissions(arguments, context)``), called at most once."""
        if not self._checked:
            self._checked = True
            check = self.tool.check_permissions
            if check is not None:
                answer = check(self.arguments, self.context)
                if answer is not None and not isinstance(answer, PermissionCheck):
                    got = preview(answer)
                    raise TypeError(
                        f"{self.name}.check_permissions: expected a PermissionCheck or None; got {got}"
                    )
                self._tool_check = answer
        return self._tool_check


_STRICTNESS: Final = {"deny": 2, "ask": 1}


def _explained(state: _State, name: str, subjects: Subjects) -> LayeredMatch | None:
    """The rule that decides the call, its relative paths read at the policy's working directory (so that
    a source's rules, each read from its own folder, meet the file the call names: "deploy/prod.key"
    against a user-level deny of the project's key). A path reached through a symbolic link on disk is
    decided as both the link and its target: a deny or ask of either applies, an allow needs both."""
    matched = state.rules.explain(name, subjects.anchored)
    if subjects.linked is None:
        return matched
    target = state.rules.explain(name, subjects.linked)
    stricter = max(
        (found for found in (matched, target) if found is not None and found.decision in _STRICTNESS),
        key=lambda found: _STRICTNESS[found.decision],
        default=None,
    )
    if stricter is not None:
        return stricter
    return matched if matched is not None and target is not None else None


def _matched_rule(matched: LayeredMatch) -> MatchedRule:
    made = matched.made.get("record")
    if made is None:
        made = _record_entry(matched)
        matched.made["record"] = made
    return made  # type: ignore[return-value]  # a MatchedRule, stored above


def _record_entry(matched: LayeredMatch) -> MatchedRule:
    rule = matched.rule
    pattern = rule.parsed.argument_pattern
    tool = rule.parsed.tool_pattern
    return MatchedRule(
        index=rule.position,
        layer="default",
        declared_decision=rule.decision,
        effective_decision=matched.decision,
        tool_pattern={"type": "string", "value": tool}
        if isinstance(tool, str)
        else {"type": "regexp", "source": tool.pattern, "flags": ""},
        argument_pattern=None if pattern is None else pattern.to_snapshot(),
        text=matched.text,
    )


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
            rule=_matched_rule(matched),
            source=matched.source,
            reviewable=reviewable,
        )
        matched.made[key] = made
    return made  # type: ignore[return-value]  # an Opinion, stored above


_PROCEED: Final = Opinion("proceed")
_ASK: Final = Opinion("ask")
_BLOCK: Final = Opinion("block")


def _read_limit(call: _Call) -> Opinion | None:
    """0b. A shell command past the read limit asks a person, in every mode: it was not read, so no rule may
    allow it and none may block it for its length alone, and no reviewer answers it (as a safety check)."""
    subjects = call.subjects
    if subjects.kind is None or subjects.kind.kind != "shell":
        return None
    if any(command is not None and len(command) > READ_LIMIT for command in subjects.commands):
        return Opinion("ask", READ_LIMIT_TEXT.format(tool=call.name, limit=READ_LIMIT), reviewable=False)
    return None


def _deny_rule(call: _Call) -> Opinion | None:
    """1. A deny rule from any source blocks: denied at any level, no other level can allow it.

    The reason names the rule and its source, so the model can see what to avoid.
    """
    matched = call.matched
    if matched is None or matched.decision != "deny":
        return None
    reason = DENY_TEXT.format(tool=call.name, rule=matched.text, source=matched.source)
    return _from_rules(matched, "block", reason=reason)


def _ask_rule(call: _Call) -> Opinion | None:
    """2. An ask rule from any source asks a person, in every mode (and no reviewer may answer it)."""
    matched = call.matched
    if matched is not None and matched.decision == "ask":
        return _from_rules(matched, "ask", reviewable=False)
    return None


def _tool_check(call: _Call) -> Opinion | None:
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


def _check(call: _Call) -> Opinion | None:
    """3b. The host's check functions, where the tool's own check sits (provisional, as for the gem's)."""
    checks = call.state.checks
    return run_checks(checks, ToolCall(call.name, call.arguments, call.call_id)) if checks else None


def _safety_check(call: _Call) -> Opinion | None:
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


def _edits_inside(call: _Call) -> bool:
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


def _edit_accepted(simple: SubCommand, state: _State) -> bool:
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


def _mode(call: _Call) -> Opinion | None:
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


def _allow_rule(call: _Call) -> Opinion | None:
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


def _sandboxed(call: _Call) -> Opinion | None:
    """6b. A shell call that no rule decided proceeds when the policy's sandbox runs it: what the static
    reading left uncertain, the kernel's walls hold. Every guard above came first (deny and ask rules,
    safety checks, the mode), and a tool's own check that asks still asks."""
    if call.state.sandbox is None or call.command() is None:
        return None
    answer = call.tool_check()
    if answer is not None and answer.verdict == "ask":
        return None
    return _SANDBOXED


def _default(call: _Call) -> Opinion | None:
    """7. Nothing decided: ask a person (with the tool's own prompt, if its check asked)."""
    answer = call.tool_check()
    if answer is not None and answer.verdict == "ask":
        return Opinion("ask", answer.reason, reviewable=answer.reviewable)
    return _ASK


def _auto(call: _Call, decided: Decided) -> Decided:
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


def _dont_ask(call: _Call, decided: Decided) -> Decided:
    """dontAsk: every ask becomes a block (for background agents no person attends)."""
    if call.state.mode != "dontAsk":
        return decided
    return decided._replace(opinion=unanswerable(decided.opinion, DONT_ASK_TEXT.format(tool=call.name)))


_TABLE: Final[Table[_Call]] = Table(
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

LAYERED_LAYERS: Final = _TABLE.names
"""The names a ``LayeredPolicy``'s decision records report, in the order the layers are consulted."""


@final
class LayeredPolicy(Engine[_Call]):
    """Seed 002's layered policy: rules from every settings source, modes, safety checks, a tool's own check.

    Thread-safe: its state (mode, rules built from the settings) is replaced whole under a private lock, and
    each call reads one state; the queue, settings and grants guard themselves.

    Args:
        queue: the ``ApprovalQueue`` asks go into.
        settings: the ``PermissionSettings`` whose sources give the rules, the default mode, additional
            directories, the bypass lock and hooks.
        mode: ``default``, ``acceptEdits``, ``plan``, ``bypassPermissions``, ``dontAsk`` or ``auto``
            (default: the settings' ``defaultMode``, else ``default``).
        tools: the tool registry (as for ``ApprovalPolicy``); tools may also declare ``read_only``,
            ``destructive`` (never accepted by ``acceptEdits`` nor answered by ``auto``'s reviewer) and
            ``check_permissions(arguments, context)``. Unlike ``ApprovalPolicy``'s, it is not taken for the
            list of the agent's tools (settings files serve many agents); the adapters check the settings'
            rules against the agent's own tools (``tool_references``, ``require_known_tools``).
        cwd: the working directory (default: the settings' project directory).
        session_grants: whole-tool grants for the session (a ``SessionPermissionGrants``).
        on_decision: as for ``ApprovalPolicy``.
        clock: as for ``ApprovalPolicy``.
        interactive: as for ``ApprovalPolicy``.
        on_project_grant: as for ``ApprovalPolicy``.
        kinds: tool name → ``"shell"``, ``"path"`` or ``"url"``, optionally ``:key`` (as for rule text).
        protected_paths: the safety checks' protected paths (``PROTECTED_PATHS`` extended, say).
        checks: check functions, consulted where a tool's own check sits.
        hooks: PreToolUse hooks, added to the settings' hooks.
        reviewer: ``auto`` mode's reviewer; ``reviewer_timeout`` bounds it (seconds).
        max_consecutive_denials: the reviewer's circuit breaker: denials in a row before a person is asked
            again (3).
        max_total_denials: the circuit breaker's limit on the session's denials in all (20).
        exit_tool: the tool that leaves plan mode (``exit_plan_mode``).
        on_mode_change: called with a ``ModeChange`` after the mode changed.
        sandbox: the walls the host runs shell calls in (an ``ask_permissions.sandbox.Sandbox``), or a
            function of the policy that makes them (``Sandbox.from_policy``): a shell call that no rule
            decided then proceeds, its result and record saying ``sandboxed``, on the host's promise to run
            such calls through ``sandbox.run`` (or ``sandbox.command``), never outside.
        shadow: another policy decided beside this one for every call (a dry run: ``evaluate``); where its
            outcome differs, the decision record carries it as ``shadow``. It never changes the call, and
            needs ``on_decision``.
        record_arguments: keep each call's arguments in its decision records (``True``), or what a
            redaction function ``(tool_name, arguments) -> arguments`` leaves of them; a replay of the
            records needs them. Off by default: arguments may hold secrets.

    Raises:
        ValueError: an unknown mode, or ``bypassPermissions`` while a settings source disables it; a
            sandbox whose working directory is not the policy's.
        SandboxUnavailableError: the sandbox function found no way to build walls here.
        InvalidSnapshotError: a rule or hook of the settings that cannot be read (naming file and field).

        TypeError: a collaborator of the wrong shape.
    """

    __slots__ = ("_history", "_lock", "_on_mode_change", "_own_hooks", "_settings", "_state", "_tools")

    def __init__(
        self,
        *,
        queue: ApprovalQueue,
        settings: PermissionSettings,
        mode: LayeredMode | None = None,
        tools: object = None,
        cwd: str | os.PathLike[str] | None = None,
        session_grants: GrantsLike | None = None,
        on_decision: Callable[[DecisionRecord], object] | None = None,
        clock: Clock | None = None,
        interactive: bool = True,
        on_project_grant: ProjectGrantHook | None = None,
        kinds: Mapping[str, str] | None = None,
        protected_paths: ProtectedPaths = PROTECTED_PATHS,
        checks: Iterable[object] | None = None,
        hooks: object = None,
        reviewer: Reviewer | None = None,
        reviewer_timeout: float | None = None,
        max_consecutive_denials: int = 3,
        max_total_denials: int = 20,
        exit_tool: str = "exit_plan_mode",
        on_mode_change: Callable[[ModeChange], object] | None = None,
        sandbox: SandboxLike | Callable[[LayeredPolicy], SandboxLike] | None = None,
        shadow: Evaluator | None = None,
        record_arguments: bool | Redactor = False,
    ) -> None:
        if not isinstance(settings, PermissionSettings):
            raise TypeError(f"settings: expected a PermissionSettings; got {preview(settings)}")
        if session_grants is not None and not callable(getattr(session_grants, "is_granted", None)):
            raise TypeError(
                f"session_grants: expected an object with is_granted(); got {preview(session_grants)}"
            )
        if reviewer is not None and not callable(reviewer):
            raise TypeError(f"reviewer: expected a callable; got {preview(reviewer)}")
        if on_mode_change is not None and not callable(on_mode_change):
            raise TypeError(f"on_mode_change: expected a callable; got {preview(on_mode_change)}")
        if not isinstance(protected_paths, ProtectedPaths):
            raise TypeError(f"protected_paths: expected ProtectedPaths; got {preview(protected_paths)}")
        self._settings: Final = settings
        chosen = self._read_mode(mode or settings.default_mode or "default")
        working = os.path.abspath(os.fspath(cwd)) if cwd is not None else settings.project_dir
        own_hooks = read_hooks(hooks)
        all_checks = read_checks(checks)
        version, sources = settings.snapshot()
        home = os.path.expanduser("~")
        read = read_kinds(kinds)
        state = _State(
            checks=all_checks,
            cwd=working,
            denials=DenialTracker(max_consecutive=max_consecutive_denials, max_total=max_total_denials),
            directories=(working, *settings.additional_directories),
            exit_tool=exit_tool,
            folded_kinds=folded_kinds(read),
            grants=session_grants,
            home=home,
            hooks=_settings_hooks(sources, own_hooks, read, home),
            interactive=interactive,
            kinds=read,
            mode=chosen,
            protected=protected_paths,
            queue=queue,
            reviewer=reviewer,
            reviewer_timeout=reviewer_timeout,
            rules=LayeredRules(sources, kinds=read, home=home),
            sandbox=None,
            tools=ToolRegistry(tools, layered=True),
            version=version,
        )
        # A sandbox made from the policy reads it (sandbox_view), so the state is in place first; and it is
        # made before the engine observes the queue, so a sandbox that cannot be built leaves nothing behind.
        self._own_hooks: Final = own_hooks
        self._state = state
        self._lock: Final = threading.Lock()
        if sandbox is not None:
            state = self._state = state.with_changes(sandbox=self._read_sandbox(sandbox))
        used = (("hook", state.hooks), ("check", all_checks), ("sandbox", state.sandbox is not None))
        unused = [name for name, is_used in used if not is_used]
        super().__init__(
            table=_TABLE.without(*unused) if unused else _TABLE,
            queue=queue,
            clock=clock,
            on_decision=on_decision,
            interactive=interactive,
            scopes=self._scope_plan,
            on_project_grant=on_project_grant,
            shadow=shadow,
            record_arguments=record_arguments,
            honoured={
                **ONCE_ONLY,
                "session": "adds an allow rule for exactly this call to the session's rules",
                "project": f"always: writes an allow rule for exactly this call to {settings.local_path}",
            },
        )
        self._history: list[ModeChange] = []
        self._on_mode_change: Final = on_mode_change
        self._tools: Final = tools

    # -- readers ----------------------------------------------------------------------------------------

    @property
    def settings(self) -> PermissionSettings:
        """The settings the rules come from."""
        return self._settings

    @property
    def cwd(self) -> str:
        """The working directory (path rules' ``./`` and acceptEdits' inside)."""
        return self._state.cwd

    @property
    def sandbox(self) -> SandboxLike | None:
        """The walls the host runs shell calls in, or ``None``."""
        return self._state.sandbox

    def sandbox_view(self) -> SandboxView:
        """What a sandbox built from this policy reads of it now: the working directories, the protected
        paths, the path and domain rules (deny, then ask, then allow) and the settings files."""
        state = self._current()
        sources = self._settings.sources
        files = (*(source.path for source in sources if source.path), self._settings.local_path)
        return sandbox_view(
            state.rules.rules,
            kinds=state.kinds,
            tools=state.tools,
            cwd=state.cwd,
            home=state.home,
            directories=state.directories,
            protected=state.protected,
            settings_files=tuple(dict.fromkeys(files)),
            version=state.version,
        )

    @property
    def denials(self) -> DenialTracker:
        """auto mode's circuit breaker (``reset()`` hands asks back to the reviewer)."""
        return self._state.denials

    @property
    def mode_history(self) -> list[ModeChange]:
        """Every change of mode so far, oldest first (a fresh list)."""
        with self._lock:
            return list(self._history)

    @property
    def mode(self) -> LayeredMode:
        """The mode; assign to change it at run time (the change is logged, kept in ``mode_history`` and
        given to ``on_mode_change``).

        Raises:
            ValueError: an unknown mode, or ``bypassPermissions`` while a settings source disables it.
        """
        return self._state.mode

    @mode.setter
    def mode(self, mode: LayeredMode) -> None:
        mode = self._read_mode(mode)
        with self._lock:
            old = self._state.mode
            if old == mode:
                return
            self._state = self._state.with_changes(mode=mode)
            change = ModeChange(old, mode, self.clock())
            self._history.append(change)
        _logger.info("Permission mode changed from %s to %s", old, mode)
        if self._on_mode_change is not None:
            self._on_mode_change(change)

    def tool_references(self) -> list[ToolReference]:
        """Every place the policy names tools: each settings rule (named by its file and list position),
        ``kinds``, the hooks' matchers and the ``tools`` registry's names (see ``require_known_tools``)."""
        state = self._current()
        paths = {source.name: source.path for source in self._settings.sources}
        references: list[ToolReference] = []
        for rule in state.rules.rules:
            path = paths.get(rule.source)
            where = (
                f"{path if path else rule.source + ' settings'}: permissions.{rule.decision}[{rule.position}]"
            )
            reference = pattern_reference(
                where, rule.parsed.tool_pattern, rule.text, folds=rule.decision != "allow"
            )
            if reference is not None:
                references.append(reference)
        references.extend(name_references("kinds", state.kinds, "kind"))
        references.extend(hook_references(state.hooks))
        references.extend(name_references("tools", registry_names(self._tools) or (), "tool"))
        return references

    def __repr__(self) -> str:
        state = self._state
        return f"<LayeredPolicy mode={state.mode!r} rules={len(state.rules)} cwd={state.cwd!r}>"

    # -- the engine's needs -------------------------------------------------------------------------------

    def _read_sandbox(self, sandbox: object) -> SandboxLike:
        """The policy's sandbox: the one given, or the one a function of the policy makes."""
        if not _is_sandbox(sandbox) and callable(sandbox):
            sandbox = sandbox(self)
        if not _is_sandbox(sandbox):
            raise TypeError(
                "sandbox: expected a sandbox (with cwd, command() and run()) or a function of the policy "
                f"that makes one (Sandbox.from_policy); got {preview(sandbox)}"
            )
        walls: SandboxLike = sandbox  # type: ignore[assignment]  # checked structurally above
        cwd = self._state.cwd
        theirs: object = walls.cwd  # a host's own sandbox may get this wrong
        if not isinstance(theirs, str) or os.path.realpath(theirs) != os.path.realpath(cwd):
            raise ValueError(
                f"sandbox: its working directory {preview(walls.cwd)} is not the policy's ({cwd!r}): the "
                "safety checks would read the commands' paths against another folder than they run in"
            )
        return walls

    def _read_mode(self, mode: object) -> LayeredMode:
        known = read_layered_mode(mode)
        if known == "bypassPermissions" and self._settings.bypass_disabled:
            raise ValueError(
                f"bypassPermissions mode is disabled by the {self._settings.bypass_disabled_by} settings "
                "(disableBypassPermissionsMode)"
            )
        return known

    def _facts(
        self, name: str, arguments: object, call_id: object, context: object, *, dry_run: bool = False
    ) -> _Call:
        return _Call(self._current(), name, arguments, call_id, context, dry_run=dry_run)

    def _current(self) -> _State:
        """The state, with rules rebuilt if the settings changed since they were built."""
        state = self._state
        if self._settings.version == state.version:
            return state
        with self._lock:
            version, sources = self._settings.snapshot()
            if self._state.version != version:
                self._state = self._state.with_changes(
                    rules=LayeredRules(sources, kinds=self._state.kinds, home=self._state.home),
                    hooks=_settings_hooks(sources, self._own_hooks, self._state.kinds, self._state.home),
                    version=version,
                )
            return self._state

    def _suggest(self, facts: _Call, decided: Decided) -> list[str] | None:
        # Only where an allow rule would change the answer: one never lifts an ask rule or a safety check.
        if decided.layer != "default":
            return None
        return suggestions_for(facts) or None

    def _call_scopes(self, facts: _Call, decided: Decided) -> dict[ResolutionScope, str]:
        # An allow rule changes the answer only where nothing but the default asked (as for suggestions),
        # and only a rule that says exactly this call is written: otherwise a yes counts for the call alone.
        rules = rules_for_call(facts.state, facts.name, facts.arguments) if decided.layer == "default" else []
        if not rules:
            return dict(ONCE_ONLY)
        listed = ", ".join(rules)
        return {
            **ONCE_ONLY,
            "session": f"adds {listed} to the session's allow rules",
            "project": f"always: writes {listed} to {self._settings.local_path}",
        }

    # -- persisted answers ----------------------------------------------------------------------------------

    def _scope_plan(self, action: Action, hook: ProjectGrantHook | None) -> Callable[[], object] | None:
        """``"session"`` adds an allow rule for the call to the session source; ``"project"`` writes it to
        the local settings file (and tells the host's hook)."""
        rules = rules_for_call(self._current(), action.tool_name, action.approved_args)
        if not rules:
            return None
        if action.resolution_scope == "session":
            return lambda: self._settings.add_rules("session", allow=rules)
        if action.resolution_scope == "project":

            def persist() -> None:
                self._settings.persist(allow=rules)
                if hook is not None:
                    hook(action)

            return persist
        return None


def _is_sandbox(value: object) -> bool:
    return callable(getattr(value, "run", None)) and callable(getattr(value, "command", None))


def _settings_hooks(sources: Iterable[Any], own: Hooks, kinds: Mapping[str, ToolKind], home: str) -> Hooks:
    """The hooks of every settings source (highest first), then the host's own. A matcher's path specifiers
    are read as the source's rules are, from the source's anchor."""
    collected: list[Any] = []
    written_kinds = {name: kind.text for name, kind in kinds.items()}
    for source in sources:
        if source.hooks:
            base = os.path.dirname(source.path) if source.path else source.anchor
            try:
                read = Hooks.from_config(
                    source.hooks,
                    path="hooks",
                    base_dir=base,
                    kinds=written_kinds,
                    cwd=source.anchor,
                    home=home,
                )
            except InvalidSnapshotError as error:  # named by its file, as a rule's error is
                place = source_place(source.path, source.name, error.path, error.value)
                raise InvalidSnapshotError(f"{place}: {error}", path=error.path, value=error.value) from None
            collected.extend(read)
    collected.extend(own)
    return Hooks(collected)


def _call_facts(state: _State, name: str, arguments: object) -> _Call:
    return _Call(state, name, arguments, None, None)


def rules_for_call(state: _State, name: str, arguments: object) -> list[str]:
    """The allow rule texts that let exactly this call through again (the whole tool when its kind has no
    specifier to say more)."""
    call = _call_facts(state, name, arguments)
    kind = call.kind
    if kind is None:
        return [name] if _allows(name, call) else []
    texts: list[str] = []
    if kind.kind == "shell":
        words = _single_command(call)
        texts = [] if words is None else [f"{name}({specifier_text(words)})"]
    elif kind.kind == "path":
        texts = [f"{name}(/{path})" for path in call.paths() or () if not _GLOB.search(path)]
    else:
        host = _host(call.url())
        texts = [] if host is None or _GLOB.search(host) else [f"{name}(domain:{host})"]
    return [text for text in texts if _allows(text, call)]


# A path or host holding one of these would be a wildcard as rule text (path specifiers have no escapes).
_GLOB: Final = re.compile(r"[*?\[]")


def _single_command(call: _Call) -> tuple[str, ...] | None:
    """The words of the call's command when it is one understood command without assignments: what a rule
    for exactly it is written from (each word quoted as needed, so a ``*`` in it stays a ``*``)."""
    command = call.command()
    parsed = None if command is None else read_command(command)
    if parsed is None or not parsed.understood or len(parsed.subcommands) != 1:
        return None
    sub = parsed.subcommands[0]
    return None if sub.assignments or not sub.words else sub.words


def _host(url: str | None) -> str | None:
    if url is None:
        return None
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return None
    return host or None


def suggestions_for(call: _Call) -> list[str]:
    """Rule texts a person could accept instead of a one-off yes, each matching this very call and none
    broader than its own command prefix or directory: the exact call, then its first two words with any
    arguments (``Bash(git diff *)``) or its directory (``Edit(./src/**)``)."""
    state = call.state
    name = call.name
    kind = call.kind
    found: list[str] = []
    if kind is None:
        found = [name]
    elif kind.kind == "shell":
        words = _single_command(call)
        if words is not None:
            found.append(f"{name}({specifier_text(words)})")
            parsed = read_command(call.command() or "")
            if len(words) >= 3 and not parsed.subcommands[0].wrappers:
                found.append(f"{name}({specifier_text(words[:2])} *)")
    elif kind.kind == "path":
        for path in call.paths() or ():
            relative = _relative(path, state.cwd)
            if _GLOB.search(relative):
                continue  # as rule text it would be a wildcard: only a one-off yes says "this file"
            found.append(f"{name}({relative})")
            directory = posixpath.dirname(relative) if relative.startswith("./") else None
            if directory:
                found.append(f"{name}({directory}/**)")
    else:
        host = _host(call.url())
        if host is not None and not _GLOB.search(host):
            found.append(f"{name}(domain:{host})")
    return [text for text in dict.fromkeys(found) if _allows(text, call)]


def _allows(rule: str, call: _Call) -> bool:
    """Whether a suggested rule text reads, and allows the call it was made for (else it is not offered)."""
    state = call.state
    try:
        parsed = parse_rule_text(rule, "allow", kinds=state.kinds, cwd=state.cwd, home=state.home)
    except (RuleTextError, TypeError):
        return False
    pattern = parsed.argument_pattern
    return parsed.tool_pattern == call.name and (pattern is None or pattern.matches(call.arguments, "allow"))


def _relative(path: str, cwd: str) -> str:
    working = cwd.rstrip("/") + "/"
    return "./" + path[len(working) :] if path.startswith(working) else "/" + path
