"""The per-tool-name index of PermissionRules changes no decision: it agrees with a plain first-match scan."""

from __future__ import annotations

import functools
import re
import sys
import threading
import tracemalloc
from typing import Any, TypeAlias
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import ALL, PermissionRules, RuleMatch
from ask_permissions.rules import _patterns, _rules
from ask_permissions.typing import Decision

from .strategies import decisions
from .threads import JOIN_TIMEOUT, run_threads

# Local rather than in tests/strategies.py: they are specific to the index (many distinct names, MCP-style
# names that regex tool patterns pick out), where the shared pools keep names few so that rules meet calls.
_FIXED_NAMES = ("bash", "read_file", "write_file", "mcp__srv7__query", "mcp__srv7__drop", "mcp__srv12__x")
_TOOL_REGEXES = (
    re.compile(r"^mcp__srv7__.*$"),
    re.compile(r"^mcp__srv\d+__"),
    re.compile("_file$"),
    re.compile("^[a-c]"),
    re.compile("x"),
    re.compile(""),
)
_SUBSTRINGS = ("", "rm", '"path":"/etc', "select", "42", "é")
_ARGUMENT_REGEXES = (
    re.compile(r"rm\s+-rf"),
    re.compile("^$"),
    re.compile(r"\d{2}"),
    re.compile("(?i)SELECT"),
)
_TEXTS = ("rm -rf /", "select 1", "/etc/passwd", "é", "", "ls")

_plain_names = st.one_of(
    st.sampled_from(_FIXED_NAMES),
    st.from_regex(r"mcp__srv[0-9]{1,2}__[a-z]{1,2}", fullmatch=True),
    st.text(alphabet="abcx_", min_size=1, max_size=4),
)
# The spellings that fold to a plain name: deny and ask rules match them too, so the index must as well.
_SPELLINGS = (str.upper, str.title, lambda name: f" {name}\u200b", lambda name: name.replace("a", "\uff41"))
tool_names = st.one_of(
    _plain_names,
    st.builds(lambda spell, name: spell(name), st.sampled_from(_SPELLINGS), _plain_names),
)
tool_patterns = st.one_of(st.just(ALL), tool_names, st.sampled_from(_TOOL_REGEXES))
argument_patterns = st.one_of(
    st.none(), st.just(ALL), st.sampled_from(_SUBSTRINGS), st.sampled_from(_ARGUMENT_REGEXES)
)
arguments = st.one_of(
    st.none(),
    st.sampled_from(_TEXTS),
    st.dictionaries(st.sampled_from(("command", "path", "q")), st.sampled_from(_TEXTS), max_size=2),
)

Spec: TypeAlias = tuple[Decision, Any, Any]
Operation: TypeAlias = tuple[str, Any, Any]

rule_specs = st.tuples(decisions, tool_patterns, argument_patterns)
operations = st.one_of(
    st.tuples(st.just("add"), rule_specs, st.none()),
    st.tuples(st.just("classify"), tool_names, arguments),
)


def scan(rules: PermissionRules, name: str, args: object) -> RuleMatch | None:
    """The plain first-match scan the index must agree with: every rule, in declaration order."""
    for index, rule in enumerate(rules.rules):
        if rule.matches(name, args):
            return RuleMatch(rule, index, None, rule.effective_decision)
    return None


def check(rules: PermissionRules, name: str, args: object) -> None:
    expected = scan(rules, name, args)
    assert rules.explain(name, args) == expected
    assert rules.classify(name, args) == (None if expected is None else expected.decision)


class TestAgreesWithScan:
    """Property: the index gives the scan's decision, across registrations, new names and evictions."""

    @settings(max_examples=150, deadline=None)
    @given(
        initial=st.lists(rule_specs, max_size=8),
        steps=st.lists(operations, max_size=30),
        bound=st.sampled_from((1, 2, 3, 1024)),
        auto_allow_dangerous=st.booleans(),
    )
    def test_random_rules_names_and_registrations(
        self, initial: list[Spec], steps: list[Operation], bound: int, auto_allow_dangerous: bool
    ) -> None:
        """Any interleaving of registrations and calls, any number of names: same decision and match."""
        with mock.patch.object(_rules, "_CANDIDATE_CACHE_SIZE", bound):
            rules = PermissionRules(auto_allow_dangerous=auto_allow_dangerous)
            for decision, tool_pattern, argument_pattern in initial:
                rules.add(decision, tool_pattern, argument_pattern)
            for kind, first, second in steps:
                if kind == "add":
                    rules.add(*first)
                else:
                    check(rules, first, second)
                    check(rules, first, second)  # again, from the cache
                assert len(rules._state.candidates) <= bound

    @settings(max_examples=50, deadline=None)
    @given(specs=st.lists(rule_specs, min_size=1, max_size=10), names=st.lists(tool_names, max_size=40))
    def test_more_names_than_the_cache_holds(self, specs: list[Spec], names: list[str]) -> None:
        """With a cache of 4 names, evicted and re-seen names still classify exactly as the scan does."""
        with mock.patch.object(_rules, "_CANDIDATE_CACHE_SIZE", 4):
            rules = PermissionRules()
            for spec in specs:
                rules.add(*spec)
            for name in names + names:
                check(rules, name, {"command": "rm -rf /"})
                assert len(rules._state.candidates) <= 4


class TestVersions:
    """A registration starts a new version; nothing cached for the old one leaks into it."""

    def test_rule_registered_after_a_name_was_cached(self) -> None:
        """A name classified before a registration sees the new rule afterwards."""
        rules = PermissionRules().allow("read_file")
        assert rules.classify("mcp__srv7__query") is None
        rules.deny(re.compile(r"^mcp__srv7__.*$"))
        assert rules.classify("mcp__srv7__query") == "deny"

    def test_name_first_seen_after_registrations(self) -> None:
        """A name never classified before is worked out against the current rules."""
        rules = PermissionRules().allow("read_file")
        assert rules.classify("read_file") == "allow"
        rules.deny(ALL, "rm -rf").ask("mcp__srv7__query")
        assert rules.classify("mcp__srv7__query", {"c": "rm -rf /"}) == "deny"
        assert rules.classify("mcp__srv7__query", {"c": "ls"}) == "ask"

    def test_cache_is_bounded(self) -> None:
        """However many names a host sends, the cache keeps at most _CANDIDATE_CACHE_SIZE of them."""
        rules = PermissionRules().allow(re.compile("^tool_"))
        for number in range(_rules._CANDIDATE_CACHE_SIZE + 50):
            assert rules.classify(f"tool_{number}") == "allow"
        assert len(rules._state.candidates) == _rules._CANDIDATE_CACHE_SIZE
        assert "tool_0" not in rules._state.candidates  # the oldest went first
        assert rules.classify("tool_0") == "allow"

    def test_name_checked_before_the_cache(self) -> None:
        """An unhashable tool name is a TypeError naming the field, not a cache error."""
        with pytest.raises(TypeError, match="tool_name: expected a string"):
            PermissionRules().allow("x").classify(["x"])  # type: ignore[arg-type]


def _reference_counts(values: list[str]) -> list[int]:
    """How many references each value has (a reference more means someone else keeps it)."""
    return [sys.getrefcount(value) for value in values]


class TestCacheSize:
    """The cache holds a bounded number of characters, and never a name longer than a small limit."""

    def test_long_name_is_classified_but_not_kept(self) -> None:
        """A megabyte name is classified as the scan says, and the ruleset keeps no reference to it."""
        rules = PermissionRules().deny(re.compile("^x{10}")).deny("y" * 300)
        for name in ("x" * 1_000_000, "Y" * 300, "z" * 1_000_000):
            before = sys.getrefcount(name)
            check(rules, name, {"command": "ls"})
            check(rules, name, {"command": "ls"})
            assert sys.getrefcount(name) == before

    def test_names_up_to_the_limit_are_kept(self) -> None:
        """A name of _CACHED_NAME_LIMIT characters is cached: classifying it again builds no candidates."""
        rules = PermissionRules().deny(ALL, "rm")
        name = "t" * _rules._CACHED_NAME_LIMIT
        before = sys.getrefcount(name)
        rules.classify(name)
        assert sys.getrefcount(name) == before + 1
        with mock.patch.object(PermissionRules, "_candidates", side_effect=AssertionError("not cached")):
            assert rules.classify(name, {"c": "rm"}) == "deny"

    def test_total_characters_bounded(self) -> None:
        """1024 names just under the length limit: the ruleset keeps at most the character budget of them."""
        rules = PermissionRules().allow(re.compile("^tool_"))
        names = [f"tool_{number:04d}_" + "n" * (_rules._CACHED_NAME_LIMIT - 10) for number in range(1024)]
        baseline = _reference_counts(names)
        for name in names:
            assert rules.classify(name) == "allow"
        after = _reference_counts(names)
        kept = [name for name, before, now in zip(names, baseline, after, strict=True) if now > before]
        assert 0 < sum(map(len, kept)) <= _rules._CANDIDATE_CACHE_CHARS
        assert kept == names[-len(kept) :]  # the newest names, the oldest out first
        assert all(rules.classify(name) == "allow" for name in names)

    def test_memory_of_many_huge_names_is_not_held(self) -> None:
        """Classifying a hundred 100 KB names leaves the ruleset holding well under one of them."""
        rules = PermissionRules().deny(re.compile("^huge_")).allow("read_file")
        rules.classify("read_file")
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for number in range(100):
                assert rules.classify(f"huge_{number}_" + "h" * 100_000) == "deny"
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert held < 50_000

    @settings(max_examples=100, deadline=None)
    @given(
        specs=st.lists(rule_specs, min_size=1, max_size=8),
        names=st.lists(
            st.builds(lambda name, pad: name + "_" * pad, tool_names, st.integers(0, 12)), max_size=30
        ),
    )
    def test_character_budget_agrees_with_scan(self, specs: list[Spec], names: list[str]) -> None:
        """With a budget of 40 characters and a name limit of 10, every name classifies as the scan does."""
        with (
            mock.patch.object(_rules, "_CANDIDATE_CACHE_CHARS", 40),
            mock.patch.object(_rules, "_CACHED_NAME_LIMIT", 10),
        ):
            rules = PermissionRules()
            for spec in specs:
                rules.add(*spec)
            for name in names + names:
                check(rules, name, {"command": "rm -rf /"})
                cached = rules._state.candidates
                assert sum(map(len, cached)) == rules._state.cached_chars <= 40
                assert all(len(cached_name) <= 10 for cached_name in cached)


class TestSerialization:
    """The arguments are serialized at most once per call, and only when a candidate needs them."""

    @pytest.fixture
    def counter(self) -> Any:
        with mock.patch.object(_rules, "serialize_arguments", wraps=_patterns.serialize_arguments) as spy:
            yield spy

    def test_once_for_many_argument_patterns(self, counter: Any) -> None:
        """Ten candidates with argument patterns, one serialization."""
        rules = PermissionRules()
        for number in range(10):
            rules.deny("bash", f"never-{number}")
        rules.allow("bash", re.compile("ls"))
        assert rules.classify("bash", {"command": "ls"}) == "allow"
        assert counter.call_count == 1

    def test_not_at_all_without_argument_patterns(self, counter: Any) -> None:
        """No candidate with an argument pattern: nothing to serialize."""
        rules = PermissionRules().deny("write_file", "rm").allow("read_file").ask(ALL)
        assert rules.classify("read_file", {"path": "x"}) == "allow"
        assert rules.classify("bash", {"command": "rm -rf"}) == "ask"
        assert counter.call_count == 0

    def test_not_for_rules_of_other_tools(self, counter: Any) -> None:
        """Argument patterns of rules for other tools do not cause a serialization."""
        rules = PermissionRules().deny("bash", "rm").deny(re.compile("^mcp__"), "drop")
        assert rules.classify("read_file", {"path": "x"}) is None
        assert counter.call_count == 0


class TestThreads:
    """Registering while other threads classify, with a tiny cache that keeps evicting."""

    def test_register_while_classifying(self) -> None:
        """A call sees the rules before or after each registration; every rule is seen once registered."""
        count = 200
        rules = PermissionRules().deny(ALL, "rm -rf")
        registered = [0]  # how many allow rules are registered so far (written by the registrar only)
        errors: list[str] = []
        start = threading.Barrier(4)

        def register() -> None:
            start.wait(JOIN_TIMEOUT)
            for number in range(count):
                rules.allow(f"tool_{number}", re.compile("ok"))
                registered[0] = number + 1

        def classify(offset: int) -> None:
            start.wait(JOIN_TIMEOUT)
            for round_ in range(count * 5):
                number = (round_ * 7 + offset) % count
                before = registered[0]
                decision = rules.classify(f"tool_{number}", {"q": "ok"})
                after = registered[0]
                if number < before and decision != "allow":
                    errors.append(f"tool_{number}: {decision!r} after its rule was registered")
                if number >= after and decision is not None:
                    errors.append(f"tool_{number}: {decision!r} before its rule was registered")
                if rules.classify(f"tool_{number}", {"q": "rm -rf /"}) != "deny":
                    errors.append(f"tool_{number}: the first rule did not win")

        with mock.patch.object(_rules, "_CANDIDATE_CACHE_SIZE", 8):
            run_threads(register, *[functools.partial(classify, offset) for offset in range(3)])
            assert errors == []
            assert all(rules.classify(f"tool_{number}", {"q": "ok"}) == "allow" for number in range(count))
            assert len(rules._state.candidates) <= 8


class TestStrSubclassNames:
    """Names that are str subclasses share the cache with their plain text."""

    def test_str_enum_names_use_the_cache(self) -> None:
        """A StrEnum tool name classifies like its text and is cached under that text."""
        import enum

        class Tools(enum.StrEnum):
            BASH = "bash"

        rules = PermissionRules().deny("bash")
        assert rules.classify(Tools.BASH) == "deny"
        with mock.patch.object(PermissionRules, "_candidates", side_effect=AssertionError("not cached")):
            assert rules.classify(Tools.BASH) == "deny"
            assert rules.classify("bash") == "deny"
        assert list(rules._state.candidates) == ["bash"]
