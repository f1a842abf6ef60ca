"""``ask-permissions suggest``: the fewest allow rules answering the most approvals, proven; --write only."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ask_permissions import SqliteStore, ToolCall, load_policy
from ask_permissions.cli._main import main
from ask_permissions.cli._suggest import _planned

from .evidence_samples import OLD_POLICY, record_session


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, Path]:
    policy = tmp_path / "policy.toml"
    policy.write_text(OLD_POLICY, encoding="utf-8")
    database = tmp_path / "store.db"
    record_session(policy, store_path=database)
    return f"sqlite:///{database}", policy


def _files(directory: Path) -> list[str]:
    """The files of a directory but the SQLite side files a reader of a WAL database may leave (empty)."""
    return sorted(path.name for path in directory.iterdir() if not path.name.startswith("store.db-"))


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
        """Without --write the policy file and the store stay as they were, and no file appears."""
        url, policy = store
        before = policy.read_bytes()
        listing = _files(policy.parent)
        assert main(["suggest", "--store", url, "--policy", str(policy)]) == 0
        assert policy.read_bytes() == before
        assert _files(policy.parent) == listing

    def test_text_report(self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """Each rule with the prompts it saves and example calls, then the proof."""
        url, policy = store
        assert main(["suggest", "--store", url, "--policy", str(policy)]) == 0
        out = capsys.readouterr().out
        assert out.startswith("14 approvals and 5 rejections in sqlite:///")
        assert "Bash(git diff *)" in out
        assert "3 prompts saved  (command-prefix)" in out
        assert 'e.g. Bash {"command": "git diff HEAD"}' in out
        assert "each rule was tried on the 5 rejected calls" in out
        assert "were decided again: none would proceed" in out
        assert "NOT PROVEN" not in out


Answered = list[tuple[dict[str, str], bool | dict[str, str]]]
"""Calls of one tool and how a person answered each: approved (True), rejected (False), or approved with
these edited arguments instead."""


def _answered_store(tmp_path: Path, tool: str, answers: Answered) -> tuple[str, Path]:
    """A store (and the policy asking for ``tool`` that filled it) where a person answered these calls."""
    policy = tmp_path / f"asking-{tool}.toml"
    policy.write_text(f'version = 1\nrequire_approval = ["{tool}"]\n', encoding="utf-8")
    database = tmp_path / f"{tool}.db"
    store = SqliteStore(database)
    try:
        live = load_policy(policy, store=store)
        for arguments, answer in answers:
            result = live.before_tool_call(ToolCall(tool, arguments))
            assert result["action"] == "pending"
            if answer is False:
                live.reject(result["action_id"], decided_by="ana")
            else:
                edited = None if answer is True else answer
                live.approve(result["action_id"], arguments=edited, decided_by="ana")
    finally:
        store.close()
    return f"sqlite:///{database}", policy


def _commands(*answers: tuple[str, bool]) -> Answered:
    return [({"command": command}, answer) for command, answer in answers]


def _edited_store(tmp_path: Path) -> tuple[str, Path]:
    """A store where a person twice changed ``git push --force origin main`` into a plain push, then
    approved their edit, and approved ``git status -s`` twice as it was."""
    forced, plain = {"command": "git push --force origin main"}, {"command": "git push origin main"}
    answers: Answered = [(forced, plain), ({"command": "git status -s"}, True)]
    answers += [(forced, plain), ({"command": "git status -s ."}, True)]
    return _answered_store(tmp_path, "Bash", answers)


class TestEditedApprovals:
    """A person who changed a call before approving it did not approve the call as the model made it."""

    def test_an_edited_call_teaches_no_rule_for_itself(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The original of an edited approval counts as refused: no rule allows it."""
        url, policy = _edited_store(tmp_path)
        assert main(["suggest", "--store", url, "--policy", str(policy), "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        rules = [rule["rule"] for rule in found["rules"]]
        assert rules == ["Bash(git status -s *)"]
        allowed = load_policy(
            {"version": 1, "require_approval": ["Bash"], "permissions": {"allow": rules}}
        ).evaluate(ToolCall("Bash", {"command": "git push --force origin main"}))
        assert allowed.outcome == "pending"
        assert found["approvals"] == 2
        assert found["rejections"] == 2


def _edits_store(tmp_path: Path, approved: Path, rejected: Path) -> str:
    """A store where a person approved two edits under ``approved`` and rejected one of ``rejected``."""
    paths = ((approved / "a.py", True), (approved / "b.py", True), (rejected / "key.py", False))
    return _answered_store(tmp_path, "Edit", [({"file_path": str(path)}, yes) for path, yes in paths])[0]


PASSING_HOOK = "#!/bin/sh\nexit 0\n"
"""A command hook that passes every call (exit 0, nothing on standard output): the rules decide."""


class TestProvenAsTheFileReads:
    """The proof decides with the policy as its file reads it, wherever suggest runs."""

    def test_a_hook_found_next_to_the_policy_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A hook at a path relative to the policy file runs in the proof too: were it not found there (a
        failure blocks), a rejected compound the new rule lets through with the file's own would read as
        blocked."""
        answers = _commands(("git diff a", True), ("git diff b", True), ("git diff c && ls", False))
        url, _ = _answered_store(tmp_path, "Bash", answers)
        folder = tmp_path / "policy"
        (folder / "hooks").mkdir(parents=True)
        hook = folder / "hooks" / "pass.sh"
        hook.write_text(PASSING_HOOK, encoding="utf-8")
        hook.chmod(0o755)
        policy = folder / "policy.toml"
        policy.write_text(
            'version = 1\nrequire_approval = ["Bash"]\n\n[permissions]\nallow = ["Bash(ls *)"]\n\n'
            '[[hooks.PreToolUse]]\nhooks = [{ type = "command", command = "./hooks/pass.sh" }]\n',
            encoding="utf-8",
        )
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        rejected = ToolCall("Bash", {"command": "git diff c && ls"})
        assert load_policy(policy).evaluate(rejected).outcome == "pending"
        assert main(["suggest", "--store", url, "--write", str(policy), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["rules"] == []
        assert load_policy(policy).evaluate(rejected).outcome == "pending"


class TestWrittenWhereItWasProven:
    """A path rule is written so that the file it goes to reads it as the proof did: relative to the
    project it was proven in, else as an absolute path."""

    def test_a_policy_file_without_cwd_gets_absolute_paths(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A policy file that names no cwd reads ./ rules from wherever the agent runs: the rules learned
        in one project must not allow another project's rejected edit."""
        here, there = tmp_path / "here", tmp_path / "there"
        url = _edits_store(tmp_path, here / "src", there / "src")
        policy = tmp_path / "shared" / "policy.toml"
        policy.parent.mkdir()
        policy.write_text('version = 1\nrequire_approval = ["Edit"]\n', encoding="utf-8")
        here.mkdir()
        monkeypatch.chdir(here)
        assert main(["suggest", "--store", url, "--write", str(policy)]) == 0
        capsys.readouterr()
        allow = tomllib.loads(policy.read_text(encoding="utf-8"))["permissions"]["allow"]
        assert allow == [f"Edit(/{here}/src/**)"]
        (there / "src").mkdir(parents=True)
        monkeypatch.chdir(there)
        agent = load_policy(policy)
        assert (
            agent.evaluate(ToolCall("Edit", {"file_path": str(there / "src" / "key.py")})).outcome
            == "pending"
        )

    def test_the_users_settings_get_absolute_paths(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The user's settings read ./ rules from ~/.agent (and as the home project's, from ~): a rule
        learned in a project names its absolute path there."""
        home, here, there = tmp_path / "home", tmp_path / "here", tmp_path / "there"
        monkeypatch.setenv("HOME", str(home))
        url = _edits_store(tmp_path, here / "src", there / "src")
        (home / ".agent").mkdir(parents=True)
        (here / ".agent").mkdir(parents=True)
        user = home / ".agent" / "settings.json"
        assert main(["suggest", "--store", url, "--policy", str(here), "--write", str(user)]) == 0
        capsys.readouterr()
        assert json.loads(user.read_text(encoding="utf-8"))["permissions"]["allow"] == [
            f"Edit(/{here}/src/**)"
        ]

    def test_another_projects_settings_are_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--policy one project, --write another's settings: the proof would hold for the first project's
        rules, not for the second's (whose own allow rules may let a rejected compound through with the new
        ones), so nothing is written; exit 2."""
        here, there = tmp_path / "here", tmp_path / "there"
        answers = _commands(("git diff a", True), ("git diff b", True), ("git diff c && ls", False))
        url, _ = _answered_store(tmp_path, "Bash", answers)
        for project in (here, there):
            (project / ".agent").mkdir(parents=True)
        (there / ".agent" / "settings.json").write_text(
            json.dumps({"permissions": {"allow": ["Bash(ls *)"]}}), encoding="utf-8"
        )
        local = there / ".agent" / "settings.local.json"
        assert main(["suggest", "--store", url, "--policy", str(here), "--write", str(local)]) == 2
        assert "--write" in capsys.readouterr().err
        assert not local.exists()
        assert main(["suggest", "--store", url, "--write", str(local)]) == 0  # proven against its own project
        capsys.readouterr()
        assert not local.exists()  # no rule holds there: git diff * with ls * would let the rejection through

    def test_the_projects_own_settings_keep_relative_paths(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The project's own local settings read ./src from the project, as the proof did."""
        here, there = tmp_path / "here", tmp_path / "there"
        url = _edits_store(tmp_path, here / "src", there / "src")
        (here / ".agent").mkdir(parents=True)
        local = here / ".agent" / "settings.local.json"
        assert main(["suggest", "--store", url, "--write", str(local)]) == 0
        capsys.readouterr()
        assert json.loads(local.read_text(encoding="utf-8"))["permissions"]["allow"] == ["Edit(./src/**)"]

    def test_a_policy_file_with_its_cwd_keeps_relative_paths(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A policy file whose permissions name the cwd reads ./ rules from there, as the proof did."""
        here, there = tmp_path / "here", tmp_path / "there"
        url = _edits_store(tmp_path, here / "src", there / "src")
        here.mkdir()
        policy = here / "policy.toml"
        policy.write_text(
            'version = 1\nrequire_approval = ["Edit"]\n\n[permissions]\ncwd = "."\n', encoding="utf-8"
        )
        assert main(["suggest", "--store", url, "--write", str(policy)]) == 0
        capsys.readouterr()
        assert tomllib.loads(policy.read_text(encoding="utf-8"))["permissions"]["allow"] == ["Edit(./src/**)"]


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

    def test_a_rule_with_examples_is_kept_as_a_table(
        self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An allow entry written as a table with examples stays one (TOML inline table), examples kept."""
        url, policy = store
        policy.write_text(
            OLD_POLICY.replace(
                'allow = ["Bash(git status)"]',
                'allow = [{ rule = "Bash(git status)", match = ["git status"], "not_match" = ["git st"] }]',
            ),
            encoding="utf-8",
        )
        assert main(["suggest", "--store", url, "--write", str(policy)]) == 0
        capsys.readouterr()
        allow = tomllib.loads(policy.read_text(encoding="utf-8"))["permissions"]["allow"]
        assert allow[0] == {
            "rule": "Bash(git status)",
            "match": ["git status"],
            "not_match": ["git st"],
        }
        assert "Bash(git diff *)" in allow
        load_policy(policy)

    def test_the_diff_comes_before_the_write(
        self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The report, then the diff, then the line saying the file was written."""
        url, policy = store
        assert main(["suggest", "--store", url, "--write", str(policy)]) == 0
        out = capsys.readouterr().out
        report, diff, written = out.index("proof:"), out.index(f"--- {policy}"), out.index("rules written")
        assert report < diff < written

    def test_json_carries_the_diff(self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """--json --write: standard output is one JSON object, with the diff that was written."""
        url, policy = store
        assert main(["suggest", "--store", url, "--write", str(policy), "--json"]) == 0
        captured = capsys.readouterr()
        report = json.loads(captured.out)
        assert report["write"]["file"] == str(policy)
        assert '+allow = ["Bash(git status)", "Bash(git diff *)"' in report["write"]["diff"]
        assert "Bash(git diff *)" in tomllib.loads(policy.read_text(encoding="utf-8"))["permissions"]["allow"]
        assert "allow rules written" in captured.err

    def test_a_layout_it_cannot_edit_is_refused(
        self, store: tuple[str, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An allow list it cannot edit in place (an inline table) is exit 2, the file untouched."""
        url, policy = store
        text = OLD_POLICY.replace(
            '[permissions]\ndeny = ["Bash(rm -rf *)"]\nallow = ["Bash(git status)"]\n',
            'permissions = { deny = ["Bash(rm -rf *)"], allow = ["Bash(git status)"] }\n',
        )
        assert text != OLD_POLICY
        policy.write_text(text, encoding="utf-8")
        listing = _files(policy.parent)
        assert main(["suggest", "--store", url, "--write", str(policy)]) == 2
        assert "cannot add the rules to its [permissions] allow list safely" in capsys.readouterr().err
        assert policy.read_text(encoding="utf-8") == text
        assert _files(policy.parent) == listing

    def test_a_file_changed_since_the_diff_is_not_written(self, store: tuple[str, Path]) -> None:
        """The write goes only over the text the diff was made from: a change in between refuses it."""
        _, policy = store
        edit = _planned(str(policy), ["Bash(git diff *)"])
        assert edit is not None
        changed = policy.read_text(encoding="utf-8") + "# edited meanwhile\n"
        policy.write_text(changed, encoding="utf-8")
        with pytest.raises(ValueError, match="changed while suggest ran; nothing written"):
            edit.apply()
        assert policy.read_text(encoding="utf-8") == changed

    def test_a_file_changed_while_the_rules_were_proven_is_not_written(
        self, store: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The proof read the file before the search: a change made while it ran (a deny rule removed, a
        cwd moved) refuses the write, exit 2, the changed file kept."""
        from ask_permissions.evidence._suggest import suggest as search

        url, policy = store
        changed = policy.read_text(encoding="utf-8").replace('deny = ["Bash(rm -rf *)"]', "deny = []")

        def edited_meanwhile(*arguments: Any, **options: Any) -> Any:
            policy.write_text(changed, encoding="utf-8")
            return search(*arguments, **options)

        monkeypatch.setattr("ask_permissions.cli._suggest.suggest", edited_meanwhile)
        assert main(["suggest", "--store", url, "--write", str(policy)]) == 2
        assert "changed while suggest ran; nothing written" in capsys.readouterr().err
        assert policy.read_text(encoding="utf-8") == changed

    def test_an_allow_that_is_no_list_is_refused(
        self, store: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A settings file whose allow is a string is refused as it is, not split into one rule a letter."""
        url, _ = store
        managed = tmp_path / "managed.json"
        text = json.dumps({"permissions": {"allow": "ls"}})
        managed.write_text(text, encoding="utf-8")
        assert main(["suggest", "--store", url, "--write", str(managed)]) == 2
        assert "permissions.allow: expected a list of rules; got 'ls'" in capsys.readouterr().err
        assert managed.read_text(encoding="utf-8") == text

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
        local.write_text(json.dumps({"$schema": "x"}), encoding="utf-8")
        assert main(["suggest", "--store", url, "--write", str(local)]) == 0
        data = json.loads(local.read_text(encoding="utf-8"))
        assert data["$schema"] == "x"
        assert "Bash(git diff *)" in data["permissions"]["allow"]
        assert not any(rule.startswith("WebFetch") for rule in data["permissions"]["allow"])
        assert '+      "Bash(git diff *)",' in capsys.readouterr().out
