"""A person's answer, checked before it is given: the scopes the agent's host honours, edited arguments read
from JSON, who answers, and which session holds an id. Shared by ``approvals`` and the web inbox."""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Mapping
from typing import Any, Final

from ask_permissions._errors import preview
from ask_permissions._vocabulary import MACHINE_DECIDERS, SCOPES, ResolutionScope
from ask_permissions.queue._action import Action, check_decided_by
from ask_permissions.queue._store import ApprovalStore

__all__ = [
    "ONCE",
    "AnswerError",
    "answer_scopes",
    "default_user",
    "edit_refusal",
    "is_unchanged",
    "person_name",
    "read_arguments",
    "runs_edits",
    "scope_refusal",
]

ONCE: Final[dict[ResolutionScope, str]] = {"once": "runs this call once"}


class AnswerError(ValueError):
    """An answer a person may not give (a scope the host would not honour, edited arguments that are not a
    JSON object); nothing was resolved. The message says why, for the person."""


def answer_scopes(
    store: ApprovalStore,
    session: str,
    action: Action,
    recorded: Mapping[str, dict[ResolutionScope, str] | None] | None = None,
) -> dict[ResolutionScope, str]:
    """The answers the agent's host carries out for ``action``: scope → what it does.

    The action's own ``why["scopes"]`` (its policy said so when it queued the call), else what a policy over
    the session recorded in the store (``recorded`` may hold it already, by session), else ``once`` only:
    with no word from the host, nothing beyond the call itself is promised.
    """
    why = action.why
    if why is not None and "scopes" in why:
        return dict(why["scopes"])
    if recorded is not None and session in recorded:
        host = recorded[session]
    else:
        host = store.honoured_scopes(session)
    return dict(ONCE) if host is None else dict(host)


def scope_refusal(store: ApprovalStore, session: str, action: Action, scope: object) -> str | None:
    """Why ``scope`` may not be given to ``action``, or ``None`` when the host honours it."""
    if scope not in SCOPES:
        return f"unknown scope {preview(scope)}; expected one of {', '.join(SCOPES)}"
    honoured = answer_scopes(store, session, action)
    if scope in honoured:
        return None
    offered = ", ".join(f"{name} ({text})" for name, text in honoured.items())
    why = action.why
    if why is not None and "scopes" in why:
        reason = f"the agent's host cannot carry out a {scope!r} answer for this call"
    elif store.honoured_scopes(session) is None:
        reason = (
            f"no policy over session {session!r} said which answers its host carries out, "
            f"so a {scope!r} answer might be recorded and never honoured"
        )
    else:
        reason = f"the agent's host of session {session!r} does not carry out {scope!r} answers"
    return f"action {action.id}: {reason}; it honours: {offered}"


def runs_edits(
    store: ApprovalStore,
    session: str,
    action: Action,
    recorded: Mapping[str, dict[ResolutionScope, str] | None] | None = None,
) -> bool:
    """Whether the agent's host of ``action`` runs a person's edited arguments.

    A policy of this version does (``policy.outcome`` runs the edit, or refuses it): it explained the call
    when it queued it (``why``), or it recorded the answers its host honours for the session. Without that
    word the host may be an agent of an earlier version, or code that runs the queued call itself: either
    would run the model's arguments while the person is told their edit ran.
    """
    if action.why is not None:
        return True
    if recorded is not None and session in recorded:
        return recorded[session] is not None
    return store.honoured_scopes(session) is not None


def edit_refusal(store: ApprovalStore, session: str, action: Action) -> str | None:
    """Why ``action`` may not be approved with edited arguments, or ``None`` when its host runs the edit."""
    if runs_edits(store, session, action):
        return None
    return (
        f"action {action.id}: no policy over session {session!r} said that its host runs a person's edit, "
        "so the model's own arguments might run instead (an agent of an earlier version, or a host that runs "
        "the queued call itself); approve it as asked, or reject it with feedback saying what to call"
    )


def read_arguments(text: str) -> dict[str, Any]:
    """Edited arguments typed by a person: a JSON object.

    Raises:
        AnswerError: the text is not JSON (with the parser's message and position), or not an object.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise AnswerError(f"edited arguments are not JSON: {error}") from None
    except RecursionError:
        raise AnswerError("edited arguments are not JSON: nested too deeply to read") from None
    if not isinstance(value, dict):
        raise AnswerError(
            f"edited arguments must be a JSON object (the tool's named arguments); got {type(value).__name__}"
            f" {preview(value)}"
        )
    return value


def is_unchanged(action: Action, arguments: Mapping[str, Any]) -> bool:
    """Whether edited arguments say exactly what the call already says (then it is no edit)."""
    return _canonical(arguments) == _canonical(action.args)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)


def default_user() -> str:
    """Who answers when no name is given: the operating-system user running the command."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name and no password-file entry
        name = ""
    return name if name and name.isprintable() else f"uid {os.getuid()}"


def person_name(given: str | None, option: str) -> str:
    """The name a person answers under: ``given``, or the operating-system user's (``default_user``).

    Raises:
        ValueError: the name is not a ``decided_by`` name, or it is a machine path's (``auto_approve``,
            ``expiry``, …), which the records, ``audit`` and ``suggest`` would read as no person's answer.
    """
    name = check_decided_by(given or default_user())
    assert name is not None
    if name in MACHINE_DECIDERS:
        machines = ", ".join(sorted(MACHINE_DECIDERS))
        raise ValueError(
            f"{option}: {name!r} is the name of a machine path in the records ({machines}), not a "
            "person's; give your own name"
        )
    return name
