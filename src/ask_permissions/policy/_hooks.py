"""PreToolUse hooks (seed 002, section 5): commands or functions that see a call before the rules do.

A hook answers like a check (allow, deny, ask, or allow with replaced arguments) or passes. Its deny blocks at
once; its allow, ask or rewrite is provisional — deny rules, ask rules and safety checks still apply — so a
hook can never lift them. This module holds the contract the policies' ``hook`` layer calls; command hooks
(run without a shell, fail closed) and the settings/policy-file format live beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Protocol, TypeAlias, final, runtime_checkable

from ask_permissions._errors import preview
from ask_permissions._tool_call import ToolCall

from ._checks import Check, PermissionCheck, run_checks
from ._engine import Opinion

__all__ = ["HookFunction", "Hooks", "PreToolUseHook", "read_hooks"]

HookFunction: TypeAlias = "Callable[[ToolCall], PermissionCheck | None]"
"""A hook written in Python: a function of the call answering a ``PermissionCheck`` or ``None`` (pass)."""


@runtime_checkable
class PreToolUseHook(Protocol):
    """Anything the hook layer can run: a command hook, or a host's own object.

    ``matches`` says whether the hook applies to a tool; ``run`` answers for one call (``cwd`` and ``mode``
    are what a command hook tells its process).
    """

    @property
    def hook_id(self) -> str:
        """What records name the hook by (its command, or the function's name)."""
        ...

    def matches(self, tool_name: str) -> bool: ...

    def run(self, call: ToolCall, *, cwd: str, mode: str | None) -> PermissionCheck | None: ...


@final
@dataclass(frozen=True, slots=True)
class _FunctionHook:
    """A Python function as a hook for every tool."""

    function: HookFunction
    hook_id: str

    def matches(self, tool_name: str) -> bool:
        return True

    def run(self, call: ToolCall, *, cwd: str, mode: str | None) -> PermissionCheck | None:
        answer = self.function(call)
        if answer is not None and not isinstance(answer, PermissionCheck):
            raise TypeError(
                f"hook {self.hook_id!r}: expected a PermissionCheck or None; got {preview(answer)}"
            )
        return answer


@final
class Hooks:
    """The PreToolUse hooks of a policy, in order.

    Every hook whose matcher applies runs; their answers combine as checks do (deny beats ask beats modify
    beats allow; first block wins), and a rewrite's arguments are what the following hooks see.
    """

    __slots__ = ("_hooks",)

    def __init__(self, hooks: Iterable[PreToolUseHook]) -> None:
        self._hooks: Final = tuple(hooks)

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def __len__(self) -> int:
        return len(self._hooks)

    def __repr__(self) -> str:
        return f"<Hooks {[hook.hook_id for hook in self._hooks]!r}>"

    def decide(self, call: ToolCall, *, cwd: str, mode: str | None) -> Opinion | None:
        """The hooks' combined answer for the call (``None`` when none applies or all pass)."""
        applicable = [hook for hook in self._hooks if hook.matches(call.name)]
        if not applicable:
            return None
        checks = [Check(_bound(hook, cwd, mode), hook.hook_id) for hook in applicable]
        return run_checks(checks, call)


def _bound(hook: PreToolUseHook, cwd: str, mode: str | None) -> Callable[[ToolCall], PermissionCheck | None]:
    return lambda call: hook.run(call, cwd=cwd, mode=mode)


def read_hooks(hooks: object) -> Hooks:
    """A policy's ``hooks=``: ``Hooks``, or a list of hook objects and plain functions.

    Raises:
        TypeError: anything else.
    """
    if hooks is None:
        return Hooks(())
    if isinstance(hooks, Hooks):
        return hooks
    if isinstance(hooks, str | bytes) or not isinstance(hooks, Iterable):
        raise TypeError(f"hooks: expected a list of hooks; got {preview(hooks)}")
    read: list[PreToolUseHook] = []
    for position, entry in enumerate(hooks):
        if isinstance(entry, PreToolUseHook):
            read.append(entry)
        elif callable(entry):
            read.append(_FunctionHook(entry, getattr(entry, "__name__", "hook")))
        else:
            raise TypeError(f"hooks[{position}]: expected a hook or a function; got {preview(entry)}")
    return Hooks(read)
