"""PermissionProxy and ``ask-permissions mcp-proxy``: a real upstream MCP server and real client sessions."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")  # a guard only: the test extra installs the MCP SDK, so CI runs these

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.memory import create_client_server_memory_streams

import ask_permissions
from ask_permissions import ApprovalPolicy, ApprovalQueue, PermissionRules, load_policy
from ask_permissions.integrations.mcp_proxy import AuditLog, PermissionProxy, policy_tool_name

from .mcp_upstream import TOOLS, Upstream
from .scenarios import POLICY_FILE, host_policy

UPSTREAM_SCRIPT = Path(__file__).with_name("mcp_upstream.py")
PACKAGE_PARENT = str(Path(ask_permissions.__file__).resolve().parent.parent)

Answer = str  # "accept", "decline" or "cancel"; "error" fails the elicitation request


def _answering(answers: list[Answer], asked: list[str]) -> Any:
    """An elicitation callback giving ``answers`` in order and noting each message it was shown."""

    async def elicit(context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        answer = answers.pop(0)
        if answer == "error":
            return types.ErrorData(code=-32603, message="the person's window was closed")
        return types.ElicitResult(action=answer, content={})  # type: ignore[arg-type]

    return elicit


@asynccontextmanager
async def proxied(
    upstream_server: Any,
    proxy_for: Callable[[ClientSession], PermissionProxy],
    *,
    answers: list[Answer] | None = None,
) -> AsyncIterator[tuple[ClientSession, list[str]]]:
    """A client session to a proxy in this process, in front of ``upstream_server`` in this process.

    With ``answers`` the client declares elicitation and answers each request with the next one; the
    messages it was shown are collected in the list yielded with the session.
    """
    asked: list[str] = []
    elicit = None if answers is None else _answering(answers, asked)
    options = upstream_server.create_initialization_options()
    async with anyio.create_task_group() as tasks:
        async with create_client_server_memory_streams() as (upstream_streams, served_streams):
            tasks.start_soon(upstream_server.run, *served_streams, options)
            async with ClientSession(*upstream_streams) as upstream:
                await upstream.initialize()
                proxy = proxy_for(upstream)
                async with create_client_server_memory_streams() as (client_streams, proxy_streams):
                    tasks.start_soon(proxy.run, *proxy_streams)
                    async with ClientSession(*client_streams, elicitation_callback=elicit) as client:
                        await client.initialize()
                        yield client, asked
        tasks.cancel_scope.cancel()


class Harness:
    """An upstream, a policy and a proxy, run through a client session per scenario."""

    def __init__(self, policy: ApprovalPolicy | None = None, *, server_name: str | None = None) -> None:
        self.upstream = Upstream()
        self.queue, self.grants, default_policy = host_policy()
        self.policy = policy or default_policy
        self.server_name = server_name
        self.audit: AuditLog | None = None

    def run(
        self, scenario: Callable[[ClientSession], Any], *, answers: list[Answer] | None = None
    ) -> list[str]:
        """Run ``scenario(client)``; return the elicitation messages the client was shown."""

        def proxy_for(upstream: ClientSession) -> PermissionProxy:
            return PermissionProxy(self.policy, upstream, server_name=self.server_name, audit=self.audit)

        async def main() -> list[str]:
            async with proxied(self.upstream.server(), proxy_for, answers=answers) as (client, asked):
                await scenario(client)
            return asked

        return asyncio.run(main())


def _text(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def _is_error(result: types.CallToolResult) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


class TestList:
    """The proxy lists the upstream's tools unchanged."""

    def test_tools_are_listed_as_the_upstream_lists_them(self) -> None:
        """Names, descriptions and input schemas pass through, also with --name."""
        listed: list[Any] = []

        async def scenario(client: ClientSession) -> None:
            listed.extend((await client.list_tools()).tools)

        Harness(server_name="files").run(scenario)
        assert [tool.model_dump() for tool in listed] == [tool.model_dump() for tool in TOOLS]


class TestCalls:
    """Each tools/call is decided by the policy before it reaches the upstream."""

    def test_allowed_call_is_forwarded_unchanged(self) -> None:
        """An allow rule forwards the call; the upstream's result comes back as it was."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            results.append(await client.call_tool("read_file", {"path": "notes.txt"}))

        harness.run(scenario)
        (result,) = results
        assert not _is_error(result)
        assert _text(result) == 'read_file ran with {"path": "notes.txt"}'
        assert harness.upstream.ran == [("read_file", {"path": "notes.txt"})]

    def test_denied_call_is_answered_with_the_reason(self) -> None:
        """A deny rule never reaches the upstream; the client gets an error result with the reason."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            results.append(await client.call_tool("delete_user", {"name": "bob"}))

        harness.run(scenario)
        (result,) = results
        assert _is_error(result)
        assert _text(result) == "Denied by permission rules: 'delete_user'"
        assert harness.upstream.ran == []


class TestElicitation:
    """A call that needs a person asks through elicitation when the client supports it."""

    def test_accepted_ask_is_approved_once_and_forwarded(self) -> None:
        """accept approves the queued action once; the call is forwarded; the next one asks again."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            results.append(await client.call_tool("bash", {"command": "ls"}))
            results.append(await client.call_tool("bash", {"command": "ls"}))

        asked = harness.run(scenario, answers=["accept", "decline"])
        assert asked[0] == (
            "Tool 'bash' requires approval: bash {'command': 'ls'}. "
            "Accept to allow this call once; decline to reject it."
        )
        assert len(asked) == 2
        assert _text(results[0]) == 'bash ran with {"command": "ls"}'
        assert harness.upstream.ran == [("bash", {"command": "ls"})]
        first, second = harness.queue[1], harness.queue[2]
        assert first is not None
        assert first.is_approved
        assert first.resolution_scope == "once"
        assert second is not None
        assert second.is_rejected

    @pytest.mark.parametrize("answer", ["decline", "cancel"])
    def test_declined_ask_is_rejected(self, answer: Answer) -> None:
        """decline (or cancel) rejects the queued action; the upstream is never called."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            results.append(await client.call_tool("bash", {"command": "rm -rf /"}))

        harness.run(scenario, answers=[answer])
        (result,) = results
        assert _is_error(result)
        assert _text(result) == "The call to 'bash' was rejected"
        assert harness.upstream.ran == []
        action = harness.queue[1]
        assert action is not None
        assert action.is_rejected

    def test_a_client_that_fails_to_answer_leaves_the_call_pending(self) -> None:
        """An elicitation that errors approves and rejects nothing: the error result names the action."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            results.append(await client.call_tool("bash", {"command": "ls"}))

        assert len(harness.run(scenario, answers=["error"])) == 1
        assert "action 1 waits for a person's approval" in _text(results[0])
        assert harness.queue.is_pending(1)
        assert harness.upstream.ran == []


class TestWithoutElicitation:
    """A client that cannot be asked gets an error result naming the pending action."""

    def test_ask_names_the_pending_action_and_a_retry_waits_for_it(self) -> None:
        """The error names action 1; the same call again waits for that action, queuing nothing new."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            results.append(await client.call_tool("bash", {"command": "ls"}))
            results.append(await client.call_tool("bash", {"command": "ls"}))

        harness.run(scenario)
        expected = (
            "Tool 'bash' requires approval: action 1 waits for a person's approval; "
            "make the same call again once it is approved"
        )
        assert [(_is_error(result), _text(result)) for result in results] == [(True, expected)] * 2
        assert harness.upstream.ran == []
        assert [action.id for action in harness.queue.pending_actions] == [1]
        assert harness.queue.snapshot()["next_id"] == 1

    def test_a_retry_after_approval_is_forwarded_once(self) -> None:
        """Once a person approves the pending action, the same call is forwarded, and only once."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            await client.call_tool("bash", {"command": "ls"})
            harness.policy.approve(1)
            results.append(await client.call_tool("bash", {"command": "ls"}))
            results.append(await client.call_tool("bash", {"command": "ls"}))

        harness.run(scenario)
        assert _text(results[0]) == 'bash ran with {"command": "ls"}'
        assert _text(results[1]).startswith("Tool 'bash' requires approval: action 2 waits")
        assert harness.upstream.ran == [("bash", {"command": "ls"})]

    def test_a_retry_after_an_edited_approval_forwards_the_edit(self) -> None:
        """An approval with edited arguments forwards the edit upstream, once, and never the model's call."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            await client.call_tool("bash", {"command": "rm -rf build dist"})
            harness.policy.approve(1, arguments={"command": "rm -rf build"}, decided_by="ann")
            results.append(await client.call_tool("bash", {"command": "rm -rf build dist"}))

        harness.run(scenario)
        assert _text(results[0]) == 'bash ran with {"command": "rm -rf build"}'
        assert harness.upstream.ran == [("bash", {"command": "rm -rf build"})]

    def test_a_retry_after_rejection_gets_the_feedback(self) -> None:
        """A rejected pending action answers the retry with the rejection and the person's feedback."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            await client.call_tool("bash", {"command": "ls"})
            harness.policy.reject(1, feedback="use read_file")
            results.append(await client.call_tool("bash", {"command": "ls"}))

        harness.run(scenario)
        assert _text(results[0]) == "The call to 'bash' was rejected: use read_file"
        assert harness.upstream.ran == []

    def test_other_arguments_are_a_new_call(self) -> None:
        """An approval covers the arguments it was asked for: other arguments queue a new action."""
        harness = Harness()
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            await client.call_tool("bash", {"command": "ls"})
            harness.policy.approve(1)
            results.append(await client.call_tool("bash", {"command": "rm -rf /"}))

        harness.run(scenario)
        assert "action 2 waits" in _text(results[0])
        assert harness.upstream.ran == []


class TestDurableStore:
    """With a store, a held call waits in the database, and a person approves it from another process."""

    def test_a_person_approves_with_the_command_and_the_retry_runs(self, tmp_path: Path) -> None:
        """The error names the approvals command; after it approves the action, the same call is forwarded."""
        from ask_permissions import SqliteStore
        from ask_permissions.cli import main as command

        url = f"sqlite:///{tmp_path / 'approvals.db'}"
        policy = load_policy(
            POLICY_FILE, store=SqliteStore(str(tmp_path / "approvals.db")), session="agent-1"
        )
        harness = Harness(policy)
        hint = f"ask-permissions approvals approve {{action_id}} --store {url} --session agent-1"
        results: list[types.CallToolResult] = []

        def proxy_for(upstream: ClientSession) -> PermissionProxy:
            return PermissionProxy(policy, upstream, approve_hint=hint)

        async def main() -> None:
            async with proxied(harness.upstream.server(), proxy_for) as (client, _):
                results.append(await client.call_tool("bash", {"command": "ls"}))
                # Another process: the approvals inbox over the same database.
                status = await asyncio.to_thread(
                    command, ["approvals", "approve", "1", "--store", url, "--session", "agent-1"]
                )
                assert status == 0
                results.append(await client.call_tool("bash", {"command": "ls"}))

        asyncio.run(main())
        approve = f"ask-permissions approvals approve 1 --store {url} --session agent-1"
        assert _text(results[0]).endswith(f"(a person approves it with: {approve})")
        assert _text(results[1]) == 'bash ran with {"command": "ls"}'
        assert harness.upstream.ran == [("bash", {"command": "ls"})]

    def test_a_queue_and_a_store_are_not_both_given(self, tmp_path: Path) -> None:
        """load_policy refuses a queue and a store together."""
        from ask_permissions import SqliteStore

        with pytest.raises(ValueError, match="a queue or a store"):
            load_policy(POLICY_FILE, queue=ApprovalQueue(), store=SqliteStore(str(tmp_path / "a.db")))


class TestServerName:
    """--name decides calls as mcp__<server>__<tool>."""

    def test_calls_are_decided_under_the_prefixed_name(self) -> None:
        """A rule for mcp__files__bash decides the upstream's bash; the upstream still gets "bash"."""
        queue = ApprovalQueue()
        rules = PermissionRules().allow("mcp__files__bash").deny("bash")
        harness = Harness(ApprovalPolicy(queue=queue, rules=rules), server_name="files")
        results: list[types.CallToolResult] = []

        async def scenario(client: ClientSession) -> None:
            results.append(await client.call_tool("bash", {"command": "ls"}))

        harness.run(scenario)
        assert _text(results[0]) == 'bash ran with {"command": "ls"}'
        assert harness.upstream.ran == [("bash", {"command": "ls"})]

    @pytest.mark.parametrize(
        ("name", "expected"),
        [("bash", "bash"), ("mcp__files__bash", "mcp__files__bash")],
        ids=["plain", "odd"],
    )
    def test_policy_tool_name(self, name: str, expected: str) -> None:
        """Without a server name the upstream's name is used as it is."""
        assert policy_tool_name(name) == expected
        assert policy_tool_name(name, "gh") == f"mcp__gh__{expected}"

    @pytest.mark.parametrize(
        "server_name", ["", "my server", "a/b", "é"], ids=["empty", "space", "slash", "accent"]
    )
    def test_a_server_name_outside_the_safe_set_is_refused(self, server_name: str) -> None:
        """A server name must be letters, digits, _ or -: it becomes part of every tool name."""
        _, _, policy = host_policy()
        with pytest.raises(ValueError, match="server_name: expected letters, digits"):
            PermissionProxy(policy, None, server_name=server_name)  # type: ignore[arg-type]


class TestAudit:
    """--audit appends one JSON line per decision: the decision record plus what the proxy did."""

    def test_each_decision_is_one_line(self, tmp_path: Path) -> None:
        """Allowed, denied and asked calls each write their record with the proxy's action."""
        audit = AuditLog(tmp_path / "audit.jsonl")
        harness = Harness(load_policy(POLICY_FILE, on_decision=audit))
        harness.audit = audit

        async def scenario(client: ClientSession) -> None:
            await client.call_tool("read_file", {"path": "a"})
            await client.call_tool("delete_user", {"name": "bob"})
            await client.call_tool("bash", {"command": "ls"})
            await client.call_tool("bash", {"command": "ls"})

        harness.run(scenario, answers=["accept", "decline"])
        lines = [json.loads(line) for line in Path(audit.path).read_text().splitlines()]
        assert [(line["tool"], line["outcome"], line["layer"], line["proxy"]) for line in lines] == [
            ("read_file", "proceed", "allow_rule", {"tool": "read_file", "did": "forwarded"}),
            ("delete_user", "block", "deny_rule", {"tool": "delete_user", "did": "refused"}),
            (
                "bash",
                "pending",
                "approval_required",
                {"tool": "bash", "action_id": 1, "elicitation": "accept", "did": "forwarded"},
            ),
            (
                "bash",
                "pending",
                "approval_required",
                {"tool": "bash", "action_id": 2, "elicitation": "decline", "did": "refused"},
            ),
        ]
        assert all(len(line["args_digest"]) == 16 for line in lines)

    def test_the_line_names_who_answered(self, tmp_path: Path) -> None:
        """A held call that a person approved is forwarded, and its audit line says who approved it."""
        audit = AuditLog(tmp_path / "audit.jsonl")
        harness = Harness(load_policy(POLICY_FILE, on_decision=audit))
        harness.audit = audit

        async def scenario(client: ClientSession) -> None:
            await client.call_tool("bash", {"command": "ls"})
            harness.policy.approve(1, decided_by="ann")
            await client.call_tool("bash", {"command": "ls"})

        harness.run(scenario)
        lines = [json.loads(line) for line in Path(audit.path).read_text().splitlines()]
        assert [line["proxy"].get("decided_by") for line in lines] == [None, "ann"]
        assert lines[1]["proxy"]["did"] == "forwarded"


class TestSubprocess:
    """``ask-permissions mcp-proxy`` as a real subprocess over stdio, in front of a real upstream process."""

    def test_the_command_over_stdio(self, tmp_path: Path) -> None:
        """List, allowed, denied, ask accepted and declined through elicitation, and ask without it."""
        record = tmp_path / "ran.jsonl"
        audit = tmp_path / "audit.jsonl"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_PARENT, os.environ.get("PYTHONPATH")])),
        }
        command = [
            "-m",
            "ask_permissions",
            "mcp-proxy",
            "--policy",
            str(POLICY_FILE),
            "--audit",
            str(audit),
            "--",
            sys.executable,
            str(UPSTREAM_SCRIPT),
            str(record),
        ]
        params = StdioServerParameters(command=sys.executable, args=command, env=env)
        seen: dict[str, Any] = {}

        async def with_elicitation() -> None:
            asked: list[str] = []
            callback = _answering(["accept", "decline"], asked)
            async with (
                stdio_client(params) as streams,
                ClientSession(*streams, elicitation_callback=callback) as client,
            ):
                await client.initialize()
                seen["tools"] = [tool.name for tool in (await client.list_tools()).tools]
                seen["allowed"] = await client.call_tool("read_file", {"path": "notes.txt"})
                seen["denied"] = await client.call_tool("delete_user", {"name": "bob"})
                seen["accepted"] = await client.call_tool("bash", {"command": "ls"})
                seen["declined"] = await client.call_tool("bash", {"command": "rm -rf /"})
            seen["asked"] = len(asked)

        async def without_elicitation() -> None:
            async with stdio_client(params) as streams, ClientSession(*streams) as client:
                await client.initialize()
                seen["held"] = await client.call_tool("bash", {"command": "pwd"})

        async def both() -> None:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tasks:  # two proxies at once: half the waiting
                    tasks.start_soon(with_elicitation)
                    tasks.start_soon(without_elicitation)

        asyncio.run(both())
        assert seen["tools"] == [tool.name for tool in TOOLS]
        assert _text(seen["allowed"]) == 'read_file ran with {"path": "notes.txt"}'
        assert (_is_error(seen["denied"]), _text(seen["denied"])) == (
            True,
            "Denied by permission rules: 'delete_user'",
        )
        assert _text(seen["accepted"]) == 'bash ran with {"command": "ls"}'
        assert (_is_error(seen["declined"]), _text(seen["declined"])) == (
            True,
            "The call to 'bash' was rejected",
        )
        assert seen["asked"] == 2
        assert _is_error(seen["held"])
        assert "action 1 waits for a person's approval" in _text(seen["held"])
        ran = [json.loads(line) for line in record.read_text().splitlines()]
        assert sorted(ran) == [["bash", {"command": "ls"}], ["read_file", {"path": "notes.txt"}]]
        assert len(audit.read_text().splitlines()) == 5


PROXY = ["mcp-proxy", "--policy", str(POLICY_FILE)]

# Command lines the subcommand refuses, and what its one error line says.
BAD_COMMAND_LINES = [
    pytest.param(PROXY, "expected the upstream server's command after --", id="no-command"),
    pytest.param([*PROXY, "--"], "expected the upstream server's command after --", id="empty-command"),
    pytest.param([*PROXY, "--name", "a b", "--", "true"], "server_name: expected", id="bad-name"),
    pytest.param(
        [*PROXY, "--", "/nonexistent/upstream"],
        "the upstream server '/nonexistent/upstream' failed: No such file or directory",
        id="missing-upstream",
    ),
    pytest.param(
        [*PROXY, "--", sys.executable, "-c", "pass"],
        f"the upstream server {sys.executable!r} failed: ",
        id="upstream-exits",
    ),
]


class TestCommandLine:
    """The subcommand's bad input: one error line and exit status 2, no traceback."""

    @pytest.mark.parametrize(("argv", "message"), BAD_COMMAND_LINES)
    def test_bad_input(self, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
        """No upstream command, a bad --name or an upstream that cannot serve: one line, status 2."""
        from ask_permissions.cli._main import main

        assert main(argv) == 2
        error = capsys.readouterr().err
        assert error.startswith("ask-permissions: error: ")
        assert message in error
        assert len(error.splitlines()) == 1
