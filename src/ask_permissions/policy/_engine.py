"""The pipeline engine every policy runs on: an ordered table of named layers over one per-call object.

A policy is a table. Its layers are small pure functions of the call's facts that return an ``Opinion`` or
``None``; the first opinion decides, in table order. Then its rewrites run (each may change the verdict: the
unattended rewrite turns a wait for a person into a block), and last its fixed texts give every reason that a
layer left open. The engine owns what every policy shares: reading the call, submitting to the queue,
``DecisionRecord``s, ``evaluate()``, ``on_decision``, the clock, ``interactive=False``, resolving through the
policy (``approve`` / ``reject``) and reading outcomes.

A *provisional* opinion — a check function's or a hook's answer, or "proceed with these arguments" — does
not decide alone: every layer of the table marked as a guard is consulted too (on the rewritten arguments, if
any), and a guard's block, then a guard's ask, wins over it. So no check, hook or rewrite can smuggle a call
past a deny rule.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Generic,
    Literal,
    NamedTuple,
    Protocol,
    Self,
    TypeAlias,
    TypeVar,
    final,
)

from ask_permissions._clock import utc_now
from ask_permissions._errors import preview
from ask_permissions._tool_call import ToolCall, read_tool_call
from ask_permissions.queue._args import json_copy
from ask_permissions.queue._queue import AUTO_APPROVER
from ask_permissions.typing import (
    AskExplanation,
    BlockResult,
    Clock,
    Evaluator,
    HookAction,
    HookResult,
    PendingResult,
    PermissionRequest,
    ProceedResult,
    RecordVerdict,
    Redactor,
    ResolutionScope,
    Resolver,
)

from ._arguments import same_arguments
from ._digest import args_digest
from ._outcome import Outcome, ProjectGrantHook, ScopeCarrier, ScopePlan, rejection_text
from ._records import DecisionRecord, MatchedRule, ShadowRecord, kept_arguments, record_call_id
from ._resolution import permission_request, read_answer
from ._resolvers import CANCELLED_FEEDBACK, EXPIRED_FEEDBACK, ask_async, ask_sync, unresolved_reason
from ._results import pending_reason

if TYPE_CHECKING:
    from ask_permissions.queue._queue import Action, ApprovalQueue

__all__ = [
    "UNCHANGED",
    "Engine",
    "Facts",
    "Layer",
    "Opinion",
    "Rewrite",
    "Texts",
    "Verdict",
]

Verdict: TypeAlias = Literal["proceed", "block", "ask"]
"""A layer's answer: run the tool, refuse it, or ask a person (the call is submitted to the queue)."""


class _Unchanged:
    """The arguments as the model sent them (a sentinel: ``None`` is a valid replacement)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Final = _Unchanged()


@final
@dataclass(frozen=True, slots=True, eq=False)
class Opinion:
    """What one layer says about a call.

    Attributes:
        verdict: ``"proceed"``, ``"block"`` or ``"ask"``.
        reason: the text the model (or the person) reads; ``None`` leaves it to the table's fixed texts.
        auto_approvable: an ask the queue may approve by itself (when its ``auto_approve`` lists the tool).
        provisional: the guard layers may still overrule it (check functions, hooks, tools' own checks).
        arguments: ``UNCHANGED``, or the arguments the call proceeds with instead (a provisional proceed).
        rule: the rule this layer decided by, when not the rules' own match (``None``: the facts' match).
        source: where that rule came from (a settings source), when the policy knows.
        rule_id: the id of the check function that answered, for the record.
        unresolved: a block that stands for an ask nobody could answer (the record's verdict is
            ``ask_unresolved``).
        reviewable: whether an automatic reviewer may answer this ask instead of a person.
        sandboxed: a proceed that holds only because the call runs in the policy's sandbox (the result and
            the record say so).

    Compared by identity: the engine keeps the settled form of the opinions a table's layers return again
    and again (module constants), so the hot path builds nothing for them.
    """

    verdict: Verdict
    reason: str | None = None
    auto_approvable: bool = False
    provisional: bool = False
    arguments: object = UNCHANGED
    rule: MatchedRule | None = None
    source: str | None = None
    rule_id: str | None = None
    unresolved: bool = False
    reviewable: bool = True
    sandboxed: bool = False


class Facts(Protocol):
    """The per-call object the layers read: built once per call by the policy.

    Anything costly (serialized arguments, the rules' decision, tool metadata) is worked out at most once.
    Layers read the policy's state through it, never through the policy.
    """

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> object: ...

    @property
    def call_id(self) -> object: ...

    @property
    def interactive(self) -> bool:
        """Whether a person can answer asks in this session."""
        ...

    @property
    def match(self) -> MatchedRule | None:
        """The rule the rules layer matched for the call, for the record (``None`` when none did)."""
        ...

    def queue_approves(self) -> bool:
        """Whether the queue approves an auto-approvable submission of this tool by itself."""
        ...

    def with_arguments(self, arguments: object) -> Self:
        """The same call with other arguments (everything argument-dependent is worked out afresh)."""
        ...


F = TypeVar("F", bound=Facts)
F_contra = TypeVar("F_contra", bound=Facts, contravariant=True)


@final
@dataclass(frozen=True, slots=True)
class Layer(Generic[F_contra]):
    """One named layer of a table: its name is what decision records report when it decides.

    A guard layer's objections (block, ask) also apply to the provisional opinions of other layers. A blocking
    layer may wait on the outside world (a hook's process), so ``adecide`` runs such a table off the loop.
    """

    name: str
    decide: Callable[[F_contra], Opinion | None]
    guard: bool = False
    blocking: bool = False


@final
@dataclass(frozen=True, slots=True)
class Rewrite(Generic[F_contra]):
    """A step after the deciding layer: it may change the verdict (say, turn an ask into a block).

    It runs only for the verdicts it lists.
    """

    name: str
    rewrite: Callable[[F_contra, Decided], Decided]
    verdicts: frozenset[Verdict] = frozenset({"proceed", "block", "ask"})
    blocking: bool = False


@final
@dataclass(frozen=True, slots=True)
class Texts:
    """The last step: the fixed reason of each layer that left its reason open, by layer name.

    Each text is formatted with ``tool`` (the tool's name); a layer without an entry that blocks gets
    ``blocked``, and every ask gets ``ask`` (the pending reason).
    """

    by_layer: Mapping[str, str]
    blocked: str = "Tool '{tool}' is blocked by policy"
    ask: str = "Tool '{tool}' requires approval"

    def reason(self, layer: str, verdict: Verdict, tool: str) -> str:
        if verdict == "ask":
            text = self.by_layer.get(layer, self.ask)
        else:
            text = self.by_layer.get(layer, self.blocked)
        return text.format(tool=tool)


class Decided(NamedTuple):
    """The table's decision for one call: the deciding layer's name and opinion, settled.

    A NamedTuple of references: immutable, and cheap to build on every call. ``arguments`` is
    ``UNCHANGED`` unless a provisional proceed replaced them; ``reason`` is the opinion's own, or the
    table's fixed text for the layer (``None`` for a proceed).
    """

    layer: str
    opinion: Opinion
    arguments: object = UNCHANGED
    reason: str | None = None

    @property
    def verdict(self) -> Verdict:
        """``"proceed"``, ``"block"`` or ``"ask"``."""
        return self.opinion.verdict

    @property
    def auto_approvable(self) -> bool:
        """Whether the ask may be approved by the queue itself."""
        opinion = self.opinion
        return opinion.auto_approvable and opinion.verdict == "ask"

    @property
    def modified(self) -> bool:
        """Whether the call runs with arguments other than the model's."""
        return self.arguments is not UNCHANGED


_Decider: TypeAlias = "tuple[Callable[[F], Opinion | None], Layer[F], dict[Opinion, Decided]]"


@final
class Table(Generic[F]):
    """A policy's steps, checked once: deciding layers first (the last always has an opinion), then
    rewrites, then the fixed texts."""

    __slots__ = ("_deciders", "_rewrite_steps", "blocks", "guards", "layers", "names", "rewrites", "texts")

    _SETTLED_PER_LAYER: Final = 64  # the constants a layer returns; opinions made per call are not kept

    def __init__(self, steps: Sequence[Layer[F] | Rewrite[F]], texts: Texts) -> None:
        layers = tuple(step for step in steps if isinstance(step, Layer))
        rewrites = tuple(step for step in steps if isinstance(step, Rewrite))
        if tuple(steps) != layers + rewrites:
            raise ValueError("a table lists its layers first, then its rewrites")
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise ValueError(f"layer names must be unique: {names}")
        self.layers: Final = layers
        self.guards: Final = tuple(layer for layer in layers if layer.guard)
        self._rewrite_steps: Final = rewrites
        # Layers that may wait on the outside world (a hook's process): async callers decide off the loop.
        self.blocks: Final = any(layer.blocking for layer in layers) or any(
            step.blocking for step in rewrites
        )
        self.rewrites: Final = tuple((rewrite.verdicts, rewrite.rewrite) for rewrite in rewrites)
        self.texts: Final = texts
        self.names: Final = tuple(names)
        # What the loop reads on every call, without attribute lookups; each layer's settled opinions.
        self._deciders: Final[
            tuple[tuple[Callable[[F], Opinion | None], Layer[F], dict[Opinion, Decided]], ...]
        ] = tuple((layer.decide, layer, {}) for layer in layers)

    def without(self, *names: str) -> Table[F]:
        """This table with the named layers left out — those a policy's configuration can never trigger
        (no hooks, no checks), so calls do not pay for them. ``names`` still lists the whole table.

        Raises:
            ValueError: a name that is not a layer of the table.
        """
        unknown = set(names) - set(self.names)
        if unknown:
            raise ValueError(f"no such layers: {sorted(unknown)}")
        steps: list[Layer[F] | Rewrite[F]] = [layer for layer in self.layers if layer.name not in names]
        steps.extend(self._rewrite_steps)
        pruned: Table[F] = Table(steps, self.texts)
        pruned.names = self.names  # type: ignore[misc]  # what records may report is the whole table
        return pruned

    def decide(self, facts: F) -> tuple[F, Decided]:
        """Run the layers, then the rewrites, then the texts; return the facts decided on and the decision."""
        settled: dict[Opinion, Decided]
        for decide, layer, settled in self._deciders:
            opinion = decide(facts)
            if opinion is None:
                continue
            if opinion.provisional:
                facts, decided = self._guarded(layer, opinion, facts)
            else:
                found = settled.get(opinion)
                if found is None:
                    found = Decided(layer.name, opinion)
                    if len(settled) < self._SETTLED_PER_LAYER:
                        settled[opinion] = found
                decided = found
            break
        else:  # pragma: no cover - every table ends in a layer that always answers
            raise AssertionError("the last layer of a table always has an opinion")
        for verdicts, rewrite in self.rewrites:
            if decided.opinion.verdict in verdicts:
                decided = rewrite(facts, decided)
        opinion = decided.opinion
        if opinion.verdict != "proceed":
            reason = opinion.reason
            if reason is None:
                reason = self.texts.reason(decided.layer, opinion.verdict, facts.name)
            decided = decided._replace(reason=reason)
        return facts, decided

    def _guarded(self, layer: Layer[F], opinion: Opinion, facts: F) -> tuple[F, Decided]:
        """A provisional opinion, after every guard layer had its say (on the rewritten arguments)."""
        arguments = opinion.arguments
        if arguments is not UNCHANGED:
            facts = facts.with_arguments(arguments)
        objection: tuple[Layer[F], Opinion] | None = None
        for guard in self.guards:
            if guard is layer:
                continue
            said = guard.decide(facts)
            if said is None or said.verdict == "proceed":
                continue
            if said.verdict == "block":
                return facts, Decided(guard.name, said, arguments)
            if objection is None:
                objection = (guard, said)
        if objection is not None and opinion.verdict == "proceed":
            guard, said = objection
            return facts, Decided(guard.name, said, arguments)
        # Nothing objected, or both ask a person: the provisional layer answered first, and keeps its reason.
        return facts, Decided(layer.name, opinion, arguments)


_logger: Final = logging.getLogger("ask_permissions.policy")

UNATTENDED_TEXT: Final = "Tool '{tool}' requires approval, and no one can approve it in this session"


def unattended(facts: Facts, decided: Decided) -> Decided:
    """``interactive=False``: an ask nobody can answer becomes a block, keeping its layer (an ask the queue
    approves by itself is still submitted)."""
    opinion = decided.opinion
    if opinion.verdict != "ask" or facts.interactive:
        return decided
    if opinion.auto_approvable and facts.queue_approves():
        return decided
    return decided._replace(opinion=unanswerable(opinion, UNATTENDED_TEXT.format(tool=facts.name)))


def unanswerable(opinion: Opinion, reason: str) -> Opinion:
    """An ask that nobody can answer, as the block it becomes (keeping what the record says of it)."""
    return Opinion(
        "block", reason, rule=opinion.rule, source=opinion.source, rule_id=opinion.rule_id, unresolved=True
    )


UNATTENDED: Final[Rewrite[Facts]] = Rewrite("unattended", unattended, frozenset({"ask"}))
"""The rewrite every table ends with (before its texts)."""


_OUTCOME: Final[Mapping[Verdict, HookAction]] = {"proceed": "proceed", "block": "block", "ask": "pending"}

ONCE_ONLY: Final[Mapping[ResolutionScope, str]] = MappingProxyType({"once": "runs this call once"})
"""What every host honours: an approval runs the call it was asked about, once."""
POLICY_DECIDER: Final = "policy"
"""``decided_by`` of the rejections a policy makes itself (nobody could answer; the resolver failed)."""
EXPIRER: Final = "expiry"
"""``decided_by`` of an ask that expired."""
RULE_DECIDER: Final = "rule"
"""``decided_by`` of a decision the policy's own layers took."""
REVIEWER: Final = "reviewer"
"""``decided_by`` (and ``rule_id``) of ``auto`` mode's reviewer's decisions."""
EDIT_REFUSED_TEXT: Final = "The call to '{tool}' as edited is blocked by the policy: {reason}"


class Engine(Generic[F]):
    """What every policy shares: the call's reading, submission, records, resolution and outcomes.

    A policy subclasses it, gives it its table, and builds each call's facts in ``_facts``.
    Holds no state of its own but the scope memory (which has its own lock): it is as thread-safe as its
    queue, rules and grants.
    """

    __slots__ = (
        "_asked",
        "_clock",
        "_edit_checks",
        "_honoured",
        "_interactive",
        "_keep_arguments",
        "_on_decision",
        "_queue",
        "_scopes",
        "_shadow",
        "_table",
        "_verdicts",
    )

    def __init__(
        self,
        *,
        table: Table[F],
        queue: ApprovalQueue,
        clock: Clock | None,
        on_decision: Callable[[DecisionRecord], object] | None,
        interactive: bool,
        scopes: ScopePlan,
        on_project_grant: ProjectGrantHook | None,
        shadow: Evaluator | None = None,
        record_arguments: bool | Redactor = False,
        honoured: Mapping[ResolutionScope, str] = ONCE_ONLY,
    ) -> None:
        if not callable(getattr(queue, "submit", None)):
            raise TypeError(f"queue: expected an ApprovalQueue; got {preview(queue)}")
        if not isinstance(interactive, bool):
            raise TypeError(f"interactive: expected a bool; got {preview(interactive)}")
        if on_decision is not None and not callable(on_decision):
            raise TypeError(f"on_decision: expected a callable; got {preview(on_decision)}")
        if clock is not None and not callable(clock):
            raise TypeError(f"clock: expected a callable returning an aware datetime; got {preview(clock)}")
        if on_project_grant is not None and not callable(on_project_grant):
            raise TypeError(f"on_project_grant: expected a callable; got {preview(on_project_grant)}")
        if shadow is not None:
            if not callable(getattr(shadow, "evaluate", None)):
                raise TypeError(
                    f"shadow: expected a policy (anything with evaluate()); got {preview(shadow)}"
                )
            if on_decision is None:
                raise ValueError(
                    "shadow: a shadow policy's disagreements are recorded in the decision records; "
                    "pass on_decision= too"
                )
        if not isinstance(record_arguments, bool) and not callable(record_arguments):
            raise TypeError(
                "record_arguments: expected True, False or a redaction function (tool name, arguments) -> "
                f"arguments; got {preview(record_arguments)}"
            )
        self._shadow: Final = shadow
        self._keep_arguments: Final = record_arguments
        self._table: Final = table
        self._queue: Final = queue
        self._clock: Final[Clock] = clock or utc_now
        self._on_decision: Final = on_decision
        self._interactive: Final = interactive
        self._scopes: Final = ScopeCarrier(scopes, on_project_grant)
        # The records of the asks this policy queued, so their resolutions can name the same layer and rule;
        # and the verdicts the policy itself gives the rejections it makes (expired, cancelled, ...).
        self._asked: Final = _AskedRecords()
        self._verdicts: Final = _PlannedVerdicts()
        self._edit_checks: Final = _EditChecks()
        self._honoured: Final = dict(honoured)
        store = getattr(queue, "store", None)
        if getattr(store, "durable", False):
            # Where a person answers from another process, they are offered what this host carries out.
            store.record_scopes(queue.session, self._honoured)  # type: ignore[union-attr]
        # One place records how every ask ends and carries its scope, however and wherever it is resolved:
        # through the policy, a resolver, another queue object, or a person's command in another process.
        observe = getattr(queue, "observe_resolutions", None)
        if callable(observe):
            observe(self._observed)

    # -- for subclasses ------------------------------------------------------------------------------

    def _facts(
        self, name: str, arguments: object, call_id: object, context: object, *, dry_run: bool = False
    ) -> F:
        """The call's facts, as this policy's layers read them; ``dry_run`` for ``evaluate``, whose layers
        may consult what they would (a reviewer, a hook) but must record nothing of it."""
        raise NotImplementedError

    def _suggest(self, facts: F, decided: Decided) -> list[str] | None:
        """Rules a person could accept instead of a one-off yes, for a pending result (none by default)."""
        return None

    def _call_scopes(self, facts: F, decided: Decided) -> dict[ResolutionScope, str]:
        """The answers this host carries out for this call, asked by ``decided``: scope → what it does
        (the host's by default)."""
        return dict(self._honoured)

    # -- readers -------------------------------------------------------------------------------------

    @property
    def queue(self) -> ApprovalQueue:
        """The approval queue."""
        return self._queue

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

    @property
    def shadow(self) -> Evaluator | None:
        """The shadow policy: decided beside this one, its disagreements recorded, never enforced."""
        return self._shadow

    @property
    def record_arguments(self) -> bool | Redactor:
        """Whether decision records keep the call's arguments (or the redaction hook that says what)."""
        return self._keep_arguments

    @property
    def honoured_scopes(self) -> dict[ResolutionScope, str]:
        """The answers this policy carries out, scope → what it does (recorded in a durable queue's store)."""
        return dict(self._honoured)

    @property
    def layers(self) -> tuple[str, ...]:
        """The names of the table's layers, in the order they are consulted (what records report)."""
        return self._table.names

    # -- deciding ------------------------------------------------------------------------------------

    def before_tool_call(self, tool_call: object, context: object = None) -> HookResult:
        """Decide one tool call: ``{"action": "proceed"}``, ``"block"`` with a reason, or ``"pending"``.

        A call that would be queued while an action for the same ``tool_call_id``, tool and arguments is
        still pending is not queued again: the result names that action (a host re-running a restored call,
        or a framework replaying a paused one, waits for the one decision). One that a person rejected
        (or that expired) is blocked with that rejection, so a replay after the answer is never asked
        again, nor run on an answer meant for the first asking.

        Args:
            tool_call: an object with ``name``, ``arguments`` and ``id``, or a mapping with those keys.
            context: passed to the layers that read it (a tool's own check); otherwise unused.

        Raises:
            Whatever ``on_decision`` raises, after the decision took effect; when the call was queued, the
            exception carries a note naming the action's id.
        """
        name, arguments, call_id = read_tool_call(tool_call)
        facts, decided = self._table.decide(self._facts(name, arguments, call_id, context))
        return self._settle(facts, decided, arguments)

    def _settle(self, facts: F, decided: Decided, original: object) -> HookResult:
        """Carry a decision out: submit an ask, build the result, tell the observer."""
        verdict = decided.opinion.verdict
        action_id: int | None = None
        result: HookResult
        if verdict == "proceed":
            result = {"action": "proceed"}
            if decided.arguments is not UNCHANGED:
                result["arguments"] = facts.arguments
            if decided.opinion.sandboxed:
                result["sandboxed"] = True
        elif verdict == "block":
            result = {"action": "block", "reason": decided.reason or ""}
        elif (refused := self._rejected_before(facts)) is not None:
            reason = rejection_text(refused)
            decided = decided._replace(
                opinion=replace(decided.opinion, verdict="block", reason=reason), reason=reason
            )
            result = {"action": "block", "reason": reason}
        else:
            suggestions = self._suggest(facts, decided)
            action_id = self._submit(facts, decided, self._explain(facts, decided, suggestions))
            result = {"action": "pending", "action_id": action_id, "reason": decided.reason or ""}
            if decided.arguments is not UNCHANGED:
                result["arguments"] = facts.arguments
            if suggestions:
                result["suggestions"] = suggestions
        if self._on_decision is not None:
            try:
                record = self._record(facts, decided, action_id, original)
                if action_id is not None:
                    self._asked.remember(action_id, record)
                self._on_decision(record)
                if action_id is not None and decided.auto_approvable:
                    self._auto_approved_at_once(action_id)
            except BaseException as error:
                if action_id is not None:
                    error.add_note(
                        f"ask_permissions: the call to {facts.name!r} is queued as action {action_id} "
                        "(it stays queued; approve or reject it as usual)"
                    )
                raise
        return result

    # -- deciding with a resolver --------------------------------------------------------------------

    def decide(
        self,
        tool_call: object,
        *,
        resolver: Resolver | None = None,
        timeout: float | None = None,
        context: object = None,
    ) -> ProceedResult | BlockResult:
        """Decide a call to the end: on an ask, the resolver answers it (seed 001's ask resolver).

        The pipeline decides as ``before_tool_call`` does. An ask is queued and the resolver is called with
        the pending request; its answer (``True``/``False``, or a ``PermissionDecision`` with a scope or
        feedback) resolves the queued action through the policy, and the result is the final proceed or
        block. Without a resolver an ask blocks with ``permission required: <reason>`` and queues nothing
        (unless the queue approves it by itself). Past ``timeout`` seconds the action is rejected as
        ``"expired"`` and the call blocked; a late answer is ignored.

        Raises:
            TypeError: an async resolver (use ``adecide``), or an answer that is not one.
            ValueError: an answer with an unknown decision, scope or feedback.
            Whatever the resolver raises. In each case the queued action is rejected first, so nothing is
            left waiting for an answer that will not come.
        """
        _check_timeout(timeout)
        ask = self._ask_first(tool_call, context, resolver)
        if not isinstance(ask, _Asking):
            return ask
        if resolver is None:
            return self._unanswered(ask)
        try:
            answer = ask_sync(resolver, ask.request, timeout)
        except TimeoutError:
            return self._expired(ask)
        except BaseException:
            self._reject_as(ask.action_id, "the resolver failed", "ask_denied")
            raise
        return self._answered(ask, answer)

    async def adecide(
        self,
        tool_call: object,
        *,
        resolver: Resolver | None = None,
        timeout: float | None = None,
        context: object = None,
    ) -> ProceedResult | BlockResult:
        """``decide`` for asyncio: the resolver may be sync (run in a worker thread) or async.

        Cancelling the awaiting task rejects the action with "cancelled while awaiting approval" and
        re-raises the cancellation. A cancel always wins: even when an approval lands at the same moment,
        the cancelled call never returns a proceed, so the tool never runs.
        """
        _check_timeout(timeout)
        if self._table.blocks:
            ask = await self._ask_first_off_the_loop(tool_call, context, resolver)
        else:
            ask = self._ask_first(tool_call, context, resolver)
        if not isinstance(ask, _Asking):
            return ask
        if resolver is None:
            return self._unanswered(ask)
        try:
            answer = await ask_async(resolver, ask.request, timeout)
        except TimeoutError:
            return self._expired(ask)
        except asyncio.CancelledError:
            self._reject_as(ask.action_id, CANCELLED_FEEDBACK, "cancelled", always_record=True)
            raise
        except BaseException:
            self._reject_as(ask.action_id, "the resolver failed", "ask_denied")
            raise
        try:
            result = self._answered(ask, answer)
        finally:
            # A cancel that arrived while the answer was applied still wins over it.
            task = asyncio.current_task()
            cancelled = task is not None and task.cancelling() > 0
            if cancelled:
                self._cancelled_late(ask)
        if cancelled:
            raise asyncio.CancelledError  # never a proceed to a caller that was cancelled
        return result

    async def _ask_first_off_the_loop(
        self, tool_call: object, context: object, resolver: Resolver | None
    ) -> ProceedResult | BlockResult | _Asking:
        """``_ask_first`` in a worker thread, for tables whose layers may block (command hooks).

        A cancel while it runs waits for it to finish, then rejects what it queued: nothing is left waiting
        for a caller that is gone.
        """
        decision = asyncio.ensure_future(asyncio.to_thread(self._ask_first, tool_call, context, resolver))
        try:
            return await asyncio.shield(decision)
        except asyncio.CancelledError:
            try:
                ask = await decision
            except BaseException:
                raise asyncio.CancelledError from None
            if isinstance(ask, _Asking):
                self._reject_as(ask.action_id, CANCELLED_FEEDBACK, "cancelled", always_record=True)
            raise

    def _ask_first(
        self, tool_call: object, context: object, resolver: Resolver | None
    ) -> ProceedResult | BlockResult | _Asking:
        """Decide; a proceed or block is final, an ask is queued (or, with no one to answer, refused)."""
        name, arguments, call_id = read_tool_call(tool_call)
        facts, decided = self._table.decide(self._facts(name, arguments, call_id, context))
        opinion = decided.opinion
        if (
            opinion.verdict == "ask"
            and resolver is None
            and not (decided.auto_approvable and facts.queue_approves())
        ):
            # Headless (seed 001): nobody can answer, so nothing is queued for nobody.
            reason = unresolved_reason(decided.reason or pending_reason(facts.name))
            refused = decided._replace(opinion=unanswerable(opinion, reason), reason=reason)
            return self._settle(facts, refused, arguments)  # type: ignore[return-value]  # a block
        result = self._settle(facts, decided, arguments)
        if result["action"] != "pending":
            return result
        action = self._queue.get(result["action_id"])
        if action is None:
            return {"action": "block", "reason": result["reason"]}  # the queue lost it: fail closed
        return _Asking(result, permission_request(action, result["reason"]))

    def _unanswered(self, ask: _Asking) -> ProceedResult | BlockResult:
        """No resolver, but the call was queued as auto-approvable: the queue's own verdict, or unresolved."""
        final = self._final(ask)
        if final is not None:
            return final
        self._reject_as(ask.action_id, "no one could answer", "ask_unresolved")
        return {"action": "block", "reason": unresolved_reason(ask.result["reason"])}

    def _expired(self, ask: _Asking) -> ProceedResult | BlockResult:
        self._reject_as(ask.action_id, EXPIRED_FEEDBACK, "ask_expired", decided_by=EXPIRER)
        return self._final(ask) or {"action": "block", "reason": ask.result["reason"]}

    def _answered(self, ask: _Asking, answer: object) -> ProceedResult | BlockResult:
        try:
            read = read_answer(answer)
            if read.verdict == "approve":
                self.approve(
                    ask.action_id, scope=read.scope, arguments=read.arguments, decided_by=read.decided_by
                )
            elif read.verdict == "reject":
                self.reject(ask.action_id, feedback=read.feedback, decided_by=read.decided_by)
        except (TypeError, ValueError):
            self._reject_as(ask.action_id, "the resolver's answer could not be read", "ask_denied")
            raise
        final = self._final(ask)
        if final is not None:
            return final
        # "queue", but nobody has decided through the queue: nobody will.
        self._reject_as(ask.action_id, "no one could answer", "ask_unresolved")
        return {"action": "block", "reason": unresolved_reason(ask.result["reason"])}

    def _final(self, ask: _Asking) -> ProceedResult | BlockResult | None:
        """The asked call's result now, or ``None`` while its action is still pending."""
        outcome = self.outcome(ask.result)
        if outcome.verdict == "run":
            if outcome.modified:
                return {"action": "proceed", "arguments": outcome.arguments}
            return {"action": "proceed"}
        if outcome.verdict == "refuse":
            return {"action": "block", "reason": outcome.reason or ask.result["reason"]}
        return None

    def _cancelled_late(self, ask: _Asking) -> None:
        """A cancel landed while an answer was applied: record it; the caller's cancellation wins."""
        self._reject_as(ask.action_id, CANCELLED_FEEDBACK, "cancelled", always_record=True)

    def evaluate(self, tool_call: object, context: object = None) -> DecisionRecord:
        """A dry run: the record of what ``before_tool_call`` would decide, changing nothing.

        Nothing is submitted and no callback or observer is called; a would-be submission has outcome
        ``"pending"`` and ``action_id`` ``None``. What decides is consulted as for a real call (hooks, checks,
        ``auto`` mode's reviewer), but its answer changes no state: a reviewer's denial is not counted.
        """
        name, arguments, call_id = read_tool_call(tool_call)
        facts, decided = self._table.decide(self._facts(name, arguments, call_id, context, dry_run=True))
        return self._record(facts, decided, None, arguments)

    def lookup(self, action_id: int) -> Action | None:
        """The queued action with this id, or ``None`` (delegates to the queue)."""
        return self._queue.get(action_id)

    def _rejected_before(self, facts: F) -> Action | None:
        """The rejected action of this very call (its id, tool and arguments), if a person refused it."""
        if facts.call_id is None:
            return None
        for action in reversed(self._queue.rejected_for_call(facts.call_id)):
            if action.tool_name == facts.name and same_arguments(action.args, facts.arguments):
                return action
        return None

    def _explain(self, facts: F, decided: Decided, suggestions: list[str] | None) -> AskExplanation:
        """Why the call waits, for the person who answers: the layer, the rule that asked (or the hook or
        check function), its source, the reason the model reads, and the rules "don't ask again" writes."""
        opinion = decided.opinion
        rule = opinion.rule
        if rule is None and facts.match is not None and facts.match.effective_decision == "ask":
            rule = facts.match  # the rules' own match asked (an ask rule, or a downgraded allow)
        text = rule.described if rule is not None else opinion.rule_id
        return {
            "layer": decided.layer,
            "rule": text,
            "source": opinion.source,
            "reason": decided.reason or pending_reason(facts.name),
            "suggestions": list(suggestions or ()),
            "scopes": self._call_scopes(facts, decided),
        }

    def _submit(self, facts: F, decided: Decided, why: AskExplanation) -> int:
        """Queue the call, unless an action for this very call is pending already: return its id."""
        arguments = facts.arguments
        if facts.call_id is not None:
            for action in self._queue.pending_for_call(facts.call_id):
                if action.tool_name == facts.name and same_arguments(action.args, arguments):
                    return action.id
        return self._queue.submit(
            tool_call_id=facts.call_id,
            tool_name=facts.name,
            args=arguments,
            auto_approvable=decided.auto_approvable,
            message=f'Calling "{facts.name}" requires approval',
            why=why,
        )

    def _record(self, facts: F, decided: Decided, action_id: int | None, original: object) -> DecisionRecord:
        """The record of a decision; its digest is of the model's own arguments, whatever ran instead."""
        opinion = decided.opinion
        outcome = _OUTCOME[opinion.verdict]
        keep = self._keep_arguments
        return DecisionRecord(
            tool=facts.name,
            args_digest=args_digest(original),
            outcome=outcome,
            layer=decided.layer,  # type: ignore[arg-type]  # the table's names are the record's layers
            rule=facts.match if opinion.rule is None else opinion.rule,
            reason=decided.reason,
            action_id=action_id,
            auto_approvable=decided.auto_approvable,
            ts=self._clock(),
            source=opinion.source,
            verdict="ask_unresolved" if opinion.unresolved else None,
            modified=decided.arguments is not UNCHANGED and opinion.verdict == "proceed",
            rule_id=opinion.rule_id,
            sandboxed=opinion.sandboxed and opinion.verdict == "proceed",
            tool_call_id=record_call_id(facts.call_id),
            arguments=self._kept(facts.name, original) if keep else None,
            has_arguments=keep is not False,
            shadow=None if self._shadow is None else self._shadow_of(facts, original, outcome),
            decided_by=None if opinion.verdict == "ask" else _machine(opinion),
        )

    def _kept(self, name: str, arguments: object) -> object:
        """The arguments a record keeps: as they are, or as the redaction hook leaves them (JSON-safe)."""
        keep = self._keep_arguments
        return kept_arguments(arguments if keep is True else keep(name, arguments))  # type: ignore[operator]

    def _shadow_of(self, facts: F, original: object, outcome: HookAction) -> ShadowRecord | None:
        """The shadow policy's decision of the same call, when it disagrees; it never changes the call."""
        call = ToolCall(facts.name, original, facts.call_id)
        try:
            record = self._shadow.evaluate(call, getattr(facts, "context", None))  # type: ignore[union-attr]
            if not isinstance(record, DecisionRecord):
                raise TypeError(f"shadow.evaluate: expected a DecisionRecord; got {preview(record)}")
        except Exception as error:
            # A broken shadow must not break the enforced decision: say so in the record and the log.
            _logger.warning("The shadow policy failed on a call to %r: %r", facts.name, error)
            return ShadowRecord(None, None, error=f"{type(error).__name__}: {error}")
        if record.outcome == outcome:
            return None
        return ShadowRecord(record.outcome, record.layer, record.rule, record.reason, record.source)

    # -- resolving -----------------------------------------------------------------------------------

    def approve(
        self,
        action_id: int,
        *,
        scope: ResolutionScope = "once",
        arguments: Mapping[str, Any] | None = None,
        decided_by: str | None = None,
    ) -> Action | None:
        """Approve a queued action for a person, and carry its scope; return it, or ``None``.

        Resolves through the queue (``on_approve`` fires), then applies the scope: ``"session"`` grants the
        tool in the session grants; ``"project"`` calls ``on_project_grant``. Without those, the approval
        counts for this call only. ``None`` when the id is unknown or no longer pending. Approving through
        the queue directly records the scope, and the policy carries it when it learns of the approval.

        ``arguments`` approves the call with a person's edited arguments (a JSON object): the tool runs with
        them, unless the policy would block that call outright (a deny rule, a safety check), which then is
        refused. ``decided_by`` names who approved.

        Raises:
            ValueError: an unknown scope, edited arguments JSON cannot carry, a bad ``decided_by`` (nothing
                approved).
            TypeError: ``arguments`` is not a mapping, ``decided_by`` not a string (nothing approved).
        """
        approved = self._queue.approve(action_id, scope=scope, arguments=arguments, decided_by=decided_by)
        if not approved:
            return None
        self._carry(approved[0], None)
        return approved[0]

    def reject(
        self, action_id: int, *, feedback: str | None = None, decided_by: str | None = None
    ) -> Action | None:
        """Reject a queued action for a person; ``feedback`` reaches the model. ``None`` if not pending.

        Raises:
            TypeError: ``feedback`` or ``decided_by`` is not a string or None (nothing rejected).
            ValueError: a bad ``decided_by`` (nothing rejected).
        """
        return self._reject_as(action_id, feedback, "ask_denied", decided_by=decided_by)

    def _reject_as(
        self,
        action_id: int,
        feedback: str | None,
        verdict: RecordVerdict,
        *,
        always_record: bool = False,
        decided_by: str | None = POLICY_DECIDER,
    ) -> Action | None:
        """Reject an action, recording the resolution with this verdict (also, when asked, if another
        resolution got there first: a cancel is recorded whatever else happened)."""
        self._verdicts.plan(action_id, verdict)
        try:
            rejected = self._queue.reject(action_id, feedback=feedback, decided_by=decided_by)
        finally:
            self._verdicts.drop(action_id)
        if rejected:
            return rejected[0]
        if always_record:
            action = self._queue.get(action_id)
            if action is not None:
                self._resolved(action, verdict)
        return None

    def _observed(self, action: Action, automatic: bool) -> None:
        """The queue resolved an action (here or in another process): record how the ask ended, then carry
        an approval's scope. The drain's auto-approvals carry nothing (no person chose a scope); their
        record names ``auto_approve``, and is made here only for an ask whose own record was made (one
        approved as it was submitted is recorded by ``_settle``, after its ask)."""
        if automatic:
            asked = self._asked.recall(action.id)
            if asked is not None:
                self._record_resolution(action, "ask_allowed", asked)
            return
        planned = self._verdicts.take(action.id)
        if planned is None:
            planned = "ask_allowed" if action.is_approved else "ask_denied"
            if action.is_rejected and action.feedback == EXPIRED_FEEDBACK:
                planned = "ask_expired"
        self._resolved(action, planned)
        if action.is_approved:
            self._carry(action, None)

    def _auto_approved_at_once(self, action_id: int) -> None:
        """Record the answer of an ask the queue approved by itself as it was submitted (before its own
        record was made, so ``_observed`` could not), once: whoever takes the remembered ask records it."""
        action = self._queue.get(action_id)
        if action is None or not action.is_approved or action.decided_by != AUTO_APPROVER:
            return
        asked = self._asked.recall(action_id)
        if asked is not None:
            self._record_resolution(action, "ask_allowed", asked)

    def _resolved(self, action: Action, verdict: RecordVerdict) -> None:
        """Tell the observer how an ask ended: one more record, with the same action id."""
        if self._on_decision is None:
            return
        self._record_resolution(action, verdict, self._asked.recall(action.id))

    def _record_resolution(
        self, action: Action, verdict: RecordVerdict, asked: DecisionRecord | None
    ) -> None:
        """The record of how an ask ended, from what the ask's own record said (``None``: not known here)."""
        if self._on_decision is None:
            return
        proceeds = verdict == "ask_allowed"
        keep = self._keep_arguments is not False
        if asked is not None:
            arguments, keep = asked.arguments, asked.has_arguments
        elif keep:
            arguments = self._kept(action.tool_name, action.args)
        else:
            arguments = None
        edited = proceeds and action.is_edited
        self._on_decision(
            DecisionRecord(
                tool=action.tool_name,
                args_digest=args_digest(action.args) if asked is None else asked.args_digest,
                outcome="proceed" if proceeds else "block",
                layer="resolution" if asked is None else asked.layer,
                rule=None if asked is None else asked.rule,
                reason=None if proceeds else rejection_text(action),
                action_id=action.id,
                auto_approvable=False,
                ts=self._clock(),
                source=None if asked is None else asked.source,
                verdict="allow_modified" if edited else verdict,
                modified=edited or (False if asked is None else asked.modified),
                rule_id=None if asked is None else asked.rule_id,
                tool_call_id=record_call_id(action.tool_call_id),
                arguments=arguments,
                has_arguments=keep,
                decided_by=action.decided_by,
                edited_digest=args_digest(action.edited_args) if edited else None,
            )
        )

    def outcome(self, result: HookResult, *, on_project_grant: ProjectGrantHook | None = None) -> Outcome:
        """What the host does with a call this policy decided: run it, refuse it, or wait.

        ``proceed`` runs; ``block`` refuses with its reason; ``pending`` reads the queued action as it is
        now: approved runs (its scope carried, once), rejected refuses with the person's feedback, pending
        waits, and an action the queue no longer knows refuses (fail closed). Call it again with the same
        result after a person answered. ``on_project_grant`` stands in for the policy's own hook.
        """
        if result["action"] == "proceed":
            if "arguments" in result:
                return Outcome("run", modified=True, arguments=result["arguments"])
            return _RUN
        if result["action"] == "block":
            return Outcome("refuse", result["reason"])
        action = self._queue.get(result["action_id"])
        if action is None:
            return Outcome("refuse", result["reason"])
        if action.is_approved:
            if action.is_edited:
                refused = self._edit_refusal(action)
                if refused is not None:
                    return Outcome("refuse", refused, action)
            self._carry(action, on_project_grant)
            if action.is_edited:
                # What the person approved is what runs: their edit, as a copy the tool may change.
                return Outcome(
                    "run", None, action, modified=True, arguments=json_copy(action.edited_args, "args")
                )
            if "arguments" in result:
                # What the person approved is what runs: the queued call's own arguments.
                return Outcome("run", None, action, modified=True, arguments=action.args)
            return Outcome("run", None, action)
        if action.is_rejected:
            return Outcome("refuse", rejection_text(action), action)
        return Outcome("wait", result["reason"], action)

    def _edit_refusal(self, action: Action) -> str | None:
        """Why a person's edited call may not run (the policy blocks it outright: a deny rule, a safety
        check, a hook), or ``None``. An ask is the person's to answer, and they did; a reviewer is not
        asked to overrule them. The refusal is recorded once."""
        known = self._edit_checks.get(action.id)
        if known is not None:
            return known[0]
        facts, decided = self._table.decide(
            self._facts(action.tool_name, action.edited_args, action.tool_call_id, None, dry_run=True)
        )
        opinion = decided.opinion
        refused = None
        if opinion.verdict == "block" and not opinion.unresolved and opinion.rule_id != REVIEWER:
            refused = EDIT_REFUSED_TEXT.format(tool=action.tool_name, reason=decided.reason or "")
        if self._edit_checks.remember(action.id, refused) and refused is not None and self._on_decision:
            record = self._record(facts, decided, action.id, action.edited_args)
            self._on_decision(replace(record, reason=refused))
        return refused

    def _carry(self, action: Action, on_project_grant: ProjectGrantHook | None) -> None:
        """Carry an approved action's scope (a policy with its own project store overrides this).

        A person's edit the policy refuses runs nothing, so its scope is not carried either: no allow rule
        or grant is ever written for a call the policy blocks outright."""
        if action.is_edited and action.resolution_scope != "once" and self._edit_refusal(action) is not None:
            return
        self._scopes.carry(action, on_project_grant)


_RUN: Final = Outcome("run")


def _machine(opinion: Opinion) -> str:
    """Who took a decision nobody was asked about: the reviewer, or the policy's rules."""
    return REVIEWER if opinion.rule_id == REVIEWER else RULE_DECIDER


@final
class _Asking(NamedTuple):
    """A call queued for an answer: its pending result, and the request the resolver answers."""

    result: PendingResult
    request: PermissionRequest

    @property
    def action_id(self) -> int:
        return self.result["action_id"]


# Enough for every ask a host can still be resolving; older ones resolve with a record that names no layer.
_ASKED_MEMORY: Final = 4096


@final
class _PlannedVerdicts:
    """The verdict the policy gives a rejection it is about to make, by action id (a private lock)."""

    __slots__ = ("_lock", "_verdicts")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._verdicts: dict[int, RecordVerdict] = {}

    def plan(self, action_id: int, verdict: RecordVerdict) -> None:
        with self._lock:
            self._verdicts[action_id] = verdict

    def take(self, action_id: int) -> RecordVerdict | None:
        with self._lock:
            return self._verdicts.pop(action_id, None)

    def drop(self, action_id: int) -> None:
        with self._lock:
            self._verdicts.pop(action_id, None)


@final
class _AskedRecords:
    """The records of recent asks, by action id (thread-safe: a private lock)."""

    __slots__ = ("_lock", "_records")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: OrderedDict[int, DecisionRecord] = OrderedDict()

    def remember(self, action_id: int, record: DecisionRecord) -> None:
        with self._lock:
            self._records[action_id] = record
            if len(self._records) > _ASKED_MEMORY:
                self._records.popitem(last=False)

    def recall(self, action_id: int) -> DecisionRecord | None:
        with self._lock:
            return self._records.pop(action_id, None)


@final
class _EditChecks:
    """What the policy said of each edited call it was asked to run, by action id (a private lock)."""

    __slots__ = ("_checked", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checked: OrderedDict[int, str | None] = OrderedDict()

    def get(self, action_id: int) -> tuple[str | None] | None:
        with self._lock:
            if action_id not in self._checked:
                return None
            return (self._checked[action_id],)

    def remember(self, action_id: int, refused: str | None) -> bool:
        """Keep the answer; whether it is new (a thread that checked at the same time records nothing)."""
        with self._lock:
            if action_id in self._checked:
                return False
            self._checked[action_id] = refused
            if len(self._checked) > _ASKED_MEMORY:
                self._checked.popitem(last=False)
            return True


def _check_timeout(timeout: object) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"timeout: expected seconds (a number) or None; got {preview(timeout)}")
    if not timeout >= 0:  # NaN fails this too
        raise ValueError(
            f"timeout: expected a non-negative number of seconds or None; got {preview(timeout)}"
        )
