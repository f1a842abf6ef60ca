"""ApprovalPolicy: the gem's nine-layer ``before_tool_call`` hook, as a table on the pipeline engine.

The table below is the policy: read it top to bottom. Each entry's name is what decision records report
(the gem's fifth layer is two entries, a session grant and a project grant; its eighth is three, in its code
order: ``ask_before_changes``, ``elevated_risk``, ``approval_required``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

from ask_permissions._errors import preview
from ask_permissions._names import fold_tool_name
from ask_permissions._tool_call import ToolCall
from ask_permissions._vocabulary import (
    POLICY_DEFAULTS,
    Classifier,
    Clock,
    Decision,
    GrantsLike,
    Mode,
    PolicyDefault,
    Redactor,
    ResolutionScope,
    UnknownTools,
)
from ask_permissions.policy._records import Evaluator
from ask_permissions.rules._patterns import ALL, ToolPattern, normalize_tool_pattern
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import RuleMatch

from ._checks import Check, read_checks, run_checks
from ._engine import Engine
from ._hooks import Hooks, hook_layer, read_hooks
from ._modes import read_mode
from ._outcome import ProjectGrantHook, grants_plan, grants_scopes
from ._records import DecisionRecord, MatchedRule
from ._rules_reader import Reading, rules_reader
from ._table import UNATTENDED, Decided, Layer, Opinion, Table, Texts
from ._tool_metadata import ToolMetadata, ToolRegistry
from ._tool_names import (
    BESIDE_REGISTRY,
    ToolReference,
    hook_references,
    name_references,
    pattern_references,
    read_unknown_tools,
    registry_names,
    require_known_tools,
    rule_references,
)

if TYPE_CHECKING:
    from ask_permissions.queue._queue import ApprovalQueue

__all__ = ["APPROVAL_LAYERS", "ApprovalPolicy", "approval_references"]

RequireApproval: TypeAlias = "ToolPattern | Iterable[ToolPattern] | None"


@final
class _State:
    """What the layers read of the policy: fixed when it is built."""

    __slots__ = (
        "checks",
        "cwd",
        "default",
        "hooks",
        "interactive",
        "mode",
        "project_grants",
        "queue",
        "requires_approval",
        "rules",
        "session_grants",
        "tools",
    )

    def __init__(
        self,
        *,
        rules: Reading,
        requires_approval: Callable[[str], bool],
        tools: ToolRegistry,
        mode: Mode | None,
        session_grants: GrantsLike | None,
        project_grants: GrantsLike | None,
        queue: ApprovalQueue,
        interactive: bool,
        checks: tuple[Check, ...],
        hooks: Hooks,
        cwd: str,
        default: Opinion,
    ) -> None:
        self.checks = checks
        self.default = default
        self.hooks = hooks
        self.cwd = cwd
        self.rules = rules
        self.requires_approval = requires_approval
        self.tools = tools
        self.mode = mode
        self.session_grants = session_grants
        self.project_grants = project_grants
        self.queue = queue
        self.interactive = interactive


@final
class _Call:
    """One call's facts for the gem's layers: its rules decision and tool metadata, each read once."""

    __slots__ = ("arguments", "call_id", "context", "decision", "name", "rule_match", "state", "tool")

    def __init__(self, state: _State, name: str, arguments: object, call_id: object, context: object) -> None:
        self.state = state
        self.name = name
        self.arguments = arguments
        self.call_id = call_id
        self.context = context
        self.decision: Decision | None
        self.rule_match: RuleMatch | None
        self.decision, self.rule_match = state.rules(name, arguments)
        self.tool: ToolMetadata = state.tools.lookup(name)

    @property
    def interactive(self) -> bool:
        return self.state.interactive

    @property
    def match(self) -> MatchedRule | None:
        return None if self.rule_match is None else MatchedRule.from_match(self.rule_match)

    def queue_approves(self) -> bool:
        return self.state.queue.would_auto_approve(self.name)

    def with_arguments(self, arguments: object) -> _Call:
        return _Call(self.state, self.name, arguments, self.call_id, self.context)


_BLOCK: Final = Opinion("block")
_ASK: Final = Opinion("ask")
_ASK_AUTO_APPROVABLE: Final = Opinion("ask", auto_approvable=True)
_PROCEED: Final = Opinion("proceed")


def _deny_rule(call: _Call) -> Opinion | None:
    """1. An explicit deny rule always blocks; no grant bypasses it."""
    return _BLOCK if call.decision == "deny" else None


def _read_limit(call: _Call) -> Opinion | None:
    """1b. A deny or ask rule that could not read the command (past the read limit) asks a person, whatever
    else says yes: the command is neither allowed nor blocked for its length alone."""
    match = call.rule_match
    return None if match is None or match.unread is None else Opinion("ask", match.unread)


def _always_ask(call: _Call) -> Opinion | None:
    """2. A tool that declares always_ask is asked, never auto-approved, whatever else says yes."""
    return _ASK if call.tool.always_ask else None


def _read_only(call: _Call) -> Opinion | None:
    """3. read_only mode blocks every tool whose side-effect scope is not "none"; no grant bypasses it."""
    return _BLOCK if call.state.mode == "read_only" and call.tool.has_side_effects else None


def _check(call: _Call) -> Opinion | None:
    """3b. The host's check functions: deny beats ask beats modify beats allow; all but a deny must still
    pass the guards."""
    checks = call.state.checks
    return run_checks(checks, ToolCall(call.name, call.arguments, call.call_id)) if checks else None


def _allow_rule(call: _Call) -> Opinion | None:
    """4. An explicit allow rule proceeds, winning over require_approval and risk."""
    return _PROCEED if call.decision == "allow" else None


def _session_grant(call: _Call) -> Opinion | None:
    """5a. A session grant proceeds past every ordinary ask below.

    Only the object True grants (as auto_approve requires): a collaborator answering "yes", 1 or a non-empty
    list by mistake does not open a tool.
    """
    grants = call.state.session_grants
    return _PROCEED if grants is not None and grants.is_granted(call.name) is True else None


def _project_grant(call: _Call) -> Opinion | None:
    """5b. A project grant proceeds past every ordinary ask below (True only, as for session grants)."""
    grants = call.state.project_grants
    return _PROCEED if grants is not None and grants.is_granted(call.name) is True else None


def _ask_rule(call: _Call) -> Opinion | None:
    """6. An ordinary ask rule asks, never auto-approved."""
    return _ASK if call.decision == "ask" else None


def _full_access(call: _Call) -> Opinion | None:
    """7. full_access mode proceeds past the ordinary risk gates below."""
    return _PROCEED if call.state.mode == "full_access" else None


def _ask_before_changes(call: _Call) -> Opinion | None:
    """8a. ask_before_changes mode asks before any tool with side effects (never auto-approved)."""
    return _ASK if call.state.mode == "ask_before_changes" and call.tool.has_side_effects else None


def _elevated_risk(call: _Call) -> Opinion | None:
    """8b. A high or critical risk level asks (never auto-approved)."""
    return _ASK if call.tool.is_elevated_risk else None


def _approval_required(call: _Call) -> Opinion | None:
    """8c. require_approval or the tool's approval_required asks; auto-approvable when the tool says so."""
    tool = call.tool
    if tool.approval_required or call.state.requires_approval(call.name):
        return _ASK_AUTO_APPROVABLE if tool.auto_approvable else _ASK
    return None


def _default(call: _Call) -> Opinion | None:
    """9. Nothing decided: the policy's default — the gem's proceed (an unconfigured policy allows
    everything), or ask a person (a policy file's default)."""
    return call.state.default


_TABLE: Final[Table[_Call]] = Table(
    (
        Layer("hook", hook_layer, blocking=True),  # 0. hooks see the call first
        Layer("deny_rule", _deny_rule, guard=True),
        Layer("read_limit", _read_limit, guard=True),
        Layer("always_ask", _always_ask, guard=True),
        Layer("read_only", _read_only, guard=True),
        Layer("check", _check),
        Layer("allow_rule", _allow_rule),
        Layer("session_grant", _session_grant),
        Layer("project_grant", _project_grant),
        Layer("ask_rule", _ask_rule, guard=True),
        Layer("full_access", _full_access),
        Layer("ask_before_changes", _ask_before_changes),
        Layer("elevated_risk", _elevated_risk),
        Layer("approval_required", _approval_required),
        Layer("default", _default),
        UNATTENDED,
    ),
    Texts(
        {
            "deny_rule": "Denied by permission rules: '{tool}'",
            "read_only": "Read-only mode blocks tools with side effects ({tool})",
        }
    ),
)
"""The gem's layers, in order, with the hooks before them and the host's checks after the guards that only
read the tool's name: the first with an opinion decides; then the unattended rewrite; then the fixed texts
(every ask reads ``Tool '<name>' requires approval``)."""

_ABOVE_GRANTS: Final = frozenset(_TABLE.names[: _TABLE.names.index("session_grant")])
"""The layers a session or project grant cannot overrule."""

APPROVAL_LAYERS: Final = _TABLE.names
"""The names an ``ApprovalPolicy``'s decision records report, in the order the layers are consulted."""


def _require_approval_patterns(require_approval: object) -> tuple[ToolPattern, ...]:
    if require_approval is None:
        return ()
    if require_approval is ALL or isinstance(require_approval, str | re.Pattern):
        return (normalize_tool_pattern(require_approval, "require_approval"),)
    if isinstance(require_approval, Iterable):
        return tuple(
            normalize_tool_pattern(entry, f"require_approval[{position}]")
            for position, entry in enumerate(require_approval)
        )
    raise TypeError(
        f"require_approval: expected None, ALL, a tool name, a compiled regex or a list of those; "
        f"got {require_approval!r}"
    )


class _RequireApproval:
    """``require_approval``, matched as deny-side rules are: exact names also after folding, regexes also
    against the folded name, so ``Bash`` or ``bash\u200b`` still needs the approval ``bash`` needs."""

    __slots__ = ("_all", "_names", "_regexes")

    def __init__(self, patterns: tuple[ToolPattern, ...]) -> None:
        self._all = any(pattern is ALL for pattern in patterns)
        self._names = frozenset(fold_tool_name(pattern) for pattern in patterns if isinstance(pattern, str))
        self._regexes = tuple(pattern for pattern in patterns if isinstance(pattern, re.Pattern))

    def __call__(self, name: str) -> bool:
        if self._all:
            return True
        if not self._names and not self._regexes:
            return False
        folded = fold_tool_name(name)
        if folded in self._names:
            return True
        return any(
            regex.search(name) is not None or regex.search(folded) is not None for regex in self._regexes
        )


def approval_references(
    *,
    rules: object,
    require_approval: RequireApproval,
    auto_approve: Iterable[object],
    hooks: Iterable[object],
    tools: object,
) -> list[ToolReference]:
    """Where an ``ApprovalPolicy`` made of these parts names tools, each field as a policy file spells it."""
    references = list(rule_references(rules))
    references.extend(
        pattern_references(
            "require_approval",
            _require_approval_patterns(require_approval),
            single=require_approval is ALL or isinstance(require_approval, str | re.Pattern),
            kind="require_approval",
        )
    )
    references.extend(name_references("auto_approve", auto_approve, "auto_approve"))
    references.extend(hook_references(hooks))
    references.extend(name_references("tools", registry_names(tools) or (), "tool"))
    return references


def _require(value: object, method: str, field: str) -> Any:
    if value is not None and not callable(getattr(value, method, None)):
        raise TypeError(f"{field}: expected an object with a {method}() method; got {value!r}")
    return value


@final
class ApprovalPolicy(Engine[_Call]):
    """Decides each tool call through the gem's nine ordered layers; wire ``before_tool_call`` to your agent.

    Holds no mutable state of its own: it is as thread-safe as its queue, rules and grants.

    Args:
        queue: the ``ApprovalQueue`` calls that need a person go into (required).
        rules: a ``PermissionRules``, ``PermissionRuleSet`` or anything with ``classify``.
        require_approval: ``None``, ``ALL``, a tool name, a compiled regex, or a list of those.
        tools: the tool registry: a mapping of name to tool, a sequence of tools with a ``name``, or any
            object indexable by name. Tools declare ``approval_required``, ``auto_approvable``,
            ``always_ask``, ``risk_level`` and ``side_effect_scope``.
        mode: ``None``, ``"full_access"``, ``"ask_before_changes"`` or ``"read_only"``.
        session_grants: a ``SessionPermissionGrants`` (anything with ``is_granted``).
        project_grants: a host-owned collaborator with ``is_granted(tool_name)``.
        project_rules: the project's rules; composed with ``rules`` as a ``PermissionRuleSet``.
        clock: returns an aware ``datetime`` for decision records (default: now, UTC).
        on_decision: called with a ``DecisionRecord`` once per ``before_tool_call``, after the decision
            (and submission) took effect; its exceptions reach the caller.
        interactive: ``False`` for sessions no person attends: calls that would wait for a person are
            blocked instead (a call the queue approves by itself is still submitted).
        on_project_grant: called with an action a person approved with scope ``"project"`` (through
            ``approve``), so the host can record the grant in its own project store.
        checks: check functions (``check(fn)``, ``deny_all()``, ...) consulted after the deny rule,
            always_ask and read_only layers.
        hooks: PreToolUse hooks (command hooks, or functions of the call), consulted first.
        default: what a call no layer decided does: ``"proceed"`` (the gem's behaviour, kept so code
            written against it keeps working) or ``"ask"`` a person (what a policy file defaults to).
        unknown_tools: when ``tools`` lists its tools (a mapping, or a sequence of named tools),
            ``"error"`` refuses rules, ``require_approval`` entries, ``auto_approve`` entries and hook
            matchers that name none of them; ``"keep"`` keeps them, for tools that come later.
        shadow: another policy decided beside this one for every call (a dry run: ``evaluate``); where its
            outcome differs, the decision record carries it as ``shadow``. It never changes the call, and
            needs ``on_decision``.
        record_arguments: keep each call's arguments in its decision records (``True``), or what a
            redaction function ``(tool_name, arguments) -> arguments`` leaves of them; a replay of the
            records needs them. Off by default: arguments may hold secrets.

    Raises:
        ValueError: an unknown mode or default.
        UnknownToolError: a rule (or other entry) names no tool of ``tools`` (a ``ValueError``).
        TypeError: a collaborator of the wrong shape.
    """

    __slots__ = (
        "_default",
        "_mode",
        "_project_grants",
        "_require_approval",
        "_require_patterns",
        "_rules",
        "_session_grants",
        "_state",
        "_tools",
        "_unknown_tools",
    )

    def __init__(
        self,
        *,
        queue: ApprovalQueue,
        rules: Classifier | None = None,
        require_approval: RequireApproval = None,
        tools: object = None,
        mode: Mode | None = None,
        session_grants: GrantsLike | None = None,
        project_grants: GrantsLike | None = None,
        project_rules: Classifier | None = None,
        clock: Clock | None = None,
        on_decision: Callable[[DecisionRecord], object] | None = None,
        interactive: bool = True,
        on_project_grant: ProjectGrantHook | None = None,
        checks: Iterable[object] | None = None,
        hooks: object = None,
        default: PolicyDefault = "proceed",
        unknown_tools: UnknownTools = "error",
        shadow: Evaluator | None = None,
        record_arguments: bool | Redactor = False,
    ) -> None:
        mode = read_mode(mode)
        if default not in POLICY_DEFAULTS:
            raise ValueError(f"default: expected 'ask' or 'proceed'; got {preview(default)}")
        unknown_tools = read_unknown_tools(unknown_tools)
        _require(rules, "classify", "rules")
        if project_rules is not None:
            rules = PermissionRuleSet(default_rules=rules, project_rules=project_rules)
        session_grants = _require(session_grants, "is_granted", "session_grants")
        project_grants = _require(project_grants, "is_granted", "project_grants")
        read_hook_list = read_hooks(hooks)
        read_check_list = read_checks(checks)
        unused = [name for name, used in (("hook", read_hook_list), ("check", read_check_list)) if not used]
        super().__init__(
            table=_TABLE.without(*unused),
            queue=queue,
            clock=clock,
            on_decision=on_decision,
            interactive=interactive,
            scopes=grants_plan(session_grants),
            on_project_grant=on_project_grant,
            shadow=shadow,
            record_arguments=record_arguments,
            honoured=grants_scopes(session_grants, on_project_grant),
        )
        self._rules: Final = rules
        self._require_approval: Final = require_approval
        self._require_patterns: Final = _RequireApproval(_require_approval_patterns(require_approval))
        self._tools: Final = tools
        self._mode: Final = mode
        self._default: Final[PolicyDefault] = default
        self._unknown_tools: Final[UnknownTools] = unknown_tools
        self._session_grants: Final[GrantsLike | None] = session_grants
        self._project_grants: Final[GrantsLike | None] = project_grants
        self._state: Final = _State(
            rules=rules_reader(rules),
            requires_approval=self._require_patterns,
            tools=ToolRegistry(tools),
            mode=mode,
            session_grants=session_grants,
            project_grants=project_grants,
            queue=queue,
            interactive=interactive,
            checks=read_check_list,
            hooks=read_hook_list,
            cwd=os.getcwd(),
            default=_PROCEED if default == "proceed" else _ASK,
        )
        known = registry_names(tools)
        if unknown_tools == "error" and known is not None:
            # The registry lists the agent's tools: whatever names another tool is a mistake.
            require_known_tools(self, known, where="ApprovalPolicy(tools=...)", kinds=BESIDE_REGISTRY)

    # -- readers -------------------------------------------------------------------------------------

    @property
    def rules(self) -> Classifier | None:
        """The rules: as passed, or the ``PermissionRuleSet`` composed with ``project_rules``."""
        return self._rules

    @property
    def project_rules(self) -> Classifier | None:
        """The project layer of the composed rules, if ``project_rules`` was given."""
        return self._rules.project_rules if isinstance(self._rules, PermissionRuleSet) else None

    @property
    def require_approval(self) -> RequireApproval:
        """``require_approval`` as passed."""
        return self._require_approval

    @property
    def tools(self) -> object:
        """The tool registry as passed."""
        return self._tools

    @property
    def mode(self) -> Mode | None:
        """The access mode."""
        return self._mode

    @property
    def session_grants(self) -> GrantsLike | None:
        """The session grants collaborator."""
        return self._session_grants

    @property
    def project_grants(self) -> GrantsLike | None:
        """The project grants collaborator."""
        return self._project_grants

    @property
    def default(self) -> PolicyDefault:
        """What a call no layer decided does: ``"proceed"`` or ``"ask"``."""
        return self._default

    @property
    def unknown_tools(self) -> UnknownTools:
        """Whether rules for tools the registry does not list are refused (``"error"``) or kept; adapters
        follow it unless told otherwise."""
        return self._unknown_tools

    def tool_references(self) -> list[ToolReference]:
        """Every place the policy names tools: its rules, ``require_approval``, the queue's
        ``auto_approve``, its hooks' matchers and its ``tools`` registry's names (see
        ``require_known_tools``)."""
        return approval_references(
            rules=self._rules,
            require_approval=self._require_approval,
            auto_approve=self.queue.auto_approve,
            hooks=self._state.hooks,
            tools=self._tools,
        )

    def requires_approval(self, name: str) -> bool:
        """Whether ``require_approval`` names this tool (exactly, or after folding the name)."""
        return self._require_patterns(name)

    def __repr__(self) -> str:
        return f"<ApprovalPolicy mode={self._mode!r} interactive={self.interactive} rules={self._rules!r}>"

    def _facts(
        self, name: str, arguments: object, call_id: object, context: object, *, dry_run: bool = False
    ) -> _Call:
        return _Call(self._state, name, arguments, call_id, context)

    def _call_scopes(self, facts: _Call, decided: Decided) -> dict[ResolutionScope, str]:
        # A grant proceeds past the asks below the grant layers only: what a hook, always_ask or a check
        # asked, a grant does not lift, so a yes to it counts for the call alone.
        honoured = self.honoured_scopes
        if decided.layer in _ABOVE_GRANTS:
            return {"once": honoured["once"]}
        return honoured
