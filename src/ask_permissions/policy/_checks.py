"""Checks as plain functions (seed 001's "policy as a function"): allow, deny, ask, or modify a call.

A check is a function of the call that answers a ``PermissionCheck`` (or ``None`` to pass). Policies consult
their ``checks=[...]`` where a tool's own check sits; when several answer, deny beats ask beats modify beats
allow (seed 001's precedence lattice), and the answer that decided is the one the record keeps. A check's
allow, ask or modify is provisional: deny rules, ask rules and the other guards of the policy's table are
still consulted — on the rewritten arguments, for a modify.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final

from ask_permissions._errors import preview
from ask_permissions._tool_call import ToolCall

from ._table import UNCHANGED, Opinion

__all__ = [
    "Check",
    "CheckFunction",
    "CheckVerdict",
    "PermissionCheck",
    "allow_all",
    "check",
    "deny_all",
    "run_checks",
]

CheckVerdict: TypeAlias = Literal["allow", "deny", "ask", "modify"]
"""A check's answer: run the call, refuse it, ask a person, or run it with replaced arguments."""

DENY_ALL_REASON: Final = "blocked by policy"


@final
@dataclass(frozen=True, slots=True)
class PermissionCheck:
    """What a check function answers about one call (seed 001's ``PermissionCheck``).

    Build one with ``PermissionCheck.allow()``, ``.deny(reason)``, ``.ask(prompt)`` or ``.modify(arguments)``.
    The reason is what the model reads, so make it actionable: "shell execution is disabled in this session"
    lets the model pick another path; "denied" teaches it nothing. An ask's prompt names the effect.

    Attributes:
        verdict: ``"allow"``, ``"deny"``, ``"ask"`` or ``"modify"``.
        reason: a deny's reason or an ask's prompt (``None``: the policy's fixed text).
        arguments: a modify's replacement arguments (not re-validated against the tool's schema: keep them
            valid yourself).
        safety: an ask that is a safety check: in a layered policy no mode and no allow rule lifts it.
        reviewable: whether ``auto`` mode's reviewer may answer the ask instead of a person.
    """

    verdict: CheckVerdict
    reason: str | None = None
    arguments: object = UNCHANGED
    safety: bool = False
    reviewable: bool = True

    @classmethod
    def allow(cls) -> PermissionCheck:
        """Run the call (the policy's guards still apply)."""
        return _ALLOW

    @classmethod
    def deny(cls, reason: str) -> PermissionCheck:
        """Refuse the call; ``reason`` reaches the model."""
        return cls("deny", _text(reason, "reason"))

    @classmethod
    def ask(
        cls, prompt: str | None = None, *, safety: bool = False, reviewable: bool | None = None
    ) -> PermissionCheck:
        """Ask a person; ``prompt`` (what the call would do) is the pending reason.

        ``safety=True`` makes it a safety check no mode or allow rule lifts; its reviewer may not answer it
        unless ``reviewable=True`` says so (other asks are reviewable unless ``reviewable=False``).
        """
        text = None if prompt is None else _text(prompt, "prompt")
        return cls("ask", text, safety=safety, reviewable=not safety if reviewable is None else reviewable)

    @classmethod
    def modify(cls, arguments: object) -> PermissionCheck:
        """Run the call with these arguments instead of the model's (deny and ask rules see the new ones)."""
        return cls("modify", None, arguments)

    @property
    def is_allow(self) -> bool:
        """Whether the call may run as it is."""
        return self.verdict == "allow"

    @property
    def is_deny(self) -> bool:
        """Whether the call is refused."""
        return self.verdict == "deny"

    @property
    def is_ask(self) -> bool:
        """Whether a person must answer."""
        return self.verdict == "ask"

    @property
    def is_modify(self) -> bool:
        """Whether the call runs with replaced arguments."""
        return self.verdict == "modify"


_ALLOW: Final = PermissionCheck("allow")

CheckFunction: TypeAlias = "Callable[[ToolCall], PermissionCheck | None]"
"""A check: a function of the call (a ``ToolCall``) answering a ``PermissionCheck``, or ``None`` to pass."""


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{field}: expected a non-empty string; got {preview(value)}")
    return str.__str__(value)


@final
@dataclass(frozen=True, slots=True)
class Check:
    """A check function with the id its records carry verbatim (``"check"`` when none is given)."""

    function: CheckFunction
    rule_id: str = "check"

    def __call__(self, call: ToolCall) -> PermissionCheck | None:
        answer = self.function(call)
        if answer is not None and not isinstance(answer, PermissionCheck):
            # A misspelt answer ("DENY", False) must not read as "no opinion": refuse it loudly.
            raise TypeError(
                f"check {self.rule_id!r}: expected a PermissionCheck or None; got {preview(answer)}"
            )
        return answer


def check(function: CheckFunction, *, rule_id: str | None = None) -> Check:
    """A check made from a plain function of the call; ``rule_id`` rides its records verbatim.

    Raises:
        TypeError: ``function`` is not callable, or ``rule_id`` is not a non-empty string.
    """
    if not callable(function):
        raise TypeError(f"function: expected a callable; got {preview(function)}")
    return Check(function, "check" if rule_id is None else _text(rule_id, "rule_id"))


def deny_all() -> Check:
    """A sandbox: every call is blocked with "blocked by policy"."""
    return Check(lambda call: PermissionCheck.deny(DENY_ALL_REASON), "deny_all")


def allow_all() -> Check:
    """Pass-through: every call may run (the policy's deny and ask rules still apply)."""
    return Check(lambda call: _ALLOW, "allow_all")


def read_checks(checks: Iterable[object] | None) -> tuple[Check, ...]:
    """A policy's ``checks=``: each a ``Check`` or a plain function (then with the id ``"check"``).

    Raises:
        TypeError: not an iterable of checks or functions.
    """
    if checks is None:
        return ()
    if isinstance(checks, str | bytes) or not isinstance(checks, Iterable):
        raise TypeError(f"checks: expected a list of checks; got {preview(checks)}")
    read: list[Check] = []
    for position, entry in enumerate(checks):
        if isinstance(entry, Check):
            read.append(entry)
        elif callable(entry):
            read.append(Check(entry))
        else:
            raise TypeError(f"checks[{position}]: expected a check or a function; got {preview(entry)}")
    return tuple(read)


_RANK: Final = {"deny": 3, "ask": 2, "modify": 1, "allow": 0}


def run_checks(checks: Sequence[Check], call: ToolCall) -> Opinion | None:
    """Every check's answer for the call, combined: deny beats ask beats modify beats allow.

    Checks run in order; a modify's arguments are what the following checks see, so rewrites compose.
    The answer that decided is the one kept (its ``rule_id``); ``None`` when no check answered.
    """
    best: tuple[PermissionCheck, Check] | None = None
    arguments: object = UNCHANGED
    current = call
    for each in checks:
        answer = each(current)
        if answer is None:
            continue
        if answer.verdict == "modify":
            arguments = answer.arguments
            current = ToolCall(call.name, arguments, call.id)
        rank, best_rank = _RANK[answer.verdict], -1 if best is None else _RANK[best[0].verdict]
        # A tie keeps the first answer, except between rewrites: the last one is what runs.
        if rank > best_rank or (rank == best_rank and answer.verdict == "modify"):
            best = (answer, each)
    if best is None:
        return None
    answer, decided_by = best
    if answer.verdict == "deny":
        return Opinion("block", answer.reason, rule_id=decided_by.rule_id)
    if answer.verdict == "ask":
        return Opinion(
            "ask", answer.reason, provisional=True, arguments=arguments, rule_id=decided_by.rule_id
        )
    return Opinion("proceed", provisional=True, arguments=arguments, rule_id=decided_by.rule_id)
