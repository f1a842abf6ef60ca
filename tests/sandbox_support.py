"""What the sandbox suites share: real bubblewrap or a skip, projects in temporary folders, a local server.

The projects live under ``/var/tmp``, not ``/tmp``: inside a sandbox ``/tmp`` is private, so a write there
succeeds (into the sandbox's own ``/tmp``); under ``/var/tmp`` a write outside the project meets the
read-only file system, which is what the tests assert. Every folder made here is removed afterwards.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ask_permissions import ApprovalQueue, LayeredPolicy, PermissionSettings
from ask_permissions.sandbox import BwrapBackend, SandboxUnavailableError

REQUIRE_BWRAP = "ASK_PERMISSIONS_REQUIRE_BWRAP"
"""Set (CI sets it) to make a missing or unusable bubblewrap an error instead of a skip."""


def require_bwrap() -> None:
    """Skip the test when bubblewrap cannot make its sandbox here, or fail when CI requires it."""
    try:
        BwrapBackend().check()
    except SandboxUnavailableError as error:
        if os.environ.get(REQUIRE_BWRAP):
            pytest.fail(f"{REQUIRE_BWRAP} is set: {error}")
        pytest.skip(str(error))


@pytest.fixture
def bwrap() -> None:
    """Real bubblewrap, or a skip (a failure under CI)."""
    require_bwrap()


@dataclass
class Place:
    """A temporary folder holding a project (``project``), a folder outside it (``outside``) and a home."""

    base: Path
    project: Path = field(init=False)
    outside: Path = field(init=False)
    home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.project = self.base / "project"
        self.outside = self.base / "outside"
        self.home = self.base / "home"
        for folder in (self.project, self.outside, self.home):
            folder.mkdir()

    def policy(
        self,
        *,
        allow: Sequence[str] = (),
        ask: Sequence[str] = (),
        deny: Sequence[str] = (),
        extra: Mapping[str, object] | None = None,
        **options: object,
    ) -> LayeredPolicy:
        """A layered policy over the project, its rules given as the project's settings file."""
        agent = self.project / ".agent"
        permissions: dict[str, object] = {"allow": list(allow), "ask": list(ask), "deny": list(deny)}
        permissions.update(extra or {})
        if allow or ask or deny or extra:
            agent.mkdir(exist_ok=True)
            (agent / "settings.json").write_text(json.dumps({"permissions": permissions}), encoding="utf-8")
        settings = PermissionSettings.load(project_dir=self.project, user_dir=self.home / ".agent")
        return LayeredPolicy(queue=ApprovalQueue(), settings=settings, **options)  # type: ignore[arg-type]

    def listing(self) -> list[str]:
        """Every path under the project and outside folders, relative to the base (what the host sees)."""
        return sorted(
            os.path.relpath(os.path.join(root, name), self.base)
            for root, folders, files in os.walk(self.base)
            for name in [*folders, *files]
        )


@pytest.fixture
def place() -> Iterator[Place]:
    """A fresh project under /var/tmp (removed afterwards)."""
    base = Path(tempfile.mkdtemp(prefix="ask-permissions-test-", dir="/var/tmp"))
    try:
        yield Place(base.resolve())
    finally:
        shutil.rmtree(base, ignore_errors=True)


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Records every request's path, its Host headers and any proxy header that reached it; answers
    ``hello``."""

    server: LocalServer

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        self.server.hosts.extend(self.headers.get_all("Host") or [])
        self.server.proxy_headers.extend(name for name in self.headers if name.lower().startswith("proxy-"))
        body = b"hello from the host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # the base class's parameter names
        pass


class LocalServer(http.server.ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 of the host, recording the paths it was asked for."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorder)
        self.paths: list[str] = []
        self.proxy_headers: list[str] = []
        self.hosts: list[str] = []
        self.connections = 0

    def get_request(self) -> tuple[socket.socket, object]:
        self.connections += 1
        return super().get_request()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A running local server (shut down and joined afterwards)."""
    local = LocalServer()
    thread = threading.Thread(target=local.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield local
    finally:
        local.shutdown()
        local.server_close()
        thread.join(10)
