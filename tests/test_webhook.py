"""WebhookNotifier: signed JSON events on submit and on resolution, retried in the background, against a
real HTTP receiver on 127.0.0.1; the agent's call never waits for it or fails because of it."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ask_permissions import ApprovalQueue, WebhookNotifier, slack_message
from ask_permissions.notify._webhook import event_data

SECRET = b"shared-secret"
WAIT = 20.0  # seconds a test waits for what must happen (never a timing assertion)


class Receiver:
    """An HTTP server on 127.0.0.1 that records each request and answers with the statuses it is given."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.changed = threading.Condition()
        self.hold = threading.Event()  # set: each request waits for ``release`` before it is answered
        self.release = threading.Event()
        self.holding = threading.Event()
        self.location: str | None = None  # sent with every answer (a redirect, with a 3xx status)
        self.gets: list[str] = []  # paths asked for with GET (a notifier that followed a redirect)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.hold.is_set():
                    receiver.holding.set()
                    receiver.release.wait(WAIT)
                with receiver.changed:
                    receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.changed.notify_all()
                self.send_response(status)
                if receiver.location is not None:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                with receiver.changed:
                    receiver.gets.append(self.path)
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int) -> list[tuple[dict[str, str], bytes]]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.requests) >= count, WAIT), self.requests
            return list(self.requests)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(WAIT)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    try:
        yield made
    finally:
        made.close()


def _notifier(url: str, **options: Any) -> WebhookNotifier:
    return WebhookNotifier(url, secret=SECRET, backoff=0.01, max_backoff=0.05, **options)


def _verified(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The body, once its signature checks out as a receiver would check it."""
    timestamp = headers["x-ask-permissions-timestamp"]
    expected = hmac.new(SECRET, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["x-ask-permissions-signature"], f"sha256={expected}")
    event: dict[str, Any] = json.loads(body)
    return event


class TestEvents:
    """A submit and its resolution each POST one signed JSON event."""

    def test_submit_and_resolution(self, receiver: Receiver) -> None:
        """The events name the session, the action, why it waits and who answered, signed with the secret."""
        notifier = _notifier(receiver.url)
        queue = ApprovalQueue(session="agent-1")
        notifier.attach(queue)
        why: Any = {
            "layer": "default",
            "reason": "Tool 'Bash' requires approval",
            "suggestions": ["Bash(ls)"],
        }
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "ls"}, why=why)
        queue.approve(1, arguments={"command": "ls -a"}, decided_by="ann")
        requests = receiver.wait_for(2)
        notifier.close()
        submitted, resolved = (_verified(headers, body) for headers, body in requests)
        assert [headers["x-ask-permissions-event"] for headers, _ in requests] == ["submitted", "resolved"]
        assert submitted["event"] == "submitted"
        assert submitted["session"] == "agent-1"
        assert submitted["action"]["reason"] == "Tool 'Bash' requires approval"
        assert submitted["action"]["suggestions"] == ["Bash(ls)"]
        assert resolved["action"]["status"] == "approved"
        assert (resolved["action"]["decided_by"], resolved["action"]["edited"]) == ("ann", True)
        assert notifier.delivered == 2

    def test_a_tampered_body_fails_the_check(self, receiver: Receiver) -> None:
        """The signature covers the body: one changed byte no longer verifies."""
        notifier = _notifier(receiver.url)
        queue = ApprovalQueue()
        notifier.attach(queue)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        [(headers, body)] = receiver.wait_for(1)
        notifier.close()
        with pytest.raises(AssertionError):
            _verified(headers, body.replace(b"Bash", b"bash"))

    def test_the_host_on_submit_still_runs(self, receiver: Receiver) -> None:
        """attach keeps the queue's own on_submit, called first; detach restores it."""
        seen: list[int] = []
        queue = ApprovalQueue(on_submit=lambda action: seen.append(action.id))
        notifier = _notifier(receiver.url)
        detach = notifier.attach(queue)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        receiver.wait_for(1)
        detach()
        queue.submit(tool_call_id="c2", tool_name="Bash")
        notifier.close()
        assert seen == [1, 2]
        assert len(receiver.requests) == 1

    def test_slack_messages(self, receiver: Receiver) -> None:
        """payload=slack_message sends Slack's {"text": ...}: what waits, and who answered how."""
        notifier = _notifier(receiver.url, payload=slack_message)
        queue = ApprovalQueue(session="s")
        notifier.attach(queue)
        queue.submit(tool_call_id="c1", tool_name="Bash", args={"command": "make"}, message="needs eyes")
        queue.reject(1, feedback="not now", decided_by="bob")
        requests = receiver.wait_for(2)
        notifier.close()
        texts = [json.loads(body)["text"] for _, body in requests]
        assert texts[0].startswith(":raised_hand: Bash waits for approval (#1 in session s): needs eyes")
        assert '{"command": "make"}' in texts[0]
        assert texts[1] == "Bash #1 in session s was rejected by bob: not now"

    @pytest.mark.parametrize("where", ["tool", "args", "reason", "session", "feedback", "decided_by"])
    def test_slack_messages_carry_no_markup_of_the_call(self, where: str) -> None:
        """What a model or a tool wrote reaches the channel as text: no mention, no link of its own, no
        end to the arguments' code block, no line that looks like another message."""
        hostile = (
            "```\n:white_check_mark: approved by ann <!channel> <https://evil.example|Open the inbox> &amp;"
        )
        queue = ApprovalQueue(session=hostile.replace("\n", " ") if where == "session" else "s")
        queue.submit(
            tool_call_id="c1",
            tool_name=hostile if where == "tool" else "Bash",
            args={"command": hostile if where == "args" else "make"},
            message=hostile if where == "reason" else "needs eyes",
        )
        submitted = event_data("submitted", queue.session, queue[1])  # type: ignore[arg-type]
        queue.reject(
            1,
            feedback=hostile if where == "feedback" else None,
            decided_by=hostile.replace("\n", " ") if where == "decided_by" else "bob",
        )
        resolved = event_data("resolved", queue.session, queue[1])  # type: ignore[arg-type]
        texts = [slack_message(submitted)["text"], slack_message(resolved)["text"]]
        for text, fences in zip(texts, (2, 0), strict=True):
            assert "<" not in text, text  # Slack's mentions and links all start with one
            assert ">" not in text, text
            assert text.count("```") == fences, text  # only the arguments' own block
            assert not any(line.startswith(":white_check_mark:") for line in text.splitlines()), text
        shown = "".join(texts)
        assert "&lt;!channel&gt; &lt;https://evil.example|Open the inbox&gt; &amp;amp;" in shown


class TestDelivery:
    """Retries with backoff, in the background; nothing blocks or fails the agent's call."""

    def test_retried_until_accepted(self) -> None:
        """A 503 and a 500 are retried; the third attempt's 200 delivers the event once."""
        receiver = Receiver([503, 500, 200])
        try:
            notifier = _notifier(receiver.url)
            queue = ApprovalQueue()
            notifier.attach(queue)
            queue.submit(tool_call_id="c1", tool_name="Bash")
            requests = receiver.wait_for(3)
            notifier.close()
            deliveries = {headers["x-ask-permissions-delivery"] for headers, _ in requests}
            assert len(deliveries) == 1  # one event, three attempts
            assert (notifier.delivered, notifier.dropped) == (1, 0)
        finally:
            receiver.close()

    @pytest.mark.parametrize("status", [400, 301, 302, 303, 307, 308])
    def test_a_refusal_or_redirect_is_not_retried(self, status: int) -> None:
        """A 400 says the event itself is wrong; a 3xx is not followed (the event would be lost, or sent
        elsewhere): dropped after one attempt, never counted delivered."""
        receiver = Receiver([status])
        try:
            receiver.location = receiver.url.replace("/hook", "/elsewhere")
            notifier = _notifier(receiver.url)
            queue = ApprovalQueue()
            notifier.attach(queue)
            queue.submit(tool_call_id="c1", tool_name="Bash")
            notifier.close()
            assert len(receiver.requests) == 1
            assert receiver.gets == []
            assert (notifier.delivered, notifier.dropped) == (0, 1)
        finally:
            receiver.close()

    def test_a_slow_receiver_never_blocks_the_agent(self, receiver: Receiver) -> None:
        """While the receiver holds the first request, the agent submits and resolves as usual."""
        receiver.hold.set()
        notifier = _notifier(receiver.url)
        queue = ApprovalQueue()
        notifier.attach(queue)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        assert receiver.holding.wait(WAIT)
        queue.submit(tool_call_id="c2", tool_name="Bash")  # returns while the first delivery hangs
        queue.reject(1, feedback="no")
        assert [action.id for action in queue.pending_actions] == [2]
        receiver.hold.clear()
        receiver.release.set()
        receiver.wait_for(3)
        notifier.close()
        assert notifier.delivered == 3

    def test_an_unreachable_receiver_never_fails_the_agent(self) -> None:
        """Nobody listens: every submit works, and each event is dropped after its retries."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        notifier = _notifier(f"http://127.0.0.1:{port}/hook", retries=2, timeout=1.0)
        queue = ApprovalQueue()
        notifier.attach(queue)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        queue.approve(1)
        notifier.close()
        assert queue[1].is_approved  # type: ignore[union-attr]
        assert (notifier.delivered, notifier.dropped) == (0, 2)

    def test_a_full_queue_drops_instead_of_waiting(self, receiver: Receiver) -> None:
        """Beyond capacity, events are dropped (and counted); the agent's submits go on."""
        receiver.hold.set()
        notifier = _notifier(receiver.url, capacity=1)
        queue = ApprovalQueue()
        notifier.attach(queue)
        queue.submit(tool_call_id="c1", tool_name="Bash")
        assert receiver.holding.wait(WAIT)  # the thread holds event 1; event 2 waits; event 3 has no room
        queue.submit(tool_call_id="c2", tool_name="Bash")
        queue.submit(tool_call_id="c3", tool_name="Bash")
        assert notifier.dropped == 1
        receiver.release.set()
        notifier.close()
        assert notifier.delivered == 2


class TestConstruction:
    """Bad settings are refused when the notifier is made."""

    @pytest.mark.parametrize(
        ("options", "error", "match"),
        [
            ({"url": "ftp://x", "secret": "s"}, ValueError, "url: expected an http:// or https:// address"),
            ({"url": "http://x", "secret": ""}, ValueError, "secret: expected a non-empty key"),
            ({"url": "http://x", "secret": 3}, TypeError, "secret: expected a string or bytes"),
            ({"url": "http://x", "secret": "s", "retries": -1}, ValueError, "retries: expected an integer"),
            (
                {"url": "http://x", "secret": "s", "timeout": -1},
                ValueError,
                "timeout: expected a non-negative",
            ),
            (
                {"url": "http://x", "secret": "s", "payload": "slack"},
                TypeError,
                "payload: expected a callable",
            ),
        ],
        ids=["scheme", "empty-secret", "secret-type", "retries", "timeout", "payload"],
    )
    def test_refused(self, options: dict[str, Any], error: type[Exception], match: str) -> None:
        """Each names the setting and what was expected."""
        url = options.pop("url")
        with pytest.raises(error, match=match):
            WebhookNotifier(url, **options)
