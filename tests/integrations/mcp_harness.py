"""How the proxy's tests run it: a real upstream MCP server and real client sessions, in this process or as
``ask-permissions mcp-proxy`` and ``mcp_upstream.py`` subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.server.lowlevel import NotificationOptions
from mcp.shared.memory import create_client_server_memory_streams

import ask_permissions
from ask_permissions import ApprovalPolicy
from ask_permissions.integrations.mcp_proxy import AuditLog, PermissionProxy

from .mcp_upstream import Upstream
from .scenarios import host_policy

__all__ = [
    "Answer",
    "Harness",
    "ProxyCommand",
    "answering",
    "is_error",
    "proxied",
    "text",
]

UPSTREAM_SCRIPT = Path(__file__).with_name("mcp_upstream.py")
PACKAGE_PARENT = str(Path(ask_permissions.__file__).resolve().parent.parent)

Answer = str  # "accept", "decline" or "cancel"; "error" fails the elicitation request


def answering(answers: list[Answer], asked: list[str]) -> Any:
    """An elicitation callback giving ``answers`` in order and noting each message it was shown."""

    async def elicit(context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        asked.append(params.message)
        answer = answers.pop(0)
        if answer == "error":
            return types.ErrorData(code=-32603, message="the person's window was closed")
        return types.ElicitResult(action=answer, content={})  # type: ignore[arg-type]

    return elicit


class Notes:
    """What the client was told besides results: log messages and tools/list_changed notifications."""

    def __init__(self) -> None:
        self.logged: list[str] = []
        self.list_changed = 0
        self.changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        notification = getattr(message, "root", message)
        method = getattr(notification, "method", None)
        if method == "notifications/tools/list_changed":
            self.list_changed += 1
            self.changed.set()
        elif method == "notifications/message":
            self.logged.append(str(notification.params.data))


@asynccontextmanager
async def proxied(
    upstream_server: Any,
    proxy_for: Callable[[ClientSession], PermissionProxy],
    *,
    answers: list[Answer] | None = None,
    notes: Notes | None = None,
    elicit: Any = None,
) -> AsyncIterator[tuple[ClientSession, list[str]]]:
    """A client session to a proxy in this process, in front of ``upstream_server`` in this process.

    With ``answers`` the client declares elicitation and answers each request with the next one; the
    messages it was shown are collected in the list yielded with the session (``elicit``, an elicitation
    callback, answers instead). The upstream session relays its notifications to the proxy, as
    ``run_stdio_proxy`` does; ``notes`` collects the client's.
    """
    asked: list[str] = []
    if elicit is None and answers is not None:
        elicit = answering(answers, asked)
    options = upstream_server.create_initialization_options(NotificationOptions(tools_changed=True))
    proxies: list[PermissionProxy] = []

    async def relay(message: Any) -> None:
        if proxies:
            await proxies[0].upstream_message(message)

    async with anyio.create_task_group() as tasks:
        async with create_client_server_memory_streams() as (upstream_streams, served_streams):
            tasks.start_soon(upstream_server.run, *served_streams, options)
            async with ClientSession(*upstream_streams, message_handler=relay) as upstream:
                await upstream.initialize()
                proxy = proxy_for(upstream)
                proxies.append(proxy)
                async with create_client_server_memory_streams() as (client_streams, proxy_streams):
                    tasks.start_soon(proxy.run, *proxy_streams)
                    async with ClientSession(
                        *client_streams, elicitation_callback=elicit, message_handler=notes
                    ) as client:
                        await client.initialize()
                        yield client, asked
        tasks.cancel_scope.cancel()


class Harness:
    """An upstream, a policy and a proxy, run through a client session per scenario.

    ``upstream`` takes ``Upstream``'s keyword arguments; ``proxy`` takes ``PermissionProxy``'s.
    """

    def __init__(
        self,
        policy: ApprovalPolicy | None = None,
        *,
        server_name: str | None = None,
        upstream: dict[str, Any] | None = None,
        **proxy: Any,
    ) -> None:
        self.upstream = Upstream(**(upstream or {}))
        self.queue, self.grants, default_policy = host_policy()
        self.policy = policy or default_policy
        self.server_name = server_name
        self.audit: AuditLog | None = proxy.pop("audit", None)
        self.options = proxy
        self.notes = Notes()
        self.proxy: PermissionProxy | None = None

    def run(
        self,
        scenario: Callable[[ClientSession], Any],
        *,
        answers: list[Answer] | None = None,
        elicit: Any = None,
    ) -> list[str]:
        """Run ``scenario(client)``; return the elicitation messages the client was shown (``answers``'
        ones: an ``elicit`` callback keeps its own)."""

        def proxy_for(upstream: ClientSession) -> PermissionProxy:
            self.proxy = PermissionProxy(
                self.policy, upstream, server_name=self.server_name, audit=self.audit, **self.options
            )
            return self.proxy

        async def main() -> list[str]:
            with anyio.fail_after(30):
                async with proxied(
                    self.upstream.server(), proxy_for, answers=answers, notes=self.notes, elicit=elicit
                ) as (client, asked):
                    await scenario(client)
            return asked

        return asyncio.run(main())


def text(result: types.CallToolResult) -> str:
    """The one text content of a result."""
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def is_error(result: types.CallToolResult) -> bool:
    """Whether the result is an error result."""
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


class ProxyCommand:
    """``ask-permissions mcp-proxy`` as a subprocess, in front of ``mcp_upstream.py`` as a subprocess.

    Everything lands in ``folder``: the calls that really ran upstream (``ran``), the proxy's standard
    error (``stderr``), and the upstream's spec (``Upstream``'s keyword arguments, as JSON).
    """

    def __init__(
        self,
        folder: Path,
        policy: Path,
        options: Sequence[str] = (),
        *,
        upstream: dict[str, Any] | None = None,
    ) -> None:
        self.folder = folder
        self.record = folder / "ran.jsonl"
        self.errors = folder / "stderr.txt"
        upstream_command = [sys.executable, str(UPSTREAM_SCRIPT), str(self.record)]
        if upstream is not None:
            spec = folder / "upstream.json"
            spec.write_text(json.dumps(upstream), encoding="utf-8")
            upstream_command.append(str(spec))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_PARENT, os.environ.get("PYTHONPATH")])),
        }
        arguments = ["-m", "ask_permissions", "mcp-proxy", "--policy", str(policy), *options]
        self.params = StdioServerParameters(
            command=sys.executable, args=[*arguments, "--", *upstream_command], env=env, cwd=str(folder)
        )

    @asynccontextmanager
    async def client(
        self, answers: list[Answer] | None = None, notes: Notes | None = None
    ) -> AsyncIterator[tuple[ClientSession, list[str]]]:
        """A client session to the proxy; with ``answers``, it declares elicitation and answers so."""
        asked: list[str] = []
        elicit = None if answers is None else answering(answers, asked)
        with self.errors.open("a", encoding="utf-8") as errlog:
            async with (
                stdio_client(self.params, errlog=errlog) as streams,
                ClientSession(*streams, elicitation_callback=elicit, message_handler=notes) as client,
            ):
                await client.initialize()
                yield client, asked

    def run(
        self, scenario: Callable[[ClientSession], Any], *, answers: list[Answer] | None = None
    ) -> list[str]:
        """Run ``scenario(client)`` against one proxy process; return the messages the person was shown."""

        async def main() -> list[str]:
            with anyio.fail_after(60):
                async with self.client(answers) as (client, asked):
                    await scenario(client)
            return asked

        return asyncio.run(main())

    @property
    def ran(self) -> list[list[Any]]:
        """The calls that really ran upstream: ``[name, arguments]`` each."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines()]

    @property
    def stderr(self) -> str:
        """What the proxy (and the upstream) wrote to standard error."""
        return self.errors.read_text(encoding="utf-8") if self.errors.exists() else ""
