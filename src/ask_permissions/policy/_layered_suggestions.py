"""What a "don't ask again" answer to a layered policy's ask writes: the allow rules that let exactly this
call through again (``rules_for_call``, for the session or project scope), and the rules a person is offered
instead of a one-off yes (``suggestions_for``)."""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from typing import TYPE_CHECKING, Final

from ask_permissions.rules._text import RuleTextError, parse_rule_text
from ask_permissions.shell import read_command
from ask_permissions.shell._quoting import specifier_text

from ._layered_facts import LayeredCall, LayeredState

if TYPE_CHECKING:
    pass


__all__ = ["rules_for_call", "suggestions_for"]


def _call_facts(state: LayeredState, name: str, arguments: object) -> LayeredCall:
    return LayeredCall(state, name, arguments, None, None)


def rules_for_call(state: LayeredState, name: str, arguments: object) -> list[str]:
    """The allow rule texts that let exactly this call through again (the whole tool when its kind has no
    specifier to say more)."""
    call = _call_facts(state, name, arguments)
    kind = call.kind
    if kind is None:
        return [name] if _allows(name, call) else []
    texts: list[str] = []
    if kind.kind == "shell":
        words = _single_command(call)
        texts = [] if words is None else [f"{name}({specifier_text(words)})"]
    elif kind.kind == "path":
        texts = [f"{name}(/{path})" for path in call.paths() or () if not _GLOB.search(path)]
    else:
        host = _host(call.url())
        texts = [] if host is None or _GLOB.search(host) else [f"{name}(domain:{host})"]
    return [text for text in texts if _allows(text, call)]


# A path or host holding one of these would be a wildcard as rule text (path specifiers have no escapes).
_GLOB: Final = re.compile(r"[*?\[]")


def _single_command(call: LayeredCall) -> tuple[str, ...] | None:
    """The words of the call's command when it is one understood command without assignments: what a rule
    for exactly it is written from (each word quoted as needed, so a ``*`` in it stays a ``*``)."""
    command = call.command()
    parsed = None if command is None else read_command(command)
    if parsed is None or not parsed.understood or len(parsed.subcommands) != 1:
        return None
    sub = parsed.subcommands[0]
    return None if sub.assignments or not sub.words else sub.words


def _host(url: str | None) -> str | None:
    if url is None:
        return None
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return None
    return host or None


def suggestions_for(call: LayeredCall) -> list[str]:
    """Rule texts a person could accept instead of a one-off yes, each matching this very call and none
    broader than its own command prefix or directory: the exact call, then its first two words with any
    arguments (``Bash(git diff *)``) or its directory (``Edit(./src/**)``)."""
    state = call.state
    name = call.name
    kind = call.kind
    found: list[str] = []
    if kind is None:
        found = [name]
    elif kind.kind == "shell":
        words = _single_command(call)
        if words is not None:
            found.append(f"{name}({specifier_text(words)})")
            parsed = read_command(call.command() or "")
            if len(words) >= 3 and not parsed.subcommands[0].wrappers:
                found.append(f"{name}({specifier_text(words[:2])} *)")
    elif kind.kind == "path":
        for path in call.paths() or ():
            relative = _relative(path, state.cwd)
            if _GLOB.search(relative):
                continue  # as rule text it would be a wildcard: only a one-off yes says "this file"
            found.append(f"{name}({relative})")
            directory = posixpath.dirname(relative) if relative.startswith("./") else None
            if directory:
                found.append(f"{name}({directory}/**)")
    else:
        host = _host(call.url())
        if host is not None and not _GLOB.search(host):
            found.append(f"{name}(domain:{host})")
    return [text for text in dict.fromkeys(found) if _allows(text, call)]


def _allows(rule: str, call: LayeredCall) -> bool:
    """Whether a suggested rule text reads, and allows the call it was made for (else it is not offered)."""
    state = call.state
    try:
        parsed = parse_rule_text(rule, "allow", kinds=state.kinds, cwd=state.cwd, home=state.home)
    except (RuleTextError, TypeError):
        return False
    pattern = parsed.argument_pattern
    return parsed.tool_pattern == call.name and (pattern is None or pattern.matches(call.arguments, "allow"))


def _relative(path: str, cwd: str) -> str:
    working = cwd.rstrip("/") + "/"
    return "./" + path[len(working) :] if path.startswith(working) else "/" + path
