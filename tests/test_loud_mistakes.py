"""What a new user gets wrong never passes silently (issue 23): each mistake, in a real file, with its error.

The corpus of broken policy and settings files lives in ``tests/broken_files.py``; every file there must
fail loudly, naming the file (and the field's line where the format has lines) and the field, or be decided
without a proceed. The adapters' side is in ``tests/integrations/test_wiring.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

import pytest

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    InvalidSnapshotError,
    LayeredPolicy,
    PermissionRules,
    PermissionSettings,
    ToolCall,
    UnknownToolError,
    load_policy,
    require_known_tools,
    unknown_tools,
)
from ask_permissions.cli._lint import lint_policy
from ask_permissions.cli._main import EXIT_BAD_INPUT, main

from .broken_files import BROKEN_POLICIES, BROKEN_SETTINGS, DECIDED, Broken
from .docs_pages import ROOT

_ERRORS: dict[str, type[BaseException]] = {
    "InvalidSnapshotError": InvalidSnapshotError,
    "UnknownToolError": UnknownToolError,
    "IsADirectoryError": IsADirectoryError,
}


def _write(path: Path, case: Broken) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if case.content is None:
        path.mkdir()
    else:
        path.write_text(case.content, encoding="utf-8")
    return path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def _expected_stderr(case: Broken, path: Path) -> str:
    if case.error == "IsADirectoryError":
        return f"ask-permissions: error: cannot read {path}: Is a directory\n"
    return f"ask-permissions: error: {case.message.format(file=path)}\n"


class TestBrokenPolicyFiles:
    """Every broken policy file fails to load with its exact error, and the command says so in one line."""

    def test_the_corpus_is_large(self) -> None:
        """At least thirty broken files, policy and settings together, as new users write them."""
        assert len(BROKEN_POLICIES) + len(BROKEN_SETTINGS) >= 30

    @pytest.mark.parametrize("case", list(BROKEN_POLICIES.values()), ids=list(BROKEN_POLICIES))
    def test_loading_fails_with_the_exact_error(self, tmp_path: Path, case: Broken) -> None:
        """load_policy raises the case's error type with the file, line and field in its message."""
        path = _write(tmp_path / case.name, case)
        with pytest.raises(_ERRORS[case.error]) as raised:
            load_policy(path)
        assert type(raised.value) is _ERRORS[case.error]
        assert str(raised.value) == case.message.format(file=path)

    @pytest.mark.parametrize("case", list(BROKEN_POLICIES.values()), ids=list(BROKEN_POLICIES))
    def test_check_refuses_it_in_one_line(self, tmp_path: Path, case: Broken) -> None:
        """ask-permissions check exits 2 with the same error on one line of standard error, and no output."""
        path = _write(tmp_path / case.name, case)
        assert _run("check", str(path), "run_shell", '{"command": "ls"}') == (
            EXIT_BAD_INPUT,
            "",
            _expected_stderr(case, path),
        )

    @pytest.mark.parametrize(
        "case",
        [case for case in BROKEN_POLICIES.values() if case.error != "UnknownToolError"],
        ids=[key for key, case in BROKEN_POLICIES.items() if case.error != "UnknownToolError"],
    )
    def test_lint_refuses_it_in_one_line(self, tmp_path: Path, case: Broken) -> None:
        """ask-permissions lint exits 2 with the same error (unknown tool names are findings for lint)."""
        path = _write(tmp_path / case.name, case)
        assert _run("lint", str(path)) == (EXIT_BAD_INPUT, "", _expected_stderr(case, path))

    @pytest.mark.parametrize(
        "case",
        [case for case in BROKEN_POLICIES.values() if case.error == "UnknownToolError"],
        ids=[key for key, case in BROKEN_POLICIES.items() if case.error == "UnknownToolError"],
    )
    def test_lint_reports_unknown_tool_names(self, tmp_path: Path, case: Broken) -> None:
        """lint reads the file with unknown names kept and reports each, with the nearest name (status 1);
        a rule of a misspelt tool that cannot be read without its kind is refused as loading refuses it."""
        path = _write(tmp_path / case.name, case)
        status, out, err = _run("lint", str(path))
        if status == EXIT_BAD_INPUT:
            assert (out, err) == ("", _expected_stderr(case, path))
            assert "(" in case.content.split("permissions]")[-1]  # type: ignore[union-attr]  # a specifier
            return
        assert (status, err) == (1, "")
        (line,) = out.splitlines()
        field = case.message.format(file=path).split(": ", 2)[1].split(" (")[0]
        assert line.startswith(f"{field} (")
        assert "which is not in the policy's tools table; did you mean" in line


class TestBrokenSettingsFiles:
    """Every broken settings file stops the layered policy from loading, whichever source it is."""

    @pytest.mark.parametrize("case", list(BROKEN_SETTINGS.values()), ids=list(BROKEN_SETTINGS))
    @pytest.mark.parametrize("source", ["project", "local", "user", "managed"])
    def test_the_policy_does_not_load(self, tmp_path: Path, case: Broken, source: str) -> None:
        """As the project's, the local, the user's or the managed file: the same error, naming that file."""
        project, user = tmp_path / "app", tmp_path / "user"
        (project / ".agent").mkdir(parents=True)
        user.mkdir()
        places = {
            "project": project / ".agent" / "settings.json",
            "local": project / ".agent" / "settings.local.json",
            "user": user / "settings.json",
            "managed": tmp_path / "etc" / "managed-settings.json",
        }
        path = _write(places[source], case)
        managed = places["managed"] if source == "managed" else None

        def load() -> LayeredPolicy:
            settings = PermissionSettings.load(project_dir=project, user_dir=user, managed_path=managed)
            return LayeredPolicy(queue=ApprovalQueue(), settings=settings)

        with pytest.raises(_ERRORS[case.error]) as raised:
            load()
        assert type(raised.value) is _ERRORS[case.error]
        assert str(raised.value) == case.message.format(file=path)

    @pytest.mark.parametrize("case", list(BROKEN_SETTINGS.values()), ids=list(BROKEN_SETTINGS))
    @pytest.mark.parametrize("command", ["check", "lint"])
    def test_the_command_refuses_the_project(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: Broken, command: str
    ) -> None:
        """check and lint of the project directory exit 2 with the error on one line."""
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        project = tmp_path / "app"
        path = _write(project / ".agent" / "settings.json", case)
        argv = [command, str(project), *(["Bash", '{"command": "ls"}'] if command == "check" else [])]
        assert _run(*argv) == (EXIT_BAD_INPUT, "", _expected_stderr(case, path))


class TestDecidedWithoutAProceed:
    """The files that used to let a call through now decide it without a proceed."""

    @pytest.mark.parametrize("case", list(DECIDED.values()), ids=list(DECIDED))
    def test_the_call_does_not_proceed(self, tmp_path: Path, case: object) -> None:
        """The file loads; the call is asked about or blocked, by the layer named."""
        path = tmp_path / case.name  # type: ignore[attr-defined]
        path.write_text(case.content, encoding="utf-8")  # type: ignore[attr-defined]
        record = load_policy(path).evaluate(ToolCall(case.tool, case.arguments))  # type: ignore[attr-defined]
        assert (record.outcome, record.layer) == (case.outcome, case.layer)  # type: ignore[attr-defined]


class TestUnreadableSettingsFiles:
    """A settings file that cannot be read stops the loading: its deny rules never vanish quietly."""

    def test_a_missing_managed_file(self, tmp_path: Path) -> None:
        """A managed file named explicitly must exist."""
        missing = tmp_path / "etc" / "managed-settings.json"
        with pytest.raises(FileNotFoundError) as raised:
            PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user", managed_path=missing)
        assert str(raised.value) == f"[Errno 2] a settings file named explicitly must exist: '{missing}'"

    def test_a_missing_cli_file(self, tmp_path: Path) -> None:
        """So must a cli file."""
        missing = tmp_path / "cli.json"
        with pytest.raises(FileNotFoundError, match="a settings file named explicitly must exist"):
            PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user", cli=missing)

    def test_a_link_to_nothing(self, tmp_path: Path) -> None:
        """A settings file that is a link whose target is gone is an error, not an empty source."""
        agent = tmp_path / ".agent"
        agent.mkdir()
        (agent / "settings.json").symlink_to(tmp_path / "gone.json")
        with pytest.raises(FileNotFoundError) as raised:
            PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user")
        assert str(raised.value) == (
            f"[Errno 2] a link to a file that does not exist: '{agent / 'settings.json'}'"
        )

    def test_a_file_nobody_may_read(self, tmp_path: Path) -> None:
        """A file without read permission stops the loading (root reads anything: then it just loads)."""
        agent = tmp_path / ".agent"
        agent.mkdir()
        path = agent / "settings.json"
        path.write_text(json.dumps({"permissions": {"deny": ["Bash(rm *)"]}}), encoding="utf-8")
        path.chmod(0)
        try:
            if os.access(path, os.R_OK):  # running as root
                settings = PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user")
                assert settings.source("project").deny == ("Bash(rm *)",)
            else:
                with pytest.raises(PermissionError):
                    PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user")
        finally:
            path.chmod(0o600)

    def test_missing_ordinary_files_are_still_empty_sources(self, tmp_path: Path) -> None:
        """The project, local and user files may be absent, as before."""
        settings = PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user")
        assert all(source.is_empty for source in settings.sources)


class TestTheIssuesExamples:
    """The cases of issue 23 as they were reported."""

    def test_a_misspelt_deny_beside_the_declared_tool(self, tmp_path: Path) -> None:
        """deny = ["run_shel(rm *)"] beside [tools.run_shell]: an error with the nearest name, not a rule
        that lets the tool run rm."""
        case = BROKEN_POLICIES["tool-name-typo-in-a-rule"]
        path = _write(tmp_path / "policy.toml", case)
        with pytest.raises(UnknownToolError, match="did you mean 'run_shell'") as raised:
            load_policy(path)
        assert raised.value.path == "permissions.deny[0]"
        assert raised.value.value == "run_shel"
        assert raised.value.known == ("run_shell", "read_file")
        (finding,) = raised.value.unknown
        assert finding.suggestion == "run_shell"  # type: ignore[attr-defined]

    def test_the_reference_pages_example_is_what_loading_says(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The policy-file reference shows a misspelt deny and its error: loading that file says just that."""
        page = (ROOT / "docs" / "reference" / "policy-file.md").read_text(encoding="utf-8")
        shown = re.search(r"```toml\n(?P<file>.*?)```\n\n```text\n(?P<error>.*?)\n```", page, re.S)
        assert shown is not None
        monkeypatch.chdir(tmp_path)
        Path("policy.toml").write_text(shown["file"], encoding="utf-8")
        with pytest.raises(UnknownToolError) as raised:
            load_policy("policy.toml")
        assert str(raised.value) == shown["error"]

    def test_a_file_with_only_an_allow_rule_asks(self, tmp_path: Path) -> None:
        """allow = ["Bash(git status:*)"] alone: git status; rm -rf ~ waits for a person (layer default)."""
        case = DECIDED["only-an-allow-rule"]
        path = tmp_path / "policy.toml"
        path.write_text(case.content, encoding="utf-8")
        policy = load_policy(path)
        assert policy.default == "ask"
        assert policy.evaluate(ToolCall("Bash", {"command": "git status"})).outcome == "proceed"
        result = policy.before_tool_call(ToolCall("Bash", {"command": "git status; rm -rf ~"}, "c1"))
        assert result == {"action": "pending", "action_id": 1, "reason": "Tool 'Bash' requires approval"}

    def test_the_gems_default_is_kept_in_python(self) -> None:
        """ApprovalPolicy built in Python still proceeds on what nothing decides, as the gem does."""
        policy = ApprovalPolicy(queue=ApprovalQueue())
        assert policy.default == "proceed"
        assert policy.evaluate(ToolCall("bash", {"command": "ls"})).outcome == "proceed"
        asking = ApprovalPolicy(queue=ApprovalQueue(), default="ask")
        assert (asking.evaluate(ToolCall("bash")).outcome, asking.evaluate(ToolCall("bash")).layer) == (
            "pending",
            "default",
        )

    def test_an_unknown_default_is_refused(self) -> None:
        """default takes "ask" or "proceed" only."""
        with pytest.raises(ValueError, match=r"^default: expected 'ask' or 'proceed'; got 'allow'$"):
            ApprovalPolicy(queue=ApprovalQueue(), default="allow")  # type: ignore[arg-type]

    def test_a_registry_in_python_refuses_a_misspelt_rule(self) -> None:
        """The tools= registry lists the tools: a rule for another is an UnknownToolError, unless kept."""
        rules = PermissionRules.from_text(deny=["run_shel"])
        with pytest.raises(UnknownToolError) as raised:
            ApprovalPolicy(queue=ApprovalQueue(), rules=rules, tools={"run_shell": {}})
        assert str(raised.value) == (
            "ApprovalPolicy(tools=...): permissions.deny[0] ('run_shel'): names the tool 'run_shel', which "
            "is not known; did you mean 'run_shell'? The known tools: 'run_shell'; pass "
            'unknown_tools="keep" to keep rules for tools that come later.'
        )
        kept = ApprovalPolicy(
            queue=ApprovalQueue(), rules=rules, tools={"run_shell": {}}, unknown_tools="keep"
        )
        assert kept.unknown_tools == "keep"

    def test_deny_and_ask_rules_meet_folded_names(self) -> None:
        """A deny for "Bash" beside a tool "bash" meets it (deny rules fold names): it is known."""
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), rules=PermissionRules.from_text(deny=["Bash"]), unknown_tools="keep"
        )
        assert unknown_tools(policy.tool_references(), ["bash"]) == []
        require_known_tools(policy, ["bash"], where="test")
        allowing = ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules.from_text(allow=["Bash"]))
        (found,) = unknown_tools(allowing.tool_references(), ["bash"])
        assert found.suggestion == "bash"

    def test_the_block_keeps_the_gems_text_and_the_record_names_the_rule(self, tmp_path: Path) -> None:
        """ApprovalPolicy's deny tells the model the gem's fixed text; its record carries the rule."""
        path = tmp_path / "policy.toml"
        path.write_text(DECIDED["a-deny-of-the-whole-tool-beside-a-typo"].content, encoding="utf-8")
        records: list[object] = []
        policy = load_policy(path, on_decision=records.append)
        result = policy.before_tool_call(ToolCall("run_shell", {"command": "rm -rf build"}, "c1"))
        assert result == {"action": "block", "reason": "Denied by permission rules: 'run_shell'"}
        (record,) = records
        assert record.rule is not None  # type: ignore[attr-defined]
        assert (record.rule.text, record.rule.index, record.layer) == (  # type: ignore[attr-defined]
            "run_shell(rm *)",
            0,
            "deny_rule",
        )

    def test_lint_reports_a_proceed_default_beside_a_shell_tool(self, tmp_path: Path) -> None:
        """default = "proceed" next to a shell tool is a lint finding; the ask default is not."""
        path = tmp_path / "policy.toml"
        path.write_text('version = 1\ndefault = "proceed"\n\n[tools.run_shell]\npermission_kind = "shell"\n')
        findings = [str(finding) for finding in lint_policy(load_policy(path))]
        assert findings == [
            'default "proceed": every call no rule decides runs, and the policy has shell or path tools '
            "('run_shell'): a command or a file no rule foresaw runs unasked; leave default out (it is "
            '"ask") or set it to "ask"'
        ]
        assert (
            lint_policy(load_policy({"version": 1, "tools": {"run_shell": {"permission_kind": "shell"}}}))
            == []
        )
        built_in = load_policy({"version": 1, "default": "proceed", "permissions": {"allow": ["read_file"]}})
        assert [finding.subject for finding in lint_policy(built_in)] == ['default "proceed"']
        harmless = load_policy({"version": 1, "default": "proceed", "tools": {"search": {}}})
        assert lint_policy(harmless) == []
