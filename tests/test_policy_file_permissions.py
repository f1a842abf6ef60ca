"""Policy files: the ``permissions`` table of rule text, and ``tools.<name>.permission_kind``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ask_permissions import InvalidSnapshotError, PermissionRules, PermissionRuleSet, ToolCall, load_policy
from ask_permissions.rules._paths import PathPattern

POLICY = """\
version = 1
mode = "ask_before_changes"

[permissions]
allow = ["Bash(git status)", "Bash(npm run test:*)", "Read(src/**)", "run(make *)"]
ask = ["Bash(git push *)"]
deny = ["Bash(rm *)", "Read(*.env)"]
cwd = "project"

[tools.run]
permission_kind = "shell:script"

[tools.Bash]
[tools.Read]
[tools.list_dir]

[rules]
version = 1
rules = [{ decision = "allow", tool_pattern = { type = "string", value = "list_dir" } }]
"""


def _policy(tmp_path: Path, text: str = POLICY) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


class TestPermissionsTable:
    """Rule text in a policy file decides calls, before the snapshot-form rules."""

    @pytest.mark.parametrize(
        ("tool", "arguments", "outcome", "text"),
        [
            pytest.param(
                "Bash",
                {"command": "git status && npm run test"},
                "proceed",
                "Bash(git status)",
                id="compound",
            ),
            pytest.param("Bash", {"command": "git status; rm -rf ~"}, "block", "Bash(rm *)", id="deny"),
            pytest.param("Bash", {"command": "git push origin"}, "pending", "Bash(git push *)", id="ask"),
            pytest.param("run", {"script": "make test"}, "proceed", "run(make *)", id="declared-kind"),
            pytest.param("list_dir", {}, "proceed", None, id="snapshot-rules-after"),
            pytest.param("Read", {"file_path": "src/.env"}, "block", "Read(*.env)", id="path-deny"),
        ],
    )
    def test_decisions(
        self, tmp_path: Path, tool: str, arguments: dict[str, str], outcome: str, text: str | None
    ) -> None:
        """Each call gets the decision of the rule text that matches it, named in the record."""
        record = load_policy(_policy(tmp_path)).evaluate(ToolCall(tool, arguments, "1"))
        assert record.outcome == outcome
        assert record.rule is not None
        assert record.rule.text == text

    def test_relative_cwd_is_next_to_the_file(self, tmp_path: Path) -> None:
        """A relative ``cwd`` names a directory next to the policy file."""
        policy = load_policy(_policy(tmp_path))
        inside = str(tmp_path / "project" / "src" / "a.py")
        assert policy.evaluate(ToolCall("Read", {"file_path": inside}, "1")).outcome == "proceed"
        assert (
            policy.evaluate(ToolCall("Read", {"file_path": str(tmp_path / "src" / "a.py")}, "2")).rule is None
        )

    def test_text_rules_come_first(self, tmp_path: Path) -> None:
        """The ``permissions`` rules precede the snapshot-form ``rules``, whose own settings are kept."""
        data = {
            "version": 1,
            "permissions": {"deny": ["Bash(rm *)"], "cwd": "/w"},
            "rules": {"version": 1, "rules": [{"decision": "allow", "tool_pattern": {"type": "all"}}]},
        }
        rules = load_policy(data).rules
        assert isinstance(rules, PermissionRules)
        assert [rule.text for rule in rules.rules] == ["Bash(rm *)", None]

    def test_rule_set_default_layer(self) -> None:
        """With a rule-set snapshot, the text rules lead its default layer; the project layer is kept."""
        data = {
            "version": 1,
            "permissions": {"allow": ["Bash(ls *)"], "cwd": "/w"},
            "rules": {
                "version": 1,
                "default_rules": None,
                "project_rules": {
                    "version": 1,
                    "rules": [{"decision": "deny", "tool_pattern": {"type": "all"}}],
                },
            },
        }
        rules = load_policy(data).rules
        assert isinstance(rules, PermissionRuleSet)
        assert rules.classify("Bash", {"command": "ls"}) == "deny"
        default = rules.default_rules
        assert isinstance(default, PermissionRules)
        assert [rule.text for rule in default.rules] == ["Bash(ls *)"]

    def test_home(self) -> None:
        """``home`` anchors ``~/`` specifiers."""
        rules = load_policy({"version": 1, "permissions": {"allow": ["Read(~/notes/*)"], "home": "/h"}}).rules
        assert isinstance(rules, PermissionRules)
        pattern = rules.rules[0].argument_pattern
        assert isinstance(pattern, PathPattern)
        assert pattern.home == "/h"


class TestErrors:
    """A bad entry is refused with the path to it, and nothing is built."""

    @pytest.mark.parametrize(
        ("data", "path", "match"),
        [
            pytest.param(
                {"permissions": {"deny": ["Read", "Bash(a && b)"]}},
                "permissions.deny[1]",
                "more than one",
                id="rule",
            ),
            pytest.param(
                {"permissions": {"allow": "Bash"}}, "permissions.allow", "an array", id="not-a-list"
            ),
            pytest.param(
                {"permissions": {"allow": [1]}}, "permissions.allow[0]", "a string", id="not-a-string"
            ),
            pytest.param(
                {"permissions": {"allow": ["x(y)"]}}, "permissions.allow[0]", "permission_kind", id="kind"
            ),
            pytest.param(
                {"permissions": {"allows": []}}, "permissions.allows", "no such key", id="unknown-key"
            ),
            pytest.param({"permissions": {"home": "h"}}, "permissions.home", "absolute", id="relative-home"),
            pytest.param(
                {"tools": {"x": {"permission_kind": "shel"}}},
                "tools.x.permission_kind",
                "'shell'",
                id="bad-kind",
            ),
            pytest.param(
                {"tools": {"x": {"permission_kind": 1}}}, "tools.x.permission_kind", "string", id="kind-type"
            ),
        ],
    )
    def test_refused(self, data: dict[str, object], path: str, match: str) -> None:
        """Every problem raises InvalidSnapshotError naming its path."""
        with pytest.raises(InvalidSnapshotError, match=match) as caught:
            load_policy({"version": 1, **data})
        assert caught.value.path == path

    def test_file_errors_name_the_file(self, tmp_path: Path) -> None:
        """Read from a file, the error also names the file and the rule's line."""
        path = _policy(tmp_path, 'version = 1\n[permissions]\nallow = ["Bash(ls"]\n')
        expected = r"policy\.toml:3: permissions\.allow\[0\]: "
        with pytest.raises(InvalidSnapshotError, match=expected) as caught:
            load_policy(path)
        assert caught.value.path == "permissions.allow[0]"
