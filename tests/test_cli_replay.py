"""``ask-permissions replay`` and ``audit``: recorded calls decided again, audit logs counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ask_permissions import InvalidEvidenceError
from ask_permissions.cli._main import main
from ask_permissions.evidence._audit import read_audit

from .evidence_samples import NEW_POLICY, OLD_POLICY, record_session


@pytest.fixture
def policies(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(OLD_POLICY, encoding="utf-8")
    new.write_text(NEW_POLICY, encoding="utf-8")
    return old, new


@pytest.fixture
def recorded(tmp_path: Path, policies: tuple[Path, Path]) -> tuple[Path, Path, Path]:
    """The old and new policies, and the audit log of the sample session under the old one."""
    old, new = policies
    audit = tmp_path / "audit.jsonl"
    record_session(old, audit_path=audit)
    return old, new, audit


class TestReplayFromAudit:
    """Audit lines with their arguments are decided again; the changes are grouped by the new rule."""

    def test_changes_grouped_by_rule_with_answers(
        self, recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """pending -> proceed by each new allow rule, with how people had answered; exit 1 (changes)."""
        _, new, audit = recorded
        assert main(["replay", str(new), "--from", str(audit), "--json"]) == 1
        report = json.loads(capsys.readouterr().out)
        changes = {(c["from"], c["to"], c["rule"]): c for c in report["changes"]}
        diff = changes["pending", "proceed", "allow Bash(git diff *)"]
        assert diff["count"] == 3
        assert diff["answers"] == {"approved": 3}
        push = changes["pending", "proceed", "allow Bash(git push *)"]
        assert push["answers"] == {"approved": 1}
        force = changes["pending", "block", "deny Bash(git push --force *)"]
        assert force["answers"] == {"rejected": 1}
        assert report["unreplayable"] == 0
        assert report["changed"] == 5

    def test_text_report(self, recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """The text report gives each transition, the rule, the answers and example calls."""
        _, new, audit = recorded
        main(["replay", str(new), "--from", str(audit)])
        out = capsys.readouterr().out
        assert "would be decided otherwise" in out
        assert "pending -> proceed: 4" in out
        assert "  3 by allow Bash(git diff *) (3 a person approved)" in out
        assert 'e.g. Bash {"command": "git diff HEAD"}' in out

    def test_records_without_arguments_are_named(
        self, tmp_path: Path, policies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without record_arguments, the replay says which records it could not decide again."""
        old, new = policies
        audit = tmp_path / "audit.jsonl"
        record_session(old, audit_path=audit, keep=False)
        assert main(["replay", str(new), "--from", str(audit)]) == 0
        out = capsys.readouterr().out
        assert "replayed 0 recorded calls" in out
        assert "not replayed: 21 records without their arguments" in out
        assert f"{audit}:1  Bash  args_digest " in out

    def test_redacted_records_are_replayed_on_what_was_kept(
        self, tmp_path: Path, policies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Arguments a redaction hook changed are replayed as kept, and the report counts them."""
        old, new = policies
        audit = tmp_path / "audit.jsonl"

        def redact(tool: str, arguments: dict[str, object]) -> dict[str, object]:
            return {**arguments, "url": "https://redacted.example/"} if tool == "WebFetch" else arguments

        record_session(old, audit_path=audit, keep=redact)
        assert main(["replay", str(new), "--from", str(audit), "--json"]) == 1
        report = json.loads(capsys.readouterr().out)
        assert (report["replayed"], report["redacted"]) == (21, 3)
        main(["replay", str(new), "--from", str(audit)])
        assert "(3 were decided on arguments a redaction hook changed)" in capsys.readouterr().out

    def test_the_same_policy_changes_nothing(
        self, recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Replaying a log under the policy that wrote it changes no outcome: exit 0."""
        old, _, audit = recorded
        assert main(["replay", str(old), "--from", str(audit)]) == 0
        assert "21 recorded calls" in capsys.readouterr().out


ASKING_POLICY = 'version = 1\nrequire_approval = ["Bash"]\n'
ALLOWING_POLICY = ASKING_POLICY + '\n[permissions]\nallow = ["Bash(git diff *)", "Bash(npm publish)"]\n'


def _run_and_answer(policy: Path, calls: list[tuple[str, bool | dict[str, str]]], lines: list[str]) -> None:
    """One process's run: each Bash call asks, and is approved (True), rejected (False) or approved with
    the edited arguments given; every record goes to ``lines``. Each run's queue counts ids from 1."""
    from ask_permissions import ToolCall, load_policy

    live = load_policy(
        policy, on_decision=lambda record: lines.append(json.dumps(record.to_dict())), record_arguments=True
    )
    for command, answer in calls:
        result = live.before_tool_call(ToolCall("Bash", {"command": command}))
        assert result["action"] == "pending"
        if answer is True:
            live.approve(result["action_id"])
        elif answer is False:
            live.reject(result["action_id"], feedback="no")
        else:
            live.approve(result["action_id"], arguments=answer)


class TestAnswersOfAsks:
    """Each ask is given the answer its own resolution record tells, whatever other runs wrote."""

    def test_runs_appended_to_one_log_keep_their_own_answers(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Two runs, both with an action 1: the approval of the first and the rejection of the second are
        each their own call's."""
        old, new = tmp_path / "old.toml", tmp_path / "new.toml"
        old.write_text(ASKING_POLICY, encoding="utf-8")
        new.write_text(ALLOWING_POLICY, encoding="utf-8")
        lines: list[str] = []
        _run_and_answer(old, [("git diff HEAD", True)], lines)
        _run_and_answer(old, [("npm publish", False)], lines)
        audit = tmp_path / "audit.jsonl"
        audit.write_text("\n".join(lines) + "\n", encoding="utf-8")
        assert main(["replay", str(new), "--from", str(audit), "--json"]) == 1
        changes = {c["rule"]: c["answers"] for c in json.loads(capsys.readouterr().out)["changes"]}
        assert changes == {
            "allow Bash(git diff *)": {"approved": 1},
            "allow Bash(npm publish)": {"rejected": 1},
        }

    def test_an_answer_before_its_ask_is_not_its_answer(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A resolution of action 1 written before a later run's ask 1 does not answer that ask."""
        old, new = tmp_path / "old.toml", tmp_path / "new.toml"
        old.write_text(ASKING_POLICY, encoding="utf-8")
        new.write_text(ALLOWING_POLICY, encoding="utf-8")
        lines: list[str] = []
        _run_and_answer(old, [("git diff HEAD", True)], lines)
        second: list[str] = []
        _run_and_answer(old, [("git diff HEAD", False)], second)
        lines.append(second[0])  # the second run's ask, never answered in this log
        audit = tmp_path / "audit.jsonl"
        audit.write_text("\n".join(lines) + "\n", encoding="utf-8")
        main(["replay", str(new), "--from", str(audit), "--json"])
        (change,) = json.loads(capsys.readouterr().out)["changes"]
        assert change["answers"] == {"approved": 1, "pending": 1}

    def test_an_edited_approval_is_told_apart(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A call a person approved only as edited is reported as edited, not as approved: from the audit
        log and from the store."""
        from ask_permissions import SqliteStore, ToolCall, load_policy

        old, new = tmp_path / "old.toml", tmp_path / "new.toml"
        old.write_text(ASKING_POLICY, encoding="utf-8")
        new.write_text(ALLOWING_POLICY, encoding="utf-8")
        lines: list[str] = []
        _run_and_answer(old, [("npm publish", {"command": "npm pack"}), ("git diff a", True)], lines)
        audit = tmp_path / "audit.jsonl"
        audit.write_text("\n".join(lines) + "\n", encoding="utf-8")
        main(["replay", str(new), "--from", str(audit), "--json"])
        changes = {c["rule"]: c["answers"] for c in json.loads(capsys.readouterr().out)["changes"]}
        assert changes["allow Bash(npm publish)"] == {"edited": 1}
        assert changes["allow Bash(git diff *)"] == {"approved": 1}
        main(["replay", str(new), "--from", str(audit)])
        assert "1 by allow Bash(npm publish) (1 a person approved only as edited)" in capsys.readouterr().out
        database = tmp_path / "store.db"
        store = SqliteStore(database)
        try:
            live = load_policy(old, store=store)
            result = live.before_tool_call(ToolCall("Bash", {"command": "npm publish"}))
            assert result["action"] == "pending"
            live.approve(result["action_id"], arguments={"command": "npm pack"})
        finally:
            store.close()
        main(["replay", str(new), "--store", f"sqlite:///{database}", "--json"])
        (change,) = json.loads(capsys.readouterr().out)["changes"]
        assert change["answers"] == {"edited": 1}


class TestReportIsTerminalSafe:
    """What a log or a policy holds is shown escaped: no control character reaches the terminal."""

    def test_rule_texts_are_escaped(
        self, tmp_path: Path, policies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A rule text with an escape sequence (a rule a model's words made) is printed escaped."""
        _, new = policies
        rule = {
            "index": 0,
            "layer": "default",
            "declared_decision": "ask",
            "effective_decision": "ask",
            "tool_pattern": {"type": "string", "value": "Bash"},
            "argument_pattern": None,
            "text": "Bash(git diff \x1b[2J\x1b]0;owned\x07)",
        }
        line = _changed(
            outcome="pending",
            verdict="ask",
            rule=rule,
            arguments={"command": "git diff HEAD"},
            source="local\x1b[31m",
        )
        audit = tmp_path / "audit.jsonl"
        audit.write_text(line + "\n", encoding="utf-8")
        assert main(["replay", str(new), "--from", str(audit)]) == 1
        out = capsys.readouterr().out
        assert "before: ask Bash(git diff \\x1b[2J" in out
        assert not any(char in out for char in "\x1b\x07")


class TestReplayFromStore:
    """A store is opened read-only (tests/test_history.py replays both stores and checks nothing changed)."""

    def test_a_missing_store_is_not_created(self, tmp_path: Path, policies: tuple[Path, Path]) -> None:
        """A read-only replay never creates a database: a missing one is bad input."""
        _, new = policies
        assert main(["replay", str(new), "--store", f"sqlite:///{tmp_path / 'none.db'}"]) == 2
        assert not (tmp_path / "none.db").exists()

    def test_a_memory_store_has_no_history(self, policies: tuple[Path, Path]) -> None:
        """memory: names no store another process can read."""
        _, new = policies
        assert main(["replay", str(new), "--store", "memory:"]) == 2


BAD_LINES = [
    pytest.param("not json", "", id="not-json"),
    pytest.param("[1, 2]", "", id="not-an-object"),
    pytest.param('{"tool": "x"}', "layer", id="missing-layer"),
    pytest.param(
        '{"tool": "x", "layer": "default", "outcome": "allow", "verdict": "allow"}', "outcome", id="outcome"
    ),
    pytest.param(
        '{"tool": "x", "layer": "default", "outcome": "proceed", "verdict": "allow", "args_digest": "zz",'
        ' "ts": "2026-01-01T00:00:00+00:00"}',
        "args_digest",
        id="digest",
    ),
    pytest.param(
        '{"tool": "x", "layer": "default", "outcome": "proceed", "verdict": "allow",'
        ' "args_digest": "0123456789abcdef", "ts": "2026-01-01T00:00:00"}',
        "ts",
        id="naive-time",
    ),
]

_GOOD: dict[str, object] = {
    "tool": "Bash",
    "layer": "default",
    "outcome": "proceed",
    "verdict": "allow",
    "args_digest": "0123456789abcdef",
    "ts": "2026-01-01T00:00:00+00:00",
}


def _changed(**fields: object) -> str:
    """The good record with some fields replaced (``None`` removes one)."""
    record = {**_GOOD, **fields}
    return json.dumps({key: value for key, value in record.items() if value is not None})


BAD_FIELDS = [
    pytest.param(_changed(tool=3), "tool", id="tool-number"),
    pytest.param(_changed(tool=""), "tool", id="tool-empty"),
    pytest.param(_changed(tool=["Bash"]), "tool", id="tool-list"),
    pytest.param(_changed(layer=None), "layer", id="layer-missing"),
    pytest.param(_changed(layer={"name": "x"}), "layer", id="layer-object"),
    pytest.param(_changed(outcome=None), "outcome", id="outcome-missing"),
    pytest.param(_changed(outcome="PROCEED"), "outcome", id="outcome-case"),
    pytest.param(_changed(verdict="allowed"), "verdict", id="verdict-unknown"),
    pytest.param(_changed(verdict=None), "verdict", id="verdict-missing"),
    pytest.param(_changed(verdict="deny"), "verdict", id="verdict-against-outcome"),
    pytest.param(_changed(outcome="pending", verdict="ask_allowed"), "verdict", id="pending-answered"),
    pytest.param(_changed(outcome="block", verdict="ask"), "verdict", id="blocked-ask"),
    pytest.param(_changed(args_digest=None), "args_digest", id="digest-missing"),
    pytest.param(_changed(args_digest="0123456789ABCDEF"), "args_digest", id="digest-uppercase"),
    pytest.param(_changed(args_digest="0123456789abcde"), "args_digest", id="digest-short"),
    pytest.param(_changed(args_digest=81985529216486895), "args_digest", id="digest-number"),
    pytest.param(_changed(ts=None), "ts", id="ts-missing"),
    pytest.param(_changed(ts=1767225600), "ts", id="ts-number"),
    pytest.param(_changed(ts="yesterday"), "ts", id="ts-text"),
    pytest.param(_changed(ts="2026-13-01T00:00:00+00:00"), "ts", id="ts-month-13"),
    pytest.param(_changed(rule="Bash(rm *)"), "rule", id="rule-text"),
    pytest.param(_changed(rule=[1]), "rule", id="rule-list"),
    pytest.param(_changed(action_id=True), "action_id", id="action-id-bool"),
    pytest.param(_changed(action_id="7"), "action_id", id="action-id-text"),
    pytest.param(_changed(action_id=1.5), "action_id", id="action-id-float"),
    pytest.param(_changed(tool_call_id=["c"]), "tool_call_id", id="call-id-list"),
    pytest.param(_changed(tool_call_id=False), "tool_call_id", id="call-id-bool"),
    pytest.param(_changed(shadow="block"), "shadow", id="shadow-text"),
    pytest.param(_changed(reason=5), "reason", id="reason-number"),
    pytest.param(_changed(source=""), "source", id="source-empty"),
    pytest.param(_changed(source=1), "source", id="source-number"),
    pytest.param(_changed(rule_id=[]), "rule_id", id="rule-id-list"),
    pytest.param(_changed(decided_by=7), "decided_by", id="decided-by-number"),
    pytest.param(_changed(decided_by=""), "decided_by", id="decided-by-empty"),
    pytest.param(_changed(edited_digest="x"), "edited_digest", id="edited-digest"),
]
"""Records each with one field that is not what a decision record holds: the message names that field."""

BAD_TEXT = [
    pytest.param(_changed()[:-1], id="truncated"),
    pytest.param("[" * 100_000, id="nested-too-deep"),
    pytest.param('"a string"', id="a-string"),
    pytest.param("null", id="null"),
    pytest.param("{'tool': 'Bash'}", id="python-repr"),
    pytest.param(_changed() + " trailing", id="trailing-text"),
]
"""Lines that are no JSON object at all: the message names the line, with no field."""

GOOD_LINE = (
    '{"tool": "x", "layer": "default", "outcome": "proceed", "verdict": "allow",'
    ' "args_digest": "0123456789abcdef", "ts": "2026-01-01T00:00:00+00:00", "proxy": {"action": "forwarded"}}'
)


class TestAudit:
    """audit counts a log by outcome, tool, rule and who decided; filters by time, tool and outcome."""

    def test_counts(
        self, tmp_path: Path, policies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Outcomes, tools, rules and deciders are counted: the records' decided_by (the rules' proceed and
        block, the named person), an unnamed answer as a person's, a call that waits as asked."""
        old, _ = policies
        audit = tmp_path / "audit.jsonl"
        record_session(old, audit_path=audit, deciders=["ada", None])
        assert main(["audit", str(audit), "--json"]) == 0
        counts = json.loads(capsys.readouterr().out)
        assert counts["records"] == 21 + 19  # every one of the 19 asks was answered
        assert counts["outcomes"]["pending"] == 19
        assert counts["decided_by"] == {"asked": 19, "ada": 10, "person": 9, "rule": 2}
        assert counts["rules"]["deny Bash(rm -rf *)"] == 1
        assert counts["tools"]["WebFetch"] == 3 + 3

    def test_filters(self, recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """--tool, --outcome, --since and --until keep only the matching records."""
        _, _, audit = recorded
        main(["audit", str(audit), "--json", "--tool", "Edit", "--outcome", "pending"])
        assert json.loads(capsys.readouterr().out)["records"] == 4
        main(["audit", str(audit), "--json", "--until", "2026-03-01T09:01:00+00:00"])
        assert json.loads(capsys.readouterr().out)["records"] == 1
        main(["audit", str(audit), "--json", "--since", "2026-03-01T09:30:00"])
        assert json.loads(capsys.readouterr().out)["records"] == 10  # one record a minute, 40 in all

    def test_text_report(self, recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
        """The text report has a table per count."""
        _, _, audit = recorded
        assert main(["audit", str(audit)]) == 0
        out = capsys.readouterr().out
        assert out.startswith("40 records, 2026-03-01T09:00:00+00:00 to 2026-03-01T09:39:00+00:00")
        for title in ("by outcome:", "by tool:", "by rule:", "by who decided:"):
            assert title in out

    @pytest.mark.parametrize(("line", "field"), BAD_LINES)
    def test_bad_lines(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, field: str
    ) -> None:
        """A line that is not a decision record is one stderr line naming file, line and field; exit 2."""
        audit = tmp_path / "audit.jsonl"
        audit.write_text(GOOD_LINE + "\n\n" + line + "\n", encoding="utf-8")
        assert main(["audit", str(audit)]) == 2
        (message,) = capsys.readouterr().err.splitlines()
        where = f"{audit}:3: " + (f"{field}: " if field else "")
        assert message.startswith(f"ask-permissions: error: {where}expected")
        with pytest.raises(InvalidEvidenceError) as caught:
            list(read_audit(str(audit)))
        assert (caught.value.line, caught.value.field) == (3, field)

    @pytest.mark.parametrize(("line", "field"), BAD_FIELDS)
    def test_bad_fields(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, field: str
    ) -> None:
        """A record with one bad field: one stderr line naming file, line and that field; exit 2."""
        audit = tmp_path / "audit.jsonl"
        audit.write_text(GOOD_LINE + "\n" + line + "\n", encoding="utf-8")
        assert main(["audit", str(audit)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        (message,) = captured.err.splitlines()
        assert message.startswith(f"ask-permissions: error: {audit}:2: {field}: expected ")

    @pytest.mark.parametrize("line", BAD_TEXT)
    def test_not_a_record(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str) -> None:
        """A line that is no JSON object: one stderr line naming file and line; exit 2."""
        audit = tmp_path / "audit.jsonl"
        audit.write_text(GOOD_LINE + "\n" + line + "\n", encoding="utf-8")
        assert main(["audit", str(audit)]) == 2
        (message,) = capsys.readouterr().err.splitlines()
        assert message.startswith(f"ask-permissions: error: {audit}:2: expected a JSON object")
        assert len(message) < 1000

    def test_not_utf8(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Bytes that are not UTF-8 in a line name that line."""
        audit = tmp_path / "audit.jsonl"
        audit.write_bytes(GOOD_LINE.encode() + b"\n" + b'{"tool": "caf\xe9"}\n')
        assert main(["audit", str(audit)]) == 2
        (message,) = capsys.readouterr().err.splitlines()
        assert message.startswith(f"ask-permissions: error: {audit}:2: expected a JSON object")

    def test_replay_refuses_bad_lines_too(
        self, tmp_path: Path, policies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """replay --from reads audit lines with the same reader: a bad line is exit 2, nothing reported."""
        _, new = policies
        audit = tmp_path / "audit.jsonl"
        audit.write_text(GOOD_LINE + "\n" + _changed(outcome="allow") + "\n", encoding="utf-8")
        assert main(["replay", str(new), "--from", str(audit)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(f"ask-permissions: error: {audit}:2: outcome: expected one of")

    def test_a_proxy_line_without_a_decision(
        self, tmp_path: Path, policies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The MCP proxy's line for a call to a tool the upstream does not list holds no decision record:
        audit counts it apart and replay passes over it, instead of refusing the whole log."""
        from ask_permissions.integrations.mcp_proxy import AuditLog

        _, new = policies
        audit = tmp_path / "audit.jsonl"
        audit.write_text(GOOD_LINE + "\n", encoding="utf-8")
        AuditLog(audit).write(None, {"tool": "delete_everything", "did": "refused"})
        assert main(["audit", str(audit), "--json"]) == 0
        counts = json.loads(capsys.readouterr().out)
        assert (counts["records"], counts["undecided"]) == (1, 1)
        assert main(["audit", str(audit)]) == 0
        assert "1 line of the MCP proxy holds no decision" in capsys.readouterr().out
        assert main(["replay", str(new), "--from", str(audit)]) == 0
        assert "not replayed: 1 records" in capsys.readouterr().out  # GOOD_LINE keeps no arguments

    @pytest.mark.parametrize(
        "line",
        [
            pytest.param('{"proxy": "refused"}', id="proxy-not-an-object"),
            pytest.param('{"proxy": {"did": "refused"}, "tool": "x"}', id="half-a-record"),
            pytest.param("{}", id="empty"),
        ],
    )
    def test_only_a_bare_proxy_line_is_passed_over(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
    ) -> None:
        """A line with record keys, or a proxy value that is no object, is still a bad record."""
        audit = tmp_path / "audit.jsonl"
        audit.write_text(line + "\n", encoding="utf-8")
        assert main(["audit", str(audit)]) == 2
        assert capsys.readouterr().err.startswith(f"ask-permissions: error: {audit}:1: ")

    def test_other_keys_are_the_writers(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The MCP proxy's extra keys are left alone."""
        audit = tmp_path / "audit.jsonl"
        audit.write_text(GOOD_LINE + "\n", encoding="utf-8")
        assert main(["audit", str(audit), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["outcomes"] == {"proceed": 1}
