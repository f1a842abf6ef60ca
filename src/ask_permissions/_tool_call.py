"""ToolCall, and reading any tool-call-like object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._names import require_tool_name

__all__ = ["ToolCall", "read_tool_call"]


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
