"""ask-permissions lint: the traps it reports, each with its wording, only when provable, and its speed."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import ALL, ApprovalPolicy, ApprovalQueue, PermissionRules, ToolCall
from ask_permissions.cli._json_occurrence import can_occur_in_json
from ask_permissions.cli._lint import Finding, lint_policy, lint_rules
from ask_permissions.cli._main import main
from ask_permissions.rules._patterns import serialize_arguments

from .strategies import decisions, plain_json, quiet_regex_warnings
from .timing import cpu_bound

# -- helpers -----------------------------------------------------------------------------------------------


def lines(rules: PermissionRules, **keywords: Any) -> list[str]:
    """The printed findings about a ruleset."""
    return [str(finding) for finding in lint_rules(rules.rules, None, (), **keywords)]


def lint_file(tmp_path: Path, name: str, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``ask-permissions lint`` on a file with this text: status and output."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    status = main(["lint", str(path)])
    captured = capsys.readouterr()
    assert captured.err == ""
    return status, captured.out


# -- a: auto_allow_dangerous -------------------------------------------------------------------------------


class TestUnguardedAllow:
    """With auto_allow_dangerous, an unrestricted allow on a code-executing tool is a finding on that rule."""

    def test_reported(self) -> None:
        """The allow itself is named, and why it is a trap."""
        rules = PermissionRules(auto_allow_dangerous=True).allow("read_file").allow("bash").allow(ALL, "")
        assert lines(rules) == [
            f"rule {index} ({text}): allows every call of a tool that runs code: auto_allow_dangerous "
            "switches the dangerous-tool guard off, so nothing narrows this allow; add an argument pattern, "
            "or declare it as ask"
            for index, text in ((1, "allow bash"), (2, 'allow every tool, arguments containing ""'))
        ]

    def test_narrowed_allow_and_guard_on(self) -> None:
        """A narrowed allow is fine; with the guard on the same rule is reported as downgraded instead."""
        assert lines(PermissionRules(auto_allow_dangerous=True).allow("bash", "git status")) == []
        (line,) = lines(PermissionRules().allow("bash"))
        assert line.startswith("rule 0 (allow bash): downgraded to ask by the dangerous-tool guard")

    def test_from_a_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The TOML setting reaches the finding."""
        text = (
            "version = 1\n[rules]\nversion = 1\nauto_allow_dangerous = true\n"
            '[[rules.rules]]\ndecision = "allow"\ntool_pattern = { type = "string", value = "code" }\n'
        )
        status, out = lint_file(tmp_path, "p.toml", text, capsys)
        assert status == 1
        assert out.startswith("rule 0 (allow code): allows every call of a tool that runs code")


# -- b: an allow overriding a later deny -------------------------------------------------------------------

OVERRIDDEN = [
    pytest.param(
        [("allow", "bash", "git status"), ("deny", "bash", "rm -rf")],
        'rule 1 (deny bash, arguments containing "rm -rf"): overridden for some calls: rule 0 (allow bash, '
        'arguments containing "git status") comes first and allows bash {"command":"git status; rm -rf"}, '
        "which this rule would deny",
        id="substrings",
    ),
    pytest.param(
        [("allow", "bash", re.compile(r'"command":"git (status|diff)\b')), ("deny", "bash", "rm -rf")],
        'rule 1 (deny bash, arguments containing "rm -rf"): overridden for some calls: rule 0 (allow bash, '
        'arguments matching /"command":"git (status|diff)\\b/) comes first and allows bash '
        '{"command":"git status; rm -rf"}, which this rule would deny',
        id="regex-allow",
    ),
    pytest.param(
        [("allow", ALL, "--dry-run"), ("deny", "deploy", re.compile("prod(uction)?"))],
        "rule 1 (deny deploy, arguments matching /prod(uction)?/): overridden for some calls: rule 0 (allow "
        'every tool, arguments containing "--dry-run") comes first and allows deploy '
        '{"command":"--dry-run; prod"}, which this rule would deny',
        id="allow-every-tool",
    ),
    pytest.param(
        [("allow", "write_file", '"path":"docs/'), ("deny", ALL, ".env")],
        'rule 1 (deny every tool, arguments containing ".env"): overridden for some calls: rule 0 (allow '
        'write_file, arguments containing "\\"path\\":\\"docs/") comes first and allows write_file '
        '{"path":"docs/; .env"}, which this rule would deny',
        id="deny-every-tool",
    ),
    pytest.param(
        [("allow", re.compile("^mcp_"), "read"), ("deny", re.compile("_db$"), "drop")],
        'rule 1 (deny tools matching /_db$/, arguments containing "drop"): overridden for some calls: '
        'rule 0 (allow tools matching /^mcp_/, arguments containing "read") comes first and allows mcp__db '
        '{"command":"read; drop"}, which this rule would deny',
        id="two-tool-regexes",
    ),
    pytest.param(
        [
            ("deny", "bash", "git status; rm"),
            ("allow", "bash", "git status"),
            ("deny", "bash", "rm -rf"),
        ],
        'rule 2 (deny bash, arguments containing "rm -rf"): overridden for some calls: rule 1 (allow bash, '
        'arguments containing "git status") comes first and allows bash {"command":"rm -rf; git status"}, '
        "which this rule would deny",
        id="first-witness-denied-earlier",
    ),
]

NOT_OVERRIDDEN = [
    pytest.param([("deny", "bash", "rm -rf"), ("allow", "bash", "git status")], id="deny-first"),
    pytest.param(
        [("allow", "bash", re.compile(r'^\{"command":"git status"\}$')), ("deny", "bash", "rm -rf")],
        id="exact-allow",
    ),
    pytest.param([("allow", "bash", "git"), ("deny", "read_file", "git")], id="other-tool"),
    pytest.param([("ask", "bash", "git"), ("deny", "bash", "rm")], id="ask-not-allow"),
    pytest.param(
        [
            ("deny", "bash", re.compile("git.*rm|rm.*git")),
            ("allow", "bash", "git"),
            ("deny", "bash", "rm -rf"),
        ],
        id="every-witness-denied-earlier",
    ),
    pytest.param([("allow", ALL, "rm"), ("deny", "bash", "rm -rf")], id="never-matches-instead"),
    pytest.param([("allow", "x", re.compile("(?!)")), ("deny", "x", "a")], id="allow-matches-nothing"),
]


def build(specs: list[tuple[Any, Any, Any]]) -> PermissionRules:
    """A ruleset declaring the specs."""
    rules = PermissionRules()
    for decision, tool, argument in specs:
        rules.add(decision, tool, argument)
    return rules


class TestOverriddenDeny:
    """An allow that decides a call a later deny matches is reported with a witness call, checked."""

    @pytest.mark.parametrize(("specs", "expected"), OVERRIDDEN)
    def test_reported(self, specs: list[tuple[Any, Any, Any]], expected: str) -> None:
        """The deny is named with the allow that decides first and a call both match."""
        assert expected in lines(build(specs))

    @pytest.mark.parametrize("specs", NOT_OVERRIDDEN)
    def test_not_reported(self, specs: list[tuple[Any, Any, Any]]) -> None:
        """No witness the allow decides, no finding."""
        assert not [line for line in lines(build(specs)) if "overridden" in line]

    def test_witness_is_checked(self) -> None:
        """The witness is real: the policy allows it, and the deny matches it."""
        rules = build([("allow", "bash", "git status"), ("deny", "bash", "rm -rf")])
        (finding,) = lint_rules(rules.rules, None, ())
        assert finding.witness is not None
        name, serialized = finding.witness
        call = json.loads(serialized)
        assert serialize_arguments(call) == serialized
        assert rules.classify(name, call) == "allow"
        assert rules.rules[1].matches(name, call)


LINT_TOOLS = ("bash", "x", "mcp_x")
LINT_TEXTS = ("git", "git status", "rm", "rm -rf", '"command":"', "a", "")
lint_tool_patterns = st.one_of(
    st.sampled_from(LINT_TOOLS), st.just(ALL), st.sampled_from(("^mcp_", "x$", "^b")).map(re.compile)
)
lint_argument_patterns = st.one_of(
    st.none(),
    st.sampled_from(LINT_TEXTS),
    st.sampled_from(("git (status|log)", "^{", "rm\\s+-rf", "a$", "st.*rm")).map(re.compile),
)


class TestOverrideSoundness:
    """Every reported override comes with a call that the ruleset allows and the deny matches."""

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.tuples(decisions, lint_tool_patterns, lint_argument_patterns), max_size=7))
    def test_witnesses_hold(self, declared: list[tuple[Any, Any, Any]]) -> None:
        """For each override finding, explain(witness) is an allow and the reported deny matches it."""
        rules = build(declared)
        for finding in lint_rules(rules.rules, None, ()):
            if finding.witness is None:
                continue
            assert finding.index is not None
            name, serialized = finding.witness
            call = json.loads(serialized)
            assert serialize_arguments(call) == serialized
            match = rules.explain(name, call)
            assert match is not None
            assert match.decision == "allow"
            assert match.index is not None
            assert match.index < finding.index
            assert rules.rules[finding.index].matches(name, call)


# -- c: substrings JSON cannot hold ------------------------------------------------------------------------

NEVER_IN_JSON = " ".join(
    (
        'its substring never matches arguments given as a mapping: their JSON writes ", \\, tabs and line',
        'breaks inside values escaped (\\", \\\\, \\t, \\n), so it can match only raw string arguments',
    )
)

SUBSTRINGS = [
    pytest.param('echo "hi"', True, id="quotes-inside-a-value"),
    pytest.param('rm -rf "/"', True, id="quoted-path"),
    pytest.param("C:\\Users", True, id="backslash"),
    pytest.param("a\tb", True, id="tab"),
    pytest.param("line\nbreak", True, id="newline"),
    pytest.param('"command":"rm', False, id="key-and-value-start"),
    pytest.param('echo \\"hi\\"', False, id="escaped-quotes"),
    pytest.param("C:\\\\Users", False, id="escaped-backslash"),
    pytest.param('"rm -rf', False, id="value-start"),
    pytest.param("git status", False, id="plain"),
]


class TestSubstringsJsonCannotHold:
    """A substring that cannot occur in compact JSON never matches a mapping's arguments: a finding."""

    @pytest.mark.parametrize(("substring", "reported"), SUBSTRINGS)
    def test_cases(self, substring: str, reported: bool) -> None:
        """Quotes, backslashes, tabs and line breaks raw inside a value are reported; JSON's own are not."""
        found = lines(PermissionRules().deny("bash", substring))
        assert found == (
            [f"rule 0 (deny bash, arguments containing {_shown(substring)}): {NEVER_IN_JSON}"]
            if reported
            else []
        )

    @settings(max_examples=150, deadline=None)
    @given(st.dictionaries(st.text(max_size=6), plain_json, max_size=4), st.data())
    def test_sound(self, call: dict[str, Any], data: st.DataObject) -> None:
        """Every piece of a real serialization can occur in JSON (so no reported substring could match)."""
        text = serialize_arguments(call)
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, len(text)))
        assert can_occur_in_json(text[start:end])


def _shown(substring: str) -> str:
    return json.dumps(substring, ensure_ascii=False)


# -- d: control characters in a regex ----------------------------------------------------------------------


class TestControlCharacters:
    """A control character in a regex source is a finding; a TOML "\\b" is the classic case."""

    def test_toml_backspace(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A word boundary written in a TOML basic string is a backspace, and lint says so."""
        text = (
            'version = 1\n[rules]\nversion = 1\n[[rules.rules]]\ndecision = "allow"\n'
            'tool_pattern = { type = "string", value = "bash" }\n'
            'argument_pattern = { type = "regexp", source = "git status\\b", flags = "" }\n'
        )
        status, out = lint_file(tmp_path, "p.toml", text, capsys)
        assert status == 1
        assert out == (
            "rule 0 (allow bash, arguments matching /git status\\x08/): its argument regex source holds the "
            'control character U+0008 (backspace): in a TOML basic string "\\b" is a backspace, not a word '
            "boundary; write the regex in a literal string ('...') or double the backslash\n"
        )

    def test_other_characters_and_verbose_layout(self) -> None:
        """Other control characters are named; tabs and newlines lay out a verbose regex."""
        rules = PermissionRules().deny(re.compile("a\x01\x7f")).deny("x", re.compile("a\n  b\t# c", re.X))
        assert lines(rules) == [
            "rule 0 (deny tools matching /a\\x01\\x7f/): its tool regex source holds the control characters "
            "U+0001, U+007F"
        ]


# -- e: catastrophic backtracking --------------------------------------------------------------------------

SLOW = re.compile(
    r"its argument regex has nested quantifiers and backtracks catastrophically: matching '(?P<text>[^']+)' "
    r"\((?P<length>\d+) characters\) took (?P<seconds>\d+\.\d) s, and each extra character "
    r"(doubles it|multiplies it by about \d+\.\d)$"
)


class TestBacktracking:
    """Nested quantifiers are reported with a measured example; those that do not blow up are not."""

    @pytest.mark.parametrize(
        ("source", "pumped"),
        [
            pytest.param(r"(a+)+$", "a", id="a-plus-plus"),
            pytest.param(r"(\w+\s?)*$", "a", id="words"),
            pytest.param(r'"command":"(\w+\s*)+;', "a", id="after-a-prefix"),
        ],
    )
    def test_measured(self, source: str, pumped: str) -> None:
        """The finding shows the input, its length and the time one search took (at least 0.1 s)."""
        (finding,) = lint_rules(PermissionRules().deny("x", re.compile(source)).rules, None, ())
        match = SLOW.search(finding.why)
        assert match is not None, finding.why
        assert len(match["text"]) == int(match["length"])
        assert pumped * 10 in match["text"]
        assert float(match["seconds"]) >= 0.1

    @pytest.mark.parametrize(
        "source",
        [
            pytest.param(r"(ab+)+$", id="each-step-needs-an-a"),
            pytest.param(r"(a+)+", id="matches-at-once"),
            pytest.param(r"(a++)+$", id="possessive"),
            pytest.param(r"((?>a+))+$", id="atomic"),
            pytest.param(r"a+b+$", id="not-nested"),
        ],
    )
    def test_not_reported(self, source: str) -> None:
        """No blow-up measured (or no nesting), no finding."""
        assert lines(PermissionRules().deny("x", re.compile(source))) == []

    def test_budget_spent(self) -> None:
        """Once the measuring budget is spent, candidates are reported as not measured, without timing."""
        with cpu_bound(0.1):
            found = lines(PermissionRules().deny("x", re.compile(r"(a+)+$")), measuring_budget=0)
        assert found == [
            "rule 0 (deny x, arguments matching /(a+)+$/): its argument regex repeats a repeat (nested "
            "quantifiers), which can backtrack catastrophically; not measured: lint has spent its time for "
            "measuring regexes"
        ]


# -- f: regexes Python warns about -------------------------------------------------------------------------


class TestRegexWarnings:
    """A regex Python warns about is a finding, printed by lint only; found even when re cached it."""

    def test_found_after_caching(self) -> None:
        """Compiled (and cached by re) before lint runs, the source is still reported."""
        with quiet_regex_warnings():
            tool, argument = re.compile("[[t]"), re.compile("x[a&&b]|[[c]")
            re.compile("x[a&&b]|[[c]")
        assert lines(PermissionRules().deny(tool, argument)) == [
            "rule 0 (deny tools matching /[[t]/, arguments matching /x[a&&b]|[[c]/): Python warns about its "
            "tool regex: FutureWarning: Possible nested set at position 1",
            "rule 0 (deny tools matching /[[t]/, arguments matching /x[a&&b]|[[c]/): Python warns about its "
            "argument regex: FutureWarning: Possible set intersection at position 3",
            "rule 0 (deny tools matching /[[t]/, arguments matching /x[a&&b]|[[c]/): Python warns about its "
            "argument regex: FutureWarning: Possible nested set at position 9",
        ]

    def test_command_prints_no_warning(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The command shows the finding on stdout and nothing on stderr."""
        rule = {"decision": "deny", "tool_pattern": {"type": "regexp", "source": "[[lint]", "flags": ""}}
        text = json.dumps({"version": 1, "rules": {"version": 1, "rules": [rule]}})
        status, out = lint_file(tmp_path, "p.json", text, capsys)
        assert status == 1
        assert out.endswith(
            "Python warns about its tool regex: FutureWarning: Possible nested set at position 1\n"
        )


# -- g: risk levels in a policy built in Python ------------------------------------------------------------


class Tool:
    """A registry entry as an object with attributes."""

    def __init__(self, name: str, risk_level: str | None) -> None:
        self.name = name
        self.risk_level = risk_level


RISK_WHY = (
    "is none of low, medium, high, critical: the policy reads it as not elevated (only high and critical "
    "are), and a policy file refuses it"
)


class TestRiskLevels:
    """Risk levels other than low/medium/high/critical in a Python-built policy are findings."""

    @pytest.mark.parametrize(
        "tools",
        [
            pytest.param({"deploy": {"risk_level": "HIGH"}, "read": {"risk_level": "low"}}, id="mapping"),
            pytest.param([Tool("deploy", "HIGH"), Tool("read", "low"), Tool("x", None)], id="sequence"),
        ],
    )
    def test_reported(self, tools: object) -> None:
        """Each odd value is named with its tool; known values and undeclared ones are not."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), tools=tools)
        assert [str(finding) for finding in lint_policy(policy)] == [
            f"tool 'deploy': its risk_level 'HIGH' {RISK_WHY}"
        ]

    def test_gem_reading_kept(self) -> None:
        """The Python API still reads an unknown level as not elevated, as the gem does."""
        policy = ApprovalPolicy(queue=ApprovalQueue(), tools={"deploy": {"risk_level": "HIGH"}})
        assert policy.evaluate(ToolCall("deploy")).outcome == "proceed"
        finding: Finding = lint_policy(policy)[0]
        assert (finding.index, finding.layer, finding.subject) == (None, None, "tool 'deploy'")


# -- speed -------------------------------------------------------------------------------------------------

WORDS = (
    "git",
    "status",
    "log",
    "push",
    "rm",
    "-rf",
    "ls",
    "make",
    "deploy",
    "cat",
    "--force",
    "build",
    "/tmp",
)


def generated_policy(count: int, seed: int = 12) -> dict[str, Any]:
    """A policy file of ``count`` rules over 2,000 tools: mostly substrings, some regexes, in random order."""
    rng = random.Random(seed)
    tools = [f"tool_{number}" for number in range(2000)]
    rules = []
    for index in range(count):
        roll = rng.random()
        if roll < 0.9:
            tool: dict[str, str] = {"type": "string", "value": rng.choice(tools)}
        elif roll < 0.99:
            tool = {"type": "regexp", "source": f"^mcp_srv{rng.randrange(40)}_", "flags": ""}
        else:
            tool = {"type": "all"}
        if tool["type"] == "all":
            argument = {"type": "string", "value": f"secret_{index}"}
        elif rng.random() < 0.7:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4)))
            argument = {"type": "string", "value": f"{text} {rng.randrange(100_000)}"}
        else:
            source = f'"path":"/srv/{rng.randrange(300)}/[a-z]+\\.log"'
            argument = {"type": "regexp", "source": source, "flags": rng.choice(("", "i"))}
        decision = rng.choices(("allow", "ask", "deny"), (5, 2, 3))[0]
        rules.append({"decision": decision, "tool_pattern": tool, "argument_pattern": argument})
    registry = [*tools, *(f"mcp_srv{number}_query" for number in range(40))]
    return {
        "version": 1,
        "tools": {name: {"side_effect_scope": "workspace"} for name in registry},
        "rules": {"version": 1, "rules": rules},
    }


class TestLargePolicy:
    """A 100,000-rule file lints in seconds (the checks are indexed; the time is printed, not asserted)."""

    def test_hundred_thousand_rules(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Every finding is one well-formed line about an existing rule."""
        path = tmp_path / "large.json"
        path.write_text(json.dumps(generated_policy(100_000)), encoding="utf-8")
        status = main(["lint", str(path)])
        out, err = capsys.readouterr()
        found = out.splitlines()
        assert (status, err) == (1, "")
        assert found
        label = re.compile(r"rule (\d+) \(")
        for line in found:
            match = label.match(line)
            assert match is not None, line
            assert int(match[1]) < 100_000
