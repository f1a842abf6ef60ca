"""A permission-gating MCP proxy: an MCP server in front of an upstream MCP server, deciding each tool call.

``PermissionProxy(policy, upstream)`` serves ``tools/list`` and ``tools/call`` for a connected upstream
``ClientSession``. The tools are listed as the upstream lists them; each call is decided by the policy under
the upstream's tool name, or ``mcp__<server>__<tool>`` with ``server_name``:

- ``proceed``: the call is forwarded and the upstream's result returned unchanged.
- ``block``: the call is not forwarded; the client gets an error result (``isError``) with the reason.
- ``pending``: when the client declared elicitation and the connection can carry a request from server to
  client, the person is asked (``elicitation/create``): accept approves the action once, decline or cancel
  rejects it. Otherwise the client gets an error result naming the pending action id; the same call made
  again once the action is approved is forwarded (once), and a rejected one gets the rejection.

``run_stdio_proxy(policy, command)`` starts the upstream server ``command`` over stdio and serves the proxy
on this process's stdin/stdout: what ``ask-permissions mcp-proxy`` runs. ``AuditLog(path)`` appends one JSON
line per decision. Needs ``pip install 'ask-permissions[mcp]'`` (``mcp`` 1.10 or later, where elicitation
arrived; the 1.x and 2.x server APIs both work).
"""

from __future__ import annotations

import inspect
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeAlias, final

try:
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.mcp_proxy needs the MCP SDK 1.10 or later: "
        "pip install 'ask-permissions[mcp]'"
    ) from error

from ask_permissions._errors import preview
from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._arguments import same_arguments
from ask_permissions.policy._digest import args_digest
from ask_permissions.policy._outcome import Outcome
from ask_permissions.policy._results import pending, pending_reason

from ._common import ProjectGrantHook, require_hook, require_policy

if TYPE_CHECKING:
    from ask_permissions.policy._records import DecisionRecord
    from ask_permissions.typing import HookResult, PolicyLike

__all__ = ["AuditLog", "PermissionProxy", "policy_tool_name", "run_stdio_proxy"]

SERVER_NAME: Final = "ask-permissions-mcp-proxy"

ElicitationAnswer: TypeAlias = Literal["accept", "decline", "cancel"]
"""A person's answer to an elicitation: accept, decline, or cancel (dismissed without choosing)."""

# Asks the person through the client: their answer, or None when the client did not answer.
_Ask: TypeAlias = "Callable[[str], Awaitable[ElicitationAnswer | None]]"

# mcp 2 registers handlers through the Server constructor; mcp 1 through its request_handlers table.
_HANDLERS_IN_CONSTRUCTOR: Final = "on_call_tool" in inspect.signature(Server.__init__).parameters
_LIST_TOOLS_TAKES_PARAMS: Final = "params" in inspect.signature(ClientSession.list_tools).parameters

# The confirmation asks for nothing but the person's choice: accept, decline or cancel.
_APPROVAL_SCHEMA: Final[dict[str, Any]] = {"type": "object", "properties": {}}

# Enough for every call a client can still retry; older ones fall out (a retry is then decided afresh).
_HELD_MEMORY: Final = 4096


def policy_tool_name(tool: str, server_name: str | None = None) -> str:
    """The name the policy decides a tool call under: the upstream's, or ``mcp__<server>__<tool>``."""
    return tool if server_name is None else f"mcp__{server_name}__{tool}"


@final
class AuditLog:
    """Appends one JSON line per decision to a file: the ``DecisionRecord`` plus what the proxy did.

    Give it to the policy as ``on_decision`` and to the proxy as ``audit``: the proxy pairs each record
    with its own action (``"forwarded"``, ``"refused"`` or ``"held"``, the elicitation's answer, the
    action id) under the ``"proxy"`` key. The file is opened for each line, so it can be rotated.

    Thread-safe: a private lock guards the last record and the writes.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._lock = threading.Lock()
        self._last: DecisionRecord | None = None

    @property
    def path(self) -> str:
        """The file the lines are appended to."""
        return self._path

    def __repr__(self) -> str:
        return f"<AuditLog path={self._path!r}>"

    def __call__(self, record: DecisionRecord) -> None:
        """Note a policy decision (the policy's ``on_decision``); the proxy writes it with its action."""
        with self._lock:
            self._last = record

    def take(self) -> DecisionRecord | None:
        """The decision noted last, once."""
        with self._lock:
            record, self._last = self._last, None
        return record

    def write(self, record: DecisionRecord | None, proxy: dict[str, Any]) -> None:
        """Append ``record.to_dict()`` with ``proxy`` under the ``"proxy"`` key, as one line."""
        line = {**(record.to_dict() if record is not None else {}), "proxy": proxy}
        text = json.dumps(line, ensure_ascii=False, default=str) + "\n"
        with self._lock, open(self._path, "a", encoding="utf-8") as file:
            file.write(text)


class _Held(NamedTuple):
    """A call answered with "pending": retried with the same arguments, it gets that action's verdict."""

    action_id: int
    arguments: Any
    record: DecisionRecord | None


@final
class PermissionProxy:
    """Serves an upstream MCP server's tools through an ``ApprovalPolicy``.

    Args:
        policy: decides each call; its queue holds the calls waiting for a person.
        upstream: an initialized ``ClientSession`` connected to the upstream server.
        server_name: decide calls as ``mcp__<server_name>__<tool>`` instead of the upstream's tool names.
        audit: an ``AuditLog`` that is also the policy's ``on_decision``.
        on_project_grant: called with an approved action whose scope is ``"project"`` (the policy's own
            hook otherwise).
        approve_hint: how a person approves a held call, with ``{action_id}`` in it (``"ask-permissions
            approvals approve {action_id} --store URL"``, say); the held call's error result ends with it.

    Raises:
        TypeError: ``policy`` is not a policy, ``on_project_grant`` is not callable, ``server_name`` is
            not a string, or ``approve_hint`` is not a string or None.
        ValueError: ``server_name`` is empty or holds characters other than letters, digits, ``_`` and
            ``-``.

    Thread-safe as far as the policy and queue are; the calls it holds are kept under a lock.
    """

    def __init__(
        self,
        policy: PolicyLike,
        upstream: ClientSession,
        *,
        server_name: str | None = None,
        audit: AuditLog | None = None,
        on_project_grant: ProjectGrantHook | None = None,
        approve_hint: str | None = None,
    ) -> None:
        _check_server_name(server_name)
        if approve_hint is not None and not isinstance(approve_hint, str):
            raise TypeError(f"approve_hint: expected a string or None; got {preview(approve_hint)}")
        self._approve_hint = approve_hint
        self._policy = require_policy(policy, "PermissionProxy")
        self._on_project_grant = require_hook(on_project_grant, "PermissionProxy")
        self._upstream = upstream
        self._server_name = server_name
        self._audit = audit
        self._lock = threading.Lock()
        self._held: OrderedDict[tuple[str, str], _Held] = OrderedDict()

    @property
    def policy(self) -> PolicyLike:
        """The policy that decides each call."""
        return self._policy

    def __repr__(self) -> str:
        return f"<PermissionProxy server_name={self._server_name!r} policy={self._policy!r}>"

    async def list_tools(self, cursor: str | None = None) -> types.ListToolsResult:
        """The upstream's tool list (one page of it), unchanged."""
        if cursor is None:
            return await self._upstream.list_tools()
        upstream: Any = self._upstream  # the 1.x and 2.x signatures differ
        if _LIST_TOOLS_TAKES_PARAMS:
            return await upstream.list_tools(params=types.PaginatedRequestParams(cursor=cursor))  # type: ignore[no-any-return]
        return await upstream.list_tools(cursor)  # type: ignore[no-any-return]

    async def call_tool(
        self, tool: str, arguments: dict[str, Any] | None, ask: _Ask | None = None
    ) -> types.CallToolResult:
        """Decide a call, ask a person through ``ask`` if it waits, and forward it or answer with an error.

        ``ask`` asks the person with a message and returns their answer (``None`` when the client did not
        answer); without it, or without an answer, a call that waits is answered with an error result naming
        its pending action.
        """
        name = policy_tool_name(tool, self._server_name)
        decided_arguments: Any = {} if arguments is None else arguments
        result, record = self._decide(name, decided_arguments)
        outcome = self._read(result)
        report: dict[str, Any] = {"tool": tool}
        if outcome.waits and outcome.action is not None:
            action = outcome.action
            report["action_id"] = action.id
            if ask is not None:
                answer = await ask(
                    f"{outcome.reason or pending_reason(name)}: {name} {preview(decided_arguments)}. "
                    "Accept to allow this call once; decline to reject it."
                )
                report["elicitation"] = answer or "failed"
                if answer == "accept":
                    self._policy.approve(action.id)
                elif answer is not None:
                    self._policy.reject(action.id)
                outcome = self._read(result)
        if outcome.waits and outcome.action is not None:
            self._hold(name, decided_arguments, outcome.action.id, record)
            report["did"] = "held"
            text = (
                f"{outcome.reason or pending_reason(name)}: action {outcome.action.id} waits for a person's "
                "approval; make the same call again once it is approved"
            )
            if self._approve_hint is not None:
                text += (
                    f" (a person approves it with: {self._approve_hint.format(action_id=outcome.action.id)})"
                )
            return self._answer(record, report, _error(text))
        self._release(name, decided_arguments)
        if outcome.action is not None and outcome.action.decided_by is not None:
            report["decided_by"] = outcome.action.decided_by  # who answered, in the audit line
        if not outcome.runs:
            report["did"] = "refused"
            return self._answer(record, report, _error(outcome.reason or pending_reason(name)))
        report["did"] = "forwarded"
        if outcome.modified:  # a person's edit (or a check's rewrite) is what runs
            arguments = outcome.arguments
            report["edited"] = True
        try:
            forwarded = await self._upstream.call_tool(tool, arguments)
        except Exception:
            report["upstream"] = "error"
            self._answer(record, report, None)
            raise
        return self._answer(record, report, forwarded)

    def server(self) -> Server[Any]:
        """A low-level MCP ``Server`` answering ``tools/list`` and ``tools/call`` through this proxy."""
        if _HANDLERS_IN_CONSTRUCTOR:
            return _modern_server(self)
        return _classic_server(self)

    async def run(self, read_stream: Any, write_stream: Any) -> None:
        """Serve the proxy on a connection's streams until the client goes away."""
        server = self.server()
        await server.run(read_stream, write_stream, server.create_initialization_options())

    # -- decisions -----------------------------------------------------------------------------------

    def _decide(self, name: str, arguments: Any) -> tuple[HookResult, DecisionRecord | None]:
        """The held action of a retried call, else the policy's decision (and its record)."""
        key = (name, args_digest(arguments))
        with self._lock:
            held = self._held.get(key)
        if (
            held is not None
            and same_arguments(held.arguments, arguments)
            and self._policy.lookup(held.action_id) is not None
        ):
            return pending(held.action_id, pending_reason(name)), held.record
        result = self._policy.before_tool_call(ToolCall(name, arguments))
        return result, None if self._audit is None else self._audit.take()

    def _hold(self, name: str, arguments: Any, action_id: int, record: DecisionRecord | None) -> None:
        key = (name, args_digest(arguments))
        with self._lock:
            self._held[key] = _Held(action_id, arguments, record)
            self._held.move_to_end(key)
            if len(self._held) > _HELD_MEMORY:
                self._held.popitem(last=False)

    def _release(self, name: str, arguments: Any) -> None:
        """Forget a held call once it got its verdict: an approval counts for one call."""
        key = (name, args_digest(arguments))
        with self._lock:
            held = self._held.get(key)
            if held is not None and same_arguments(held.arguments, arguments):
                del self._held[key]

    def _answer(
        self, record: DecisionRecord | None, report: dict[str, Any], result: types.CallToolResult | None
    ) -> types.CallToolResult:
        if self._audit is not None:
            self._audit.write(record, report)
        return result  # type: ignore[return-value]  # None only on the re-raising path

    def _read(self, result: HookResult) -> Outcome:
        return self._policy.outcome(result, on_project_grant=self._on_project_grant)


def _check_server_name(server_name: object) -> None:
    if server_name is None:
        return
    if not isinstance(server_name, str):
        raise TypeError(f"server_name: expected a string or None; got {preview(server_name)}")
    if not server_name or not all(
        char.isascii() and (char.isalnum() or char in "_-") for char in server_name
    ):
        raise ValueError(
            "server_name: expected letters, digits, '_' or '-' (it becomes mcp__<server>__<tool>); "
            f"got {preview(server_name)}"
        )


def _error(text: str) -> types.CallToolResult:
    # Built from the wire form: the field names differ between the 1.x and 2.x types.
    return types.CallToolResult.model_validate({"content": [{"type": "text", "text": text}], "isError": True})


def _answer_of(result: Any) -> ElicitationAnswer:
    action = getattr(result, "action", None)
    return action if action in ("accept", "decline") else "cancel"


def _classic_server(proxy: PermissionProxy) -> Server[Any]:
    """mcp 1.x: handlers in the server's request table, taking the request and returning a ServerResult."""
    server: Any = Server(SERVER_NAME)
    classic: Any = types  # the 1.x types, where ServerResult wraps each result

    async def list_tools(request: Any) -> Any:
        cursor = request.params.cursor if request.params is not None else None
        return classic.ServerResult(await proxy.list_tools(cursor))

    async def call_tool(request: Any) -> Any:
        context = server.request_context
        session = context.session
        params = session.client_params
        ask: _Ask | None = None
        if params is not None and params.capabilities.elicitation is not None:

            async def ask(message: str) -> ElicitationAnswer | None:
                try:
                    result = await session.elicit(message, _APPROVAL_SCHEMA, context.request_id)
                except Exception:  # no answer: the call stays pending, as without elicitation
                    return None
                return _answer_of(result)

        result = await proxy.call_tool(request.params.name, request.params.arguments, ask)
        return classic.ServerResult(result)

    server.request_handlers[classic.ListToolsRequest] = list_tools
    server.request_handlers[classic.CallToolRequest] = call_tool
    return server  # type: ignore[no-any-return]


def _modern_server(proxy: PermissionProxy) -> Server[Any]:
    """mcp 2.x: handlers given to the constructor, taking a request context and the request's params."""

    async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
        return await proxy.list_tools(params.cursor if params is not None else None)

    async def call_tool(context: Any, params: Any) -> types.CallToolResult:
        session = context.session
        capabilities = session.client_capabilities
        ask: _Ask | None = None
        # Elicitation needs a channel from server to client, which not every connection has.
        if capabilities is not None and capabilities.elicitation is not None and session.can_send_request:

            async def ask(message: str) -> ElicitationAnswer | None:
                try:
                    result = await session.elicit_form(message, _APPROVAL_SCHEMA, context.request_id)
                except Exception:  # no answer (an error, no channel back): the call stays pending
                    return None
                return _answer_of(result)

        return await proxy.call_tool(params.name, params.arguments, ask)

    factory: Any = Server
    return factory(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)  # type: ignore[no-any-return]


async def run_stdio_proxy(
    policy: PolicyLike,
    command: Sequence[str],
    *,
    server_name: str | None = None,
    audit: AuditLog | None = None,
    env: dict[str, str] | None = None,
    approve_hint: str | None = None,
) -> None:
    """Start the upstream server ``command`` over stdio and serve the proxy on stdin/stdout until EOF.

    The upstream gets this process's environment (``env`` replaces it). ``approve_hint`` is how a person
    approves a held call (``{action_id}`` is filled in), told to the client with the call's error.

    Raises:
        ValueError: ``command`` is empty, or ``server_name`` is not a valid name.
        OSError: the upstream command cannot be started.
    """
    if not command:
        raise ValueError("command: expected the upstream MCP server's command and arguments; got none")
    _check_server_name(server_name)
    # The proxy stands in for the upstream, so the upstream sees the environment the client gave the proxy
    # (the SDK would otherwise pass on only a few variables, and a server's tokens would go missing).
    environment = dict(os.environ) if env is None else env
    upstream_params = StdioServerParameters(command=command[0], args=list(command[1:]), env=environment)
    async with stdio_client(upstream_params) as (read, write), ClientSession(read, write) as upstream:
        await upstream.initialize()
        proxy = PermissionProxy(
            policy, upstream, server_name=server_name, audit=audit, approve_hint=approve_hint
        )
        async with stdio_server() as (client_read, client_write):
            await proxy.run(client_read, client_write)
