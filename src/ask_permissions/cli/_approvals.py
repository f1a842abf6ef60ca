"""``ask-permissions approvals``: a person's inbox (list, show, approve, reject, expire, watch)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, TextIO

from ask_permissions._errors import CorruptStoreError, StoreUnavailableError, preview
from ask_permissions._vocabulary import SCOPES
from ask_permissions.inbox._answers import (
    AnswerError,
    answer_scopes,
    edit_refusal,
    is_unchanged,
    person_name,
    read_arguments,
    scope_refusal,
)
from ask_permissions.queue._action import Action
from ask_permissions.queue._open import describe_url, open_store
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.queue._store import ApprovalStore, check_session

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["STORE_ENV", "add_parser", "run_approvals"]

STORE_ENV: Final = "ASK_PERMISSIONS_STORE"
"""The store URL ``--store`` defaults to."""
_EXIT_OK: Final = 0
_EXIT_INTERRUPTED: Final = 130
_CELL: Final = 60  # characters of a table cell before it is cut
_WATCH_FALLBACK: Final = 1.0  # seconds: look again even if no change was noticed
_HISTORY: Final = 100  # resolved actions --all lists, unless --limit says
_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNITS: Final = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_STATUSES: Final = ("pending", "approved", "rejected")
_READING: Final = ("list", "show", "watch")  # the subcommands that never write


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``approvals`` and its subcommands."""
    parser = commands.add_parser(
        "approvals",
        help="list, show, approve, reject, expire or watch the actions of a store",
        description="A person's inbox over a store shared with the agents' processes. Exit status 0 done, "
        "2 bad input (usage, an unknown or already resolved id, an id several sessions hold, an answer the "
        "agent's host would not honour, edited arguments that are not a JSON object, a store that cannot be "
        "opened).",
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
        help="the session (default: every session; show, approve and reject find the one holding the id)",
    )
    deciding = argparse.ArgumentParser(add_help=False)
    deciding.add_argument(
        "--as",
        dest="decided_by",
        metavar="NAME",
        help="who decides, as the agent's records and audit lines name them (default: the OS user)",
    )
    filters = argparse.ArgumentParser(add_help=False)
    filters.add_argument("--tool", metavar="NAME", help="only the actions of this tool")
    actions = parser.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list", parents=[common, filters], help="the pending actions, oldest first (--all: and the history)"
    )
    listing.add_argument("--json", action="store_true", help="a JSON array instead of a table")
    listing.add_argument(
        "--all", action="store_true", help="resolved actions too, most recent first, after the pending ones"
    )
    listing.add_argument("--status", choices=_STATUSES, help="only actions in this status (implies --all)")
    listing.add_argument(
        "--limit", metavar="N", type=_positive, help=f"at most N resolved actions (default {_HISTORY})"
    )
    show = actions.add_parser("show", parents=[common], help="one action, in any status, in full")
    show.add_argument("id", metavar="ID", type=_action_id)
    show.add_argument("--json", action="store_true", help="a JSON object")
    approve = actions.add_parser("approve", parents=[common, deciding], help="approve pending actions")
    approve.add_argument("ids", metavar="ID", type=_action_id, nargs="+")
    approve.add_argument("--scope", choices=SCOPES, default="once", help="how far the approval reaches")
    approve.add_argument(
        "--arguments",
        metavar="JSON",
        help="approve one action with these arguments instead of the model's (a JSON object): what runs",
    )
    reject = actions.add_parser("reject", parents=[common, deciding], help="reject pending actions")
    reject.add_argument("ids", metavar="ID", type=_action_id, nargs="+")
    reject.add_argument("--feedback", metavar="TEXT", help="what the model is told")
    expire = actions.add_parser(
        "expire", parents=[common, deciding, filters], help="reject the actions pending for too long"
    )
    expire.add_argument(
        "--older-than",
        metavar="AGE",
        type=_duration,
        required=True,
        help="pending longer than this: seconds, or 30m, 2h, 1d",
    )
    watch = actions.add_parser(
        "watch",
        parents=[common, filters],
        help="print pending actions as they arrive, and each resolution (Ctrl-C stops; exit 130)",
    )
    watch.add_argument("--json", action="store_true", help="one JSON object a line")
    watch.add_argument("--limit", metavar="N", type=_positive, help="stop after N lines")
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
    if options.session is not None:
        check_session(options.session)  # "" (an unset variable, say) never means "every session"
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
            _list(out, store, options)
        elif command == "show":
            _show(out, store, options)
        elif command in ("approve", "reject"):
            _resolve(out, store, options)
        elif command == "expire":
            _expire(out, store, options)
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


def _pending(store: ApprovalStore, session: str | None, tool: str | None = None) -> list[tuple[str, Action]]:
    if session is not None:
        found = [(session, action) for action in ApprovalQueue(store=store, session=session).pending_actions]
    else:
        found = store.all_pending()
    return [(s, action) for s, action in found if tool is None or action.tool_name == tool]


def _list(out: TextIO, store: ApprovalStore, options: argparse.Namespace) -> None:
    listed: list[tuple[str, Action]] = []
    if options.status in (None, "pending"):
        listed = _pending(store, options.session, options.tool)
    if options.all or options.status in ("approved", "rejected"):
        limit = _HISTORY if options.limit is None else options.limit
        history = store.resolved_actions(options.session, limit if options.tool is None else limit * 10)
        listed.extend(
            (session, action)
            for session, action in history
            if (options.tool is None or action.tool_name == options.tool)
            and options.status in (None, action.status)
        )
    _print_actions(out, listed, as_json=options.json, history=bool(options.all or options.status))


def _locate(store: ApprovalStore, session: str | None, action_id: int) -> tuple[ApprovalQueue, Action]:
    """The queue and action an id names: in ``session``, or in the one session that holds it."""
    if session is not None:
        queue = ApprovalQueue(store=store, session=session)
        action = queue.get(action_id)
        if action is None:
            raise ValueError(f"action {action_id}: no such action in session {_shown(session)}")
        return queue, action
    sessions = store.sessions_with(action_id)
    if not sessions:
        raise ValueError(f"action {action_id}: no such action in any session of the store")
    if len(sessions) > 1:
        held = []
        for name in sessions:
            found = ApprovalQueue(store=store, session=name).get(action_id)
            held.append(f"{_shown(name)} ({'gone' if found is None else found.status})")
        raise ValueError(
            f"action {action_id} is in several sessions: {', '.join(held)}; say which with --session"
        )
    queue = ApprovalQueue(store=store, session=sessions[0])
    action = queue.get(action_id)
    if action is None:  # forgotten between the two reads
        raise ValueError(f"action {action_id}: no such action in session {_shown(sessions[0])}")
    return queue, action


def _show(out: TextIO, store: ApprovalStore, options: argparse.Namespace) -> None:
    queue, action = _locate(store, options.session, options.id)
    record = _record(queue.session, action)
    if options.json:
        record["honoured_scopes"] = answer_scopes(store, queue.session, action)
        print(json.dumps(record, indent=2), file=out)
        return
    fields: list[tuple[str, object]] = [
        ("session", queue.session),
        ("id", action.id),
        ("status", action.status),
        ("tool", action.tool_name),
        ("tool call id", action.tool_call_id),
        ("submitted at", action.submitted_at.isoformat(timespec="seconds")),
        ("reason", _reason(action)),
    ]
    why = action.why
    if why is not None:
        fields += [("layer", why["layer"]), ("rule", why["rule"]), ("rule source", why["source"])]
    fields.append(("auto-approvable", "yes" if action.auto_approvable else "no"))
    if not action.is_pending:
        fields += [
            ("scope", action.resolution_scope),
            ("feedback", action.feedback),
            ("decided by", action.decided_by),
            (
                "resolved at",
                None if action.resolved_at is None else action.resolved_at.isoformat(timespec="seconds"),
            ),
        ]
    for name, value in fields:
        if value is not None:  # a field with no value is left out: nothing prints "None"
            print(f"{name + ':':<17} {_cell(_text(value), limit=None)}", file=out)
    if action.is_pending:
        print("answers the agent's host honours (approve --scope):", file=out)
        for scope, text in answer_scopes(store, queue.session, action).items():
            print(f"  {scope:<8} {_cell(text, limit=None)}", file=out)
    if why is not None and why["suggestions"]:
        print("don't ask again would allow:", file=out)
        for rule in why["suggestions"]:
            print(f"  {_cell(rule, limit=None)}", file=out)
    print("args:", file=out)
    _print_json(out, action.args)
    if action.edited_args is not None:
        print("edited args (what ran):", file=out)
        _print_json(out, action.edited_args)


def _print_json(out: TextIO, value: object) -> None:
    for line in json.dumps(value, indent=2, ensure_ascii=False, default=str).splitlines():
        print(f"  {_cell(line, limit=None)}", file=out)


def _resolve(out: TextIO, store: ApprovalStore, options: argparse.Namespace) -> None:
    """Approve or reject: every id and the answer are checked first, so bad input resolves nothing."""
    approve = options.approvals_command == "approve"
    decided_by = person_name(options.decided_by, "--as")
    ids = list(dict.fromkeys(options.ids))
    arguments = None
    if approve and options.arguments is not None:
        if len(ids) != 1:
            raise ValueError(f"--arguments: edited arguments approve one action; got {len(ids)} ids")
        arguments = read_arguments(options.arguments)
    located = [_locate(store, options.session, action_id) for action_id in ids]
    for queue, action in located:
        if action.is_applying:
            raise ValueError(f"action {action.id} is being resolved by another process right now")
        if not action.is_pending:
            raise ValueError(
                f"action {action.id} is already {action.status}{_by(action)}; nothing was changed"
            )
        if approve:
            refused = scope_refusal(store, queue.session, action, options.scope)
            if refused is not None:
                raise AnswerError(f"--scope {options.scope}: {refused}")
            if arguments is not None and not is_unchanged(action, arguments):
                refused = edit_refusal(store, queue.session, action)
                if refused is not None:
                    raise AnswerError(f"--arguments: {refused}")
    missed: list[str] = []
    for queue, action in located:
        if approve:
            edit = None if arguments is None or is_unchanged(action, arguments) else arguments
            done = queue.approve(action.id, scope=options.scope, arguments=edit, decided_by=decided_by)
        else:
            done = queue.reject(action.id, feedback=options.feedback, decided_by=decided_by)
        if done:
            print(_resolution_line(done[0]), file=out)
            continue
        # Someone else answered between the check and this answer: say who won.
        now = queue.get(action.id)
        missed.append(f"action {action.id}" + ("" if now is None else f" is {now.status}{_by(now)}"))
    if missed:
        raise ValueError(f"{'; '.join(missed)}: resolved by someone else meanwhile; see 'show'")


def _expire(out: TextIO, store: ApprovalStore, options: argparse.Namespace) -> None:
    """Reject, as expired, the pending actions older than ``--older-than`` (of one session, or of all)."""
    decided_by = person_name(options.decided_by, "--as")
    cutoff = datetime.now(UTC) - options.older_than
    stale = [
        (session, action)
        for session, action in _pending(store, options.session, options.tool)
        if action.submitted_at < cutoff
    ]
    expired = 0
    for session, action in stale:
        for done in ApprovalQueue(store=store, session=session).reject(
            action.id, feedback="expired", decided_by=decided_by
        ):
            print(f"expired {_cell(session)}/{done.id} ({_cell(done.tool_name)}){_by(done)}", file=out)
            expired += 1
    if not expired:
        print("no pending action is that old", file=out)


def _watch(out: TextIO, store: ApprovalStore, options: argparse.Namespace) -> None:
    """Print the pending actions, then each new one as it arrives and each resolution as it happens."""
    deadline = None if options.timeout is None else time.monotonic() + options.timeout
    waiting: dict[tuple[str, int], Action] = {}
    printed = 0

    def emit(lines: list[str]) -> bool:
        nonlocal printed
        for line in lines:
            print(line, file=out)
            printed += 1
            if options.limit is not None and printed >= options.limit:
                out.flush()
                return True
        out.flush()
        return False

    store.watch()
    try:
        seen = store.change_number()
        while True:
            pending = _pending(store, options.session, options.tool)
            now = {(session, action.id): action for session, action in pending}
            lines: list[str] = []
            for key in [key for key in waiting if key not in now]:
                resolved = ApprovalQueue(store=store, session=key[0]).get(key[1])
                if resolved is not None and resolved.is_applying:
                    continue  # being answered right now (its callback runs): printed once it is recorded
                del waiting[key]
                if resolved is not None:
                    lines.append(_event(key[0], resolved, "resolved", as_json=options.json))
            for key, action in now.items():
                if key not in waiting:
                    waiting[key] = action
                    lines.append(_event(key[0], action, "submitted", as_json=options.json))
            if emit(lines):
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
        "reason": _reason(action),
        "why": None if action.why is None else dict(action.why),
        "submitted_at": action.submitted_at.isoformat(),
        "resolution_scope": action.resolution_scope,
        "feedback": action.feedback,
        "decided_by": action.decided_by,
        "resolved_at": None if action.resolved_at is None else action.resolved_at.isoformat(),
        "edited_args": action.edited_args,
    }


def _reason(action: Action) -> str:
    """What a person reads of why the call waits: the reason the model reads, when the policy gave one."""
    if action.why is not None:
        return action.why["reason"]
    return action.message or f"Tool '{action.tool_name}' requires approval"


def _by(action: Action) -> str:
    return "" if action.decided_by is None else f" by {_cell(action.decided_by)}"


def _resolution_line(action: Action) -> str:
    if action.is_approved:
        detail = f"scope {action.scope}" + (", edited" if action.is_edited else "")
    else:
        detail = f"feedback {_shown(action.feedback)}" if action.feedback is not None else "no feedback"
    return f"{action.status} {action.id} ({_cell(action.tool_name)}, {detail}){_by(action)}"


def _event(session: str, action: Action, event: str, *, as_json: bool) -> str:
    if as_json:
        return json.dumps({"event": event, **_record(session, action)})
    if event == "resolved":
        return f"{_cell(session)}  {_resolution_line(action)}"
    return "  ".join(_row(session, action)).rstrip()


def _row(session: str, action: Action) -> list[str]:
    return [
        _cell(session),
        str(action.id),
        _cell(action.tool_name),
        action.submitted_at.isoformat(timespec="seconds"),
        _cell(json.dumps(action.args, ensure_ascii=False, separators=(",", ":"), default=str)),
        _cell(_reason(action)),
    ]


def _print_actions(
    out: TextIO, actions: Sequence[tuple[str, Action]], *, as_json: bool, history: bool = False
) -> None:
    if as_json:
        print(json.dumps([_record(session, action) for session, action in actions], indent=2), file=out)
        return
    if not actions:
        print("no actions" if history else "no pending actions", file=out)
        return
    titles = ["SESSION", "ID", "TOOL", "SUBMITTED", "ARGS", "REASON"]
    rows = [_row(session, action) for session, action in actions]
    if history:
        titles[4:4] = ["STATUS", "BY"]
        for row, (_, action) in zip(rows, actions, strict=True):
            row[4:4] = [action.status, _cell(action.decided_by or "-")]
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
    return value if isinstance(value, str) else json.dumps(value)


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


def _duration(text: str) -> timedelta:
    matched = _DURATION.fullmatch(text.strip())
    if matched is None:
        raise argparse.ArgumentTypeError(
            f"expected an age: seconds, or a number and s, m, h or d; got {text!r}"
        )
    return timedelta(seconds=float(matched.group(1)) * _UNITS[matched.group(2)])
