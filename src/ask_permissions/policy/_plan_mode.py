"""PlanModePolicy: only read-only tools, and the exit tool, until the plan is approved."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, final

from ask_permissions._names import require_tool_name, require_tool_names
from ask_permissions._tool_call import read_tool_call

from ._results import BlockResult, ProceedResult, block, proceed

__all__ = ["PlanModePolicy"]


@final
class PlanModePolicy:
    """A ``before_tool_call`` hook for plan mode: the allowed tools and the exit tool proceed, nothing else.

    Immutable once built, so it is safe to share across threads.

    Args:
        allowed_tools: names of the tools that may run while planning (an iterable of strings).
        exit_tool: the tool that leaves plan mode; it always proceeds.
        reason: the block reason for every other tool.

    Raises:
        TypeError: ``allowed_tools`` is a bare string, or a name or the reason is not a string.
        ValueError: a name or the reason is empty.
    """

    DEFAULT_REASON: Final = "Plan mode: only read-only tools until the plan is approved"
    """The block reason used when none is given."""

    __slots__ = ("__weakref__", "_allowed", "_exit_tool", "_reason")

    def __init__(
        self,
        *,
        allowed_tools: Iterable[str],
        exit_tool: str = "exit_plan_mode",
        reason: str = DEFAULT_REASON,
    ) -> None:
        self._allowed: Final = frozenset(require_tool_names(allowed_tools, "allowed_tools"))
        self._exit_tool: Final = require_tool_name(exit_tool, "exit_tool")
        if not isinstance(reason, str):
            raise TypeError(f"reason: expected a non-empty string; got {reason!r}")
        if not reason:
            raise ValueError(f"reason: expected a non-empty string; got {reason!r}")
        self._reason: Final = str.__str__(reason)

    @property
    def allowed_tools(self) -> frozenset[str]:
        """The tools that may run while planning (the exit tool is not included unless listed)."""
        return self._allowed

    @property
    def exit_tool(self) -> str:
        """The tool that leaves plan mode; it always proceeds."""
        return self._exit_tool

    @property
    def reason(self) -> str:
        """The reason every other tool call is blocked with."""
        return self._reason

    def before_tool_call(self, tool_call: object, context: object = None) -> ProceedResult | BlockResult:
        """Proceed for an allowed tool or the exit tool; block anything else with :attr:`reason`.

        Args:
            tool_call: an object with ``name``, ``arguments`` and ``id``, or a mapping with those keys.
            context: ignored; accepted so the policy fits any ``before_tool_call`` hook.

        Raises:
            TypeError: the tool call has no string name.
            ValueError: the tool name is empty.
        """
        name, _, _ = read_tool_call(tool_call)
        if name in self._allowed or name == self._exit_tool:
            return proceed()
        return block(self._reason)

    def __repr__(self) -> str:
        return f"<PlanModePolicy allowed_tools={sorted(self._allowed)!r} exit_tool={self._exit_tool!r}>"
