"""The web inbox's HTML, rendered on the server: the page's shell (served to anyone, holding nothing of the
store), the view its script fetches with the token, the pending actions, the history.

Everything a model or a host wrote is escaped for HTML and shown visibly: control and formatting characters
(an ANSI escape, a bidi override that would reorder a command on screen, NUL) appear as their escapes
(``\\x1b``, ``\\u202e``).
A long string value folds, and its card's ``Approve`` stays disabled until the person unfolded it: nothing
is approved that the page never showed. Plain functions of plain data (no web framework here).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, final

from ask_permissions.policy._digest import args_digest
from ask_permissions.queue._action import Action
from ask_permissions.typing import ResolutionScope

__all__ = [
    "FOLD_AT",
    "NEEDS_SCRIPT",
    "NO_TOKEN",
    "TOKEN_REFUSED",
    "Card",
    "Filters",
    "action_key",
    "json_visible",
    "render_history",
    "render_pending",
    "render_shell",
    "render_view",
    "visible",
]

FOLD_AT: Final = 240
"""Characters of a string value shown before it folds (one click shows it whole)."""
_FOLDED_SHOWN: Final = 160
_STYLE_VERSION: Final = "2"
_EMPTY: Final = '<p class="empty">Nothing waits for an answer.</p>'
NEEDS_SCRIPT: Final = (
    "This inbox needs JavaScript: its page keeps the token in this tab and sends it with each request, "
    "so that no cookie carries it to the other servers of this machine."
)
NO_TOKEN: Final = (
    "This tab holds no token for the inbox: open the address ask-permissions inbox printed when it "
    "started (it ends in #token=…)."
)
TOKEN_REFUSED: Final = (
    "The inbox refused this tab's token (was it started again?): open the address it printed when it "
    "started (it ends in #token=…)."
)


@final
@dataclass(frozen=True, slots=True)
class Filters:
    """What the page shows: a view (``pending`` or ``history``), and optionally one session and one tool."""

    view: str = "pending"
    session: str | None = None
    tool: str | None = None

    def query(self, **changes: str | None) -> str:
        """The query string for these filters with ``changes`` (empty values left out)."""
        values = {"view": self.view, "session": self.session, "tool": self.tool, **changes}
        kept = [(name, value) for name, value in values.items() if value]
        if not kept:
            return ""
        from urllib.parse import urlencode  # noqa: PLC0415  # only for links

        return "?" + urlencode(kept)


@final
@dataclass(frozen=True, slots=True)
class Card:
    """One pending action as the page shows it, with the answers its host honours (``edits``: whether it
    runs a person's edited arguments)."""

    session: str
    action: Action
    scopes: Mapping[ResolutionScope, str]
    edits: bool = True


def visible(text: str) -> str:
    """``text`` escaped for HTML, with every unprintable character shown as its escape."""
    if not text.isprintable():
        text = "".join(char if char.isprintable() or char == "\n" else _escape(char) for char in text)
    return html.escape(text, quote=True)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def json_visible(text: str) -> str:
    """JSON text with every unprintable character but the newline as its ``\\uXXXX`` escape: the same JSON
    value, shown so that nothing hides or reorders what the person reads (escaped for HTML)."""
    if not text.isprintable():
        text = "".join(char if char.isprintable() or char == "\n" else _json_escape(char) for char in text)
    return html.escape(text, quote=True)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def action_key(session: str, action_id: int) -> str:
    """The key a card is known by on the page (and in the forms): ``<id>@<session>``."""
    return f"{action_id}@{session}"


def _time(moment: datetime | None) -> str:
    if moment is None:
        return ""
    stamp = moment.isoformat(timespec="seconds")
    return f'<time datetime="{html.escape(stamp)}">{html.escape(stamp.replace("T", " "))}</time>'


# -- the arguments as formatted JSON, long strings folded ------------------------------------------------


def _json_html(value: object, indent: int, folds: list[int]) -> str:
    pad = "  " * indent
    inner = "  " * (indent + 1)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [
            f'{inner}<span class="key">{json_visible(json.dumps(str(key), ensure_ascii=False))}</span>: '
            f"{_json_html(item, indent + 1, folds)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = [f"{inner}{_json_html(item, indent + 1, folds)}" for item in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        if len(text) <= FOLD_AT:
            return f'<span class="string">{json_visible(text)}</span>'
        folds.append(len(value))
        return (
            f'<span class="string folded" data-full="{json_visible(text)}">'
            f"{json_visible(text[:_FOLDED_SHOWN])}…</span>"
            f'<button type="button" class="unfold">Show all {len(value):,} characters</button>'
        )
    return f'<span class="literal">{json_visible(json.dumps(value))}</span>'


def _arguments(value: object) -> tuple[str, int]:
    """The arguments as formatted JSON HTML, and how many values folded."""
    folds: list[int] = []
    return _json_html(value, 0, folds), len(folds)


# -- the pending actions ---------------------------------------------------------------------------------


def _why(action: Action) -> str:
    why = action.why
    reason = (
        why["reason"] if why is not None else action.message or f"Tool '{action.tool_name}' requires approval"
    )
    parts = [f'<p class="reason">{visible(reason)}</p>']
    if why is not None:
        rows = [("Layer", why["layer"]), ("Rule", why["rule"]), ("Rule from", why["source"])]
        listed = "".join(
            f"<dt>{name}</dt><dd>{visible(value)}</dd>" for name, value in rows if value is not None
        )
        parts.append(f'<dl class="why">{listed}</dl>')
        if why["suggestions"]:
            rules = "".join(f"<li><code>{visible(rule)}</code></li>" for rule in why["suggestions"])
            parts.append(
                f'<div class="suggestions"><span>Don\'t ask again would allow:</span><ul>{rules}</ul></div>'
            )
    return "".join(parts)


def _card(card: Card, csrf: str) -> str:
    action, session = card.action, card.session
    key = action_key(session, action.id)
    formatted, folds = _arguments(action.args)
    editable = json.dumps(action.args, indent=2, ensure_ascii=False)
    options = "".join(
        f'<option value="{scope}">{scope}: {visible(text)}</option>' for scope, text in card.scopes.items()
    )
    folded_note = (
        f'<p class="fold-note">{folds} long value{"s" if folds > 1 else ""} folded: show '
        f"{'them' if folds > 1 else 'it'} whole to approve.</p>"
        if folds
        else ""
    )
    title_id = f"title-{html.escape(key)}"
    disabled = " disabled" if folds else ""  # until each folded value is shown (the script enables it)
    if card.edits:
        # The editor is made when Edit is first pressed (a template costs the page nothing until then).
        editor = (
            f'<template class="editor-template"><div class="editor"><label>Edited arguments (JSON)'
            f'<textarea name="arguments" rows="6" spellcheck="false">{json_visible(editable)}</textarea>'
            "</label></div></template>"
        )
        edit = '<button type="button" class="edit" aria-expanded="false">Edit</button>'
    else:
        editor = (
            '<p class="no-edit">No edit: no policy over this session said that its host runs edited '
            "arguments, so the model's own might run instead.</p>"
        )
        edit = '<button type="button" class="edit" disabled>Edit</button>'
    return (
        f'<article class="action" data-key="{html.escape(key)}" data-folds="{folds}" '
        f'aria-labelledby="{title_id}">'
        f'<header><h2 id="{title_id}"><span class="tool">{visible(action.tool_name)}</span> '
        f'<span class="id">#{action.id}</span></h2>'
        f'<p class="meta"><span class="session">session {visible(session)}</span> · '
        f"asked {_time(action.submitted_at)}"
        "</p></header>"
        f"{_why(action)}"
        f'<div class="args"><h3>Arguments</h3><pre class="json">{formatted}</pre>{folded_note}</div>'
        f'<form class="answer" method="post" action="/answer">'
        f'<input type="hidden" name="csrf" value="{html.escape(csrf)}">'
        f'<input type="hidden" name="session" value="{visible(session)}">'
        f'<input type="hidden" name="id" value="{action.id}">'
        f'<input type="hidden" name="digest" value="{args_digest(action.args)}">'
        f"{editor}"
        f'<label class="scope">Scope<select name="scope">{options}</select></label>'
        '<label class="feedback">Feedback for the model (on reject)<input type="text" name="feedback" '
        'maxlength="2000" autocomplete="off"></label>'
        '<div class="buttons">'
        f'<button type="submit" name="decision" value="approve" class="approve"{disabled}>Approve</button>'
        '<button type="submit" name="decision" value="reject" class="reject">Reject</button>'
        f"{edit}"
        "</div>"
        '<p class="notice" role="status" aria-live="polite"></p>'
        "</form></article>"
    )


def render_pending(cards: Sequence[Card], csrf: str) -> str:
    """The pending actions' list (what the live updates replace), oldest first."""
    if not cards:
        return f'<div id="pending" class="cards" data-count="0">{_EMPTY}</div>'
    body = "".join(_card(card, csrf) for card in cards)
    return f'<div id="pending" class="cards" data-count="{len(cards)}">{body}</div>'


# -- the history -------------------------------------------------------------------------------------------


def render_history(resolved: Iterable[tuple[str, Action]]) -> str:
    """The resolved actions, newest first: who, when, what, and whether a person's edit ran."""
    rows = []
    for session, action in resolved:
        scope = action.resolution_scope or ""
        edited = ""
        if action.edited_args is not None:
            formatted = _arguments(action.edited_args)[0]
            edited = f'<details><summary>edited</summary><pre class="json">{formatted}</pre></details>'
        rows.append(
            f'<tr class="{action.status}"><td data-label="When">{_time(action.resolved_at)}</td>'
            f'<td data-label="Session">{visible(session)}</td><td data-label="Action">#{action.id} '
            f"{visible(action.tool_name)}</td>"
            f'<td data-label="Answer">{action.status}{f" ({scope})" if scope else ""}</td>'
            f'<td data-label="By">{visible(action.decided_by or "-")}</td>'
            f'<td data-label="Feedback">{visible(action.feedback or "")}</td>'
            f'<td data-label="Edited">{edited or "no"}</td></tr>'
        )
    if not rows:
        return '<div id="history"><p class="empty">No answers yet.</p></div>'
    head = "".join(
        f'<th scope="col">{name}</th>'
        for name in ("When", "Session", "Action", "Answer", "By", "Feedback", "Edited")
    )
    return (
        f'<div id="history"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


# -- the page ----------------------------------------------------------------------------------------------


def _select(name: str, label: str, chosen: str | None, values: Iterable[str]) -> str:
    options = ['<option value="">all</option>']
    for value in values:
        selected = " selected" if value == chosen else ""
        options.append(f'<option value="{visible(value)}"{selected}>{visible(value)}</option>')
    return f'<label>{label}<select name="{name}">{"".join(options)}</select></label>'


def render_shell() -> str:
    """What ``GET /`` serves to anyone: the assets and the fixed lines, and nothing read from the store.

    The page's script takes the token from the address's fragment, keeps it in this tab and fetches the
    view with it (``render_view``). Without a script, or in a tab that holds no token, only a fixed line
    shows, saying what to do.
    """
    return (
        "<!doctype html>"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>ask-permissions inbox</title>"
        f'<link rel="stylesheet" href="/static/inbox.css?v={_STYLE_VERSION}">'
        f'<script src="/static/inbox.js?v={_STYLE_VERSION}" defer></script>'
        "</head><body>"
        f'<noscript><p class="alone">{NEEDS_SCRIPT}</p></noscript>'
        f'<p class="alone" id="no-token" hidden>{NO_TOKEN}</p>'
        f'<p class="alone" id="token-refused" hidden>{TOKEN_REFUSED}</p>'
        '<div id="inbox"></div>'
        "</body></html>"
    )


def render_view(
    *,
    body: str,
    filters: Filters,
    sessions: Sequence[str],
    tools: Sequence[str],
    pending_count: int,
    user: str,
    store: str,
) -> str:
    """What the page's script puts in the page (``GET /view``, with the token): header, views, filters and
    the list (``body``)."""
    pending_link = html.escape(filters.query(view="pending"))
    history_link = html.escape(filters.query(view="history"))
    current = ' aria-current="page"'
    return (
        f'<div id="view" data-view="{html.escape(filters.view)}">'
        '<header class="top"><h1>ask-permissions inbox</h1>'
        f'<p class="who">answering as <strong>{visible(user)}</strong> · '
        f"store <code>{visible(store)}</code></p>"
        '<nav aria-label="Views">'
        f'<a href="/{pending_link}"{current if filters.view == "pending" else ""}>Pending '
        f'(<span id="pending-count">{pending_count}</span>)</a>'
        f'<a href="/{history_link}"{current if filters.view == "history" else ""}>History</a>'
        "</nav>"
        '<form class="filters" method="get" action="/">'
        f'<input type="hidden" name="view" value="{html.escape(filters.view)}">'
        f"{_select('session', 'Session', filters.session, sessions)}"
        f"{_select('tool', 'Tool', filters.tool, tools)}"
        '<button type="submit">Filter</button>'
        '<span class="live" id="live" role="status">connecting…</span>'
        "</form></header>"
        f"<main>{body}</main></div>"
    )
