"""``WebhookNotifier``: a JSON event POSTed when a call waits for a person, and when it is answered.

Delivery happens on a thread of the notifier's own, from a bounded queue, with retries and exponential
backoff: the agent's call never waits for the receiver and never fails because of it (what cannot be
delivered is logged on the ``ask_permissions.notify`` logger). Each request is signed with HMAC-SHA256 over
``<timestamp>.<body>``, so a receiver can check that it came from the holder of the secret, and when.
Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import queue as queues
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any, Final, Literal, TypeAlias, final

from ask_permissions._errors import preview

if TYPE_CHECKING:
    from http.client import HTTPMessage

    from ask_permissions.queue._action import Action
    from ask_permissions.queue._queue import ApprovalQueue

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "WebhookNotifier", "sign", "slack_message"]

SIGNATURE_HEADER: Final = "X-Ask-Permissions-Signature"
"""``sha256=<hex>``: HMAC-SHA256 with the shared secret over ``<timestamp>.<body>``."""
TIMESTAMP_HEADER: Final = "X-Ask-Permissions-Timestamp"
"""Seconds since the epoch when the request was signed (a receiver refuses old ones: replays)."""
EVENT_HEADER: Final = "X-Ask-Permissions-Event"
DELIVERY_HEADER: Final = "X-Ask-Permissions-Delivery"

EventName: TypeAlias = Literal["submitted", "resolved"]
Payload: TypeAlias = Callable[[dict[str, Any]], Mapping[str, Any]]
"""Turns an event into the JSON body to send (``slack_message`` for a Slack incoming webhook)."""

_logger: Final = logging.getLogger("ask_permissions.notify")
_RETRY_STATUSES: Final = frozenset({408, 425, 429, 500, 502, 503, 504})


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is the receiver's answer, never followed: urllib would turn the POST into a GET without
    the event, and count whatever answered that as a delivery (or send the request to another host)."""

    def redirect_request(  # noqa: PLR0917  # urllib calls it with these six, by position
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


_open: Final = urllib.request.build_opener(_NoRedirects).open


def _address(url: object) -> str:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"url: expected an http:// or https:// address; got {preview(url)}")
    return url


def _key(secret: object) -> bytes:
    if isinstance(secret, str):
        secret = secret.encode()
    if not isinstance(secret, bytes):
        raise TypeError(f"secret: expected a string or bytes; got {preview(secret)}")
    if not secret:
        raise ValueError("secret: expected a non-empty key, shared with the receiver")
    return secret


def _seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{name}: expected a non-negative number of seconds; got {preview(value)}")
    return float(value)


def _count(name: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name}: expected an integer of at least {least}; got {preview(value)}")
    return value


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``: ``sha256=<hex>``."""
    digest = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def event_data(name: EventName, session: str, action: Action) -> dict[str, Any]:
    """The event for one action: what a receiver (or a chat message) needs, as JSON-safe data."""
    why = action.why
    return {
        "event": name,
        "session": session,
        "action": {
            "id": action.id,
            "status": action.status,
            "tool": action.tool_name,
            "tool_call_id": action.tool_call_id,
            "args": action.args,
            "reason": why["reason"] if why is not None else action.message,
            "layer": None if why is None else why["layer"],
            "rule": None if why is None else why["rule"],
            "suggestions": [] if why is None else list(why["suggestions"]),
            "submitted_at": action.submitted_at.isoformat(),
            "scope": action.resolution_scope,
            "feedback": action.feedback,
            "decided_by": action.decided_by,
            "resolved_at": None if action.resolved_at is None else action.resolved_at.isoformat(),
            "edited": action.is_edited,
        },
    }


def slack_message(event: dict[str, Any]) -> dict[str, Any]:
    """A Slack incoming-webhook body (``{"text": ...}``) for an event: who waits for what, or who answered."""
    action = event["action"]
    tool = _slack_text(action["tool"])
    where = f"#{action['id']} in session {_slack_text(event['session'])}"
    args = json.dumps(action["args"], ensure_ascii=False, default=str)
    if len(args) > 500:
        args = args[:497] + "..."
    if event["event"] == "submitted":
        reason = f": {_slack_text(action['reason'])}" if action["reason"] else ""
        text = f":raised_hand: {tool} waits for approval ({where}){reason}\n```{_slack_text(args)}```"
    else:
        by = f" by {_slack_text(action['decided_by'])}" if action["decided_by"] else ""
        detail = (
            f" (scope {action['scope']}{', edited' if action['edited'] else ''})" if action["scope"] else ""
        )
        feedback = f": {_slack_text(action['feedback'])}" if action["feedback"] else ""
        text = f"{tool} {where} was {action['status']}{by}{detail}{feedback}"
    return {"text": text}


def _slack_text(value: object) -> str:
    """What a model, a tool or a person wrote, as text in a Slack message and nothing more: ``&``, ``<`` and
    ``>`` as the entities Slack asks for (so it holds no mention and no link of its own), a zero-width space
    after each backtick (so it neither opens nor closes a code block), and every unprintable character, a
    line break among them, as its escape (so it stays on its line and in its order)."""
    text = "".join(
        char
        if char.isprintable()
        else json.dumps(char)[1:-1]
        if ord(char) < 0x10000
        else f"\\U{ord(char):08x}"
        for char in str(value)
    )
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "`\u200b")


@final
class WebhookNotifier:
    """POSTs a signed JSON event to ``url`` when a queued call waits (``submitted``) and when it is answered
    (``resolved``), on a background thread, retrying with exponential backoff.

    ``attach(queue)`` wires it to a queue (its ``on_submit``, kept and called first, and its resolutions,
    wherever they are made). Nothing it does can block or fail the agent's call: events beyond ``capacity``
    waiting are dropped (and logged), and a delivery that fails ``retries`` times is logged and dropped.

    Thread-safe: events are handed over through a queue; one thread delivers them in order.

    Args:
        url: where to POST (``http://`` or ``https://``).
        secret: the HMAC-SHA256 key, shared with the receiver.
        payload: turns an event into the body (default: the event itself; ``slack_message`` for Slack).
        timeout: seconds one request may take.
        retries: attempts after the first, for a network error or a 408/425/429/5xx answer.
        backoff: seconds before the first retry; each next one waits twice as long, up to ``max_backoff``.
        capacity: events that may wait for delivery at once.

    Raises:
        ValueError: a URL that is not http(s), an empty secret, a negative number.
        TypeError: a secret that is neither str nor bytes, a payload that is not callable.
    """

    def __init__(
        self,
        url: str,
        *,
        secret: str | bytes,
        payload: Payload | None = None,
        timeout: float = 5.0,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        capacity: int = 1000,
    ) -> None:
        address = _address(url)
        key = _key(secret)
        if payload is not None and not callable(payload):
            raise TypeError(f"payload: expected a callable or None; got {preview(payload)}")
        self._url: Final = address
        self._secret: Final = key
        self._payload: Final[Payload] = payload or dict
        self._timeout: Final = _seconds("timeout", timeout)
        self._retries: Final = _count("retries", retries, 0)
        self._backoff: Final = _seconds("backoff", backoff)
        self._max_backoff: Final = _seconds("max_backoff", max_backoff)
        self._events: Final[queues.Queue[tuple[str, dict[str, Any]] | None]] = queues.Queue(
            _count("capacity", capacity, 1)
        )
        self._stopped: Final = threading.Event()
        self._lock: Final = threading.Lock()
        self._thread: threading.Thread | None = None
        self._delivered = 0
        self._dropped = 0

    def __repr__(self) -> str:
        return f"<WebhookNotifier url={self._url!r} delivered={self._delivered} dropped={self._dropped}>"

    @property
    def delivered(self) -> int:
        """Events the receiver accepted (a 2xx answer)."""
        with self._lock:
            return self._delivered

    @property
    def dropped(self) -> int:
        """Events given up on: the queue was full, or every attempt failed."""
        with self._lock:
            return self._dropped

    # -- events ----------------------------------------------------------------------------------------------

    def attach(self, queue: ApprovalQueue) -> Callable[[], None]:
        """Send ``queue``'s submissions and resolutions; returns a function that stops sending them."""
        previous = queue.on_submit
        session = queue.session

        def on_submit(action: Action) -> None:
            if previous is not None:
                previous(action)
            self.notify("submitted", session, action)

        queue.on_submit = on_submit
        remove = queue.observe_resolutions(lambda action, automatic: self.notify("resolved", session, action))

        def detach() -> None:
            remove()
            if queue.on_submit is on_submit:
                queue.on_submit = previous

        return detach

    def notify(self, name: EventName, session: str, action: Action) -> None:
        """Queue one event for delivery; never blocks, never raises."""
        try:
            event = event_data(name, session, action)
            self._start()
            self._events.put_nowait((name, event))
        except queues.Full:
            self._drop(f"{name} event of action {action.id}: {self._events.maxsize} events wait already")
        except Exception as error:  # an event that cannot even be made must not fail the agent's call
            self._drop(f"{name} event of action {getattr(action, 'id', '?')}: {error!r}")

    def close(self, timeout: float = 10.0) -> None:
        """Deliver what waits (for up to ``timeout`` seconds), then stop the thread."""
        thread = self._thread
        if thread is None:
            return
        deadline = time.monotonic() + timeout
        with contextlib.suppress(queues.Full):  # full until the thread takes some: it stops below anyway
            self._events.put(None, timeout=max(0.0, timeout))
        thread.join(max(0.0, deadline - time.monotonic()))
        self._stopped.set()
        thread.join(1.0)

    # -- delivery --------------------------------------------------------------------------------------------

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ask_permissions webhook", daemon=True)
                self._thread.start()

    def _drop(self, why: str) -> None:
        with self._lock:
            self._dropped += 1
        _logger.warning("webhook %s: dropped the %s", self._url, why)

    def _run(self) -> None:
        while True:
            item = self._events.get()
            if item is None:
                return
            name, event = item
            try:
                body = json.dumps(self._payload(event), ensure_ascii=False, default=str).encode()
            except Exception as error:  # a payload function's own failure: this event only
                self._drop(f"{name} event: the payload could not be made ({error!r})")
                continue
            self._deliver(name, body)

    def _deliver(self, name: str, body: bytes) -> None:
        delivery = uuid.uuid4().hex
        wait = self._backoff
        for attempt in range(self._retries + 1):
            if attempt:
                if self._stopped.wait(wait):
                    self._drop(f"{name} event: the notifier closed while retrying")
                    return
                wait = min(wait * 2, self._max_backoff)
            status, problem = self._post(name, body, delivery)
            if status is not None and 200 <= status < 300:
                with self._lock:
                    self._delivered += 1
                return
            if status is not None and status not in _RETRY_STATUSES:
                redirect = ", a redirect, which is not followed" if 300 <= status < 400 else ""
                self._drop(f"{name} event: the receiver answered {status}{redirect} (not retried)")
                return
            _logger.info(
                "webhook %s: attempt %d of the %s event failed: %s", self._url, attempt + 1, name, problem
            )
        self._drop(f"{name} event after {self._retries + 1} attempts")

    def _post(self, name: str, body: bytes, delivery: str) -> tuple[int | None, str]:
        timestamp = str(int(time.time()))
        request = urllib.request.Request(  # the URL's scheme is checked at construction
            self._url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "User-Agent": "ask-permissions-webhook",
                SIGNATURE_HEADER: sign(self._secret, timestamp, body),
                TIMESTAMP_HEADER: timestamp,
                EVENT_HEADER: name,
                DELIVERY_HEADER: delivery,
            },
        )
        try:
            with _open(request, timeout=self._timeout) as response:  # as above
                response.read()
                return int(response.status), ""
        except urllib.error.HTTPError as error:
            return int(error.code), f"HTTP {error.code}"
        except (OSError, ValueError) as error:  # unreachable, refused, timed out, a bad answer
            return None, repr(error)
