"""``ask-permissions suggest --store URL``: allow rules that would have answered past approvals, proven."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import difflib
import json
import os
import re
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, TextIO, final

from ask_permissions._errors import InvalidSnapshotError
from ask_permissions._strict import fail
from ask_permissions._vocabulary import MACHINE_DECIDERS
from ask_permissions.evidence._suggest import Answer, SuggestionContext, Suggestions, suggest
from ask_permissions.loading._policy_file import load_policy
from ask_permissions.policy._layered import LayeredPolicy
from ask_permissions.policy._records import Evaluator
from ask_permissions.queue._open import describe_url
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.rules._text import read_kinds
from ask_permissions.settings._atomic import _locked
from ask_permissions.settings._policy_text import parse_policy_bytes, read_policy_bytes
from ask_permissions.settings._settings import (
    AGENT_DIR,
    LOCAL_SETTINGS,
    PROJECT_SETTINGS,
    USER_SETTINGS,
    PermissionSettings,
)
from ask_permissions.settings._sources import settings_from_data

from ._approvals import _cell
from ._output import shown_call
from ._policies import read_history

__all__ = ["add_parser", "run_suggest", "suggestion_context"]

EXIT_OK: Final = 0
EXIT_NOT_PROVEN: Final = 1


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``suggest``."""
    parser = commands.add_parser(
        "suggest",
        help="allow rules that would have answered the most past approvals, proven against rejections",
        description="From the answers a store keeps, the smallest set of allow rules (command prefixes, "
        "directories, domains, MCP tools; never broader than the approvals need) that would have answered "
        "the most approvals, each proven to match no call a person rejected and no call a deny rule covers. "
        "Prints them with the prompts each would have saved; writes nothing unless --write FILE (a settings "
        "or policy file), and then only after printing the diff and when the proof holds. Exit status 0; 1 "
        "when the proof fails (nothing is written); 2 for bad input.",
    )
    parser.add_argument("--store", metavar="URL", required=True, help="sqlite:///PATH or postgresql://...")
    parser.add_argument(
        "--min-count", metavar="N", type=_count, default=2, help="approvals a rule must answer (default 2)"
    )
    parser.add_argument(
        "--policy",
        metavar="POLICY",
        help="the policy whose deny rules the rules are proven against: a policy file or a project directory "
        "(default: the --write file, or its project for a file under .agent/; with --write, a policy file or "
        "a project's settings file must belong to this policy)",
    )
    parser.add_argument("--write", metavar="FILE", help="add the rules to this settings or policy file")
    parser.add_argument("--json", action="store_true", help="the rules and the proof as one JSON object")
    parser.set_defaults(run=run_suggest)


def run_suggest(options: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``suggest``; its exit status.

    Raises:
        InvalidSnapshotError, CorruptStoreError, ValueError: bad input (the caller exits 2).
        OSError: a file cannot be read or written.
    """
    out = sys.stdout if out is None else out
    if options.write is not None and options.policy is not None:
        _check_proven_where_written(options.policy, options.write)
    # The text the proof reads, and the only text the write may go over: a change made while the rules
    # are found (a deny rule dropped, a cwd moved) would leave the proof about another file.
    written = None if options.write is None else _read_text(options.write)
    context = suggestion_context(options.policy or _implied_policy(options.write))
    if options.write is not None and _path_anchor(options.write) != context.root:
        # The file reads ./ rules from elsewhere (another project, the agent's working directory): there a
        # rule proven here would name other paths, some of them perhaps rejected.
        context = dataclasses.replace(context, relative=False)
    with read_history(options.store) as actions:
        answers = [
            # A person who edited the call approved their own call instead: the model's stays refused.
            Answer(
                entry.action.tool_name,
                entry.action.args,
                entry.action.is_approved and not entry.action.is_edited,
                f"session {entry.session!r} action {entry.action.id}"
                + (" (approved as edited)" if entry.action.is_edited else ""),
            )
            for entry in actions
            if entry.action.status in ("approved", "rejected")
            and not (entry.action.is_approved and entry.action.decided_by in MACHINE_DECIDERS)
        ]
    found = suggest(answers, context, min_count=options.min_count)
    edit = None
    if options.write is not None and found.rules and found.proven:
        assert written is not None
        edit = _planned(options.write, [rule.rule for rule in found.rules], written)
    if options.json:
        report = _as_json(found)
        if options.write is not None:
            report["write"] = {"file": options.write, "diff": "" if edit is None else edit.diff()}
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str), file=out)
    else:
        _print(out, found, describe_url(options.store), options.min_count)
    if options.write is None or not found.rules:
        return EXIT_OK
    note = sys.stderr if options.json else out  # --json keeps standard output one JSON object
    if not found.proven:
        print(f"{options.write}: not written: some rejected or denied call would proceed", file=note)
        return EXIT_NOT_PROVEN
    if edit is None:
        print(f"{options.write}: every rule is there already; nothing written", file=note)
        return EXIT_OK
    if not options.json:
        out.write(edit.diff())
    out.flush()
    edit.apply()
    print(f"{options.write}: {len(found.rules)} allow rules written", file=note)
    return EXIT_OK


def _implied_policy(write: str | None) -> str | None:
    if write is None:
        return None
    directory = os.path.dirname(os.path.abspath(write))
    if os.path.basename(directory) == AGENT_DIR:
        return os.path.dirname(directory)
    return write if os.path.exists(write) and _is_policy_file(write) else None


def _check_proven_where_written(policy: str, write: str) -> None:
    """Refuse to write to a file of another policy than the proof's: there the file's own rules join
    the new ones (a rejected ``git diff x && ls`` proceeds with its ``Bash(ls *)`` and a new
    ``Bash(git diff *)``).

    Raises:
        ValueError: ``write`` is a project's settings file or a policy file, and not ``policy``'s.
    """
    absolute = os.path.abspath(write)
    directory, name = os.path.split(absolute)
    if _is_user_settings(directory, name):
        return  # every project reads it: the proof holds for the --policy it names
    if os.path.basename(directory) == AGENT_DIR and name in (PROJECT_SETTINGS, LOCAL_SETTINGS):
        owner = os.path.dirname(directory)
    elif os.path.exists(write) and _is_policy_file(write):
        owner = absolute
    else:
        return  # a file read beside other settings (managed, cli): the --policy names which
    if os.path.abspath(policy) != owner:
        raise ValueError(
            f"--write {write}: it is part of the policy {owner!r}, but the rules would be proven against "
            f"--policy {policy!r}; name --policy {owner} (or leave --policy out)"
        )


def _is_user_settings(directory: str, name: str) -> bool:
    return directory == os.path.join(os.path.expanduser("~"), AGENT_DIR) and name == USER_SETTINGS


def _path_anchor(path: str) -> str | None:
    """The one directory the file's ``./path`` rules are read from, whatever reads it; ``None`` when there
    is none: a policy file that names no ``cwd`` (the agent's working directory, wherever it runs), or the
    user's settings file (read as the user's, from ``~/.agent``, and as the home project's, from ``~``)."""
    absolute = os.path.abspath(path)
    directory, name = os.path.split(absolute)
    if os.path.exists(path) and _is_policy_file(path):
        try:
            data = parse_policy_bytes(read_policy_bytes(path), path, toml=path.endswith(".toml"))
        except (OSError, InvalidSnapshotError):
            return None
        permissions = data.get("permissions") if isinstance(data, dict) else None
        cwd = permissions.get("cwd") if isinstance(permissions, dict) else None
        return os.path.normpath(os.path.join(directory, cwd)) if isinstance(cwd, str) and cwd else None
    if os.path.basename(directory) == AGENT_DIR and name in (PROJECT_SETTINGS, LOCAL_SETTINGS):
        if directory == os.path.join(os.path.expanduser("~"), AGENT_DIR):
            return None
        return os.path.dirname(directory)  # a project's settings: its project
    return directory  # read as a managed or cli file: from its own directory


def _is_policy_file(path: str) -> bool:
    if path.endswith(".toml"):
        return True
    try:
        return _is_policy_text(read_policy_bytes(path).decode("utf-8"), path)
    except (OSError, UnicodeDecodeError):
        return False


def _is_policy_text(text: str, path: str) -> bool:
    """Whether JSON text is a policy file (it has a ``version``) rather than a settings file."""
    try:
        data = parse_policy_bytes(text.encode("utf-8"), path, toml=False)
    except InvalidSnapshotError:
        return False
    return isinstance(data, dict) and "version" in data


def suggestion_context(policy: str | None) -> SuggestionContext:
    """What the rules are written for and proven against: a policy file, a project directory, or nothing
    (the working directory, no deny rules)."""
    home = os.path.expanduser("~")
    if policy is None:
        return SuggestionContext(root=os.getcwd(), home=home)
    if os.path.isdir(policy):
        project = os.path.abspath(policy)

        def layered(rules: Sequence[str] = ()) -> Evaluator:
            settings = PermissionSettings.load(project_dir=project)
            if rules:
                settings.add_rules("command", allow=rules)
            return LayeredPolicy(queue=ApprovalQueue(), settings=settings)

        current = layered()
        denies = [
            text for source in PermissionSettings.load(project_dir=project).sources for text in source.deny
        ]
        return SuggestionContext(project, home, {}, current, layered, denies)
    data = parse_policy_bytes(read_policy_bytes(policy), policy, toml=policy.endswith(".toml"))
    if not isinstance(data, dict):
        fail(policy, "a policy object", data)
    base = os.path.dirname(os.path.abspath(policy))
    permissions = data.get("permissions") if isinstance(data.get("permissions"), dict) else {}
    assert isinstance(permissions, dict)
    root = os.path.normpath(os.path.join(base, permissions.get("cwd", os.getcwd())))
    tools = data.get("tools") if isinstance(data.get("tools"), dict) else {}
    assert isinstance(tools, dict)
    kinds = read_kinds(
        {
            name: entry["permission_kind"]
            for name, entry in tools.items()
            if isinstance(entry, dict) and isinstance(entry.get("permission_kind"), str)
        }
    )

    def with_rules(rules: Sequence[str]) -> Evaluator:
        changed = dict(data)
        table = dict(permissions)
        table["allow"] = [*table.get("allow", []), *rules]
        table["cwd"] = root
        changed["permissions"] = table
        return load_policy(changed, base_dir=base)  # its hooks found where the file finds them

    denies = [
        entry if isinstance(entry, str) else entry.get("rule", "") for entry in permissions.get("deny", [])
    ]
    return SuggestionContext(root, home, kinds, load_policy(policy), with_rules, denies)


def _print(out: TextIO, found: Suggestions, store: str, min_count: int) -> None:
    print(
        f"{found.approvals} approvals and {found.rejections} rejections in {store}: {len(found.rules)} allow "
        f"rules would have answered {found.saved} approvals (each answers at least {min_count})",
        file=out,
    )
    width = max((len(rule.rule) for rule in found.rules), default=0)
    for rule in found.rules:
        print(
            f"  {_cell(rule.rule, limit=None):<{width}}  {rule.saved} prompts saved  ({rule.family})",
            file=out,
        )
        for example in rule.examples:
            print(f"      e.g. {shown_call(example.tool, example.arguments, limit=160)}", file=out)
    print("proof:", file=out)
    print(
        f"  each rule was tried on the {found.rejections} rejected calls, the {found.deny_covered} recorded "
        f"calls a deny rule covers and {found.witnesses} calls made from the deny rules' own text",
        file=out,
    )
    if found.proven:
        print(
            f"  with the rules added, the {found.redecided} of them a rule could match (in whole or by a "
            "sub-command) were decided again: none would proceed; no rule can match the others",
            file=out,
        )
    else:
        for call in found.proceeding:
            print(f"  NOT PROVEN: {shown_call(call.tool, call.arguments, limit=160)} would proceed", file=out)
    for call in found.already_proceeding:
        print(
            f"  note: {shown_call(call.tool, call.arguments, limit=160)}, rejected, already proceeds today",
            file=out,
        )
    uncovered = sum(found.uncovered_by_tool.values())
    if uncovered:
        tools = ", ".join(
            f"{_cell(tool)} {count}" for tool, count in list(found.uncovered_by_tool.items())[:10]
        )
        print(f"not answered by any rule: {uncovered} approvals ({tools})", file=out)


def _as_json(found: Suggestions) -> dict[str, Any]:
    def call(answer: Answer) -> dict[str, Any]:
        return {"tool": answer.tool, "arguments": answer.arguments, "where": answer.where}

    return {
        "approvals": found.approvals,
        "rejections": found.rejections,
        "saved": found.saved,
        "rules": [
            {
                "rule": rule.rule,
                "family": rule.family,
                "tool": rule.tool,
                "saved": rule.saved,
                "examples": [call(example) for example in rule.examples],
            }
            for rule in found.rules
        ],
        "proof": {
            "rejected_calls": found.rejections,
            "deny_covered_calls": found.deny_covered,
            "deny_witnesses": found.witnesses,
            "decided_again": found.redecided,
            "proven": found.proven,
            "would_proceed": [call(answer) for answer in found.proceeding],
            "already_proceeding": [call(answer) for answer in found.already_proceeding],
        },
        "uncovered_by_tool": found.uncovered_by_tool,
    }


# -- writing ------------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class _Edit:
    """The rules added to a file's allow list: its text now, and the text it would have."""

    path: str
    old: str
    new: str
    settings: bool  # a settings file (JSON, no ``version``), which an agent may write too

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.old.splitlines(True), self.new.splitlines(True), self.path, self.path
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def apply(self) -> None:
        """Write the new text atomically, once it is checked to load, and only over the text the diff showed.

        Raises:
            ValueError: the file changed since the diff was made, or the new text does not load (nothing
                is written).
            OSError: the file cannot be written.
        """
        lock = _locked(self.path) if self.settings else contextlib.nullcontext()
        with lock:  # the lock an agent's "don't ask again" takes to write a settings file
            if _read_text(self.path) != self.old:
                raise ValueError(
                    f"--write: {self.path} changed while suggest ran; nothing written (run it again)"
                )
            directory = os.path.dirname(os.path.abspath(self.path))
            suffix = ".toml" if self.path.endswith(".toml") else ".json"
            handle, temporary = tempfile.mkstemp(prefix=".suggest-", suffix=suffix, dir=directory)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as file:
                    file.write(self.new)
                    file.flush()
                    os.fsync(file.fileno())
                try:
                    _check_loads(temporary, self.path)
                except (InvalidSnapshotError, ValueError, TypeError) as error:
                    message = str(error).replace(temporary, self.path)
                    raise ValueError(f"--write: {message}; nothing written") from None
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
            with contextlib.suppress(OSError):  # the rename must reach the disk too
                directory_handle = os.open(directory, os.O_RDONLY)
                try:
                    os.fsync(directory_handle)
                finally:
                    os.close(directory_handle)


def _planned(path: str, rules: list[str], old: str | None = None) -> _Edit | None:
    """The edit adding the rules to the file's allow list (``None``: every rule is there already), made
    from ``old``, the text the file held when the proof read it (default: its text now).

    Raises:
        ValueError: the file no longer holds ``old`` (nothing is written), or cannot be edited safely.
    """
    toml = path.endswith(".toml")
    if old is None:
        old = _read_text(path)
    elif _read_text(path) != old:
        raise ValueError(f"--write: {path} changed while suggest ran; nothing written (run it again)")
    new = _toml_with(old, rules, path) if toml else _json_with(old, rules, path)
    if new == old:
        return None
    return _Edit(path, old, new, settings=not toml and not _is_policy_text(new, path))


def _read_text(path: str) -> str:
    try:
        return read_policy_bytes(path).decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as error:
        raise ValueError(f"--write: {path}: expected UTF-8 text ({error.reason})") from None


def _json_with(old: str, rules: list[str], path: str) -> str:
    data: Any = {} if not old.strip() else parse_policy_bytes(old.encode("utf-8"), path, toml=False)
    if not isinstance(data, dict):
        fail(path, "a JSON object", data)
    permissions = data.get("permissions") or {}
    if not isinstance(permissions, dict):
        fail(f"{path}: permissions", "an object", permissions)
    allow = permissions.get("allow")
    if allow is not None and not isinstance(allow, list):
        fail(f"{path}: permissions.allow", "a list of rules", allow)  # not a string split into letters
    listed = list(allow or [])
    texts = {
        entry if isinstance(entry, str) else entry.get("rule")
        for entry in listed
        if isinstance(entry, str | dict)
    }
    listed.extend(rule for rule in rules if rule not in texts)
    updated = {**data, "permissions": {**permissions, "allow": listed}}
    return json.dumps(updated, indent=2, ensure_ascii=False) + "\n"


def _toml_with(old: str, rules: list[str], path: str) -> str:
    """The TOML text with the rules added to ``[permissions] allow``, comments kept; checked by parsing.

    Whatever text is made, it is parsed again and must hold exactly the old data with the rules added;
    a file laid out in a way this cannot edit safely is refused (nothing written).
    """
    data = tomllib.loads(old)
    permissions = data.get("permissions", {})
    existing = list(permissions.get("allow", []))
    texts = {entry if isinstance(entry, str) else entry.get("rule") for entry in existing}
    added = [rule for rule in rules if rule not in texts]
    if not added:
        return old
    expected = {**data, "permissions": {**permissions, "allow": [*existing, *added]}}
    lines = old.splitlines(True)
    candidates: list[str] = []
    allow = "allow = [" + ", ".join(_toml_value(entry) for entry in [*existing, *added]) + "]\n"
    header = next((i for i, line in enumerate(lines) if line.strip() == "[permissions]"), None)
    if "permissions" not in data:
        separator = "" if not old or old.endswith("\n") else "\n"
        candidates.append(old + separator + "\n[permissions]\n" + allow)
    elif header is not None and "allow" not in permissions:
        candidates.append("".join([*lines[: header + 1], allow, *lines[header + 1 :]]))
    elif header is not None:
        end = next(
            (i for i in range(header + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines)
        )
        start = next((i for i in range(header + 1, end) if lines[i].lstrip().startswith("allow")), None)
        if start is not None:
            # The array may span lines: try each end until the text parses back to what is expected.
            candidates.extend(
                "".join([*lines[:start], allow, *lines[stop + 1 :]]) for stop in range(start, end)
            )
    for text in candidates:
        with contextlib.suppress(tomllib.TOMLDecodeError):
            if tomllib.loads(text) == expected:
                return text
    raise ValueError(
        f"--write: {path}: cannot add the rules to its [permissions] allow list safely; add them by hand"
    )


_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


def _toml_value(value: object) -> str:
    """A value as TOML writes it inline: a rule text, or an entry with examples as an inline table (what
    the text gives is parsed again and compared, so a value this writes wrong is refused, never kept)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's escapes are TOML's basic string escapes
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(value), repr(value))
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (
            f"{key if _BARE_KEY.fullmatch(key) else _toml_value(key)} = {_toml_value(item)}"
            for key, item in value.items()
        )
        return "{ " + ", ".join(pairs) + " }" if value else "{}"
    return json.dumps(str(value))


def _check_loads(path: str, target: str) -> None:
    """The text at ``path`` reads as ``target`` would: as a policy file, or as a settings file."""
    if _is_policy_file(path):
        load_policy(path)
        return
    data = parse_policy_bytes(read_policy_bytes(path), path, toml=False)
    settings_from_data("local", data, os.path.dirname(os.path.abspath(target)), path=target)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")
    return value
