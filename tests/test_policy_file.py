"""load_policy: the policy file format, strict validation with paths, round trips through JSON and TOML."""

from __future__ import annotations

import json
import re
import uuid
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import (
    ALL,
    ApprovalPolicy,
    ApprovalQueue,
    DecisionRecord,
    InvalidSnapshotError,
    PermissionRuleSet,
    SessionPermissionGrants,
    ToolCall,
    load_policy,
)
from ask_permissions.rules._patterns import encode_pattern

from .strategies import calls, permission_rules, tool_metadata, tool_names, tool_patterns

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "policy.toml"
# The example policy's tools, and names it does not declare.
EXAMPLE_NAMES = ("bash", "code", "read_file", "write_file", "fetch", "deploy", "db_query", "DB_admin", "x")


def rule(decision: str, tool: object, argument: object = None) -> dict[str, object]:
    """A rule in snapshot form: a plain string is an exact name or substring, a dict is a pattern."""

    def pattern(value: object) -> object:
        return {"type": "string", "value": value} if isinstance(value, str) else value

    data: dict[str, object] = {"decision": decision, "tool_pattern": pattern(tool)}
    if argument is not None:
        data["argument_pattern"] = pattern(argument)
    return data


def rules(*entries: dict[str, object]) -> dict[str, object]:
    """A PermissionRules snapshot."""
    return {"version": 1, "rules": list(entries)}


def decide(policy: ApprovalPolicy, name: str, arguments: object = None) -> tuple[str, str, str | None]:
    """A dry run's outcome, layer and reason."""
    record = policy.evaluate(ToolCall(name, arguments))
    return record.outcome, record.layer, record.reason


# -- a tiny TOML writer (the standard library reads TOML but cannot write it) ------------------------------


def toml_value(value: object) -> str:
    """A value as TOML: strings, booleans, integers, arrays and inline tables (no null in TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        escaped = "".join(
            "\\" + char
            if char in '"\\'
            else f"\\u{ord(char):04x}"
            if ord(char) < 0x20 or ord(char) == 0x7F
            else char
            for char in value
        )
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = [f"{toml_value(key)} = {toml_value(item)}" for key, item in value.items() if item is not None]
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot write {value!r} as TOML")


def toml_document(data: dict[str, object]) -> str:
    """A TOML document of top-level keys, tables written inline."""
    return "".join(
        f"{toml_value(key)} = {toml_value(value)}\n" for key, value in data.items() if value is not None
    )


class TestFormat:
    """Each key of a policy file becomes the matching ApprovalPolicy setting."""

    def test_only_version_asks_for_everything(self) -> None:
        """A file with only a version asks a person about every call: its default is "ask" (changed on
        purpose: an unconfigured ApprovalPolicy built in Python still proceeds, as in the gem)."""
        policy = load_policy({"version": 1})
        assert policy.rules is None
        assert policy.mode is None
        assert policy.tools is None
        assert policy.default == "ask"
        asked = ("pending", "default", "Tool 'bash' requires approval")
        assert decide(policy, "bash", {"command": "rm -rf /"}) == asked

    def test_the_proceed_default_is_the_gems(self) -> None:
        """default = "proceed" opts into the gem's "unconfigured means allow"."""
        policy = load_policy({"version": 1, "default": "proceed"})
        assert policy.default == "proceed"
        assert decide(policy, "bash", {"command": "rm -rf /"}) == ("proceed", "default", None)

    def test_every_key(self) -> None:
        """mode, rules, require_approval, tools, auto_approve and session_grants all take effect."""
        policy = load_policy(
            {
                "version": 1,
                "mode": "ask_before_changes",
                "default": "proceed",
                "unknown_tools": "keep",
                "rules": rules(rule("deny", "bash", "rm -rf"), rule("allow", "deploy")),
                "require_approval": ["fetch", {"type": "regexp", "source": "^db_", "flags": "i"}],
                "tools": {
                    "fetch": {"auto_approvable": True, "side_effect_scope": "none"},
                    "read": {"side_effect_scope": "none"},
                    "DB_query": {"side_effect_scope": "none"},
                    "scan": {"risk_level": "critical", "side_effect_scope": "none"},
                    "ask_me": {"always_ask": True, "approval_required": False},
                },
                "auto_approve": {"fetch": True},
                "session_grants": {"version": 1, "granted_tools": ["write"]},
            }
        )
        assert policy.mode == "ask_before_changes"
        assert policy.queue.auto_approve == {"fetch": True}
        assert policy.session_grants is not None
        assert policy.session_grants.is_granted("write")
        assert decide(policy, "bash", {"command": "rm -rf /"})[:2] == ("block", "deny_rule")
        assert decide(policy, "deploy")[:2] == ("proceed", "allow_rule")
        assert decide(policy, "write")[:2] == ("proceed", "session_grant")
        assert decide(policy, "edit")[:2] == ("pending", "ask_before_changes")
        assert decide(policy, "read")[:2] == ("proceed", "default")
        assert decide(policy, "scan")[:2] == ("pending", "elevated_risk")
        assert decide(policy, "DB_query")[:2] == ("pending", "approval_required")
        assert decide(policy, "ask_me")[:2] == ("pending", "always_ask")
        assert policy.evaluate(ToolCall("fetch")).auto_approvable is True
        submitted = policy.before_tool_call(ToolCall("fetch", {}, "c1"))
        assert submitted["action"] == "pending"
        action = policy.queue[submitted["action_id"]]
        assert action is not None
        assert action.is_approved

    def test_require_approval_single_entries(self) -> None:
        """require_approval takes one entry as well as a list: a name, or {"type": "all"} for every tool."""
        assert load_policy({"version": 1, "require_approval": "bash"}).require_approval == "bash"
        everything = load_policy({"version": 1, "require_approval": {"type": "all"}})
        assert everything.require_approval is ALL
        assert decide(everything, "anything")[:2] == ("pending", "approval_required")

    def test_rule_set_snapshot(self) -> None:
        """A rules value with default_rules or project_rules is a PermissionRuleSet snapshot."""
        policy = load_policy(
            {
                "version": 1,
                "rules": {"version": 1, "project_rules": rules(rule("deny", "bash"))},
            }
        )
        assert isinstance(policy.rules, PermissionRuleSet)
        assert policy.rules.default_rules is None
        record = policy.evaluate(ToolCall("bash"))
        assert record.rule is not None
        assert record.rule.layer == "project"

    def test_null_is_left_out(self) -> None:
        """In JSON, null for an optional key is the same as leaving the key out."""
        keys = ("mode", "rules", "require_approval", "tools", "auto_approve", "session_grants", "default")
        policy = load_policy({"version": 1, **dict.fromkeys(keys), "unknown_tools": None})
        assert decide(policy, "bash")[:2] == ("pending", "default")  # no default: ask
        assert isinstance(policy.session_grants, SessionPermissionGrants)
        assert len(policy.session_grants) == 0

    def test_always_has_session_grants(self) -> None:
        """Without session_grants in the file the policy still gets empty grants the host can add to."""
        policy = load_policy({"version": 1, "require_approval": "bash"})
        assert isinstance(policy.session_grants, SessionPermissionGrants)
        policy.session_grants.grant("bash")
        assert decide(policy, "bash")[:2] == ("proceed", "session_grant")

    def test_tools_read_only(self) -> None:
        """The tools table becomes a read-only registry of mapping entries."""
        policy = load_policy({"version": 1, "tools": {"fetch": {"approval_required": True}}})
        tools: Any = policy.tools
        assert tools == {"fetch": {"approval_required": True}}
        with pytest.raises(TypeError):
            tools["fetch"]["approval_required"] = False

    def test_host_wiring_passes_through(self) -> None:
        """project_grants, on_decision, clock and interactive reach the policy as given."""
        seen: list[DecisionRecord] = []

        class Project:
            def is_granted(self, tool_name: str) -> bool:
                return tool_name == "bash"

        moment = datetime(2026, 1, 2, tzinfo=UTC)
        policy = load_policy(
            {"version": 1, "require_approval": ["bash", "make"]},
            project_grants=Project(),
            on_decision=seen.append,
            clock=lambda: moment,
            interactive=False,
        )
        assert policy.before_tool_call(ToolCall("bash")) == {"action": "proceed"}
        assert policy.before_tool_call(ToolCall("make"))["action"] == "block"
        assert [(record.layer, record.ts) for record in seen] == [
            ("project_grant", moment),
            ("approval_required", moment),
        ]


class TestQueue:
    """The file's auto_approve configures the queue load_policy creates; a passed queue conflicts with it."""

    def test_own_queue_is_used(self) -> None:
        """A queue passed in is the policy's queue when the file sets no auto_approve."""
        queue = ApprovalQueue()
        assert load_policy({"version": 1}, queue=queue).queue is queue
        assert load_policy({"version": 1, "auto_approve": {}}, queue=queue).queue is queue

    def test_fresh_queue_by_default(self) -> None:
        """Each load creates its own queue."""
        assert load_policy({"version": 1}).queue is not load_policy({"version": 1}).queue

    def test_conflict_is_an_error(self) -> None:
        """A queue and a file that sets auto_approve is a ValueError, not a silent choice."""
        with pytest.raises(ValueError, match=r"auto_approve \(for \['fetch'\]\)") as raised:
            load_policy({"version": 1, "auto_approve": {"fetch": True}}, queue=ApprovalQueue())
        assert not isinstance(raised.value, InvalidSnapshotError)


BAD_FIELDS = [
    pytest.param({"version": 1, "modes": "x"}, "modes", id="unknown-top-level-key"),
    pytest.param({}, "version", id="missing-version"),
    pytest.param({"version": 2}, "version", id="version-2"),
    pytest.param({"version": True}, "version", id="version-bool"),
    pytest.param({"version": 1, "mode": "yolo"}, "mode", id="unknown-mode"),
    pytest.param({"version": 1, "mode": 1}, "mode", id="mode-not-a-string"),
    pytest.param({"version": 1, "rules": ["deny"]}, "rules", id="rules-not-an-object"),
    pytest.param({"version": 1, "rules": {"rules": []}}, "rules.version", id="rules-without-version"),
    pytest.param(
        {
            "version": 1,
            "rules": rules(
                rule("deny", "bash"),
                rule("allow", "x"),
                rule("ask", {"type": "regexp", "source": "x", "flags": "q"}),
            ),
        },
        "rules.rules[2].tool_pattern.flags",
        id="rule-regex-flags",
    ),
    pytest.param(
        {"version": 1, "rules": rules(rule("maybe", "bash"))}, "rules.rules[0].decision", id="rule-decision"
    ),
    pytest.param(
        {"version": 1, "rules": rules(rule("deny", "bash", {"type": "regexp", "source": "(", "flags": ""}))},
        "rules.rules[0].argument_pattern.source",
        id="rule-regex-does-not-compile",
    ),
    pytest.param(
        {"version": 1, "rules": {"version": 1, "project_rules": rules(rule("deny", ""))}},
        "rules.project_rules.rules[0].tool_pattern.value",
        id="rule-set-layer",
    ),
    pytest.param({"version": 1, "require_approval": ""}, "require_approval", id="require-empty-name"),
    pytest.param({"version": 1, "require_approval": 3}, "require_approval", id="require-number"),
    pytest.param(
        {"version": 1, "require_approval": ["a", 3]}, "require_approval[1]", id="require-list-entry"
    ),
    pytest.param(
        {"version": 1, "require_approval": [{"type": "regexp", "source": "(", "flags": ""}]},
        "require_approval[0].source",
        id="require-bad-regex",
    ),
    pytest.param(
        {"version": 1, "require_approval": {"type": "string", "value": ""}},
        "require_approval.value",
        id="require-empty-string-pattern",
    ),
    pytest.param(
        {"version": 1, "require_approval": {"type": "glob", "value": "*"}},
        "require_approval.type",
        id="require-unknown-pattern-type",
    ),
    pytest.param({"version": 1, "tools": ["bash"]}, "tools", id="tools-not-an-object"),
    pytest.param({"version": 1, "tools": {"": {}}}, "tools", id="tools-empty-name"),
    pytest.param({"version": 1, "tools": {"bash": True}}, "tools.bash", id="tool-not-an-object"),
    pytest.param(
        {"version": 1, "tools": {"bash": {"colour": "red"}}}, "tools.bash.colour", id="tool-unknown-key"
    ),
    pytest.param(
        {"version": 1, "tools": {"bash": {"always_ask": "yes"}}},
        "tools.bash.always_ask",
        id="tool-flag-string",
    ),
    pytest.param(
        {"version": 1, "tools": {"bash": {"approval_required": 1}}},
        "tools.bash.approval_required",
        id="tool-flag-number",
    ),
    pytest.param(
        {"version": 1, "tools": {"bash": {"risk_level": 3}}}, "tools.bash.risk_level", id="tool-risk-number"
    ),
    pytest.param(
        {"version": 1, "tools": {"bash": {"side_effect_scope": "disk"}}},
        "tools.bash.side_effect_scope",
        id="tool-unknown-scope",
    ),
    pytest.param({"version": 1, "auto_approve": {"fetch": 1}}, "auto_approve.fetch", id="auto-approve-one"),
    pytest.param(
        {"version": 1, "auto_approve": {"fetch": False}}, "auto_approve.fetch", id="auto-approve-false"
    ),
    pytest.param({"version": 1, "auto_approve": ["fetch"]}, "auto_approve", id="auto-approve-list"),
    pytest.param(
        {"version": 1, "session_grants": {"version": 1, "granted_tools": ["a", ""]}},
        "session_grants.granted_tools[1]",
        id="grants-empty-name",
    ),
    pytest.param(
        {"version": 1, "session_grants": {"granted_tools": []}},
        "session_grants.version",
        id="grants-no-version",
    ),
]


class TestStrict:
    """Anything unknown, missing or mistyped is an InvalidSnapshotError naming the path to it."""

    @pytest.mark.parametrize(("data", "path"), BAD_FIELDS)
    def test_bad_field(self, data: dict[str, Any], path: str) -> None:
        """The error's path and message name the bad field."""
        with pytest.raises(InvalidSnapshotError, match=rf"^{re.escape(path)}: expected ") as raised:
            load_policy(data)
        assert raised.value.path == path

    def test_not_an_object(self, tmp_path: Path) -> None:
        """A file whose content is not an object is refused as a whole."""
        (tmp_path / "p.json").write_text("[1]", encoding="utf-8")
        with pytest.raises(InvalidSnapshotError, match=r"p\.json: snapshot: expected an object; got \[1\]"):
            load_policy(tmp_path / "p.json")

    def test_wrong_source_type(self) -> None:
        """A source that is neither a path nor a mapping is a TypeError."""
        with pytest.raises(TypeError, match="source: expected a path or a mapping; got 3"):
            load_policy(3)  # type: ignore[arg-type]


class TestFiles:
    """Paths: TOML for .toml, JSON otherwise; syntax errors and bad fields name the file."""

    def test_example_file(self) -> None:
        """The shipped example loads and decides as its comments say."""
        policy = load_policy(EXAMPLE)
        assert decide(policy, "bash", {"command": "rm -rf build"})[:2] == ("block", "deny_rule")
        assert decide(policy, "bash", {"command": "git status"})[:2] == ("proceed", "allow_rule")
        assert decide(policy, "bash", {"command": "make"})[:2] == ("pending", "approval_required")
        assert decide(policy, "bash", {"command": "git status && rm -rf ~"})[:2] == ("block", "deny_rule")
        assert decide(policy, "read_file")[:2] == ("proceed", "allow_rule")
        assert decide(policy, "db_migrate")[:2] == ("pending", "approval_required")
        assert decide(policy, "deploy")[:2] == ("pending", "always_ask")
        assert policy.queue.auto_approve == {"fetch": True}

    def test_parsed_data_reads_relative_paths_from_base_dir(self, tmp_path: Path) -> None:
        """Data given with base_dir finds a hook's relative program and a relative cwd there, as its file
        would; without it, from the working directory (the hook not found fails closed: blocked)."""
        (tmp_path / "hooks").mkdir()
        hook = tmp_path / "hooks" / "deny.sh"
        hook.write_text('#!/bin/sh\necho \'{"action": "deny", "reason": "by the hook"}\'\n', encoding="utf-8")
        hook.chmod(0o755)
        data = {
            "version": 1,
            "permissions": {"cwd": "project", "allow": ["Edit(./src/**)"]},
            "hooks": {
                "PreToolUse": [
                    {"matcher": "bash", "hooks": [{"type": "command", "command": "./hooks/deny.sh"}]}
                ]
            },
        }
        policy = load_policy(data, base_dir=tmp_path)
        blocked = policy.evaluate(ToolCall("bash", {"command": "ls"}))
        assert (blocked.outcome, blocked.reason) == ("block", "by the hook")
        edit = policy.evaluate(ToolCall("Edit", {"file_path": str(tmp_path / "project" / "src" / "a.py")}))
        assert edit.outcome == "proceed"

    def test_suffix_picks_the_parser(self, tmp_path: Path) -> None:
        """The same content is read as TOML only from a .toml file."""
        (tmp_path / "policy.toml").write_text('version = 1\nmode = "read_only"\n', encoding="utf-8")
        (tmp_path / "policy.json").write_text('{"version": 1, "mode": "read_only"}', encoding="utf-8")
        (tmp_path / "policy").write_text('{"version": 1, "mode": "read_only"}', encoding="utf-8")
        for name in ("policy.toml", "policy.json", "policy"):
            assert load_policy(tmp_path / name).mode == "read_only"
            assert load_policy(str(tmp_path / name)).mode == "read_only"
        (tmp_path / "json.toml").write_text('{"version": 1}', encoding="utf-8")
        with pytest.raises(InvalidSnapshotError, match=r"json\.toml: invalid TOML"):
            load_policy(tmp_path / "json.toml")

    @pytest.mark.parametrize(
        ("name", "content", "message"),
        [
            pytest.param("p.json", b'{"version": 1,', r"p\.json: invalid JSON: .*line 1", id="json"),
            pytest.param("p.toml", b"version = \n", r"p\.toml: invalid TOML: .*line 1", id="toml"),
            pytest.param("p.toml", b"version = 1\n\xff", r"p\.toml: not UTF-8 text", id="toml-not-utf8"),
            pytest.param("p.json", b"\xff", r"p\.json: not UTF-8 text", id="json-not-utf8"),
            pytest.param("p.json", b"[" * 100_000, r"p\.json: nested too deeply", id="json-too-deep"),
            pytest.param(
                "p.json",
                b'{"version": 1, "mode": "read_only", "mode": "full_access"}',
                r"p\.json: invalid JSON: the key 'mode' appears twice in one object",
                id="json-duplicate-key",
            ),
            pytest.param(
                "p.json",
                b'{"version": 1, "tools": {"x": {"always_ask": true, "always_ask": false}}}',
                r"p\.json: invalid JSON: the key 'always_ask' appears twice",
                id="json-nested-duplicate-key",
            ),
        ],
    )
    def test_syntax_errors(self, tmp_path: Path, name: str, content: bytes, message: str) -> None:
        """Unreadable content is an InvalidSnapshotError naming the file, with no field path."""
        (tmp_path / name).write_bytes(content)
        with pytest.raises(InvalidSnapshotError, match=message) as raised:
            load_policy(tmp_path / name)
        assert raised.value.path == ""

    def test_bad_field_names_file_and_path(self, tmp_path: Path) -> None:
        """A bad field in a file: the message starts with the file, the path attribute is the field's."""
        file = tmp_path / "p.toml"
        file.write_text(
            'version = 1\n[[rules.rules]]\ndecision = "deny"\ntool_pattern = { type = "all", x = 1 }\n'
            "[rules]\nversion = 1\n",
            encoding="utf-8",
        )
        with pytest.raises(
            InvalidSnapshotError, match=r"p\.toml: rules\.rules\[0\]\.tool_pattern\.x: "
        ) as raised:
            load_policy(file)
        assert raised.value.path == "rules.rules[0].tool_pattern.x"
        assert raised.value.value == 1

    def test_missing_file(self, tmp_path: Path) -> None:
        """A file that cannot be read raises the OSError."""
        with pytest.raises(FileNotFoundError):
            load_policy(tmp_path / "missing.toml")


RISK_CHOICES = "one of 'low', 'medium', 'high', 'critical'"


class TestRiskLevels:
    """A file's risk_level is one of low, medium, high, critical, like side_effect_scope's list."""

    @pytest.mark.parametrize("level", ["HIGH", "severe", "", " high"])
    def test_unknown_refused(self, level: str) -> None:
        """A typo or another scale would read as "not elevated": the file is refused instead."""
        data = {"version": 1, "tools": {"deploy": {"risk_level": level}}}
        with pytest.raises(
            InvalidSnapshotError, match=rf"^tools\.deploy\.risk_level: expected {RISK_CHOICES}; "
        ) as raised:
            load_policy(data)
        assert (raised.value.path, raised.value.value) == ("tools.deploy.risk_level", level)

    @pytest.mark.parametrize(
        ("level", "outcome"),
        [("low", "proceed"), ("medium", "proceed"), ("high", "pending"), ("critical", "pending")],
    )
    def test_known_levels(self, level: str, outcome: str) -> None:
        """The four levels load; high and critical are elevated."""
        policy = load_policy(
            {
                "version": 1,
                "default": "proceed",
                "tools": {"deploy": {"risk_level": level, "side_effect_scope": "none"}},
            }
        )
        assert policy.evaluate(ToolCall("deploy")).outcome == outcome

    def test_python_api_keeps_the_gem_reading(self) -> None:
        """Built in Python, an unknown level still reads as not elevated (lint reports it)."""
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), tools={"deploy": {"risk_level": "HIGH", "side_effect_scope": "none"}}
        )
        assert policy.evaluate(ToolCall("deploy")).outcome == "proceed"


def warned_regex() -> str:
    """A regex source Python warns about, new to this process (re and the rules cache compiled ones)."""
    return f"[[{uuid.uuid4().hex}]"


class TestWarningsAsErrors:
    """Under -W error a regex Python warns about is an InvalidSnapshotError naming the file and field."""

    def test_file(self, tmp_path: Path) -> None:
        """The error names the file and the regex's source field, and says what Python warned."""
        source = warned_regex()
        file = tmp_path / "p.json"
        file.write_text(
            json.dumps(
                {
                    "version": 1,
                    "rules": rules(rule("deny", "bash", {"type": "regexp", "source": source, "flags": ""})),
                }
            )
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(
                InvalidSnapshotError,
                match=re.escape(
                    "p.json: rules.rules[0].argument_pattern.source: expected a regex Python does not warn "
                    f"about (FutureWarning: Possible nested set at position 1); got '{source}'"
                ),
            ) as raised:
                load_policy(file)
        assert (raised.value.path, raised.value.value) == ("rules.rules[0].argument_pattern.source", source)

    @pytest.mark.parametrize(
        ("build", "path"),
        [
            pytest.param(
                lambda source: {
                    "require_approval": ["a", {"type": "regexp", "source": source, "flags": "i"}]
                },
                "require_approval[1].source",
                id="require-approval",
            ),
            pytest.param(
                lambda source: {
                    "rules": {
                        "version": 1,
                        "project_rules": rules(
                            rule("ask", {"type": "regexp", "source": source, "flags": ""})
                        ),
                    }
                },
                "rules.project_rules.rules[0].tool_pattern.source",
                id="rule-set-layer",
            ),
        ],
    )
    def test_mapping(self, build: Callable[[str], dict[str, Any]], path: str) -> None:
        """Parsed data gets the same error, naming the field."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(
                InvalidSnapshotError,
                match=rf"^{re.escape(path)}: expected a regex Python does not warn about",
            ) as raised:
                load_policy({"version": 1, **build(warned_regex())})
        assert raised.value.path == path

    def test_only_a_warning_otherwise(self) -> None:
        """With warnings only shown, the policy loads, as Python compiles the regex."""
        source = warned_regex()
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            policy = load_policy(
                {
                    "version": 1,
                    "default": "proceed",
                    "require_approval": {"type": "regexp", "source": source, "flags": ""},
                }
            )
        assert [type(warning.message) for warning in shown] == [FutureWarning]
        assert policy.evaluate(ToolCall("x")).outcome == "proceed"


class TestGrantsPath:
    """SessionPermissionGrants.from_snapshot(path=...) prefixes its error paths."""

    def test_path_prefix(self) -> None:
        """Errors read from the given path; without one they read as before."""
        bad = {"version": 1, "granted_tools": ["a", 2]}
        with pytest.raises(InvalidSnapshotError, match=r"^outer\.granted_tools\[1\]: ") as raised:
            SessionPermissionGrants.from_snapshot(bad, path="outer")
        assert raised.value.path == "outer.granted_tools[1]"
        with pytest.raises(InvalidSnapshotError, match=r"^granted_tools\[1\]: "):
            SessionPermissionGrants.from_snapshot(bad)


# -- round trips -------------------------------------------------------------------------------------------
# Tool names, rules and calls come from tests/strategies.py; the classifiers and policies are this module's.

classifiers = st.one_of(
    st.none(),
    permission_rules(),
    st.builds(
        PermissionRuleSet,
        default_rules=st.none() | permission_rules(),
        project_rules=st.none() | permission_rules(),
    ),
)


@st.composite
def python_policies(draw: st.DrawFn) -> tuple[ApprovalPolicy, dict[str, Any]]:
    """A policy built in Python, with the policy file data that describes it."""
    rules_object = draw(classifiers)
    require = draw(st.lists(tool_patterns, max_size=3))
    single = len(require) == 1 and draw(st.booleans())
    tools = draw(st.dictionaries(tool_names, tool_metadata(), max_size=4))
    mode = draw(st.sampled_from((None, "full_access", "ask_before_changes", "read_only")))
    granted = draw(st.lists(tool_names, max_size=3, unique=True))
    auto = draw(st.lists(tool_names, max_size=3, unique=True))
    default: Literal["ask", "proceed"] = draw(st.sampled_from(("ask", "proceed")))
    # The drawn rules name any tools, the drawn registry some: kept, as in the file below.
    policy = ApprovalPolicy(
        queue=ApprovalQueue(auto_approve=dict.fromkeys(auto, True)),
        rules=rules_object,
        require_approval=require[0] if single else require,
        tools=tools,
        mode=mode,  # type: ignore[arg-type]
        session_grants=SessionPermissionGrants(granted),
        default=default,
        unknown_tools="keep",
    )

    def entry(pattern: object) -> object:
        return pattern if isinstance(pattern, str) else encode_pattern(pattern)  # type: ignore[arg-type]

    data: dict[str, Any] = {
        "version": 1,
        "mode": mode,
        "default": default,
        "unknown_tools": "keep",
        "rules": None if rules_object is None else rules_object.snapshot(),
        "require_approval": entry(require[0]) if single else [entry(pattern) for pattern in require],
        "tools": tools,
        "auto_approve": dict.fromkeys(auto, True),
        "session_grants": SessionPermissionGrants(granted).snapshot(),
    }
    if isinstance(rules_object, PermissionRuleSet):
        # TOML has no null: a missing layer is left out, which the rule set snapshot reads the same way.
        # A rule set with neither layer would then read as an incomplete PermissionRules snapshot; it
        # decides nothing, exactly like no rules at all.
        layers = {key: value for key, value in data["rules"].items() if value is not None}
        data["rules"] = layers if len(layers) > 1 else None
    return policy, data


def same_decisions(expected: ApprovalPolicy, loaded: ApprovalPolicy, sample: list[tuple[str, Any]]) -> None:
    """Both policies decide every call of the sample alike: outcome, layer, reason and matched rule."""
    for name, arguments in sample:
        want = expected.evaluate(ToolCall(name, arguments))
        got = loaded.evaluate(ToolCall(name, arguments))
        assert (got.outcome, got.layer, got.reason, got.rule, got.auto_approvable) == (
            want.outcome,
            want.layer,
            want.reason,
            want.rule,
            want.auto_approvable,
        ), (name, arguments)


class TestRoundTrip:
    """A policy built in Python, written as a file and loaded, decides every call the same way."""

    @settings(max_examples=60, deadline=None)
    @given(python_policies(), st.lists(calls, min_size=1, max_size=12))
    def test_json(self, built: tuple[ApprovalPolicy, dict[str, Any]], sample: list[tuple[str, Any]]) -> None:
        """Through JSON text (a mapping and a file read the same way)."""
        policy, data = built
        same_decisions(policy, load_policy(json.loads(json.dumps(data))), sample)
        assert load_policy(json.loads(json.dumps(data))).queue.auto_approve == policy.queue.auto_approve

    @settings(max_examples=60, deadline=None)
    @given(python_policies(), st.lists(calls, min_size=1, max_size=12))
    def test_toml(self, built: tuple[ApprovalPolicy, dict[str, Any]], sample: list[tuple[str, Any]]) -> None:
        """Through TOML text, written by the tiny writer above and read by tomllib."""
        import tomllib

        policy, data = built
        same_decisions(policy, load_policy(tomllib.loads(toml_document(data))), sample)

    def test_files(self, tmp_path: Path) -> None:
        """The same data as .json and .toml files loads to the same decisions."""
        policy = load_policy(EXAMPLE)
        data = {
            "version": 1,
            "rules": policy.rules.snapshot(),  # type: ignore[union-attr]
            "require_approval": ["bash", {"type": "regexp", "source": "^db_", "flags": ""}],
            "tools": {name: dict(entry) for name, entry in policy.tools.items()},  # type: ignore[attr-defined]
            "auto_approve": {"fetch": True},
        }
        (tmp_path / "p.json").write_text(json.dumps(data), encoding="utf-8")
        (tmp_path / "p.toml").write_text(toml_document(data), encoding="utf-8")
        sample = [
            (name, {"command": command})
            for name in EXAMPLE_NAMES
            for command in ("git log", "rm -rf x", "ls")
        ]
        same_decisions(policy, load_policy(tmp_path / "p.json"), sample)
        same_decisions(policy, load_policy(tmp_path / "p.toml"), sample)
