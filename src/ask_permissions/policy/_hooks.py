"""PreToolUse hooks (seed 002, section 5): commands or functions that see a call before the rules do.

A hook answers like a check (allow, deny, ask, or allow with replaced arguments) or passes. Its deny blocks at
once; its allow, ask or rewrite is provisional — deny rules, ask rules and safety checks still apply — so a
hook can never lift them. This module holds the contract the policies' ``hook`` layer calls, and the
configuration format settings sources and policy files share (``Hooks.from_config``); command hooks (run
without a shell, fail closed) live beside it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeAlias, TypeVar, final, runtime_checkable

from ask_permissions._errors import InvalidSnapshotError, preview
from ask_permissions._strict import child, fail, guard_reading, read_bool, read_list, read_mapping
from ask_permissions._tool_call import ToolCall
from ask_permissions.rules._text import ToolKind, read_kinds

from ._checks import Check, PermissionCheck, run_checks
from ._command_hooks import DEFAULT_HOOK_TIMEOUT, CommandHook, read_command, read_matcher, read_timeout
from ._table import CallFacts, Opinion

__all__ = ["HOOK_EVENTS", "HOOK_TYPES", "HookFunction", "Hooks", "PreToolUseHook", "hook_layer", "read_hooks"]

HOOK_EVENTS: Final = ("PreToolUse",)
"""The events a hooks configuration may list (seed 002's PostToolUse and others are not supported)."""

HOOK_TYPES: Final = ("command",)
"""The hook types a configuration may use (seed 002's prompt, agent and http are not supported)."""

_T = TypeVar("_T")


@runtime_checkable
class PreToolUseHook(Protocol):
    """Anything a policy's ``hooks=`` can run before the rules: a ``CommandHook``, or a host's own object.

    ``matches`` says whether the hook applies to a tool; ``run`` answers for one call (``cwd`` and ``mode``
    are the policy's, what a command hook tells its process). ``run`` must not raise for a hook that guards:
    a command hook turns every failure into a deny.
    """

    @property
    def hook_id(self) -> str:
        """What records (``rule_id``) name the hook by: its command, or the function's name."""
        ...

    def matches(self, tool_name: str) -> bool: ...

    def run(self, call: ToolCall, *, cwd: str, mode: str | None) -> PermissionCheck | None: ...


HookFunction: TypeAlias = "Callable[[ToolCall], PermissionCheck | None]"
"""A hook written in Python: a function of the call answering a ``PermissionCheck`` or ``None`` (pass)."""


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

    Immutable: its hooks may run for many calls from many threads at once (a host's own hook objects and
    functions must allow that too).
    """

    __slots__ = ("_hooks",)

    def __init__(self, hooks: Iterable[PreToolUseHook]) -> None:
        self._hooks: Final = tuple(hooks)

    @classmethod
    def from_config(
        cls,
        data: object,
        *,
        path: str = "hooks",
        base_dir: str | os.PathLike[str] | None = None,
        kinds: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
    ) -> Hooks:
        """The hooks of a configuration: ``{"PreToolUse": [{"matcher": ..., "hooks": [...]}]}``.

        Each group's ``matcher`` is a rule text (``"Bash"``, ``"Bash(git *)"``, ``"mcp__github"``), several
        joined by ``"|"``, or ``"*"`` (or empty, or left out) for every call; each of its ``hooks`` is
        ``{"type": "command", "command": "...", "timeout": seconds, "shell": false}`` (``timeout`` and
        ``shell`` optional), run in order. Read strictly, as snapshots are: ``null`` is a key left out.

        Args:
            data: the parsed configuration.
            path: where it sits in its file, for errors (``hooks.PreToolUse[0].hooks[1].timeout``).
            base_dir: the folder relative program paths are found in (a policy file's own folder).
            kinds: tool name → ``"shell"``, ``"path"`` or ``"url"``, for the matchers' specifiers.
            cwd: the folder the matchers' relative path specifiers are read from (as for rule text).
            home: the folder ``~/`` names in the matchers' path specifiers.

        Raises:
            InvalidSnapshotError: an unknown key, event or hook type, a bad matcher (a regex, or rule
                text that cannot be read), an empty or unsplittable command, or a timeout that is not a
                number of seconds in (0, 600]; the message and ``path`` name the field.
        """
        folder = None if base_dir is None else os.fspath(base_dir)
        matching = _Matching(
            dict(kinds or {}),
            read_kinds(kinds),
            None if cwd is None else os.fspath(cwd),
            None if home is None else os.fspath(home),
        )
        return guard_reading(lambda: cls(_read_config(data, path, folder, matching)), data, path)

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def __len__(self) -> int:
        return len(self._hooks)

    def __iter__(self) -> Iterator[PreToolUseHook]:
        return iter(self._hooks)

    def __repr__(self) -> str:
        return f"<Hooks {[hook.hook_id for hook in self._hooks]!r}>"

    def decide(self, call: ToolCall, *, cwd: str, mode: str | None) -> Opinion | None:
        """The hooks' combined answer for the call (``None`` when none applies or all pass)."""
        applicable = [hook for hook in self._hooks if hook.matches(call.name)]
        if not applicable:
            return None
        checks = [Check(_bound(hook, cwd, mode), hook.hook_id) for hook in applicable]
        return run_checks(checks, call)


class _HookState(Protocol):
    @property
    def hooks(self) -> Hooks: ...
    @property
    def cwd(self) -> str: ...
    @property
    def mode(self) -> str | None: ...


class _HookFacts(CallFacts, Protocol):
    @property
    def state(self) -> _HookState: ...


def hook_layer(call: _HookFacts) -> Opinion | None:
    """The layer both policies open with: PreToolUse hooks see the call first; a deny blocks, and anything
    else must still pass the guards after it (deny and ask rules, always_ask, read_only)."""
    state = call.state
    hooks = state.hooks
    if not hooks:
        return None
    return hooks.decide(ToolCall(call.name, call.arguments, call.call_id), cwd=state.cwd, mode=state.mode)


def _bound(hook: PreToolUseHook, cwd: str, mode: str | None) -> Callable[[ToolCall], PermissionCheck | None]:
    return lambda call: hook.run(call, cwd=cwd, mode=mode)


def read_hooks(hooks: object) -> Hooks:
    """A policy's ``hooks=``: ``Hooks``, or a list of hook objects (``CommandHook``) and plain functions.

    Raises:
        TypeError: anything else.
    """
    if hooks is None:
        return Hooks(())
    if isinstance(hooks, Hooks):
        return hooks
    if isinstance(hooks, Mapping):
        raise TypeError(
            f"hooks: expected a Hooks or a list of hooks; got a mapping {preview(hooks)} (read a "
            "configuration with Hooks.from_config)"
        )
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


@final
@dataclass(frozen=True, slots=True)
class _Matching:
    """How a configuration's matchers read their specifiers."""

    given_kinds: Mapping[str, str]
    kinds: Mapping[str, ToolKind]
    cwd: str | None
    home: str | None

    def read(self, value: object, path: str) -> str:
        """The matcher's text, once it has been read (and found good)."""
        return read_matcher(value, path, kinds=self.kinds, cwd=self.cwd, home=self.home).text


def _read_config(data: object, path: str, base_dir: str | None, matching: _Matching) -> list[PreToolUseHook]:
    config = read_mapping(data, path, optional=HOOK_EVENTS)
    events_path = child(path, "PreToolUse")
    groups = config.get("PreToolUse")
    hooks: list[PreToolUseHook] = []
    for position, group in enumerate([] if groups is None else read_list(groups, events_path)):
        group_path = child(events_path, position)
        entry = read_mapping(group, group_path, required=("hooks",), optional=("matcher",))
        matcher_path = child(group_path, "matcher")
        matcher = _field(matching.read, entry.get("matcher"), matcher_path)
        hooks_path = child(group_path, "hooks")
        for index, hook in enumerate(read_list(entry["hooks"], hooks_path)):
            hooks.append(_read_command_hook(hook, child(hooks_path, index), matcher, base_dir, matching))
    return hooks


def _read_command_hook(
    value: object, path: str, matcher: str, base_dir: str | None, matching: _Matching
) -> CommandHook:
    spec = read_mapping(value, path, required=("type", "command"), optional=("timeout", "shell"))
    kind = spec["type"]
    if not isinstance(kind, str) or str.__str__(kind) not in HOOK_TYPES:
        fail(child(path, "type"), "'command' (the only hook type supported)", kind)
    shell_value = spec.get("shell")
    shell = False if shell_value is None else read_bool(shell_value, child(path, "shell"))
    command_path = child(path, "command")
    command = spec["command"]
    if not isinstance(command, str):  # a list is for Python; a file writes the command as it would run it
        fail(command_path, "a command string", command)
    _field(lambda text, where: read_command(text, where, shell=shell), command, command_path)
    timeout_value = spec.get("timeout")
    timeout = (
        DEFAULT_HOOK_TIMEOUT
        if timeout_value is None
        else _field(read_timeout, timeout_value, child(path, "timeout"))
    )
    return CommandHook(
        command,
        matcher=matcher,
        timeout=timeout,
        shell=shell,
        base_dir=base_dir,
        kinds=matching.given_kinds,
        cwd=matching.cwd,
        home=matching.home,
    )


def _field(read: Callable[[object, str], _T], value: object, path: str) -> _T:
    """A value read by a hook reader, its ``TypeError`` or ``ValueError`` (already naming ``path``) as an
    ``InvalidSnapshotError``."""
    try:
        return read(value, path)
    except InvalidSnapshotError:
        raise
    except (TypeError, ValueError) as error:
        raise InvalidSnapshotError(str(error), path=path, value=value) from None
