"""ask-permissions approvals: the inbox over a store — list, show, approve, reject and watch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ask_permissions import ApprovalQueue, ApprovalStore, open_store
from ask_permissions._vocabulary import MACHINE_DECIDERS
from ask_permissions.cli._approvals import STORE_ENV
from ask_permissions.cli._main import main

from .clock import FakeClock
from .inbox_agent import AgentProcess
from .stores import fresh_session
from .test_cli import run_cli
from .threads import join, start


@pytest.fixture
def store(store_url: str) -> Iterator[ApprovalStore]:
    """The store the command is pointed at (SQLite and PostgreSQL), opened by the test as a host would."""
    opened = open_store(store_url)
    yield opened
    opened.close()


def queue_in(store: ApprovalStore, session: str | None = None) -> ApprovalQueue:
    """A host's queue on a fresh session of the store."""
    return ApprovalQueue(store=store, session=session or fresh_session())


def run(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str, str]:
    """``ask-permissions approvals ARGV --store URL`` in this process: status, stdout, stderr."""
    status = main(["approvals", *argv, "--store", url])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(err: str, text: str) -> None:
    """Bad input is one line on standard error, saying what was wrong."""
    assert err.count("\n") == 1
    assert err.startswith("ask-permissions: error: ")
    assert text in err


class TestList:
    """list prints the pending actions, of one session or of all, as a table or JSON."""

    def test_table_of_one_session(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """Oldest first, with the tool, the submission time, the arguments and the reason (the message
        when the call came with no explanation)."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="bash", args={"command": "ls"}, message="needs eyes")
        queue.submit(tool_call_id="c2", tool_name="write")
        queue.approve(2)
        status, out, err = run(capsys, store_url, "list", "--session", queue.session)
        lines = out.splitlines()
        assert (status, err) == (0, "")
        assert lines[0].split() == ["SESSION", "ID", "TOOL", "SUBMITTED", "ARGS", "REASON"]
        assert len(lines) == 2
        assert lines[1].split()[:3] == [queue.session, "1", "bash"]
        assert lines[1].endswith('{"command":"ls"}  needs eyes')

    def test_every_session_as_json(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """Without --session every session's pending actions are listed; --json gives every field."""
        first, second = queue_in(store), queue_in(store)
        first.submit(tool_call_id="a", tool_name="bash", args="raw")
        second.submit(tool_call_id=7, tool_name="fetch", auto_approvable=True)
        status, out, _ = run(capsys, store_url, "list", "--json")
        records = {(record["session"], record["id"]): record for record in json.loads(out)}
        assert status == 0
        assert records[first.session, 1]["args"] == "raw"
        assert records[second.session, 1] | {"submitted_at": None} == {
            "session": second.session,
            "id": 1,
            "status": "pending",
            "tool_name": "fetch",
            "tool_call_id": 7,
            "args": {},
            "auto_approvable": True,
            "message": None,
            "reason": "Tool 'fetch' requires approval",
            "why": None,
            "submitted_at": None,
            "resolution_scope": None,
            "feedback": None,
            "decided_by": None,
            "resolved_at": None,
            "edited_args": None,
        }

    def test_nothing_pending(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """An empty store says so."""
        status, out, _ = run(capsys, f"sqlite:///{tmp_path / 'empty.db'}", "list")
        assert (status, out) == (0, "no pending actions\n")

    def test_model_text_cannot_drive_the_terminal(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """Escape sequences, bidi overrides and NUL from a model are printed escaped, never raw."""
        queue = queue_in(store)
        queue.submit(
            tool_call_id="c", tool_name="ba\u202esh", args={"x": "\x1b[2J\x00"}, message="\x1b]0;hi\x07"
        )
        _, out, _ = run(capsys, store_url, "list", "--session", queue.session)
        assert "\x1b" not in out
        assert "\u202e" not in out
        assert "\x00" not in out
        assert "ba\\u202esh" in out
        assert "\\x1b]0;hi\\x07" in out


BAD_IDS: list[tuple[str, list[str], str]] = [
    ("approve", ["9"], "action 9: no such action in session"),
    ("reject", ["2"], "action 2 is already approved; nothing was changed"),
    ("approve", ["1", "9"], "action 9: no such action"),
    ("show", ["9"], "action 9: no such action"),
]


class TestShowApproveReject:
    """show prints one action; approve and reject resolve, with a scope or feedback; bad ids exit 2."""

    def test_show(self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore) -> None:
        """Every field, the arguments as indented JSON; --json the same as an object."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="bash", args={"command": "rm -rf build"})
        status, out, _ = run(capsys, store_url, "show", "1", "--session", queue.session)
        assert status == 0
        assert "status:           pending" in out
        assert '    "command": "rm -rf build"' in out
        _, out, _ = run(capsys, store_url, "show", "1", "--json", "--session", queue.session)
        assert json.loads(out)["args"] == {"command": "rm -rf build"}

    def test_approve_with_a_scope(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """approve records the scope, says what it did, and the host's waiter sees it."""
        queue = queue_in(store)
        store.record_scopes(queue.session, {"once": "runs it", "session": "grants the tool"})
        queue.submit(tool_call_id="c1", tool_name="bash")
        queue.submit(tool_call_id="c2", tool_name="bash")
        status, out, err = run(
            capsys,
            store_url,
            "approve",
            "1",
            "2",
            "--scope",
            "session",
            "--session",
            queue.session,
            "--as",
            "ann",
        )
        assert (status, err) == (0, "")
        assert out.splitlines() == [
            "approved 1 (bash, scope session) by ann",
            "approved 2 (bash, scope session) by ann",
        ]
        decided = queue.wait(1, timeout=5)
        assert decided is not None
        assert (decided.status, decided.scope) == ("approved", "session")

    def test_reject_with_feedback(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """reject records the feedback the model is told."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="bash")
        status, out, _ = run(
            capsys,
            store_url,
            "reject",
            "1",
            "--feedback",
            "use ls -l",
            "--session",
            queue.session,
            "--as",
            "bob",
        )
        assert status == 0
        assert out == "rejected 1 (bash, feedback 'use ls -l') by bob\n"
        assert queue[1].feedback == "use ls -l"  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        "case", BAD_IDS, ids=["unknown", "resolved", "one-unknown-of-two", "show-unknown"]
    )
    def test_bad_ids_change_nothing(
        self,
        capsys: pytest.CaptureFixture[str],
        store_url: str,
        store: ApprovalStore,
        case: tuple[str, list[str], str],
    ) -> None:
        """An unknown or already resolved id exits 2 with one line saying so, and resolves nothing."""
        command, ids, text = case
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="bash")
        queue.submit(tool_call_id="c2", tool_name="bash")
        queue.approve(2)
        status, out, err = run(capsys, store_url, command, *ids, "--session", queue.session)
        assert (status, out) == (2, "")
        assert_one_line_error(err, text)
        assert queue.is_pending(1)

    @pytest.mark.parametrize("command", [["show"], ["approve"], ["reject"]])
    def test_an_empty_session_is_bad_input(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore, command: list[str]
    ) -> None:
        """--session "" (an unset variable, say) exits 2; it never falls back to the default session."""
        default = ApprovalQueue(store=store)
        submitted = default.submit(tool_call_id="c1", tool_name="bash")
        status, out, err = run(capsys, store_url, command[0], str(submitted), "--session", "")
        assert (status, out) == (2, "")
        assert_one_line_error(err, "session: expected 1 to 200 printable characters")
        assert default.is_pending(submitted)
        default.reject(submitted)


class _Lines:
    """What a watch prints, line by line, and a way to wait for it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.changed = threading.Condition()

    def write(self, text: str) -> int:
        with self.changed:
            self.lines.extend(line for line in text.splitlines() if line)
            self.changed.notify_all()
        return len(text)

    def flush(self) -> None:
        return

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.lines) >= count, 20), self.lines


def _watching(store_url: str, session: str, limit: int, out: _Lines, statuses: list[int]) -> threading.Thread:
    """``approvals watch --json --limit LIMIT --session SESSION`` on a thread, printing into ``out``."""

    def watch() -> None:
        from ask_permissions.cli._approvals import run_approvals
        from ask_permissions.cli._main import _parser

        argv = [
            "approvals",
            "watch",
            "--json",
            "--limit",
            str(limit),
            "--timeout",
            "30",
            "--session",
            session,
        ]
        statuses.append(run_approvals(_parser().parse_args([*argv, "--store", store_url]), out))  # type: ignore[arg-type]

    return start(watch)


class TestWatch:
    """watch prints the pending actions, then each new one as another process submits it."""

    def test_new_actions_arrive(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """An action submitted through another store object is printed as it arrives (--limit stops)."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="bash")
        printed = threading.Event()

        class Lines:
            def __init__(self) -> None:
                self.text = ""

            def write(self, text: str) -> int:
                self.text += text
                printed.set()
                return len(text)

            def flush(self) -> None:
                return

        out = Lines()
        statuses: list[int] = []

        def watch() -> None:
            from ask_permissions.cli._approvals import run_approvals
            from ask_permissions.cli._main import _parser

            options = _parser().parse_args(
                [
                    "approvals",
                    "watch",
                    "--json",
                    "--limit",
                    "2",
                    "--session",
                    queue.session,
                    "--store",
                    store_url,
                ]
            )
            statuses.append(run_approvals(options, out))  # type: ignore[arg-type]

        watcher = start(watch)
        assert printed.wait(10)
        other = open_store(store_url)
        try:
            ApprovalQueue(store=other, session=queue.session).submit(tool_call_id="c2", tool_name="deploy")
            join(watcher)
        finally:
            other.close()
        assert statuses == [0]
        assert [json.loads(line)["tool_name"] for line in out.text.splitlines()] == ["bash", "deploy"]

    def test_resolutions_are_printed(self, store_url: str, store: ApprovalStore) -> None:
        """An answer given by another process is printed as a resolved event, naming who gave it."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="bash")
        out, statuses = _Lines(), list[int]()
        watcher = _watching(store_url, queue.session, 2, out, statuses)
        out.wait_for(1)
        other = open_store(store_url)
        try:
            ApprovalQueue(store=other, session=queue.session).reject(1, feedback="no", decided_by="bob")
            join(watcher)
        finally:
            other.close()
        assert statuses == [0]
        events = [json.loads(line) for line in out.lines]
        assert [(event["event"], event["status"]) for event in events] == [
            ("submitted", "pending"),
            ("resolved", "rejected"),
        ]
        assert (events[1]["decided_by"], events[1]["feedback"]) == ("bob", "no")

    def test_a_resolution_seen_while_applying_is_printed(self, store_url: str, store: ApprovalStore) -> None:
        """An approval whose on_approve runs while watch looks (the action is "applying") is still printed
        once it is recorded."""
        session = fresh_session()
        out, statuses = _Lines(), list[int]()
        other = open_store(store_url)
        try:
            host = ApprovalQueue(store=other, session=session)

            def on_approve(action: object) -> None:
                # While this runs the action is "applying": make watch look now, and wait until it did.
                host.submit(tool_call_id="c2", tool_name="deploy")
                out.wait_for(2)

            host.on_approve = on_approve
            host.submit(tool_call_id="c1", tool_name="bash")
            watcher = _watching(store_url, session, 3, out, statuses)
            out.wait_for(1)
            host.approve(1, decided_by="ann")
            join(watcher)
        finally:
            other.close()
        assert statuses == [0]
        events = [json.loads(line) for line in out.lines]
        assert [(event["event"], event["id"], event["status"]) for event in events] == [
            ("submitted", 1, "pending"),
            ("submitted", 2, "pending"),
            ("resolved", 1, "approved"),
        ]

    def test_timeout(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """--timeout ends a watch that saw nothing, with status 0."""
        status, out, _ = run(capsys, f"sqlite:///{tmp_path / 'quiet.db'}", "watch", "--timeout", "0.1")
        assert (status, out) == (0, "")


class TestStoreOption:
    """--store names the store (or $ASK_PERMISSIONS_STORE); a bad one is bad input."""

    def test_from_the_environment(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without --store the environment variable names the store."""
        monkeypatch.setenv(STORE_ENV, f"sqlite:///{tmp_path / 'env.db'}")
        assert main(["approvals", "list"]) == 0
        assert capsys.readouterr().out == "no pending actions\n"

    @pytest.mark.parametrize(
        ("url", "text"),
        [("mysql://x", "store URL: expected sqlite:///PATH"), ("", "a store URL is needed")],
        ids=["unknown-scheme", "missing"],
    )
    def test_bad_store(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str, text: str
    ) -> None:
        """An unknown or missing store exits 2 with one line."""
        monkeypatch.delenv(STORE_ENV, raising=False)
        status, out, err = run(capsys, url, "list")
        assert (status, out) == (2, "")
        assert_one_line_error(err, text)

    def test_unreachable_database(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A PostgreSQL server that is not there exits 2 with one line, never a traceback."""
        status, _, err = run(capsys, "postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=1", "list")
        assert status == 2
        assert_one_line_error(err, "store postgresql://nobody@127.0.0.1:1/none: ")
        assert "secret" not in err

    def test_as_a_command(self, tmp_path: Path) -> None:
        """python -m ask_permissions approvals ... runs as a user types it."""
        url = f"sqlite:///{tmp_path / 'cli.db'}"
        store = open_store(url)
        try:
            ApprovalQueue(store=store).submit(tool_call_id="c1", tool_name="bash")
        finally:
            store.close()
        approved = run_cli("approvals", "approve", "1", "--store", url, "--as", "ann")
        assert (approved.returncode, approved.stdout, approved.stderr) == (
            0,
            "approved 1 (bash, scope once) by ann\n",
            "",
        )
        again = run_cli("approvals", "approve", "1", "--store", url)
        assert again.returncode == 2
        assert again.stderr == (
            "ask-permissions: error: action 1 is already approved by ann; nothing was changed\n"
        )


WHY = {
    "layer": "default",
    "rule": None,
    "source": None,
    "reason": "Tool 'Bash' requires approval",
    "suggestions": ["Bash(npm test)", "Bash(npm run *)"],
    "scopes": {"once": "runs this call once", "session": "adds Bash(npm test) to the session's allow rules"},
}


class TestEditedAnswers:
    """approve ID --arguments JSON approves one action with a person's edit; bad JSON changes nothing."""

    def test_the_edit_is_recorded(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """The edit is kept as edited_args, who approved as decided_by; the line says it was edited."""
        queue = queue_in(store)
        store.record_scopes(queue.session, {"once": "runs this call once"})  # as a policy over it does
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "rm -rf build dist"})
        status, out, err = run(
            capsys,
            store_url,
            "approve",
            "1",
            "--arguments",
            '{"command": "rm -rf build"}',
            "--as",
            "ann",
            "--session",
            queue.session,
        )
        assert (status, err) == (0, "")
        assert out == "approved 1 (Bash, scope once, edited) by ann\n"
        action = queue[1]
        assert action is not None
        assert (action.edited_args, action.decided_by) == ({"command": "rm -rf build"}, "ann")

    def test_an_edit_no_policy_said_it_runs_is_refused(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """A call no policy queued, in a session no policy spoke for (an agent of an earlier version, a host
        running the queued call itself), takes no edit: exit 2 saying why, and nothing is approved."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "rm -rf build dist"})
        edit = '{"command": "rm -rf build"}'
        status, out, err = run(
            capsys, store_url, "approve", "1", "--arguments", edit, "--as", "ann", "--session", queue.session
        )
        assert (status, out) == (2, "")
        assert_one_line_error(err, f"--arguments: action 1: no policy over session {queue.session!r} said")
        assert "the model's own arguments might run instead" in err
        assert queue.is_pending(1)

    def test_arguments_as_asked_are_no_edit(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """Arguments that say what the call says approve it unedited."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "ls"})
        status, out, _ = run(
            capsys,
            store_url,
            "approve",
            "1",
            "--arguments",
            '{"command":"ls"}',
            "--as",
            "a",
            "--session",
            queue.session,
        )
        assert (status, out) == (0, "approved 1 (Bash, scope once) by a\n")
        assert queue[1].edited_args is None  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("ids", "arguments", "text"),
        [
            (["1"], "{command: ls}", "edited arguments are not JSON: Expecting property name"),
            (["1"], '{"command": "ls"', "edited arguments are not JSON: Expecting ',' delimiter: line 1"),
            (
                ["1"],
                '["ls"]',
                "edited arguments must be a JSON object (the tool's named arguments); got list",
            ),
            (["1"], '"ls"', "must be a JSON object"),
            (["1", "2"], '{"command": "ls"}', "--arguments: edited arguments approve one action; got 2 ids"),
        ],
        ids=["not-json", "unterminated", "array", "string", "two-ids"],
    )
    def test_bad_arguments_change_nothing(
        self,
        capsys: pytest.CaptureFixture[str],
        store_url: str,
        store: ApprovalStore,
        *,
        ids: list[str],
        arguments: str,
        text: str,
    ) -> None:
        """Arguments that are not one JSON object exit 2 with the parse error; nothing is approved."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "ls"})
        queue.submit(tool_call_id="c2", tool_name="Bash", args={"command": "pwd"})
        status, out, err = run(
            capsys, store_url, "approve", *ids, "--arguments", arguments, "--session", queue.session
        )
        assert (status, out) == (2, "")
        assert_one_line_error(err, text)
        assert [action.id for action in queue.pending_actions] == [1, 2]


class TestWhoDecides:
    """--as names who decided; without it, the operating-system user does."""

    def test_the_os_user_by_default(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """A rejection without --as is recorded as the user running the command."""
        from ask_permissions.inbox._answers import default_user

        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        status, out, _ = run(capsys, store_url, "reject", "1", "--session", queue.session)
        assert status == 0
        assert out == f"rejected 1 (Bash, no feedback) by {default_user()}\n"
        assert queue[1].decided_by == default_user()  # type: ignore[union-attr]

    def test_a_name_that_is_not_printable_is_bad_input(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """--as with a control character exits 2 and resolves nothing."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        status, _, err = run(
            capsys, store_url, "approve", "1", "--as", "ann\x1b[2J", "--session", queue.session
        )
        assert status == 2
        assert_one_line_error(err, "decided_by: expected 1 to 200 printable characters")
        assert queue.is_pending(1)

    @pytest.mark.parametrize("command", ["approve", "reject", "expire"])
    @pytest.mark.parametrize("name", sorted(MACHINE_DECIDERS))
    def test_a_machine_path_s_name_is_bad_input(
        self,
        capsys: pytest.CaptureFixture[str],
        store_url: str,
        store: ApprovalStore,
        command: str,
        name: str,
    ) -> None:
        """--as a machine path's name (auto_approve, expiry, …) exits 2 and resolves nothing: the records
        would read the person's answer as no person's."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        target = ["--older-than", "0s"] if command == "expire" else ["1"]
        status, _, err = run(capsys, store_url, command, *target, "--as", name, "--session", queue.session)
        assert status == 2
        assert_one_line_error(err, f"--as: {name!r} is the name of a machine path in the records")
        assert queue.is_pending(1)


class TestSessions:
    """Without --session, show, approve and reject find the one session holding an id, or name them."""

    def test_the_one_session_holding_the_id(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """An id only one session has is found there, in any session but the default."""
        url = f"sqlite:///{tmp_path / 'one.db'}"
        store = open_store(url)
        try:
            queue = ApprovalQueue(store=store, session="agent-42")
            queue.submit(tool_call_id="c1", tool_name="Bash")
            status, out, _ = run(capsys, url, "show", "1")
            assert status == 0
            assert "session:          agent-42" in out
            status, out, _ = run(capsys, url, "approve", "1", "--as", "ann")
            assert (status, out) == (0, "approved 1 (Bash, scope once) by ann\n")
            assert queue[1].is_approved  # type: ignore[union-attr]
        finally:
            store.close()

    def test_several_sessions_are_named(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """An id several sessions hold exits 2 naming each session and its action's status."""
        url = f"sqlite:///{tmp_path / 'two.db'}"
        store = open_store(url)
        try:
            first, second = ApprovalQueue(store=store, session="a"), ApprovalQueue(store=store, session="b")
            first.submit(tool_call_id="c1", tool_name="Bash")
            second.submit(tool_call_id="c1", tool_name="Bash")
            second.approve(1)
            status, out, err = run(capsys, url, "approve", "1")
            assert (status, out) == (2, "")
            assert_one_line_error(err, "action 1 is in several sessions: 'a' (pending), 'b' (approved)")
            assert first.is_pending(1)
            status, _, err = run(capsys, url, "show", "7")
            assert status == 2
            assert_one_line_error(err, "action 7: no such action in any session of the store")
        finally:
            store.close()


class TestHonouredScopes:
    """approve --scope refuses, with exit 2 and the reason, a scope the agent's host would not honour."""

    def test_a_scope_the_call_cannot_have(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """The action's why says what its host carries out: project is refused, naming what is honoured."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "npm test"}, why=WHY)  # type: ignore[arg-type]
        status, out, err = run(
            capsys, store_url, "approve", "1", "--scope", "project", "--session", queue.session
        )
        assert (status, out) == (2, "")
        assert_one_line_error(
            err,
            "--scope project: action 1: the agent's host cannot carry out a 'project' answer for this call",
        )
        assert "it honours: once (runs this call once), session (adds Bash(npm test)" in err
        assert queue.is_pending(1)
        status, out, _ = run(
            capsys, store_url, "approve", "1", "--scope", "session", "--as", "a", "--session", queue.session
        )
        assert (status, out) == (0, "approved 1 (Bash, scope session) by a\n")

    def test_a_session_no_host_spoke_for(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """Without word from the host, only once is given: a session answer might never be honoured."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        status, _, err = run(
            capsys, store_url, "approve", "1", "--scope", "session", "--session", queue.session
        )
        assert status == 2
        assert_one_line_error(err, "said which answers its host carries out")
        assert queue.is_pending(1)


class TestShowExplains:
    """show says why a call waits: the reason the model reads, layer, rule, suggestions; never None."""

    def test_why_and_who(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """A pending action shows its reason, layer, suggestions and answers; a resolved one who and when."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "npm test"}, why=WHY)  # type: ignore[arg-type]
        _, out, _ = run(capsys, store_url, "show", "1", "--session", queue.session)
        assert "reason:           Tool 'Bash' requires approval" in out
        assert "layer:            default" in out
        assert "don't ask again would allow:\n  Bash(npm test)\n  Bash(npm run *)" in out
        assert "  session  adds Bash(npm test) to the session's allow rules" in out
        assert "None" not in out
        assert "rule:" not in out  # no rule asked: the line is left out
        queue.approve(1, arguments={"command": "npm test -- --watch=false"}, decided_by="ann")
        _, out, _ = run(capsys, store_url, "show", "1", "--session", queue.session)
        assert "decided by:       ann" in out
        assert "resolved at:" in out
        assert 'edited args (what ran):\n  {\n    "command": "npm test -- --watch=false"' in out
        assert "None" not in out


class TestHistoryAndFilters:
    """list --all adds the history (who, status), filtered by --tool and --status."""

    def test_all_with_filters(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """Pending first, then resolved newest first; --tool and --status keep only what they name."""
        queue = queue_in(store)
        for tool in ("Bash", "Edit", "Bash"):
            queue.submit(tool_call_id=f"c-{tool}", tool_name=tool)
        queue.approve(1, decided_by="ann")
        queue.reject(2, decided_by="bob")
        _, out, _ = run(capsys, store_url, "list", "--all", "--session", queue.session)
        rows = [line.split()[:6] for line in out.splitlines()[1:]]
        assert [(row[1], row[2], row[4], row[5]) for row in rows] == [
            ("3", "Bash", "pending", "-"),
            ("2", "Edit", "rejected", "bob"),
            ("1", "Bash", "approved", "ann"),
        ]
        _, out, _ = run(
            capsys, store_url, "list", "--all", "--tool", "Bash", "--json", "--session", queue.session
        )
        assert [record["id"] for record in json.loads(out)] == [3, 1]
        _, out, _ = run(
            capsys, store_url, "list", "--status", "rejected", "--json", "--session", queue.session
        )
        assert [(record["id"], record["decided_by"]) for record in json.loads(out)] == [(2, "bob")]


class TestExpire:
    """expire rejects, as expired, the actions pending longer than --older-than."""

    def test_stale_actions_expire(
        self, capsys: pytest.CaptureFixture[str], store_url: str, store: ApprovalStore
    ) -> None:
        """Only actions older than the age are rejected, with feedback expired and the person's name."""
        old = FakeClock(datetime.now(UTC) - timedelta(hours=3))
        queue = ApprovalQueue(store=store, session=fresh_session(), clock=old)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        old.advance(hours=2, minutes=59)
        queue.submit(tool_call_id="c2", tool_name="Bash")
        status, out, _ = run(
            capsys, store_url, "expire", "--older-than", "1h", "--as", "ann", "--session", queue.session
        )
        assert status == 0
        assert out == f"expired {queue.session}/1 (Bash) by ann\n"
        assert (queue[1].feedback, queue[1].decided_by) == ("expired", "ann")  # type: ignore[union-attr]
        assert queue.is_pending(2)
        _, out, _ = run(capsys, store_url, "expire", "--older-than", "1d", "--session", queue.session)
        assert out == "no pending action is that old\n"

    def test_a_bad_age_is_bad_input(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """An age that is not seconds or N[smhd] exits 2."""
        status, _, err = run(capsys, f"sqlite:///{tmp_path / 'a.db'}", "expire", "--older-than", "soon")
        assert status == 2
        assert "expected an age" in err


class TestAnswersReachTheAgent:
    """An agent in its own process, waiting on a call, records the answer given by the command, once."""

    def test_an_edit_from_the_command_is_what_the_agent_runs(self, tmp_path: Path) -> None:
        """The agent runs the edited call, never the model's, and records allow_modified by the person."""
        store_path = tmp_path / "approvals.db"
        url = f"sqlite:///{store_path}"
        agent = AgentProcess(
            store_path, "agent-1", tmp_path, [["Bash", {"command": "rm -rf build dist"}]], tmp_path
        )
        try:
            pending = agent.until("pending")
            approved = run_cli(
                "approvals",
                "approve",
                str(pending["action_id"]),
                "--store",
                url,
                "--arguments",
                '{"command": "rm -rf build"}',
                "--as",
                "ann",
            )
            assert approved.returncode == 0, approved.stderr
            agent.until("done")
        finally:
            agent.stop()
        ran = [(event["tool"], event["args"]) for event in agent.events if event["event"] == "ran"]
        assert ran == [("Bash", {"command": "rm -rf build"})]
        records = [event for event in agent.events if event["event"] == "record"]
        assert [(r["verdict"], r.get("decided_by")) for r in records] == [
            ("ask", None),
            ("allow_modified", "ann"),
        ]
        assert records[1]["edited_digest"] != records[1]["args_digest"] == records[0]["args_digest"]


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[str]:
    """The URL of a SQLite file holding one pending action, on a read-only bind mount (root mounts it)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root (CI runs as root)")
    source, view = tmp_path / "writable", tmp_path / "read-only"
    source.mkdir()
    view.mkdir()
    store = open_store(f"sqlite:///{source / 'approvals.db'}")
    try:
        ApprovalQueue(store=store, session="agent").submit(tool_call_id="c1", tool_name="bash")
    finally:
        store.close()
    bound = subprocess.run(["mount", "--bind", str(source), str(view)], capture_output=True, check=False)
    if bound.returncode != 0:
        pytest.skip(f"this machine cannot bind-mount: {bound.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True, check=True)
        yield f"sqlite:///{view / 'approvals.db'}"
    finally:
        subprocess.run(["umount", str(view)], capture_output=True, check=False)


class TestReadOnlyStore:
    """A SQLite file this user cannot write: list, show and watch read it; approve and reject say why not."""

    @pytest.mark.parametrize(
        "argv",
        [["list"], ["show", "1", "--session", "agent"], ["watch", "--limit", "1"]],
        ids=["list", "show", "watch"],
    )
    def test_reading(self, capsys: pytest.CaptureFixture[str], read_only_store: str, argv: list[str]) -> None:
        """The reading commands open it read-only and print the pending action."""
        status, out, err = run(capsys, read_only_store, *argv)
        assert (status, err) == (0, "")
        assert "bash" in out

    @pytest.mark.parametrize("argv", [["approve", "1"], ["reject", "1"]], ids=["approve", "reject"])
    def test_writing(self, capsys: pytest.CaptureFixture[str], read_only_store: str, argv: list[str]) -> None:
        """approve and reject exit 2 saying the store can only be read; the action stays pending."""
        status, out, err = run(capsys, read_only_store, *argv, "--session", "agent")
        assert (status, out) == (2, "")
        assert_one_line_error(err, f"{argv[0]} needs to write to the store, which this user can only read")
        status, out, _ = run(capsys, read_only_store, "show", "1", "--session", "agent", "--json")
        assert (status, json.loads(out)["status"]) == (0, "pending")
