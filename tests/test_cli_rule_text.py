"""The command with rule text: check shows each sub-command's decision and rule; lint finds the traps."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_cli import in_process, run_cli

POLICY = """\
version = 1
mode = "ask_before_changes"

[permissions]
allow = ["Bash(git status)", "Bash(npm run test:*)", "Bash(* --version)"]
deny = ["Bash(rm *)"]
"""


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


class TestCheck:
    """``check`` of a compound command shows the decision and rule of each sub-command."""

    def test_refused_compound(self, policy: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A compound command with a denied part is blocked, and each part's decision is shown."""
        status, out, _ = in_process(
            capsys, "check", str(policy), "Bash", '{"command": "git status && rm -rf ~ && curl x"}'
        )
        assert status == 4
        assert out.splitlines() == [
            "outcome: block",
            "layer:   deny_rule",
            "rule:    rule 0: deny Bash(rm *)",
            "reason:  Denied by permission rules: 'Bash'",
            "sub-commands:",
            "  git status  -> allow (rule 1: Bash(git status))",
            "  rm -rf ~    -> deny  (rule 0: Bash(rm *))",
            "  curl x      -> (no rule matched)",
        ]

    def test_allowed_compound(self, policy: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A compound command whose every part is allowed proceeds, naming each part's rule."""
        status, out, _ = in_process(
            capsys, "check", str(policy), "Bash", '{"command": "git status; npm run test"}'
        )
        assert status == 0
        assert "  npm run test  -> allow (rule 2: Bash(npm run test:*))" in out.splitlines()

    def test_single_command_has_no_breakdown(self, policy: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A command of one sub-command needs no breakdown."""
        _, out, _ = in_process(capsys, "check", str(policy), "Bash", '{"command": "git status"}')
        assert "sub-commands:" not in out

    def test_json_record(self, policy: Path) -> None:
        """``--json`` gives the record with the rule's text and the parts (as a user runs it)."""
        result = run_cli("check", "--json", str(policy), "Bash", '{"command": "git status && npm run test"}')
        assert result.returncode == 0, result.stderr
        assert '"text": "Bash(git status)"' in result.stdout
        assert '"subcommand": "npm run test"' in result.stdout


class TestLint:
    """``lint`` reports the traps of rule text in a policy file."""

    def test_wildcard_program(self, policy: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """An allow whose specifier starts with '*' is reported with its text."""
        status, out, _ = in_process(capsys, "lint", str(policy))
        assert status == 1
        assert "allow Bash(* --version)" in out
        assert "starts with '*'" in out
