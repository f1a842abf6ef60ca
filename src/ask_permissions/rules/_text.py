"""Rule text: ``Tool``, ``Tool(*)``, ``mcp__server``, ``mcp__server__tool`` and ``Tool(specifier)``.

A rule text names a tool and, optionally, a specifier that restricts the calls it covers. How a specifier
is read depends on the tool's kind — ``shell`` (a command), ``path`` (a file path) or ``url`` (a URL's
host) — which comes from the host's ``kinds`` mapping, else from the built-in kinds of the tool names
coding agents use, else from the specifier's own shape (``domain:…`` is a URL host, an anchored path is a
path). A specifier on a tool of no known kind is an error, never a guess.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, final, get_args

from ask_permissions._errors import PermissionsError, preview
from ask_permissions._vocabulary import DECISIONS, Decision

from ._command import CommandPattern
from ._domains import PREFIX as DOMAIN_PREFIX
from ._domains import DomainPattern
from ._paths import PathPattern
from ._specifiers import SpecifierPattern

__all__ = [
    "BUILTIN_KINDS",
    "Kind",
    "RuleText",
    "RuleTextError",
    "ToolKind",
    "parse_rule_text",
    "read_kinds",
    "rule_tool_pattern",
]

Kind: TypeAlias = Literal["shell", "path", "url"]
"""How a tool's specifier is read: ``"shell"`` a command line, ``"path"`` a file path, ``"url"`` a host."""

_KINDS: Final = get_args(Kind)


@final
@dataclass(frozen=True, slots=True)
class ToolKind:
    """A tool's kind and the argument its specifiers read (``None``: the kind's default arguments)."""

    kind: Kind
    key: str | None = None

    @property
    def text(self) -> str:
        """The kind as a ``kinds`` mapping writes it: ``"shell"``, or ``"shell:script"`` with a key."""
        return self.kind if self.key is None else f"{self.kind}:{self.key}"


BUILTIN_KINDS: Final[Mapping[str, ToolKind]] = MappingProxyType(
    {
        **dict.fromkeys(("bash", "sh", "Bash"), ToolKind("shell")),
        **dict.fromkeys(
            ("Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "read_file", "write_file", "edit_file"),
            ToolKind("path"),
        ),
        **dict.fromkeys(("WebFetch", "fetch"), ToolKind("url")),
    }
)
"""The kinds of the tool names coding agents use, for tools that ``kinds`` does not mention."""


class RuleTextError(PermissionsError, ValueError):
    """A rule text could not be read.

    Attributes:
        text: the rule text.
        problem: what is wrong with it.
        where: the list and position it came from (``"deny[1]"``) when read from lists, else ``None``.
    """

    def __init__(self, text: str, problem: str) -> None:
        super().__init__(f"rule {preview(text)}: {problem}")
        self.text = text
        self.problem = problem
        self.where: str | None = None


@final
@dataclass(frozen=True, slots=True)
class RuleText:
    """A rule text read into the patterns of a rule.

    Attributes:
        text: the rule text as written, for display.
        tool_pattern: the exact tool name, or for ``mcp__server`` forms a compiled ``^mcp__server__`` prefix.
        argument_pattern: the specifier's pattern, or ``None`` for every call of the tool.
    """

    text: str
    tool_pattern: str | re.Pattern[str]
    argument_pattern: SpecifierPattern | None


_KIND_TEXT: Final = re.compile(r"(shell|path|url)(?::(.+))?", re.DOTALL)
# Claude Code's `Tool(param:value)` form: an argument name, a colon, a value (`Bash(run_in_background:true)`).
# `NAME:*` stays the prefix form of a command specifier (`Bash(ls:*)`), and `domain:` a URL specifier.
_PARAMETER_FORM: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(\S.*)", re.DOTALL)
_PARAMETER_REFUSED: Final = (
    "the Tool(parameter:value) form (a specifier over the argument {name!r}) is not supported: how Claude "
    "Code matches it is not documented, and read as a {tool} specifier it would silently match nothing; "
    "match the argument in a hook or a check function instead"
)
_ANCHORED_PATH: Final = re.compile(r"//|~/|/|\./|\.\./")
_BAD_NAME_CHARACTER: Final = re.compile(r"[\s()\x00-\x1f\x7f]")


def read_kinds(kinds: Mapping[str, str] | None) -> dict[str, ToolKind]:
    """A host's ``kinds`` mapping, checked: tool names to ``shell``, ``path`` or ``url``, maybe with ``:key``.

    Raises:
        TypeError: not a mapping, or a name or kind that is not a string.
        ValueError: an empty name, or a kind that is none of those.
    """
    if kinds is None:
        return {}
    if not isinstance(kinds, Mapping):
        raise TypeError(f"kinds: expected a mapping of tool names to kinds; got {preview(kinds)}")
    table: dict[str, ToolKind] = {}
    entries: list[tuple[object, object]] = list(kinds.items())  # a host may pass anything
    for name, value in entries:
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                f"kinds: expected string tool names and kinds; got {preview(name)}: {preview(value)}"
            )
        if not name:
            raise ValueError("kinds: expected non-empty tool names; got ''")
        match = _KIND_TEXT.fullmatch(value)
        if match is None:
            raise ValueError(
                f"kinds[{preview(name)}]: expected 'shell', 'path' or 'url', optionally with "
                f"':<argument key>' (as in 'shell:script'); got {preview(value)}"
            )
        kind = match.group(1)
        assert kind in _KINDS
        table[str.__str__(name)] = ToolKind(kind, match.group(2))  # type: ignore[arg-type]
    return table


def rule_tool_pattern(text: str, decision: Decision) -> str | re.Pattern[str] | None:
    """The tool pattern of a rule text, without reading its specifier (which may need the tool's kind);
    ``None`` when the text's tool name cannot be read (``parse_rule_text`` then says why)."""
    if text != text.strip():
        return None
    name = text.partition("(")[0]
    try:
        return _tool_pattern(text, name, decision)
    except RuleTextError:
        return None


def _tool_pattern(text: str, name: str, decision: Decision) -> str | re.Pattern[str]:
    """The tool pattern of a rule's tool name: an exact name, or an MCP server's name prefix."""
    if not name:
        raise RuleTextError(text, "no tool name")
    if _BAD_NAME_CHARACTER.search(name):
        problem = "a tool name holds no whitespace, control characters or parentheses"
        tool, colon, specifier = name.partition(":")
        if colon and tool and specifier and not _BAD_NAME_CHARACTER.search(tool):
            # "Bash:rm -rf *": the specifier goes in parentheses, not after a colon.
            problem += f"; did you mean {tool}({specifier.strip()})?"
        raise RuleTextError(text, problem)
    if not name.startswith("mcp__"):
        if "*" in name:
            raise RuleTextError(text, "a '*' in a tool name is only allowed at the end of an mcp__ name")
        return name
    rest = name.removeprefix("mcp__")
    if "*" in name:
        if name.count("*") > 1 or not name.endswith("*"):
            raise RuleTextError(text, "a '*' is only allowed at the end of an mcp__ name")
        server, separator, _ = rest[:-1].partition("__")
        if decision == "allow" and (not server or not separator):
            raise RuleTextError(
                text,
                "an allow needs the literal mcp__<server>__ prefix (mcp__github or mcp__github__*); "
                "a wildcard server is for deny and ask rules only",
            )
        return re.compile("^" + re.escape(name[:-1]))
    server, separator, tool = rest.partition("__")
    if not server:
        raise RuleTextError(text, "no server name after mcp__")
    if not separator:
        return re.compile("^" + re.escape(name + "__"))  # every tool of the server
    if not tool:
        raise RuleTextError(
            text, f"no tool name after mcp__{server}__; write mcp__{server} for all its tools"
        )
    return name


def _specifier_pattern(
    text: str,
    tool: str,
    specifier: str,
    *,
    kinds: Mapping[str, ToolKind],
    cwd: str | None,
    home: str | None,
) -> SpecifierPattern:
    declared = kinds.get(tool) or BUILTIN_KINDS.get(tool)
    parameter = _PARAMETER_FORM.fullmatch(specifier)
    if parameter is not None and not specifier.startswith(DOMAIN_PREFIX) and parameter.group(2) != "*":
        raise RuleTextError(text, _PARAMETER_REFUSED.format(name=parameter.group(1), tool=tool))
    try:
        if specifier.startswith(DOMAIN_PREFIX):
            if declared is not None and declared.kind != "url":
                raise RuleTextError(text, f"a domain: specifier on {tool!r}, which is a {declared.kind} tool")
            return DomainPattern(specifier, key=None if declared is None else declared.key)
        if declared is None:
            if _ANCHORED_PATH.match(specifier) or specifier == "~":
                declared = ToolKind("path")
            else:
                # A misspelt tool has no kind either: name the tool it was likely meant to be first.
                near = difflib.get_close_matches(tool, [*kinds, *BUILTIN_KINDS], n=1, cutoff=0.6)
                meant = f"did you mean {near[0]!r}? Otherwise " if near else ""
                raise RuleTextError(
                    text,
                    f"the tool {tool!r} has no known kind, so its specifier cannot be read; {meant}declare "
                    f"one: kinds={{{tool!r}: 'shell'}} (or 'path' or 'url', with an argument key as in "
                    f"'shell:script'), or permission_kind = \"shell\" under [tools.{tool}] in a policy file",
                )
        if declared.kind == "shell":
            return CommandPattern(specifier, key=declared.key)
        if declared.kind == "url":
            raise RuleTextError(text, f"{tool!r} is a url tool: its specifier is domain:<host>")
        directories = {name: value for name, value in (("root", cwd), ("home", home)) if value is not None}
        return PathPattern(specifier, key=declared.key, **directories)
    except RuleTextError:
        raise
    except ValueError as error:
        raise RuleTextError(text, str(error)) from None


def parse_rule_text(
    text: str,
    decision: Decision,
    *,
    kinds: Mapping[str, ToolKind] | None = None,
    cwd: str | None = None,
    home: str | None = None,
) -> RuleText:
    """Read one rule text for a rule of ``decision``.

    Args:
        text: ``Tool``, ``Tool(*)``, ``mcp__server``, ``mcp__server__*``, ``mcp__server__tool`` or
            ``Tool(specifier)``.
        decision: the rule's decision (a wildcard MCP server is refused in an allow).
        kinds: the host's tool kinds, as ``read_kinds`` returns them; the built-in kinds fill the rest.
        cwd: the root of path specifiers (default: the working directory, read by ``PathPattern``).
        home: the directory ``~/`` names (default: the user's home).

    Raises:
        RuleTextError: a ``ValueError`` naming the text and what is wrong with it.
        TypeError: the text is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"rule text: expected a string; got {preview(text)}")
    text = str.__str__(text)
    if decision not in DECISIONS:
        raise ValueError(f"decision: expected one of allow, ask, deny; got {preview(decision)}")
    if text != text.strip():
        raise RuleTextError(text, "whitespace around the rule")
    open_at = text.find("(")
    if open_at < 0:
        if ")" in text:
            raise RuleTextError(text, "a ')' without a '('")
        return RuleText(text, _tool_pattern(text, text, decision), None)
    if not text.endswith(")"):
        raise RuleTextError(text, "a '(' without a closing ')' at the end")
    name, specifier = text[:open_at], text[open_at + 1 : -1]
    tool_pattern = _tool_pattern(text, name, decision)
    if specifier == "*":
        return RuleText(text, tool_pattern, None)
    if not specifier.strip():
        raise RuleTextError(text, f"an empty specifier; write {name} for every call of the tool")
    if specifier != specifier.strip():
        raise RuleTextError(text, "whitespace around the specifier")
    if not isinstance(tool_pattern, str):
        raise RuleTextError(text, "a specifier needs a single tool, not every tool of an MCP server")
    return RuleText(
        text, tool_pattern, _specifier_pattern(text, name, specifier, kinds=kinds or {}, cwd=cwd, home=home)
    )
