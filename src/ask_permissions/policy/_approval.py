"""ApprovalPolicy: the nine-layer before_tool_call hook, built as an ordered pipeline of named layers."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeAlias, final

from ask_permissions._clock import utc_now
from ask_permissions._names import fold_tool_name
from ask_permissions._tool_call import read_tool_call
from ask_permissions.rules._patterns import ALL, ToolPattern, normalize_tool_pattern
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules, RuleMatch, checked_decision, checked_match_decision
from ask_permissions.typing import Classifier, Clock, Decision, GrantsLike, HookAction, Mode, ResolutionScope

from ._arguments import same_arguments
from ._digest import args_digest
from ._outcome import Outcome, ProjectGrantHook, ScopeCarrier, rejection_text
from ._records import DecisionLayer, DecisionRecord, MatchedRule
from ._results import HookResult, block, pending, pending_reason, proceed
from ._tool_metadata import ToolMetadata, ToolRegistry

if TYPE_CHECKING:
    from ask_permissions.queue._queue import Action, ApprovalQueue

__all__ = ["MODES", "ApprovalPolicy"]

MODES: Final[tuple[Mode, ...]] = ("full_access", "ask_before_changes", "read_only")

RequireApproval: TypeAlias = "ToolPattern | Iterable[ToolPattern] | None"

_Verdict: TypeAlias = Literal["proceed", "block", "submit"]


class _Call(NamedTuple):
    """Everything the layers consult about one call, gathered once.

    A NamedTuple rather than a frozen dataclass: as immutable, and built in a third of the time on
    every tool call.
    """

    name: str
    arguments: Any
    call_id: Any
    decision: Decision | None
    match: RuleMatch | None
    tool: ToolMetadata


@dataclass(frozen=True, slots=True)
class _Opinion:
    """A layer's opinion: run, refuse, or submit to the queue for a person."""

    layer: DecisionLayer
    verdict: _Verdict
    reason: str = ""  # a block's reason; a submission's is the fixed pending text
    auto_approvable: bool = False


_Layer: TypeAlias = "Callable[[ApprovalPolicy, _Call], _Opinion | None]"


def _deny_rule(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """1. An explicit deny rule always blocks; no grant bypasses it."""
    if call.decision == "deny":
        return _Opinion("deny_rule", "block", f"Denied by permission rules: '{call.name}'")
    return None


def _always_ask(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """2. A tool that declares always_ask is queued, never auto-approved, whatever else says yes."""
    return _SUBMIT_ALWAYS_ASK if call.tool.always_ask else None


def _read_only(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """3. read_only mode blocks every tool whose side-effect scope is not "none"; no grant bypasses it."""
    if policy.mode == "read_only" and call.tool.has_side_effects:
        return _Opinion("read_only", "block", f"Read-only mode blocks tools with side effects ({call.name})")
    return None


def _allow_rule(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """4. An explicit allow rule proceeds, winning over require_approval and risk."""
    return _PROCEED_ALLOW_RULE if call.decision == "allow" else None


def _grant(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """5. A session grant, then a project grant, proceeds past every ordinary ask gate below."""
    # Only the object True grants (as auto_approve requires): a collaborator answering "yes", 1 or a
    # non-empty list by mistake does not open a tool.
    if policy.session_grants is not None and policy.session_grants.is_granted(call.name) is True:
        return _PROCEED_SESSION_GRANT
    if policy.project_grants is not None and policy.project_grants.is_granted(call.name) is True:
        return _PROCEED_PROJECT_GRANT
    return None


def _ask_rule(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """6. An ordinary ask rule is queued, never auto-approved."""
    return _SUBMIT_ASK_RULE if call.decision == "ask" else None


def _full_access(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """7. full_access mode proceeds past the ordinary risk gates below."""
    return _PROCEED_FULL_ACCESS if policy.mode == "full_access" else None


def _changes_risk_or_required(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """8. ask_before_changes, then elevated risk, then require_approval / metadata, in the gem's order.

    Only the last may submit as auto-approvable, and only when the tool declares it.
    """
    tool = call.tool
    if policy.mode == "ask_before_changes" and tool.has_side_effects:
        return _SUBMIT_ASK_BEFORE_CHANGES
    if tool.is_elevated_risk:
        return _SUBMIT_ELEVATED_RISK
    if tool.approval_required or policy.requires_approval(call.name):
        return _SUBMIT_AUTO_APPROVABLE if tool.auto_approvable else _SUBMIT_APPROVAL_REQUIRED
    return None


def _default(policy: ApprovalPolicy, call: _Call) -> _Opinion | None:
    """9. Nothing objected: proceed. An unconfigured policy allows everything."""
    return _PROCEED_DEFAULT


_PIPELINE: Final[tuple[_Layer, ...]] = (
    _deny_rule,
    _always_ask,
    _read_only,
    _allow_rule,
    _grant,
    _ask_rule,
    _full_access,
    _changes_risk_or_required,
    _default,
)
"""The nine layers, in order: the first with an opinion decides."""

_SUBMIT_ALWAYS_ASK: Final = _Opinion("always_ask", "submit")
_PROCEED_ALLOW_RULE: Final = _Opinion("allow_rule", "proceed")
_PROCEED_SESSION_GRANT: Final = _Opinion("session_grant", "proceed")
_PROCEED_PROJECT_GRANT: Final = _Opinion("project_grant", "proceed")
_SUBMIT_ASK_RULE: Final = _Opinion("ask_rule", "submit")
_PROCEED_FULL_ACCESS: Final = _Opinion("full_access", "proceed")
_SUBMIT_ASK_BEFORE_CHANGES: Final = _Opinion("ask_before_changes", "submit")
_SUBMIT_ELEVATED_RISK: Final = _Opinion("elevated_risk", "submit")
_SUBMIT_APPROVAL_REQUIRED: Final = _Opinion("approval_required", "submit")
_SUBMIT_AUTO_APPROVABLE: Final = _Opinion("approval_required", "submit", auto_approvable=True)
_PROCEED_DEFAULT: Final = _Opinion("default", "proceed")


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


def _require(value: object, method: str, field: str) -> Any:
    if value is not None and not callable(getattr(value, method, None)):
        raise TypeError(f"{field}: expected an object with a {method}() method; got {value!r}")
    return value


@final
class ApprovalPolicy:
    """Decides each tool call through nine ordered layers; wire ``before_tool_call`` into your agent.

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

    Raises:
        ValueError: an unknown mode.
        TypeError: a collaborator of the wrong shape.
    """

    __slots__ = (
        "_classify_shape",
        "_clock",
        "_explain",
        "_interactive",
        "_mode",
        "_on_decision",
        "_project_grants",
        "_queue",
        "_registry",
        "_require_approval",
        "_require_patterns",
        "_rules",
        "_scopes",
        "_session_grants",
        "_tools",
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
    ) -> None:
        if not callable(getattr(queue, "submit", None)):
            raise TypeError(f"queue: expected an ApprovalQueue; got {queue!r}")
        if mode is not None and mode not in MODES:
            raise ValueError(f"Unknown permission mode: {mode!r}")
        if not isinstance(interactive, bool):
            raise TypeError(f"interactive: expected a bool; got {interactive!r}")
        if on_decision is not None and not callable(on_decision):
            raise TypeError(f"on_decision: expected a callable; got {on_decision!r}")
        if clock is not None and not callable(clock):
            raise TypeError(f"clock: expected a callable returning an aware datetime; got {clock!r}")
        if on_project_grant is not None and not callable(on_project_grant):
            raise TypeError(f"on_project_grant: expected a callable; got {on_project_grant!r}")
        _require(rules, "classify", "rules")
        if project_rules is not None:
            rules = PermissionRuleSet(default_rules=rules, project_rules=project_rules)
        self._queue: Final = queue
        self._rules: Final = rules
        self._require_approval: Final = require_approval
        self._require_patterns: Final = _RequireApproval(_require_approval_patterns(require_approval))
        self._tools: Final = tools
        self._registry: Final = ToolRegistry(tools)
        self._mode: Final = mode
        self._session_grants: Final[GrantsLike | None] = _require(
            session_grants, "is_granted", "session_grants"
        )
        self._project_grants: Final[GrantsLike | None] = _require(
            project_grants, "is_granted", "project_grants"
        )
        self._clock: Final = clock or utc_now
        self._on_decision: Final = on_decision
        self._interactive: Final = interactive
        # Worked out once: how far the rules object can be trusted to explain its own classification.
        self._classify_shape: Final = _classify_shape(rules)
        self._explain: Final = getattr(rules, "explain", None)
        self._scopes: Final = ScopeCarrier(self._session_grants, on_project_grant)

    # -- readers -------------------------------------------------------------------------------------

    @property
    def queue(self) -> ApprovalQueue:
        """The approval queue."""
        return self._queue

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
    def clock(self) -> Clock:
        """The clock that stamps decision records."""
        return self._clock

    @property
    def on_decision(self) -> Callable[[DecisionRecord], object] | None:
        """The decision observer."""
        return self._on_decision

    @property
    def interactive(self) -> bool:
        """Whether a person can answer approvals in this session."""
        return self._interactive

    @property
    def on_project_grant(self) -> ProjectGrantHook | None:
        """The host's project-grant hook."""
        return self._scopes.on_project_grant

    def __repr__(self) -> str:
        return f"<ApprovalPolicy mode={self._mode!r} interactive={self._interactive} rules={self._rules!r}>"

    # -- deciding ------------------------------------------------------------------------------------

    def before_tool_call(self, tool_call: object, context: object = None) -> HookResult:
        """Decide one tool call: ``{"action": "proceed"}``, ``"block"`` with a reason, or ``"pending"``.

        A call that would be queued while an action for the same ``tool_call_id``, tool and arguments is
        still pending is not queued again: the result names that action (a host re-running a restored call,
        or a framework replaying a paused one, waits for the one decision).

        Args:
            tool_call: an object with ``name``, ``arguments`` and ``id``, or a mapping with those keys.
            context: accepted for hook compatibility; unused.

        Raises:
            Whatever ``on_decision`` raises, after the decision took effect; when the call was queued, the
            exception carries a note naming the action's id.
        """
        call, opinion = self._decide(tool_call)
        action_id: int | None = None
        result: HookResult
        if opinion.verdict == "proceed":
            result = proceed()
        elif opinion.verdict == "block":
            result = block(opinion.reason)
        else:
            action_id = self._submit(call, opinion)
            result = pending(action_id, pending_reason(call.name))
        if self._on_decision is not None:
            try:
                self._on_decision(self._record(call, opinion, action_id))
            except BaseException as error:
                if action_id is not None:
                    error.add_note(
                        f"ask_permissions: the call to {call.name!r} is queued as action {action_id} "
                        "(it stays queued; approve or reject it as usual)"
                    )
                raise
        return result

    def _submit(self, call: _Call, opinion: _Opinion) -> int:
        """Queue the call, unless an action for this very call is pending already: return its id."""
        if call.call_id is not None:
            for action in self._queue.pending_for_call(call.call_id):
                if action.tool_name == call.name and same_arguments(action.args, call.arguments):
                    return action.id
        return self._queue.submit(
            tool_call_id=call.call_id,
            tool_name=call.name,
            args=call.arguments,
            auto_approvable=opinion.auto_approvable,
            message=f'Calling "{call.name}" requires approval',
        )

    def evaluate(self, tool_call: object) -> DecisionRecord:
        """A dry run: the record of what ``before_tool_call`` would decide, changing nothing.

        Nothing is submitted and no callback or observer is called; a would-be submission has outcome
        ``"pending"`` and ``action_id`` ``None``.
        """
        call, opinion = self._decide(tool_call)
        return self._record(call, opinion, None)

    def lookup(self, action_id: int) -> Action | None:
        """The queued action with this id, or ``None`` (delegates to the queue)."""
        return self._queue.get(action_id)

    # -- resolving -----------------------------------------------------------------------------------

    def approve(self, action_id: int, *, scope: ResolutionScope = "once") -> Action | None:
        """Approve a queued action for a person, and carry its scope; return it, or ``None``.

        Resolves through the queue (``on_approve`` fires), then applies the scope: ``"session"`` grants the
        tool in ``session_grants``; ``"project"`` calls ``on_project_grant``. Without those, the approval
        counts for this call only. ``None`` when the id is unknown or no longer pending. Approving through
        the queue directly records the scope and applies nothing.

        Raises:
            ValueError: an unknown scope (nothing approved).
        """
        approved = self._queue.approve(action_id, scope=scope)
        if not approved:
            return None
        self._scopes.carry(approved[0])
        return approved[0]

    def reject(self, action_id: int, *, feedback: str | None = None) -> Action | None:
        """Reject a queued action for a person; ``feedback`` reaches the model. ``None`` if not pending.

        Raises:
            TypeError: ``feedback`` is not a string or None (nothing rejected).
        """
        rejected = self._queue.reject(action_id, feedback=feedback)
        return rejected[0] if rejected else None

    def outcome(self, result: HookResult, *, on_project_grant: ProjectGrantHook | None = None) -> Outcome:
        """What the host does with a call this policy decided: run it, refuse it, or wait.

        ``proceed`` runs; ``block`` refuses with its reason; ``pending`` reads the queued action as it is
        now: approved runs (its scope carried, once), rejected refuses with the person's feedback, pending
        waits, and an action the queue no longer knows refuses (fail closed). Call it again with the same
        result after a person answered. ``on_project_grant`` stands in for the policy's own hook.
        """
        if result["action"] == "proceed":
            return _RUN
        if result["action"] == "block":
            return Outcome("refuse", result["reason"])
        action = self._queue.get(result["action_id"])
        if action is None:
            return Outcome("refuse", result["reason"])
        if action.is_approved:
            self._scopes.carry(action, on_project_grant)
            return Outcome("run", None, action)
        if action.is_rejected:
            return Outcome("refuse", rejection_text(action), action)
        return Outcome("wait", result["reason"], action)

    def _decide(self, tool_call: object) -> tuple[_Call, _Opinion]:
        name, arguments, call_id = read_tool_call(tool_call)
        decision, match = self._classify(name, arguments)
        call = _Call(name, arguments, call_id, decision, match, self._registry.lookup(name))
        for layer in _PIPELINE:
            opinion = layer(self, call)
            if opinion is not None:
                if opinion.verdict == "submit" and not self._may_submit(call, opinion):
                    opinion = _Opinion(
                        opinion.layer,
                        "block",
                        f"Tool '{name}' requires approval, and no one can approve it in this session",
                    )
                return call, opinion
        raise AssertionError("the default layer always has an opinion")  # pragma: no cover

    def _classify(self, name: str, arguments: object) -> tuple[Decision | None, RuleMatch | None]:
        """The rules' decision (``classify``) and, when it agrees, the rule that explains it.

        A rules object is trusted to explain its own classification only when it is one of this package's
        (its explain is its classify); for any other, ``classify`` decides and ``explain`` only describes.
        """
        rules = self._rules
        if rules is None:
            return None, None
        if self._classify_shape == "self-explaining":
            match: RuleMatch | None = self._explain(name, arguments)  # type: ignore[misc]  # not None here
            return (None, None) if match is None else (match.decision, match)
        described: RuleMatch | None = None
        if self._explain is not None:
            found = self._explain(name, arguments)
            if found is not None:
                if not isinstance(found, RuleMatch):
                    raise TypeError(f"rules.explain({name!r}): expected a RuleMatch or None; got {found!r}")
                # A broken explainer is refused outright, before anything is decided.
                checked_match_decision(found.decision, f"rules.explain({name!r})")
                described = found
        decision = checked_decision(rules.classify(name, arguments), f"rules.classify({name!r})")
        if described is not None and described.decision != decision:
            described = None  # explain disagrees with classify: classify decides, nothing is described
        return decision, described

    def requires_approval(self, name: str) -> bool:
        """Whether ``require_approval`` names this tool (exactly, or after folding the name)."""
        return self._require_patterns(name)

    def _may_submit(self, call: _Call, opinion: _Opinion) -> bool:
        """Whether a submission can happen: a person can answer, or the queue approves it by itself.

        Unattended sessions turn every other would-be submission into a block, keeping the layer.
        """
        if self._interactive:
            return True
        return opinion.auto_approvable and self._queue.auto_approve.get(call.name) is True

    def _record(self, call: _Call, opinion: _Opinion, action_id: int | None) -> DecisionRecord:
        submitted = opinion.verdict == "submit"
        return DecisionRecord(
            tool=call.name,
            args_digest=args_digest(call.arguments),
            outcome=_OUTCOMES[opinion.verdict],
            layer=opinion.layer,
            rule=None if call.match is None else MatchedRule.from_match(call.match),
            reason=pending_reason(call.name) if submitted else opinion.reason or None,
            action_id=action_id,
            auto_approvable=submitted and opinion.auto_approvable,
            ts=self._clock(),
        )


_RUN: Final = Outcome("run")


def _classify_shape(rules: object) -> Literal["none", "self-explaining", "checked"]:
    """How the policy reads a rules object: not at all, through its own explain, or classify-then-describe."""
    if rules is None:
        return "none"
    return "self-explaining" if _explains_itself(rules) else "checked"


def _explains_itself(rules: object) -> bool:
    """Whether ``rules.explain`` is, by construction, the reading ``rules.classify`` makes."""
    if isinstance(rules, PermissionRules):
        return True
    if isinstance(rules, PermissionRuleSet):
        # A rule set explains with its layers' explain and classifies with their classify: they agree only
        # when every layer does.
        return all(
            layer is None or _explains_itself(layer) for layer in (rules.default_rules, rules.project_rules)
        )
    return False


_OUTCOMES: Final[Mapping[_Verdict, HookAction]] = {
    "proceed": "proceed",
    "block": "block",
    "submit": "pending",
}
