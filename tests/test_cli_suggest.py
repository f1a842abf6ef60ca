"""``ask-permissions suggest``: the fewest allow rules answering the most approvals, proven; --write only."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from ask_permissions import load_policy
from ask_permissions.cli._main import main

from .evidence_samples import OLD_POLICY, record_session


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, Path]:
    policy = tmp_path / "policy.toml"
    policy.write_text(OLD_POLICY, encoding="utf-8")
    database = tmp_path / "store.db"
    record_session(policy, store_path=database)
    return f"sqlite:///{database}", policy


class TestSuggest:
    """The rules answer approvals only, and the proof covers every rejection and deny rule."""

    def test_rules_and_proof(self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """One rule per family node; none broader than the approvals; no rejected call is covered."""
        url, policy = store
        assert main(["suggest", "--store", url, "--policy", str(policy), "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        rules = {rule["rule"]: rule["saved"] for rule in found["rules"]}
        assert rules == {
            "Bash(git diff *)": 3,
            "Bash(npm test *)": 3,
            "Edit(//work/project/src/**)": 3,
            "WebFetch(domain:docs.python.org)": 2,
            "mcp__github__create_issue": 2,
        }
        assert found["proof"]["proven"] is True
        assert found["proof"]["rejected_calls"] == 5
        assert found["proof"]["would_proceed"] == []
        # No rule above a rejection: npm publish keeps Bash(npm *) out, .env keeps the project's root out.
        assert "Bash(npm *)" not in rules
        assert "Edit(//work/project/**)" not in rules

    def test_min_count(self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """--min-count 3 drops the rules that answer fewer approvals."""
        url, policy = store
        main(["suggest", "--store", url, "--policy", str(policy), "--min-count", "3", "--json"])
        assert [rule["saved"] for rule in json.loads(capsys.readouterr().out)["rules"]] == [3, 3, 3]

    def test_deny_rules_are_never_covered(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A deny rule below an approved prefix keeps the prefix out (its witness call would be covered)."""
        policy = tmp_path / "policy.toml"
        policy.write_text(
            OLD_POLICY.replace('deny = ["Bash(rm -rf *)"]', 'deny = ["Bash(npm test --force *)"]')
        )
        database = tmp_path / "store.db"
        record_session(policy, store_path=database)
        main(["suggest", "--store", f"sqlite:///{database}", "--policy", str(policy), "--json"])
        rules = [rule["rule"] for rule in json.loads(capsys.readouterr().out)["rules"]]
        assert "Bash(npm test *)" not in rules
        assert "Bash(git diff *)" in rules

    def test_nothing_is_written_without_write(self, store: tuple[str, Path]) -> None:
        """Without --write the policy file and the store stay as they were."""
        url, policy = store
        before = policy.read_bytes()
        assert main(["suggest", "--store", url, "--policy", str(policy)]) == 0
        assert policy.read_bytes() == before


class TestWrite:
    """--write adds the rules to the file's allow list after printing the diff; the file still loads."""

    def test_a_toml_policy_file_keeps_its_comments(
        self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The TOML file gains the rules in [permissions] allow; its other lines stay as written."""
        url, policy = store
        policy.write_text("# keep me\n" + OLD_POLICY, encoding="utf-8")
        assert main(["suggest", "--store", url, "--write", str(policy)]) == 0
        out = capsys.readouterr().out
        assert '+allow = ["Bash(git status)", "Bash(git diff *)"' in out
        text = policy.read_text(encoding="utf-8")
        assert text.startswith("# keep me\n")
        allow = tomllib.loads(text)["permissions"]["allow"]
        assert allow[0] == "Bash(git status)"
        assert "mcp__github__create_issue" in allow
        load_policy(policy)

    def test_a_settings_file(
        self, store: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A local settings file of a project gains the rules; the project's rules prove them."""
        url, _ = store
        agent = tmp_path / "project" / ".agent"
        agent.mkdir(parents=True)
        (agent / "settings.json").write_text(
            json.dumps({"permissions": {"deny": ["WebFetch"]}}), encoding="utf-8"
        )
        local = agent / "settings.local.json"
        local.write_text(json.dumps({"model": "x"}), encoding="utf-8")
        assert main(["suggest", "--store", url, "--write", str(local)]) == 0
        data = json.loads(local.read_text(encoding="utf-8"))
        assert data["model"] == "x"
        assert "Bash(git diff *)" in data["permissions"]["allow"]
        assert not any(rule.startswith("WebFetch") for rule in data["permissions"]["allow"])
        assert '+      "Bash(git diff *)",' in capsys.readouterr().out
