"""The domain proxy: a small HTTP proxy on a Unix socket that lets sandboxed commands reach only the hosts
the policy's domain rules allow.

It speaks just enough HTTP/1.1: ``CONNECT host:port`` opens a tunnel (HTTPS, decided by the CONNECT host),
and a request in absolute form (``GET http://host/path``) is forwarded to its host with ``Connection:
close``. Anything else, and any host the rules do not allow, gets a ``403`` (or ``400``) and nothing is
connected. The socket lies in a folder of mode 0700 in the sandbox's runtime folder; inside a sandbox the
bridge (``_bridge.py``) carries connections to it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import selectors
import socket
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Final, final

from ._bridge import splice
from ._bwrap import runtime_dir
from ._profile import NetworkRules

__all__ = ["DomainProxy"]

_HEAD_LIMIT: Final = 65536
_HEAD_TIMEOUT: Final = 30.0
_CONNECT_TIMEOUT: Final = 15.0
_MAX_CONNECTIONS: Final = 64
_DROPPED_HEADERS: Final = frozenset(
    {"proxy-connection", "proxy-authorization", "connection", "keep-alive", "host"}
)
_HOST_NAME: Final = re.compile(r"[A-Za-z0-9_.-]+")
"""A host as the resolver should see it: nothing a URL parser would read as the end of the host."""


@final
class DomainProxy:
    """The proxy one sandbox's commands reach the network through.

    ``rules`` is called for each connection, so the proxy follows the policy's settings as they change
    (``None``: refuse everything). A request head must arrive whole within ``head_timeout`` seconds.
    Thread-safe: a private lock guards the open connections; ``close`` ends them all and joins its threads.
    """

    __slots__ = (
        "_connections",
        "_folder",
        "_head_timeout",
        "_listener",
        "_lock",
        "_rules",
        "_thread",
        "_threads",
        "_wake",
    )

    def __init__(
        self, rules: Callable[[], NetworkRules | None], *, head_timeout: float = _HEAD_TIMEOUT
    ) -> None:
        self._rules: Final = rules
        self._head_timeout: Final = head_timeout
        self._lock: Final = threading.Lock()
        self._folder = tempfile.mkdtemp(prefix="proxy-", dir=runtime_dir())
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.socket_path)
        self._listener.listen(_MAX_CONNECTIONS)
        self._wake = socket.socketpair()
        self._connections: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._thread = threading.Thread(target=self._serve, name="ask-permissions-proxy", daemon=True)
        self._thread.start()

    @property
    def folder(self) -> str:
        """The folder holding the socket (bound into each sandbox)."""
        return self._folder

    @property
    def socket_path(self) -> str:
        """The proxy's Unix socket."""
        return os.path.join(self._folder, "proxy.sock")

    def __repr__(self) -> str:
        with self._lock:
            open_connections = len(self._connections)
        return f"<DomainProxy socket={self.socket_path!r} connections={open_connections}>"

    def close(self) -> None:
        """Stop listening, end every open connection and remove the socket (idempotent)."""
        with contextlib.suppress(OSError):
            self._wake[1].send(b"x")
        self._thread.join(10)
        with self._lock:
            connections = list(self._connections)
            threads = list(self._threads)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(10)
        self._listener.close()
        for end in self._wake:
            end.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        with contextlib.suppress(OSError):
            os.rmdir(self._folder)

    # -- serving ----------------------------------------------------------------------------------------

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ)
        selector.register(self._wake[0], selectors.EVENT_READ)
        try:
            while True:
                ready = [key.fileobj for key, _ in selector.select()]
                if self._wake[0] in ready:
                    return
                try:
                    client, _ = self._listener.accept()
                except OSError:
                    continue
                with self._lock:
                    crowded = len(self._threads) >= _MAX_CONNECTIONS
                    if not crowded:
                        thread = threading.Thread(target=self._handle, args=(client,), daemon=True)
                        self._threads.add(thread)
                        self._connections.add(client)
                if crowded:
                    _refuse(client, 503, "Service Unavailable", "too many connections through the proxy")
                    continue
                thread.start()
        finally:
            selector.close()

    def _handle(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            upstream = self._open(client)
            if upstream is None:
                return
            with self._lock:
                self._connections.add(upstream)
            splice(client, upstream)
        finally:
            with self._lock:
                self._connections.discard(client)
                if upstream is not None:
                    self._connections.discard(upstream)
                self._threads.discard(threading.current_thread())

    def _open(self, client: socket.socket) -> socket.socket | None:
        """Read the request head and open the connection it asks for, if the rules allow its host."""
        try:
            head, rest = _read_head(client, time.monotonic() + self._head_timeout)
        except (OSError, ValueError):
            client.close()
            return None
        lines = head.split(b"\r\n")
        try:
            method, target, version = lines[0].decode("latin-1").split(" ")
        except ValueError:
            _refuse(client, 400, "Bad Request", "not an HTTP request")
            return None
        if method == "CONNECT":
            host, port = _authority(target, 443)
            # The rules read the very host and port the proxy connects to, not the text around them.
            url = f"https://{_url_host(host)}:{port}/" if host is not None else ""
        else:
            parts = urllib.parse.urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                _refuse(client, 400, "Bad Request", "expected CONNECT or an absolute http:// URL")
                return None
            host, port = _authority(parts.netloc.rpartition("@")[2], 80)
            url = target
        rules = self._rules()
        if host is None or rules is None or not rules.allows(url):
            _refuse(client, 403, "Forbidden", f"the policy's domain rules do not allow {target!r}")
            return None
        try:
            upstream = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT)
        except OSError as error:
            _refuse(client, 502, "Bad Gateway", f"could not connect to {target!r}: {error}")
            return None
        upstream.settimeout(None)
        client.settimeout(None)
        try:
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                upstream.sendall(
                    _origin_form(method, target, version, lines[1:], host=host, port=port) + rest
                )
        except OSError:
            upstream.close()
            client.close()
            return None
        return upstream


def _read_head(client: socket.socket, deadline: float) -> tuple[bytes, bytes]:
    """The request head and what came after it, read by ``deadline`` (a monotonic time) as a whole: a
    client that sends a byte now and then cannot hold a connection for longer."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_LIMIT:
            raise ValueError("request head too long")
        left = deadline - time.monotonic()
        if left <= 0:
            raise ValueError("the request head did not arrive in time")
        client.settimeout(left)
        chunk = client.recv(4096)
        if not chunk:
            raise ValueError("connection closed before the request head ended")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _authority(authority: str, default_port: int) -> tuple[str | None, int]:
    """The host and port of ``host:port`` or ``[v6]:port``; the host is ``None`` unless it is a plain host
    name or address (letters, digits, ``.``, ``-``, ``_``) or a bracketed IPv6 address, so that the name
    the resolver is handed is the one the rules read."""
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port_text = rest.removeprefix(":")
        valid = _is_ipv6(host)
    else:
        host, _, port_text = authority.partition(":")
        valid = _HOST_NAME.fullmatch(host) is not None
    if not valid:
        return None, default_port
    if not port_text:
        return host, default_port
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        return None, default_port
    return host, int(port_text)


def _is_ipv6(text: str) -> bool:
    if "%" in text:
        return False  # a zone (fe80::1%eth0) names an interface of the host, not a host
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _origin_form(
    method: str, target: str, version: str, headers: list[bytes], *, host: str, port: int
) -> bytes:
    """The request as its origin server expects it: the path only, no proxy headers, one request, and the
    Host the rules allowed (a proxy replaces the client's Host with the absolute URL's: RFC 9112, 3.2.2)."""
    parts = urllib.parse.urlsplit(target)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    kept = [line for line in headers if _header_name(line) not in _DROPPED_HEADERS]
    authority = _url_host(host) + ("" if port == 80 else f":{port}")
    lines = [
        f"{method} {path} {version}".encode("latin-1"),
        b"Host: " + authority.encode("ascii"),
        *kept,
        b"Connection: close",
    ]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _header_name(line: bytes) -> str:
    return line.split(b":", 1)[0].strip().lower().decode("latin-1")


def _refuse(client: socket.socket, status: int, title: str, reason: str) -> None:
    body = f"ask-permissions sandbox: {reason}\n".encode()
    response = (
        f"HTTP/1.1 {status} {title}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode("latin-1")
    with contextlib.suppress(OSError):
        client.sendall(response + body)
    client.close()
