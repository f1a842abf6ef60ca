"""``ask-permissions mcp-proxy``: a stdio MCP server that gates an upstream MCP server's tool calls.

The MCP SDK is imported only when the command runs, so the rest of the command works without it.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shlex
from typing import Any, Final
from urllib.parse import unquote, urlsplit, urlunsplit

from ask_permissions.queue._open import describe_url, open_store
from ask_permissions.queue._store import DEFAULT_SESSION
from ask_permissions.settings._policy_file import load_policy

__all__ = ["add_mcp_proxy_parser", "run_mcp_proxy"]

COMMAND: Final = "mcp-proxy"

# Where the command tells a person to keep approvals when the proxy runs without a store.
_SUGGESTED_STORE: Final = "approvals.db"

_POSTGRES: Final = ("postgresql://", "postgres://")
# The libpq connection parameters that hold a secret (the others name a host, a user, a file).
_SECRET_PARAMETERS: Final = frozenset({"password", "sslpassword"})


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds; got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds; got {text!r}")
    return value


def _characters(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of characters; got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of characters; got {text!r}")
    return value


def add_mcp_proxy_parser(commands: Any) -> None:
    """Add the ``mcp-proxy`` subcommand to the command's subparsers."""
    # Both are free of the SDK, which is imported only when the command runs.
    from ask_permissions.integrations._mcp_held import PENDING_EXPIRY  # noqa: PLC0415
    from ask_permissions.integrations._mcp_prompt import PROMPT_LIMIT  # noqa: PLC0415

    proxy = commands.add_parser(
        COMMAND,
        help="serve an upstream MCP server's tools over stdio, each call decided by a policy file",
        description="Start the upstream MCP server COMMAND over stdio and serve its tools on this "
        "process's stdin/stdout. Each tools/call is decided by the policy: proceed forwards it with the "
        "arguments the policy decided, block answers with an error result, and a call that needs a person "
        "shows the whole call through MCP elicitation when the client supports it (accept approves once, "
        "decline rejects), else answers with an error result naming the pending action. Tools are pinned "
        "when first listed: a tool whose definition changes asks a person for every call. Exit status 0 "
        "once the client closes the connection, 2 for bad input or an upstream server that fails to start "
        "or goes away.",
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
        "--trust-annotations",
        action="store_true",
        help="trust the upstream server's tool annotations: a readOnlyHint may then relax a decision no rule "
        "made (the default's ask, a mode's objection to side effects); without it, annotations only tighten",
    )
    proxy.add_argument(
        "--prompt-limit",
        type=_characters,
        default=PROMPT_LIMIT,
        metavar="CHARS",
        help="the longest elicitation message; a call too long to show whole waits for the approvals inbox "
        f"instead (default: {PROMPT_LIMIT})",
    )
    proxy.add_argument(
        "--pending-expiry",
        type=_seconds,
        default=PENDING_EXPIRY,
        metavar="SECONDS",
        help="reject a held call's action once no client has made the call for this long (default: "
        f"{PENDING_EXPIRY:g})",
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

    # Always a record keeper: the proxy reads the deciding layer from the records (annotations need it).
    audit = AuditLog(options.audit)
    store = None if options.store is None else open_store(options.store)
    approve_hint = unanswerable_hint = None
    if options.store is not None:
        # A format text for the proxy: the store's and the session's own braces are kept as written.
        approve_hint = _approve_command("{action_id}", _braces(options.store), _braces(options.session))
    else:
        unanswerable_hint = _store_advice(options, command)
    try:
        policy = load_policy(options.policy, on_decision=audit, store=store, session=options.session)
        asyncio.run(
            run_stdio_proxy(
                policy,
                command,
                server_name=options.name,
                audit=audit,
                approve_hint=approve_hint,
                unanswerable_hint=unanswerable_hint,
                trust_annotations=options.trust_annotations,
                prompt_limit=options.prompt_limit,
                pending_expiry=options.pending_expiry,
                where=options.policy,
            )
        )
    except ValueError:
        raise
    except Exception as error:  # the upstream did not start, or went away: say so on one line
        cause = _innermost(error)
        if isinstance(cause, ValueError):
            raise cause from error
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


def _approve_command(action_id: str, store: str, session: str) -> str:
    """The approvals command that approves an action (``{action_id}`` is kept for the proxy to fill in).

    It is written into held calls' results, which the model reads: the store is named without its password.
    """
    text = f"ask-permissions approvals approve {action_id} --store {shlex.quote(_without_password(store))}"
    if session != DEFAULT_SESSION:
        text += f" --session {shlex.quote(session)}"
    return text


def _braces(text: str) -> str:
    """``text`` as a literal in a ``str.format`` text (shell quoting leaves braces alone)."""
    return text.replace("{", "{{").replace("}", "}}")


def _without_password(url: str) -> str:
    """A store URL with no password in it: a PostgreSQL URL loses the one in its authority and its query's
    ``password`` and ``sslpassword`` parameters (a person gives theirs with ``PGPASSWORD`` or a password
    file); the rest is kept as written, so the URL still names the store."""
    if not url.startswith(_POSTGRES):
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return describe_url(url)
    credentials, at, host = parts.netloc.rpartition("@")
    user = credentials.partition(":")[0]
    netloc = f"{user}@{host}" if at else host
    kept = [
        item
        for item in parts.query.split("&")
        if item and unquote(item.partition("=")[0]).strip() not in _SECRET_PARAMETERS
    ]
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(kept), parts.fragment))


def _store_advice(options: argparse.Namespace, command: list[str]) -> str:
    """What a held call's result says when this proxy has no store: the command lines that make its calls
    answerable (this proxy's own, with a store), and the one that then approves."""
    folder = os.path.dirname(os.path.abspath(options.policy))
    url = f"sqlite:///{os.path.join(folder, _SUGGESTED_STORE)}"
    proxy = ["ask-permissions", COMMAND, "--policy", options.policy, "--store", url]
    if options.session != DEFAULT_SESSION:
        proxy += ["--session", options.session]
    for flag, value in (("--name", options.name), ("--audit", options.audit)):
        if value is not None:
            proxy += [flag, value]
    if options.trust_annotations:
        proxy.append("--trust-annotations")
    proxy += ["--", *command]
    approve = _approve_command("ID", url, options.session)
    return (
        "this proxy has no --store, so only the client could have asked a person, and it could not (it "
        "declares no elicitation, or the call is too long to show whole). Run the proxy with a store "
        f"instead ({shlex.join(proxy)}), make the call again, and approve the action it names with: {approve}"
    )


def _innermost(error: BaseException) -> BaseException:
    """The first exception an exception group (the SDK's task groups raise them) holds, however nested."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
