"""The web inbox's application: a Starlette app over a store (extra ``[inbox]``).

Every request that reads or changes anything carries the inbox's token in ``Authorization: Bearer ...``,
compared in constant time; without it: 401, and nothing is read or changed. No cookie is ever set or read: a
browser sends a host's cookies to every port of that host (RFC 6265), so a cookie holding the token would
reach every other server on 127.0.0.1, a development server an agent started included. The printed address
carries the token in its fragment (``#token=``), which a browser sends to no server; the page's script keeps
it in the tab (``sessionStorage``: this origin, this tab) and sends the header. A token in an address's query
(``?token=``) is refused on every route: an address lands in logs and history.

The page's shell (``GET /``) and its assets (``GET /static/...``) hold nothing of the store and are served to
anyone; the script fetches the rest with the token. Answers are POSTs that also carry a form field only the
page knows (``csrf``) and, when the browser sends one, an ``Origin`` of this very server (defence in depth:
the header alone already keeps other sites out). Assets come from the package only, and the
Content-Security-Policy says so to the browser.

With the token: ``GET /view`` (the page's content: ``view=pending|history``, ``session=``, ``tool=``),
``GET /fragment`` (the same list alone, for the live updates), ``GET /events`` (server-sent events, read with
``fetch``: ``changed`` whenever any process changes the store), ``GET /action?session=&id=`` (one action as
JSON), ``POST /answer`` (``session``, ``id``, ``decision`` ``approve|reject``, ``scope``, ``arguments``,
``feedback``, ``digest``, ``csrf``; the reply is JSON).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any, Final, final

from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ask_permissions._errors import ResolutionNotRecordedError, StoreUnavailableError
from ask_permissions.policy._digest import args_digest
from ask_permissions.queue._action import Action
from ask_permissions.queue._open import describe_url
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.queue._store import ApprovalStore, check_session

from ._answers import (
    AnswerError,
    answer_scopes,
    edit_refusal,
    is_unchanged,
    read_arguments,
    runs_edits,
    scope_refusal,
)
from ._page import Card, Filters, render_history, render_pending, render_shell, render_view

__all__ = ["AUTH_SCHEME", "inbox_app"]

AUTH_SCHEME: Final = "Bearer"
"""Requests carry the token as ``Authorization: Bearer TOKEN`` (RFC 6750): a header only the page's script
sends, never a browser on its own."""
HISTORY_LIMIT: Final = 200
_KEEPALIVE: Final = 15.0  # seconds between two comments on a quiet event stream
_ASSETS: Final = {"inbox.css": "text/css; charset=utf-8", "inbox.js": "text/javascript; charset=utf-8"}
_HEADERS: Final = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_SHELL: Final = render_shell()
_NO_TOKEN: Final = (
    "401: this inbox needs its token: open the address it printed when it started (the token follows "
    "#token=); the page sends it as Authorization: Bearer"
)
_TOKEN_IN_QUERY: Final = (
    "401: this inbox does not take its token from an address's query (?token=), which logs and history "
    "keep: open the address it printed when it started, which carries the token after # (#token=)"
)
_FEEDBACK_LIMIT: Final = 2000
_ARGUMENTS_LIMIT: Final = 1_000_000  # characters of edited JSON a person may send


@final
class _Changes:
    """Tells the event streams, on the app's loop, that some process changed the store.

    One thread waits on the store (``wait_for_change``) for every stream, so a hundred open pages cost one
    thread; each stream awaits the next change number on the loop.
    """

    def __init__(self, store: ApprovalStore) -> None:
        self._store = store
        self._number = 0
        self._ended = False
        self._condition: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._condition = asyncio.Condition()
        self._store.watch()
        self._thread = threading.Thread(target=self._watch, name="ask_permissions inbox changes", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(5)
        self._store.unwatch()

    @property
    def number(self) -> int:
        return self._number

    @property
    def ended(self) -> bool:
        """Whether the server is stopping (every event stream ends)."""
        return self._ended

    def end(self) -> None:
        """The server is stopping: end every event stream, since it would otherwise keep its connection,
        and so the server, open until the page is closed."""
        self._ended = True
        self.bump()

    def _watch(self) -> None:
        seen = self._store.change_number()
        while not self._stopped.is_set():
            now = self._store.wait_for_change(seen, 0.5)
            if now != seen:
                seen = now
                self.bump()

    def bump(self) -> None:
        """A change happened (noticed by the store's watcher, or made by this app): wake the streams."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody listens any more
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._advance()))

    async def _advance(self) -> None:
        assert self._condition is not None
        async with self._condition:
            self._number += 1
            self._condition.notify_all()

    async def next(self, seen: int, timeout: float) -> int:
        """The change number once it is past ``seen``, or after ``timeout`` seconds."""
        assert self._condition is not None
        async with self._condition:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._condition.wait_for(lambda: self._number != seen or self._ended), timeout
                )
            return self._number


def inbox_app(
    store: ApprovalStore, *, token: str, user: str, store_url: str
) -> tuple[Starlette, Callable[[], None]]:
    """The inbox's app over ``store``: answers are given as ``user``; ``token`` guards every request.

    Returns the app, and what the server calls, on the app's loop, when it begins to stop: it ends the
    event streams (a server waits for its open responses to finish before it stops).
    """
    inbox = _Inbox(store, token=token, user=user, store_url=store_url)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        inbox.changes.start()
        try:
            yield
        finally:
            inbox.changes.stop()

    routes = [
        Route("/", inbox.public(inbox.shell)),
        Route("/static/{name}", inbox.public(inbox.asset)),
        Route("/view", inbox.guarded(inbox.view)),
        Route("/fragment", inbox.guarded(inbox.fragment)),
        Route("/events", inbox.guarded(inbox.events)),
        Route("/action", inbox.guarded(inbox.action)),
        Route("/answer", inbox.guarded(inbox.answer), methods=["POST"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan), inbox.changes.end


Handler = Callable[[Request], Awaitable[Response]]


@final
class _Inbox:
    """The app's state and handlers."""

    def __init__(self, store: ApprovalStore, *, token: str, user: str, store_url: str) -> None:
        self.store = store
        self.token = token
        self.user = user
        self.csrf = hmac.new(token.encode(), b"csrf", hashlib.sha256).hexdigest()
        self.store_label = describe_url(store_url)
        self.changes = _Changes(store)
        self._queues: dict[str, ApprovalQueue] = {}
        self._queues_lock = threading.Lock()

    # -- the guard -------------------------------------------------------------------------------------------

    def public(self, handler: Handler) -> Handler:
        """A route any tab may read: it holds nothing of the store (the page's shell, its assets)."""

        async def serve(request: Request) -> Response:
            if "token" in request.query_params:
                return _secured(_refused(_TOKEN_IN_QUERY))
            return _secured(await handler(request))

        return serve

    def guarded(self, handler: Handler) -> Handler:
        """A route that reads or changes something: only with the token in the ``Authorization`` header."""

        async def guard(request: Request) -> Response:
            if "token" in request.query_params:
                return _secured(_refused(_TOKEN_IN_QUERY))
            if not self._authorized(request):
                return _secured(_refused(_NO_TOKEN))
            try:
                return _secured(await handler(request))
            except StoreUnavailableError as error:
                return _secured(_reply(503, f"503: {_unavailable(error)}"))

        return guard

    def _authorized(self, request: Request) -> bool:
        given = request.headers.getlist("authorization")
        if len(given) != 1:  # none, or two (which one would count?)
            return False
        scheme, _, credentials = given[0].partition(" ")
        # The scheme is case-insensitive (RFC 9110); the token is compared in constant time.
        return scheme.lower() == AUTH_SCHEME.lower() and _same(credentials, self.token)

    # -- reading ---------------------------------------------------------------------------------------------

    def queue(self, session: str) -> ApprovalQueue:
        with self._queues_lock:
            queue = self._queues.get(session)
            if queue is None:
                queue = self._queues[session] = ApprovalQueue(store=self.store, session=session)
            return queue

    def _filters(self, request: Request) -> Filters:
        params = request.query_params
        view = params.get("view") or "pending"
        return Filters(
            view=view if view in ("pending", "history") else "pending",
            session=params.get("session") or None,
            tool=params.get("tool") or None,
        )

    def _cards(self, filters: Filters) -> tuple[list[Card], list[tuple[str, Action]]]:
        every = self.store.all_pending()
        shown = [
            (session, action)
            for session, action in every
            if filters.session in (None, session) and filters.tool in (None, action.tool_name)
        ]
        shown.sort(key=lambda entry: (entry[1].submitted_at, entry[0], entry[1].id))
        # What each session's host said it honours, read once per session for the actions that need it.
        recorded = {
            session: self.store.honoured_scopes(session)
            for session in {session for session, action in shown if action.why is None}
        }
        cards = [
            Card(
                session,
                action,
                answer_scopes(self.store, session, action, recorded),
                runs_edits(self.store, session, action, recorded),
            )
            for session, action in shown
        ]
        return cards, every

    def _render_body(self, filters: Filters) -> tuple[str, int, list[tuple[str, Action]]]:
        cards, every = self._cards(filters)
        if filters.view == "history":
            resolved = self.store.resolved_actions(filters.session, HISTORY_LIMIT)
            resolved = [entry for entry in resolved if filters.tool in (None, entry[1].tool_name)]
            return render_history(resolved), len(cards), every
        return render_pending(cards, self.csrf), len(cards), every

    async def shell(self, _: Request) -> Response:
        return HTMLResponse(_SHELL)

    async def view(self, request: Request) -> Response:
        filters = self._filters(request)
        body, count, every = await asyncio.to_thread(self._render_body, filters)
        sessions = await asyncio.to_thread(self.store.sessions)
        tools = sorted({action.tool_name for _, action in every})
        return HTMLResponse(
            render_view(
                body=body,
                filters=filters,
                sessions=sessions,
                tools=tools,
                pending_count=count,
                user=self.user,
                store=self.store_label,
            )
        )

    async def fragment(self, request: Request) -> Response:
        body, count, _ = await asyncio.to_thread(self._render_body, self._filters(request))
        return HTMLResponse(body, headers={"X-Pending-Count": str(count)})

    async def action(self, request: Request) -> Response:
        try:
            session = check_session(request.query_params.get("session"))
            action_id = int(request.query_params.get("id", ""))
        except (TypeError, ValueError):
            return JSONResponse({"error": "expected session= and id= (an action id)"}, status_code=400)
        found = await asyncio.to_thread(self.queue(session).get, action_id)
        if found is None:
            return JSONResponse({"error": f"action {action_id}: no such action in session {session!r}"}, 404)
        return JSONResponse(_action_data(session, found))

    async def events(self, request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            seen = self.changes.number
            yield "retry: 1000\n\n"
            while not self.changes.ended and not await request.is_disconnected():
                now = await self.changes.next(seen, _KEEPALIVE)
                if self.changes.ended:
                    return
                if now != seen:
                    seen = now
                    yield f"event: changed\ndata: {now}\n\n"
                else:
                    yield ": still here\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"}
        )

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        media = _ASSETS.get(name)
        if media is None:
            return Response("404: no such asset", status_code=404, media_type="text/plain")
        content = resources.files("ask_permissions.inbox").joinpath("static", name).read_bytes()
        return Response(content, media_type=media)

    # -- answering ---------------------------------------------------------------------------------------

    async def answer(self, request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return _reply(403, f"403: a page of {origin} may not answer here")
        form = await request.form()
        if not _same(str(form.get("csrf", "")), self.csrf):
            return _reply(403, "403: this form did not come from the inbox's page; reload it")
        status, message, data = await asyncio.to_thread(self._answer, form)
        if status == 200:
            self.changes.bump()
        return _reply(status, message, data)

    def _answer(self, form: FormData) -> tuple[int, str, dict[str, Any] | None]:
        """Check the answer whole, then give it: (HTTP status, what the person reads, the action now)."""
        try:
            session = check_session(str(form.get("session", "")))
            action_id = int(str(form.get("id", "")))
        except (TypeError, ValueError):
            return 400, "400: expected a session and an action id", None
        decision = form.get("decision")
        if decision not in ("approve", "reject"):
            return 400, f"400: decision must be approve or reject; got {decision!r}", None
        queue = self.queue(session)
        action = queue.get(action_id)
        if action is None:
            return 404, f"action {action_id}: no such action in session {session!r}", None
        if not action.is_pending:
            return (
                409,
                f"action {action_id} is already {_status(action)}; nothing was changed",
                _action_data(session, action),
            )
        if str(form.get("digest", "")) != args_digest(action.args):
            return 409, f"action {action_id} is not the call this page showed; reload it", None
        if decision == "reject":
            feedback = str(form.get("feedback", "")).strip()[:_FEEDBACK_LIMIT] or None
            done = queue.reject(action_id, feedback=feedback, decided_by=self.user)
        else:
            scope = str(form.get("scope", "once"))
            refused = scope_refusal(self.store, session, action, scope)
            if refused is not None:
                return 400, f"scope {scope}: {refused}", None
            edit = None
            text = form.get("arguments")
            if isinstance(text, str) and text.strip():
                if len(text) > _ARGUMENTS_LIMIT:
                    return 400, f"edited arguments: at most {_ARGUMENTS_LIMIT} characters", None
                try:
                    parsed = read_arguments(text)
                except AnswerError as error:
                    return 400, str(error), None
                edit = None if is_unchanged(action, parsed) else parsed
            if edit is not None:
                refused = edit_refusal(self.store, session, action)
                if refused is not None:
                    return 400, f"edited arguments: {refused}", None
            try:
                done = queue.approve(action_id, scope=scope, arguments=edit, decided_by=self.user)  # type: ignore[arg-type]
            except (TypeError, ValueError) as error:  # an edit JSON holds but a store cannot (a huge number)
                return 400, f"edited arguments: {error}", None
        if not done:  # another person or process answered first: say who
            now = queue.get(action_id)
            who = "resolved meanwhile" if now is None else f"already {_status(now)}"
            return (
                409,
                f"action {action_id} is {who}; your answer was not given",
                (None if now is None else _action_data(session, now)),
            )
        return 200, _resolved_text(done[0]), _action_data(session, done[0])


def _reply(status: int, message: str, data: dict[str, Any] | None = None) -> Response:
    """A reply the page's script reads, as JSON: what the person reads, and the action as it is now."""
    return JSONResponse({"ok": status == 200, "message": message, "action": data}, status_code=status)


def _refused(message: str) -> Response:
    return Response(
        message,
        status_code=401,
        media_type="text/plain",
        headers={"WWW-Authenticate": f'{AUTH_SCHEME} realm="ask-permissions inbox"'},
    )


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())


def _secured(response: Response) -> Response:
    for name, value in _HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _unavailable(error: StoreUnavailableError) -> str:
    """What a person reads when the store could not do what they asked now (its error says why)."""
    if isinstance(error, ResolutionNotRecordedError):
        return f"{error}; the answer was given, and this inbox keeps recording it until the store takes it"
    return f"the store cannot do this now: {error}; nothing was changed, try again"


def _status(action: Action) -> str:
    by = "" if action.decided_by is None else f" by {action.decided_by}"
    return f"{action.status}{by}"


def _resolved_text(action: Action) -> str:
    if action.is_approved:
        edited = ", edited" if action.is_edited else ""
        return (
            f"approved {action.id} ({action.tool_name}, scope {action.scope}{edited}) by {action.decided_by}"
        )
    feedback = f", feedback {action.feedback!r}" if action.feedback else ""
    return f"rejected {action.id} ({action.tool_name}{feedback}) by {action.decided_by}"


def _action_data(session: str, action: Action) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        json.dumps(
            {
                "session": session,
                "id": action.id,
                "status": action.status,
                "tool_name": action.tool_name,
                "args": action.args,
                "why": action.why,
                "scope": action.resolution_scope,
                "feedback": action.feedback,
                "decided_by": action.decided_by,
                "resolved_at": None if action.resolved_at is None else action.resolved_at.isoformat(),
                "edited_args": action.edited_args,
            },
            default=str,
        )
    )
    return data
