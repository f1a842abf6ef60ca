"""ask-permissions inbox: the web page over a store, in a real headless Chromium and over plain HTTP.

The inbox and the agent each run as their own process on one SQLite file. The agent asks a LayeredPolicy
about each call of its plan and "runs" (records) what comes back approved; nothing is executed.
"""

from __future__ import annotations

import contextlib
import html
import http.client
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ask_permissions import ApprovalQueue, SqliteStore
from ask_permissions.inbox._page import NEEDS_SCRIPT, NO_TOKEN, TOKEN_REFUSED
from ask_permissions.typing import AskExplanation

from .inbox_agent import AgentProcess
from .inbox_web import REQUIRE_BROWSER, InboxServer, chromium

SCREENSHOTS = "ASK_PERMISSIONS_SCREENSHOTS"
"""A folder to copy the screenshots into (they are always written to the test's own folder)."""
LONG = "line of the new notes\n" * 300  # 6,600 characters: the page folds it
PLAN: list[Any] = [
    ["Bash", {"command": "npm test"}],
    ["Bash", {"command": "rm -rf build dist"}],
    ["Bash", {"command": "rm -rf build dist"}],
    ["Write", {"file_path": "/work/project/NOTES.md", "content": LONG}],
]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SECONDS = 20_000  # milliseconds Playwright waits for what must happen (never a timing assertion)


def _why(reason: str, suggestions: list[str]) -> AskExplanation:
    return {
        "layer": "ask_rule",
        "rule": "Bash(git push *)",
        "source": "project",
        "reason": reason,
        "suggestions": suggestions,
        "scopes": {
            "once": "runs this call once",
            "session": "adds Bash(git push origin main) to the session",
        },
    }


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "approvals.db"


@pytest.fixture
def inbox(store_path: Path) -> Iterator[InboxServer]:
    """The real inbox, answering as ann."""
    server = InboxServer(f"sqlite:///{store_path}", user="ann")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium (the system's), or a skip; a failure where CI requires it."""
    with chromium() as context:
        if context is None:
            if os.environ.get(REQUIRE_BROWSER):
                pytest.fail(f"{REQUIRE_BROWSER} is set, but there is no headless Chromium (or no Playwright)")
            pytest.skip("no headless Chromium here (chromium-headless-shell or chromium)")
        yield context


def _screenshot(page: Any, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    copy_to = os.environ.get(SCREENSHOTS)
    if copy_to:
        Path(copy_to).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(copy_to) / path.name)
    return path


def _card(page: Any, action_id: int, session: str) -> Any:
    return page.locator(f'article.action[data-key="{action_id}@{session}"]')


def _assert_fits(page: Any, width: int) -> None:
    """Nothing is wider than the window: no sideways scrolling, every card's buttons on screen."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for button in page.locator("article.action .buttons button").all()[:6]:
        box = button.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width


class TestInBrowser:
    """A person answers a waiting agent on the page: approve, reject with feedback, edit and approve."""

    def test_the_agent_runs_exactly_what_was_approved(
        self, inbox: InboxServer, browser: Any, store_path: Path, tmp_path: Path
    ) -> None:
        """Each answer given on the page reaches the waiting agent; only what was approved ran, as it was."""
        other = SqliteStore(store_path)  # a second agent's session, so the page has several cards to show
        try:
            second = ApprovalQueue(store=other, session="agent-2")
            second.submit(
                tool_call_id="p1",
                tool_name="Bash",
                args={"command": "git push origin main"},
                why=_why("Tool 'Bash' requires approval", ["Bash(git push origin main)"]),
            )
            agent = AgentProcess(store_path, "agent-1", tmp_path, PLAN, tmp_path)
            try:
                self._answer_on_the_page(inbox, browser, agent, tmp_path)
                agent.until("done")
            finally:
                agent.stop()
        finally:
            other.close()
        ran = [(event["tool"], event["args"]) for event in agent.events if event["event"] == "ran"]
        assert ran == [
            ("Bash", {"command": "npm test"}),
            ("Bash", {"command": "rm -rf build"}),  # the edit, never the model's "rm -rf build dist"
            ("Write", {"file_path": "/work/project/NOTES.md", "content": LONG}),
        ]
        refused = [event["reason"] for event in agent.events if event["event"] == "refused"]
        assert refused == ["The call to 'Bash' was rejected: remove build only, keep dist"]
        resolutions = [
            (event["verdict"], event.get("decided_by"))
            for event in agent.events
            if event["event"] == "record" and event["verdict"] != "ask"
        ]
        assert resolutions == [
            ("ask_allowed", "ann"),
            ("ask_denied", "ann"),
            ("allow_modified", "ann"),
            ("ask_allowed", "ann"),
        ]

    def _answer_on_the_page(
        self, inbox: InboxServer, context: Any, agent: AgentProcess, folder: Path
    ) -> None:
        page = context.new_page()
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.set_viewport_size(DESKTOP)
        first = agent.until("pending")
        page.goto(inbox.url)
        assert "token=" not in page.url  # the script took the token out of the address bar
        page.locator("#live.on").wait_for(timeout=SECONDS)
        card = _card(page, first["action_id"], "agent-1")
        card.wait_for(timeout=SECONDS)
        # Every pending action of every session, oldest first: agent-2's came first.
        keys = page.locator("article.action").evaluate_all("cards => cards.map(card => card.dataset.key)")
        assert keys == ["1@agent-2", f"{first['action_id']}@agent-1"]
        other = _card(page, 1, "agent-2")
        assert other.locator(".reason").inner_text() == "Tool 'Bash' requires approval"
        assert "Bash(git push *)" in other.locator("dl.why").inner_text()
        assert other.locator(".suggestions code").inner_text() == "Bash(git push origin main)"
        assert other.locator("select[name=scope] option").all_inner_texts() == [
            "once: runs this call once",
            "session: adds Bash(git push origin main) to the session",
        ]
        for name in ("Approve", "Reject", "Edit"):
            assert card.get_by_role("button", name=name, exact=True).is_visible()
        assert card.get_by_label("Feedback for the model (on reject)").is_visible()
        assert page.locator("#pending-count").inner_text() == "2"
        _screenshot(page, folder, "inbox-desktop")
        _assert_fits(page, DESKTOP["width"])
        page.set_viewport_size(PHONE)
        _assert_fits(page, PHONE["width"])
        assert card.get_by_role("button", name="Approve", exact=True).is_visible()
        _screenshot(page, folder, "inbox-phone")
        page.set_viewport_size(DESKTOP)
        self._answer_each(page, agent, folder, first["action_id"])
        self._look_back(page, folder)
        # No asset came from the network: every request went to the inbox itself.
        assert requests
        assert all(url.startswith(inbox.origin + "/") for url in requests), requests
        assert all(inbox.token not in url for url in requests)  # the token in no address the page asked for

    def _answer_each(self, page: Any, agent: AgentProcess, folder: Path, first: int) -> None:
        """Approve, reject with feedback, edit (a typo first) and approve, unfold and approve."""
        # 1. Approve as asked.
        card = _card(page, first, "agent-1")
        card.get_by_role("button", name="Approve", exact=True).click()
        card.locator(".notice", has_text="approved").wait_for(timeout=SECONDS)

        # 2. Reject with feedback: the new call shows up by itself (no reload).
        second = agent.until("pending")
        card = _card(page, second["action_id"], "agent-1")
        card.wait_for(timeout=SECONDS)
        card.get_by_label("Feedback for the model (on reject)").fill("remove build only, keep dist")
        card.get_by_role("button", name="Reject", exact=True).click()
        card.locator(".notice", has_text="rejected").wait_for(timeout=SECONDS)

        # 3. Edit, fix a typo first (the parse error is shown, nothing is approved), then approve the edit.
        third = agent.until("pending")
        card = _card(page, third["action_id"], "agent-1")
        card.wait_for(timeout=SECONDS)
        card.get_by_role("button", name="Edit", exact=True).click()
        editor = card.get_by_label("Edited arguments (JSON)")
        editor.fill('{"command": "rm -rf build"')
        card.get_by_role("button", name="Approve", exact=True).click()
        card.locator(".notice", has_text="edited arguments are not JSON").wait_for(timeout=SECONDS)
        _screenshot(page, folder, "inbox-edit-error")
        editor.fill('{"command": "rm -rf build"}')
        card.get_by_role("button", name="Approve", exact=True).click()
        card.locator(".notice", has_text="edited").wait_for(timeout=SECONDS)

        # 4. A long value folds; Approve waits until it was shown whole.
        fourth = agent.until("pending")
        card = _card(page, fourth["action_id"], "agent-1")
        card.wait_for(timeout=SECONDS)
        approve = card.get_by_role("button", name="Approve", exact=True)
        assert approve.is_disabled()
        assert card.locator(".fold-note").is_visible()
        _screenshot(page, folder, "inbox-folded")
        card.get_by_role("button", name="Show all 6,600 characters").click()
        assert card.locator("pre.json").inner_text().count("line of the new notes") == 300
        assert approve.is_enabled()
        approve.click()
        card.locator(".notice", has_text="approved").wait_for(timeout=SECONDS)

    def _look_back(self, page: Any, folder: Path) -> None:
        """The history shows who answered, when, how, and which answer was an edit, at both widths."""
        page.get_by_role("link", name="History").click()
        rows = page.locator("#history tbody tr")
        rows.first.wait_for(timeout=SECONDS)
        assert rows.count() == 4
        texts = rows.all_inner_texts()
        assert "rejected" in texts[2]
        assert "remove build only, keep dist" in texts[2]
        assert "edited" in texts[1]
        assert "approved (once)" in texts[1]
        assert all("ann" in text for text in texts)
        _screenshot(page, folder, "inbox-history-desktop")
        page.set_viewport_size(PHONE)
        _assert_fits(page, PHONE["width"])
        _screenshot(page, folder, "inbox-history-phone")

    def test_filters_and_a_resolution_elsewhere(
        self, inbox: InboxServer, browser: Any, store_path: Path
    ) -> None:
        """Filters by session and tool keep their cards; a card answered by another process says by whom."""
        store = SqliteStore(store_path)
        try:
            first, second = ApprovalQueue(store=store, session="s1"), ApprovalQueue(store=store, session="s2")
            first.submit(tool_call_id="a", tool_name="Bash", args={"command": "ls"})
            first.submit(tool_call_id="b", tool_name="Edit", args={"file_path": "a.txt"})
            second.submit(tool_call_id="c", tool_name="Bash", args={"command": "pwd"})
            page = browser.new_page()
            page.goto(inbox.url)
            page.locator("#live.on").wait_for(timeout=SECONDS)
            page.get_by_label("Session").select_option("s1")
            page.get_by_label("Tool").select_option("Bash")
            page.get_by_role("button", name="Filter").click()
            page.locator("#live.on").wait_for(timeout=SECONDS)
            keys = page.locator("article.action").evaluate_all("cards => cards.map(card => card.dataset.key)")
            assert keys == ["1@s1"]
            # The person starts answering; meanwhile someone else rejects the call in another process.
            card = _card(page, 1, "s1")
            card.get_by_label("Feedback for the model (on reject)").fill("thinking about it")
            first.reject(1, feedback="no", decided_by="bob")
            card.locator(".notice", has_text="already rejected by bob").wait_for(timeout=SECONDS)
            assert card.locator("button.approve").is_disabled()  # and hidden: only the outcome shows
            # A new call of the filtered session and tool appears by itself; one of another tool does not.
            first.submit(tool_call_id="d", tool_name="Bash", args={"command": "make"})
            first.submit(tool_call_id="e", tool_name="Edit", args={"file_path": "b.txt"})
            _card(page, 3, "s1").wait_for(timeout=SECONDS)
            assert _card(page, 4, "s1").count() == 0
        finally:
            store.close()


class _Recorder(BaseHTTPRequestHandler):
    """Another server of the machine (a development server an agent started): it keeps every request."""

    received: list[tuple[str, dict[str, str]]]  # the path and the headers of each request, set per server

    def do_GET(self) -> None:
        self.received.append((self.path, {name.lower(): value for name, value in self.headers.items()}))
        body = b"<!doctype html><title>the agent's dev server</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _other_server() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    """A recording HTTP server on another port of 127.0.0.1: its origin, and what it received."""
    received: list[tuple[str, dict[str, str]]] = []
    handler = type("Recorder", (_Recorder,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class TestTheTokenStaysHome:
    """No credential the browser sends by itself: the inbox's token reaches no other server of the host."""

    def test_another_server_of_the_host_learns_nothing(
        self, inbox: InboxServer, browser: Any, store_path: Path
    ) -> None:
        """After the inbox was opened, a server on another port of 127.0.0.1 opened in the same browser (a tab
        of its own, then the inbox's tab) receives no cookie and nothing holding the token; its page cannot
        read the token nor answer; and what it received, replayed at the inbox, reads and answers nothing."""
        store = SqliteStore(store_path)
        try:
            queue = ApprovalQueue(store=store, session="agent-1")
            queue.submit(tool_call_id="a", tool_name="Bash", args={"command": "rm -rf build"})
            page = browser.new_page()
            responses: list[Any] = []

            def keep(response: Any) -> None:  # Playwright takes a Python function, not a bound builtin
                responses.append(response)

            page.on("response", keep)
            page.goto(inbox.url)
            page.locator("#live.on").wait_for(timeout=SECONDS)
            _card(page, 1, "agent-1").wait_for(timeout=SECONDS)
            assert inbox.token not in page.url
            assert browser.cookies() == []
            # Nothing the inbox answered (the page, its assets, the view, the events) set a cookie.
            assert len(responses) >= 4
            for response in responses:
                assert "set-cookie" not in response.all_headers(), response.url
            form = {**inbox.card_form("agent-1", 1), "decision": "approve", "scope": "once"}
            with _other_server() as (other, received):
                tab = browser.new_page()
                tab.goto(other + "/index.html")
                # The other server's own page tries what a script of its origin can: read a cookie or the
                # inbox's storage, read the inbox, and answer there (the form's fields known, even).
                assert tab.evaluate("document.cookie") == ""
                assert tab.evaluate("sessionStorage.length") == 0
                attempts = tab.evaluate(
                    """async ([inbox, form]) => {
                        const done = [];
                        for (const path of ["/view", "/fragment", "/action?session=agent-1&id=1"]) {
                            try {
                                const response = await fetch(inbox + path, {credentials: "include"});
                                done.push(path + " read " + response.status);
                            } catch (error) {
                                done.push(path + " refused");
                            }
                        }
                        await fetch(inbox + "/answer", {
                            method: "POST", mode: "no-cors", credentials: "include",
                            body: new URLSearchParams(form),
                        });
                        return done;
                    }""",
                    [inbox.origin, form],
                )
                assert all(attempt.endswith(" refused") for attempt in attempts), attempts
                page.goto(other + "/from-the-inbox-tab")  # the inbox's own tab goes there too
                page.get_by_text("hello").wait_for(timeout=SECONDS)
                tab.close()
            assert {path for path, _ in received} >= {"/index.html", "/from-the-inbox-tab"}
            for path, headers in received:
                assert "cookie" not in headers, (path, headers)
                assert "authorization" not in headers, (path, headers)
                assert inbox.token not in path
                assert all(inbox.token not in value for value in headers.values()), (path, headers)
            # Whoever read those requests replays them at the inbox: nothing is read, nothing is answered.
            for _, headers in received:
                replayed = {name: value for name, value in headers.items() if name != "host"}
                for path in _data_paths("agent-1"):
                    status, _, body = inbox.request("GET", path, authorization=None, headers=replayed)
                    assert status == 401, path
                    assert "rm -rf build" not in body
                status, _ = inbox.answer(form, authorization=None, headers=replayed)
                assert status == 401
            assert queue.is_pending(1)
        finally:
            store.close()

    def test_a_tab_without_the_token_shows_one_line(
        self, inbox: InboxServer, browser: Any, store_path: Path
    ) -> None:
        """A second tab opened at the plain address shows only the line saying to open the printed address;
        a tab given a wrong token says the inbox refused it; the printed address pasted into either opens
        the inbox there; the first tab keeps its token when reloaded and when following a link."""
        store = SqliteStore(store_path)
        try:
            ApprovalQueue(store=store, session="agent-1").submit(
                tool_call_id="a", tool_name="Bash", args={"command": "make deploy"}
            )
            first = browser.new_page()
            first.goto(inbox.url)
            _card(first, 1, "agent-1").wait_for(timeout=SECONDS)
            second = browser.new_page()
            second.goto(inbox.origin + "/")
            second.locator("#no-token").wait_for(timeout=SECONDS)
            assert second.locator("body").inner_text().strip() == NO_TOKEN
            assert second.locator("#inbox").inner_html() == ""
            third = browser.new_page()
            third.goto(inbox.origin + "/?view=history#token=wrong")
            third.locator("#token-refused").wait_for(timeout=SECONDS)
            assert third.locator("body").inner_text().strip() == TOKEN_REFUSED
            assert third.url == inbox.origin + "/?view=history"  # the wrong token left the address too
            assert third.evaluate("sessionStorage.length") == 0  # and the tab: it keeps no token refused
            for tab in (second, third):  # the printed address, pasted into either: only its fragment changes
                tab.goto(inbox.url)
                _card(tab, 1, "agent-1").wait_for(timeout=SECONDS)
                assert tab.locator(".alone:visible").count() == 0
                assert inbox.token not in tab.url
            first.reload()
            _card(first, 1, "agent-1").wait_for(timeout=SECONDS)
            first.get_by_role("link", name="History").click()  # a link keeps the tab's token
            first.locator("#history").wait_for(timeout=SECONDS)
            first.locator("#live.on").wait_for(timeout=SECONDS)
        finally:
            store.close()


# What a model, a host or a person might write into a field the page shows: markup, attribute breakouts,
# script URLs, a closing tag for each raw-text element, a bidi override that reorders what is read.
HOSTILE = [
    '<img src=x onerror="window.pwned=1">',
    '"><svg onload=window.pwned=1>',
    "'><script>window.pwned=1</script>",
    "</textarea><script>window.pwned=1</script>",
    "</template><img src=x onerror=window.pwned=1>",
    "</pre><iframe src=javascript:window.pwned=1></iframe>",
    "javascript:window.pwned=1",
    "{{constructor.constructor('window.pwned=1')()}}",
    "rm -rf ~ \u202e#/ dliub",
]
INJECTED = "img, svg, script:not([src^='/static/']), iframe, object, embed, a[href^='javascript']"


class TestHostileText:
    """Whatever a tool name, argument, reason, rule, session, feedback or name holds, the page shows it as
    text: no markup of theirs reaches the page, and nothing of theirs runs."""

    def test_every_field_is_text(self, inbox: InboxServer, browser: Any, store_path: Path) -> None:
        """Pending cards and the history show hostile values literally, with no element made from them."""
        store = SqliteStore(store_path)
        try:
            for number, text in enumerate(HOSTILE):
                name = text.replace("\u202e", "")  # a session or a person's name is printable text
                queue = ApprovalQueue(store=store, session=f"s{number} {name}")
                why: AskExplanation = {
                    "layer": "ask_rule",
                    "rule": text,
                    "source": text,
                    "reason": text,
                    "suggestions": [text],
                    "scopes": {"once": text},
                }
                queue.submit(tool_call_id="a", tool_name=f"T{text}", args={text: text, "n": [text]}, why=why)
                queue.submit(tool_call_id="b", tool_name=f"T{text}", args={"x": text * 40}, why=why)
                queue.submit(tool_call_id="c", tool_name=f"T{text}", message=text)
                queue.reject(2, feedback=text, decided_by=f"p {name}")
                queue.approve(3, arguments={text: text}, decided_by=f"q {name}")
            page = browser.new_page()
            dialogs: list[str] = []

            def dismiss(dialog: Any) -> None:
                dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", dismiss)
            page.goto(inbox.url)
            page.locator("#live.on").wait_for(timeout=SECONDS)
            cards = page.locator("article.action")
            assert cards.count() == len(HOSTILE)
            for button in page.locator("button.edit").all():
                button.click()  # the editor's template becomes part of the page
            assert page.locator(INJECTED).count() == 0
            tools = page.locator("article.action .tool").all_text_contents()  # cards off screen too
            assert sorted(tools) == sorted(f"T{text}".replace("\u202e", "\\u202e") for text in HOSTILE)
            for card, text in zip(cards.all(), HOSTILE, strict=True):
                shown = text.replace("\u202e", "\\u202e")
                assert card.locator(".reason").text_content() == shown
                assert card.locator(".suggestions code").text_content() == shown
                edited = json.loads(card.get_by_label("Edited arguments (JSON)").input_value())
                assert edited == {text: text, "n": [text]}  # the editor holds the very call
            page.get_by_role("link", name="History").click()
            page.locator("#history tbody tr").first.wait_for(timeout=SECONDS)
            assert page.locator("#history tbody tr").count() == 2 * len(HOSTILE)
            for details in page.locator("#history details").all():
                details.evaluate("element => { element.open = true; }")
            assert page.locator(INJECTED).count() == 0
            history = page.locator("#history").inner_text()
            for text in HOSTILE:
                assert "p " + text.replace("\u202e", "") in history  # who rejected
                assert text.replace("\u202e", "\\u202e") in history  # their feedback
            assert page.evaluate("window.pwned") is None
            assert dialogs == []
        finally:
            store.close()


@pytest.fixture(scope="module")
def shared_store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the bad-input tests: each has a session of its own in it."""
    return tmp_path_factory.mktemp("bad-input") / "approvals.db"


@pytest.fixture(scope="module")
def shared_inbox(shared_store_path: Path) -> Iterator[InboxServer]:
    """One inbox for the bad-input tests (starting one per test would cost a second each)."""
    server = InboxServer(f"sqlite:///{shared_store_path}", user="ann")
    try:
        yield server
    finally:
        server.stop()


Credentials = Callable[[str, int], dict[str, str]]
"""The headers a client sends, given the inbox's real token and port."""

# What a client holding (or guessing at) the token might send instead of the page's exact header: each one,
# with or without the token in the address's query too, must read nothing and answer nothing.
_NOT_THE_HEADER: list[tuple[str, Credentials]] = [
    ("nothing", lambda token, port: {}),
    ("wrong-token", lambda token, port: {"Authorization": "Bearer wrong"}),
    ("empty-token", lambda token, port: {"Authorization": "Bearer "}),
    ("bare-scheme", lambda token, port: {"Authorization": "Bearer"}),
    ("no-scheme", lambda token, port: {"Authorization": token}),
    ("basic-scheme", lambda token, port: {"Authorization": f"Basic {token}"}),
    ("two-spaces", lambda token, port: {"Authorization": f"Bearer  {token}"}),
    ("token-cut-short", lambda token, port: {"Authorization": f"Bearer {token[:-1]}"}),
    ("token-and-more", lambda token, port: {"Authorization": f"Bearer {token}x"}),
    ("token-twice", lambda token, port: {"Authorization": f"Bearer {token} {token}"}),
    ("old-cookie", lambda token, port: {"Cookie": f"ask_permissions_inbox_{port}={token}"}),
    ("any-cookie", lambda token, port: {"Cookie": f"token={token}; inbox={token}"}),
    ("other-header", lambda token, port: {"X-Inbox-Token": token, "X-Auth-Token": token}),
    ("proxy-header", lambda token, port: {"Proxy-Authorization": f"Bearer {token}"}),
    ("referer", lambda token, port: {"Referer": f"http://127.0.0.1:{port}/#token={token}"}),
]


def _the_header(token: str, port: int) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


NOT_THE_HEADER = [
    *(pytest.param(sends, False, id=name) for name, sends in _NOT_THE_HEADER),
    # The real header does not help a request that also holds the token in its address's query.
    *(
        pytest.param(sends, True, id=f"{name}-and-query")
        for name, sends in [*_NOT_THE_HEADER, ("the-header", _the_header)]
    ),
]


def _data_paths(session: str) -> list[str]:
    """Every route that reads something of the store (the event stream last: with the token it never ends)."""
    return ["/view", "/fragment", f"/action?session={quote(session)}&id=1", "/view?view=history", "/events"]


def _with_token(path: str, token: str) -> str:
    """``path`` with the token in its query, as the old address carried it."""
    return f"{path}{'&' if '?' in path else '?'}token={token}"


class TestBadInput:
    """Over HTTP: a missing or wrong token, a resolved id, bad edits, a foreign site, two people at once."""

    @pytest.fixture
    def store_path(self, shared_store_path: Path) -> Path:
        return shared_store_path

    @pytest.fixture
    def inbox(self, shared_inbox: InboxServer) -> InboxServer:
        return shared_inbox

    @pytest.fixture
    def queue(self, store_path: Path, request: pytest.FixtureRequest) -> Iterator[ApprovalQueue]:
        """A session of this test's own, holding one pending call."""
        store = SqliteStore(store_path)
        try:
            queue = ApprovalQueue(store=store, session=f"s-{request.node.name}")
            queue.submit(tool_call_id="a", tool_name="Bash", args={"command": "ls"})
            yield queue
        finally:
            store.close()

    @pytest.mark.parametrize(("sends", "query"), NOT_THE_HEADER)
    def test_without_the_header_nothing_is_read_or_changed(
        self, inbox: InboxServer, queue: ApprovalQueue, sends: Credentials, query: bool
    ) -> None:
        """Every data route answers 401 unless the request holds the token in its Authorization header,
        exactly, and no token in its address; an answer posted otherwise changes nothing."""
        headers = sends(inbox.token, inbox.port)
        form = {**inbox.card_form(queue.session, 1), "decision": "approve", "scope": "once"}
        for path in (
            _with_token(path, inbox.token) if query else path for path in _data_paths(queue.session)
        ):
            status, replied, body = inbox.request("GET", path, authorization=None, headers=headers)
            assert status == 401, path
            assert body.startswith("401: this inbox"), path  # and nothing else: no card, no action
            assert replied["www-authenticate"] == 'Bearer realm="ask-permissions inbox"'
        answer = _with_token("/answer", inbox.token) if query else "/answer"
        status, _, body = inbox.request("POST", answer, form=form, authorization=None, headers=headers)
        assert status == 401
        assert body.startswith("401: this inbox")
        assert queue.is_pending(1)

    def test_the_token_in_an_address_query_is_refused(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """The old address (``/?token=``) is 401 saying where the token goes now, on the page and its assets
        too: a token is never taken from an address, which logs and history keep."""
        for path in (_with_token(path, inbox.token) for path in ("/", "/?view=history", "/static/inbox.js")):
            status, headers, body = inbox.request("GET", path, authorization=None)
            assert status == 401, path
            assert "does not take its token from an address's query (?token=)" in body
            assert "(#token=)" in body
            assert "set-cookie" not in headers

    def test_the_page_itself_holds_nothing(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """GET / needs no token and holds nothing of the store: one fixed page whatever the address asks
        and whoever asks, saying it needs JavaScript; its assets too; no response sets a cookie."""
        status, headers, shell = inbox.request("GET", "/", authorization=None)
        assert status == 200
        assert "set-cookie" not in headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert f'<noscript><p class="alone">{NEEDS_SCRIPT}</p></noscript>' in shell
        assert 'src="/static/inbox.js' in shell
        assert html.escape(queue.session) not in shell
        assert "command" not in shell
        assert "ann" not in shell  # not even who answers here
        for path in ("/?view=history", f"/?view=pending&session={quote(queue.session)}&tool=Bash"):
            for authorization in (None, ""):  # without the token, and with it
                status, headers, body = inbox.request("GET", path, authorization=authorization)
                assert (status, body) == (200, shell), path
                assert "set-cookie" not in headers
        for asset, media in (("inbox.js", "text/javascript"), ("inbox.css", "text/css")):
            status, headers, body = inbox.request("GET", f"/static/{asset}", authorization=None)
            assert status == 200
            assert headers["content-type"].startswith(media)
            assert "set-cookie" not in headers
        status, _, body = inbox.request("GET", "/static/secret.txt", authorization=None)
        assert status == 404
        for path in _data_paths(queue.session)[:2]:  # with the header, the data, and still no cookie
            status, headers, body = inbox.request("GET", path)
            assert status == 200
            assert html.escape(queue.session) in body
            assert "set-cookie" not in headers

    def test_an_answer_from_another_site_is_refused(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """A POST with another site's Origin, or without the page's csrf field, is 403 and changes nothing."""
        form = {**inbox.card_form(queue.session, 1), "decision": "approve", "scope": "once"}
        status, reply = inbox.answer(form, headers={"Origin": "http://evil.example"})
        assert status == 403
        assert "http://evil.example may not answer" in reply["message"]
        status, _ = inbox.answer({**form, "csrf": "guessed"})
        assert status == 403
        assert queue.is_pending(1)

    def test_an_id_already_resolved_says_so(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """Answering an action someone resolved is 409 naming who, and changes nothing."""
        form = {**inbox.card_form(queue.session, 1), "decision": "reject", "feedback": "late"}
        queue.approve(1, decided_by="bob")
        status, reply = inbox.answer(form)
        assert status == 409
        assert reply["message"] == "action 1 is already approved by bob; nothing was changed"
        action = queue[1]
        assert action is not None
        assert (action.status, action.feedback, action.decided_by) == ("approved", None, "bob")

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            (
                '{"command": "ls -a"',
                "edited arguments are not JSON: Expecting ',' delimiter: line 1 column 20 (char 19)",
            ),
            ("command=ls", "edited arguments are not JSON: Expecting value: line 1 column 1 (char 0)"),
            ('["ls", "-a"]', "edited arguments must be a JSON object (the tool's named arguments); got list"),
            ("42", "must be a JSON object (the tool's named arguments); got int 42"),
        ],
        ids=["unterminated", "not-json", "array", "number"],
    )
    def test_bad_edits_are_refused_with_the_parse_error(
        self, inbox: InboxServer, queue: ApprovalQueue, arguments: str, message: str
    ) -> None:
        """Edited arguments that are not a JSON object are 400 with the parser's message; nothing approved."""
        form = {
            **inbox.card_form(queue.session, 1),
            "decision": "approve",
            "scope": "once",
            "arguments": arguments,
        }
        status, reply = inbox.answer(form)
        assert status == 400
        assert message in reply["message"]
        assert queue.is_pending(1)

    def test_an_edit_the_host_might_not_run(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """No policy over the session said its host runs edits: the card offers no Edit, a crafted edit is
        400 saying why and changes nothing; once a policy spoke for the session, the same edit is given."""
        status, _, body = inbox.request("GET", "/fragment")
        assert status == 200
        card = body[body.index(f'data-key="1@{html.escape(queue.session)}"') :].split("</article>")[0]
        assert '<button type="button" class="edit" disabled>Edit</button>' in card
        assert "editor-template" not in card
        form = {
            **inbox.card_form(queue.session, 1),
            "decision": "approve",
            "scope": "once",
            "arguments": '{"command": "ls -a"}',
        }
        status, reply = inbox.answer(form)
        assert status == 400
        assert "no policy over session" in reply["message"]
        assert "the model's own arguments might run instead" in reply["message"]
        assert queue.is_pending(1)
        queue.store.record_scopes(queue.session, {"once": "runs this call once"})  # a policy's word
        status, reply = inbox.answer(form)
        assert status == 200, reply
        assert queue[1].edited_args == {"command": "ls -a"}  # type: ignore[union-attr]

    def test_a_scope_the_host_would_not_honour(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """A crafted scope the page did not offer is refused, saying why; the action stays pending."""
        form = {**inbox.card_form(queue.session, 1), "decision": "approve", "scope": "project"}
        status, reply = inbox.answer(form)
        assert status == 400
        assert "said which answers its host carries out" in reply["message"]
        assert queue.is_pending(1)

    def test_a_changed_call_is_not_approved(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """The form carries the digest of the arguments it showed: another digest is 409, nothing approved."""
        form = {
            **inbox.card_form(queue.session, 1),
            "decision": "approve",
            "scope": "once",
            "digest": "0" * 16,
        }
        status, reply = inbox.answer(form)
        assert status == 409
        assert "not the call this page showed" in reply["message"]
        assert queue.is_pending(1)

    def test_two_people_at_once(self, store_path: Path, queue: ApprovalQueue) -> None:
        """Two inboxes answer the same action at the same moment: exactly one wins, the other is told who."""
        ann, bob = (
            InboxServer(f"sqlite:///{store_path}", user="ann"),
            InboxServer(f"sqlite:///{store_path}", user="bob"),
        )
        try:
            forms = [
                {**server.card_form(queue.session, 1), "decision": "approve", "scope": "once"}
                for server in (ann, bob)
            ]
            start = threading.Barrier(2)
            replies: dict[str, tuple[int, dict[str, Any]]] = {}

            def answer(server: InboxServer, form: dict[str, str], name: str) -> None:
                start.wait(10)
                replies[name] = server.answer(form)

            threads = [
                threading.Thread(target=answer, args=(ann, forms[0], "ann")),
                threading.Thread(target=answer, args=(bob, forms[1], "bob")),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            statuses = sorted(status for status, _ in replies.values())
            assert statuses == [200, 409]
            winner = next(name for name, (status, _) in replies.items() if status == 200)
            loser = next(reply for status, reply in replies.values() if status == 409)
            assert f"by {winner}" in loser["message"]
            action = queue[1]
            assert action is not None
            assert (action.status, action.decided_by) == ("approved", winner)
        finally:
            ann.stop()
            bob.stop()

    def test_a_store_that_cannot_record_says_so(
        self, inbox: InboxServer, queue: ApprovalQueue, store_path: Path
    ) -> None:
        """An answer the store cannot take now (another process holds its write lock) is 503 with the
        reason, as JSON the page shows; nothing changed, and the same answer works once the lock is gone."""
        form = {**inbox.card_form(queue.session, 1), "decision": "approve", "scope": "once"}
        blocker = sqlite3.connect(store_path, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            status, reply = inbox.answer(form)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert status == 503, reply
        assert "nothing was changed" in reply["message"]
        assert "locked" in reply["message"]
        assert queue.is_pending(1)
        status, reply = inbox.answer(form)
        assert (status, reply["ok"]) == (200, True)

    def test_the_action_reads_as_json(self, inbox: InboxServer, queue: ApprovalQueue) -> None:
        """GET /action gives one action as JSON; an unknown one is 404."""
        status, _, body = inbox.request("GET", f"/action?session={quote(queue.session)}&id=1")
        assert status == 200
        assert json.loads(body)["args"] == {"command": "ls"}
        status, _, _ = inbox.request("GET", f"/action?session={quote(queue.session)}&id=9")
        assert status == 404


class TestCommand:
    """The command's own bad input: no store, a store that is not a database; Ctrl-C stops it."""

    def test_ctrl_c_stops_it_while_a_page_listens(self, store_path: Path) -> None:
        """Ctrl-C ends the open event streams and stops the inbox (exit 0), with a page still open."""
        server = InboxServer(f"sqlite:///{store_path}")
        connection = http.client.HTTPConnection(server.host, server.port, timeout=60)
        try:
            connection.request(
                "GET",
                "/events",
                headers={"Authorization": server.authorization, "Host": f"{server.host}:{server.port}"},
            )
            events = connection.getresponse()
            assert events.status == 200
            assert events.read1(100).startswith(b"retry:")  # the page is listening
            server.process.send_signal(signal.SIGINT)
            try:
                status = server.process.wait(30)
            except subprocess.TimeoutExpired:
                pytest.fail("Ctrl-C did not stop the inbox while a page listened to its events")
            assert status == 0
            assert events.read().count(b"retry:") == 0  # the stream ended whole (the page reconnects)
        finally:
            connection.close()
            server.stop()

    def test_a_memory_store_is_refused(self, capsys: pytest.CaptureFixture[str]) -> None:
        """memory: is no store another process shares: exit 2 saying so."""
        from ask_permissions.cli._main import main

        assert main(["inbox", "--store", "memory:"]) == 2
        assert "needs a database store" in capsys.readouterr().err

    def test_no_store(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        """Without --store (or $ASK_PERMISSIONS_STORE): exit 2."""
        from ask_permissions.cli._main import main

        monkeypatch.delenv("ASK_PERMISSIONS_STORE", raising=False)
        assert main(["inbox"]) == 2
        assert "--store: a store URL is needed" in capsys.readouterr().err

    @pytest.mark.parametrize("name", ["auto_approve", "expiry", "policy", "reviewer", "rule"])
    def test_a_machine_path_s_name_is_refused(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
    ) -> None:
        """--user a machine path's name exits 2 before serving: answers under it would read as no person's."""
        from ask_permissions.cli._main import main

        assert main(["inbox", "--store", f"sqlite:///{tmp_path / 'a.db'}", "--user", name]) == 2
        assert f"--user: {name!r} is the name of a machine path in the records" in capsys.readouterr().err
