"""Command hooks (seed 002, section 5): a program that sees a call before the rules do, and fails closed.

The program runs without a shell (its command split into words as a shell splits them), in the policy's
working folder, in a process group of its own, with the call as JSON on standard input and in
``TOOL_INPUT``. Exit 0 passes,
unless standard output holds a JSON answer; exit 2 blocks with standard error as the reason. Every other end
— another status, a signal, a timeout, output that is not an answer, a program that cannot be started —
blocks too, with a reason that names the hook, and is logged: a broken guard must never read as "no
objection".
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, final

from ask_permissions._errors import preview
from ask_permissions._json_text import escape_surrogates, write_json
from ask_permissions._names import fold_tool_name
from ask_permissions._tool_call import ToolCall
from ask_permissions.rules._command import CommandPattern, compound_allow
from ask_permissions.rules._patterns import tool_pattern_matches
from ask_permissions.rules._text import RuleText, RuleTextError, ToolKind, parse_rule_text, read_kinds
from ask_permissions.shell._quoting import join_words, split_words

from ._checks import PermissionCheck
from ._process import Ended, run_bounded

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "MAX_HOOK_OUTPUT_BYTES",
    "MAX_HOOK_REASON_CHARS",
    "MAX_HOOK_TIMEOUT",
    "MAX_TOOL_INPUT_BYTES",
    "CommandHook",
    "read_command",
    "read_matcher",
    "read_timeout",
]

DEFAULT_HOOK_TIMEOUT: Final = 60.0
"""Seconds a command hook may take when its configuration gives no ``timeout``."""

MAX_HOOK_TIMEOUT: Final = 600.0
"""The longest ``timeout`` a command hook may be given: a hook holds up the call while it runs."""

MAX_HOOK_OUTPUT_BYTES: Final = 1024 * 1024
"""The most a hook may write to standard output; more is a failure (the call is blocked)."""

MAX_HOOK_REASON_CHARS: Final = 2000
"""A hook's reason (its JSON ``reason``, or its standard error on exit 2) is cut to this many characters."""

MAX_TOOL_INPUT_BYTES: Final = 100_000
"""The largest call (as UTF-8 JSON) a command hook can be given: ``TOOL_INPUT`` is an environment variable,
and systems cap those (Linux at 128 KiB each). A larger call is blocked rather than shown to the hook cut."""

# What is kept of standard error, for the reason and the log; the rest is read away.
_STDERR_KEPT: Final = 64 * 1024
_SHOWN_CHARS: Final = 200
_ANSWER_KEYS: Final = frozenset({"action", "reason", "arguments"})
_ACTIONS: Final = ("allow", "deny", "ask")
_SHELL: Final = "/bin/sh"
# A word that names a variable: without a shell nothing expands it, so only $TOOL_INPUT (which the hook runner
# puts in itself) may appear. Any other would reach the program as literal text, and a check of "$FILE_PATH"
# that sees those ten characters would pass every call.
_VARIABLE: Final = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_TOOL_INPUT: Final = "TOOL_INPUT"
_TOOL_INPUT_WORD: Final = re.compile(r"\$(?:\{TOOL_INPUT\}|TOOL_INPUT(?![A-Za-z0-9_]))")
# Characters of a regex that no tool name and no rule text's tool part holds: a matcher written as a regex
# ("mcp__.*", "Edit|Write.*") is refused rather than read as a name no tool has, which would never run the
# hook.
_REGEX_IN_NAME: Final = re.compile(r"[?+\[\]{}^$\\]|\.\*")

_logger: Final = logging.getLogger("ask_permissions.hooks")


# -- configuration ---------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class _Matcher:
    """Which calls a hook runs for: every call, or those of these rule texts.

    A rule text with a specifier (``Bash(git *)``) runs the hook for every call a deny rule of that text
    covers — any part of a compound command, any command that cannot be read, a look-alike tool name
    (``BASH``, ``bash\u200b``) — so a guard misses nothing. The hook's allow or rewrite counts only for calls
    an allow rule of that text covers, exactly as allow rules compare (the tool name as written; every
    sub-command, or one allow rule per sub-command), so a hook for ``git`` commands cannot allow
    ``git status; rm -rf ~``; a text no allow rule may have (``mcp__*``) lets no allow stand.
    """

    text: str
    rules: tuple[RuleText, ...] | None  # None: every call
    allow_rules: tuple[RuleText, ...] = ()  # the texts read as allow rules, where one can be

    def names_tool(self, tool_name: str) -> bool:
        return self.rules is None or any(_tool_matches(rule, tool_name) for rule in self.rules)

    def applies(self, call: ToolCall) -> bool:
        """Whether the hook runs for the call (a deny rule of one of the texts would cover it)."""
        if self.rules is None:
            return True
        return any(
            _tool_matches(rule, call.name)
            and (rule.argument_pattern is None or rule.argument_pattern.matches(call.arguments, "deny"))
            for rule in self.rules
        )

    def lets_allow(self, call: ToolCall) -> bool:
        """Whether the hook's allow stands for the call: allow rules of the texts would cover it (one rule,
        or for a compound command one rule per sub-command, as allow rules combine)."""
        if self.rules is None:
            return True
        rules = [rule for rule in self.allow_rules if tool_pattern_matches(rule.tool_pattern, call.name)]
        if any(
            rule.argument_pattern is None or rule.argument_pattern.matches(call.arguments, "allow")
            for rule in rules
        ):
            return True
        commands = [
            (rule, rule.argument_pattern)
            for rule in rules
            if isinstance(rule.argument_pattern, CommandPattern)
        ]
        return bool(commands) and compound_allow(call.arguments, commands) is not None


def _tool_matches(rule: RuleText, tool_name: str) -> bool:
    """As a deny rule meets a tool name: exactly, or after folding."""
    pattern = rule.tool_pattern
    folded = fold_tool_name(tool_name)
    if isinstance(pattern, str):
        return pattern == tool_name or fold_tool_name(pattern) == folded
    return pattern.search(tool_name) is not None or pattern.search(folded) is not None


def read_matcher(
    value: object,
    field: str = "matcher",
    *,
    kinds: Mapping[str, ToolKind] | None = None,
    cwd: str | None = None,
    home: str | None = None,
) -> _Matcher:
    """A matcher: ``None``, ``""`` or ``"*"`` for every call; a rule text (a tool name, ``Bash(git *)``,
    ``Read(./src/**)``, ``mcp__server``); several joined by ``"|"`` (a bar inside a specifier's parentheses
    belongs to the specifier).

    Args:
        kinds: which tools are shell, path or URL tools, as for rule text (``parse_rule_text``).
        cwd: the folder relative path specifiers are read from, as for rule text.
        home: the folder ``~/`` names, as for rule text.

    Raises:
        TypeError: not a string or None.
        ValueError: an empty part between bars, a regex (matchers are rule text), or a rule text that
            cannot be read.
    """
    if value is None:
        return _Matcher("*", None)
    if not isinstance(value, str):
        raise TypeError(f'{field}: expected a rule text, "A|B" or "*"; got {preview(value)}')
    text = str.__str__(value)
    if text.strip() in ("", "*"):
        return _Matcher("*", None)
    parts = [part.strip() for part in _top_level_parts(text)]
    if not all(parts):
        raise ValueError(f'{field}: expected rule texts separated by "|", none empty; got {preview(value)}')
    rules: list[RuleText] = []
    allow_rules: list[RuleText] = []
    for part in parts:
        name = part.partition("(")[0]
        if _REGEX_IN_NAME.search(name):
            raise ValueError(
                f"{field}: expected rule text, not a regex (write mcp__server or mcp__server__* for an MCP "
                f'server\'s tools, "Edit|Write" for several tools); got {preview(value)}'
            )
        try:
            rules.append(parse_rule_text(part, "deny", kinds=kinds, cwd=cwd, home=home))
        except RuleTextError as error:
            raise ValueError(f"{field}: {error}") from None
        with contextlib.suppress(RuleTextError):  # no allow rule may have it: the hook's allow never stands
            allow_rules.append(parse_rule_text(part, "allow", kinds=kinds, cwd=cwd, home=home))
    return _Matcher(text, tuple(rules), tuple(allow_rules))


def _top_level_parts(text: str) -> list[str]:
    """The text split at each ``|`` outside parentheses (``Bash(a | b)|Read`` is two parts)."""
    parts: list[str] = []
    depth = 0
    start = 0
    for index, character in enumerate(text):
        if character == "(":
            depth += 1
        elif character == ")":
            depth = max(depth - 1, 0)
        elif character == "|" and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def read_timeout(value: object, field: str = "timeout") -> float:
    """A hook's timeout: seconds, more than 0 and at most ``MAX_HOOK_TIMEOUT``.

    Raises:
        TypeError: not a number (``True`` is not one).
        ValueError: out of range, or not finite.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{field}: expected a number of seconds; got {preview(value)}")
    if not 0 < value <= MAX_HOOK_TIMEOUT:  # NaN fails this too
        raise ValueError(
            f"{field}: expected seconds more than 0 and at most {MAX_HOOK_TIMEOUT:g}; got {preview(value)}"
        )
    return float(value)


def read_command(
    value: object, field: str = "command", *, shell: bool = False, base_dir: str | None = None
) -> tuple[str, tuple[str, ...]]:
    """A hook's command as written, and the program and arguments it runs.

    Without a shell, a string is split into words as a shell would split it, and nothing in it is
    expanded but ``$TOOL_INPUT``; a list is the program and its arguments as they are. A program path with a
    slash is found relative to ``base_dir`` when one is given (the policy file's folder). With ``shell``,
    the string is run by ``/bin/sh -c``.

    Raises:
        TypeError: not a string (or, without a shell, a list of strings).
        ValueError: empty, unbalanced quotes, or a shell variable other than ``$TOOL_INPUT`` without a shell.
    """
    if isinstance(value, str):
        text = str.__str__(value)
        if shell:
            if not text.strip():
                raise ValueError(f"{field}: expected a non-empty command; got {preview(value)}")
            return text, (_SHELL, "-c", text)
        try:
            words = split_words(text)
        except ValueError as error:  # an unterminated quote, a backslash at the end
            raise ValueError(
                f"{field}: expected a command that splits into words ({error}); got {preview(value)}"
            ) from None
    elif not shell and isinstance(value, Sequence) and all(isinstance(word, str) for word in value):
        words = [str.__str__(word) for word in value]
        text = join_words(words)
    else:
        expected = "a command string" if shell else "a command string or a list of strings"
        raise TypeError(f"{field}: expected {expected}; got {preview(value)}")
    if not words or not words[0]:
        raise ValueError(f"{field}: expected a non-empty command; got {preview(value)}")
    for word in words:
        for match in _VARIABLE.finditer(word):
            name = match.group(1) or match.group(2)
            if name != _TOOL_INPUT:
                raise ValueError(
                    f"{field}: expected no shell variable but $TOOL_INPUT (the command runs without a shell, "
                    f'so ${name} would reach the program as it is written; set "shell": true to expand it); '
                    f"got {preview(value)}"
                )
    program = words[0]
    if base_dir is not None and "/" in program and not os.path.isabs(program):
        program = os.path.join(base_dir, program)
    return text, (program, *words[1:])


# -- running ---------------------------------------------------------------------------------------------


@final
class CommandHook:
    """A PreToolUse hook that runs a program for each call its matcher applies to (seed 002, section 5).

    Exit 0 passes, unless standard output holds a JSON object ``{"action": "allow" | "deny" | "ask",
    "reason": "...", "arguments": {...}}``, which decides (``allow`` with ``arguments`` runs the call with
    those instead). Exit 2 blocks, with standard error as the reason. Anything else blocks with a reason that
    names the hook, and is logged on ``ask_permissions.hooks``.

    Immutable: one hook may run for many calls from many threads at once.

    Args:
        command: the command line (split into words as a shell splits them), or the program and its
            arguments as a list.
        matcher: which calls it runs for: ``None`` or ``"*"`` every call; a rule text (``"Bash"``,
            ``"Bash(git *)"``, ``"mcp__github"``), or several joined by ``"|"``. With a specifier the hook
            runs for every call a deny rule of that text covers, and its allow counts only for calls an
            allow rule of it covers (elsewhere the allow passes, and the rules decide).
        timeout: seconds before the hook's whole process group is killed and the call blocked.
        shell: run ``command`` with ``/bin/sh -c`` (its variables, pipes and globs expand).
        base_dir: the folder a relative program path (one with a slash) is found in; by default the
            policy's working folder.
        kinds: tool name → ``"shell"``, ``"path"`` or ``"url"`` (as for rule text), for the matcher's
            specifiers.
        cwd: the folder the matcher's relative path specifiers are read from (as for rule text).
        home: the folder ``~/`` names in the matcher's path specifiers.

    Raises:
        TypeError, ValueError: a bad command, matcher or timeout.
    """

    __slots__ = ("_argv", "_command", "_matcher", "_name", "_shell", "_timeout")

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        matcher: str | None = None,
        timeout: float = DEFAULT_HOOK_TIMEOUT,
        shell: bool = False,
        base_dir: str | os.PathLike[str] | None = None,
        kinds: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(shell, bool):
            raise TypeError(f"shell: expected true or false; got {preview(shell)}")
        folder = None if base_dir is None else os.fspath(base_dir)
        text, argv = read_command(command, shell=shell, base_dir=folder)
        self._command: Final = text
        self._argv: Final = argv
        self._name: Final = _shown(text)
        self._matcher: Final = read_matcher(
            matcher,
            kinds=read_kinds(kinds),
            cwd=None if cwd is None else os.fspath(cwd),
            home=None if home is None else os.fspath(home),
        )
        self._timeout: Final = read_timeout(timeout)
        self._shell: Final = shell

    @property
    def hook_id(self) -> str:
        """The command as written: what records (``rule_id``) and reasons name the hook by."""
        return self._command

    @property
    def matcher(self) -> str:
        """The matcher's text (``"*"`` for every call)."""
        return self._matcher.text

    @property
    def timeout(self) -> float:
        """Seconds the hook may take."""
        return self._timeout

    @property
    def shell(self) -> bool:
        """Whether the command runs with ``/bin/sh -c``."""
        return self._shell

    def __repr__(self) -> str:
        return f"<CommandHook {self._command!r} matcher={self.matcher!r} timeout={self._timeout:g}>"

    def matches(self, tool_name: str) -> bool:
        """Whether the hook may run for this tool (its matcher's specifiers are checked by ``run``)."""
        return self._matcher.names_tool(tool_name)

    def run(self, call: ToolCall, *, cwd: str, mode: str | None) -> PermissionCheck | None:
        """Run the program for one call its matcher applies to, and read its answer (``None`` for a call it
        does not apply to); never raises (a failure blocks the call)."""
        if not self._matcher.applies(call):
            return None
        answer = self._run(call, cwd, mode)
        if (
            answer is not None
            and answer.verdict in ("allow", "modify")
            and not (
                self._matcher.lets_allow(call)
                # A rewrite must stay inside the matcher too: a git hook may not turn git into curl.
                and (
                    answer.verdict == "allow"
                    or self._matcher.lets_allow(ToolCall(call.name, answer.arguments))
                )
            )
        ):
            _logger.info(
                "PreToolUse hook %s allowed a call its matcher %s does not wholly cover; the rules decide it",
                self._name,
                preview(self._matcher.text),
            )
            return None
        return answer

    def _run(self, call: ToolCall, cwd: str, mode: str | None) -> PermissionCheck | None:
        try:
            tool_input = _tool_input(call, cwd, mode)
            data = tool_input.encode("utf-8")
            if len(data) > MAX_TOOL_INPUT_BYTES:
                return self._failed(
                    f"the call is {len(data)} bytes as JSON, more than the {MAX_TOOL_INPUT_BYTES} a hook can "
                    "be given",
                    b"",
                )
            argv = self._argv if self._shell else _with_tool_input(self._argv, tool_input)
            environment = {**os.environ, _TOOL_INPUT: tool_input}
            ended = run_bounded(
                argv,
                stdin=data,
                environment=environment,
                cwd=cwd,
                timeout=self._timeout,
                max_stdout=MAX_HOOK_OUTPUT_BYTES,
                max_stderr=_STDERR_KEPT,
            )
            return self._answer(ended)
        except Exception as error:  # a hook must never fail open, whatever went wrong
            _logger.exception("PreToolUse hook %s could not be run", self._name)
            return self._failed(f"it could not be run ({type(error).__name__})", b"", logged=True)

    def _answer(self, ended: Ended) -> PermissionCheck | None:
        if ended.failure is not None:
            return self._failed(ended.failure, ended.stderr)
        status = ended.status
        if status == 0:
            return self._read_answer(ended.stdout, ended.stderr)
        if status == 2:
            reason = _trimmed(ended.stderr.decode("utf-8", "replace"))
            return PermissionCheck.deny(reason or f"Hook {self._name} blocked the call")
        if status is not None and status < 0:
            return self._failed(f"it was killed by {_signal_name(-status)}", ended.stderr)
        return self._failed(f"it exited with status {status}", ended.stderr)

    def _read_answer(self, stdout: bytes, stderr: bytes) -> PermissionCheck | None:
        try:
            text = stdout.decode("utf-8")
        except UnicodeDecodeError:
            return self._failed("its output is not UTF-8 text", stderr)
        if not text.strip():
            return None
        try:
            answer = json.loads(text, object_pairs_hook=_unique_keys)
        except (ValueError, RecursionError):  # a key given twice too: which one would it mean?
            return self._failed("its output is not JSON", stderr)
        if not isinstance(answer, dict):
            return self._failed("its output is not a JSON object", stderr)
        unknown = sorted(set(answer) - _ANSWER_KEYS)
        if unknown:
            return self._failed(
                f"its answer has unknown keys {unknown} (known: action, reason, arguments)", stderr
            )
        action = answer.get("action")
        if action not in _ACTIONS:
            return self._failed(
                f'its answer\'s action is {preview(action)}, not "allow", "deny" or "ask"', stderr
            )
        reason = answer.get("reason")
        if reason is not None and not isinstance(reason, str):
            return self._failed("its answer's reason is not a string", stderr)
        if "arguments" in answer and action != "allow":
            return self._failed(f'its answer gives arguments with "{action}" (only "allow" can)', stderr)
        reason = _trimmed(reason or "")
        if action == "allow":
            return (
                PermissionCheck.modify(answer["arguments"])
                if "arguments" in answer
                else PermissionCheck.allow()
            )
        if action == "deny":
            return PermissionCheck.deny(reason or f"Hook {self._name} denied the call")
        return PermissionCheck.ask(reason or None)

    def _failed(self, detail: str, stderr: bytes, *, logged: bool = False) -> PermissionCheck:
        """Fail closed: block with a reason naming the hook (what the model reads), and log why."""
        if not logged:
            written = stderr.decode("utf-8", "replace").strip()
            _logger.warning(
                "PreToolUse hook %s failed: %s%s",
                self._name,
                detail,
                f"; its standard error: {_trimmed(written)}" if written else "",
            )
        return PermissionCheck.deny(f"Hook {self._name} failed ({detail}), so the call is blocked")


def _tool_input(call: ToolCall, cwd: str, mode: str | None) -> str:
    """The call as the hook reads it: compact JSON, non-ASCII kept, any arguments written somehow."""
    payload = {
        "tool": call.name,
        "arguments": call.arguments,
        "tool_call_id": call.id,
        "cwd": cwd,
        "mode": mode,
    }
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        # A key json refuses, a container inside itself, nesting deeper than the C encoder goes.
        text = write_json(payload)
    return escape_surrogates(text)


def _with_tool_input(argv: tuple[str, ...], tool_input: str) -> tuple[str, ...]:
    """Each argument's ``$TOOL_INPUT`` replaced by the call's JSON (the argument stays one: nothing the model
    wrote is parsed by a shell)."""
    if not any("$" in word for word in argv[1:]):
        return argv
    return (argv[0], *(_TOOL_INPUT_WORD.sub(lambda match: tool_input, word) for word in argv[1:]))


def _shown(command: str) -> str:
    """The hook as reasons and the log name it: its command in backquotes, or a short repr of one that is
    long or holds characters that do not print."""
    if len(command) <= _SHOWN_CHARS and command.isprintable():
        return f"`{command}`"
    return preview(command)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    answer = dict(pairs)
    if len(answer) != len(pairs):
        raise ValueError("a key given twice")
    return answer


def _trimmed(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_HOOK_REASON_CHARS:
        return text
    return text[: MAX_HOOK_REASON_CHARS - 1].rstrip() + "…"


def _signal_name(number: int) -> str:
    try:
        return f"signal {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"
