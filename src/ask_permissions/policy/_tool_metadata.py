"""Reading tool metadata from a host's tool registry, once per call."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from ask_permissions._names import fold_tool_name

__all__ = ["NO_METADATA", "RISK_LEVELS", "SIDE_EFFECT_SCOPES", "ToolMetadata", "ToolRegistry"]

SIDE_EFFECT_SCOPES: Final = frozenset(
    {"none", "session", "workspace", "project", "system", "external", "unknown"}
)
RISK_LEVELS: Final = ("low", "medium", "high", "critical")
"""The ``risk_level`` values a tool may declare (a policy file checks them; ``high`` and ``critical`` are
elevated)."""
ELEVATED_RISK_LEVELS: Final = frozenset(RISK_LEVELS[2:])


@final
@dataclass(frozen=True, slots=True)
class ToolMetadata:
    """What a tool declares about itself; anything undeclared is absent (false, no risk, scope unknown).

    Read fail-closed: ``approval_required``, ``always_ask`` and ``destructive`` count when truthy, while
    ``auto_approvable`` and ``read_only`` (seed 002's ``isReadOnly``), which relax, count only when they are
    ``True`` itself. ``check_permissions`` is the tool's own check (a layered policy consults it); the last
    three are read only by the layered policy's registry.
    """

    approval_required: bool = False
    auto_approvable: bool = False
    always_ask: bool = False
    risk_level: str | None = None
    side_effect_scope: str = "unknown"
    read_only: bool = False
    destructive: bool = False
    check_permissions: Callable[..., object] | None = None

    @property
    def is_elevated_risk(self) -> bool:
        """Whether the risk level is ``"high"`` or ``"critical"``."""
        return self.risk_level in ELEVATED_RISK_LEVELS

    @property
    def has_side_effects(self) -> bool:
        """Whether the side-effect scope is anything but ``"none"`` (undeclared counts as unknown)."""
        return self.side_effect_scope != "none"


NO_METADATA: Final = ToolMetadata()

# The declarations, in the order they are read (a zero-argument method is called when read).
_KEYS: Final = ("side_effect_scope", "approval_required", "auto_approvable", "always_ask", "risk_level")


def _as_text(value: object) -> str | None:
    value = getattr(value, "value", value)  # an enum declares its string through .value
    return value if isinstance(value, str) else None


def read_metadata(tool: object, *, layered: bool = False) -> ToolMetadata:
    """The metadata a registry entry declares, as attributes, zero-argument methods or mapping keys.

    ``layered`` also reads ``read_only``, ``destructive`` and ``check_permissions`` (a method taking the
    call's arguments and context, kept, not called).
    """
    if tool is None:
        return NO_METADATA
    # One Mapping check per entry, not per key: it is an ABC check, and this runs on every tool call.
    mapping = isinstance(tool, Mapping)
    values = []
    for key in _KEYS:
        value = tool.get(key) if mapping else getattr(tool, key, None)  # type: ignore[attr-defined]  # a Mapping
        values.append(value() if callable(value) else value)
    scope, approval_required, auto_approvable, always_ask, risk_level = values
    scope = _as_text(scope)
    metadata = ToolMetadata(
        approval_required=bool(approval_required),
        auto_approvable=auto_approvable is True,
        always_ask=bool(always_ask),
        risk_level=_as_text(risk_level),
        side_effect_scope=scope if scope in SIDE_EFFECT_SCOPES else "unknown",
    )
    if not layered:
        return metadata
    extra = []
    for key in ("read_only", "destructive"):
        value = tool.get(key) if mapping else getattr(tool, key, None)  # type: ignore[attr-defined]  # a Mapping
        extra.append(value() if callable(value) else value)
    check = tool.get("check_permissions") if mapping else getattr(tool, "check_permissions", None)  # type: ignore[attr-defined]  # a Mapping
    return dataclasses.replace(
        metadata,
        read_only=extra[0] is True,
        destructive=bool(extra[1]),
        check_permissions=check if callable(check) else None,
    )


@final
class ToolRegistry:
    """Looks tools up by name in what the host passed as ``tools=``.

    A mapping and any object indexable with ``[]`` are looked up live, on every call; a sequence of objects
    with a ``name`` is indexed once, when the policy is built (the first tool of a name wins).

    A call whose name is not registered but folds to a registered name (``Deploy``, ``deploy\u200b`` for
    ``deploy``) gets that tool's declarations that add a prompt (``approval_required``, ``always_ask``, an
    elevated ``risk_level``, ``destructive``), never those that relax one (``auto_approvable``,
    ``read_only``, a ``side_effect_scope`` of ``"none"``): a host that runs ``Deploy`` as ``deploy`` must
    not see it prompt less.
    Other indexables cannot list their names, so they are looked up exactly.
    """

    __slots__ = ("_folded", "_index", "_layered", "_source")

    def __init__(self, tools: object, *, layered: bool = False) -> None:
        self._source = tools
        self._layered = layered
        self._index: Mapping[str, object] | None = None
        self._folded: Mapping[str, tuple[object, ...]] | None = None
        if tools is None:
            self._index = {}
            self._folded = {}
        elif isinstance(tools, Sequence) and not isinstance(tools, str | bytes):
            index: dict[str, object] = {}
            for tool in tools:
                name = getattr(tool, "name", None)
                if not isinstance(name, str):
                    raise TypeError(f"tools: expected objects with a string name; got {tool!r}")
                index.setdefault(name, tool)
            self._index = index
            self._folded = _by_folded_name(index.items())
        elif isinstance(tools, str | bytes) or (
            not isinstance(tools, Mapping) and not hasattr(tools, "__getitem__")
        ):
            # A string is indexable, but only by position: every lookup by name would raise.
            raise TypeError(
                f"tools: expected a mapping, a sequence of named tools or an indexable; got {tools!r}"
            )

    def lookup(self, name: str) -> ToolMetadata:
        """The metadata of the tool called ``name`` (``NO_METADATA`` when there is no such tool)."""
        source: Any = self._source
        if self._index is not None:
            tool = self._index.get(name)
        elif isinstance(source, Mapping):
            tool = source.get(name)
        else:
            try:
                tool = source[name]
            except LookupError:
                tool = None
        if tool is not None:
            return read_metadata(tool, layered=self._layered)
        return self._folded_prompts(name)

    def _folded_prompts(self, name: str) -> ToolMetadata:
        """The prompting declarations of the registered tools whose names fold like ``name``."""
        folded = fold_tool_name(name)
        if self._folded is not None:
            candidates: Iterable[object] = self._folded.get(folded, ())
        elif isinstance(self._source, Mapping):
            # Live mappings may change between calls, so they are scanned, and only for unknown names.
            candidates = (
                tool
                for key, tool in self._source.items()
                if isinstance(key, str) and fold_tool_name(key) == folded
            )
        else:
            return NO_METADATA
        found = [read_metadata(tool, layered=self._layered) for tool in candidates if tool is not None]
        if not found:
            return NO_METADATA
        elevated = [meta.risk_level for meta in found if meta.is_elevated_risk]
        return dataclasses.replace(
            NO_METADATA,
            approval_required=any(meta.approval_required for meta in found),
            always_ask=any(meta.always_ask for meta in found),
            risk_level="critical" if "critical" in elevated else (elevated[0] if elevated else None),
            destructive=any(meta.destructive for meta in found),
        )


def _by_folded_name(entries: Iterable[tuple[str, object]]) -> Mapping[str, tuple[object, ...]]:
    grouped: dict[str, list[object]] = {}
    for name, tool in entries:
        grouped.setdefault(fold_tool_name(name), []).append(tool)
    return {folded: tuple(tools) for folded, tools in grouped.items()}
