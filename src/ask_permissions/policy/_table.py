"""A policy's table: an ordered list of named layers over one per-call object, then rewrites and fixed texts.

Its layers are small pure functions of the call's facts that return an ``Opinion`` or ``None``; the first
opinion decides, in table order. Then its rewrites run (each may change the verdict: the unattended rewrite
turns a wait for a person into a block), and last its fixed texts give every reason that a layer left open.

A *provisional* opinion — a check function's or a hook's answer, or "proceed with these arguments" — does
not decide alone: every layer of the table marked as a guard is consulted too (on the rewritten arguments, if
any), and a guard's block, then a guard's ask, wins over it. So no check, hook or rewrite can smuggle a call
past a deny rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Literal, NamedTuple, Protocol, Self, TypeAlias, TypeVar, final

from ._records import MatchedRule

__all__ = [
    "UNATTENDED",
    "UNCHANGED",
    "CallFacts",
    "Decided",
    "Facts",
    "Layer",
    "Opinion",
    "Rewrite",
    "Table",
    "Texts",
    "Verdict",
    "approved_by_queue",
    "unanswerable",
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


class CallFacts(Protocol):
    """What every per-call object tells a layer of the call itself: its tool's name, arguments and id."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> object: ...

    @property
    def call_id(self) -> object: ...


class Facts(CallFacts, Protocol):
    """The per-call object the layers read: built once per call by the policy.

    Anything costly (serialized arguments, the rules' decision, tool metadata) is worked out at most once.
    Layers read the policy's state through it, never through the policy.
    """

    @property
    def interactive(self) -> bool:
        """Whether a person can answer asks in this session."""
        ...

    @property
    def match(self) -> MatchedRule | None:
        """The rule the rules layer matched for the call, for the record (``None`` when none did)."""
        ...

    def queue_approves(self) -> bool:
        """Whether the queue approves an auto-approvable submission of this tool by itself (the queue's
        ``would_auto_approve``)."""
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


UNATTENDED_TEXT: Final = "Tool '{tool}' requires approval, and no one can approve it in this session"


def unattended(facts: Facts, decided: Decided) -> Decided:
    """``interactive=False``: an ask nobody can answer becomes a block, keeping its layer (an ask the queue
    approves by itself is still submitted)."""
    opinion = decided.opinion
    if opinion.verdict != "ask" or facts.interactive:
        return decided
    if approved_by_queue(facts, decided):
        return decided
    return decided._replace(opinion=unanswerable(opinion, UNATTENDED_TEXT.format(tool=facts.name)))


def approved_by_queue(facts: Facts, decided: Decided) -> bool:
    """Whether the queue approves this ask by itself, so that nobody need answer it."""
    return decided.auto_approvable and facts.queue_approves()


def unanswerable(opinion: Opinion, reason: str) -> Opinion:
    """An ask that nobody can answer, as the block it becomes (keeping what the record says of it)."""
    return Opinion(
        "block", reason, rule=opinion.rule, source=opinion.source, rule_id=opinion.rule_id, unresolved=True
    )


UNATTENDED: Final[Rewrite[Facts]] = Rewrite("unattended", unattended, frozenset({"ask"}))
