"""LayeredPolicy: seed 002's layered permission pipeline, its table (``_layered_table.py``) on the engine.

The policy holds what changes while it runs: its mode (and the history of mode changes), the rules rebuilt
from the settings when they change, the sandbox, and the rules a "don't ask again" answer persists.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, final

from ask_permissions._errors import InvalidSnapshotError, preview
from ask_permissions._vocabulary import (
    Clock,
    GrantsLike,
    LayeredMode,
    Redactor,
    ResolutionScope,
    SandboxLike,
)
from ask_permissions.policy._records import Evaluator
from ask_permissions.rules._text import ToolKind, read_kinds
from ask_permissions.settings._field_lines import source_place
from ask_permissions.settings._settings import PermissionSettings

from ._checks import read_checks
from ._engine import ONCE_ONLY, Engine
from ._hooks import Hooks, read_hooks
from ._layered_facts import LayeredCall, LayeredState
from ._layered_rules import LayeredRules
from ._layered_suggestions import rules_for_call, suggestions_for
from ._layered_table import LAYERED_TABLE
from ._modes import read_layered_mode
from ._outcome import ProjectGrantHook
from ._records import DecisionRecord
from ._reviewer import DenialTracker, Reviewer
from ._safety import PROTECTED_PATHS, ProtectedPaths
from ._sandbox_view import SandboxView, sandbox_view
from ._subjects import folded_kinds
from ._table import Decided
from ._tool_metadata import ToolRegistry
from ._tool_names import ToolReference, hook_references, name_references, pattern_reference, registry_names

if TYPE_CHECKING:
    from ask_permissions.queue._queue import Action, ApprovalQueue


__all__ = ["LayeredPolicy", "ModeChange"]

_logger: Final = logging.getLogger("ask_permissions.policy")


@final
@dataclass(frozen=True, slots=True)
class ModeChange:
    """A change of a layered policy's mode, as its history and ``on_mode_change`` report it."""

    old: LayeredMode
    new: LayeredMode
    ts: datetime


@final
class LayeredPolicy(Engine[LayeredCall]):
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
        state = LayeredState(
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
            table=LAYERED_TABLE.without(*unused) if unused else LAYERED_TABLE,
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
    ) -> LayeredCall:
        return LayeredCall(self._current(), name, arguments, call_id, context, dry_run=dry_run)

    def _current(self) -> LayeredState:
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

    def _suggest(self, facts: LayeredCall, decided: Decided) -> list[str] | None:
        # Only where an allow rule would change the answer: one never lifts an ask rule or a safety check.
        if decided.layer != "default":
            return None
        return suggestions_for(facts) or None

    def _call_scopes(self, facts: LayeredCall, decided: Decided) -> dict[ResolutionScope, str]:
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
