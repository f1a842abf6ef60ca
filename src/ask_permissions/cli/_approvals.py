"""``ask-permissions approvals``: a person's inbox over a store — list, show, approve, reject, watch."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from typing import TYPE_CHECKING, Any, Final, TextIO

from ask_permissions._errors import CorruptStoreError, StoreUnavailableError, preview
from ask_permissions.queue._action import SCOPES, Action
from ask_permissions.queue._open import describe_url, open_store
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.queue._store import DEFAULT_SESSION, ApprovalStore

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["STORE_ENV", "add_parser", "run_approvals"]

STORE_ENV: Final = "ASK_PERMISSIONS_STORE"
"""The store URL ``--store`` defaults to."""
_EXIT_OK: Final = 0
_EXIT_INTERRUPTED: Final = 130
_CELL: Final = 60  # characters of a table cell before it is cut
_WATCH_FALLBACK: Final = 1.0  # seconds: look again even if no change was noticed
_READING: Final = ("list", "show", "watch")  # the subcommands that never write


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``approvals`` and its subcommands."""
    parser = commands.add_parser(
        "approvals",
        help="list, show, approve, reject or watch the pending actions of a store",
        description="A person's inbox over a store shared with the agents' processes. Exit status 0 done, "
        "2 bad input (usage, an unknown or already resolved id, a store that cannot be opened).",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        metavar="URL",
        default=os.environ.get(STORE_ENV),
        help=f"sqlite:///PATH or postgresql://... (default: ${STORE_ENV})",
    )
    common.add_argument(
        "--session",
        metavar="S",
        help="the session (list, watch: every session when left out; "
        f"show, approve, reject: {DEFAULT_SESSION!r} when left out)",
    )
    actions = parser.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[common], help="the pending actions, oldest first")
    listing.add_argument("--json", action="store_true", help="a JSON array instead of a table")
    show = actions.add_parser("show", parents=[common], help="one action, in any status, in full")
    show.add_argument("id", metavar="ID", type=_action_id)
    show.add_argument("--json", action="store_true", help="a JSON object")
    approve = actions.add_parser("approve", parents=[common], help="approve pending actions")
    approve.add_argument("ids", metavar="ID", type=_action_id, nargs="+")
    approve.add_argument("--scope", choices=SCOPES, default="once", help="how far the approval reaches")
    reject = actions.add_parser("reject", parents=[common], help="reject pending actions")
    reject.add_argument("ids", metavar="ID", type=_action_id, nargs="+")
    reject.add_argument("--feedback", metavar="TEXT", help="what the model is told")
    watch = actions.add_parser(
        "watch", parents=[common], help="print pending actions as they arrive (Ctrl-C stops; exit 130)"
    )
    watch.add_argument("--json", action="store_true", help="one JSON object a line")
    watch.add_argument("--limit", metavar="N", type=_positive, help="stop after N actions")
    watch.add_argument("--timeout", metavar="SECONDS", type=_seconds, help="stop after SECONDS")


def run_approvals(options: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one ``approvals`` subcommand; its exit status.

    Raises:
        ValueError: bad input, or a store that cannot be opened or read (the message is one line for
            standard error; the caller exits 2).
    """
    out = sys.stdout if out is None else out
    if not options.store:
        raise ValueError(f"--store: a store URL is needed (or set ${STORE_ENV})")
    try:
        store = _open(options.store, options.approvals_command)
    except StoreUnavailableError as error:
        raise ValueError(f"store {error}") from None
    except (sqlite3.Error, OSError, RuntimeError, ImportError) as error:
        raise ValueError(f"store {describe_url(options.store)}: {error}") from None
    except Exception as error:
        raise _store_error(options.store, error) from None
    try:
        command = options.approvals_command
        if command == "list":
            _print_actions(out, _pending(store, options.session), as_json=options.json)
        elif command == "show":
            _show(out, _queue(store, options), options.id, as_json=options.json)
        elif command in ("approve", "reject"):
            _resolve(out, _queue(store, options), options)
        else:
            _watch(out, store, options)
    except KeyboardInterrupt:
        return _EXIT_INTERRUPTED
    except StoreUnavailableError as error:
        raise ValueError(f"store {error}") from None
    except (sqlite3.Error, OSError) as error:
        raise ValueError(f"store {describe_url(options.store)}: {error}") from None
    except (ValueError, TypeError):  # CorruptStoreError is a ValueError: its message names the row
        raise
    except Exception as error:
        raise _store_error(options.store, error) from None
    finally:
        store.close()
    return _EXIT_OK


def _open(url: str, command: str) -> ApprovalStore:
    """The store; a SQLite file this user can read but not write is opened read-only to read it.

    Raises:
        StoreUnavailableError: the store cannot be opened, or (to approve or reject) written.
    """
    try:
        return open_store(url)
    except StoreUnavailableError as error:
        if not url.startswith("sqlite:///"):
            raise
        try:
            store = open_store(url, read_only=True)
        except (StoreUnavailableError, CorruptStoreError):
            raise error from None
        if command in _READING:
            return store
        store.close()
        raise StoreUnavailableError(
            f"{error}; {command} needs to write to the store, which this user can only read "
            "(list, show and watch work)",
            store=error.store,
        ) from None


def _store_error(url: str, error: Exception) -> Exception:
    """A database driver's error (psycopg's, which this module does not import) as one line."""
    if type(error).__module__.split(".")[0] != "psycopg":
        return error
    return ValueError(f"store {describe_url(url)}: {' '.join(str(error).split())}")


# -- the subcommands -------------------------------------------------------------------------------------


def _queue(store: ApprovalStore, options: argparse.Namespace) -> ApprovalQueue:
    return ApprovalQueue(store=store, session=DEFAULT_SESSION if options.session is None else options.session)


def _pending(store: ApprovalStore, session: str | None) -> list[tuple[str, Action]]:
    if session is not None:
        return [(session, action) for action in ApprovalQueue(store=store, session=session).pending_actions]
    return store.all_pending()


def _show(out: TextIO, queue: ApprovalQueue, action_id: int, *, as_json: bool) -> None:
    action = queue.get(action_id)
    if action is None:
        raise ValueError(_unknown(queue, action_id))
    if as_json:
        print(json.dumps(_record(queue.session, action), indent=2), file=out)
        return
    fields = _record(queue.session, action)
    args = fields.pop("args")
    for name, value in fields.items():
        print(f"{name + ':':<17} {_cell(_text(value), limit=None)}", file=out)
    print("args:", file=out)
    for line in json.dumps(args, indent=2, ensure_ascii=False, default=str).splitlines():
        print(f"  {_cell(line, limit=None)}", file=out)


def _resolve(out: TextIO, queue: ApprovalQueue, options: argparse.Namespace) -> None:
    """Approve or reject: every id is checked first, so a bad one resolves nothing."""
    approve = options.approvals_command == "approve"
    for action_id in dict.fromkeys(options.ids):
        action = queue.get(action_id)
        if action is None:
            raise ValueError(_unknown(queue, action_id))
        if action.is_applying:
            raise ValueError(f"action {action_id} is being resolved by another process right now")
        if not action.is_pending:
            raise ValueError(f"action {action_id} is already {action.status}; nothing was changed")
    if approve:
        resolved = queue.approve(*options.ids, scope=options.scope)
    else:
        resolved = queue.reject(*options.ids, feedback=options.feedback)
    for action in resolved:
        detail = f"scope {action.scope}" if approve else f"feedback {_shown(action.feedback)}"
        print(f"{action.status} {action.id} ({_cell(action.tool_name)}, {detail})", file=out)
    missed = sorted(set(options.ids) - {action.id for action in resolved})
    if missed:
        raise ValueError(
            f"action {', '.join(map(str, missed))}: resolved by someone else meanwhile; see 'show'"
        )


def _watch(out: TextIO, store: ApprovalStore, options: argparse.Namespace) -> None:
    """Print the pending actions, then each new one as it arrives."""
    deadline = None if options.timeout is None else time.monotonic() + options.timeout
    shown: set[tuple[str, int]] = set()
    printed = 0
    store.watch()
    try:
        seen = store.change_number()
        while True:
            new = [(s, a) for s, a in _pending(store, options.session) if (s, a.id) not in shown]
            if options.limit is not None:
                new = new[: options.limit - printed]
            if new:
                _print_actions(out, new, as_json=options.json, lines=True)
                out.flush()
                shown.update((session, action.id) for session, action in new)
                printed += len(new)
            if options.limit is not None and printed >= options.limit:
                return
            left = _WATCH_FALLBACK if deadline is None else min(_WATCH_FALLBACK, deadline - time.monotonic())
            if left <= 0:
                return
            seen = store.wait_for_change(seen, left)
    finally:
        store.unwatch()


# -- output ----------------------------------------------------------------------------------------------


def _record(session: str, action: Action) -> dict[str, Any]:
    return {
        "session": session,
        "id": action.id,
        "status": action.status,
        "tool_name": action.tool_name,
        "tool_call_id": action.tool_call_id,
        "args": action.args,
        "auto_approvable": action.auto_approvable,
        "message": action.message,
        "submitted_at": action.submitted_at.isoformat(),
        "resolution_scope": action.resolution_scope,
        "feedback": action.feedback,
    }


def _print_actions(
    out: TextIO,
    actions: Sequence[tuple[str, Action]],
    *,
    as_json: bool,
    lines: bool = False,
) -> None:
    if as_json:
        records = [_record(session, action) for session, action in actions]
        if lines:
            for record in records:
                print(json.dumps(record), file=out)
        else:
            print(json.dumps(records, indent=2), file=out)
        return
    rows = [
        [
            _cell(session),
            str(action.id),
            _cell(action.tool_name),
            action.submitted_at.isoformat(timespec="seconds"),
            _cell(json.dumps(action.args, ensure_ascii=False, separators=(",", ":"), default=str)),
            _cell(action.message or ""),
        ]
        for session, action in actions
    ]
    if not rows and not lines:
        print("no pending actions", file=out)
        return
    if lines:  # one line per action as it arrives: no header, no alignment to rows not seen yet
        for row in rows:
            print("  ".join(row).rstrip(), file=out)
        return
    titles = ["SESSION", "ID", "TOOL", "SUBMITTED", "ARGS", "MESSAGE"]
    widths = [max(len(row[column]) for row in [titles, *rows]) for column in range(len(titles))]
    for row in [titles, *rows]:
        cells = [
            cell.rjust(width) if column == 1 else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip(), file=out)


def _cell(text: str, *, limit: int | None = _CELL) -> str:
    """Text a model may have written, safe for a terminal: every unprintable character escaped."""
    safe = "".join(char if char.isprintable() else _escape(char) for char in text)
    if limit is not None and len(safe) > limit:
        safe = safe[: limit - 3] + "..."
    return safe


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _text(value: object) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def _unknown(queue: ApprovalQueue, action_id: int) -> str:
    return f"action {action_id}: no such action in session {_shown(queue.session)}"


def _shown(value: object) -> str:
    return _cell(preview(value), limit=None)


def _positive(text: str, what: str = "a positive integer") -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value < 2**63:
        raise argparse.ArgumentTypeError(f"expected {what}; got {text!r}")
    return value


def _action_id(text: str) -> int:
    return _positive(text, "an action id (a positive integer)")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds; got {text!r}")
    return value
