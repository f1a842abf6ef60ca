"""Policy files: what an ApprovalPolicy needs, as JSON or TOML, read strictly."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final, NoReturn, TypeAlias, TypeVar

from ask_permissions._errors import InvalidSnapshotError, UnknownToolError, preview
from ask_permissions._strict import child, fail, read_bool, read_list, read_mapping, read_str, read_version
from ask_permissions.policy._approval import MODES, POLICY_DEFAULTS, ApprovalPolicy, approval_references
from ask_permissions.policy._hooks import Hooks
from ask_permissions.policy._records import DecisionRecord
from ask_permissions.policy._tool_metadata import SIDE_EFFECT_SCOPES
from ask_permissions.policy._tool_names import (
    BESIDE_REGISTRY,
    ToolReference,
    pattern_reference,
    raise_unknown,
    read_unknown_tools,
    registry_names,
)
from ask_permissions.policy._tool_names import unknown_tools as unknown_tools_of
from ask_permissions.queue._grants import SessionPermissionGrants
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.queue._store import DEFAULT_SESSION, ApprovalStore
from ask_permissions.rules._examples import RuleExamples, check_examples, read_rule_entry
from ask_permissions.rules._patterns import ToolPattern, decode_pattern
from ask_permissions.rules._rule_set import PermissionRuleSet
from ask_permissions.rules._rules import PermissionRules
from ask_permissions.rules._text import RuleTextError, read_kinds, rule_tool_pattern
from ask_permissions.typing import Clock, Evaluator, GrantsLike, Mode, PolicyDefault, Redactor, UnknownTools

from ._field_lines import with_line
from ._policy_text import MAX_POLICY_FILE_BYTES, parse_policy_bytes, read_policy_bytes

__all__ = ["MAX_POLICY_FILE_BYTES", "RISK_LEVELS", "PolicySource", "load_policy", "parse_policy_bytes"]

PolicySource: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"
"""A policy file's path (TOML when it ends in ``.toml``, JSON otherwise) or its already parsed data."""

RISK_LEVELS: Final = ("low", "medium", "high", "critical")
"""The ``risk_level`` values a policy file may declare (``high`` and ``critical`` are elevated)."""

_KEYS: Final = (
    "mode",
    "permissions",
    "rules",
    "require_approval",
    "tools",
    "auto_approve",
    "session_grants",
    "hooks",
    "default",
    "unknown_tools",
)
_PERMISSION_LISTS: Final = ("deny", "ask", "allow")
_KEEP_IN_FILE: Final = 'set unknown_tools = "keep" in the file to keep rules for tools that come later'
_TOOL_FLAGS: Final = ("approval_required", "auto_approvable", "always_ask")
# Each declared text must be one of these: a typo would otherwise silently read as "unknown" or "not
# elevated".
_TOOL_CHOICES: Final[Mapping[str, tuple[str, ...]]] = {
    "risk_level": RISK_LEVELS,
    "side_effect_scope": tuple(sorted(SIDE_EFFECT_SCOPES)),
}

_T = TypeVar("_T")


def load_policy(
    source: PolicySource,
    *,
    queue: ApprovalQueue | None = None,
    project_grants: GrantsLike | None = None,
    on_decision: Callable[[DecisionRecord], object] | None = None,
    clock: Clock | None = None,
    interactive: bool = True,
    store: ApprovalStore | None = None,
    session: str = DEFAULT_SESSION,
    unknown_tools: UnknownTools | None = None,
    shadow: Evaluator | None = None,
    record_arguments: bool | Redactor = False,
    base_dir: str | os.PathLike[str] | None = None,
) -> ApprovalPolicy:
    """Build an ``ApprovalPolicy`` from a policy file or its parsed data.

    The file holds ``version`` (1) and, each optional, ``mode``, ``default``, ``rules`` (a
    ``PermissionRules`` or ``PermissionRuleSet`` snapshot), ``permissions`` (rule text),
    ``require_approval``, ``tools``, ``unknown_tools``, ``auto_approve`` and ``session_grants`` (see
    docs/reference/policy-file.md), and ``hooks`` (``{"PreToolUse": [...]}``, read by ``Hooks.from_config``;
    a relative program path is found in the file's own folder). The policy always gets a
    ``SessionPermissionGrants`` (empty when the file has none), so a host can grant tools as people answer.

    ``default`` is what a call nothing decides does: ``"ask"`` a person when the file leaves it out, or
    ``"proceed"`` (the gem's "unconfigured means allow"). When the file has a ``tools`` table, every rule,
    ``require_approval`` entry, ``auto_approve`` entry and hook matcher must name one of its tools
    (``UnknownToolError`` otherwise, with the nearest name), unless ``unknown_tools`` is ``"keep"``.

    A file is read only up to ``MAX_POLICY_FILE_BYTES`` (64 MiB); a larger one is refused before it is read
    whole. Tool entries declare ``risk_level`` as one of ``RISK_LEVELS`` (``low``, ``medium``, ``high``,
    ``critical``) and ``side_effect_scope`` as one of ``SIDE_EFFECT_SCOPES``.

    Args:
        source: a path (read as TOML when it ends in ``.toml``, as JSON otherwise) or a mapping.
        queue: the queue to submit to; by default a fresh ``ApprovalQueue`` configured with the file's
            ``auto_approve``.
        project_grants: the host's project grants collaborator (anything with ``is_granted``).
        on_decision: passed to ``ApprovalPolicy`` as it is (what a host wires, not what a file configures).
        clock: passed to ``ApprovalPolicy`` as it is.
        interactive: passed to ``ApprovalPolicy`` as it is.
        store: keep the queue and the session grants in this store (an ``open_store`` URL's, say), so that
            other processes see the same pending actions; the file's ``auto_approve`` configures that queue,
            and its ``session_grants`` are granted in the session.
        session: the session of ``store`` the queue and the grants belong to.
        unknown_tools: ``"error"`` or ``"keep"``, in place of the file's own ``unknown_tools``.
        shadow: passed to ``ApprovalPolicy`` as it is.
        record_arguments: passed to ``ApprovalPolicy`` as it is.
        base_dir: for parsed data, the folder its relative paths are read from, as a file's are from its
            own (a hook's program, ``permissions.cwd``); default: the working directory. A path source
            always uses its file's folder.

    Raises:
        OSError: the file cannot be read.
        UnknownToolError: a rule (or other entry) names no tool of the file's ``tools`` table (an
            ``InvalidSnapshotError``).
        InvalidSnapshotError: the file is larger than ``MAX_POLICY_FILE_BYTES``, not valid JSON/TOML, or
            any field is invalid; the message and ``path`` name the bad field, e.g.
            ``rules.rules[2].tool_pattern.flags``. That includes an integer past Python's digit limit, a
            value nested too deeply to read, and a regex whose warning the host's warning filters turn
            into an error (``python -W error``).
        ValueError: ``queue`` is given and the file sets ``auto_approve`` too (configure one or the other), or
            ``queue`` and ``store`` are both given.
        TypeError: ``source`` is neither a path nor a mapping.
    """
    if queue is not None and store is not None:
        raise ValueError("load_policy: give a queue or a store for one, not both")
    if unknown_tools is not None:
        unknown_tools = read_unknown_tools(unknown_tools)
    folder = None if base_dir is None else os.path.abspath(os.fspath(base_dir))
    text: str | None = None
    if isinstance(source, Mapping):
        data: object = source
        where = ""
    else:
        where = _as_path(source)
        raw = _read(where)
        data = parse_policy_bytes(raw, where, toml=where.endswith(".toml"))
        text = raw.decode("utf-8")  # parse_policy_bytes checked it
    try:
        try:
            return _build(
                data,
                queue,
                base_dir=os.path.dirname(os.path.abspath(where)) if where else folder,
                store=store,
                session=session,
                unknown_tools=unknown_tools,
                where=where or "load_policy",
                project_grants=project_grants,
                on_decision=on_decision,
                clock=clock,
                interactive=interactive,
                shadow=shadow,
                record_arguments=record_arguments,
            )
        except Warning as warning:
            _refuse_warning(data, warning)
        except InvalidSnapshotError as error:
            if isinstance(error.__cause__, Warning):  # a reader refused the whole snapshot for it
                _refuse_warning(data, error.__cause__)
            raise
    except InvalidSnapshotError as error:
        if not where:
            raise
        located = with_line(where, text, error.path, error.value, toml=where.endswith(".toml"))
        if isinstance(error, UnknownToolError):  # its message names the file already
            message = located + str(error).removeprefix(where)
            raise UnknownToolError(
                message, path=error.path, value=error.value, unknown=error.unknown, known=error.known
            ) from None
        raise InvalidSnapshotError(f"{located}: {error}", path=error.path, value=error.value) from None


def _as_path(source: object) -> str:
    path: object = os.fspath(source) if isinstance(source, str | os.PathLike) else None
    if not isinstance(path, str):  # bytes paths too: the suffix test and the messages need text
        raise TypeError(f"source: expected a path or a mapping; got {preview(source)}")
    return path


def _read(where: str) -> bytes:
    if "\x00" in where:  # open() would raise ValueError: such a path names no file
        raise OSError(errno.EINVAL, "a path cannot contain a NUL character", where)
    return read_policy_bytes(where)


def _refuse_warning(data: object, warning: Warning) -> NoReturn:
    """Raise ``InvalidSnapshotError`` for a warning the host's filters raised (``python -W error``).

    Python warns about some regexes (``[[a]``: "Possible nested set"). The pattern object that raised is
    found again by decoding each regex in the data (a compile that raised was not cached), so the error
    names its field as every other does.
    """
    for path, pattern in _regex_pattern_objects(data):
        try:
            decode_pattern(pattern, path)
        except Warning as again:
            expected = f"a regex Python does not warn about ({type(again).__name__}: {again})"
            fail(child(path, "source"), expected, pattern.get("source"))
        except InvalidSnapshotError:
            continue
    fail("", f"a policy Python does not warn about ({type(warning).__name__}: {warning})", None)


def _regex_pattern_objects(data: object) -> Iterator[tuple[str, Mapping[str, object]]]:
    """Every ``{"type": "regexp", ...}`` object in ``data``, with its path (walked iteratively)."""
    stack: list[tuple[str, object]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, Mapping):
            if value.get("type") == "regexp":
                yield path, value
            items = [(child(path, key), item) for key, item in value.items() if isinstance(key, str)]
            stack.extend(reversed(items))
        elif isinstance(value, list | tuple):
            stack.extend((child(path, index), item) for index, item in reversed(list(enumerate(value))))


def _build(
    data: object,
    queue: ApprovalQueue | None,
    *,
    base_dir: str | None,
    store: ApprovalStore | None,
    session: str,
    unknown_tools: UnknownTools | None,
    where: str,
    **host: Any,
) -> ApprovalPolicy:
    """Validate everything first, then build: a bad field never leaves half a policy behind."""
    config = read_mapping(data, "", required=("version",), optional=_KEYS)
    read_version(config, "")
    mode = _optional(config, "mode", _read_mode)
    default: PolicyDefault = _optional(config, "default", _read_default) or "ask"
    # The file's own value is checked even when the host overrides it (lint does).
    keep = _optional(config, "unknown_tools", _read_unknown_tools) or "error"
    keep = unknown_tools or keep
    rules = _optional(config, "rules", _read_rules)
    require_approval = _optional(config, "require_approval", _read_require_approval)
    tools = _optional(config, "tools", _read_tools)
    kinds = _optional(config, "tools", _read_permission_kinds) or {}
    known = registry_names(tools)
    if keep == "error" and known is not None:
        # Before the rule text is read: a misspelt tool has no kind either, and "did you mean" says more.
        early = unknown_tools_of(_text_rule_references(config.get("permissions")), known)
        raise_unknown(early, known, where=where, keep_hint=_KEEP_IN_FILE)
    text_rules = _optional(
        config, "permissions", lambda value, path: _read_permissions(value, path, kinds, base_dir)
    )
    if text_rules is not None:
        rules = text_rules if rules is None else _text_rules_first(text_rules, rules)
    auto_approve = _optional(config, "auto_approve", _read_auto_approve) or {}
    granted = _optional(config, "session_grants", _read_grants)
    hooks = _optional(config, "hooks", lambda value, path: _read_hooks(value, path, config, kinds, base_dir))
    if keep == "error" and known is not None:
        references = approval_references(
            rules=rules,
            require_approval=require_approval,
            auto_approve=auto_approve,
            hooks=hooks or (),
            tools=tools,
        )
        found = unknown_tools_of([ref for ref in references if ref.kind in BESIDE_REGISTRY], known)
        raise_unknown(found, known, where=where, keep_hint=_KEEP_IN_FILE)
    # Everything is read and checked: only now is anything created (or written to a store).
    session_grants = SessionPermissionGrants(
        () if granted is None else granted.granted_tools, store=store, session=session
    )
    if queue is None:
        queue = ApprovalQueue(auto_approve=auto_approve, store=store, session=session)
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
        hooks=hooks,
        default=default,
        unknown_tools=keep,
        **host,
    )


def _optional(config: Mapping[str, object], key: str, read: Callable[[object, str], _T]) -> _T | None:
    # JSON's null reads as "left out", as it does for the optional fields of every snapshot.
    value = config.get(key)
    return None if value is None else read(value, key)


def _read_default(value: object, path: str) -> PolicyDefault:
    if value not in POLICY_DEFAULTS:
        fail(path, "'ask' (a person decides what no rule does) or 'proceed'", value)
    return value


def _read_unknown_tools(value: object, path: str) -> UnknownTools:
    try:
        return read_unknown_tools(value, path)
    except ValueError:
        fail(path, "'error' (a rule must name a tool of the tools table) or 'keep'", value)


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
        declared = read_mapping(entry, entry_path, optional=(*_TOOL_FLAGS, *_TOOL_CHOICES, "permission_kind"))
        metadata: dict[str, object] = {}
        for key in _TOOL_FLAGS:
            if key in declared:
                metadata[key] = read_bool(declared[key], child(entry_path, key))
        for key, choices in _TOOL_CHOICES.items():
            if key in declared:
                if declared[key] not in choices:
                    fail(child(entry_path, key), "one of " + ", ".join(map(repr, choices)), declared[key])
                metadata[key] = declared[key]
        if isinstance(declared.get("permission_kind"), str):  # checked by _read_permission_kinds
            metadata["permission_kind"] = declared["permission_kind"]
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


def _read_permission_kinds(value: object, path: str) -> dict[str, str]:
    """The ``permission_kind`` of each tool entry, checked as ``kinds`` are: ``shell``, ``path``, ``url``."""
    kinds: dict[str, str] = {}
    for name, entry in _read_names(value, path).items():
        if isinstance(entry, Mapping) and "permission_kind" in entry:
            kind_path = child(child(path, name), "permission_kind")
            kind = read_str(entry["permission_kind"], kind_path, non_empty=True)
            try:
                read_kinds({name: kind})
            except ValueError:
                fail(kind_path, "'shell', 'path' or 'url', optionally with ':<argument key>'", kind)
            kinds[name] = kind
    return kinds


def _read_permissions(
    value: object, path: str, kinds: Mapping[str, str], base_dir: str | None
) -> PermissionRules:
    """The ``permissions`` table: ``allow``, ``ask`` and ``deny`` lists of rule text; ``cwd`` and ``home``."""
    table = read_mapping(value, path, optional=(*_PERMISSION_LISTS, "cwd", "home"))
    lists: dict[str, list[str]] = {}
    examples: dict[str, list[RuleExamples | None]] = {}
    for field in _PERMISSION_LISTS:
        field_path = child(path, field)
        entries = [
            read_rule_entry(entry, child(field_path, index))
            for index, entry in enumerate(read_list(table.get(field, []), field_path))
        ]
        lists[field] = [text for text, _ in entries]
        examples[field] = [example for _, example in entries]
    directories = _permission_directories(table, path, base_dir)
    try:
        rules = PermissionRules.from_text(
            allow=lists["allow"],
            ask=lists["ask"],
            deny=lists["deny"],
            cwd=directories.get("cwd"),
            home=directories.get("home"),
            kinds=kinds,
        )
    except RuleTextError as error:
        where = child(path, error.where) if error.where else path
        fail(where, f"a rule ({error.problem})", error.text)
    # from_text keeps the deny list, then the ask list, then the allow list, each in its own order.
    declared = [example for field in ("deny", "ask", "allow") for example in examples[field]]
    read = read_kinds(kinds)
    for rule, example in zip(rules.rules, declared, strict=True):
        if example is not None:
            check_examples(
                example,
                rule.text or "",
                rule.matches,
                tool=rule.tool_pattern if isinstance(rule.tool_pattern, str) else None,
                kinds=read,
            )
    return rules


def _text_rule_references(table: object) -> Iterator[ToolReference]:
    """The tools the ``permissions`` lists name, read from each rule text's tool name alone."""
    if not isinstance(table, Mapping):
        return
    for decision in _PERMISSION_LISTS:
        texts = table.get(decision)
        if not isinstance(texts, list | tuple):
            continue
        for index, text in enumerate(texts):
            pattern = rule_tool_pattern(text, decision) if isinstance(text, str) else None
            if pattern is not None:
                where = f"permissions.{decision}[{index}]"
                reference = pattern_reference(where, pattern, text, folds=decision != "allow")
                if reference is not None:
                    yield reference


def _permission_directories(table: Mapping[str, Any], path: str, base_dir: str | None) -> dict[str, str]:
    """The ``permissions`` table's ``cwd`` (relative to the policy file) and ``home`` (absolute), if given."""
    directories: dict[str, str] = {}
    for field in ("cwd", "home"):
        if field in table:
            directory = read_str(table[field], child(path, field), non_empty=True)
            if field == "cwd" and not os.path.isabs(directory):
                directory = os.path.join(base_dir or os.getcwd(), directory)  # next to the policy file
            elif field == "home" and not os.path.isabs(directory):
                fail(child(path, field), "an absolute path", directory)
            directories[field] = os.path.normpath(directory)
    return directories


def _read_hooks(
    value: object, path: str, config: Mapping[str, Any], kinds: Mapping[str, str], base_dir: str | None
) -> Hooks:
    """The ``hooks`` table; its matchers' specifiers read as the ``permissions`` rules are (same kinds and
    directories)."""
    table = config.get("permissions")
    directories = (
        _permission_directories(table, "permissions", base_dir) if isinstance(table, Mapping) else {}
    )
    return Hooks.from_config(
        value,
        path=path,
        base_dir=base_dir,
        kinds=kinds,
        cwd=directories.get("cwd"),
        home=directories.get("home"),
    )


def _text_rules_first(
    text_rules: PermissionRules, rules: PermissionRules | PermissionRuleSet
) -> PermissionRules | PermissionRuleSet:
    """The ``permissions`` rules, then the snapshot-form ``rules`` (in a rule set: its default layer)."""
    if isinstance(rules, PermissionRuleSet):
        default = rules.default_rules
        merged = _concatenate(text_rules, default) if isinstance(default, PermissionRules) else text_rules
        return PermissionRuleSet(default_rules=merged, project_rules=rules.project_rules)
    return _concatenate(text_rules, rules)


def _concatenate(first: PermissionRules, second: PermissionRules) -> PermissionRules:
    # Both were read strictly already: their snapshots join into one that cannot fail.
    text, snapshot = first.snapshot(), second.snapshot()
    tools = list(dict.fromkeys([*text.get("dangerous_tools", []), *snapshot.get("dangerous_tools", [])]))
    combined = {
        "version": snapshot["version"],
        "auto_allow_dangerous": snapshot["auto_allow_dangerous"],
        "dangerous_tools": tools,
        "rules": text["rules"] + snapshot["rules"],
    }
    return PermissionRules.from_snapshot(combined)
