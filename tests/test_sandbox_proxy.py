"""The domain proxy on its own (no sandbox needed): what it connects, what it refuses, how it ends."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from ask_permissions import DomainPattern
from ask_permissions.sandbox import NetworkRules
from ask_permissions.sandbox._proxy import DomainProxy

from .sandbox_support import LocalServer, server

__all__ = ["server"]  # a fixture, used by name

ALLOWED = NetworkRules((DomainPattern("domain:127.0.0.1"),))


@pytest.fixture
def proxy() -> Iterator[DomainProxy]:
    """A proxy that allows 127.0.0.1 only (closed afterwards)."""
    running = DomainProxy(lambda: ALLOWED)
    try:
        yield running
    finally:
        running.close()


def _ask(proxy: DomainProxy, request: bytes) -> tuple[socket.socket, bytes]:
    """Send a request to the proxy; return the connection and the reply's head."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(20)
    connection.connect(proxy.socket_path)
    connection.sendall(request)
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = connection.recv(4096)
        if not chunk:
            break
        reply += chunk
    return connection, reply


def _status(reply: bytes) -> str:
    return reply.split(b"\r\n", 1)[0].decode()


def _rest(connection: socket.socket) -> bytes:
    data = b""
    while chunk := connection.recv(4096):
        data += chunk
    connection.close()
    return data


# CONNECT targets the proxy must refuse when only 127.0.0.1 is allowed ({port} is the server's).
REFUSED_TARGETS = [
    pytest.param("localhost:{port}", id="localhost"),
    pytest.param("127.1:{port}", id="short-ipv4"),
    pytest.param("0x7f.0.0.1:{port}", id="hex-ipv4"),
    pytest.param("2130706433:{port}", id="integer-ipv4"),
    pytest.param("[::ffff:127.0.0.1]:{port}", id="mapped-ipv6"),
    pytest.param("[::1]:{port}", id="ipv6-loopback"),
    pytest.param("127.0.0.1@evil.test:{port}", id="userinfo"),
    pytest.param("evil.test:{port}", id="other-host"),
    pytest.param("127.0.0.1:0", id="port-zero"),
    pytest.param("127.0.0.1:99999", id="port-too-big"),
    pytest.param("127.0.0.1:{port}x", id="port-garbage"),
    pytest.param("%31%32%37.0.0.1:{port}", id="percent-encoded"),
    pytest.param(":{port}", id="no-host"),
    # What the rules read as 127.0.0.1 (a URL's fragment, path or query) but a resolver would be handed whole.
    pytest.param("127.0.0.1#.evil.test:{port}", id="fragment-in-host"),
    pytest.param("127.0.0.1/.evil.test", id="path-in-host"),
    pytest.param("127.0.0.1?.evil.test", id="query-in-host"),
    pytest.param("127.0.0.1#", id="bare-fragment"),
]


class TestConnect:
    """CONNECT: a tunnel to an allowed host, a 403 for any other."""

    def test_a_tunnel_to_an_allowed_host(self, proxy: DomainProxy, server: LocalServer) -> None:
        """CONNECT to the allowed host answers 200 and carries bytes both ways."""
        target = f"127.0.0.1:{server.port}"
        connection, reply = _ask(proxy, f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        assert _status(reply) == "HTTP/1.1 200 Connection Established"
        connection.sendall(b"GET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert b"hello from the host" in _rest(connection)
        assert server.paths == ["/tunnelled"]

    @pytest.mark.parametrize("target", REFUSED_TARGETS)
    def test_other_targets_are_refused(self, proxy: DomainProxy, server: LocalServer, target: str) -> None:
        """Any other CONNECT target gets 403 and the server sees no connection."""
        spelled = target.format(port=server.port)
        connection, reply = _ask(proxy, f"CONNECT {spelled} HTTP/1.1\r\n\r\n".encode())
        connection.close()
        assert _status(reply) == "HTTP/1.1 403 Forbidden"
        assert server.connections == 0


class TestForwarding:
    """Plain HTTP in absolute form is forwarded to an allowed host only, as one origin-form request."""

    def test_an_allowed_request_is_forwarded(self, proxy: DomainProxy, server: LocalServer) -> None:
        """The server gets the path and query, and the answer comes back."""
        request = (
            f"GET http://127.0.0.1:{server.port}/page?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\r\n"
        )
        connection, reply = _ask(proxy, request.encode())
        assert _status(reply) == "HTTP/1.0 200 OK"
        assert b"hello from the host" in reply + _rest(connection)
        assert server.paths == ["/page?q=1"]
        assert server.proxy_headers == []

    @pytest.mark.parametrize(
        "host_lines",
        [
            pytest.param("Host: internal.evil.test\r\n", id="other-host"),
            pytest.param("host: internal.evil.test\r\nHost: 127.0.0.1\r\n", id="two-hosts"),
            pytest.param("Host : internal.evil.test\r\n", id="space-before-colon"),
            pytest.param("", id="none"),
        ],
    )
    def test_the_host_header_names_the_url_host(
        self, proxy: DomainProxy, server: LocalServer, host_lines: str
    ) -> None:
        """The server is told the host the rules allowed, never a Host header the client chose (RFC 9112
        3.2.2: a proxy replaces it with the absolute URL's authority)."""
        request = f"GET http://127.0.0.1:{server.port}/page HTTP/1.1\r\n{host_lines}\r\n"
        connection, reply = _ask(proxy, request.encode())
        _rest(connection)
        assert _status(reply) == "HTTP/1.0 200 OK"
        assert server.hosts == [f"127.0.0.1:{server.port}"]

    @pytest.mark.parametrize(
        ("request_text", "status"),
        [
            pytest.param("GET http://evil.test/ HTTP/1.1\r\n\r\n", "403 Forbidden", id="other-host"),
            pytest.param("GET http://127.0.0.1@evil.test/ HTTP/1.1\r\n\r\n", "403 Forbidden", id="userinfo"),
            pytest.param("GET /relative HTTP/1.1\r\n\r\n", "400 Bad Request", id="origin-form"),
            pytest.param("GET https://127.0.0.1/ HTTP/1.1\r\n\r\n", "400 Bad Request", id="https-absolute"),
            pytest.param("GET ftp://127.0.0.1/ HTTP/1.1\r\n\r\n", "400 Bad Request", id="ftp"),
            pytest.param("nonsense\r\n\r\n", "400 Bad Request", id="not-http"),
            pytest.param("GET  http://127.0.0.1/ HTTP/1.1\r\n\r\n", "400 Bad Request", id="two-spaces"),
        ],
    )
    def test_other_requests_are_refused(
        self, proxy: DomainProxy, server: LocalServer, request_text: str, status: str
    ) -> None:
        """Requests for other hosts, or not in absolute http form, are refused and connect nothing."""
        connection, reply = _ask(proxy, request_text.encode())
        connection.close()
        assert _status(reply) == f"HTTP/1.1 {status}"
        assert server.connections == 0


class TestLifecycle:
    """Rules read per connection; close ends everything."""

    def test_no_rules_refuse_everything(self, server: LocalServer) -> None:
        """A proxy whose rules are gone (the policy no longer allows a domain) refuses every host."""
        closed = DomainProxy(lambda: None)
        try:
            target = f"127.0.0.1:{server.port}"
            connection, reply = _ask(closed, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
            connection.close()
        finally:
            closed.close()
        assert _status(reply) == "HTTP/1.1 403 Forbidden"
        assert server.connections == 0

    def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_the_deadline(self, server: LocalServer) -> None:
        """A client that trickles its request head (a byte now and then, each within the timeout) loses the
        connection once the head's time is up: it cannot hold one of the proxy's few connections forever."""
        slow = DomainProxy(lambda: ALLOWED, head_timeout=0.5)
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(slow.socket_path)
            connection.settimeout(0.2)
            cut = False
            for byte in b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n" * 2:  # at most about 12 s
                try:
                    connection.sendall(bytes([byte]))
                    cut = connection.recv(4096) == b""
                except TimeoutError:
                    continue  # nothing yet: the proxy still waits for the head
                except OSError:
                    cut = True
                if cut:
                    break
        finally:
            connection.close()
            slow.close()
        assert cut
        assert server.connections == 0

    def test_close_ends_open_tunnels_and_joins_its_threads(self, server: LocalServer) -> None:
        """``close`` cuts a tunnel still open, removes the socket, and leaves no proxy thread behind."""
        running = DomainProxy(lambda: ALLOWED)
        target = f"127.0.0.1:{server.port}"
        connection, reply = _ask(running, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
        assert _status(reply) == "HTTP/1.1 200 Connection Established"
        running.close()
        assert connection.recv(4096) == b""
        connection.close()
        assert not any(thread.name == "ask-permissions-proxy" for thread in threading.enumerate())
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as late, pytest.raises(FileNotFoundError):
            late.connect(running.socket_path)
