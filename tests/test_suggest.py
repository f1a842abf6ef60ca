"""``suggest``: the fewest allow rules answering the most approvals, proven against every forbidden call.

The oracle is the package's own rule engine: the suggested rules, as ``PermissionRules`` allow rules (the
compound-allow rule included), must allow no call a person rejected.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import PermissionRules
from ask_permissions.cli._suggest import suggestion_context
from ask_permissions.evidence._suggest import Answer, SuggestionContext, Suggestions, suggest

from .shell_corpus import ALLOWED_PARTS, BENIGN, HOSTILE, OTHER_PARTS

ROOT = "/work/project"
HOME = "/home/user"
CONTEXT = SuggestionContext(root=ROOT, home=HOME)


def _bash(command: str, approved: bool) -> Answer:
    return Answer("Bash", {"command": command}, approved, f"test {command!r}")


def _allowed_by(found: Suggestions) -> PermissionRules:
    return PermissionRules.from_text(allow=[rule.rule for rule in found.rules], cwd=ROOT, home=HOME)


def _policy_context(directory: Path, permissions: str) -> SuggestionContext:
    """What suggest --policy reads from a policy file asking for Bash, with these permissions lines."""
    policy = directory / "policy.toml"
    policy.write_text(
        f'version = 1\nrequire_approval = ["Bash"]\n\n[permissions]\ncwd = "{ROOT}"\n{permissions}\n',
        encoding="utf-8",
    )
    return suggestion_context(str(policy))


def _assert_none_allowed(found: Suggestions, rejected: list[Answer]) -> None:
    rules = _allowed_by(found)
    for answer in rejected:
        assert rules.classify(answer.tool, answer.arguments) != "allow", (answer, found.rules)


class TestHostileRejections:
    """A rejected command an attacker spells cleverly is never allowed by the rules learned beside it."""

    @pytest.mark.parametrize(("name", "command"), HOSTILE, ids=[name for name, _ in HOSTILE])
    def test_never_allowed(self, name: str, command: str) -> None:
        """With the benign commands approved twice each, the rejected hostile one stays unanswered."""
        approvals = [_bash(benign, True) for _, benign in BENIGN for _ in range(2)]
        rejected = [_bash(command, False)]
        found = suggest([*approvals, *rejected], CONTEXT, min_count=2)
        assert found.rules  # the benign approvals still teach something
        assert found.proven
        _assert_none_allowed(found, rejected)

    def test_all_at_once(self) -> None:
        """Every hostile command rejected in one store: none is allowed, and rules are still found."""
        approvals = [_bash(benign, True) for _, benign in BENIGN for _ in range(2)]
        rejected = [_bash(command, False) for _, command in HOSTILE]
        found = suggest([*approvals, *rejected], CONTEXT, min_count=2)
        assert found.rules
        _assert_none_allowed(found, rejected)


class TestProof:
    """Compound and wrapped rejections, which no tree holds, still keep the rules that meet them out."""

    def test_a_compound_rejection_costs_the_cheaper_rule(self) -> None:
        """Two rules that together allow a rejected compound: the one saving fewer prompts goes."""
        answers = [
            _bash("git diff a", True),
            _bash("git diff b", True),
            _bash("npm test x", True),
            _bash("npm test y", True),
            _bash("npm test z", True),
            _bash("git diff c && npm test w", False),
        ]
        found = suggest(answers, CONTEXT, min_count=2)
        assert [rule.rule for rule in found.rules] == ["Bash(npm test *)"]
        assert found.proven
        _assert_none_allowed(found, answers[-1:])

    def test_a_wrapped_rejection_keeps_the_prefix_out(self) -> None:
        """``timeout 5 git push --force x`` rejected: ``Bash(git push *)`` would allow it; it is not made."""
        answers = [
            _bash("git push origin a", True),
            _bash("git push origin a", True),
            _bash("git push origin b", True),
            _bash("timeout 5 git push --force x", False),
        ]
        found = suggest(answers, CONTEXT, min_count=2)
        rules = [rule.rule for rule in found.rules]
        assert "Bash(git push *)" not in rules
        assert rules == ["Bash(git push origin *)"]
        _assert_none_allowed(found, answers[-1:])

    def test_a_url_of_two_readings_teaches_no_domain(self) -> None:
        """A URL parsers read two hosts in is never allowed by a domain rule: it teaches none; a plain one
        does, and the rule allows its examples."""
        two_hosts = "https://evil.example\\@docs.python.org/x"  # a browser reads evil.example
        answers = [Answer("WebFetch", {"url": two_hosts}, True) for _ in range(3)]
        answers += [Answer("WebFetch", {"url": f"https://docs.python.org/{n}"}, True) for n in range(2)]
        found = suggest(answers, CONTEXT, min_count=2)
        assert [(rule.rule, rule.saved) for rule in found.rules] == [("WebFetch(domain:docs.python.org)", 2)]
        assert found.unfamilied == 3
        assert _allowed_by(found).classify("WebFetch", {"url": two_hosts}) != "allow"

    def test_the_policy_decides_a_compound_with_its_own_rules(self, tmp_path: Path) -> None:
        """A rejected ``git diff c && ls`` that the policy's ``Bash(ls *)`` and a new ``Bash(git diff *)``
        would allow together: the new rule is dropped, and the policy with the rest proves it."""
        context = _policy_context(tmp_path, 'allow = ["Bash(ls *)"]')
        answers = [
            _bash("git diff a", True),
            _bash("git diff b", True),
            _bash("npm test x", True),
            _bash("npm test y", True),
            _bash("git diff c && ls", False),
        ]
        found = suggest(answers, context, min_count=2)
        rules = [rule.rule for rule in found.rules]
        assert "Bash(git diff *)" not in rules
        assert rules == ["Bash(npm test *)"]
        assert found.proven

    def test_a_deny_rule_keeps_its_prefix_out(self, tmp_path: Path) -> None:
        """A deny rule under an approved prefix: its witness call keeps the prefix rule out."""
        context = _policy_context(tmp_path, 'deny = ["Bash(git push --force *)"]')
        answers = [_bash("git push origin a", True), _bash("git push origin b", True)]
        found = suggest(answers, context, min_count=2)
        assert [rule.rule for rule in found.rules] == ["Bash(git push origin *)"]
        assert found.witnesses >= 1
        assert found.proven


LOOK_ALIKE_TOOLS = [
    # (the tool the approvals name, a tool a person rejected that a rule made from that name would allow)
    ("mcp__github__*", "mcp__github__delete_repo"),
    ("mcp__github__merge_pr(*)", "mcp__github__merge_pr"),
    ("mcp__github__merge_pr(*) ", "mcp__github__merge_pr"),
]


class TestLookAlikeToolNames:
    """A tool whose name reads as another rule (a wildcard, a specifier) teaches no rule for other tools."""

    @pytest.mark.parametrize(("approved", "rejected"), LOOK_ALIKE_TOOLS, ids=[a for a, _ in LOOK_ALIKE_TOOLS])
    def test_a_name_that_reads_as_a_wider_rule_teaches_nothing(self, approved: str, rejected: str) -> None:
        """Approvals of a tool named like a rule of other tools: no rule allows the rejected tool's call."""
        answers = [Answer(approved, {"n": n}, True) for n in range(3)]
        answers.append(Answer(rejected, {"n": 0}, False))
        found = suggest(answers, CONTEXT, min_count=2)
        assert found.proven
        _assert_none_allowed(found, answers[-1:])
        assert found.unfamilied == 3  # no MCP tool rule says exactly that name

    def test_the_proof_reads_a_rule_by_what_it_matches(self, tmp_path: Path) -> None:
        """Through a policy file too: a rejected call of the tool the rule text names is decided again."""
        context = _policy_context(tmp_path, "")
        answers = [Answer("mcp__github__*", {"n": n}, True) for n in range(2)]
        answers.append(Answer("mcp__github__delete_repo", {"name": "x"}, False))
        found = suggest(answers, context, min_count=2)
        assert [rule.rule for rule in found.rules] == []
        assert found.proven

    def test_a_plain_mcp_tool_still_teaches_its_rule(self) -> None:
        """``mcp__github__create_issue`` approved twice: the rule names that tool alone."""
        answers = [Answer("mcp__github__create_issue", {"title": t}, True) for t in "ab"]
        answers.append(Answer("mcp__github__delete_repo", {"name": "x"}, False))
        found = suggest(answers, CONTEXT, min_count=2)
        assert [rule.rule for rule in found.rules] == ["mcp__github__create_issue"]
        _assert_none_allowed(found, answers[-1:])


UNREADABLE_AS_RULES = [
    pytest.param("/work/project/notes ", id="trailing-space"),
    pytest.param("/work/project/src/x\x01", id="control-character"),
]


class TestOnlyRulesThatRead:
    """A rule is offered only when its text reads as a rule: one that does not would fail the file."""

    @pytest.mark.parametrize("path", UNREADABLE_AS_RULES)
    def test_an_approved_path_no_rule_can_name(self, path: str) -> None:
        """Approvals of a file whose exact rule text does not read teach no rule (nor break the others)."""
        answers = [Answer("Edit", {"file_path": path}, True) for _ in range(2)]
        answers += [_bash("git diff a", True), _bash("git diff b", True)]
        found = suggest(answers, CONTEXT, min_count=2)
        assert [rule.rule for rule in found.rules] == ["Bash(git diff *)"]
        assert all(CONTEXT.parse(rule.rule) is not None for rule in found.rules)
        assert found.uncovered_by_tool == {"Edit": 2}


_PARTS = st.sampled_from([*ALLOWED_PARTS, *OTHER_PARTS, "git diff a", "git diff b", "npm test x"])
_SEPARATORS = st.sampled_from(["; ", " && ", " | ", " || "])


@st.composite
def _commands(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_PARTS, min_size=1, max_size=3))
    command = parts[0]
    for part in parts[1:]:
        command += draw(_SEPARATORS) + part
    return draw(st.sampled_from(["", "timeout 5 ", "FOO=1 "])) + command


class TestProperties:
    """Whatever the answers, the rules allow no rejected call, answer their examples, and do not overlap."""

    @settings(max_examples=150, deadline=None)
    @given(answers=st.lists(st.tuples(_commands(), st.booleans()), max_size=30), min_count=st.integers(1, 3))
    def test_rules_against_the_engine(self, answers: list[tuple[str, bool]], min_count: int) -> None:
        """No rejected call is allowed by the rules; each rule allows its examples and saves min_count."""
        calls = [_bash(command, approved) for command, approved in answers]
        found = suggest(calls, CONTEXT, min_count=min_count)
        assert found.proven
        _assert_none_allowed(found, [call for call in calls if not call.approved])
        assert found.saved <= found.approvals  # each approval is answered by one rule at most
        for rule in found.rules:
            assert rule.saved >= min_count
            alone = PermissionRules.from_text(allow=[rule.rule], cwd=ROOT, home=HOME)
            assert all(alone.classify(e.tool, e.arguments) == "allow" for e in rule.examples), rule
