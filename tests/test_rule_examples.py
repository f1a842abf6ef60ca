"""Rule examples in policy and settings files: calls a rule must match and must not, checked at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ask_permissions import (
    ApprovalQueue,
    InvalidSnapshotError,
    LayeredPolicy,
    PermissionSettings,
    ToolCall,
    load_policy,
)

GOOD_POLICY = (
    "version = 1\n\n[permissions]\nallow = [\n"
    '  { rule = "Bash(git status)", match = ["git status", "git status && git status"],'
    ' not_match = ["git status && rm -rf ~"] },\n'
    '  "Read(./src/**)",\n]\ndeny = [\n'
    '  { rule = "Bash(rm *)", match = ["rm -rf /", { args = { command = "ls; rm x" } }],'
    ' not_match = ["ls"] },\n'
    '  { rule = "mcp__github", match = [{ tool = "mcp__github__create_issue", args = {} }],'
    ' not_match = [{ tool = "mcp__gitlab__x" }] },\n]\n'
)

WRONG_MATCH = """\
version = 1

[permissions]
deny = [{ rule = "Bash(rm -rf *)", match = ["rm -r /tmp/x"] }]
"""

WRONG_NOT_MATCH = """\
version = 1

[permissions]
allow = ["Read(./docs/**)", { rule = "Bash(git *)", not_match = ["git push --force"] }]
"""


def _write(tmp_path: Path, text: str, name: str = "policy.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestPolicyFiles:
    """A policy file's rule entries may be tables with match and not_match examples."""

    def test_examples_that_hold_load_and_the_rules_decide(self, tmp_path: Path) -> None:
        """Examples that behave load; the rules are the texts, in the lists' order."""
        policy = load_policy(_write(tmp_path, GOOD_POLICY))
        assert policy.evaluate(ToolCall("Bash", {"command": "git status"})).outcome == "proceed"
        assert policy.evaluate(ToolCall("Bash", {"command": "rm -rf /"})).outcome == "block"

    def test_a_match_example_the_rule_misses_is_an_error_naming_both(self, tmp_path: Path) -> None:
        """The error names the example's field, the rule text and the call."""
        path = _write(tmp_path, WRONG_MATCH)
        with pytest.raises(InvalidSnapshotError, match=r"deny\[0\]\.match\[0\]") as caught:
            load_policy(path)
        message = str(caught.value)
        assert str(path) in message
        assert "'Bash(rm -rf *)' must match the call Bash" in message
        assert "rm -r /tmp/x" in message
        assert caught.value.path == "permissions.deny[0].match[0]"

    def test_a_not_match_example_the_rule_covers_is_an_error(self, tmp_path: Path) -> None:
        """A rule broader than its author meant fails the load."""
        with pytest.raises(
            InvalidSnapshotError, match=r"allow\[1\]\.not_match\[0\].*must not match"
        ) as caught:
            load_policy(_write(tmp_path, WRONG_NOT_MATCH))
        assert caught.value.value == "git push --force"

    @pytest.mark.parametrize(
        ("entry", "field"),
        [
            pytest.param('{ rule = "Bash(ls)", matches = ["ls"] }', "allow[0].matches", id="unknown-key"),
            pytest.param('{ match = ["ls"] }', "allow[0].rule", id="no-rule"),
            pytest.param('{ rule = "Bash(ls)", match = "ls" }', "allow[0].match", id="not-a-list"),
            pytest.param(
                '{ rule = "deploy", match = ["prod"] }', "allow[0].match[0]", id="bare-string-no-kind"
            ),
            pytest.param(
                '{ rule = "Bash(ls)", match = [{ tool = "" }] }', "allow[0].match[0].tool", id="empty"
            ),
        ],
    )
    def test_malformed_entries_name_their_field(self, tmp_path: Path, entry: str, field: str) -> None:
        """An entry that is neither a rule text nor a well-formed table names the bad field."""
        text = f"version = 1\n\n[permissions]\nallow = [{entry}]\n"
        with pytest.raises(InvalidSnapshotError) as caught:
            load_policy(_write(tmp_path, text))
        assert caught.value.path == f"permissions.{field}"


class TestSettingsFiles:
    """Settings files carry examples the same way; they are checked when a policy reads the rules."""

    def _settings(self, tmp_path: Path, permissions: object) -> PermissionSettings:
        agent = tmp_path / "project" / ".agent"
        agent.mkdir(parents=True)
        (agent / "settings.json").write_text(json.dumps({"permissions": permissions}), encoding="utf-8")
        return PermissionSettings.load(project_dir=tmp_path / "project", user_dir=tmp_path / "user")

    def test_good_examples_load(self, tmp_path: Path) -> None:
        """A rule whose examples behave decides as written."""
        settings = self._settings(
            tmp_path,
            {"allow": [{"rule": "Bash(npm test *)", "match": ["npm test --watch"], "not_match": ["npm ci"]}]},
        )
        policy = LayeredPolicy(queue=ApprovalQueue(), settings=settings)
        assert policy.evaluate(ToolCall("Bash", {"command": "npm test --watch"})).outcome == "proceed"

    def test_a_bad_example_names_the_file_the_rule_and_the_example(self, tmp_path: Path) -> None:
        """The error names the settings file, permissions.deny[0].match[0], the rule and the call."""
        settings = self._settings(
            tmp_path, {"deny": [{"rule": "Read(./secrets/**)", "match": ["./other/key"]}]}
        )
        with pytest.raises(InvalidSnapshotError) as caught:
            LayeredPolicy(queue=ApprovalQueue(), settings=settings)
        message = str(caught.value)
        assert "settings.json: permissions.deny[0].match[0]" in message
        assert "'Read(./secrets/**)' must match the call Read" in message
        assert caught.value.path == "permissions.deny[0].match[0]"

    def test_a_malformed_entry_fails_the_settings_load(self, tmp_path: Path) -> None:
        """An entry table with an unknown key is an error when the file is read."""
        with pytest.raises(InvalidSnapshotError, match=r"permissions\.ask\[0\]\.when"):
            self._settings(tmp_path, {"ask": [{"rule": "Bash", "when": "always"}]})
