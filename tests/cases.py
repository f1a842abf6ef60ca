"""Case tables shared by several test modules, for rules that several public entry points share."""

from __future__ import annotations

import re

import pytest

__all__ = ["bad_tool_name_lists"]


def bad_tool_name_lists(field: str) -> list[object]:
    """``(value, error type, full message pattern)`` cases for an argument that takes a list of tool names.

    ``Permissions(blocked_tools=)``, ``PlanModePolicy(allowed_tools=)`` and ``SessionPermissionGrants()`` all
    read their names the same way, so each is held to the same cases, its own field named in the message.
    """
    name = re.escape(field)
    entry = "expected a non-empty string; got"
    return [
        pytest.param(
            "bash",
            TypeError,
            rf"^{name}: expected an iterable of tool names, not a string; got 'bash'$",
            id="bare-string",
        ),
        pytest.param(
            3, TypeError, rf"^{name}: expected an iterable of tool names; got 3$", id="not-iterable"
        ),
        pytest.param(["bash", ""], ValueError, rf"^{name}\[1\]: {entry} ''$", id="empty-name"),
        pytest.param([None], TypeError, rf"^{name}\[0\]: {entry} None$", id="none-name"),
    ]
