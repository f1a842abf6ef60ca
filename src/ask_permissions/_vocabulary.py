"""The vocabulary every module speaks: the closed sets of names, the small shapes and the protocols over them.

The ground floor of the package: it imports nothing of it, so every module may import it. Each closed set is a
``Literal`` with its values derived beside it (``get_args``), so a check never keeps a copy of its own.
``ask_permissions.typing`` is its public face, for hosts to annotate their own code with; the protocols that
need the package's classes (``PolicyLike``, ``Evaluator``, ``PreToolUseHook``, ``HookFunction``) live beside
those classes, and ``ask_permissions.typing`` re-exports them too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import (
    Any,
    Final,
    Literal,
    NotRequired,
    Protocol,
    Required,
    TypeAlias,
    TypedDict,
    TypeVar,
    get_args,
)

__all__ = [
    "ACTION_STATUSES",
    "AUTO_APPROVER",
    "DECISIONS",
    "EXPIRER",
    "HOOK_ACTIONS",
    "LAYERED_MODES",
    "MACHINE_DECIDERS",
    "MODES",
    "POLICY_DECIDER",
    "POLICY_DEFAULTS",
    "RECORD_VERDICTS",
    "REVIEWER",
    "RULE_DECIDER",
    "SCOPES",
    "SETTINGS_SOURCES",
    "UNKNOWN_TOOLS",
    "ActionStatus",
    "Answer",
    "ApprovalLayer",
    "AskExplanation",
    "BlockResult",
    "Classifier",
    "Clock",
    "CommandHookConfig",
    "Decision",
    "DecisionLayer",
    "GrantsLike",
    "HookAction",
    "HookMatcherConfig",
    "HookResult",
    "HooksConfig",
    "LayeredLayer",
    "LayeredMode",
    "Mode",
    "OutcomeVerdict",
    "PathShape",
    "PendingResult",
    "PermissionDecision",
    "PermissionRequest",
    "PolicyDefault",
    "ProceedResult",
    "RecordVerdict",
    "Redactor",
    "ResolutionScope",
    "Resolver",
    "ReviewRequest",
    "RuleSetLayer",
    "SandboxLike",
    "SandboxRunLike",
    "SettingsSourceName",
    "ToolCallLike",
    "UnknownTools",
    "one_of",
]

Decision: TypeAlias = Literal["allow", "ask", "deny"]
"""A rule's decision: ``"allow"`` runs the tool, ``"ask"`` queues it for a person, ``"deny"`` blocks it."""
DECISIONS: Final[tuple[Decision, ...]] = get_args(Decision)

ActionStatus: TypeAlias = Literal["pending", "applying", "approved", "rejected"]
"""A queued action's status: ``"pending"`` until resolved, ``"applying"`` while its callback runs,
then ``"approved"`` or ``"rejected"``."""
ACTION_STATUSES: Final[tuple[ActionStatus, ...]] = get_args(ActionStatus)

HookAction: TypeAlias = Literal["proceed", "block", "pending"]
"""What a ``before_tool_call`` hook tells the host: run the tool, refuse it, or wait for a person."""
HOOK_ACTIONS: Final[tuple[HookAction, ...]] = get_args(HookAction)

Mode: TypeAlias = Literal["full_access", "ask_before_changes", "read_only"]
"""An access mode: ``"full_access"`` bypasses ordinary risk gates, ``"ask_before_changes"`` queues
side-effecting tools, ``"read_only"`` blocks them."""
MODES: Final[tuple[Mode, ...]] = get_args(Mode)

OutcomeVerdict: TypeAlias = Literal["run", "refuse", "wait"]
"""What a host does with a decided call: ``"run"`` the tool, ``"refuse"`` it (the model reads the reason), or
``"wait"`` for a person."""

RecordVerdict: TypeAlias = Literal[
    "allow",
    "allow_modified",
    "deny",
    "ask",
    "ask_allowed",
    "ask_denied",
    "ask_unresolved",
    "ask_expired",
    "cancelled",
]
"""A decision record's verdict, in seed 001's vocabulary: ``allow`` / ``allow_modified`` (run, with replaced
arguments) / ``deny``; ``ask`` before a person answers, then ``ask_allowed`` or ``ask_denied``;
``ask_unresolved`` when nobody could answer (no resolver, or an unattended session), ``ask_expired`` past the
ask's deadline, ``cancelled`` when the caller gave up waiting."""
RECORD_VERDICTS: Final[tuple[RecordVerdict, ...]] = get_args(RecordVerdict)

LayeredMode: TypeAlias = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
"""A ``LayeredPolicy``'s mode (seed 002): ``default`` asks what no rule allows; ``acceptEdits`` also allows
edits inside the working directories; ``plan`` allows only read-only tools; ``bypassPermissions`` allows what
no deny rule, ask rule or safety check stops; ``dontAsk`` blocks what would ask; ``auto`` lets a reviewer
answer asks."""
LAYERED_MODES: Final[tuple[LayeredMode, ...]] = get_args(LayeredMode)

SettingsSourceName: TypeAlias = Literal["managed", "user", "project", "local", "cli", "command", "session"]
"""A settings source, highest priority first (seed 002's policySettings → session)."""
SETTINGS_SOURCES: Final[tuple[SettingsSourceName, ...]] = get_args(SettingsSourceName)

ResolutionScope: TypeAlias = Literal["once", "session", "project"]
"""How far a person's approval reaches: this call only, the session, or the project."""
SCOPES: Final[tuple[ResolutionScope, ...]] = get_args(ResolutionScope)

# Who decided, when no person did: the ``decided_by`` of actions and decision records that machine paths
# write (anything else there is a person's name, or a host's own).
AUTO_APPROVER: Final = "auto_approve"
"""``decided_by`` of an ask the queue's drain approved by itself (the tool is in ``auto_approve``)."""
EXPIRER: Final = "expiry"
"""``decided_by`` of an ask that expired: ``expire_pending``'s rejections, a policy's past its deadline."""
POLICY_DECIDER: Final = "policy"
"""``decided_by`` of the rejections a policy makes itself (nobody could answer; the resolver failed)."""
RULE_DECIDER: Final = "rule"
"""``decided_by`` of a decision the policy's own layers took."""
REVIEWER: Final = "reviewer"
"""``decided_by`` (and ``rule_id``) of ``auto`` mode's reviewer's decisions."""
MACHINE_DECIDERS: Final = frozenset({AUTO_APPROVER, EXPIRER, POLICY_DECIDER, RULE_DECIDER, REVIEWER})
"""Every machine path's ``decided_by``: no person may answer under one of these names (records, ``audit``
and ``suggest`` read them as no person's answer)."""


class AskExplanation(TypedDict):
    """Why a queued call waits for a person (``Action.why``), as the policy that queued it saw it.

    ``layer`` is the decision layer that asked; ``rule`` the deciding rule's text (or the id of the hook or
    check function that asked), ``None`` when no rule did; ``source`` where that rule came from (a settings
    source), when the policy knows; ``reason`` the text the model reads; ``suggestions`` the rules a
    "don't ask again" answer would write (empty when there are none). ``scopes``, set by the package's
    policies, maps each answer the agent's host carries out for this call (``once``, ``session``,
    ``project``) to what it does; an answer missing from it would not be honoured.
    """

    layer: str
    rule: str | None
    source: str | None
    reason: str
    suggestions: list[str]
    scopes: NotRequired[dict[ResolutionScope, str]]


RuleSetLayer: TypeAlias = Literal["default", "project"]
"""Which layer of a ``PermissionRuleSet`` a rule came from."""

PathShape: TypeAlias = Literal["exact", "tree", "partial", "anywhere"]
"""What a path specifier matches beyond its literal part (``PathPattern.fixed_part``): ``"exact"`` that one
path, ``"tree"`` everything inside it, ``"partial"`` some names inside it, ``"anywhere"`` a name at any
depth."""

PolicyDefault: TypeAlias = Literal["ask", "proceed"]
"""What an ``ApprovalPolicy`` does with a call nothing decided: ``"ask"`` a person (a policy file's default),
or ``"proceed"`` (the gem's "unconfigured means allow", ``ApprovalPolicy``'s own default)."""
POLICY_DEFAULTS: Final[tuple[PolicyDefault, ...]] = get_args(PolicyDefault)

UnknownTools: TypeAlias = Literal["error", "keep"]
"""What to do where the tools are known and a rule names none of them: ``"error"`` refuses the policy (a
typo must not pass quietly); ``"keep"`` keeps such rules, for tools that come later."""
UNKNOWN_TOOLS: Final[tuple[UnknownTools, ...]] = get_args(UnknownTools)


class ProceedResult(TypedDict):
    """The tool call may run: ``{"action": "proceed"}``.

    ``arguments`` appears only when a check, hook or layer replaced the model's arguments: run the tool
    with these instead. ``sandboxed`` appears (``True``) only when the call proceeds because it runs in the
    policy's sandbox: run it through ``sandbox.run`` (or ``sandbox.command``), never outside.
    """

    action: Literal["proceed"]
    arguments: NotRequired[Any]
    sandboxed: NotRequired[bool]


class BlockResult(TypedDict):
    """The tool call is refused: ``{"action": "block", "reason": "..."}``."""

    action: Literal["block"]
    reason: str


class PendingResult(TypedDict):
    """The tool call waits for a person: ``{"action": "pending", "action_id": 1, "reason": "..."}``.

    ``action_id`` is the approval queue's id of the submitted action. ``arguments`` appears only when the
    queued call's arguments replaced the model's (what a person approves is what runs); ``suggestions`` only
    from policies that can offer rules a person could accept instead of a one-off yes.
    """

    action: Literal["pending"]
    action_id: int
    reason: str
    arguments: NotRequired[Any]
    suggestions: NotRequired[list[str]]


HookResult: TypeAlias = ProceedResult | BlockResult | PendingResult
"""Any of the three shapes a ``before_tool_call`` hook returns; ``result["action"]`` tells them apart."""


ApprovalLayer: TypeAlias = Literal[
    "hook",
    "deny_rule",
    "read_limit",
    "always_ask",
    "read_only",
    "check",
    "allow_rule",
    "session_grant",
    "project_grant",
    "ask_rule",
    "full_access",
    "ask_before_changes",
    "elevated_risk",
    "approval_required",
    "default",
]
"""The layers of an ``ApprovalPolicy``, in the order it consults them: the names its records report. The
gem's nine are here with hooks before them and the host's checks after the name-only guards; its fifth layer
is two (session, then project grant), its eighth three, in its code order. ``read_limit`` asks for a
command a deny or ask rule could not read (past the read limit)."""

LayeredLayer: TypeAlias = Literal[
    "hook",
    "read_limit",
    "deny_rule",
    "ask_rule",
    "tool_check",
    "check",
    "safety_check",
    "mode",
    "allow_rule",
    "sandbox",
    "default",
]
"""The layers of a ``LayeredPolicy``, in the order it consults them (seed 002's order, with ``read_limit``
before the rules: a shell command past the read limit asks a person, whatever the mode): the names its
records report. ``sandbox``: a shell call no rule decided proceeds because it runs in the policy's sandbox."""

DecisionLayer: TypeAlias = ApprovalLayer | LayeredLayer | Literal["resolution"]
"""The layer that decided a call, as a ``DecisionRecord`` reports it (``"resolution"``: a record of how an
ask ended, when the record of the ask itself is no longer known)."""


class PermissionRequest(TypedDict):
    """What a person is asked to decide: the queued action, the call it stands for and why it waits.

    ``layer`` is the decision layer that asked, ``rule`` the deciding rule's text (or the hook or check that
    asked), ``source`` where the rule came from (a settings source), and ``suggestions`` the rules a "don't
    ask again" answer would write: the action's ``why`` (``None`` and ``[]`` for an action queued without
    one). ``error`` is there only when the person's previous answer could not be read; it says what was
    wrong. JSON-safe as long as the tool's arguments are.
    """

    action_id: int
    tool_call_id: str | None
    tool: str
    args: Any
    reason: str
    layer: str | None
    rule: str | None
    source: str | None
    suggestions: list[str]
    error: NotRequired[str]


class PermissionDecision(TypedDict, total=False):
    """A person's answer to a ``PermissionRequest``.

    ``{"decision": "approve"}`` (optionally with ``"scope": "once" | "session" | "project"``, and
    ``"arguments"``: the call's arguments as the person edited them, a JSON object, which the tool then runs
    with), ``{"decision": "reject"}`` (optionally with ``"feedback": "..."``, which reaches the model), or
    ``{"decision": "queue"}``: the person decided through the policy or the queue itself; use its verdict.
    ``decided_by`` names who answered (kept on the action and in the decision records).
    """

    decision: Required[Literal["approve", "reject", "queue"]]
    scope: ResolutionScope
    feedback: str | None
    arguments: Mapping[str, Any] | None
    decided_by: str | None


Clock: TypeAlias = Callable[[], datetime]
"""A zero-argument callable returning an aware ``datetime``."""


class ToolCallLike(Protocol):
    """A tool call as agent frameworks hand it over: a name, its arguments and the call's id."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> Any: ...

    @property
    def id(self) -> Any: ...


class Classifier(Protocol):
    """Anything that classifies a tool call into a decision, as rules and rule sets do."""

    def classify(self, tool_name: str, arguments: object = None) -> Decision | None: ...


class GrantsLike(Protocol):
    """A grants collaborator: answers whether a whole tool is granted."""

    def is_granted(self, tool_name: str) -> bool: ...


Redactor: TypeAlias = "Callable[[str, Any], Any]"
"""``record_arguments=``'s redaction hook: given the tool's name and the call's arguments, returns what the
decision record keeps of them (a copy with secrets replaced, say)."""


class ReviewRequest(TypedDict):
    """What ``auto`` mode's reviewer sees of an ask: the tool, the call's id and arguments, and its reason."""

    tool: str
    tool_call_id: str | None
    args: Any
    reason: str


Answer: TypeAlias = "bool | Mapping[str, object]"
"""A resolver's answer: ``True`` or ``False``, or a ``PermissionDecision`` (approve with a scope, reject with
feedback)."""

Resolver: TypeAlias = "Callable[[PermissionRequest], Answer | Awaitable[Answer]]"
"""Answers an ask for ``policy.decide`` / ``adecide``: given the pending request, returns or awaits an
``Answer``."""


class SandboxRunLike(Protocol):
    """What running a command in a sandbox gives back: its exit status and output."""

    @property
    def returncode(self) -> int: ...

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...


class SandboxLike(Protocol):
    """Walls a host runs shell calls in: ``ask_permissions.sandbox.Sandbox``, or another system's.

    A ``LayeredPolicy`` given one lets a shell call that no rule decided proceed, on the host's promise to
    run it through ``run`` (or the argument vector ``command`` gives), never outside.
    """

    @property
    def cwd(self) -> str:
        """The working directory commands run in (the policy's own)."""
        ...

    def command(self, command: str | Sequence[str]) -> list[str]:
        """The argument vector that runs a command inside the walls."""
        ...

    def run(self, command: str | Sequence[str], *, timeout: float | None = None) -> SandboxRunLike:
        """Run a command inside the walls and wait for it."""
        ...


class CommandHookConfig(TypedDict):
    """One command hook in a configuration: ``{"type": "command", "command": "...", "timeout": 10}``.

    ``timeout`` is seconds (default 60, at most 600); ``shell`` runs the command with ``/bin/sh -c``.
    """

    type: Literal["command"]
    command: str
    timeout: NotRequired[float | None]
    shell: NotRequired[bool | None]


class HookMatcherConfig(TypedDict):
    """The hooks for some calls: ``matcher`` is a rule text (``"Bash"``, ``"Bash(git *)"``,
    ``"mcp__github"``), several joined by ``"|"``, or ``"*"`` (or empty, or absent) for every call."""

    matcher: NotRequired[str | None]
    hooks: list[CommandHookConfig]


class HooksConfig(TypedDict, total=False):
    """A hooks configuration (policy files' ``hooks`` key): ``{"PreToolUse": [...]}``."""

    PreToolUse: list[HookMatcherConfig] | None


_Name = TypeVar("_Name", bound=str)


def one_of(value: object, names: tuple[_Name, ...]) -> _Name | None:
    """The name of a closed set that ``value`` is, as the set's own text (a ``str`` subclass, say a
    ``StrEnum`` member, is read as its plain text), or ``None`` for anything else, whatever its type."""
    if isinstance(value, str):
        for name in names:
            if value == name:
                return name
    return None
