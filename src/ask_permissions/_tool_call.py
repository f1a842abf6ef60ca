"""ToolCall, and reading any tool-call-like object."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ToolCall", "read_tool_call", "require_tool_name", "require_tool_names"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call: the tool's name, its arguments and the call's id.

    Any object with ``name``, ``arguments`` and ``id`` attributes, or a mapping with those keys, can be
    passed where a tool call is expected; this class is only a convenience.
    """

    name: str
    arguments: Any = None
    id: Any = None


def read_tool_call(tool_call: object) -> tuple[str, Any, Any]:
    """Return ``(name, arguments, id)`` of a tool-call-like object or mapping.

    Raises:
        TypeError: the name is not a string, or the object has no name.
        ValueError: the name is empty.
    """
    if isinstance(tool_call, Mapping):
        if "name" not in tool_call:
            raise TypeError(f"tool_call: expected a 'name' key; got {tool_call!r}")
        name, arguments, call_id = tool_call["name"], tool_call.get("arguments"), tool_call.get("id")
    else:
        try:
            name = tool_call.name  # type: ignore[attr-defined]
        except AttributeError:
            raise TypeError(
                f"tool_call: expected an object with name, arguments and id; got {tool_call!r}"
            ) from None
        arguments = getattr(tool_call, "arguments", None)
        call_id = getattr(tool_call, "id", None)
    return require_tool_name(name, "tool_call.name"), arguments, call_id


def require_tool_name(name: object, field: str = "tool_name") -> str:
    """Return ``name`` as a plain ``str``, refusing anything that is not a non-empty string."""
    if not isinstance(name, str):
        raise TypeError(f"{field}: expected a non-empty string; got {name!r}")
    if not name:
        raise ValueError(f"{field}: expected a non-empty string; got {name!r}")
    # A str subclass becomes its plain text. Not str(name): a str-mixin Enum member's str() is
    # "Tools.BASH", which no rule, grant or gate entry for "bash" would match.
    return str.__str__(name)


def require_tool_names(names: Iterable[str], field: str) -> tuple[str, ...]:
    """The names of an iterable of tool names, in order, each checked by ``require_tool_name``.

    Raises:
        TypeError: ``names`` is a bare string (iterating it would yield single letters: ``"bash"`` would
            name ``"b"``, ``"a"``, ``"s"`` and ``"h"``), is not iterable, or holds a non-string.
        ValueError: a name is empty.
    """
    if isinstance(names, str):
        raise TypeError(f"{field}: expected an iterable of tool names, not a string; got {names!r}")
    try:
        iterator = iter(names)
    except TypeError:
        raise TypeError(f"{field}: expected an iterable of tool names; got {names!r}") from None
    return tuple(require_tool_name(name, f"{field}[{index}]") for index, name in enumerate(iterator))
