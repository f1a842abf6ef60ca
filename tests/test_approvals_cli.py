"""ask-permissions approvals: the inbox over a store — list, show, approve, reject and watch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ask_permissions import ApprovalQueue, ApprovalStore, open_store
from ask_permissions.cli._approvals import STORE_ENV
from ask_permissions.cli._main import main

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
        """Oldest first, with the tool, the submission time, the arguments and the message."""
        queue = queue_in(store)
        queue.submit(tool_call_id="c1", tool_name="bash", args={"command": "ls"}, message="needs eyes")
        queue.submit(tool_call_id="c2", tool_name="write")
        queue.approve(2)
        status, out, err = run(capsys, store_url, "list", "--session", queue.session)
        lines = out.splitlines()
        assert (status, err) == (0, "")
        assert lines[0].split() == ["SESSION", "ID", "TOOL", "SUBMITTED", "ARGS", "MESSAGE"]
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
            "submitted_at": None,
            "resolution_scope": None,
            "feedback": None,
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
        queue.submit(tool_call_id="c1", tool_name="bash")
        queue.submit(tool_call_id="c2", tool_name="bash")
        status, out, err = run(
            capsys, store_url, "approve", "1", "2", "--scope", "session", "--session", queue.session
        )
        assert (status, err) == (0, "")
        assert out.splitlines() == ["approved 1 (bash, scope session)", "approved 2 (bash, scope session)"]
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
            capsys, store_url, "reject", "1", "--feedback", "use ls -l", "--session", queue.session
        )
        assert status == 0
        assert out == "rejected 1 (bash, feedback 'use ls -l')\n"
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
        approved = run_cli("approvals", "approve", "1", "--store", url)
        assert (approved.returncode, approved.stdout, approved.stderr) == (
            0,
            "approved 1 (bash, scope once)\n",
            "",
        )
        again = run_cli("approvals", "approve", "1", "--store", url)
        assert again.returncode == 2
        assert again.stderr == "ask-permissions: error: action 1 is already approved; nothing was changed\n"


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
