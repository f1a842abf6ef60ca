"""Lint of rule text: the traps of the new forms, each reported once, and nothing for sound rules."""

from __future__ import annotations

import re

import pytest

from ask_permissions import PermissionRules
from ask_permissions.cli._lint import describe_rule, lint_rules

from .timing import cpu_bound

CASES = [
    pytest.param({"allow": ["Bash(* --version)"]}, 0, "starts with '*'", id="wildcard-program"),
    pytest.param(
        {"allow": ["Bash(git push origin)"], "deny": ["Bash(git push *)"]}, 1, "always covered", id="covered"
    ),
    pytest.param(
        {"allow": ["Bash(npm test)"], "ask": ["Bash(npm test)"]}, 1, "always covered", id="covered-equal"
    ),
    pytest.param({"allow": ["Read(//etc/**)"]}, 0, "outside the rules' root", id="absolute-path"),
    pytest.param({"allow": ["Read(~/notes/*)"]}, 0, "outside the rules' root", id="home-path"),
    pytest.param({"allow": ["Read(git status)"]}, 0, "reads like a command", id="command-on-path-tool"),
]

SOUND = [
    pytest.param({"allow": ["Bash(git status)", "Read(src/**)", "mcp__github"]}, id="plain"),
    pytest.param({"allow": ["Bash(git status)"], "deny": ["Bash(git push *)"]}, id="other-prefix"),
    pytest.param({"allow": ["Bash(git *)"], "deny": ["Bash(git push *)"]}, id="deny-narrower-than-allow"),
    pytest.param({"allow": ["run(git status)"], "deny": ["Bash(git *)"]}, id="other-tool"),
]


class TestFindings:
    """Each trap of the new forms is found, with the rule's text as its subject."""

    @pytest.mark.parametrize(("texts", "index", "why"), CASES)
    def test_found(self, texts: dict[str, list[str]], index: int, why: str) -> None:
        """The finding names the rule by its text and says what is wrong."""
        rules = PermissionRules.from_text(**texts, cwd="/work", kinds={"run": "shell"})  # type: ignore[arg-type]
        findings = [finding for finding in lint_rules(rules.rules, None, ()) if why in finding.why]
        assert [finding.index for finding in findings] == [index]
        assert findings[0].subject == describe_rule(rules.rules[index])
        assert findings[0].subject.endswith(rules.rules[index].text or "")

    def test_wildcard_mcp_server(self) -> None:
        """An allow of every MCP server's tools (possible in the regex form) is reported."""
        rules = PermissionRules().allow(re.compile("^mcp__")).allow(re.compile("^mcp__github__"))
        findings = [
            finding for finding in lint_rules(rules.rules, None, ()) if "every MCP server" in finding.why
        ]
        assert [finding.index for finding in findings] == [0]

    @pytest.mark.parametrize("texts", SOUND)
    def test_sound_rules(self, texts: dict[str, list[str]]) -> None:
        """Sound rule text gives no finding."""
        rules = PermissionRules.from_text(**texts, cwd="/work", kinds={"run": "shell"})  # type: ignore[arg-type]
        assert lint_rules(rules.rules, None, ()) == []

    def test_many_rules_lint_quickly(self) -> None:
        """Thousands of command rules of one tool lint quickly: the covering check is indexed by prefix."""
        deny = [f"Bash(tool{index} *)" for index in range(2_000)]
        allow = [f"Bash(other{index} run)" for index in range(2_000)]
        rules = PermissionRules.from_text(allow=allow, deny=deny)
        with cpu_bound(5):
            assert lint_rules(rules.rules, None, ()) == []
