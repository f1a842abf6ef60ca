"""The specifier patterns as one family: their union type and their snapshot decoding."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from ask_permissions._strict import child, fail

from ._command import CommandPattern
from ._domains import DomainPattern
from ._paths import PathPattern

__all__ = ["SPECIFIER_TYPES", "SpecifierPattern", "decode_specifier"]

SpecifierPattern: TypeAlias = CommandPattern | PathPattern | DomainPattern
"""An argument pattern read from a rule's specifier: a shell command, a path or a URL host."""

SPECIFIER_TYPES: Final[Mapping[str, Callable[[Mapping[str, Any], str], SpecifierPattern]]] = {
    "command": CommandPattern.from_snapshot,
    "path": PathPattern.from_snapshot,
    "domain": DomainPattern.from_snapshot,
}
"""The snapshot reader of each specifier pattern, by its snapshot ``type``."""


def decode_specifier(data: object, path: str) -> SpecifierPattern:
    """A specifier pattern from its snapshot form; strict.

    Raises:
        InvalidSnapshotError: not an object, an unknown ``type``, or what the pattern's own reader refuses.
    """
    if not isinstance(data, Mapping):
        fail(path, "a pattern object", data)
    kind = data.get("type")
    reader = SPECIFIER_TYPES.get(kind) if isinstance(kind, str) else None
    if reader is None:
        fail(child(path, "type"), "one of " + ", ".join(repr(name) for name in SPECIFIER_TYPES), kind)
    return reader(data, path)
