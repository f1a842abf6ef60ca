"""The real web inbox, run as its own process for the tests and the benchmark, and a headless Chromium.

``InboxServer`` starts ``python -m ask_permissions inbox`` on a store, reads the address it prints first, and
talks HTTP to it as the page's script does (with the token in ``Authorization: Bearer``). ``chromium()``
opens the system's headless Chromium through Playwright (its own browser download cannot work here): ``None``
when there is none.
"""

from __future__ import annotations

import contextlib
import html
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

__all__ = [
    "BROWSER_FLAGS",
    "REQUIRE_BROWSER",
    "InboxServer",
    "browser_path",
    "chromium",
]

REQUIRE_BROWSER: Final = "ASK_PERMISSIONS_REQUIRE_BROWSER"
"""Set (CI sets it) to make a missing browser an error instead of a skip."""
BROWSER_FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
_BROWSERS: Final = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
_ROOT: Final = Path(__file__).resolve().parent.parent
_START_SECONDS: Final = 60.0


def browser_path() -> str | None:
    """The system's headless Chromium, if installed."""
    for candidate in _BROWSERS:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium-headless-shell") or shutil.which("chromium")


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A Playwright browser context on the system's Chromium, with a fresh profile (None without one)."""
    executable = browser_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        executable = None
    if executable is None:
        yield None
        return
    profile = tempfile.mkdtemp(prefix="ask-permissions-chromium-")
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile, executable_path=executable, args=list(BROWSER_FLAGS), headless=True
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class InboxServer:
    """``ask-permissions inbox --store URL --user USER`` as its own process."""

    def __init__(self, store_url: str, *, user: str = "ann") -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT / "src"), os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ask_permissions", "inbox", "--store", store_url, "--user", user],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
        )
        self.url = self._first_line()
        parts = urlsplit(self.url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.origin = f"http://{self.host}:{self.port}"
        assert parts.fragment.startswith("token="), self.url
        self.token = parts.fragment.removeprefix("token=")
        self.authorization = f"Bearer {self.token}"

    def _first_line(self) -> str:
        assert self.process.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(self.process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(_START_SECONDS)
        if not lines or not lines[0].startswith("http://"):
            self.stop()
            error = self.process.stderr.read() if self.process.stderr is not None else ""
            raise AssertionError(f"the inbox printed no address: {lines!r} {error[-2000:]}")
        return lines[0].strip()

    def request(
        self,
        method: str,
        path: str,
        *,
        form: dict[str, str] | None = None,
        authorization: str | None = "",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], str]:
        """One HTTP request: status, headers and body. ``authorization=""`` sends the token's
        ``Authorization`` header, None none, any other value itself."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            sent = {"Host": f"{self.host}:{self.port}", **(headers or {})}
            if authorization is not None:
                sent["Authorization"] = authorization or self.authorization
            body = None
            if form is not None:
                body = urlencode(form)
                sent["Content-Type"] = "application/x-www-form-urlencoded"
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
        finally:
            connection.close()

    def answer(self, form: dict[str, str], **options: Any) -> tuple[int, dict[str, Any]]:
        """POST /answer as the page's script does; the status and the JSON reply."""
        headers = {"Origin": self.origin, **options.pop("headers", {})}
        status, _, body = self.request("POST", "/answer", form=form, headers=headers, **options)
        try:
            return status, json.loads(body)
        except ValueError:
            return status, {"text": body}

    def card_form(self, session: str, action_id: int) -> dict[str, str]:
        """The hidden fields the page's form for this pending action carries (csrf, session, id, digest)."""
        status, _, body = self.request("GET", "/fragment")
        assert status == 200, body
        key = f'data-key="{action_id}@{html.escape(session)}"'
        start = body.index(key)
        end = body.find("</article>", start)
        card = body[start:end]
        fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', card))
        return {name: html.unescape(value) for name, value in fields.items()}

    def stop(self) -> None:
        """Stop the server as Ctrl-C would, and wait for it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
