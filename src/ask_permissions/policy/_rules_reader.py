"""Reading a rules layer: ``classify`` decides; ``explain`` only describes a decision it agrees with."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, final

from ask_permissions._errors import preview
from ask_permissions._vocabulary import Classifier, Decision
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules, RuleMatch, checked_decision, checked_match_decision

__all__ = ["Reading", "rules_reader"]


def _explains_itself(rules: object) -> bool:
    """Whether ``rules.explain`` is, by construction, the reading ``rules.classify`` makes."""
    if isinstance(rules, PermissionRules):
        return True
    if isinstance(rules, PermissionRuleSet):
        # A rule set explains with its layers' explain and classifies with their classify: the two agree only
        # when every layer's do.
        layers = (rules.default_rules, rules.project_rules)
        return all(layer is None or _explains_itself(layer) for layer in layers)
    return False


Reading: TypeAlias = "Callable[[str, object], tuple[Decision | None, RuleMatch | None]]"
"""Reads one call: the rules' decision, and the rule that explains it (``None`` when none agrees)."""


def rules_reader(rules: Classifier | None) -> Reading:
    """How a policy reads this rules object, worked out once when the policy is built.

    This package's own rules explain exactly what they classify, so one pass suffices; for any other object
    ``classify`` (the documented contract of a rules layer) decides, and ``explain`` only describes: an
    explain that disagrees is left out, one that answers no ``RuleMatch`` or no valid decision is refused.
    """
    if rules is None:
        return _no_rules
    if _explains_itself(rules):
        return _Trusted(rules.explain).read  # type: ignore[attr-defined]  # ours: explain exists
    return _Checked(rules.classify, getattr(rules, "explain", None)).read


def _no_rules(name: str, arguments: object) -> tuple[Decision | None, RuleMatch | None]:
    return None, None


@final
class _Trusted:
    __slots__ = ("_explain",)

    def __init__(self, explain: Callable[[str, object], RuleMatch | None]) -> None:
        self._explain = explain

    def read(self, name: str, arguments: object) -> tuple[Decision | None, RuleMatch | None]:
        match = self._explain(name, arguments)
        return (None, None) if match is None else (match.decision, match)


@final
class _Checked:
    __slots__ = ("_classify", "_explain")

    def __init__(
        self, classify: Callable[[str, object], object], explain: Callable[[str, object], object] | None
    ) -> None:
        self._classify = classify
        self._explain = explain

    def read(self, name: str, arguments: object) -> tuple[Decision | None, RuleMatch | None]:
        described: RuleMatch | None = None
        if self._explain is not None:
            found = self._explain(name, arguments)
            if found is not None:
                if not isinstance(found, RuleMatch):
                    raise TypeError(
                        f"rules.explain({name!r}): expected a RuleMatch or None; got {preview(found)}"
                    )
                # A broken explainer is refused outright, before anything is decided.
                checked_match_decision(found.decision, f"rules.explain({name!r})")
                described = found
        decision = checked_decision(self._classify(name, arguments), f"rules.classify({name!r})")
        if described is not None and described.decision != decision:
            described = None  # explain disagrees with classify: classify decides, nothing is described
        return decision, described
