"""Rule examples: calls a rule of a policy or settings file must match, and calls it must not.

In a rule list, an entry may be a table instead of a rule text: ``{rule = "Bash(git *)", match = ["git
status"], not_match = ["git status && rm -rf ~"]}``. An example is a call, ``{tool = "Bash", args = {command =
"git status"}}`` (``tool`` defaults to the rule's own), or for a tool of a known kind the subject alone: the
command of a shell tool, the path of a path tool, the URL of a URL tool. The examples are checked when the
file is read; a rule whose example does not behave is an error naming the rule and the example, so a rule
that stops meaning what its author meant fails the load, not a later call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, final

from ask_permissions._errors import InvalidSnapshotError, preview
from ask_permissions._strict import child, fail, read_list, read_mapping, read_text

from ._text import BUILTIN_KINDS, ToolKind

__all__ = ["RuleExamples", "check_examples", "read_rule_entry"]

_SUBJECT_KEYS: Final = {"shell": "command", "path": "file_path", "url": "url"}
"""The argument a bare-string example fills for a tool of each kind (unless the kind names its own key)."""


@final
@dataclass(frozen=True, slots=True)
class RuleExamples:
    """A rule's examples as written, with the path of the entry they came from (``permissions.allow[2]``)."""

    path: str
    match: tuple[object, ...] = ()
    not_match: tuple[object, ...] = ()


def read_rule_entry(value: object, path: str, *, non_empty: bool = False) -> tuple[str, RuleExamples | None]:
    """A rule list's entry: a rule text, or ``{rule, match, not_match}``; the text and its examples.

    ``non_empty`` refuses an empty text here (else the rule reader says what is wrong with it).

    Raises:
        InvalidSnapshotError: neither form, or a table with unknown keys or lists that are not lists.
    """
    if not isinstance(value, Mapping):
        return read_text(value, path, non_empty=non_empty), None
    table = read_mapping(value, path, required=("rule",), optional=("match", "not_match"))
    text = read_text(table["rule"], child(path, "rule"), non_empty=non_empty)
    match = tuple(read_list(table.get("match", []), child(path, "match")))
    not_match = tuple(read_list(table.get("not_match", []), child(path, "not_match")))
    return text, RuleExamples(path, match, not_match)


def check_examples(
    examples: RuleExamples,
    text: str,
    matches: Callable[[str, object], bool],
    *,
    tool: str | None,
    kinds: Mapping[str, ToolKind],
) -> None:
    """Check that the rule ``text`` matches each ``match`` example and none of the ``not_match`` ones.

    Args:
        examples: the rule's examples.
        text: the rule text, for the message.
        matches: whether the rule matches a call (tool name, arguments).
        tool: the rule's single tool name, which an example's ``tool`` defaults to (``None``: a rule of
            several tools, whose examples must each name theirs).
        kinds: the host's tool kinds (the built-in ones fill the rest), for bare-string examples.

    Raises:
        InvalidSnapshotError: an example that is not a call, or one the rule does not treat as it says; the
            path names the example (``permissions.allow[2].match[0]``), the message the rule too.
    """
    for field, wanted in (("match", True), ("not_match", False)):
        for index, example in enumerate(getattr(examples, field)):
            where = child(child(examples.path, field), index)
            name, arguments = _example_call(example, where, tool, kinds)
            if matches(name, arguments) != wanted:
                should = "must match" if wanted else "must not match"
                does = "does not" if wanted else "does"
                raise InvalidSnapshotError(
                    f"{where}: the rule {text!r} {should} the call {name} {_shown(arguments)}, and {does}",
                    path=where,
                    value=example,
                )


def _example_call(
    example: object, path: str, tool: str | None, kinds: Mapping[str, ToolKind]
) -> tuple[str, object]:
    if isinstance(example, str):
        if tool is None:
            fail(path, "a call {tool, args} (the rule names no single tool for a bare subject)", example)
        kind = kinds.get(tool) or BUILTIN_KINDS.get(tool)
        if kind is None:
            fail(
                path,
                f"a call {{tool, args}} ({tool!r} has no kind, so a bare string names no argument)",
                example,
            )
        return tool, {kind.key or _SUBJECT_KEYS[kind.kind]: str.__str__(example)}
    table = read_mapping(example, path, optional=("tool", "args"))
    if "tool" in table:
        name = read_text(table["tool"], child(path, "tool"), non_empty=True)
    elif tool is not None:
        name = tool
    else:
        fail(child(path, "tool"), "the tool's name (the rule names no single tool)", None)
    return name, table.get("args")


def _shown(arguments: object) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return preview(arguments)
