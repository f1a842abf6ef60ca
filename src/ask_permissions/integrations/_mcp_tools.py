"""The upstream's tools as the MCP proxy knows them: each definition pinned when first listed, and changes.

A tool's definition is what the model and the person were shown of it when rules, grants and answers were
given: its title, description, input and output schemas and annotations. The proxy pins a digest of it
when the tool is first listed; a later listing with another digest marks the tool changed for the rest of
the proxy's life (a server that changes a tool back does not undo what the model read in between).

Annotations are the server's word about its own tool. They are read here as plain booleans, and only an
explicit ``true`` counts: the MCP specification says clients must treat them as untrusted unless they come
from a trusted server, so what they do is the proxy's decision (tighten always, relax only when trusted).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from ask_permissions._names import fold_tool_name
from ask_permissions.policy._tool_metadata import ToolRegistry
from ask_permissions.policy._tool_names import UnknownTool, policy_references, raise_unknown, unknown_tools
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules

__all__ = [
    "KEEP_HINT",
    "PINNED_FIELDS",
    "DeclaredTools",
    "HiddenTools",
    "KnownTool",
    "ToolDefinition",
    "ToolPins",
    "check_tool_names",
    "denies_whole_tool",
    "policy_tool_name",
    "read_definition",
]

PINNED_FIELDS: Final = ("title", "description", "inputSchema", "outputSchema", "annotations")
"""The fields of a listed tool (in its wire form) whose digest is pinned."""


@final
@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One listing of one tool: its name, the digest of its pinned fields, and its two safety hints.

    ``read_only`` and ``destructive`` are ``True`` only when the annotations say so explicitly
    (``readOnlyHint: true``, ``destructiveHint: true``).
    """

    name: str
    digest: str
    read_only: bool = False
    destructive: bool = False


def read_definition(wire: Mapping[str, Any]) -> ToolDefinition:
    """A tool as the upstream listed it (``Tool.model_dump(by_alias=True, mode="json")``), digested.

    The digest is SHA-256 over the canonical JSON of the pinned fields that are present.
    """
    pinned = {field: wire[field] for field in PINNED_FIELDS if wire.get(field) is not None}
    text = json.dumps(pinned, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    annotations = wire.get("annotations")
    hints: Mapping[str, Any] = annotations if isinstance(annotations, Mapping) else {}
    return ToolDefinition(
        name=str(wire.get("name", "")),
        digest=digest,
        read_only=hints.get("readOnlyHint") is True,
        destructive=hints.get("destructiveHint") is True,
    )


@final
@dataclass(frozen=True, slots=True)
class KnownTool:
    """A tool the upstream listed: its definition when first listed, as listed last, and whether it changed.

    ``changed`` stays ``True`` once any listing differed from the pinned definition.
    """

    pinned: ToolDefinition
    current: ToolDefinition
    changed: bool = False

    @property
    def digest(self) -> str:
        """The digest of the definition a call is made against (the last listed)."""
        return self.current.digest


@final
class ToolPins:
    """The tools the upstream listed, by name, each pinned at its first listing.

    Thread-safe: a private lock guards the table; readers get the frozen entries.
    """

    __slots__ = ("_lock", "_tools")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, KnownTool] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)

    def __repr__(self) -> str:
        with self._lock:
            changed = sum(tool.changed for tool in self._tools.values())
            return f"<ToolPins tools={len(self._tools)} changed={changed}>"

    def get(self, name: str) -> KnownTool | None:
        """The tool of this exact name, or ``None`` if the upstream never listed it."""
        with self._lock:
            return self._tools.get(name)

    def names(self) -> list[str]:
        """Every name the upstream listed, in the order first listed."""
        with self._lock:
            return list(self._tools)

    def see(self, definitions: Iterable[ToolDefinition]) -> list[KnownTool]:
        """Take in a listing: pin new tools, note changed ones; return the tools whose definition changed
        with this listing (each change once: a tool listed again as it was last listed is not reported)."""
        changes: list[KnownTool] = []
        with self._lock:
            for definition in definitions:
                known = self._tools.get(definition.name)
                if known is None:
                    self._tools[definition.name] = KnownTool(definition, definition)
                    continue
                if definition.digest == known.current.digest:
                    continue
                updated = KnownTool(known.pinned, definition, changed=True)
                self._tools[definition.name] = updated
                changes.append(updated)
        return changes


@final
class DeclaredTools:
    """What the policy's own tool registry (its ``tools``) declares of each tool, for the annotations.

    A server's ``readOnlyHint`` only stands in for what the policy does not know: a tool the policy
    declares with side effects (a ``side_effect_scope`` other than ``"none"``) keeps its mode's ask or
    block, and its default's ask, whatever a trusted server says. A policy without a public ``tools``
    registry (a layered policy) declares nothing here.

    Thread-safe as far as the registry is (it is read, never changed).
    """

    __slots__ = ("_registry",)

    def __init__(self, policy: object) -> None:
        try:
            self._registry: ToolRegistry | None = ToolRegistry(getattr(policy, "tools", None))
        except TypeError:  # a registry this reading cannot use: nothing the server says may relax a call
            self._registry = None

    def contradict_read_only(self, name: str) -> bool:
        """Whether the policy declares that the tool ``name`` has side effects (or cannot be read)."""
        if self._registry is None:
            return True
        return self._registry.lookup(name).side_effect_scope not in ("unknown", "none")


def policy_tool_name(tool: str, server_name: str | None = None) -> str:
    """The name the policy decides a tool call under: the upstream's, or ``mcp__<server>__<tool>``."""
    return tool if server_name is None else f"mcp__{server_name}__{tool}"


KEEP_HINT: Final = (
    'set unknown_tools = "keep" in the policy file to keep rules for tools the server does not list'
)
"""How a policy keeps rules for tools the upstream server does not list (yet), for the error."""


def check_tool_names(policy: object, listed: Sequence[str], *, server_name: str | None, where: str) -> None:
    """Refuse a policy whose rules name tools the upstream does not list, each with the nearest listed name.

    Without ``server_name`` every tool the policy names must be listed. With it, calls are decided as
    ``mcp__<server>__<tool>``: names of that form must be listed ones, a plain name of a listed tool is a
    mistake (no call is ever decided under it: ``did you mean 'mcp__<server>__<tool>'?``), and other names
    are left alone (one policy file may cover several servers and hosts). A policy whose ``unknown_tools``
    is ``"keep"`` is not checked.

    Raises:
        UnknownToolError: the first such name's field and value, every finding, and the listed names.
    """
    if getattr(policy, "unknown_tools", "error") == "keep":
        return
    references = policy_references(policy)
    known = [policy_tool_name(name, server_name) for name in listed]
    if server_name is None:
        found = unknown_tools(references, known)
    else:
        prefix = policy_tool_name("", server_name)
        plain = {name: policy_tool_name(name, server_name) for name in listed}
        folded = {fold_tool_name(name): prefixed for name, prefixed in plain.items()}
        found = []
        for reference in references:
            name = reference.name
            if name is None:
                continue  # a pattern may be meant for another server
            if name.startswith(prefix):
                found.extend(unknown_tools([reference], known))
                continue
            meant = plain.get(name) or (folded.get(fold_tool_name(name)) if reference.folds else None)
            if meant is not None:
                found.append(UnknownTool(reference, meant))
    raise_unknown(found, known, where=where, keep_hint=KEEP_HINT)


@final
class HiddenTools:
    """``denies_whole_tool`` for each listing, worked out once per tool while the rules stay as they are.

    Finding a tool's first rule reads every rule (as the rules do for a name they meet first), so a listing
    repeated by every client is answered from memory. Rules only ever grow, so their size tells whether an
    answer still holds.

    Thread-safe: a private lock guards the memory; the rules are read outside it.
    """

    __slots__ = ("_answers", "_lock")

    _MEMORY: Final = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, tuple[object, bool]] = {}

    def __call__(self, rules: object, name: str) -> bool:
        """Whether ``rules`` deny every call of ``name`` (see ``denies_whole_tool``)."""
        version = _version(rules)
        if version is None:
            return False
        with self._lock:
            known = self._answers.get(name)
        if known is not None and known[0] == version:
            return known[1]
        hidden = denies_whole_tool(rules, name)
        with self._lock:
            if len(self._answers) >= self._MEMORY:
                self._answers.pop(next(iter(self._answers)))
            self._answers[name] = (version, hidden)
        return hidden


def _version(rules: object) -> object:
    """What identifies a state of the rules (``None`` for a classifier that cannot hide a tool)."""
    if isinstance(rules, PermissionRuleSet):
        return (_version(rules.default_rules), _version(rules.project_rules))
    if isinstance(rules, PermissionRules):
        return (id(rules), len(rules))
    return None


def denies_whole_tool(rules: object, name: str) -> bool:
    """Whether the rules deny every call of ``name``, whatever its arguments.

    True when the first rule that names the tool is a deny without an argument pattern (rules are tried in
    order), in a ``PermissionRules`` or in either layer of a ``PermissionRuleSet`` (a deny in either layer
    wins). Any other classifier cannot say, so the answer is ``False``.
    """
    if isinstance(rules, PermissionRuleSet):
        return denies_whole_tool(rules.default_rules, name) or denies_whole_tool(rules.project_rules, name)
    if isinstance(rules, PermissionRules):
        for rule in rules.rules:
            if rule.tool_matches(name):
                return rule.effective_decision == "deny" and rule.is_universal
    return False
