"""LayeredPolicy: seed 002's pipeline over settings sources, modes, safety checks and a tool's own check."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ask_permissions import (
    ApprovalQueue,
    DecisionRecord,
    InvalidSnapshotError,
    LayeredPolicy,
    ModeChange,
    PermissionCheck,
    PermissionSettings,
    ToolCall,
    check,
)
from ask_permissions.policy._layered import LAYERED_LAYERS
from ask_permissions.typing import LayeredLayer, LayeredMode

PROJECT = "/work/project"


class CheckedTool:
    """A tool with its own check: it answers what the call's arguments ask it to."""

    read_only = False

    def check_permissions(self, arguments: Any, context: object) -> PermissionCheck | None:
        answer = arguments.get("check") if isinstance(arguments, dict) else None
        if answer == "deny":
            return PermissionCheck.deny("the tool refuses")
        if answer == "safety":
            return PermissionCheck.ask("the tool's safety check asks", safety=True)
        if answer == "ask":
            return PermissionCheck.ask("the tool asks")
        if answer == "allow":
            return PermissionCheck.allow()
        if answer == "modify":
            return PermissionCheck.modify({"check": None, "safe": True})
        return None


class ReadTool:
    read_only = True


class DestructiveTool:
    """A file tool that declares its writes irreversible (seed 002's isDestructive)."""

    destructive = True


TOOLS = {"Read": ReadTool(), "checked": CheckedTool(), "Grep": ReadTool(), "Shred": DestructiveTool()}
KINDS = {"checked": "path", "Shred": "path"}


def _settings(sources: dict[str, dict[str, list[str]]], **scalars: Any) -> PermissionSettings:
    """Settings made in memory: each source's allow/ask/deny lists, anchored at the project."""
    from ask_permissions import SettingsSource

    made = [
        SettingsSource(name, PROJECT, None, **{key: tuple(value) for key, value in rules.items()})  # type: ignore[arg-type]
        for name, rules in sources.items()
    ]
    if scalars:
        made.append(SettingsSource("managed", PROJECT, None, **scalars))
    return PermissionSettings(made, project_dir=PROJECT)


def _policy(
    sources: dict[str, dict[str, list[str]]] | None = None, *, mode: LayeredMode | None = None, **kwargs: Any
) -> tuple[LayeredPolicy, list[DecisionRecord]]:
    records: list[DecisionRecord] = []
    policy = LayeredPolicy(
        queue=kwargs.pop("queue", ApprovalQueue()),
        settings=kwargs.pop("settings", None) or _settings(sources or {}),
        mode=mode,
        tools=TOOLS,
        kinds=KINDS,
        on_decision=records.append,
        **kwargs,
    )
    return policy, records


def bash(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command}, f"tc-{command}")


def edit(path: str) -> ToolCall:
    return ToolCall("Edit", {"file_path": path}, f"tc-{path}")


@dataclass(frozen=True)
class Case:
    """One row of the precedence table: sources' rules, a mode, a call, and what decides it."""

    id: str
    call: ToolCall
    expected: tuple[str, str]  # outcome, layer
    sources: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    mode: LayeredMode | None = None
    source: str | None = None


CASES = [
    # deny against everything after it
    Case(
        "deny-beats-ask",
        bash("rm -rf x"),
        ("block", "deny_rule"),
        {"user": {"ask": ["Bash(rm *)"]}, "session": {"deny": ["Bash(rm *)"]}},
        source="session",
    ),
    Case(
        "deny-in-lowest-source-beats-managed-allow",
        bash("rm x"),
        ("block", "deny_rule"),
        {"managed": {"allow": ["Bash"]}, "session": {"deny": ["Bash(rm *)"]}},
        source="session",
    ),
    Case(
        "deny-beats-tool-allow",
        ToolCall("checked", {"check": "allow", "path": "a"}),
        ("block", "deny_rule"),
        {"project": {"deny": ["checked"]}},
    ),
    Case(
        "deny-beats-bypass",
        bash("rm x"),
        ("block", "deny_rule"),
        {"local": {"deny": ["Bash(rm *)"]}},
        mode="bypassPermissions",
    ),
    Case(
        "deny-beats-plan-read-only",
        ToolCall("Read", {"file_path": "/work/project/.env"}),
        ("block", "deny_rule"),
        {"project": {"deny": ["Read(./.env)"]}},
        mode="plan",
    ),
    Case(
        "deny-of-a-compound-part",
        bash("git status; rm -rf ~"),
        ("block", "deny_rule"),
        {"project": {"allow": ["Bash(git status)"], "deny": ["Bash(rm *)"]}},
    ),
    # ask rules
    Case(
        "ask-beats-allow",
        bash("git push"),
        ("pending", "ask_rule"),
        {"managed": {"allow": ["Bash(git *)"]}, "local": {"ask": ["Bash(git push)"]}},
        source="local",
    ),
    Case(
        "ask-beats-tool-allow",
        ToolCall("checked", {"check": "allow", "path": "a"}),
        ("pending", "ask_rule"),
        {"project": {"ask": ["checked"]}},
    ),
    Case(
        "ask-beats-bypass",
        bash("git push"),
        ("pending", "ask_rule"),
        {"project": {"ask": ["Bash(git push)"]}},
        mode="bypassPermissions",
    ),
    Case(
        "ask-beats-accept-edits",
        edit("/work/project/src/a.py"),
        ("pending", "ask_rule"),
        {"project": {"ask": ["Edit(./src/**)"]}},
        mode="acceptEdits",
    ),
    # the tool's own check
    Case(
        "tool-deny-beats-allow-rule",
        ToolCall("checked", {"check": "deny", "path": "a"}),
        ("block", "tool_check"),
        {"project": {"allow": ["checked"]}},
    ),
    Case(
        "tool-deny-beats-bypass",
        ToolCall("checked", {"check": "deny", "path": "a"}),
        ("block", "tool_check"),
        mode="bypassPermissions",
    ),
    Case(
        "tool-safety-ask-beats-allow",
        ToolCall("checked", {"check": "safety", "path": "a"}),
        ("pending", "tool_check"),
        {"project": {"allow": ["checked"]}},
    ),
    Case(
        "tool-safety-ask-beats-bypass",
        ToolCall("checked", {"check": "safety", "path": "a"}),
        ("pending", "tool_check"),
        mode="bypassPermissions",
    ),
    Case(
        "tool-plain-ask-lifted-by-allow",
        ToolCall("checked", {"check": "ask", "path": "a"}),
        ("proceed", "allow_rule"),
        {"project": {"allow": ["checked"]}},
    ),
    Case(
        "tool-plain-ask-lifted-by-bypass",
        ToolCall("checked", {"check": "ask", "path": "a"}),
        ("proceed", "mode"),
        mode="bypassPermissions",
    ),
    Case(
        "tool-plain-ask-else-default",
        ToolCall("checked", {"check": "ask", "path": "a"}),
        ("pending", "default"),
    ),
    Case(
        "tool-allow-proceeds", ToolCall("checked", {"check": "allow", "path": "a"}), ("proceed", "tool_check")
    ),
    Case(
        "tool-allow-still-meets-safety",
        ToolCall("checked", {"check": "allow", "path": ".git/config"}),
        ("pending", "safety_check"),
    ),
    Case(
        "tool-allow-still-meets-plan",
        ToolCall("checked", {"check": "allow", "path": "a"}),
        ("block", "mode"),
        mode="plan",
    ),
    # safety checks
    Case(
        "safety-beats-allow-rule",
        edit("/work/project/.git/hooks/pre-commit"),
        ("pending", "safety_check"),
        {"project": {"allow": ["Edit"]}},
    ),
    Case(
        "safety-beats-bypass",
        bash("echo x >> ~/.bashrc"),
        ("pending", "safety_check"),
        mode="bypassPermissions",
    ),
    Case(
        "safety-beats-accept-edits",
        edit("/work/project/.vscode/tasks.json"),
        ("pending", "safety_check"),
        mode="acceptEdits",
    ),
    Case(
        "safety-rm-home-beats-allow",
        bash("rm -rf ~"),
        ("pending", "safety_check"),
        {"user": {"allow": ["Bash"]}},
    ),
    Case(
        "safety-of-guardrails",
        edit("/work/project/.agent/settings.local.json"),
        ("pending", "safety_check"),
        {"local": {"allow": ["Edit(./**)"]}},
        mode="bypassPermissions",
    ),
    # modes
    Case(
        "plan-blocks-writes-even-allowed",
        edit("/work/project/src/a.py"),
        ("block", "mode"),
        {"project": {"allow": ["Edit"]}},
        mode="plan",
    ),
    Case("plan-allows-read-only", ToolCall("Grep", {"pattern": "x"}), ("proceed", "mode"), mode="plan"),
    Case("plan-allows-its-exit-tool", ToolCall("exit_plan_mode", {}), ("proceed", "mode"), mode="plan"),
    Case("bypass-allows-the-rest", ToolCall("deploy", {}), ("proceed", "mode"), mode="bypassPermissions"),
    Case("accept-edits-inside", edit("/work/project/src/a.py"), ("proceed", "mode"), mode="acceptEdits"),
    Case("accept-edits-not-outside", edit("/etc/hosts"), ("pending", "default"), mode="acceptEdits"),
    Case(
        "accept-edits-not-destructive",
        ToolCall("Shred", {"file_path": "/work/project/old.log"}),
        ("pending", "default"),
        mode="acceptEdits",
    ),
    Case(
        "accept-edits-mkdir-inside",
        bash("mkdir -p build/out && touch build/out/x"),
        ("proceed", "mode"),
        mode="acceptEdits",
    ),
    Case("accept-edits-not-mkdir-outside", bash("mkdir /opt/x"), ("pending", "default"), mode="acceptEdits"),
    Case(
        "accept-edits-not-a-target-option",
        bash("cp payload --target-directory=/etc"),
        ("pending", "default"),
        mode="acceptEdits",
    ),
    Case(
        "accept-edits-not-an-attached-target",
        bash("mv payload -t/root/notes"),
        ("pending", "default"),
        mode="acceptEdits",
    ),
    Case(
        "accept-edits-not-a-tilde-plus-path",
        bash("cp key.pub ~+/../notes/key.pub"),
        ("pending", "default"),
        mode="acceptEdits",
    ),
    Case(
        "accept-edits-not-an-expanded-path",
        bash("cp key.pub $DEST"),
        ("pending", "default"),
        mode="acceptEdits",
    ),
    Case(
        "accept-edits-not-a-quoted-protected-path",
        bash("cp x .g''it/hooks/pre-commit"),
        ("pending", "safety_check"),
        mode="acceptEdits",
    ),
    Case(
        "bypass-not-a-second-command-key",
        ToolCall("Bash", {"command": "rm -rf ~", "cmd": "true"}),
        ("pending", "safety_check"),
        mode="bypassPermissions",
    ),
    Case(
        "bypass-not-a-null-second-key",
        ToolCall("Bash", {"command": "rm -rf ~", "cmd": None}),
        ("pending", "safety_check"),
        mode="bypassPermissions",
    ),
    Case(
        "bypass-not-an-argument-vector",
        ToolCall("Bash", {"command": ["rm", "-rf", "/"]}),
        ("pending", "safety_check"),
        mode="bypassPermissions",
    ),
    Case(
        "bypass-not-a-null-second-path",
        ToolCall("Edit", {"file_path": "/work/project/.git/hooks/pre-commit", "path": None}),
        ("pending", "safety_check"),
        mode="bypassPermissions",
    ),
    Case(
        "bypass-not-an-upper-case-protected-path",
        ToolCall("Edit", {"file_path": "/work/project/.GIT/hooks/pre-commit"}),
        ("pending", "safety_check"),
        mode="bypassPermissions",
    ),
    Case("accept-edits-not-other-commands", bash("make"), ("pending", "default"), mode="acceptEdits"),
    Case(
        "accept-edits-not-reads-as-edits",
        ToolCall("Read", {"file_path": "/etc/passwd"}),
        ("pending", "default"),
        mode="acceptEdits",
    ),
    Case("default-mode-asks", ToolCall("deploy", {}), ("pending", "default"), mode="default"),
    # allow rules and the default
    Case(
        "allow-rule-proceeds",
        bash("git status"),
        ("proceed", "allow_rule"),
        {"user": {"allow": ["Bash(git status)"]}},
        source="user",
    ),
    Case(
        "compound-of-allowed-parts-across-sources",
        bash("git status && npm test"),
        ("proceed", "allow_rule"),
        {"user": {"allow": ["Bash(git status)"]}, "project": {"allow": ["Bash(npm test)"]}},
    ),
    Case(
        "compound-with-an-unknown-part-asks",
        bash("git status && npm publish"),
        ("pending", "default"),
        {"user": {"allow": ["Bash(git status)"]}},
    ),
    Case("nothing-matches-asks", ToolCall("deploy", {}), ("pending", "default")),
    Case(
        "path-rule-anchored-at-the-project",
        edit("/work/project/src/a.py"),
        ("proceed", "allow_rule"),
        {"project": {"allow": ["Edit(/src/**)"]}},
    ),
    Case(
        "path-rule-does-not-reach-outside",
        edit("/work/other/src/a.py"),
        ("pending", "default"),
        {"project": {"allow": ["Edit(/src/**)"]}},
    ),
    # dontAsk
    Case("dont-ask-blocks-the-default", ToolCall("deploy", {}), ("block", "default"), mode="dontAsk"),
    Case(
        "dont-ask-blocks-ask-rules",
        bash("git push"),
        ("block", "ask_rule"),
        {"project": {"ask": ["Bash(git *)"]}},
        mode="dontAsk",
    ),
    Case("dont-ask-blocks-safety", bash("rm -rf /"), ("block", "safety_check"), mode="dontAsk"),
    Case(
        "dont-ask-keeps-allows",
        bash("git status"),
        ("proceed", "allow_rule"),
        {"project": {"allow": ["Bash(git status)"]}},
        mode="dontAsk",
    ),
    Case("auto-without-a-reviewer-asks", ToolCall("deploy", {}), ("pending", "default"), mode="auto"),
]


class TestPrecedence:
    """Every pair of layers, every mode, rules from each source."""

    @pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
    def test_case(self, case: Case) -> None:
        """The row's call is decided by the row's layer, with the row's outcome (and source)."""
        policy, _ = _policy(case.sources, mode=case.mode)
        record = policy.evaluate(case.call)
        assert (record.outcome, record.layer) == case.expected
        if case.source is not None:
            assert record.source == case.source
        assert policy.before_tool_call(case.call)["action"] == case.expected[0]

    def test_the_table_reads_as_seed_002(self) -> None:
        """The layers are seed 002's, in its order (with the sandbox just before the default), and are
        exactly the records' layer names."""
        from typing import get_args

        assert get_args(LayeredLayer) == LAYERED_LAYERS
        assert LAYERED_LAYERS == (
            "hook",
            "read_limit",
            "deny_rule",
            "ask_rule",
            "tool_check",
            "check",
            "safety_check",
            "mode",
            "allow_rule",
            "sandbox",
            "default",
        )

    def test_records_name_the_rule_text_and_source(self) -> None:
        """A rule's record carries its text and its settings source."""
        policy, records = _policy({"project": {"allow": ["Bash(git status)"]}})
        policy.before_tool_call(bash("git status"))
        (record,) = records
        assert record.rule is not None
        assert (record.rule.text, record.source) == ("Bash(git status)", "project")
        assert record.to_dict()["rule"]["text"] == "Bash(git status)"

    def test_a_compound_allow_names_each_rule(self) -> None:
        """A compound command allowed part by part names the rule of each part."""
        policy, _ = _policy(
            {"user": {"allow": ["Bash(git status)"]}, "project": {"allow": ["Bash(npm test)"]}}
        )
        record = policy.evaluate(bash("git status && npm test"))
        assert record.rule is not None
        assert record.rule.text == "Bash(git status) + Bash(npm test)"


class TestModes:
    """The mode changes at run time, is recorded, and bypass can be locked."""

    def test_changing_the_mode_is_recorded(self) -> None:
        """Each change lands in the history and reaches on_mode_change."""
        seen: list[ModeChange] = []
        policy, _ = _policy(on_mode_change=seen.append)
        policy.mode = "plan"
        policy.mode = "plan"
        policy.mode = "acceptEdits"
        assert [(change.old, change.new) for change in policy.mode_history] == [
            ("default", "plan"),
            ("plan", "acceptEdits"),
        ]
        assert seen == policy.mode_history
        assert policy.evaluate(edit("/work/project/a")).layer == "mode"

    def test_a_bypass_lock_refuses_bypass(self) -> None:
        """With disableBypassPermissionsMode, selecting bypass is a ValueError naming the source."""
        locked = _settings({}, disable_bypass=True)
        with pytest.raises(ValueError, match="disabled by the managed settings"):
            LayeredPolicy(queue=ApprovalQueue(), settings=locked, mode="bypassPermissions")
        policy = LayeredPolicy(queue=ApprovalQueue(), settings=locked)
        with pytest.raises(ValueError, match="bypassPermissions mode is disabled"):
            policy.mode = "bypassPermissions"
        assert policy.mode == "default"

    def test_the_default_mode_comes_from_the_settings(self) -> None:
        """defaultMode of the highest source is the starting mode."""
        policy = LayeredPolicy(queue=ApprovalQueue(), settings=_settings({}, default_mode="plan"))
        assert policy.mode == "plan"

    def test_unknown_modes(self) -> None:
        """An unknown mode is refused, at construction and at run time."""
        with pytest.raises(ValueError, match="Unknown permission mode: 'yolo'"):
            _policy(mode="yolo")  # type: ignore[arg-type]


class TestPersistedAnswers:
    """A person's "don't ask again" becomes a rule: for the session, or in the local settings file."""

    def test_session_scope_adds_a_session_rule(self) -> None:
        """approve(scope="session") adds an allow rule for that very call; a different call still asks."""
        policy, _ = _policy()
        result = policy.before_tool_call(bash("npm test"))
        assert result["action"] == "pending"
        policy.approve(result["action_id"], scope="session")
        assert policy.settings.source("session").allow == ("Bash(npm test)",)
        assert policy.evaluate(bash("npm test")).source == "session"
        assert policy.evaluate(bash("npm test --watch")).outcome == "pending"

    def test_project_scope_persists_and_a_fresh_load_reads_it(self, tmp_path: Path) -> None:
        """approve(scope="project") writes the rule to the local file; the next process starts with it."""
        settings = PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user")
        policy = LayeredPolicy(queue=ApprovalQueue(), settings=settings)
        target = str(tmp_path / "src" / "a.py")
        result = policy.before_tool_call(ToolCall("Edit", {"file_path": target}, "tc"))
        policy.approve(result["action_id"], scope="project")  # type: ignore[typeddict-item]
        written = json.loads((tmp_path / ".agent" / "settings.local.json").read_text())
        assert written == {"permissions": {"allow": [f"Edit(/{target})"]}}
        fresh = LayeredPolicy(
            queue=ApprovalQueue(),
            settings=PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "user"),
        )
        record = fresh.evaluate(ToolCall("Edit", {"file_path": target}))
        assert (record.outcome, record.layer, record.source) == ("proceed", "allow_rule", "local")

    def test_suggestions_are_never_broader_than_the_call(self) -> None:
        """A pending result offers the exact call, then its prefix or its directory."""
        policy, _ = _policy()
        assert policy.before_tool_call(bash("git diff HEAD~1"))["suggestions"] == [  # type: ignore[typeddict-item]
            "Bash(git diff HEAD~1)",
            "Bash(git diff *)",
        ]
        assert policy.before_tool_call(edit("/work/project/src/a.py"))["suggestions"] == [  # type: ignore[typeddict-item]
            "Edit(./src/a.py)",
            "Edit(./src/**)",
        ]
        assert policy.before_tool_call(ToolCall("deploy", {}, "d"))["suggestions"] == ["deploy"]  # type: ignore[typeddict-item]

    @pytest.mark.parametrize(
        ("call", "later"),
        [
            (bash("rm -f *"), bash("rm -f /etc/passwd /root/.ssh/id_rsa")),
            (bash("cat *"), bash("cat /etc/shadow")),
            (bash("ls ?"), bash("ls /")),
            (edit("/work/project/**"), edit("/work/project/src/app.py")),
            (edit("/work/project/*.py"), edit("/work/project/setup.py")),
            (
                ToolCall("WebFetch", {"url": "https://*.example.com/"}, "w"),
                ToolCall("WebFetch", {"url": "https://evil.example.com/"}, "w2"),
            ),
        ],
        ids=[
            "shell-star",
            "shell-star-read",
            "shell-question-mark",
            "path-double-star",
            "path-star",
            "host-star",
        ],
    )
    def test_a_session_answer_covers_only_its_call(self, call: ToolCall, later: ToolCall) -> None:
        """A call whose text holds a wildcard character: the session rule (if any) is not a wildcard, and
        none of the suggestions allows another call."""
        policy, _ = _policy()
        result = policy.before_tool_call(call)
        assert result["action"] == "pending"
        for text in result.get("suggestions", []):
            probe, _ = _policy({"project": {"allow": [text]}})
            assert probe.evaluate(later).outcome == "pending", text
        policy.approve(result["action_id"], scope="session")
        assert policy.evaluate(later).outcome == "pending"

    def test_settings_changes_reach_a_running_policy(self) -> None:
        """Rules added to a runtime source apply to the next call."""
        policy, _ = _policy()
        assert policy.evaluate(bash("make")).outcome == "pending"
        policy.settings.add_rules("command", allow=["Bash(make)"])
        assert policy.evaluate(bash("make")).source == "command"


class TestFiles:
    """Real settings files in a temporary directory, and their mistakes."""

    def test_a_malformed_rule_names_the_file_and_field(self, tmp_path: Path) -> None:
        """A rule text that cannot be read is an InvalidSnapshotError naming its file and position."""
        agent = tmp_path / ".agent"
        agent.mkdir()
        (agent / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(git status"]}}))
        settings = PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "u")
        with pytest.raises(
            InvalidSnapshotError, match=r"settings\.json: permissions\.allow\[0\]: a '\(' without"
        ):
            LayeredPolicy(queue=ApprovalQueue(), settings=settings)

    def test_hooks_in_a_settings_file_run(self, tmp_path: Path) -> None:
        """A settings file's PreToolUse hook decides: its exit 2 blocks with its message."""
        agent = tmp_path / ".agent"
        agent.mkdir()
        script = agent / "no-deploy.sh"
        script.write_text("#!/bin/sh\necho 'deploys go through CI' >&2\nexit 2\n")
        script.chmod(0o755)
        (agent / "settings.json").write_text(
            json.dumps(
                {
                    "hooks": {
                        "PreToolUse": [
                            {"matcher": "deploy", "hooks": [{"type": "command", "command": str(script)}]}
                        ]
                    }
                }
            )
        )
        policy = LayeredPolicy(
            queue=ApprovalQueue(),
            settings=PermissionSettings.load(project_dir=tmp_path, user_dir=tmp_path / "u"),
        )
        assert policy.before_tool_call(ToolCall("deploy", {})) == {
            "action": "block",
            "reason": "deploys go through CI",
        }
        assert policy.evaluate(ToolCall("status", {})).layer == "default"


class TestPathsOfOtherSources:
    """A call's relative path names a file under the policy's working directory, whichever source's rule
    meets it: a user-level deny of a project file is not dodged by naming the file relatively."""

    def _policy(self, mode: LayeredMode = "default") -> LayeredPolicy:
        from ask_permissions import SettingsSource

        sources = [
            SettingsSource("user", "/home/dev/.agent", None, deny=(f"Read(/{PROJECT}/deploy/prod.key)",)),
            SettingsSource("managed", "/etc/agent", None, deny=(f"Edit(/{PROJECT}/deploy/**)",)),
            SettingsSource("project", PROJECT, None, allow=("Read(./**)", "Edit(./**)")),
        ]
        return LayeredPolicy(
            queue=ApprovalQueue(),
            settings=PermissionSettings(sources, project_dir=PROJECT),
            mode=mode,
            cwd=PROJECT,
        )

    @pytest.mark.parametrize("path", ["deploy/prod.key", "./deploy/prod.key", "src/../deploy/prod.key"])
    def test_a_relative_path_meets_an_absolute_deny(self, path: str) -> None:
        """Blocked by the user's deny, as the absolute path is."""
        policy = self._policy()
        assert policy.before_tool_call(ToolCall("Read", {"file_path": path}))["action"] == "block"
        absolute = ToolCall("Read", {"file_path": f"{PROJECT}/deploy/prod.key"})
        assert policy.before_tool_call(absolute)["action"] == "block"

    def test_a_plain_string_argument_is_anchored_too(self) -> None:
        """A path tool called with the path as its whole argument meets the user's deny as well."""
        policy = self._policy()
        assert policy.before_tool_call(ToolCall("Read", "deploy/prod.key"))["action"] == "block"

    def test_bypass_does_not_lift_a_managed_deny_met_relatively(self) -> None:
        """The managed deny of deploy/** holds for a relative path in bypassPermissions."""
        policy = self._policy("bypassPermissions")
        assert policy.before_tool_call(ToolCall("Edit", {"file_path": "deploy/run.sh"}))["action"] == "block"

    def test_other_relative_paths_are_still_allowed(self) -> None:
        """The project's allow still reads relative paths at the project."""
        policy = self._policy()
        assert policy.before_tool_call(ToolCall("Read", {"file_path": "src/app.py"})) == {"action": "proceed"}


class TestAutoMode:
    """A reviewer answers asks; safety checks and ask rules still go to a person; a breaker stops it."""

    def test_the_reviewer_answers_the_default_ask(self) -> None:
        """Allowed and denied by the reviewer, with its reason; the record names it."""
        policy, records = _policy(mode="auto", reviewer=lambda request: request["tool"] != "deploy")
        assert policy.before_tool_call(ToolCall("status", {})) == {"action": "proceed"}
        assert policy.before_tool_call(ToolCall("deploy", {})) == {
            "action": "block",
            "reason": "The reviewer denied the call to 'deploy'",
        }
        assert [record.rule_id for record in records] == ["reviewer", "reviewer"]

    def test_safety_checks_and_ask_rules_go_to_a_person(self) -> None:
        """The reviewer never sees what must reach a person."""
        seen: list[object] = []

        def reviewer(request: object) -> bool:
            seen.append(request)
            return True

        policy, _ = _policy({"project": {"ask": ["Bash(git push)"]}}, mode="auto", reviewer=reviewer)
        assert policy.before_tool_call(bash("git push"))["action"] == "pending"
        assert policy.before_tool_call(bash("rm -rf ~"))["action"] == "pending"
        assert seen == []

    def test_the_breaker_hands_back_to_a_person(self) -> None:
        """After 3 denials in a row, asks go to a person until reset."""
        policy, _ = _policy(mode="auto", reviewer=lambda request: False)
        outcomes = [policy.before_tool_call(ToolCall("deploy", {}, f"tc{n}"))["action"] for n in range(5)]
        assert outcomes == ["block", "block", "block", "pending", "pending"]
        assert policy.denials.tripped
        policy.denials.reset()
        assert policy.before_tool_call(ToolCall("deploy", {}, "tc9"))["action"] == "block"

    def test_evaluate_counts_no_denials(self) -> None:
        """A dry run asks the reviewer what it would say, but its denials never trip the breaker."""
        policy, records = _policy(mode="auto", reviewer=lambda request: False)
        for n in range(5):
            record = policy.evaluate(ToolCall("deploy", {}, f"tc{n}"))
            assert (record.outcome, record.rule_id) == ("block", "reviewer")
        assert policy.denials.counts == (0, 0)
        assert not policy.denials.tripped
        assert records == []
        assert policy.before_tool_call(ToolCall("deploy", {}, "tc9"))["action"] == "block"

    def test_a_destructive_tool_goes_to_a_person(self) -> None:
        """The reviewer never answers a call of a tool that declares itself destructive."""
        seen: list[object] = []

        def reviewer(request: object) -> bool:
            seen.append(request)
            return True

        policy, _ = _policy(mode="auto", reviewer=reviewer)
        shred = ToolCall("Shred", {"file_path": f"{PROJECT}/old.log"}, "tc")
        assert policy.before_tool_call(shred)["action"] == "pending"
        assert seen == []
        assert policy.before_tool_call(edit(f"{PROJECT}/src/app.py"))["action"] == "proceed"

    def test_a_failing_reviewer_asks_a_person(self) -> None:
        """A reviewer that raises counts as "ask a person", not as a denial."""

        def broken(request: object) -> bool:
            raise TimeoutError("model timed out")

        policy, _ = _policy(mode="auto", reviewer=broken)
        assert policy.before_tool_call(ToolCall("deploy", {}, "tc"))["action"] == "pending"
        assert policy.denials.counts == (0, 0)


class TestHeadless:
    """Without a person: asks become blocks; hooks and checks answer first."""

    def test_unattended_blocks_what_would_ask(self) -> None:
        """interactive=False blocks an ask, keeping its layer, with the unresolved verdict."""
        policy, records = _policy(
            interactive=False,
            checks=[check(lambda call: PermissionCheck.allow() if call.name == "ok" else None)],
        )
        assert policy.before_tool_call(ToolCall("ok", {}))["action"] == "proceed"
        assert policy.before_tool_call(ToolCall("deploy", {}))["action"] == "block"
        assert records[-1].verdict == "ask_unresolved"
        assert policy.queue.pending_actions == []


RULE_POOL = [
    "Bash",
    "Bash(*)",
    "Bash(rm *)",
    "Bash(git *)",
    "Edit",
    "Edit(./**)",
    "Edit(./.git/**)",
    "Read",
]
SOURCES_POOL = ["managed", "user", "project", "local", "cli", "command", "session"]
MODES_POOL: list[LayeredMode] = ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
CALL_POOL = [
    bash("rm -rf build"),
    bash("git status"),
    bash("echo x > .git/hooks/pre-commit"),
    edit("/work/project/.git/config"),
    edit("/work/project/src/a.py"),
    ToolCall("checked", {"check": "allow", "path": "src/x"}),
    ToolCall("checked", {"check": "modify", "path": "src/x"}),
    ToolCall("Read", {"file_path": "/work/project/README.md"}),
]


@st.composite
def layered_sources(draw: st.DrawFn) -> dict[str, dict[str, list[str]]]:
    sources: dict[str, dict[str, list[str]]] = {}
    for name in draw(st.lists(st.sampled_from(SOURCES_POOL), unique=True, max_size=4)):
        sources[name] = {
            decision: draw(st.lists(st.sampled_from(RULE_POOL), max_size=3))
            for decision in ("allow", "ask", "deny")
        }
    return sources


class TestProperties:
    """What must hold for any settings, mode and call."""

    @given(sources=layered_sources(), mode=st.sampled_from(MODES_POOL), call=st.sampled_from(CALL_POOL))
    def test_evaluate_is_before_tool_call_without_side_effects(
        self, sources: dict[str, dict[str, list[str]]], mode: LayeredMode, call: ToolCall
    ) -> None:
        """The dry run decides what the real call does, and queues nothing."""
        policy, records = _policy(sources, mode=mode, reviewer=lambda request: True)
        dry = policy.evaluate(call)
        assert policy.queue.pending_actions == []
        assert records == []
        policy.before_tool_call(call)
        (real,) = records
        assert (dry.outcome, dry.layer, dry.reason, dry.source) == (
            real.outcome,
            real.layer,
            real.reason,
            real.source,
        )

    @given(
        sources=layered_sources(),
        deny_in=st.sampled_from(SOURCES_POOL),
        mode=st.sampled_from(MODES_POOL),
        tool_answer=st.sampled_from([None, "allow", "modify", "ask", "safety"]),
    )
    def test_a_deny_in_any_source_is_never_lifted(
        self,
        sources: dict[str, dict[str, list[str]]],
        deny_in: str,
        mode: LayeredMode,
        tool_answer: str | None,
    ) -> None:
        """No mode, tool check, check, hook or other source lifts a deny."""
        sources = {**sources, deny_in: {**sources.get(deny_in, {}), "deny": ["checked"]}}
        policy, _ = _policy(
            sources,
            mode=mode,
            checks=[check(lambda call: PermissionCheck.allow())],
            hooks=[lambda call: PermissionCheck.allow()],
            reviewer=lambda request: True,
        )
        assert (
            policy.before_tool_call(ToolCall("checked", {"check": tool_answer, "path": "x"}))["action"]
            == "block"
        )

    @given(sources=layered_sources(), mode=st.sampled_from(MODES_POOL))
    def test_a_safety_check_is_never_lifted_by_a_mode_or_an_allow(
        self, sources: dict[str, dict[str, list[str]]], mode: LayeredMode
    ) -> None:
        """A write into .git never proceeds, whatever the mode and allow rules (auto's reviewer included)."""
        policy, _ = _policy(sources, mode=mode, reviewer=lambda request: True)
        for call in (edit("/work/project/.git/config"), bash("echo x > .git/hooks/pre-commit")):
            assert policy.before_tool_call(call)["action"] != "proceed"

    @settings(suppress_health_check=[HealthCheck.too_slow], max_examples=25)
    @given(
        call=st.sampled_from(
            [bash("npm test"), bash("git diff HEAD~1 -- src"), ToolCall("deploy", {"env": "a"})]
        )
    )
    def test_a_persisted_project_answer_reads_back_the_same(self, call: ToolCall) -> None:
        """What a person allowed for the project is what a fresh load allows."""
        with tempfile.TemporaryDirectory() as directory:
            project = Path(directory)
            policy = LayeredPolicy(
                queue=ApprovalQueue(),
                settings=PermissionSettings.load(project_dir=project, user_dir=project / "u"),
            )
            result = policy.before_tool_call(call)
            assert result["action"] == "pending"
            policy.approve(result["action_id"], scope="project")
            fresh = LayeredPolicy(
                queue=ApprovalQueue(),
                settings=PermissionSettings.load(project_dir=project, user_dir=project / "u"),
            )
            assert fresh.evaluate(call).outcome == "proceed"
            assert fresh.evaluate(call).source == "local"
