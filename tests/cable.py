"""A TCP link between a database client and its server that a test can cut (the network drops with a
statement in flight) or unplug (the server cannot be reached), for the PostgreSQL fault tests.

What a cut does is what a dropped network does: the client sees its connection end at once, while the
server's backend goes on with what it was doing (a statement waiting for a lock commits once it has it)
and learns that its client is gone only when it next reads or writes.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Final, final

__all__ = ["Cable"]

_JOIN_SECONDS: Final = 5.0


@final
class Cable:
    """Forwards each connection made to ``127.0.0.1:port`` to ``target``.

    Thread-safe: a private lock guards the links and the plug; each link's bytes are pumped by two
    threads of its own.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        self._target: Final = target
        self._listener: Final = socket.create_server(("127.0.0.1", 0))
        self.port: Final[int] = self._listener.getsockname()[1]
        self._lock: Final = threading.Lock()
        self._links: list[tuple[socket.socket, socket.socket]] = []
        self._threads: list[threading.Thread] = []
        self._plugged = True
        self._acceptor: Final = threading.Thread(target=self._accept, name="cable", daemon=True)
        self._acceptor.start()

    def cut(self) -> None:
        """End every open link at once, both ways (new links are made while plugged)."""
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            for end in link:
                with contextlib.suppress(OSError):  # a pump ended it already
                    end.shutdown(socket.SHUT_RDWR)  # wakes the pumps blocked reading it

    def unplug(self) -> None:
        """Refuse new links (each is closed as it is accepted) until ``plug``."""
        with self._lock:
            self._plugged = False

    def plug(self) -> None:
        """Accept new links again."""
        with self._lock:
            self._plugged = True

    def close(self) -> None:
        """Cut every link and stop listening; the threads are joined."""
        self.cut()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._acceptor.join(_JOIN_SECONDS)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(_JOIN_SECONDS)
        assert not self._acceptor.is_alive()
        assert not [thread for thread in threads if thread.is_alive()]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            with self._lock:
                plugged = self._plugged
            if not plugged:
                client.close()
                continue
            try:
                server = socket.create_connection(self._target, timeout=_JOIN_SECONDS)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            pumps = [
                threading.Thread(target=_pump, args=ends, name="cable pump", daemon=True)
                for ends in ((client, server), (server, client))
            ]
            with self._lock:
                self._links.append((client, server))
                self._threads = [thread for thread in self._threads if thread.is_alive()] + pumps
            for pump in pumps:
                pump.start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until either ends; then end both."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        source.close()
