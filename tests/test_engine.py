"""The pipeline engine: tables of named layers, provisional opinions under guards, rewrites and texts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

import pytest

from ask_permissions import ApprovalPolicy, ApprovalQueue, MatchedRule, ToolCall
from ask_permissions.policy._approval import APPROVAL_LAYERS
from ask_permissions.policy._table import (
    UNATTENDED,
    UNCHANGED,
    Decided,
    Layer,
    Opinion,
    Rewrite,
    Table,
    Texts,
)
from ask_permissions.typing import ApprovalLayer, PolicyLike


@dataclass(frozen=True)
class _Facts:
    """The smallest facts a table can read: a name, arguments and whether a person is there."""

    name: str
    arguments: object = None
    call_id: object = None
    interactive: bool = True
    auto: bool = False

    @property
    def match(self) -> MatchedRule | None:
        return None

    def queue_approves(self) -> bool:
        return self.auto

    def with_arguments(self, arguments: object) -> _Facts:
        return _Facts(self.name, arguments, self.call_id, self.interactive, self.auto)


def _says(opinion: Opinion | None, when: str | None = None) -> Layer[_Facts]:
    """A layer that gives ``opinion`` (for every call, or when the arguments contain ``when``)."""

    def decide(facts: _Facts) -> Opinion | None:
        if when is None or when in str(facts.arguments):
            return opinion
        return None

    return Layer(f"layer-{id(decide)}", decide)


def _guard(name: str, verdict: str, when: str) -> Layer[_Facts]:
    def decide(facts: _Facts) -> Opinion | None:
        return Opinion(verdict) if when in str(facts.arguments) else None  # type: ignore[arg-type]

    return Layer(name, decide, guard=True)


_DEFAULT: Layer[_Facts] = Layer("default", lambda facts: Opinion("proceed"))
_TEXTS = Texts({"deny": "Denied: {tool}"})


class TestTable:
    """A table's first opinion decides; guards hold provisional opinions; rewrites and texts come last."""

    def test_the_first_opinion_decides(self) -> None:
        """Layers are consulted in order; the first that answers decides, and is named."""
        deny: Layer[_Facts] = Layer("deny", lambda facts: Opinion("block") if facts.name == "rm" else None)
        table = Table((deny, _DEFAULT), _TEXTS)
        _, decided = table.decide(_Facts("rm"))
        assert (decided.layer, decided.verdict, decided.reason) == ("deny", "block", "Denied: rm")
        _, decided = table.decide(_Facts("ls"))
        assert (decided.layer, decided.verdict, decided.reason) == ("default", "proceed", None)

    def test_a_provisional_proceed_cannot_pass_a_guards_block(self) -> None:
        """A guard that blocks, wherever it sits in the table, wins over a provisional proceed."""
        provisional: Layer[_Facts] = Layer("check", lambda facts: Opinion("proceed", provisional=True))
        later_guard = _guard("deny", "block", "rm")
        table = Table((provisional, later_guard, _DEFAULT), _TEXTS)
        _, decided = table.decide(_Facts("bash", "rm -rf ~"))
        assert (decided.layer, decided.verdict) == ("deny", "block")
        _, decided = table.decide(_Facts("bash", "ls"))
        assert (decided.layer, decided.verdict) == ("check", "proceed")

    def test_a_guards_ask_wins_over_a_provisional_proceed(self) -> None:
        """A guard that asks turns a provisional proceed into that ask."""
        table = Table(
            (
                Layer("hook", lambda facts: Opinion("proceed", provisional=True)),
                _guard("ask", "ask", "git"),
                _DEFAULT,
            ),
            _TEXTS,
        )
        _, decided = table.decide(_Facts("bash", "git push"))
        assert (decided.layer, decided.verdict, decided.reason) == (
            "ask",
            "ask",
            "Tool 'bash' requires approval",
        )

    def test_a_provisional_ask_keeps_its_layer_and_reason(self) -> None:
        """When both ask, the provisional layer keeps its layer and reason; a guard's block still wins."""
        hook: Layer[_Facts] = Layer("hook", lambda facts: Opinion("ask", "The hook asks", provisional=True))
        table = Table((hook, _guard("ask", "ask", "git"), _guard("deny", "block", "rm"), _DEFAULT), _TEXTS)
        _, decided = table.decide(_Facts("bash", "git push"))
        assert (decided.layer, decided.reason) == ("hook", "The hook asks")
        _, decided = table.decide(_Facts("bash", "git rm"))
        assert (decided.layer, decided.verdict) == ("deny", "block")

    def test_rewritten_arguments_are_what_the_guards_see(self) -> None:
        """A provisional proceed with new arguments is checked against those arguments, not the model's."""
        rewrite: Layer[_Facts] = Layer(
            "check", lambda facts: Opinion("proceed", provisional=True, arguments="rm -rf ~")
        )
        table = Table((rewrite, _guard("deny", "block", "rm"), _DEFAULT), _TEXTS)
        facts, decided = table.decide(_Facts("bash", "ls"))
        assert (decided.layer, decided.verdict) == ("deny", "block")
        assert facts.arguments == "rm -rf ~"
        safe: Layer[_Facts] = Layer(
            "check", lambda facts: Opinion("proceed", provisional=True, arguments="ls -la")
        )
        facts, decided = Table((safe, _guard("deny", "block", "rm"), _DEFAULT), _TEXTS).decide(
            _Facts("bash", "ls")
        )
        assert (decided.verdict, decided.modified, decided.arguments, facts.arguments) == (
            "proceed",
            True,
            "ls -la",
            "ls -la",
        )

    def test_an_unchanged_call_is_not_modified(self) -> None:
        """A proceed without new arguments keeps UNCHANGED."""
        _, decided = Table((_DEFAULT,), _TEXTS).decide(_Facts("ls"))
        assert decided.arguments is UNCHANGED
        assert not decided.modified

    def test_rewrites_run_only_for_their_verdicts(self) -> None:
        """A rewrite listed for asks never sees a proceed."""
        seen: list[str] = []

        def note(facts: _Facts, decided: Decided) -> Decided:
            seen.append(decided.verdict)
            return decided

        ask: Layer[_Facts] = Layer("ask", lambda facts: Opinion("ask") if facts.name == "x" else None)
        table = Table((ask, _DEFAULT, Rewrite("note", note, frozenset({"ask"}))), _TEXTS)
        table.decide(_Facts("x"))
        table.decide(_Facts("y"))
        assert seen == ["ask"]

    def test_the_unattended_rewrite_keeps_the_layer(self) -> None:
        """Without a person an ask becomes a block naming why; an ask the queue approves itself stays."""
        ask: Layer[_Facts] = Layer("ask", lambda facts: Opinion("ask", auto_approvable=facts.name == "fetch"))
        table = Table((ask, UNATTENDED), _TEXTS)
        _, decided = table.decide(_Facts("bash", interactive=False))
        assert (decided.layer, decided.verdict, decided.reason) == (
            "ask",
            "block",
            "Tool 'bash' requires approval, and no one can approve it in this session",
        )
        _, decided = table.decide(_Facts("fetch", interactive=False, auto=True))
        assert (decided.verdict, decided.auto_approvable) == ("ask", True)
        _, decided = table.decide(_Facts("bash"))
        assert decided.verdict == "ask"

    @pytest.mark.parametrize(
        ("steps", "match"),
        [
            ((UNATTENDED, _DEFAULT), "layers first, then its rewrites"),
            ((_DEFAULT, Layer("default", lambda facts: None)), "layer names must be unique"),
        ],
        ids=["rewrite-first", "duplicate-name"],
    )
    def test_malformed_tables_are_refused(self, steps: tuple[object, ...], match: str) -> None:
        """A table is checked when it is built."""
        with pytest.raises(ValueError, match=match):
            Table(steps, _TEXTS)  # type: ignore[arg-type]

    def test_settled_opinions_made_per_call_do_not_pile_up(self) -> None:
        """Opinions a layer makes afresh on every call are not all kept (only a few constants are)."""
        fresh: Layer[_Facts] = Layer("fresh", lambda facts: Opinion("block", f"no {facts.name}"))
        table = Table((fresh,), _TEXTS)
        for number in range(1000):
            _, decided = table.decide(_Facts(f"tool{number}"))
            assert decided.reason == f"no tool{number}"


class TestApprovalTable:
    """ApprovalPolicy is the gem's table: its names are the records' layers, in order."""

    def test_names_are_the_record_layers(self) -> None:
        """The table's layer names are exactly the ApprovalLayer literal, in the same order."""
        assert get_args(ApprovalLayer) == APPROVAL_LAYERS
        assert ApprovalPolicy(queue=ApprovalQueue()).layers == APPROVAL_LAYERS

    def test_the_policy_satisfies_the_public_protocol(self) -> None:
        """An ApprovalPolicy is a PolicyLike (what adapters and the command accept)."""
        policy: PolicyLike = ApprovalPolicy(queue=ApprovalQueue())
        assert policy.evaluate(ToolCall("x")).layer == "default"
