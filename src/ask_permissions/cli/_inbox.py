"""``ask-permissions inbox``: the web inbox over a store, started in one command (extra ``[inbox]``)."""

from __future__ import annotations

import argparse
import os
import sqlite3
from typing import Any, Final

from ask_permissions.inbox._answers import person_name
from ask_permissions.queue._open import describe_url

from ._approvals import STORE_ENV

__all__ = ["COMMAND", "add_inbox_parser", "run_inbox"]

COMMAND: Final = "inbox"


def add_inbox_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``inbox``."""
    parser = commands.add_parser(
        COMMAND,
        help="a web page to answer the pending actions of a store (extra [inbox])",
        description="Serve a web page over the store: every pending action of every session, live, with "
        "Approve, Reject and Edit, and the history of answers. The first line printed is the page's address "
        "with a one-time token after # (the page's script sends it as a header; no cookie carries it to the "
        "other servers of the machine); open it in a browser. Exit status 0 when stopped (Ctrl-C), 2 for "
        "bad input (no store, a port in use, the extra not installed).",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        default=os.environ.get(STORE_ENV),
        help=f"sqlite:///PATH or postgresql://... (default: ${STORE_ENV})",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=0, help="the port (default 0: any free port)")
    parser.add_argument(
        "--user",
        metavar="NAME",
        help="who answers through this page, as the agents' records name them (default: the OS user)",
    )


def run_inbox(options: argparse.Namespace) -> int:
    """Run the inbox until it is stopped; its exit status.

    Raises:
        ValueError: bad input (the caller prints it on one line and exits 2).
    """
    from ask_permissions.inbox._server import serve_inbox  # noqa: PLC0415  # loads nothing optional itself

    if not options.store:
        raise ValueError(f"--store: a store URL is needed (or set ${STORE_ENV})")
    user = person_name(options.user, "--user")
    try:
        return serve_inbox(options.store, host=options.host, port=options.port, user=user)
    except ImportError as error:
        raise ValueError(str(error)) from None
    except (sqlite3.Error, OSError, RuntimeError) as error:
        raise ValueError(
            f"inbox on {options.host}:{options.port} over {describe_url(options.store)}: {error}"
        ) from None
    except KeyboardInterrupt:
        return 0


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535; got {text!r}")
    return value
