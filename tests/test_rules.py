"""PermissionRules, Rule and RuleMatch: ordered rules, the dangerous-tool guard, explain and snapshots."""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ask_permissions.rules._rules as rules_module
from ask_permissions import (
    ALL,
    DANGEROUS_TOOLS,
    InvalidSnapshotError,
    PermissionRules,
    PermissionsError,
    Rule,
    RuleMatch,
)
from ask_permissions.rules._patterns import serialize_arguments, tool_pattern_matches

from .hostile import (
    HUGE_INT,
    HostileDict,
    HostileList,
    HostileObject,
    HostileStr,
    assert_reads_or_rejects,
    assert_refused,
    circular_dict,
    hostile_snapshots,
    nested,
)
from .reference import reference_classify
from .strategies import (
    RuleSpec,
    arguments,
    assert_snapshot_error,
    build_rules,
    calls,
    json_values,
    mutate,
    permission_rules,
    restored_or_rejected,
    rule_lists,
    rule_specs,
    tool_names,
)
from .test_names import FOLDED_TO_BASH
from .threads import JOIN_TIMEOUT, join, start


def seed_rules() -> PermissionRules:
    """The seed's first example: allow read_file, ask bash "rm -rf", deny delete_user."""
    rules = PermissionRules()
    rules.allow("read_file")
    rules.ask("bash", "rm -rf")
    rules.deny("delete_user")
    return rules


class TestSeedExamples:
    """Every example of the gem README's PermissionRules section, in Python."""

    def test_first_match_example(self) -> None:
        """The declared rules classify the seed's four calls as shown."""
        rules = seed_rules()
        assert rules.classify("bash", {"command": "sudo rm -rf /tmp"}) == "ask"
        assert rules.classify("read_file") == "allow"
        assert rules.classify("delete_user") == "deny"
        assert rules.classify("unknown") is None

    def test_predicates_example(self) -> None:
        """allows / asks / denies answer as the seed's allow? / ask? / deny? do."""
        rules = seed_rules()
        assert rules.allows("read_file")
        assert rules.asks("bash", {"command": "rm -rf /"})
        assert rules.denies("delete_user")

    def test_configure_callable_example(self) -> None:
        """The configure callable declares the same rules as the seed's block."""
        rules = PermissionRules(lambda r: r.allow("read_file").deny("delete_user").ask("bash", "rm -rf"))
        assert [(rule.decision, rule.tool_pattern, rule.argument_pattern) for rule in rules.rules] == [
            ("allow", "read_file", None),
            ("deny", "delete_user", None),
            ("ask", "bash", "rm -rf"),
        ]
        assert rules.classify("bash", {"command": "rm -rf /"}) == "ask"

    def test_argument_pattern_example(self) -> None:
        """A substring, a regex and no argument pattern match as the seed describes."""
        rules = PermissionRules()
        rules.ask("bash", "rm -rf")
        rules.allow("read_file", re.compile("/docs/"))
        rules.allow("search")
        assert rules.classify("bash", {"command": "rm -rf /"}) == "ask"
        assert rules.classify("bash", {"command": "ls"}) is None
        assert rules.classify("read_file", {"path": "/docs/guide.md"}) == "allow"
        assert rules.classify("read_file", {"path": "/etc/passwd"}) is None
        assert rules.classify("search", {"q": "anything"}) == "allow"
        assert rules.classify("search") == "allow"

    def test_dangerous_example(self) -> None:
        """allow "bash" is declared allow, effective ask, and classifies as ask."""
        rules = PermissionRules()
        rules.allow("bash")
        rule = rules.rules[0]
        assert rule.decision == "allow"
        assert rule.declared_decision == "allow"
        assert rule.effective_decision == "ask"
        assert rules.classify("bash") == "ask"

    def test_dangerous_tools_constant(self) -> None:
        """DANGEROUS_TOOLS is the immutable tuple bash, code, repl."""
        assert DANGEROUS_TOOLS == ("bash", "code", "repl")
        assert isinstance(DANGEROUS_TOOLS, tuple)

    def test_allow_all_downgrades_every_tool(self) -> None:
        """allow ALL covers the dangerous tools, so every tool it matches classifies as ask."""
        rules = PermissionRules().allow(ALL)
        assert rules.classify("read_file") == "ask"
        assert rules.classify("bash", {"command": "ls"}) == "ask"
        assert rules.dangerous_rules == rules.rules

    def test_restricted_allow_and_other_decisions(self) -> None:
        """A restricted allow stays allow; deny and ask are never downgraded."""
        rules = PermissionRules().allow("bash", "ls -la").deny("bash")
        assert rules.classify("bash", {"command": "ls -la"}) == "allow"
        assert rules.classify("bash", {"command": "pwd"}) == "deny"
        assert [rule.effective_decision for rule in rules.rules] == ["allow", "deny"]
        assert rules.dangerous_rules == []

    def test_auto_allow_dangerous_example(self) -> None:
        """auto_allow_dangerous=True switches the guard off."""
        rules = PermissionRules(auto_allow_dangerous=True).allow("bash")
        assert rules.auto_allow_dangerous is True
        assert rules.classify("bash") == "allow"

    def test_ruleset_layer_example_rules(self) -> None:
        """The seed's `deny :bash, /rm\\s+-rf/` denies the call its rule-set example shows."""
        defaults = PermissionRules(lambda r: r.deny("bash", re.compile(r"rm\s+-rf")))
        assert defaults.classify("bash", {"command": "rm -rf /tmp"}) == "deny"
        assert defaults.classify("bash", {"command": "ls"}) is None

    def test_unconfigured_returns_none(self) -> None:
        """A ruleset with no matching rule returns None (the policy treats it as proceed)."""
        assert PermissionRules().classify("anything", {"x": 1}) is None


class TestFirstMatch:
    """Rules are evaluated in declaration order and the first match decides."""

    def test_earlier_rule_wins(self) -> None:
        """An earlier rule decides even when a later one also matches."""
        rules = PermissionRules().deny("bash", "rm").allow("bash", "ls")
        assert rules.classify("bash", "rm; ls") == "deny"
        rules = PermissionRules().allow("bash", "ls").deny("bash", "rm")
        assert rules.classify("bash", "rm; ls") == "allow"

    def test_later_rule_used_when_earlier_misses(self) -> None:
        """A rule whose argument pattern misses does not stop the search."""
        rules = PermissionRules().deny("bash", "rm").ask("bash", "sudo").allow("bash", "ls")
        assert rules.classify("bash", "ls") == "allow"
        assert rules.classify("bash", "sudo ls") == "ask"

    def test_tool_pattern_kinds_in_order(self) -> None:
        """A broad ALL rule after narrow ones only catches what they leave."""
        rules = PermissionRules().allow("read_file").deny(re.compile("^write_")).ask(ALL)
        assert rules.classify("read_file") == "allow"
        assert rules.classify("write_file") == "deny"
        assert rules.classify("fetch") == "ask"

    def test_rule_added_later_applies(self) -> None:
        """A rule added after earlier classifications is used by the next one."""
        rules = PermissionRules()
        assert rules.classify("fetch") is None
        rules.deny("fetch")
        assert rules.classify("fetch") == "deny"


DANGEROUS_CASES = [
    # (decision, tool_pattern, argument_pattern, dangerous, effective)
    pytest.param("allow", "bash", None, True, "ask", id="bash-unrestricted"),
    pytest.param("allow", "code", None, True, "ask", id="code"),
    pytest.param("allow", "repl", None, True, "ask", id="repl"),
    pytest.param("allow", ALL, None, True, "ask", id="ALL"),
    pytest.param("allow", "bash", ALL, True, "ask", id="argument-ALL"),
    pytest.param("allow", re.compile("^ba"), None, True, "ask", id="regex-matching-bash"),
    pytest.param("allow", re.compile("e"), None, True, "ask", id="regex-matching-code-repl"),
    pytest.param("allow", re.compile("BASH", re.I), None, True, "ask", id="regex-ignorecase"),
    pytest.param("allow", re.compile(""), None, True, "ask", id="empty-regex-tool"),
    pytest.param("allow", "bash", "", True, "ask", id="hardening-empty-substring"),
    pytest.param("allow", "bash", re.compile(""), True, "ask", id="hardening-empty-regex"),
    pytest.param("allow", "bash", re.compile(".*"), True, "ask", id="hardening-dot-star"),
    pytest.param("allow", "bash", re.compile("^$"), True, "ask", id="hardening-matches-empty"),
    pytest.param("allow", ALL, "", True, "ask", id="hardening-ALL-empty"),
    pytest.param("allow", "bash", "ls -la", False, "allow", id="restricted-substring"),
    pytest.param("allow", "bash", re.compile("^ls"), False, "allow", id="restricted-regex"),
    pytest.param("allow", "read_file", None, False, "allow", id="safe-tool"),
    pytest.param("allow", "Bash", None, True, "ask", id="folded-name"),
    pytest.param(
        "allow", "\uff22\uff21\uff33\uff28\u200b ", None, True, "ask", id="folded-fullwidth-invisible"
    ),
    pytest.param("allow", re.compile("^(Bash|Read)$"), None, True, "ask", id="regex-matching-title-case"),
    pytest.param("allow", re.compile("^CODE$"), None, True, "ask", id="regex-matching-upper-case"),
    pytest.param("allow", "bash", "{", True, "ask", id="hardening-brace"),
    pytest.param("allow", "bash", '"', True, "ask", id="hardening-quote"),
    pytest.param("allow", "bash", "command", True, "ask", id="hardening-key-name"),
    pytest.param("allow", "bash", '"command":"', True, "ask", id="hardening-key-and-quote"),
    pytest.param("allow", "bash", re.compile("."), True, "ask", id="hardening-dot"),
    pytest.param("allow", "bash", re.compile(r"\S"), True, "ask", id="hardening-non-space"),
    pytest.param("allow", "bash", re.compile("(?s).+"), True, "ask", id="hardening-dotall-plus"),
    pytest.param("allow", "bash", re.compile("^{}$"), True, "ask", id="hardening-empty-object"),
    pytest.param("allow", "bash", '"command":"ls', False, "allow", id="restricted-command-prefix"),
    pytest.param("allow", "bash", re.compile(r"\w{8}"), False, "allow", id="restricted-longer-than-probes"),
    pytest.param("allow", "all", None, False, "allow", id="string-all-is-a-name"),
    pytest.param("allow", "bashful", None, False, "allow", id="exact-name-not-prefix"),
    pytest.param("allow", re.compile("^read_"), None, False, "allow", id="regex-missing-all"),
    pytest.param("deny", "bash", None, False, "deny", id="deny-never"),
    pytest.param("ask", ALL, None, False, "ask", id="ask-never"),
    pytest.param("deny", "bash", "", False, "deny", id="deny-empty-never"),
]


class TestDangerousGuard:
    """An unrestricted allow on a code-executing tool is downgraded to ask, for classification only."""

    @pytest.mark.parametrize(("decision", "tool", "argument", "dangerous", "effective"), DANGEROUS_CASES)
    def test_case(self, decision: str, tool: Any, argument: Any, dangerous: bool, effective: str) -> None:
        """Each rule is marked dangerous and downgraded exactly as documented."""
        rules = PermissionRules().add(decision, tool, argument)  # type: ignore[arg-type]
        rule = rules.rules[0]
        assert rule.dangerous is dangerous
        assert rule.decision == rule.declared_decision == decision
        assert rule.effective_decision == effective
        assert rules.dangerous_rules == ([rule] if dangerous else [])

    @pytest.mark.parametrize(("decision", "tool", "argument", "dangerous", "effective"), DANGEROUS_CASES)
    def test_opt_out(self, decision: str, tool: Any, argument: Any, dangerous: bool, effective: str) -> None:
        """With auto_allow_dangerous=True the rule keeps its decision but is still marked dangerous."""
        del effective
        rules = PermissionRules(auto_allow_dangerous=True).add(decision, tool, argument)  # type: ignore[arg-type]
        rule = rules.rules[0]
        assert rule.dangerous is dangerous
        assert rule.effective_decision == decision
        assert rules.dangerous_rules == ([rule] if dangerous else [])

    def test_classify_uses_effective_decision(self) -> None:
        """classify returns the downgraded decision for every call the rule matches."""
        rules = PermissionRules().allow("bash", "")
        assert rules.classify("bash", {"command": "rm -rf /"}) == "ask"
        assert rules.classify("bash") == "ask"
        assert not rules.allows("bash", "ls")
        assert rules.asks("bash", "ls")

    def test_is_universal_only_when_no_pattern(self) -> None:
        """is_universal means argument_pattern is None, whatever the pattern matches."""
        rules = (
            PermissionRules().allow("bash").allow("bash", "").allow("bash", ALL).allow("bash", re.compile(""))
        )
        assert [rule.is_universal for rule in rules.rules] == [True, False, True, False]
        assert [rule.dangerous for rule in rules.rules] == [True, True, True, True]

    def test_dangerous_rules_in_declaration_order(self) -> None:
        """dangerous_rules lists the dangerous rules in declaration order, skipping the others."""
        rules = (
            PermissionRules()
            .allow("repl")
            .allow("read_file")
            .allow(ALL, "")
            .deny("bash")
            .allow(re.compile("^co"))
        )
        assert [rule.tool_pattern for rule in rules.dangerous_rules] == ["repl", ALL, re.compile("^co")]

    def test_opt_out_must_be_a_bool(self) -> None:
        """auto_allow_dangerous only accepts a real bool, so 1 or "yes" cannot switch the guard off."""
        for value in (1, "yes", None):
            with pytest.raises(TypeError, match=f"auto_allow_dangerous: expected a bool; got {value!r}"):
                PermissionRules(auto_allow_dangerous=value)  # type: ignore[arg-type]


class TestDeclaring:
    """allow / ask / deny / add declare rules, chain, and refuse bad input."""

    def test_methods_return_the_ruleset(self) -> None:
        """allow, ask, deny and add return the ruleset itself, so calls chain."""
        rules = PermissionRules()
        assert rules.allow("a") is rules
        assert rules.ask("b") is rules
        assert rules.deny("c") is rules
        assert rules.add("deny", "d") is rules
        assert [rule.decision for rule in rules.rules] == ["allow", "ask", "deny", "deny"]

    def test_configure_called_once_with_the_ruleset(self) -> None:
        """The configure callable receives the new ruleset, once."""
        seen: list[PermissionRules] = []
        rules = PermissionRules(seen.append)
        assert seen == [rules]

    def test_configure_sees_auto_allow_dangerous(self) -> None:
        """Rules declared in configure already get the opt-out passed alongside it."""
        rules = PermissionRules(lambda r: r.allow("bash"), auto_allow_dangerous=True)
        assert rules.classify("bash") == "allow"

    def test_configure_error_propagates(self) -> None:
        """An exception raised by configure reaches the caller."""

        def configure(rules: PermissionRules) -> None:
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            PermissionRules(configure)

    def test_all_argument_stored_as_none(self) -> None:
        """ALL as an argument pattern is stored as None."""
        assert PermissionRules().allow("search", ALL).rules[0].argument_pattern is None

    def test_unknown_decision(self) -> None:
        """add refuses a decision that is not allow, ask or deny."""
        with pytest.raises(ValueError, match="decision: expected one of allow, ask, deny; got 'approve'"):
            PermissionRules().add("approve", "bash")  # type: ignore[arg-type]

    def test_empty_tool_name(self) -> None:
        """An empty tool name is a ValueError and declares nothing."""
        rules = PermissionRules()
        with pytest.raises(ValueError, match="tool_pattern"):
            rules.allow("")
        assert rules.rules == []

    @pytest.mark.parametrize(
        ("tool", "argument", "field"),
        [
            pytest.param(None, None, "tool_pattern", id="tool-none"),
            pytest.param(b"bash", None, "tool_pattern", id="tool-bytes"),
            pytest.param(re.compile(b"x"), None, "tool_pattern", id="tool-bytes-regex"),
            pytest.param("bash", b"ls", "argument_pattern", id="argument-bytes"),
            pytest.param("bash", 1, "argument_pattern", id="argument-int"),
        ],
    )
    def test_wrong_types(self, tool: Any, argument: Any, field: str) -> None:
        """Patterns of the wrong type are a TypeError naming the field, and declare nothing."""
        rules = PermissionRules()
        with pytest.raises(TypeError, match=f"{field}: expected"):
            rules.deny(tool, argument)
        assert len(rules) == 0


class TestIntrospection:
    """rules, dangerous_rules, len and repr show the declared rules."""

    def test_rules_in_declaration_order(self) -> None:
        """rules lists Rule values in declaration order with their patterns as stored."""
        regex = re.compile("^write_")
        rules = PermissionRules().allow("read_file").deny(regex, "x").ask(ALL, ALL)
        assert rules.rules == [
            Rule("allow", "read_file", None, False, "allow"),
            Rule("deny", regex, "x", False, "deny"),
            Rule("ask", ALL, None, False, "ask"),
        ]

    def test_lists_are_fresh(self) -> None:
        """Mutating a returned list does not change the ruleset."""
        rules = PermissionRules().allow("bash")
        rules.rules.clear()
        rules.dangerous_rules.clear()
        assert len(rules.rules) == 1
        assert len(rules.dangerous_rules) == 1

    def test_rule_is_frozen(self) -> None:
        """Rule is a frozen dataclass."""
        rule = PermissionRules().allow("bash").rules[0]
        with pytest.raises(AttributeError):
            rule.decision = "deny"  # type: ignore[misc]

    def test_len_and_repr(self) -> None:
        """len counts the rules; repr shows the count and the opt-out."""
        rules = PermissionRules().allow("a").deny("b")
        assert len(rules) == 2
        assert repr(rules) == "<PermissionRules rules=2>"
        assert (
            repr(PermissionRules(auto_allow_dangerous=True))
            == "<PermissionRules rules=0 auto_allow_dangerous>"
        )


class TestRuleMatchers:
    """Rule.tool_matches, argument_matches and matches agree with classification."""

    def test_matchers(self) -> None:
        """Each matcher answers for its half of the rule; matches needs both."""
        rule = PermissionRules().ask("bash", "rm -rf").rules[0]
        assert rule.tool_matches("bash")
        assert not rule.tool_matches("bash2")
        assert rule.argument_matches({"command": "rm -rf /"})
        assert not rule.argument_matches({"command": "ls"})
        assert not rule.argument_matches()
        assert rule.matches("bash", "rm -rf /")
        assert not rule.matches("sh", "rm -rf /")
        assert not rule.matches("bash", "ls")

    def test_universal_rule_matches_any_arguments(self) -> None:
        """A rule with no argument pattern matches any arguments, including none."""
        rule = PermissionRules().allow(re.compile("^read")).rules[0]
        assert rule.matches("read_file")
        assert rule.matches("reader", {"anything": [1, 2]})
        assert not rule.matches("write")

    def test_regex_tool_pattern_is_searched(self) -> None:
        """A regex tool pattern is searched in the name, not anchored."""
        rule = PermissionRules().deny(re.compile("delete")).rules[0]
        assert rule.tool_matches("bulk_delete_users")


ARGUMENT_CLASSIFY_CASES = [
    # (argument_pattern, arguments, matches)
    pytest.param('"command":"ls"', {"command": "ls"}, True, id="compact-json"),
    pytest.param('"command": "ls"', {"command": "ls"}, False, id="no-spaces-in-json"),
    pytest.param('{"a":1,"b":2}', {"a": 1, "b": 2}, True, id="key-order-kept"),
    pytest.param('{"b":2', {"a": 1, "b": 2}, False, id="keys-not-sorted"),
    pytest.param("/tmp/é", {"path": "/tmp/é"}, True, id="non-ascii-kept"),
    pytest.param("\\u00e9", {"path": "é"}, False, id="no-ascii-escapes"),
    pytest.param('"command": "ls"', '{"command": "ls"}', True, id="raw-str-as-is"),
    pytest.param('"command":"ls"', '{"command": "ls"}', False, id="raw-str-own-spacing"),
    pytest.param("", None, True, id="none-is-empty-matches-empty"),
    pytest.param("null", None, False, id="none-is-not-null"),
    pytest.param(re.compile("^$"), None, True, id="none-regex-empty"),
    pytest.param("42", 42, True, id="int-str"),
    pytest.param("['ls'", ["ls", "-la"], True, id="list-str"),
    pytest.param(re.compile(r'^\{"command":"rm'), {"command": "rm -rf"}, True, id="regex-whole-json"),
]


class TestArgumentSerialization:
    """classify matches argument patterns against the serialization SPEC "Argument matching" defines."""

    @pytest.mark.parametrize(("pattern", "arguments", "matches"), ARGUMENT_CLASSIFY_CASES)
    def test_case(self, pattern: Any, arguments: object, matches: bool) -> None:
        """Each pattern matches the call's arguments exactly when documented."""
        rules = PermissionRules().deny("tool", pattern)
        assert rules.classify("tool", arguments) == ("deny" if matches else None)
        assert rules.rules[0].argument_matches(arguments) is matches


class _CountingMapping(Mapping[str, object]):
    """A mapping that counts how often it is iterated (serialization iterates it once)."""

    def __init__(self, data: dict[str, object]) -> None:
        self._data = data
        self.iterations = 0

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        self.iterations += 1
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class TestSerializationCount:
    """classify serializes the arguments at most once, and not at all when no candidate needs them."""

    @pytest.fixture
    def counter(self, monkeypatch: pytest.MonkeyPatch) -> list[object]:
        """Record every serialize_arguments call made by the rules module."""
        seen: list[object] = []

        def counting(arguments: object) -> str:
            seen.append(arguments)
            return serialize_arguments(arguments)

        monkeypatch.setattr(rules_module, "serialize_arguments", counting)
        return seen

    def test_no_rules(self, counter: list[object]) -> None:
        """With no rules nothing is serialized."""
        PermissionRules().classify("bash", {"command": "ls"})
        assert counter == []

    def test_no_candidate_for_the_tool(self, counter: list[object]) -> None:
        """Pattern rules on other tools are not candidates and cause no serialization."""
        rules = PermissionRules().deny("other", "rm").ask(re.compile("^x"), "y")
        assert rules.classify("bash", {"command": "ls"}) is None
        assert counter == []

    def test_universal_candidates_only(self, counter: list[object]) -> None:
        """A call decided by a rule without an argument pattern is not serialized."""
        rules = PermissionRules().allow("bash").deny("bash", "rm")
        assert rules.classify("bash", {"command": "rm"}) == "ask"
        assert counter == []

    def test_several_pattern_rules_serialize_once(self, counter: list[object]) -> None:
        """Many argument patterns tried in one call share one serialization."""
        arguments = {"command": "ls"}
        rules = (
            PermissionRules().deny("bash", "rm").ask("bash", "sudo").deny("bash", re.compile("x")).ask("bash")
        )
        assert rules.classify("bash", arguments) == "ask"
        assert counter == [arguments]

    def test_explain_serializes_once(self, counter: list[object]) -> None:
        """explain follows the same path as classify."""
        rules = PermissionRules().deny("bash", "rm").allow("bash", "ls")
        match = rules.explain("bash", "ls")
        assert match is not None
        assert match.index == 1
        assert len(counter) == 1

    def test_counting_mapping(self) -> None:
        """Without patching: a mapping passed to classify is iterated once however many patterns run."""
        arguments = _CountingMapping({"command": "ls"})
        rules = PermissionRules().deny("bash", "rm").ask("bash", "sudo").allow("bash", "ls")
        assert rules.classify("bash", arguments) == "allow"
        assert arguments.iterations == 1
        assert PermissionRules().allow("bash", "").allow("x").classify("x", arguments) == "allow"
        assert arguments.iterations == 1


class TestExplain:
    """explain reports the rule classify used, its index, and the same decision."""

    def test_reports_rule_and_index(self) -> None:
        """The RuleMatch carries the matching rule, its 0-based index and no layer."""
        rules = seed_rules()
        match = rules.explain("bash", {"command": "rm -rf /"})
        assert match == RuleMatch(rules.rules[1], 1, None, "ask")

    def test_reports_effective_decision(self) -> None:
        """A downgraded rule is explained with its effective decision; the rule keeps its declared one."""
        rules = PermissionRules().allow("bash")
        match = rules.explain("bash")
        assert match is not None
        assert match.decision == "ask"
        assert match.rule is not None
        assert match.rule.declared_decision == "allow"

    def test_none_when_nothing_matches(self) -> None:
        """explain returns None exactly when classify does."""
        rules = seed_rules()
        assert rules.explain("unknown") is None
        assert rules.explain("bash", "ls") is None

    def test_rule_match_is_frozen(self) -> None:
        """RuleMatch is a frozen dataclass."""
        match = RuleMatch(None, None, "default", "deny")
        with pytest.raises(AttributeError):
            match.decision = "allow"  # type: ignore[misc]


class TestToolNameType:
    """Tool names must be str."""

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param(None, id="none"),
            pytest.param(1, id="int"),
            pytest.param(b"bash", id="bytes"),
            pytest.param(["bash"], id="unhashable-list"),
        ],
    )
    def test_non_str_name(self, name: Any) -> None:
        """classify and explain raise a TypeError naming tool_name, before and after caching."""
        rules = PermissionRules().allow("x")
        rules.classify("x")
        for method in (rules.classify, rules.explain):
            with pytest.raises(TypeError, match="tool_name: expected a string"):
                method(name)

    def test_str_subclass_name(self) -> None:
        """A str subclass (such as a StrEnum member) is an ordinary tool name."""

        class Name(str):
            __slots__ = ()

        rules = PermissionRules().deny("bash")
        assert rules.classify(Name("bash")) == "deny"
        assert rules.classify("bash") == "deny"

    def test_str_subclass_with_its_own_str(self) -> None:
        """A name whose str() is not its text (a str-mixin Enum member) is matched by its text."""

        class Tools(str, enum.Enum):  # noqa: UP042  # str() of a member is "Tools.BASH", not "bash"
            BASH = "bash"
            RM = "rm -rf"

        rules = PermissionRules().deny(Tools.BASH).ask("shell", Tools.RM)
        assert rules.classify(Tools.BASH) == "deny"
        assert rules.classify("bash") == "deny"
        assert rules.classify("shell", {"command": "rm -rf /"}) == "ask"
        assert type(rules.rules[0].tool_pattern) is str
        assert type(rules.rules[1].argument_pattern) is str


class TestThreads:
    """Registering rules while other threads classify is safe; a classify sees the old or the new list."""

    def test_classify_sees_old_or_new_list(self) -> None:
        """A reader never sees a torn list: before the deny it sees None, after it always sees deny."""
        rules = PermissionRules()
        ready = threading.Event()
        seen: list[str | None] = []
        errors: list[BaseException] = []

        def reader() -> None:
            try:
                ready.set()
                denies = 0
                while denies < 200:  # keep reading well past the registration of the deny
                    decision = rules.classify("bash", "ls")
                    seen.append(decision)
                    denies += decision == "deny"
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        thread = start(reader)
        assert ready.wait(JOIN_TIMEOUT)
        for number in range(200):
            rules.ask("bash", f"never-{number}")
        rules.deny("bash")
        for number in range(50):
            rules.ask("bash", f"after-{number}")
        join(thread)
        assert errors == []
        assert set(seen) <= {None, "deny"}
        first_deny = seen.index("deny")
        assert all(decision == "deny" for decision in seen[first_deny:])
        match = rules.explain("bash", "ls")
        assert match is not None
        assert match.index == 200

    def test_new_rules_reach_cached_tool_names(self) -> None:
        """A tool name classified (and cached) before a registration sees the new rule afterwards."""
        names = [f"tool{number}" for number in range(40)]
        rules = PermissionRules()
        errors: list[BaseException] = []
        denied: set[str] = set()
        lock = threading.Lock()
        done = threading.Event()

        def reader() -> None:
            try:
                while not done.is_set():
                    for name in names:
                        with lock:
                            expected = name in denied
                        # Read `denied` first: a name in it was denied before this classify began.
                        if expected:
                            assert rules.classify(name) == "deny", name
                        else:
                            assert rules.classify(name) in (None, "deny")
            except BaseException as error:
                errors.append(error)

        threads = [start(reader) for _ in range(2)]
        for name in names:
            rules.deny(name)
            with lock:
                denied.add(name)
        done.set()
        join(*threads)
        assert errors == []
        assert all(rules.classify(name) == "deny" for name in names)


class TestSnapshot:
    """snapshot() writes the SPEC format; from_snapshot restores it and accepts the gem's."""

    def test_format(self) -> None:
        """The snapshot records the version, the opt-out and each rule's declared decision and patterns."""
        rules = (
            PermissionRules()
            .allow("bash")
            .ask("bash", "rm -rf")
            .deny(re.compile("^delete_", re.IGNORECASE), re.compile(r"id\s*=", re.DOTALL))
            .allow(ALL, ALL)
        )
        assert rules.snapshot() == {
            "version": 1,
            "auto_allow_dangerous": False,
            "rules": [
                {"decision": "allow", "tool_pattern": {"type": "string", "value": "bash"}},
                {
                    "decision": "ask",
                    "tool_pattern": {"type": "string", "value": "bash"},
                    "argument_pattern": {"type": "string", "value": "rm -rf"},
                },
                {
                    "decision": "deny",
                    "tool_pattern": {"type": "regexp", "source": "^delete_", "flags": "i"},
                    "argument_pattern": {"type": "regexp", "source": r"id\s*=", "flags": "m"},
                },
                {"decision": "allow", "tool_pattern": {"type": "all"}},
            ],
        }

    def test_json_round_trip(self) -> None:
        """A snapshot survives json and restores equal rules, opt-out and decisions."""
        rules = (
            PermissionRules(auto_allow_dangerous=True)
            .allow("bash", "")
            .deny(re.compile("(?m)^rm", re.VERBOSE))
            .ask("fetch", "é")
        )
        data = json.loads(json.dumps(rules.snapshot()))
        restored = PermissionRules.from_snapshot(data)
        assert restored.rules == rules.rules
        assert restored.auto_allow_dangerous is True
        assert restored.snapshot() == rules.snapshot()

    def test_restore_recomputes_the_guard(self) -> None:
        """Restored unrestricted allows on dangerous tools are downgraded again."""
        restored = PermissionRules.from_snapshot(PermissionRules().allow("bash").allow("code", "").snapshot())
        assert [rule.effective_decision for rule in restored.rules] == ["ask", "ask"]
        assert restored.classify("bash") == "ask"

    def test_gem_snapshot(self) -> None:
        """The gem's symbol patterns, null argument patterns and missing opt-out are accepted."""
        restored = PermissionRules.from_snapshot(
            {
                "version": 1,
                "rules": [
                    {
                        "decision": "deny",
                        "tool_pattern": {"type": "symbol", "value": "bash"},
                        "argument_pattern": {"type": "regexp", "source": r"rm\s+-rf", "flags": ""},
                    },
                    {"decision": "allow", "tool_pattern": {"type": "symbol", "value": "read_file"}},
                    {"decision": "ask", "tool_pattern": {"type": "all"}, "argument_pattern": None},
                ],
            }
        )
        assert restored.auto_allow_dangerous is False
        assert restored.classify("bash", {"command": "rm -rf /"}) == "deny"
        assert restored.classify("read_file") == "allow"
        assert restored.classify("fetch") == "ask"
        assert restored.rules[2].argument_pattern is None

    def test_argument_all_restores_as_none(self) -> None:
        """{"type": "all"} as an argument pattern is unrestricted, stored as None."""
        restored = PermissionRules.from_snapshot(
            {
                "version": 1,
                "rules": [
                    {
                        "decision": "allow",
                        "tool_pattern": {"type": "all"},
                        "argument_pattern": {"type": "all"},
                    }
                ],
            }
        )
        assert restored.rules[0].argument_pattern is None
        assert restored.rules[0].dangerous

    def test_snapshot_is_json_safe(self) -> None:
        """The snapshot is made of dict/list/str/int/bool only, and json round-trips to an equal value."""
        snapshot = seed_rules().snapshot()
        assert json.loads(json.dumps(snapshot)) == snapshot

    @pytest.mark.parametrize(
        ("flags", "name"),
        [
            pytest.param(re.MULTILINE, "MULTILINE", id="multiline"),
            pytest.param(re.ASCII, "ASCII", id="ascii"),
        ],
    )
    def test_unsnapshottable_flag(self, flags: int, name: str) -> None:
        """A regex compiled with MULTILINE or ASCII makes snapshot() raise ValueError."""
        rules = PermissionRules().deny("bash", re.compile("^rm", flags))
        with pytest.raises(ValueError, match=name):
            rules.snapshot()

    def test_inline_flags_are_fine(self) -> None:
        """Flags written inline in the source are kept by the source and snapshot fine."""
        rules = PermissionRules().deny("bash", re.compile("(?m)^rm")).ask("bash", re.compile("(?a)\\w+"))
        restored = PermissionRules.from_snapshot(json.loads(json.dumps(rules.snapshot())))
        assert restored.classify("bash", "ls\nrm x") == "deny"
        assert restored.rules == rules.rules

    def test_path_prefix(self) -> None:
        """from_snapshot's path argument prefixes every error path."""
        with pytest.raises(InvalidSnapshotError) as caught:
            PermissionRules.from_snapshot({"version": 1, "rules": [{}]}, path="config.rules")
        assert caught.value.path == "config.rules.rules[0].decision"


def _rule(**changes: object) -> dict[str, object]:
    rule: dict[str, object] = {"decision": "allow", "tool_pattern": {"type": "string", "value": "read_file"}}
    rule.update(changes)
    return rule


def _snapshot(*rules: object, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {"version": 1, "auto_allow_dangerous": False, "rules": list(rules)}
    data.update(changes)
    return data


BAD_SNAPSHOTS = [
    # (snapshot, path, message)
    pytest.param([], "", r"snapshot: expected an object; got \[\]", id="not-an-object"),
    pytest.param(None, "", "snapshot: expected an object; got None", id="none"),
    pytest.param({"rules": []}, "version", "version: expected a value", id="no-version"),
    pytest.param({"version": 1}, "rules", "rules: expected a value", id="no-rules"),
    pytest.param(_snapshot(version=2), "version", "version: expected 1; got 2", id="version-2"),
    pytest.param(_snapshot(version="1"), "version", "expected 1; got '1'", id="version-str"),
    pytest.param(_snapshot(version=True), "version", "expected 1; got True", id="version-bool"),
    pytest.param(_snapshot(version=1.0), "version", "expected 1; got 1.0", id="version-float"),
    pytest.param(_snapshot(extra=1), "extra", "extra: expected no such key", id="unknown-key"),
    pytest.param({1: 1, "version": 1, "rules": []}, "", "expected string keys; got 1", id="non-str-key"),
    pytest.param(
        _snapshot(auto_allow_dangerous=1),
        "auto_allow_dangerous",
        "expected true or false; got 1",
        id="flag-int",
    ),
    pytest.param(_snapshot(auto_allow_dangerous=None), "auto_allow_dangerous", "got None", id="flag-null"),
    pytest.param(_snapshot(rules={}), "rules", r"rules: expected an array; got \{\}", id="rules-object"),
    pytest.param(
        _snapshot("bash"), "rules[0]", "rules\\[0\\]: expected an object; got 'bash'", id="rule-str"
    ),
    pytest.param(_snapshot(_rule(), {}), "rules[1].decision", "the key is required", id="rule-no-decision"),
    pytest.param(
        _snapshot(_rule(decision="approve")),
        "rules[0].decision",
        "expected one of 'allow', 'ask', 'deny'; got 'approve'",
        id="decision-unknown",
    ),
    pytest.param(_snapshot(_rule(decision="ALLOW")), "rules[0].decision", "got 'ALLOW'", id="decision-case"),
    pytest.param(_snapshot(_rule(decision=None)), "rules[0].decision", "got None", id="decision-null"),
    pytest.param(
        _snapshot({"decision": "allow"}), "rules[0].tool_pattern", "the key is required", id="no-tool-pattern"
    ),
    pytest.param(
        _snapshot(_rule(tool_pattern=None)),
        "rules[0].tool_pattern",
        "a pattern object; got None",
        id="tool-null",
    ),
    pytest.param(
        _snapshot(_rule(tool_pattern={"type": "string", "value": ""})),
        "rules[0].tool_pattern.value",
        "expected a non-empty tool name; got ''",
        id="tool-empty-name",
    ),
    pytest.param(
        _snapshot(_rule(tool_pattern={"type": "symbol", "value": ""})),
        "rules[0].tool_pattern.value",
        "a non-empty tool name",
        id="tool-empty-symbol",
    ),
    pytest.param(
        _snapshot(_rule(tool_pattern={"type": "string", "value": 3})),
        "rules[0].tool_pattern.value",
        "expected a string; got 3",
        id="tool-value-int",
    ),
    pytest.param(
        _snapshot(_rule(tool_pattern={"type": "regexp", "source": "(", "flags": ""})),
        "rules[0].tool_pattern.source",
        "expected a regex that compiles",
        id="tool-regex-bad",
    ),
    pytest.param(
        _snapshot(_rule(tool_pattern={"type": "glob", "value": "*"})),
        "rules[0].tool_pattern.type",
        "got 'glob'",
        id="tool-type-unknown",
    ),
    pytest.param(
        _snapshot(_rule(), _rule(argument_pattern={"type": "regexp", "source": "a", "flags": "q"})),
        "rules[1].argument_pattern.flags",
        "rules\\[1\\].argument_pattern.flags: expected a string of i, m, x, each at most once; got 'q'",
        id="argument-flag-unknown",
    ),
    pytest.param(
        _snapshot(_rule(argument_pattern={"type": "regexp", "source": "a", "flags": "mm"})),
        "rules[0].argument_pattern.flags",
        "got 'mm'",
        id="argument-flag-duplicate",
    ),
    pytest.param(
        _snapshot(_rule(argument_pattern={"type": "regexp", "source": "[", "flags": ""})),
        "rules[0].argument_pattern.source",
        "expected a regex that compiles",
        id="argument-regex-bad",
    ),
    pytest.param(
        _snapshot(_rule(argument_pattern="rm")),
        "rules[0].argument_pattern",
        "expected a pattern object; got 'rm'",
        id="argument-bare-string",
    ),
    pytest.param(
        _snapshot(_rule(argument_pattern={"type": "string"})),
        "rules[0].argument_pattern.value",
        "the key is required",
        id="argument-no-value",
    ),
    pytest.param(
        _snapshot(_rule(effective_decision="ask")),
        "rules[0].effective_decision",
        "no such key",
        id="rule-unknown-key",
    ),
]


class TestSnapshotStrictness:
    """Every invalid snapshot raises InvalidSnapshotError naming the path to the bad field."""

    @pytest.mark.parametrize(("snapshot", "path", "message"), BAD_SNAPSHOTS)
    def test_bad_snapshot(self, snapshot: Any, path: str, message: str) -> None:
        """The error carries the path, and its message starts with it and says what was expected."""
        assert_snapshot_error(PermissionRules.from_snapshot, snapshot, path, message)

    def test_error_classes(self) -> None:
        """InvalidSnapshotError is a PermissionsError and a ValueError, and carries the bad value."""
        with pytest.raises(InvalidSnapshotError) as caught:
            PermissionRules.from_snapshot(_snapshot(_rule(decision="approve")))
        assert isinstance(caught.value, PermissionsError)
        assert isinstance(caught.value, ValueError)
        assert caught.value.value == "approve"


class TestProperties:
    """classify agrees with a naive first-match model; explain and snapshots agree with classify."""

    @given(
        specs=rule_lists,
        auto=st.booleans(),
        probes=st.lists(calls, min_size=1, max_size=8),
    )
    @settings(max_examples=150, deadline=None)
    def test_classify_matches_reference(self, specs: list[RuleSpec], auto: bool, probes: list[Any]) -> None:
        """classify returns what the first-match reference model returns, for any rules and calls."""
        rules = build_rules(specs, auto_allow_dangerous=auto)
        for name, args in probes:
            assert rules.classify(name, args) == reference_classify(
                specs, name, args, auto_allow_dangerous=auto
            )

    @given(specs=rule_lists, auto=st.booleans(), probes=st.lists(calls, max_size=8))
    @settings(max_examples=100, deadline=None)
    def test_explain_agrees(self, specs: list[RuleSpec], auto: bool, probes: list[Any]) -> None:
        """explain names the first rule that matches, and its decision is classify's."""
        rules = build_rules(specs, auto_allow_dangerous=auto)
        for name, args in probes:
            match = rules.explain(name, args)
            decision = rules.classify(name, args)
            if match is None:
                assert decision is None
                assert not any(rule.matches(name, args) for rule in rules.rules)
                continue
            assert match.index is not None
            assert match.rule is rules.rules[match.index]
            assert match.rule.matches(name, args)
            assert not any(rule.matches(name, args) for rule in rules.rules[: match.index])
            assert match.decision == decision == match.rule.effective_decision
            assert match.layer is None

    @given(specs=rule_lists, auto=st.booleans(), probes=st.lists(calls, max_size=8))
    @settings(max_examples=100, deadline=None)
    def test_snapshot_round_trip(self, specs: list[RuleSpec], auto: bool, probes: list[Any]) -> None:
        """A snapshot through json restores rules that classify every call the same way."""
        rules = build_rules(specs, auto_allow_dangerous=auto)
        restored = PermissionRules.from_snapshot(json.loads(json.dumps(rules.snapshot())))
        assert restored.rules == rules.rules
        assert restored.snapshot() == rules.snapshot()
        for name, args in probes:
            assert restored.classify(name, args) == rules.classify(name, args)

    @given(data=json_values)
    @settings(max_examples=200, deadline=None)
    def test_random_input(self, data: object) -> None:
        """from_snapshot on arbitrary JSON-like data succeeds or raises InvalidSnapshotError, nothing else."""
        restored_or_rejected(PermissionRules.from_snapshot, data)

    @given(specs=st.lists(rule_specs, min_size=1, max_size=4), auto=st.booleans(), data=st.data())
    @settings(max_examples=200, deadline=None)
    def test_mutated_snapshot(self, specs: list[RuleSpec], auto: bool, data: st.DataObject) -> None:
        """A valid snapshot with one node changed, dropped or added: restored, or InvalidSnapshotError."""
        snapshot = mutate(build_rules(specs, auto_allow_dangerous=auto).snapshot(), data)
        restored = restored_or_rejected(PermissionRules.from_snapshot, snapshot)
        if restored is not None:
            name, args = data.draw(calls)
            assert restored.classify(name, args) in (None, "allow", "ask", "deny")


class TestArgumentsStrategy:
    """The shared strategies produce calls the rules can serialize (guards the property tests)."""

    @given(args=arguments)
    @settings(max_examples=50, deadline=None)
    def test_arguments_serialize(self, args: object) -> None:
        """Every generated argument value serializes to a str."""
        assert isinstance(serialize_arguments(args), str)


# Names a model may write for "bash": each equals "bash" once folded.
LOOK_ALIKES = [name for name in FOLDED_TO_BASH if name != "bash"]


class TestFoldedToolNames:
    """Deny and ask rules also match names equal to theirs after folding; allow rules match exactly."""

    @pytest.mark.parametrize("name", LOOK_ALIKES, ids=ascii)
    def test_deny_meets_folded_names(self, name: str) -> None:
        """A deny for bash denies the call whatever case, width, padding or invisible characters it uses."""
        rules = PermissionRules().deny("bash")
        assert rules.classify(name) == "deny"
        match = rules.explain(name)
        assert match is not None
        assert match.rule is rules.rules[0]
        assert match.rule.matches(name)

    @pytest.mark.parametrize("name", LOOK_ALIKES, ids=ascii)
    def test_ask_with_arguments_meets_folded_names(self, name: str) -> None:
        """An ask rule with an argument pattern matches a folded name with those arguments only."""
        rules = PermissionRules().ask("bash", "rm -rf")
        assert rules.classify(name, {"command": "rm -rf /"}) == "ask"
        assert rules.classify(name, {"command": "ls"}) is None

    @pytest.mark.parametrize("name", LOOK_ALIKES, ids=ascii)
    def test_allow_matches_exactly(self, name: str) -> None:
        """An allow for bash does not allow a name that only folds to bash."""
        rules = PermissionRules().allow("bash", "ls")
        assert rules.classify(name, {"command": "ls"}) is None
        assert rules.classify("bash", {"command": "ls"}) == "allow"

    def test_pattern_written_in_another_case(self) -> None:
        """deny("Bash") denies bash and BASH: the rule's own name is folded too."""
        rules = PermissionRules().deny("Bash")
        assert rules.classify("bash") == rules.classify("BASH") == rules.classify("Bash") == "deny"

    def test_regex_deny_tries_the_folded_name(self) -> None:
        """A regex deny is searched in the name as given and in its folded form."""
        rules = PermissionRules().deny(re.compile(r"^mcp__shell__"))
        assert rules.classify("mcp__shell__run") == "deny"
        assert rules.classify("MCP__Shell__run") == "deny"
        assert rules.classify("\u200bmcp__shell__run") == "deny"
        assert rules.classify("mcp__other__run") is None

    def test_regex_allow_is_searched_as_given(self) -> None:
        """A regex allow is searched in the name as given only."""
        rules = PermissionRules().allow(re.compile("^read_"))
        assert rules.classify("read_file") == "allow"
        assert rules.classify("READ_file") is None

    def test_folding_can_only_add_asks_and_denies(self) -> None:
        """A folded name reaches the deny placed after an allow it would otherwise not pass."""
        rules = PermissionRules().allow("bash", "ls").deny("bash")
        assert rules.classify("bash", {"command": "ls"}) == "allow"
        assert rules.classify("Bash", {"command": "ls"}) == "deny"

    def test_first_match_still_wins(self) -> None:
        """Folding changes which rules match, not the order: an earlier ask beats a later deny."""
        rules = PermissionRules().ask("bash").deny(ALL, "rm -rf")
        assert rules.classify("Bash", {"command": "rm -rf /"}) == rules.classify(
            "bash", {"command": "rm -rf /"}
        )
        assert rules.classify("Bash", {"command": "rm -rf /"}) == "ask"

    def test_other_names_do_not_fold_together(self) -> None:
        """bashful, b-ash and ba sh are other tools."""
        rules = PermissionRules().deny("bash")
        assert [rules.classify(name) for name in ("bashful", "b-ash", "ba sh", "bas")] == [None] * 4

    def test_rule_value_unchanged(self) -> None:
        """The folded form is derived: rules compare, repr and snapshot as before."""
        rule = PermissionRules().deny("Bash").rules[0]
        assert rule == Rule("deny", "Bash", None, False, "deny")
        assert repr(rule) == (
            "Rule(decision='deny', tool_pattern='Bash', argument_pattern=None, dangerous=False, "
            "effective_decision='deny')"
        )
        renamed = dataclasses.replace(rule, tool_pattern="Shell")
        assert renamed.tool_matches("SHELL")
        assert not renamed.tool_matches("bash")

    def test_non_string_name_does_not_match(self) -> None:
        """Rule.tool_matches of a non-string is False for an exact-name deny, as before."""
        assert PermissionRules().deny("bash").rules[0].tool_matches(1) is False  # type: ignore[arg-type]

    @given(
        specs=rule_lists, auto=st.booleans(), probes=st.lists(st.tuples(tool_names, arguments), max_size=6)
    )
    @settings(max_examples=150, deadline=None)
    def test_only_ever_more_blocking(self, specs: list[RuleSpec], auto: bool, probes: list[Any]) -> None:
        """Against an exact-names scan, folding only ever turns a decision into ask or deny."""
        rules = build_rules(specs, auto_allow_dangerous=auto)
        for name, args in probes:
            for variant in (name, name.upper(), f" {name}\u200b"):
                exact = next(
                    (
                        rule.effective_decision
                        for rule in rules.rules
                        if tool_pattern_matches(rule.tool_pattern, variant) and rule.argument_matches(args)
                    ),
                    None,
                )
                decision = rules.classify(variant, args)
                assert decision == exact or decision in ("ask", "deny")


class TestDangerousTools:
    """dangerous_tools= extends the gem's three names for one ruleset; DANGEROUS_TOOLS stays the gem's."""

    def test_added_names_are_guarded(self) -> None:
        """An unrestricted allow of an added name is downgraded to ask; a restricted one stays an allow."""
        rules = PermissionRules(dangerous_tools=["sh", "python"]).allow("sh").allow("python", "--version")
        assert [rule.effective_decision for rule in rules.rules] == ["ask", "allow"]
        assert rules.classify("sh") == "ask"
        assert rules.dangerous_rules == [rules.rules[0]]

    def test_gem_names_still_guarded(self) -> None:
        """The gem's three stay dangerous whatever is added."""
        rules = PermissionRules(dangerous_tools=["sh"]).allow("bash").allow("code").allow("repl")
        assert len(rules.dangerous_rules) == 3
        assert DANGEROUS_TOOLS == ("bash", "code", "repl")

    def test_added_names_compare_folded(self) -> None:
        """An added name and an allow's name are compared folded, and regexes try each spelling."""
        rules = (
            PermissionRules(dangerous_tools=["Terminal"])
            .allow("terminal")
            .allow("TERMINAL")
            .allow(re.compile("^Terminal$"))
            .allow(re.compile("^term"))
        )
        assert [rule.dangerous for rule in rules.rules] == [True, True, True, True]

    def test_reader_property(self) -> None:
        """dangerous_tools reads back the names as given, duplicates dropped, as a fresh list."""
        rules = PermissionRules(dangerous_tools=("sh", "shell", "sh"))
        assert rules.dangerous_tools == ["sh", "shell"]
        rules.dangerous_tools.clear()
        assert rules.dangerous_tools == ["sh", "shell"]
        assert PermissionRules().dangerous_tools == []

    def test_repr_shows_added_names(self) -> None:
        """The repr names the added tools when there are some."""
        assert repr(PermissionRules(dangerous_tools=["sh"]).allow("x")) == (
            "<PermissionRules rules=1 dangerous_tools=['sh']>"
        )
        assert repr(PermissionRules()) == "<PermissionRules rules=0>"

    @pytest.mark.parametrize(
        ("value", "error", "match"),
        [
            pytest.param(
                "sh",
                TypeError,
                r"^dangerous_tools: expected an iterable of tool names, not a string",
                id="bare-string",
            ),
            pytest.param(
                ["sh", 1],
                TypeError,
                r"^dangerous_tools\[1\]: expected a non-empty string; got 1$",
                id="number",
            ),
            pytest.param(
                [""], ValueError, r"^dangerous_tools\[0\]: expected a non-empty string; got ''$", id="empty"
            ),
            pytest.param(
                5,
                TypeError,
                r"^dangerous_tools: expected an iterable of tool names; got 5$",
                id="not-iterable",
            ),
        ],
    )
    def test_bad_names(self, value: Any, error: type[Exception], match: str) -> None:
        """dangerous_tools takes an iterable of non-empty names, and says which entry is wrong."""
        with pytest.raises(error, match=match):
            PermissionRules(dangerous_tools=value)

    def test_snapshot_key_only_when_given(self) -> None:
        """Without added names the snapshot is the gem's format; with them, it carries the key."""
        assert "dangerous_tools" not in PermissionRules().allow("bash").snapshot()
        snapshot = PermissionRules(dangerous_tools=["sh", "Python"]).allow("sh").snapshot()
        assert snapshot["dangerous_tools"] == ["sh", "Python"]
        restored = PermissionRules.from_snapshot(json.loads(json.dumps(snapshot)))
        assert restored.dangerous_tools == ["sh", "Python"]
        assert restored.classify("sh") == "ask"
        assert restored.snapshot() == snapshot

    def test_snapshot_without_the_key_restores_the_gem_guard(self) -> None:
        """A snapshot with no dangerous_tools restores a ruleset without added names; [] means the same."""
        data = {"version": 1, "rules": [_rule(tool_pattern={"type": "string", "value": "sh"})]}
        assert PermissionRules.from_snapshot(data).classify("sh") == "allow"
        assert PermissionRules.from_snapshot({**data, "dangerous_tools": []}).dangerous_tools == []

    @pytest.mark.parametrize(
        ("value", "path", "message"),
        [
            pytest.param("sh", "dangerous_tools", "expected an array; got 'sh'", id="string"),
            pytest.param(["sh", ""], "dangerous_tools[1]", "expected a non-empty string; got ''", id="empty"),
            pytest.param([1], "dangerous_tools[0]", "expected a non-empty string; got 1", id="number"),
            pytest.param(
                [HUGE_INT],
                "dangerous_tools[0]",
                "expected a non-empty string; got <int of about",
                id="huge-int",
            ),
            pytest.param(None, "dangerous_tools", "expected an array; got None", id="null"),
        ],
    )
    def test_snapshot_is_read_strictly(self, value: object, path: str, message: str) -> None:
        """A bad dangerous_tools value is an InvalidSnapshotError naming it."""
        assert_snapshot_error(
            PermissionRules.from_snapshot, _snapshot(dangerous_tools=value), path, re.escape(message)
        )


# Snapshots no JSON parser returns; each must be refused with InvalidSnapshotError, its message formatted.
HOSTILE_SNAPSHOTS = [
    pytest.param(_snapshot(version=HUGE_INT), "version", id="huge-version"),
    pytest.param(_snapshot(auto_allow_dangerous=HUGE_INT), "auto_allow_dangerous", id="huge-flag"),
    pytest.param(_snapshot(_rule(decision=HUGE_INT)), "rules[0].decision", id="huge-decision"),
    pytest.param(_snapshot(_rule(decision=HostileObject())), "rules[0].decision", id="raising-eq-decision"),
    pytest.param(
        _snapshot(_rule(tool_pattern={"type": HostileObject()})),
        "rules[0].tool_pattern.type",
        id="raising-type",
    ),
    pytest.param(
        _snapshot(_rule(argument_pattern={"type": "regexp", "source": "x", "flags": HUGE_INT})),
        "rules[0].argument_pattern.flags",
        id="huge-regex-flags",
    ),
    pytest.param(_snapshot(nested(5000)), "rules[0]", id="deep-rule"),
    pytest.param(_snapshot(rules=nested(5000)), "rules[0].a", id="deep-rules"),
    pytest.param(nested(5000), "", id="deep-root"),
    pytest.param(HostileDict(version=1, rules=[]), "", id="hostile-dict-root"),
    pytest.param(_snapshot(rules=HostileList([])), "", id="hostile-list-rules"),
    pytest.param(_snapshot(_rule(tool_pattern=HostileDict(type="all"))), "", id="hostile-dict-pattern"),
    pytest.param({**circular_dict(), "rules": []}, "self", id="circular"),
    pytest.param(HostileObject(), "", id="hostile-object-root"),
]


class TestHostileSnapshots:
    """from_snapshot raises InvalidSnapshotError for any input, with a message that formats and is short."""

    @pytest.mark.parametrize(("snapshot", "path"), HOSTILE_SNAPSHOTS)
    def test_refused(self, snapshot: object, path: str) -> None:
        """The error is InvalidSnapshotError at the path, and its message is a bounded preview."""
        assert_refused(PermissionRules.from_snapshot, snapshot, path)

    def test_str_subclasses_are_read_as_their_text(self) -> None:
        """Hostile str subclasses in names, sources and flags restore as plain text that classifies."""
        restored = PermissionRules.from_snapshot(
            _snapshot(
                _rule(
                    decision=HostileStr("deny"),
                    tool_pattern={"type": HostileStr("string"), "value": HostileStr("bash")},
                    argument_pattern={"type": "regexp", "source": HostileStr("rm"), "flags": HostileStr("i")},
                ),
            )
        )
        rule = restored.rules[0]
        assert type(rule.tool_pattern) is str
        assert restored.classify("bash", {"command": "RM -rf"}) == "deny"
        assert restored.snapshot()["rules"][0]["tool_pattern"] == {"type": "string", "value": "bash"}

    @given(snapshot=hostile_snapshots(permission_rules().map(lambda rules: rules.snapshot())))
    @settings(max_examples=150, deadline=None)
    def test_fuzz(self, snapshot: object) -> None:
        """A valid snapshot with one hostile node or key restores (and then classifies) or is refused."""
        restored = assert_reads_or_rejects(PermissionRules.from_snapshot, snapshot)
        if restored is not None:
            for name in ("bash", "read_file", "Bash"):
                assert restored.classify(name, {"command": "ls"}) in (None, "allow", "ask", "deny")
            json.dumps(restored.snapshot())
