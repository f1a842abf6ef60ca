"""``ask-permissions mcp-proxy``: a stdio MCP server that gates an upstream MCP server's tool calls.

The MCP SDK is imported only when the command runs, so the rest of the command works without it.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
from typing import Any, Final

from ask_permissions.queue._open import open_store
from ask_permissions.queue._store import DEFAULT_SESSION
from ask_permissions.settings._policy_file import load_policy

__all__ = ["add_mcp_proxy_parser", "run_mcp_proxy"]

COMMAND: Final = "mcp-proxy"


def add_mcp_proxy_parser(commands: Any) -> None:
    """Add the ``mcp-proxy`` subcommand to the command's subparsers."""
    proxy = commands.add_parser(
        COMMAND,
        help="serve an upstream MCP server's tools over stdio, each call decided by a policy file",
        description="Start the upstream MCP server COMMAND over stdio and serve its tools on this "
        "process's stdin/stdout. Each tools/call is decided by the policy: proceed forwards it, block "
        "answers with an error result, and a call that needs a person asks through MCP elicitation when "
        "the client supports it (accept approves once, decline rejects), else answers with an error result "
        "naming the pending action. Exit status 0 once the client closes the connection, 2 for bad input "
        "or an upstream server that fails to start or goes away.",
    )
    proxy.add_argument(
        "--policy", required=True, metavar="FILE", help="policy file (.toml for TOML, JSON otherwise)"
    )
    proxy.add_argument(
        "--name", metavar="SERVER", help="decide calls as mcp__SERVER__<tool> instead of the upstream's names"
    )
    proxy.add_argument("--audit", metavar="FILE", help="append one JSON line per decision to FILE")
    proxy.add_argument(
        "--store",
        metavar="URL",
        help="keep pending calls in this store (sqlite:///path.db or postgresql://...), so that a person can "
        "approve them with `ask-permissions approvals approve ID --store URL`",
    )
    proxy.add_argument(
        "--session", metavar="S", default=DEFAULT_SESSION, help="the store's session (default: default)"
    )
    proxy.add_argument(
        "upstream", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="the upstream MCP server"
    )


def run_mcp_proxy(options: argparse.Namespace) -> int:
    """Run the proxy until the client closes stdin; return the exit status.

    Raises:
        ValueError: no upstream command, an invalid ``--name``, or an upstream server that failed to start
            or went away; InvalidSnapshotError (a ValueError) for an invalid policy file.
        OSError: the policy file cannot be read.
        ValueError: also when the MCP SDK is not installed (the message names the extra).
    """
    command = list(options.upstream)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ValueError("mcp-proxy: expected the upstream server's command after --")
    try:
        from ask_permissions.integrations.mcp_proxy import AuditLog, run_stdio_proxy  # noqa: PLC0415  # lazy: the SDK is optional
    except ImportError as error:  # reported like any other bad setup: one line, exit status 2
        raise ValueError(str(error)) from error

    audit = None if options.audit is None else AuditLog(options.audit)
    store = None if options.store is None else open_store(options.store)
    hint = None
    if options.store is not None:
        hint = f"ask-permissions approvals approve {{action_id}} --store {shlex.quote(options.store)}"
        if options.session != DEFAULT_SESSION:
            hint += f" --session {shlex.quote(options.session)}"
    try:
        policy = load_policy(options.policy, on_decision=audit, store=store, session=options.session)
        asyncio.run(
            run_stdio_proxy(policy, command, server_name=options.name, audit=audit, approve_hint=hint)
        )
    except ValueError:
        raise
    except Exception as error:  # the upstream did not start, or went away: say so on one line
        cause = _innermost(error)
        detail = (
            cause.strerror
            if isinstance(cause, OSError) and cause.strerror
            else str(cause) or type(cause).__name__
        )
        raise ValueError(f"mcp-proxy: the upstream server {command[0]!r} failed: {detail}") from error
    finally:
        if store is not None:
            store.close()
    return 0


def _innermost(error: BaseException) -> BaseException:
    """The first exception an exception group (the SDK's task groups raise them) holds, however nested."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
