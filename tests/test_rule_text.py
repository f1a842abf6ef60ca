"""Rule text: tool names, MCP names, specifiers and the kinds that decide how a specifier is read."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import InvalidSnapshotError
from ask_permissions.rules._command import CommandPattern
from ask_permissions.rules._domains import DomainPattern
from ask_permissions.rules._paths import PathPattern
from ask_permissions.rules._specifiers import decode_specifier
from ask_permissions.rules._text import (
    BUILTIN_KINDS,
    RuleText,
    RuleTextError,
    ToolKind,
    parse_rule_text,
    read_kinds,
)
from ask_permissions.typing import Decision

from .specifier_snapshots import restored_or_rejected
from .strategies import assert_snapshot_error, json_values
from .timing import cpu_bound

CWD = "/work/proj"
HOME = "/home/user"


def parse(text: str, decision: Decision = "allow", kinds: dict[str, str] | None = None) -> RuleText:
    return parse_rule_text(text, decision, kinds=read_kinds(kinds), cwd=CWD, home=HOME)


FORMS = [
    pytest.param("Bash", "Bash", None, id="tool"),
    pytest.param("Bash(*)", "Bash", None, id="tool-star"),
    pytest.param("read_file", "read_file", None, id="snake-case-tool"),
    pytest.param("mcp__github__create_issue", "mcp__github__create_issue", None, id="mcp-tool"),
    pytest.param("Bash(npm run test:*)", "Bash", CommandPattern("npm run test:*"), id="shell"),
    pytest.param("bash(git status)", "bash", CommandPattern("git status"), id="lower-bash"),
    pytest.param("sh(ls *)", "sh", CommandPattern("ls *"), id="sh"),
    pytest.param(
        "Bash(./gradlew build)", "Bash", CommandPattern("./gradlew build"), id="shell-wins-over-shape"
    ),
    pytest.param("Read(src/**)", "Read", PathPattern("src/**", root=CWD, home=HOME), id="path"),
    pytest.param("Edit(//etc/hosts)", "Edit", PathPattern("//etc/hosts", root=CWD, home=HOME), id="absolute"),
    pytest.param("write_file(~/x)", "write_file", PathPattern("~/x", root=CWD, home=HOME), id="home"),
    pytest.param("WebFetch(domain:example.com)", "WebFetch", DomainPattern("domain:example.com"), id="url"),
    pytest.param("fetch(domain:*.example.com)", "fetch", DomainPattern("domain:*.example.com"), id="fetch"),
    pytest.param(
        "custom(domain:example.com)", "custom", DomainPattern("domain:example.com"), id="domain-shape"
    ),
    pytest.param("custom(./x)", "custom", PathPattern("./x", root=CWD, home=HOME), id="dot-slash-shape"),
    pytest.param("custom(/x)", "custom", PathPattern("/x", root=CWD, home=HOME), id="slash-shape"),
    pytest.param("custom(~/x)", "custom", PathPattern("~/x", root=CWD, home=HOME), id="tilde-shape"),
    pytest.param("custom(//x)", "custom", PathPattern("//x", root=CWD, home=HOME), id="double-slash-shape"),
    pytest.param("Bash(echo '(x)')", "Bash", CommandPattern("echo '(x)'"), id="parentheses-inside"),
]


class TestForms:
    """Each form reads into the tool pattern and argument pattern the rule language says."""

    @pytest.mark.parametrize(("text", "tool", "argument"), FORMS)
    def test_form(self, text: str, tool: str, argument: object) -> None:
        """Tool names stay exact; the specifier becomes the pattern of the tool's kind."""
        for decision in ("allow", "ask", "deny"):
            rule = parse(text, decision)
            assert rule.text == text
            assert rule.tool_pattern == tool
            assert rule.argument_pattern == argument

    @pytest.mark.parametrize(
        ("text", "decision", "matches", "misses"),
        [
            pytest.param(
                "mcp__github",
                "allow",
                ["mcp__github__create_issue", "mcp__github__x"],
                ["mcp__github", "mcp__githubx__y", "mcp__git__x", "xmcp__github__y"],
                id="server",
            ),
            pytest.param(
                "mcp__github__*", "allow", ["mcp__github__a"], ["mcp__github", "mcp__gh__a"], id="server-star"
            ),
            pytest.param(
                "mcp__github__get_*", "allow", ["mcp__github__get_x"], ["mcp__github__put"], id="tool-prefix"
            ),
            pytest.param("mcp__*", "deny", ["mcp__a__b", "mcp__x"], ["mcp_a", "bash"], id="every-server"),
            pytest.param(
                "mcp__git*", "ask", ["mcp__github__a", "mcp__gitlab__b"], ["mcp__svn__a"], id="prefix"
            ),
            pytest.param("mcp__a.b", "deny", ["mcp__a.b__t"], ["mcp__aXb__t"], id="escaped"),
        ],
    )
    def test_mcp_names(self, text: str, decision: Decision, matches: list[str], misses: list[str]) -> None:
        """MCP forms become anchored prefix regexes over tool names; the text is kept for display."""
        pattern = parse(text, decision).tool_pattern
        assert isinstance(pattern, re.Pattern)
        assert [name for name in matches if pattern.search(name)] == matches
        assert [name for name in misses if pattern.search(name)] == []


ERRORS = [
    pytest.param("", "allow", "no tool name", id="empty"),
    pytest.param("(ls)", "allow", "no tool name", id="no-name"),
    pytest.param(" Bash", "deny", "whitespace around the rule", id="leading-space"),
    pytest.param("Bash\n", "deny", "whitespace around the rule", id="trailing-newline"),
    pytest.param("my tool", "deny", "no whitespace", id="space-in-name"),
    pytest.param("Bash(ls", "allow", "without a closing ')'", id="unclosed"),
    pytest.param("Bash(ls) x", "allow", "without a closing ')'", id="text-after"),
    pytest.param("Bash)", "allow", "a ')' without a '('", id="stray-close"),
    pytest.param("Bash()", "allow", "an empty specifier; write Bash", id="empty-specifier"),
    pytest.param("Bash( )", "allow", "an empty specifier", id="blank-specifier"),
    pytest.param("Bash( ls)", "allow", "whitespace around the specifier", id="spaced-specifier"),
    pytest.param("Ba*sh", "deny", "only allowed at the end of an mcp__ name", id="star-in-name"),
    pytest.param("*", "deny", "only allowed at the end of an mcp__ name", id="star-alone"),
    pytest.param(
        "mcp__*", "allow", "an allow needs the literal mcp__<server>__ prefix", id="allow-every-server"
    ),
    pytest.param("mcp__git*", "allow", "literal mcp__<server>__ prefix", id="allow-server-prefix"),
    pytest.param("mcp____*", "allow", "literal mcp__<server>__ prefix", id="allow-empty-server"),
    pytest.param("mcp__a*b", "deny", "only allowed at the end", id="star-inside-mcp"),
    pytest.param("mcp__a**", "deny", "only allowed at the end", id="two-stars"),
    pytest.param("mcp__", "deny", "no server name", id="no-server"),
    pytest.param("mcp____tool", "deny", "no server name", id="empty-server"),
    pytest.param("mcp__github__", "deny", "write mcp__github for all", id="no-tool"),
    pytest.param("mcp__github(x)", "deny", "a single tool, not every tool", id="specifier-on-server"),
    pytest.param("mcp__*(x)", "deny", "a single tool", id="specifier-on-star"),
    pytest.param("custom(make)", "allow", "no known kind", id="unknown-kind"),
    pytest.param("Bash(a && b)", "allow", "more than one command", id="bad-command"),
    pytest.param("Read(../x)", "allow", "climbs above the rules' root", id="bad-path"),
    pytest.param("WebFetch(domain:a b)", "allow", "not a host name", id="bad-domain"),
    pytest.param("WebFetch(example.com)", "allow", "its specifier is domain:<host>", id="url-without-domain"),
    pytest.param(
        "Read(domain:example.com)", "deny", "a domain: specifier on 'Read', which is a path", id="domain"
    ),
    pytest.param("Bash(domain:example.com)", "deny", "which is a shell tool", id="domain-on-shell"),
]


class TestErrors:
    """A malformed rule raises RuleTextError (a ValueError) naming the text and what is wrong."""

    @pytest.mark.parametrize(("text", "decision", "problem"), ERRORS)
    def test_error(self, text: str, decision: Decision, problem: str) -> None:
        """The message starts with the rule text; the error carries the text and the problem."""
        with pytest.raises(RuleTextError, match=re.escape(problem)) as caught:
            parse(text, decision)
        assert isinstance(caught.value, ValueError)
        assert caught.value.text == text
        assert problem in caught.value.problem
        assert str(caught.value).startswith(f"rule {text!r}: ")

    def test_unknown_kind_says_how_to_declare_one(self) -> None:
        """The error for a tool of no known kind names both ways of declaring its kind."""
        with pytest.raises(RuleTextError) as caught:
            parse("deploy(prod)")
        assert "kinds={'deploy': 'shell'}" in caught.value.problem
        assert 'permission_kind = "shell" under [tools.deploy]' in caught.value.problem

    def test_not_a_string(self) -> None:
        """A rule text must be a string."""
        with pytest.raises(TypeError, match="rule text: expected a string"):
            parse_rule_text(["Bash"], "allow")  # type: ignore[arg-type]

    def test_bad_decision(self) -> None:
        """The decision is one of allow, ask, deny."""
        with pytest.raises(ValueError, match="decision: expected one of allow, ask, deny"):
            parse_rule_text("Bash", "block")  # type: ignore[arg-type]

    @given(st.text(max_size=40) | st.from_regex(r"[A-Za-z_*]{0,8}(\(.{0,12}\))?", fullmatch=True))
    @settings(max_examples=500, deadline=None)
    def test_any_text(self, text: str) -> None:
        """Any text reads into a rule or raises RuleTextError; nothing else escapes."""
        for decision in ("allow", "deny"):
            try:
                read = parse(text, decision).text
            except RuleTextError as error:
                read = error.text
            assert read == text

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("Bash(" + "a " * 4_997 + "a)", id="long-command"),
            pytest.param("Bash(" + "$(" * 4_997 + ")", id="nested-substitutions"),
            pytest.param("Read(" + "a/" * 4_997 + "a)", id="long-path"),
            pytest.param("Read(" + "*/" * 4_997 + "*)", id="many-stars"),
            pytest.param("WebFetch(domain:" + "a." * 4_990 + "a)", id="long-host"),
            pytest.param("mcp__" + "a" * 9_995, id="long-mcp-name"),
            pytest.param("(" * 10_000, id="parentheses"),
        ],
    )
    def test_long_texts_are_quick(self, text: str) -> None:
        """A 10,000-character rule text is read or refused in well under a second."""
        with cpu_bound(1.0):
            try:
                read = parse(text, "deny").text
            except RuleTextError as error:
                read = error.text
        assert read == text


class TestParameterForm:
    """Claude Code's ``Tool(param:value)`` form is refused at load, never read as a rule matching nothing."""

    @pytest.mark.parametrize(
        "text",
        [
            "Bash(run_in_background:true)",
            "Bash(timeout:30)",
            "Read(file_path:/etc/*)",
            "Edit(old_string:*secret*)",
            "WebFetch(url:https://x.example/)",
            "Agent(model:opus)",
            "mcp__github__create_issue(repo:x)",
        ],
    )
    @pytest.mark.parametrize("decision", ["allow", "ask", "deny"])
    def test_refused(self, text: str, decision: Decision) -> None:
        """Every decision refuses it with a RuleTextError that names the argument and says why."""
        with pytest.raises(
            RuleTextError, match=r"Tool\(parameter:value\) form .* is not supported"
        ) as caught:
            parse(text, decision, kinds={"Agent": "shell"})
        assert caught.value.text == text

    @pytest.mark.parametrize(
        "text",
        [
            "Bash(ls:*)",
            "Bash(npm run test:*)",
            "Bash(npm run test:unit)",
            "Bash(curl http://x.example:8080/)",
            "WebFetch(domain:example.com)",
            "Edit(./a:b)",
        ],
    )
    def test_other_colons(self, text: str) -> None:
        """The prefix form (``:*``), a colon inside a command or a path, and ``domain:`` still read."""
        assert parse(text, "deny").argument_pattern is not None


class TestKinds:
    """The host's kinds decide how a tool's specifier is read; built-in kinds fill the rest."""

    def test_declared_kind_and_key(self) -> None:
        """``{"run": "shell:script"}`` makes ``run``'s specifiers commands read from ``script``."""
        rule = parse("run(make test)", kinds={"run": "shell:script"})
        assert rule.argument_pattern == CommandPattern("make test", key="script")
        assert rule.argument_pattern.matches({"script": "make test"}, "allow")

    def test_declared_kind_overrides_builtin(self) -> None:
        """A host may declare a built-in name as another kind."""
        rule = parse("Bash(src/*)", kinds={"Bash": "path"})
        assert rule.argument_pattern == PathPattern("src/*", root=CWD, home=HOME)

    def test_url_key(self) -> None:
        """A url tool's key reaches its domain specifier."""
        rule = parse("browse(domain:example.com)", kinds={"browse": "url:href"})
        assert rule.argument_pattern == DomainPattern("domain:example.com", key="href")

    def test_shape_gives_no_key(self) -> None:
        """A kind taken from the specifier's shape reads the kind's default arguments."""
        rule = parse("custom(./x)")
        assert isinstance(rule.argument_pattern, PathPattern)
        assert rule.argument_pattern.key is None

    def test_builtin_kinds(self) -> None:
        """The built-in kinds are the coding agents' tool names."""
        assert {name for name, kind in BUILTIN_KINDS.items() if kind == ToolKind("shell")} == {
            "bash",
            "sh",
            "Bash",
        }
        assert BUILTIN_KINDS["NotebookEdit"] == ToolKind("path")
        assert BUILTIN_KINDS["WebFetch"] == ToolKind("url")

    def test_default_directories(self) -> None:
        """Without cwd and home, path specifiers use the working and home directories."""
        rule = parse_rule_text("Read(src/*)", "allow")
        assert isinstance(rule.argument_pattern, PathPattern)
        assert rule.argument_pattern == PathPattern("src/*")

    @pytest.mark.parametrize(
        ("kinds", "error", "message"),
        [
            pytest.param(
                {"run": "script"}, ValueError, r"kinds\['run'\]: expected 'shell', 'path' or 'url'", id="kind"
            ),
            pytest.param({"run": "shell:"}, ValueError, "expected 'shell'", id="empty-key"),
            pytest.param({"run": "Shell"}, ValueError, "expected 'shell'", id="case"),
            pytest.param({"": "shell"}, ValueError, "non-empty tool names", id="empty-name"),
            pytest.param({"run": 1}, TypeError, "string tool names and kinds", id="not-a-string"),
            pytest.param(["run"], TypeError, "a mapping", id="not-a-mapping"),
        ],
    )
    def test_bad_kinds(self, kinds: Any, error: type[Exception], message: str) -> None:
        """A kinds mapping is checked entry by entry, naming the entry."""
        with pytest.raises(error, match=message):
            read_kinds(kinds)


class TestSpecifierSnapshots:
    """Specifier patterns decode from their snapshots by type; an unknown type is refused."""

    @pytest.mark.parametrize(
        "pattern",
        [CommandPattern("ls *"), PathPattern("src/*", root=CWD, home=HOME), DomainPattern("example.com")],
        ids=["command", "path", "domain"],
    )
    def test_decode(self, pattern: CommandPattern | PathPattern | DomainPattern) -> None:
        """Each pattern comes back from its own snapshot."""
        assert decode_specifier(pattern.to_snapshot(), "p") == pattern

    @pytest.mark.parametrize(
        ("snapshot", "path"),
        [
            pytest.param({"type": "regexp", "source": "x", "flags": ""}, "p.type", id="gem-type"),
            pytest.param({"type": "glob", "text": "x"}, "p.type", id="unknown-type"),
            pytest.param({"text": "x"}, "p.type", id="no-type"),
            pytest.param("ls", "p", id="not-an-object"),
        ],
    )
    def test_unknown(self, snapshot: Any, path: str) -> None:
        """Anything but a specifier pattern's snapshot raises InvalidSnapshotError at its path."""
        error = assert_snapshot_error(lambda data: decode_specifier(data, "p"), snapshot, path)
        assert isinstance(error, InvalidSnapshotError)

    @given(json_values)
    @settings(max_examples=200, deadline=None)
    def test_fuzzed(self, snapshot: Any) -> None:
        """Any JSON decodes or is refused with InvalidSnapshotError."""
        restored_or_rejected(lambda data: decode_specifier(data, ""), snapshot)
