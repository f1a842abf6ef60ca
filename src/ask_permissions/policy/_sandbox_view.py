"""What a sandbox reads of a layered policy: its folders, protected paths, and its path and domain rules.

A sandbox turns these into walls (``ask_permissions.sandbox``); the policy hands them over as plain data
read at one moment, so the sandbox never reaches into the policy's state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, final

from ask_permissions._vocabulary import Decision, SettingsSourceName
from ask_permissions.rules._domains import DomainPattern
from ask_permissions.rules._paths import PathPattern
from ask_permissions.rules._text import BUILTIN_KINDS, ToolKind

from ._layered_rules import LayeredRule
from ._safety import ProtectedPaths
from ._tool_metadata import ToolRegistry

__all__ = ["EDITING_TOOLS", "READING_TOOLS", "DomainRuleView", "PathRuleView", "SandboxView", "sandbox_view"]

READING_TOOLS: Final = frozenset({"Read", "read_file"})
"""The built-in path tools that only read: a deny of theirs hides a path, it does not make it read-only."""
EDITING_TOOLS: Final = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "edit_file"})
"""The built-in path tools that write: an allow of theirs names a folder the agent may edit."""


@final
@dataclass(frozen=True, slots=True)
class PathRuleView:
    """One rule with a path specifier (``Edit(./src/**)``), and what its tool does with the path.

    Attributes:
        decision: ``"allow"``, ``"ask"`` or ``"deny"``.
        pattern: the path specifier, read from the rule's source.
        text: the rule text as written.
        source: the settings source it comes from.
        reads: its tool only reads (``Read``, or a tool of the registry declaring ``read_only``).
        edits: its tool is one of the built-in editing tools (``EDITING_TOOLS``).
    """

    decision: Decision
    pattern: PathPattern
    text: str
    source: SettingsSourceName
    reads: bool
    edits: bool


@final
@dataclass(frozen=True, slots=True)
class DomainRuleView:
    """One rule of a URL tool (``WebFetch(domain:pypi.org)``): a host specifier, or the whole tool (``None``).

    Attributes:
        decision: ``"allow"``, ``"ask"`` or ``"deny"``.
        pattern: the domain specifier, or ``None`` for a rule naming the tool alone (every URL).
        text: the rule text as written.
        source: the settings source it comes from.
    """

    decision: Decision
    pattern: DomainPattern | None
    text: str
    source: SettingsSourceName


@final
@dataclass(frozen=True, slots=True)
class SandboxView:
    """What a sandbox reads of a ``LayeredPolicy`` (``policy.sandbox_view()``), at one moment.

    Attributes:
        cwd: the policy's working directory.
        home: the home directory its ``~`` rules name.
        directories: the working directories: ``cwd``, then the settings' additional directories.
        protected: the safety checks' protected paths.
        path_rules: the rules with a path specifier, deny first, then ask, then allow.
        domain_rules: the rules of URL tools (``WebFetch``), in the same order.
        settings_files: every settings file the policy reads or would read (the local file it writes too).
        version: the settings' version these were read at (it grows with every change of the settings).
    """

    cwd: str
    home: str
    directories: tuple[str, ...]
    protected: ProtectedPaths
    path_rules: tuple[PathRuleView, ...]
    domain_rules: tuple[DomainRuleView, ...]
    settings_files: tuple[str, ...]
    version: int


def sandbox_view(
    rules: Iterable[LayeredRule],
    *,
    kinds: Mapping[str, ToolKind],
    tools: ToolRegistry,
    cwd: str,
    home: str,
    directories: tuple[str, ...],
    protected: ProtectedPaths,
    settings_files: tuple[str, ...],
    version: int,
) -> SandboxView:
    """The view of a layered policy's state (its merged rules, kinds and tool registry)."""
    path_rules: list[PathRuleView] = []
    domain_rules: list[DomainRuleView] = []
    for rule in rules:
        tool = rule.parsed.tool_pattern
        if not isinstance(tool, str):
            continue  # an MCP server's tools: never a path or URL tool
        pattern = rule.parsed.argument_pattern
        if isinstance(pattern, PathPattern):
            reads = tool in READING_TOOLS or tools.lookup(tool).read_only
            path_rules.append(
                PathRuleView(rule.decision, pattern, rule.text, rule.source, reads, tool in EDITING_TOOLS)
            )
            continue
        kind = kinds.get(tool) or BUILTIN_KINDS.get(tool)
        is_url_tool = kind is not None and kind.kind == "url"
        if isinstance(pattern, DomainPattern) or (pattern is None and is_url_tool):
            domain_rules.append(DomainRuleView(rule.decision, pattern, rule.text, rule.source))
    return SandboxView(
        cwd=cwd,
        home=home,
        directories=directories,
        protected=protected,
        path_rules=tuple(path_rules),
        domain_rules=tuple(domain_rules),
        settings_files=settings_files,
        version=version,
    )
