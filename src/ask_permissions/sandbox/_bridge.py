"""The domain proxy's bridge, run inside a sandbox (``python -I -S bridge.py SOCKET COMMAND...``).

A sandbox has a network namespace of its own, with nothing but its own loopback. The bridge listens on
``127.0.0.1`` there, carries each connection to the domain proxy's Unix socket, bound in from outside, and
runs the command with the proxy variables (``HTTPS_PROXY`` and the rest) pointing at itself. It listens
before the command starts, so no connection can come too early; it exits with the command's status.

Standard library only and importing nothing of its package: it runs alone, inside the walls, where the
package's site may not be visible. ``splice`` is also the host-side proxy's.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Final

__all__ = ["PROXY_VARIABLES", "main", "splice"]

PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
"""The variables HTTP clients read their proxy from; each names the bridge."""
_BYPASS: Final = ("no_proxy", "NO_PROXY")
"""Removed: a host listed there would be tried directly, and fail (or, for a loopback address, reach the
sandbox's own loopback instead of the host the rules decide about)."""
_CHUNK: Final = 65536


def splice(first: socket.socket, second: socket.socket) -> None:
    """Carry bytes both ways until both sides have finished; then close both."""
    selector = selectors.DefaultSelector()
    peers = {first: second, second: first}
    try:
        for end in peers:
            end.setblocking(True)
            selector.register(end, selectors.EVENT_READ)
        open_ends = 2
        while open_ends:
            for key, _ in selector.select():
                source: socket.socket = key.fileobj  # type: ignore[assignment]  # registered sockets
                target = peers[source]
                try:
                    data = source.recv(_CHUNK)
                except OSError:
                    data = b""
                if data:
                    try:
                        target.sendall(data)
                    except OSError:
                        return
                    continue
                selector.unregister(source)
                open_ends -= 1
                with contextlib.suppress(OSError):
                    target.shutdown(socket.SHUT_WR)
    finally:
        selector.close()
        for end in peers:
            end.close()


def _carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        upstream.close()
        client.close()
        return
    splice(client, upstream)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_carry, args=(client, path), daemon=True).start()


def main(arguments: Sequence[str]) -> int:
    """Listen, run the command (``arguments[1:]``) pointed at the proxy (``arguments[0]``), and return its
    exit status."""
    path, command = arguments[0], list(arguments[1:])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    address = f"http://127.0.0.1:{listener.getsockname()[1]}"
    environment = {name: value for name, value in os.environ.items() if name not in _BYPASS}
    environment.update(dict.fromkeys(PROXY_VARIABLES, address))
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    try:
        process = subprocess.Popen(command, env=environment)
    except OSError as error:
        print(f"{command[0]}: {error.strerror}", file=sys.stderr)
        return 127  # as a shell says of a command it cannot start

    def forward(number: int, _frame: object) -> None:
        process.send_signal(number)

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, forward)
    status = process.wait()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the connection threads go with the process
