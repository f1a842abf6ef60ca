"""A permission-gating MCP proxy: an MCP server in front of an upstream MCP server, deciding each tool call.

``PermissionProxy(policy, upstream)`` serves ``tools/list`` and ``tools/call`` for a connected upstream
``ClientSession``. Each call is decided by the policy under the upstream's tool name, or
``mcp__<server>__<tool>`` with ``server_name``:

- ``proceed``: the call is forwarded with exactly the arguments the policy decided (a hook's rewrite
  included) and the upstream's result returned unchanged.
- ``block``: the call is not forwarded; the client gets an error result (``isError``) with the reason.
- ``pending``: when the client declared elicitation and the connection can carry a request from server to
  client, the person is shown the whole call (``elicitation/create``): accept approves the action once,
  decline or cancel rejects it. Otherwise — or when the call is too long to show whole — the client gets an
  error result naming the pending action; the same call made again once the action is approved is
  forwarded (once, with the arguments the person approved), and a rejected one gets the rejection.

The tools are pinned: each tool's definition (a digest of its description, schemas and annotations) is
recorded when the upstream first lists it, and a tool whose definition changes is never run on the strength
of rules, grants or answers given for the old one — every call of it asks a person, and the change is
reported on standard error (the ``ask_permissions.mcp_proxy`` logger) and to the client. Calls to names the
upstream never listed are refused; tools a deny rule covers whatever the arguments are left out of
``tools/list``. A ``destructiveHint`` annotation can only make a call ask; ``readOnlyHint`` relaxes only
for a server trusted with ``trust_annotations=True``.

``run_stdio_proxy(policy, command)`` starts the upstream server ``command`` over stdio and serves the proxy
on this process's stdin/stdout: what ``ask-permissions mcp-proxy`` runs. ``AuditLog(path)`` appends one JSON
line per decision. Needs ``pip install 'ask-permissions[mcp]'`` (``mcp`` 1.10 or later, where elicitation
arrived; the 1.x and 2.x server APIs both work).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import string
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeAlias, final

try:
    import anyio
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.stdio import stdio_server
except ImportError as error:
    raise ImportError(
        "ask_permissions.integrations.mcp_proxy needs the MCP SDK 1.10 or later: "
        "pip install 'ask-permissions[mcp]'"
    ) from error

from ask_permissions._clock import utc_now
from ask_permissions._errors import preview
from ask_permissions._tool_call import ToolCall
from ask_permissions.policy._outcome import Outcome, grants_scopes
from ask_permissions.policy._resolvers import CANCELLED_FEEDBACK
from ask_permissions.policy._results import pending_reason, proceed
from ask_permissions.queue._queue import EXPIRED_FEEDBACK

from ._common import ProjectGrantHook, require_hook, require_policy
from ._mcp_held import PENDING_EXPIRY, HeldCall, HeldCalls
from ._mcp_prompt import PROMPT_LIMIT, approval_prompt, visible_json
from ._mcp_tools import (
    DeclaredTools,
    HiddenTools,
    KnownTool,
    ToolDefinition,
    ToolPins,
    check_tool_names,
    policy_tool_name,
    read_definition,
)

if TYPE_CHECKING:
    from ask_permissions._vocabulary import AskExplanation, Clock, HookResult, PendingResult
    from ask_permissions.policy._policy import PolicyLike
    from ask_permissions.policy._records import DecisionRecord
    from ask_permissions.queue._action import Action

__all__ = [
    "PENDING_EXPIRY",
    "PROMPT_LIMIT",
    "AuditLog",
    "PermissionProxy",
    "policy_tool_name",
    "run_stdio_proxy",
]

SERVER_NAME: Final = "ask-permissions-mcp-proxy"

ElicitationAnswer: TypeAlias = Literal["accept", "decline", "cancel"]
"""A person's answer to an elicitation: accept, decline, or cancel (dismissed without choosing)."""

# Asks the person through the client: their answer, or None when the client did not answer.
_Ask: TypeAlias = "Callable[[str], Awaitable[ElicitationAnswer | None]]"

_log: Final = logging.getLogger("ask_permissions.mcp_proxy")

# mcp 2 registers handlers through the Server constructor; mcp 1 through its request_handlers table.
_HANDLERS_IN_CONSTRUCTOR: Final = "on_call_tool" in inspect.signature(Server.__init__).parameters
_LIST_TOOLS_TAKES_PARAMS: Final = "params" in inspect.signature(ClientSession.list_tools).parameters

# The confirmation asks for nothing but the person's choice: accept, decline or cancel.
_APPROVAL_SCHEMA: Final[dict[str, Any]] = {"type": "object", "properties": {}}

# A server whose cursors never end would keep the proxy listing forever.
_MAX_TOOL_PAGES: Final = 1000

# The layers whose decision is "nobody decided for this tool": the only ones annotations may change. A
# destructive hint makes the default's proceed ask; a trusted read-only hint lifts the default's ask and the
# modes' objections to tools with side effects (the policy knew nothing of the tool's side effects).
_TIGHTENED_LAYERS: Final = frozenset({"default"})
_RELAXED_LAYERS: Final = frozenset({"default", "ask_before_changes", "read_only"})

_CHANGED_TEXT: Final = (
    "the upstream server changed this tool's definition since the proxy first listed it; nothing given for "
    "the old definition counts, so a person approves each call"
)
_DESTRUCTIVE_TEXT: Final = "the upstream server marks this tool destructive (destructiveHint)"
_SUPERSEDED_FEEDBACK: Final = "the tool's definition changed while the call waited"
_HELD_AGAIN_FEEDBACK: Final = "the same call is held as action {action_id}"
_ONCE: Final = grants_scopes(None, None)  # only the one call: {"once": ...}


@final
class AuditLog:
    """Appends one JSON line per decision to a file: the ``DecisionRecord`` plus what the proxy did.

    Give it to the policy as ``on_decision`` and to the proxy as ``audit``: the proxy pairs each record
    with its own action (``"forwarded"``, ``"refused"`` or ``"held"``, the elicitation's answer, the
    action id) under the ``"proxy"`` key, and reads the deciding layer from it (which annotations need).
    The file is opened for each line, so it can be rotated. With ``path=None`` nothing is written: the proxy
    still reads the records.

    Thread-safe: a private lock guards the last record and the writes.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self._path = None if path is None else os.fspath(path)
        self._lock = threading.Lock()
        self._last: DecisionRecord | None = None

    @property
    def path(self) -> str | None:
        """The file the lines are appended to (``None``: none)."""
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
        if self._path is None:
            return
        line = {**(record.to_dict() if record is not None else {}), "proxy": proxy}
        text = json.dumps(line, ensure_ascii=False, default=str) + "\n"
        with self._lock, open(self._path, "a", encoding="utf-8") as file:
            file.write(text)


class _Decided(NamedTuple):
    """A call's decision as the proxy carries it out: the result, its record, and what the proxy added.

    ``held`` is set when the call is one held earlier, made again: its action's verdict is carried out by
    the one making that takes it out of the held calls.
    """

    result: HookResult
    record: DecisionRecord | None
    warning: str | None = None
    relaxed: bool = False
    held: bool = False


@final
class _Clients:
    """The client connections the proxy served, each by its latest session (for notifications).

    Thread-safe: a private lock guards the table.
    """

    _LIMIT: Final = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[int, Any] = {}
        self._greeted: set[int] = set()

    def note(self, session: Any) -> bool:
        """Remember the session's connection; whether this is the first time it is seen."""
        key = id(getattr(session, "_connection", session))  # mcp 2 makes one session object per request
        with self._lock:
            first = key not in self._greeted
            self._sessions.pop(key, None)
            self._sessions[key] = session
            self._greeted.add(key)
            while len(self._sessions) > self._LIMIT:
                oldest = next(iter(self._sessions))
                del self._sessions[oldest]
            if len(self._greeted) > 16 * self._LIMIT:
                self._greeted = set(self._sessions)
        return first

    def sessions(self) -> list[Any]:
        with self._lock:
            return list(self._sessions.values())

    def forget(self, session: Any) -> None:
        key = id(getattr(session, "_connection", session))
        with self._lock:
            self._sessions.pop(key, None)


@final
class PermissionProxy:
    """Serves an upstream MCP server's tools through an ``ApprovalPolicy``.

    Args:
        policy: decides each call; its queue holds the calls waiting for a person.
        upstream: an initialized ``ClientSession`` connected to the upstream server. To have the upstream's
            ``tools/list_changed`` handled, give that session a ``message_handler`` that awaits
            ``proxy.upstream_message(message)`` (``run_stdio_proxy`` does).
        server_name: decide calls as ``mcp__<server_name>__<tool>`` instead of the upstream's tool names.
        audit: an ``AuditLog`` that is also the policy's ``on_decision``. The proxy reads the deciding layer
            from its records: without one, a ``destructiveHint`` makes every call that would proceed ask.
        on_project_grant: called with an approved action whose scope is ``"project"`` (the policy's own
            hook otherwise).
        approve_hint: how a person approves a held call, with ``{action_id}`` in it (``"ask-permissions
            approvals approve {action_id} --store URL"``, say); the held call's error result ends with it.
        unanswerable_hint: what a held call's result says when nothing but the client could approve it
            (no ``approve_hint``: the proxy has no store): how to make such calls answerable. With it, the
            proxy also warns on standard error as a client that declares no elicitation connects.
        trust_annotations: the upstream is a trusted server, so its ``readOnlyHint`` may relax a decision
            nobody made for the tool (the default's ask, the modes' objections to side effects).
        prompt_limit: the longest elicitation message, in characters; a longer call is not shown but held
            for the approvals inbox.
        pending_expiry: seconds after which a held call no client made again expires (its action is
            rejected with the feedback ``"expired"``); ``None`` for never.
        clock: returns an aware ``datetime`` for the expiry (default: now, UTC).

    Raises:
        TypeError: ``policy`` is not a policy, ``on_project_grant`` is not callable, ``server_name`` is
            not a string, a hint is not a string or None, or a number is not a number.
        ValueError: ``server_name`` is empty or holds characters other than letters, digits, ``_`` and
            ``-``; ``prompt_limit`` or ``pending_expiry`` is not positive; ``approve_hint`` holds a format
            field other than ``{action_id}`` (a literal brace is written ``{{`` or ``}}``).

    Thread-safe as far as the policy and queue are; the tools and held calls are kept under locks.
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
        unanswerable_hint: str | None = None,
        trust_annotations: bool = False,
        prompt_limit: int = PROMPT_LIMIT,
        pending_expiry: float | None = PENDING_EXPIRY,
        clock: Clock | None = None,
    ) -> None:
        _check_server_name(server_name)
        for field, hint in (("approve_hint", approve_hint), ("unanswerable_hint", unanswerable_hint)):
            if hint is not None and not isinstance(hint, str):
                raise TypeError(f"{field}: expected a string or None; got {preview(hint)}")
        if approve_hint is not None:
            _check_format(approve_hint)
        if not isinstance(trust_annotations, bool):
            raise TypeError(f"trust_annotations: expected a bool; got {preview(trust_annotations)}")
        _check_positive(prompt_limit, "prompt_limit", whole=True)
        if pending_expiry is not None:
            _check_positive(pending_expiry, "pending_expiry", whole=False)
        if clock is not None and not callable(clock):
            raise TypeError(f"clock: expected a callable returning an aware datetime; got {preview(clock)}")
        self._approve_hint = approve_hint
        self._unanswerable_hint = unanswerable_hint
        self._policy = require_policy(policy, "PermissionProxy")
        self._on_project_grant = require_hook(on_project_grant, "PermissionProxy")
        self._upstream = upstream
        self._server_name = server_name
        self._audit = audit
        self._trust_annotations = trust_annotations
        self._prompt_limit = prompt_limit
        self._clock: Clock = clock or utc_now
        expiry = None if pending_expiry is None else timedelta(seconds=pending_expiry)
        self._held = HeldCalls(self._clock, expiry)
        self._tools = ToolPins()
        self._hidden = HiddenTools()
        self._declared = DeclaredTools(self._policy)
        self._clients = _Clients()
        self._lock = threading.Lock()
        self._listed = False  # the upstream's tools were listed at least once
        self._stale = False  # the upstream said its tool list changed since the proxy last listed it
        self._task_groups: list[Any] = []  # the runs' task groups, for work a notification starts

    @property
    def policy(self) -> PolicyLike:
        """The policy that decides each call."""
        return self._policy

    @property
    def tool_names(self) -> list[str]:
        """Every tool name the upstream listed so far, in the order first listed."""
        return self._tools.names()

    def __repr__(self) -> str:
        return (
            f"<PermissionProxy server_name={self._server_name!r} tools={len(self._tools)} "
            f"held={len(self._held)} policy={self._policy!r}>"
        )

    # -- tools ---------------------------------------------------------------------------------------

    async def list_tools(self, cursor: str | None = None) -> types.ListToolsResult:
        """One page of the upstream's tool list, without the tools a deny rule covers whatever the
        arguments; each tool listed is pinned (or checked against its pin)."""
        page = await self._list_page(cursor)
        changes = self._tools.see(read_definition(_wire(tool)) for tool in page.tools)
        self._listed = True
        await self._report_changes(changes)
        rules = getattr(self._policy, "rules", None)
        kept = [
            tool
            for tool in page.tools
            if not self._hidden(rules, policy_tool_name(tool.name, self._server_name))
        ]
        return page if len(kept) == len(page.tools) else page.model_copy(update={"tools": kept})

    async def refresh_tools(self) -> list[KnownTool]:
        """List every page of the upstream's tools, pin the new ones, report and return the changed ones."""
        self._stale = False
        cursor: str | None = None
        definitions: list[ToolDefinition] = []
        for _ in range(_MAX_TOOL_PAGES):
            page = await self._list_page(cursor)
            definitions.extend(read_definition(_wire(tool)) for tool in page.tools)
            cursor = _wire(page).get("nextCursor")
            if not cursor:
                break
        changes = self._tools.see(definitions)
        self._listed = True
        await self._report_changes(changes)
        return changes

    def check_tools(self, *, where: str = "PermissionProxy") -> None:
        """Refuse a policy that names tools the upstream does not list (after ``refresh_tools``).

        With ``server_name``, only names of the form ``mcp__<server>__<tool>`` are checked, and plain
        names of listed tools (which no call is decided under); a policy whose ``unknown_tools`` is
        ``"keep"`` is not checked. ``where`` starts the message (a policy file's path, say).

        Raises:
            UnknownToolError: each name that no listed tool has, with the nearest listed name.
        """
        check_tool_names(self._policy, self._tools.names(), server_name=self._server_name, where=where)

    async def upstream_message(self, message: object) -> None:
        """Handle a message from the upstream session (its ``message_handler``): on ``tools/list_changed``
        the tools are listed again (changes reported) and the notification is forwarded to the clients."""
        notification = getattr(message, "root", message)  # mcp 1 wraps notifications in a root model
        if getattr(notification, "method", None) != "notifications/tools/list_changed":
            return
        self._stale = True
        # Not listed here: the upstream session is still delivering this notification, and a request made
        # from inside its handler could wait on itself. A run's task group lists once the handler returns.
        with self._lock:
            groups = list(self._task_groups)
        if groups:
            groups[0].start_soon(self._tools_list_changed)

    async def _tools_list_changed(self) -> None:
        await self.refresh_tools()
        for session in self._clients.sessions():
            try:
                await session.send_tool_list_changed()
            except Exception:  # a client that went away: it lists afresh when it comes back
                self._clients.forget(session)

    async def _list_page(self, cursor: str | None) -> types.ListToolsResult:
        if cursor is None:
            return await self._upstream.list_tools()
        upstream: Any = self._upstream  # the 1.x and 2.x signatures differ
        if _LIST_TOOLS_TAKES_PARAMS:
            return await upstream.list_tools(params=types.PaginatedRequestParams(cursor=cursor))  # type: ignore[no-any-return]
        return await upstream.list_tools(cursor)  # type: ignore[no-any-return]

    async def _known(self, tool: object) -> KnownTool | None:
        """The listed tool of this exact name; the upstream is listed again first when it said its list
        changed, or when the name is new (it may have added a tool)."""
        if not isinstance(tool, str) or not tool:
            return None
        if self._stale or not self._listed:
            await self.refresh_tools()
        known = self._tools.get(tool)
        if known is None:
            await self.refresh_tools()
            known = self._tools.get(tool)
        return known

    async def _report_changes(self, changes: Sequence[KnownTool]) -> None:
        for known in changes:
            name = policy_tool_name(known.current.name, self._server_name)
            text = f"mcp-proxy: tool {visible_json(name)}: {_CHANGED_TEXT}"
            _log.warning("%s", text)
            await self._tell_clients(text)

    async def _tell_clients(self, text: str) -> None:
        """A warning to every client, as an MCP log message (a client that cannot take it is skipped)."""
        notification = types.LoggingMessageNotification.model_validate(
            {
                "method": "notifications/message",
                "params": {"level": "warning", "logger": SERVER_NAME, "data": text},
            }
        )
        for session in self._clients.sessions():
            with contextlib.suppress(Exception):  # best effort: standard error has it too
                await session.send_notification(notification)

    # -- calls ---------------------------------------------------------------------------------------

    async def call_tool(
        self, tool: str, arguments: dict[str, Any] | None, ask: _Ask | None = None
    ) -> types.CallToolResult:
        """Decide a call, ask a person through ``ask`` if it waits, and forward it or answer with an error.

        ``ask`` asks the person with a message and returns their answer (``None`` when the client did not
        answer); without it, without an answer, or when the call is too long to show whole, a call that
        waits is answered with an error result naming its pending action.
        """
        self.expire_held()
        report: dict[str, Any] = {"tool": tool}
        known = await self._known(tool)
        if known is None:
            report["did"] = "refused"
            return self._answer(None, report, _error(self._unlisted_text(tool)))
        name = policy_tool_name(tool, self._server_name)
        given: Any = {} if arguments is None else arguments
        decided = self._decide(name, given, known)
        record = decided.record
        if decided.warning is not None:
            report["warning"] = decided.warning
        if decided.relaxed:
            report["relaxed"] = "readOnlyHint"
        outcome, shown = await self._ask_person(name, decided, report, ask)
        if outcome.waits and outcome.action is not None:
            held = HeldCall(name, given, decided.result, record, known.digest, decided.warning, self._clock())  # type: ignore[arg-type]  # a pending result
            replaced, dropped = self._held.hold(held)
            if replaced is not None:  # another making, held at the same time: a retry finds this one now
                self._policy.reject(
                    replaced.action_id, feedback=_HELD_AGAIN_FEEDBACK.format(action_id=outcome.action.id)
                )
            if dropped is not None:
                self._expire([dropped])
            report["did"] = "held"
            reason = outcome.reason or pending_reason(name)
            return self._answer(record, report, _error(self._held_text(reason, outcome.action.id, shown)))
        released = None if outcome.action is None else self._held.release(name, given, outcome.action.id)
        if decided.held and released is None and outcome.runs:
            # Another making of this held call, answered at the same time, took its approval and ran: an
            # approval runs the call once, and this making's own answer (a decline, say) did not take.
            report["did"] = "refused"
            return self._answer(record, report, _error(self._used_text(name, outcome.action)))
        if outcome.action is not None and outcome.action.decided_by is not None:
            report["decided_by"] = outcome.action.decided_by  # who answered, in the audit line
        if not outcome.runs:
            report["did"] = "refused"
            return self._answer(record, report, _error(outcome.reason or pending_reason(name)))
        forwarded_arguments = _decided_arguments(outcome, given)
        if not isinstance(forwarded_arguments, dict):
            report["did"] = "refused"
            text = (
                f"The arguments decided for {name!r} are not a JSON object, which an MCP call needs; "
                f"got {preview(forwarded_arguments)}"
            )
            return self._answer(record, report, _error(text))
        if outcome.modified:
            report["modified"] = True  # not the model's arguments: a rewrite, or a person's edit
        report["did"] = "forwarded"
        try:
            forwarded = await self._upstream.call_tool(tool, forwarded_arguments)
        except Exception:
            report["upstream"] = "error"
            self._answer(record, report, None)
            raise
        return self._answer(record, report, forwarded)

    async def _ask_person(
        self, name: str, decided: _Decided, report: dict[str, Any], ask: _Ask | None
    ) -> tuple[Outcome, bool]:
        """The call's outcome, after asking the person when it waits and it can be shown whole; and
        whether it could be (``True`` when nobody was to be asked)."""
        outcome = self._read(decided.result)
        if not outcome.waits or outcome.action is None:
            return outcome, True
        action = outcome.action
        report["action_id"] = action.id
        if ask is None:
            return outcome, True
        prompt = self._prompt(name, action, decided)
        if prompt is None:
            report["elicitation"] = "not shown"
            return outcome, False
        try:
            answer = await ask(prompt)
        except BaseException:
            # The client cancelled the call (or went away) while its person was asked. A held call stays
            # held, to expire in time; a new one was never held, so its action would wait for nobody.
            if not decided.held:
                self._policy.reject(action.id, feedback=CANCELLED_FEEDBACK)
            raise
        report["elicitation"] = answer or "failed"
        if answer == "accept":
            self._policy.approve(action.id)
        elif answer is not None:
            self._policy.reject(action.id)
        return self._read(decided.result), True

    def expire_held(self) -> list[int]:
        """Reject, as ``"expired"``, the actions of held calls no client made for ``pending_expiry``
        seconds; return their ids (those that were still pending)."""
        return self._expire(self._held.take_expired())

    def expire_all_held(self) -> list[int]:
        """Reject, as ``"expired"``, the action of every held call (its client went away for good)."""
        return self._expire(self._held.take_all())

    def _expire(self, calls: Sequence[HeldCall]) -> list[int]:
        rejected = [self._policy.reject(call.action_id, feedback=EXPIRED_FEEDBACK) for call in calls]
        return [action.id for action in rejected if action is not None]

    # -- decisions -----------------------------------------------------------------------------------

    def _decide(self, name: str, arguments: Any, known: KnownTool) -> _Decided:
        """The held action of a retried call, else the policy's decision, with the proxy's own asks."""
        held = self._held.find(name, arguments)
        if held is not None:
            if held.definition == known.digest and self._policy.lookup(held.action_id) is not None:
                return _Decided(held.result, held.record, held.warning, held=True)
            self._held.release(name, arguments, held.action_id)
            if held.definition != known.digest:  # approved, if at all, for another definition
                self._policy.reject(held.action_id, feedback=_SUPERSEDED_FEEDBACK)
        call = ToolCall(name, arguments)
        definition = known.current
        if (
            self._trust_annotations
            and definition.read_only
            and not definition.destructive
            and not known.changed
            and not self._declared.contradict_read_only(name)
        ):
            # A dry run first: only a decision nobody made for the tool is relaxed, and nothing is queued.
            evaluated = self._policy.evaluate(call)
            if (
                evaluated.outcome != "proceed"
                and evaluated.layer in _RELAXED_LAYERS
                and not evaluated.modified
            ):
                return _Decided(proceed(), evaluated, relaxed=True)
        result = self._policy.before_tool_call(call)
        record = None if self._audit is None else self._audit.take()
        if result["action"] == "block":
            return _Decided(result, record)
        if known.changed:
            warning = _CHANGED_TEXT
        elif (
            definition.destructive
            and result["action"] == "proceed"
            and (record is None or record.layer in _TIGHTENED_LAYERS)
        ):
            warning = _DESTRUCTIVE_TEXT
        else:
            return _Decided(result, record)
        if result["action"] == "pending":
            action = self._policy.lookup(result["action_id"])
            if action is not None and action.is_pending:  # a person still answers it
                return _Decided(result, record, warning)
        # It would run (by a rule, a grant, the default, or the queue approving by itself): a person decides.
        decided_arguments = result.get("arguments", arguments)
        reason = f"Tool {name!r} requires approval: {warning}"
        honoured = dict(getattr(self._policy, "honoured_scopes", None) or _ONCE)
        why: AskExplanation = {
            "layer": "tool_changed" if known.changed else "destructive_hint",
            "rule": None,
            "source": None,
            "reason": reason,
            "suggestions": [],
            # A grant would not run a changed tool: only the one approval counts.
            "scopes": _ONCE if known.changed else honoured,
        }
        action_id = self._policy.queue.submit(
            tool_call_id=None,
            tool_name=name,
            args=decided_arguments,
            message=f'Calling "{name}" requires approval',
            why=why,
        )
        asked: PendingResult = {"action": "pending", "action_id": action_id, "reason": reason}
        if "arguments" in result:
            asked["arguments"] = decided_arguments
        return _Decided(asked, record, warning)

    def _prompt(self, name: str, action: Action, decided: _Decided) -> str | None:
        """The elicitation message for a waiting call, or ``None`` when it cannot be shown whole."""
        result, record = decided.result, decided.record
        if result["action"] != "pending":  # a call waits only on a pending result
            return None
        why = getattr(action, "why", None)  # the policy's own explanation, where it gives one
        if isinstance(why, Mapping):
            layer, rule, source = why.get("layer"), why.get("rule"), why.get("source")
            suggestions = list(why.get("suggestions") or ())
        else:
            layer = None if record is None else record.layer
            rule = None if record is None or record.rule is None else record.rule.described
            source = None if record is None else record.source
            suggestions = list(result.get("suggestions", ()))
        return approval_prompt(
            tool=name,
            arguments=action.args,
            reason=result["reason"] or pending_reason(name),
            layer=layer,
            rule=rule,
            source=source,
            suggestions=suggestions,
            warning=decided.warning,
            limit=self._prompt_limit,
        )

    def _held_text(self, reason: str, action_id: int, shown: bool) -> str:
        text = f"{reason}: action {action_id} waits for a person's approval"
        if not shown:
            text += f" (the call is too long to show whole in a prompt of {self._prompt_limit} characters)"
        if self._approve_hint is not None:
            approve = self._approve_hint.format(action_id=action_id)
            return (
                f"{text}; make the same call again once it is approved (a person approves it with: {approve})"
            )
        if self._unanswerable_hint is not None:
            return f"{text}, but no one can approve it here: {self._unanswerable_hint}"
        return f"{text}; make the same call again once it is approved"

    def _used_text(self, name: str, action: Action | None) -> str:
        number = "" if action is None else f" {action.id}"
        return (
            f"The approval of action{number} for {name!r} was carried out by another making of the same "
            "call, which ran; an approval runs a call once: make the call again to ask anew"
        )

    def _unlisted_text(self, tool: object) -> str:
        if not isinstance(tool, str) or not tool:
            return f"expected the name of a tool the upstream server lists; got {preview(tool)}"
        text = f"Tool {visible_json(tool)} is not a tool the upstream server lists: the call was refused"
        nearest = _nearest(tool, self._tools.names())
        return text if nearest is None else f"{text} (did you mean {visible_json(nearest)}?)"

    def _answer(
        self, record: DecisionRecord | None, report: dict[str, Any], result: types.CallToolResult | None
    ) -> types.CallToolResult:
        if self._audit is not None:
            self._audit.write(record, report)
        return result  # type: ignore[return-value]  # None only on the re-raising path

    def _read(self, result: HookResult) -> Outcome:
        return self._policy.outcome(result, on_project_grant=self._on_project_grant)

    # -- serving -------------------------------------------------------------------------------------

    def _greet(self, session: Any) -> None:
        """A client's first request: warn when the calls that need a person can have no answer."""
        if (
            not self._clients.note(session)
            or self._approve_hint is not None
            or self._unanswerable_hint is None
        ):
            return
        if _elicits(session):
            return
        _log.warning(
            "mcp-proxy: this client declares no elicitation, so calls that need a person cannot be "
            "approved through it, and this proxy keeps its approvals in memory: %s",
            self._unanswerable_hint,
        )

    def server(self) -> Server[Any]:
        """A low-level MCP ``Server`` answering ``tools/list`` and ``tools/call`` through this proxy."""
        if _HANDLERS_IN_CONSTRUCTOR:
            return _modern_server(self)
        return _classic_server(self)

    async def run(self, read_stream: Any, write_stream: Any) -> None:
        """Serve the proxy on a connection's streams until the client goes away.

        While it runs, held calls expire on time, and the upstream's ``tools/list_changed`` is handled.
        """
        server = self.server()
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        async with anyio.create_task_group() as tasks:
            with self._lock:
                self._task_groups.append(tasks)
            try:
                tasks.start_soon(self._expire_on_time)
                await server.run(read_stream, write_stream, options)
            finally:
                with self._lock:
                    self._task_groups.remove(tasks)
                tasks.cancel_scope.cancel()
        self.expire_held()

    async def _expire_on_time(self) -> None:
        while True:
            due = self._held.next_expiry()
            # A call held later expires no sooner than the expiry time from now: waking at least that often
            # meets every deadline.
            delay = 60.0 if due is None else max((due - self._clock()).total_seconds(), 0.0) + 0.01
            if self._held.expiry_seconds is not None:
                delay = min(delay, self._held.expiry_seconds)
            await anyio.sleep(delay)
            self.expire_held()


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
    # Rules read mcp__<server>__<tool> up to the first "__": server git__admin's tools, and server git_'s,
    # would be tools of server git to them, and mcp__git would allow them.
    if "__" in server_name or server_name.startswith("_") or server_name.endswith("_"):
        raise ValueError(
            "server_name: expected a name without '__' that neither starts nor ends with '_' (rules read "
            f"mcp__<server>__<tool> up to the first '__', so it would read as another server's); got "
            f"{preview(server_name)}"
        )


def _check_format(approve_hint: str) -> None:
    # Checked once here: a hint that cannot be formatted would fail every held call's answer instead.
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(approve_hint) if field is not None]
    except ValueError:
        fields = [""]
    if any(field != "action_id" for field in fields):
        raise ValueError(
            "approve_hint: expected a text whose only format field is {action_id} "
            "(write a brace as {{ or }}); "
            f"got {preview(approve_hint)}"
        )


def _check_positive(value: object, field: str, *, whole: bool) -> None:
    kinds = int if whole else int | float
    if isinstance(value, bool) or not isinstance(value, kinds):
        expected = "a positive whole number" if whole else "a positive number of seconds"
        raise TypeError(f"{field}: expected {expected}; got {preview(value)}")
    if not value > 0:  # NaN fails this too
        expected = "a positive whole number" if whole else "a positive number of seconds"
        raise ValueError(f"{field}: expected {expected}; got {preview(value)}")


def _decided_arguments(outcome: Outcome, given: Any) -> Any:
    """What runs: the policy's rewrite, or a queued call's own arguments (what the person approved)."""
    if outcome.modified:
        return outcome.arguments
    if outcome.action is not None:
        return outcome.action.args
    return given


def _nearest(name: str, names: Sequence[str]) -> str | None:
    import difflib  # noqa: PLC0415  # only for a refused call's message

    found = difflib.get_close_matches(name, names, n=1)
    if found:
        return found[0]
    stripped = name.strip()
    return stripped if stripped in names else None


def _wire(model: Any) -> dict[str, Any]:
    """A model in its wire form (the field names differ between the 1.x and 2.x types)."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)  # type: ignore[no-any-return]


def _elicits(session: Any) -> bool:
    """Whether the client of this session declared elicitation."""
    capabilities = getattr(session, "client_capabilities", None)
    if capabilities is None:
        params = getattr(session, "client_params", None)
        capabilities = getattr(params, "capabilities", None)
    return getattr(capabilities, "elicitation", None) is not None


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
        proxy._greet(server.request_context.session)
        cursor = request.params.cursor if request.params is not None else None
        return classic.ServerResult(await proxy.list_tools(cursor))

    async def call_tool(request: Any) -> Any:
        context = server.request_context
        session = context.session
        proxy._greet(session)
        ask: _Ask | None = None
        if _elicits(session):

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
        proxy._greet(context.session)
        return await proxy.list_tools(params.cursor if params is not None else None)

    async def call_tool(context: Any, params: Any) -> types.CallToolResult:
        session = context.session
        proxy._greet(session)
        ask: _Ask | None = None
        # Elicitation needs a channel from server to client, which not every connection has.
        if _elicits(session) and session.can_send_request:

            async def ask(message: str) -> ElicitationAnswer | None:
                try:
                    result = await session.elicit_form(message, _APPROVAL_SCHEMA, context.request_id)
                except Exception:  # no answer (an error, no channel back): the call stays pending
                    return None
                return _answer_of(result)

        return await proxy.call_tool(params.name, params.arguments, ask)

    async def initialized(context: Any, params: Any) -> None:
        proxy._greet(context.session)

    factory: Any = Server
    server: Any = factory(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)
    server.add_notification_handler("notifications/initialized", types.NotificationParams, initialized)
    return server  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def _upstream_session(
    command: Sequence[str], environment: dict[str, str], relay: Any
) -> AsyncIterator[ClientSession]:
    upstream_params = StdioServerParameters(command=command[0], args=list(command[1:]), env=environment)
    async with (
        stdio_client(upstream_params) as (read, write),
        ClientSession(read, write, message_handler=relay) as upstream,
    ):
        await upstream.initialize()
        yield upstream


async def run_stdio_proxy(
    policy: PolicyLike,
    command: Sequence[str],
    *,
    server_name: str | None = None,
    audit: AuditLog | None = None,
    env: dict[str, str] | None = None,
    approve_hint: str | None = None,
    unanswerable_hint: str | None = None,
    trust_annotations: bool = False,
    prompt_limit: int = PROMPT_LIMIT,
    pending_expiry: float | None = PENDING_EXPIRY,
    where: str = "mcp-proxy",
) -> None:
    """Start the upstream server ``command`` over stdio and serve the proxy on stdin/stdout until EOF.

    The upstream gets this process's environment (``env`` replaces it). Its tools are listed (and pinned)
    before the client is served, and a policy that names tools the upstream does not list is refused
    (``PermissionProxy.check_tools``; the message starts with ``where``). The other keyword arguments are
    ``PermissionProxy``'s. This process serves one client: when it goes away, the calls still held for it
    expire at once.

    Raises:
        ValueError: ``command`` is empty, or ``server_name`` is not a valid name.
        OSError: the upstream command cannot be started.
        UnknownToolError: the policy names a tool the upstream does not list (a ``ValueError``).
    """
    if not command:
        raise ValueError("command: expected the upstream MCP server's command and arguments; got none")
    _check_server_name(server_name)
    # The proxy stands in for the upstream, so the upstream sees the environment the client gave the proxy
    # (the SDK would otherwise pass on only a few variables, and a server's tokens would go missing).
    environment = dict(os.environ) if env is None else env
    proxies: list[PermissionProxy] = []

    async def relay(message: Any) -> None:
        if proxies:
            await proxies[0].upstream_message(message)

    async with _upstream_session(command, environment, relay) as upstream:
        proxy = PermissionProxy(
            policy,
            upstream,
            server_name=server_name,
            audit=audit,
            approve_hint=approve_hint,
            unanswerable_hint=unanswerable_hint,
            trust_annotations=trust_annotations,
            prompt_limit=prompt_limit,
            pending_expiry=pending_expiry,
        )
        proxies.append(proxy)
        await proxy.refresh_tools()
        proxy.check_tools(where=where)
        try:
            async with stdio_server() as (client_read, client_write):
                await proxy.run(client_read, client_write)
        finally:
            proxy.expire_all_held()
