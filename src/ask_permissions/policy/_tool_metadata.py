"""Reading tool metadata from a host's tool registry, once per call."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from ask_permissions._names import fold_tool_name

__all__ = ["NO_METADATA", "SIDE_EFFECT_SCOPES", "ToolMetadata", "ToolRegistry"]

SIDE_EFFECT_SCOPES: Final = frozenset(
    {"none", "session", "workspace", "project", "system", "external", "unknown"}
)
ELEVATED_RISK_LEVELS: Final = frozenset({"high", "critical"})


@final
@dataclass(frozen=True, slots=True)
class ToolMetadata:
    """What a tool declares about itself; anything undeclared is absent (false, no risk, scope unknown).

    Read fail-closed: ``approval_required`` and ``always_ask`` count when truthy, while
    ``auto_approvable`` counts only when it is ``True`` itself.
    """

    approval_required: bool = False
    auto_approvable: bool = False
    always_ask: bool = False
    risk_level: str | None = None
    side_effect_scope: str = "unknown"

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


def read_metadata(tool: object) -> ToolMetadata:
    """The metadata a registry entry declares, as attributes, zero-argument methods or mapping keys."""
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
    return ToolMetadata(
        approval_required=bool(approval_required),
        auto_approvable=auto_approvable is True,
        always_ask=bool(always_ask),
        risk_level=_as_text(risk_level),
        side_effect_scope=scope if scope in SIDE_EFFECT_SCOPES else "unknown",
    )


@final
class ToolRegistry:
    """Looks tools up by name in what the host passed as ``tools=``.

    A mapping and any object indexable with ``[]`` are looked up live, on every call; a sequence of objects
    with a ``name`` is indexed once, when the policy is built (the first tool of a name wins).

    A call whose name is not registered but folds to a registered name (``Deploy``, ``deploy\u200b`` for
    ``deploy``) is asked about when that tool declares ``always_ask``: folding only ever adds the prompt,
    never the other declarations (a host that runs ``Deploy`` as ``deploy`` must not see it prompt less).
    Other indexables cannot list their names, so they are looked up exactly.
    """

    __slots__ = ("_folded", "_index", "_source")

    def __init__(self, tools: object) -> None:
        self._source = tools
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
            return read_metadata(tool)
        if self._folded_always_asks(name):
            return _ALWAYS_ASK
        return NO_METADATA

    def _folded_always_asks(self, name: str) -> bool:
        """Whether a registered tool whose name folds like ``name`` declares ``always_ask``."""
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
            return False
        return any(tool is not None and read_metadata(tool).always_ask for tool in candidates)


_ALWAYS_ASK: Final = dataclasses.replace(NO_METADATA, always_ask=True)


def _by_folded_name(entries: Iterable[tuple[str, object]]) -> Mapping[str, tuple[object, ...]]:
    grouped: dict[str, list[object]] = {}
    for name, tool in entries:
        grouped.setdefault(fold_tool_name(name), []).append(tool)
    return {folded: tuple(tools) for folded, tools in grouped.items()}
