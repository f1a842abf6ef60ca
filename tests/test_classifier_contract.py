"""The classifier contract, run against PermissionRules and PermissionRuleSet.

classify returns a decision or None; allows / asks / denies agree with it; explain names a rule that
matches the call and carries classify's decision, or is None exactly when classify is.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Protocol

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ask_permissions import ALL, PermissionRuleSet, RuleMatch
from ask_permissions.typing import Decision

from .strategies import RuleSpec, build_rules, calls, rule_lists

# The same @given test runs in each subclass: that is the point of a contract class, not a flaky setup.
_SHARED = settings(deadline=None, suppress_health_check=[HealthCheck.differing_executors])


class _RuleClassifier(Protocol):
    def classify(self, tool_name: str, arguments: object = None) -> Decision | None: ...
    def explain(self, tool_name: str, arguments: object = None) -> RuleMatch | None: ...
    def allows(self, tool_name: str, arguments: object = None) -> bool: ...
    def asks(self, tool_name: str, arguments: object = None) -> bool: ...
    def denies(self, tool_name: str, arguments: object = None) -> bool: ...


class ClassifierContract:
    """Behaviour every rule classifier shares; subclasses say how to build one from rule specs."""

    layers: ClassVar[tuple[str | None, ...]] = ()

    def make(self, specs: list[RuleSpec], auto_allow_dangerous: bool = False) -> _RuleClassifier:
        raise NotImplementedError

    @given(specs=rule_lists, auto=st.booleans(), probes=st.lists(calls, max_size=6))
    @settings(_SHARED, max_examples=100)
    def test_predicates_agree_with_classify(
        self, specs: list[RuleSpec], auto: bool, probes: list[Any]
    ) -> None:
        """allows / asks / denies are true exactly when classify returns that decision."""
        classifier = self.make(specs, auto)
        for name, args in probes:
            decision = classifier.classify(name, args)
            assert decision in (None, "allow", "ask", "deny")
            assert classifier.allows(name, args) is (decision == "allow")
            assert classifier.asks(name, args) is (decision == "ask")
            assert classifier.denies(name, args) is (decision == "deny")

    @given(specs=rule_lists, auto=st.booleans(), probes=st.lists(calls, max_size=6))
    @settings(_SHARED, max_examples=100)
    def test_explain_agrees_with_classify(self, specs: list[RuleSpec], auto: bool, probes: list[Any]) -> None:
        """explain is None exactly when classify is; else its rule matches and its decision is classify's."""
        classifier = self.make(specs, auto)
        for name, args in probes:
            decision = classifier.classify(name, args)
            match = classifier.explain(name, args)
            if decision is None:
                assert match is None
                continue
            assert match is not None
            assert match.decision == decision
            assert match.rule is not None
            assert match.rule.matches(name, args)
            assert match.rule.effective_decision == decision
            assert match.layer in self.layers

    @given(specs=rule_lists, probes=st.lists(calls, max_size=6))
    @settings(_SHARED, max_examples=50)
    def test_arguments_untouched(self, specs: list[RuleSpec], probes: list[Any]) -> None:
        """Classifying never changes the arguments it is given."""
        classifier = self.make(specs)
        for name, args in probes:
            before = copy.deepcopy(args)
            classifier.classify(name, args)
            classifier.explain(name, args)
            assert args == before

    def test_empty_matches_nothing(self) -> None:
        """With no rules every call classifies as None and explains as None."""
        classifier = self.make([])
        assert classifier.classify("bash", {"command": "ls"}) is None
        assert classifier.explain("bash") is None
        assert not classifier.allows("x")
        assert not classifier.asks("x")
        assert not classifier.denies("x")

    def test_deny_all(self) -> None:
        """A deny on ALL denies every call."""
        classifier = self.make([("deny", ALL, None)])
        assert classifier.denies("bash")
        assert classifier.denies("read_file", {"path": "/"})

    def test_guard_applies(self) -> None:
        """An unrestricted allow on bash is asked, unless the guard is switched off."""
        assert self.make([("allow", "bash", None)]).classify("bash") == "ask"
        assert self.make([("allow", "bash", None)], auto_allow_dangerous=True).classify("bash") == "allow"


class TestPermissionRulesContract(ClassifierContract):
    """The contract, for PermissionRules."""

    layers = (None,)

    def make(self, specs: list[RuleSpec], auto_allow_dangerous: bool = False) -> _RuleClassifier:
        return build_rules(specs, auto_allow_dangerous=auto_allow_dangerous)


class TestPermissionRuleSetContract(ClassifierContract):
    """The contract, for PermissionRuleSet with the rules dealt alternately to the two layers."""

    layers = ("default", "project")

    def make(self, specs: list[RuleSpec], auto_allow_dangerous: bool = False) -> _RuleClassifier:
        return PermissionRuleSet(
            default_rules=build_rules(specs[::2], auto_allow_dangerous=auto_allow_dangerous),
            project_rules=build_rules(specs[1::2], auto_allow_dangerous=auto_allow_dangerous),
        )
