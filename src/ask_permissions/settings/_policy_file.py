"""Policy files: what an ApprovalPolicy needs, as JSON or TOML, read strictly."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeAlias, TypeVar

from ask_permissions._errors import InvalidSnapshotError
from ask_permissions._strict import child, fail, read_bool, read_list, read_mapping, read_str, read_version
from ask_permissions.policy._approval import MODES, ApprovalPolicy
from ask_permissions.policy._records import DecisionRecord
from ask_permissions.policy._tool_metadata import SIDE_EFFECT_SCOPES
from ask_permissions.queue._grants import SessionPermissionGrants
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.rules._patterns import ToolPattern, decode_pattern
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules
from ask_permissions.typing import Clock, GrantsLike, Mode

__all__ = ["PolicySource", "load_policy", "parse_policy_bytes"]

PolicySource: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"
"""A policy file's path (TOML when it ends in ``.toml``, JSON otherwise) or its already parsed data."""

_KEYS: Final = ("mode", "rules", "require_approval", "tools", "auto_approve", "session_grants")
_TOOL_FLAGS: Final = ("approval_required", "auto_approvable", "always_ask")
_TOOL_TEXTS: Final = ("risk_level", "side_effect_scope")

_T = TypeVar("_T")


def load_policy(
    source: PolicySource,
    *,
    queue: ApprovalQueue | None = None,
    project_grants: GrantsLike | None = None,
    on_decision: Callable[[DecisionRecord], object] | None = None,
    clock: Clock | None = None,
    interactive: bool = True,
) -> ApprovalPolicy:
    """Build an ``ApprovalPolicy`` from a policy file or its parsed data.

    The file holds ``version`` (1) and, each optional, ``mode``, ``rules`` (a ``PermissionRules`` or
    ``PermissionRuleSet`` snapshot), ``require_approval``, ``tools``, ``auto_approve`` and
    ``session_grants`` (see the README). The policy always gets a ``SessionPermissionGrants`` (empty
    when the file has none), so a host can grant tools as people answer.

    Args:
        source: a path (read as TOML when it ends in ``.toml``, as JSON otherwise) or a mapping.
        queue: the queue to submit to; by default a fresh ``ApprovalQueue`` configured with the file's
            ``auto_approve``.
        project_grants: the host's project grants collaborator (anything with ``is_granted``).
        on_decision, clock, interactive: passed to ``ApprovalPolicy`` as they are (what a host wires,
            not what a file configures).

    Raises:
        OSError: the file cannot be read.
        InvalidSnapshotError: the file is not valid JSON/TOML, or any field is invalid; the message and
            ``path`` name the bad field, e.g. ``rules.rules[2].tool_pattern.flags``.
        ValueError: ``queue`` is given and the file sets ``auto_approve`` too (configure one or the other).
        TypeError: ``source`` is neither a path nor a mapping.
    """
    if isinstance(source, Mapping):
        data: object = source
        where = ""
    elif isinstance(source, str | os.PathLike):
        where = os.fspath(source)
        with open(where, "rb") as file:
            raw = file.read()
        data = parse_policy_bytes(raw, where, toml=where.endswith(".toml"))
    else:
        raise TypeError(f"source: expected a path or a mapping; got {source!r}")
    try:
        return _build(
            data,
            queue,
            project_grants=project_grants,
            on_decision=on_decision,
            clock=clock,
            interactive=interactive,
        )
    except InvalidSnapshotError as error:
        if not where:
            raise
        raise InvalidSnapshotError(f"{where}: {error}", path=error.path, value=error.value) from None


def parse_policy_bytes(raw: bytes, where: str, *, toml: bool) -> object:
    """A policy file's content parsed as TOML or JSON (not yet validated).

    Raises:
        InvalidSnapshotError: not UTF-8, or a syntax error; the message starts with ``where``.
    """
    try:
        if toml:
            return tomllib.loads(raw.decode("utf-8"))
        return json.loads(raw, object_pairs_hook=_object_without_duplicates)
    except _DuplicateKeyError as error:
        problem = f"invalid JSON: the key {error.key!r} appears twice in one object"
    except UnicodeDecodeError as error:
        problem = f"not UTF-8 text ({error.reason} at byte {error.start})"
    except tomllib.TOMLDecodeError as error:
        problem = f"invalid TOML: {error}"
    except json.JSONDecodeError as error:
        problem = f"invalid JSON: {error}"
    except RecursionError:
        problem = "nested too deeply to read"
    raise InvalidSnapshotError(f"{where}: {problem}", path="", value=None)


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # json keeps the last of two equal keys; TOML refuses them. A policy must not depend on which
    # of two "mode" entries a parser happens to keep, so JSON refuses them too.
    data: dict[str, object] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKeyError(key)
        data[key] = value
    return data


def _build(data: object, queue: ApprovalQueue | None, **host: Any) -> ApprovalPolicy:
    """Validate everything first, then build: a bad field never leaves half a policy behind."""
    config = read_mapping(data, "", required=("version",), optional=_KEYS)
    read_version(config, "")
    mode = _optional(config, "mode", _read_mode)
    rules = _optional(config, "rules", _read_rules)
    require_approval = _optional(config, "require_approval", _read_require_approval)
    tools = _optional(config, "tools", _read_tools)
    auto_approve = _optional(config, "auto_approve", _read_auto_approve) or {}
    session_grants = _optional(config, "session_grants", _read_grants) or SessionPermissionGrants()
    if queue is None:
        queue = ApprovalQueue(auto_approve=auto_approve)
    elif auto_approve:
        raise ValueError(
            f"queue: the policy file sets auto_approve (for {sorted(auto_approve)!r}), and a queue was "
            "passed too; configure auto_approve on your queue and drop it from the file, or pass no queue"
        )
    return ApprovalPolicy(
        queue=queue,
        rules=rules,
        require_approval=require_approval,
        tools=tools,
        mode=mode,
        session_grants=session_grants,
        **host,
    )


def _optional(config: Mapping[str, object], key: str, read: Callable[[object, str], _T]) -> _T | None:
    # JSON's null reads as "left out", as it does for the optional fields of every snapshot.
    value = config.get(key)
    return None if value is None else read(value, key)


def _read_mode(value: object, path: str) -> Mode:
    if value not in MODES:
        fail(path, "one of " + ", ".join(repr(mode) for mode in MODES), value)
    return value


def _read_rules(value: object, path: str) -> PermissionRules | PermissionRuleSet:
    if not isinstance(value, Mapping):
        fail(path, "a PermissionRules or PermissionRuleSet snapshot object", value)
    if "default_rules" in value or "project_rules" in value:
        return PermissionRuleSet.from_snapshot(value, path=path)
    return PermissionRules.from_snapshot(value, path=path)


def _read_require_approval(value: object, path: str) -> ToolPattern | list[ToolPattern]:
    if isinstance(value, list | tuple):
        entries = read_list(value, path)
        return [_read_tool_pattern(entry, child(path, position)) for position, entry in enumerate(entries)]
    return _read_tool_pattern(value, path)


def _read_tool_pattern(value: object, path: str) -> ToolPattern:
    if isinstance(value, str):
        return read_str(value, path, non_empty=True)
    if not isinstance(value, Mapping):
        fail(path, "a tool name, a pattern object or an array of those", value)
    pattern = decode_pattern(value, path)
    if pattern == "":
        fail(child(path, "value"), "a non-empty tool name", pattern)
    return pattern


def _read_names(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        fail(path, "an object of tool name to value", value)
    for name in value:
        if not isinstance(name, str) or not name:
            fail(path, "non-empty tool names as keys", name)
    return value


def _read_tools(value: object, path: str) -> Mapping[str, Mapping[str, object]]:
    tools: dict[str, Mapping[str, object]] = {}
    for name, entry in _read_names(value, path).items():
        entry_path = child(path, name)
        declared = read_mapping(entry, entry_path, optional=_TOOL_FLAGS + _TOOL_TEXTS)
        metadata: dict[str, object] = {}
        for key in _TOOL_FLAGS:
            if key in declared:
                metadata[key] = read_bool(declared[key], child(entry_path, key))
        for key in _TOOL_TEXTS:
            if key in declared:
                metadata[key] = read_str(declared[key], child(entry_path, key), non_empty=True)
        scope = metadata.get("side_effect_scope")
        if scope is not None and scope not in SIDE_EFFECT_SCOPES:
            # A typo would silently read as "unknown": fail instead.
            fail(
                child(entry_path, "side_effect_scope"),
                "one of " + ", ".join(repr(known) for known in sorted(SIDE_EFFECT_SCOPES)),
                scope,
            )
        tools[name] = MappingProxyType(metadata)
    return MappingProxyType(tools)


def _read_auto_approve(value: object, path: str) -> dict[str, object]:
    names = _read_names(value, path)
    for name, flag in names.items():
        if flag is not True:
            fail(child(path, name), "true (leave a tool out to not auto-approve it)", flag)
    return dict(names)


def _read_grants(value: object, path: str) -> SessionPermissionGrants:
    return SessionPermissionGrants.from_snapshot(value, path=path)
