"""What a layered policy's layers read of one call: the policy's state at that moment, and the call's facts
(its subjects, the rule that decides it, the tool's metadata and own check), each worked out once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, final

from ask_permissions._errors import preview
from ask_permissions._vocabulary import (
    GrantsLike,
    LayeredMode,
    SandboxLike,
)
from ask_permissions.rules._text import BUILTIN_KINDS, ToolKind

from ._checks import Check, PermissionCheck
from ._hooks import Hooks
from ._layered_rules import LayeredMatch, LayeredRules
from ._records import MatchedRule
from ._reviewer import DenialTracker, Reviewer
from ._safety import ProtectedPaths
from ._subjects import Subjects, kind_of, read_subjects
from ._tool_metadata import ToolMetadata, ToolRegistry

if TYPE_CHECKING:
    from ask_permissions.queue._queue import ApprovalQueue


__all__ = ["LayeredCall", "LayeredState", "matched_rule"]


@final
class LayeredState:
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

    def with_changes(self, **changes: Any) -> LayeredState:
        return LayeredState(
            **{name: changes.get(name, getattr(self, name)) for name in LayeredState.__slots__}
        )

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
class LayeredCall:
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
        state: LayeredState,
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
        return None if self.matched is None else matched_rule(self.matched)

    def queue_approves(self) -> bool:
        return self.state.queue.would_auto_approve(self.name)

    def with_arguments(self, arguments: object) -> LayeredCall:
        return LayeredCall(self.state, self.name, arguments, self.call_id, self.context, dry_run=self.dry_run)

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


def _explained(state: LayeredState, name: str, subjects: Subjects) -> LayeredMatch | None:
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


def matched_rule(matched: LayeredMatch) -> MatchedRule:
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
