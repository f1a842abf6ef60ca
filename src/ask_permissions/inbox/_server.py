"""Serving the web inbox: a socket on the address asked for, a one-time token, uvicorn (extra ``[inbox]``)."""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import socket
import sys
from typing import TextIO

from ask_permissions.queue._open import describe_url, open_store
from ask_permissions.queue._store import ApprovalStore

__all__ = ["inbox_url", "serve_inbox"]


def inbox_url(host: str, port: int, token: str) -> str:
    """The address a person opens: ``http://HOST:PORT/#token=...`` (an IPv6 host in brackets).

    The token is in the fragment, which a browser never sends to a server (nor keeps in a ``Referer``):
    the page's script reads it there.
    """
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/#token={token}"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve_inbox(
    store_url: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    user: str,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Open the store, bind, print the inbox's URL as the first line of ``out``, and serve until stopped.

    Raises:
        ImportError: Starlette or uvicorn is not installed (the extra ``[inbox]``).
        ValueError: the store URL names no durable store.
        OSError: the address cannot be bound (a port in use, say).
    """
    try:
        import uvicorn  # noqa: PLC0415  # the extra [inbox]: imported when the inbox starts

        from ._app import inbox_app  # noqa: PLC0415  # imports Starlette
    except ImportError as error:
        raise ImportError(
            f"the inbox needs Starlette and uvicorn ({error}): pip install 'ask-permissions[inbox]'"
        ) from None
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    store: ApprovalStore = open_store(store_url)
    try:
        if not store.durable:
            raise ValueError(
                f"store {describe_url(store_url)}: the inbox answers for agents in other processes, so it "
                "needs a database store (sqlite:///PATH or postgresql://...)"
            )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(64)
            bound = listener.getsockname()[1]
            token = secrets.token_urlsafe(32)
            app, stopping = inbox_app(store, token=token, user=user, store_url=store_url)
            print(inbox_url(host, bound, token), file=out, flush=True)
            if not _is_loopback(host):
                print(
                    f"ask-permissions inbox: listening on {host}, beyond this machine: anyone who learns the "
                    "address with its token can answer for the agents",
                    file=err,
                    flush=True,
                )
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")

            class Server(uvicorn.Server):
                async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
                    # uvicorn waits for open responses before it stops, and a page's event stream never
                    # ends by itself: end the streams first, or Ctrl-C waits for every page to close.
                    stopping()
                    await super().shutdown(sockets)

            Server(config).run(sockets=[listener])
        finally:
            with contextlib.suppress(OSError):
                listener.close()
    finally:
        store.close()
    return 0
