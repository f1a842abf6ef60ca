"""The two readings of a command, worked out over its tree: what an allow may match, what deny and ask see.

The **plain reading** (``Reading.subcommands``, meaningful when ``understood``) is the word sequences of a
command that is only simple commands joined by ``&&``, ``||``, ``;``, ``|``, ``|&``, ``&`` and newlines,
with wrappers stripped and ``bash -c 'script'`` read as the script's commands: what
``docs/reference/rule-text.md`` says an allow matches. Anything else makes the command not understood, and
``why`` names the first such thing.

The **full reading** (``Reading.visible``) is every simple command anywhere: inside substitutions,
conditions, loops, case arms, function bodies, process substitutions, heredoc- and here-string-fed
scripts, behind launchers (``_programs.launch``), and in the command as a lenient tool would read it
(Unicode normalized, cut at a NUL). Deny and ask rules match it, and when it is not ``fully_read`` (past the
read limit, nested too deep, text outside the grammar, a launcher with too many candidates, a script another
program writes into a shell) they match whatever it holds.

What a shell runs from its input, or from the file the table says it runs (``bash FILE``, ``source FILE``),
is one model for a pipe, a process substitution, ``/dev/stdin`` and a descriptor: each command's input is an
``_Input``, the part of what the commands before it write (``_Reader.outputs``) that reaches it, and a shell
reads the text there as its script; output the reading cannot read leaves the command not fully read.

The literal reading may deny, never allow: nothing in the full reading ever makes a command understood.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple, TypeAlias, final
from typing import Literal as TypingLiteral

from ._characters import character_problem, cleaned
from ._parser import MAX_DEPTH, parse, parse_expansions, plain_word
from ._programs import Launch, launch
from ._tokens import RULES
from ._tree import (
    AnsiCQuoted,
    Arithmetic,
    ArithmeticCommand,
    ArithmeticFor,
    Assignment,
    BraceExpansion,
    Case,
    Command,
    CommandList,
    CommandSubstitution,
    Coproc,
    DoubleQuoted,
    Escaped,
    ExtGlob,
    ForLoop,
    FunctionDefinition,
    Glob,
    Group,
    IfCommand,
    Literal,
    Loop,
    NotUnderstood,
    Parameter,
    Part,
    Pipeline,
    ProcessSubstitution,
    Redirection,
    SimpleCommand,
    Subshell,
    TestCommand,
    Word,
)
from ._words import word_expands, word_may_name_any_program, word_stars, word_value

__all__ = [
    "READ_LIMIT",
    "ParsedCommand",
    "Reading",
    "Redirect",
    "ShellWord",
    "SubCommand",
    "command_words",
    "read_command",
]

READ_LIMIT: Final = 1024 * 1024
"""The longest command (in characters) that is read: a longer one is neither allowed nor blocked for its
length, but asks a person (see ``Reading.too_long``)."""

_MAX_LAUNCHED: Final = 256
"""How many launched commands (``sudo …``, ``find -exec …``) one simple command is read for; beyond that it
is not fully read, so deny and ask match it."""

_SCRIPT_SHELLS: Final = frozenset({"bash", "sh", "zsh"})
_SCRIPT_FLAGS: Final = frozenset({"-c", "-lc"})
_DECLARATIONS: Final = frozenset({"export", "declare", "typeset", "local", "readonly"})
_RUN_LATER: Final = {
    **dict.fromkeys(("PS0", "PS1", "PS2", "PS3", "PS4"), "expanded"),
    "PROMPT_COMMAND": "script",
    "BASH_ENV": "file",
    "ENV": "file",
}
"""Variables whose values bash uses later: prompts it expands (their substitutions run; ``PS4`` under
``set -x``), a command it runs before each prompt, a start-up file a new shell reads."""
_FEEDERS: Final = frozenset({"echo", "printf"})
"""Programs whose arguments are what they write: fed to a shell, their words are read as a script (unless
the shell or the program may change what they print: see ``_printed``)."""
_ECHO_OPTIONS: Final = re.compile(r"-[neE]+")
"""A word ``echo`` takes as its options (``-n``: no newline at the end)."""
_PASSERS: Final = frozenset({"cat"})
"""Programs that write what they read: given no file (only options, ``-`` and process substitutions), what
they write is what their input and those substitutions hold."""
_SILENT: Final = frozenset({":", "true", "false", "test", "[", "exit", "return", "shift", "unset", "wait"})
"""Builtins that write nothing to their standard output."""
_FIFO_MAKERS: Final = frozenset({"mkfifo", "mknod"})
"""Programs that make a named pipe: a file run in the same line may hold what another command writes."""

_InputKind: TypeAlias = TypingLiteral["terminal", "pipe", "process", "given", "file", "descriptor", "unknown"]


class _Input(NamedTuple):
    """Where a command's standard input, or a file it runs, comes from, and what the reading saw written
    there (``outputs[start:stop]`` of the reader).

    ``kind`` is one of: ``terminal``, the shell's own input (which ``exec <`` may wire anywhere in the
    line); ``pipe``, the commands before it in a pipeline; ``process``, a process substitution; ``given``, a
    heredoc or a here-string; ``file``, a file (what it holds at run time is not read, as for
    ``bash script.sh``); ``descriptor``, a descriptor (``<&3``, ``/dev/fd/3``), which the line may wire;
    ``unknown``, what a command read later writes (the input of a ``>( … )`` or of a coprocess).
    """

    kind: _InputKind
    start: int = 0
    stop: int = 0


_TERMINAL: Final = _Input("terminal")
_UNKNOWN: Final = _Input("unknown")
_WRITTEN_BY_ANOTHER: Final = frozenset({"pipe", "process", "descriptor", "unknown"})
"""Inputs another command writes: a shell or an interpreter that runs one runs what no check reads in full
(the safety checks ask for it even when the reading could read it)."""
_INPUT_RANK: Final[dict[_InputKind, int]] = {"given": 1, "file": 2, "descriptor": 3, "process": 4}
"""Of several input redirections, the one the reading keeps: the one another command may write (the
reading must not miss it)."""
_INPUT_OPERATORS: Final = frozenset({"<", "<>", "<&", "<<", "<<-", "<<<"})
_INPUT_PATH: Final = re.compile(r"(?:\A|=)/(?:dev/stdin|dev/fd/0|proc/[^/]*/fd/0)\Z")
"""A file operand that names the program's own standard input (``bash /dev/stdin``)."""
_DESCRIPTOR_PATH: Final = re.compile(r"(?:\A|=)/(?:dev/fd|proc/[^/]*/fd)/")
"""A file operand that names a descriptor (``bash /dev/fd/3``), which the line may have wired."""


def _holds_process(word: Word) -> bool:
    """Whether the word is, or holds, a process substitution (the file its output is read from)."""
    return any(type(part) is ProcessSubstitution for part in word.parts)


def _input_kind(redirection: Redirection) -> _InputKind | None:
    """What an input redirection gives (``None``: ``<&0``, which changes nothing)."""
    operator = redirection.operator
    target = redirection.target
    if operator in ("<<", "<<-", "<<<"):
        return "given"
    if operator == "<&":
        raw = target.text if target is not None else ""
        if raw == "0":
            return None
        return "given" if raw == "-" else "descriptor"
    if target is not None and _holds_process(target):
        return "process"
    return "file"


def _stronger(found: _Input | None, given: _Input) -> _Input:
    """The input the reading keeps of two redirections of one command (of one kind: what both hold)."""
    if found is None or _INPUT_RANK[given.kind] > _INPUT_RANK[found.kind]:
        return given
    if given.kind == found.kind:
        return _Input(found.kind, min(found.start, given.start), max(found.stop, given.stop))
    return found


def _printed(argv: Sequence[str], nodes: Sequence[Word | None]) -> str | None:
    """Exactly what ``echo WORDS`` or ``printf FORMAT`` prints, when the reading can tell: no word expands
    or holds a backslash escape or a ``printf`` directive (``%``; ``echo`` in ``sh`` reads escapes too), and
    ``printf`` has only its format; else ``None``: what it prints is not read."""
    for node in nodes[1:]:
        if node is not None and word_expands(node):
            return None
    words = list(argv[1:])
    for word in words:
        if "\\" in word or "%" in word:
            return None
    if posixpath.basename(argv[0]).casefold() == "echo":
        end = "\n"
        while words and _ECHO_OPTIONS.fullmatch(words[0]) is not None:
            if "n" in words.pop(0):
                end = ""
        return " ".join(words) + end
    if words and words[0] == "--":
        words.pop(0)
    if len(words) != 1 or words[0].startswith("-"):
        return None  # printf -v NAME prints nothing; arguments a format without directives may repeat
    return words[0]


def _passes(argv: Sequence[str], nodes: Sequence[Word | None]) -> bool:
    """Whether ``cat …`` writes only what its input and its process substitutions hold (it names no file)."""
    for index in range(1, len(argv)):
        node = nodes[index]
        word = argv[index]
        if not (word == "-" or word.startswith("-") or (node is not None and _holds_process(node))):
            return False
    return True


@final
@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection of a simple command.

    Attributes:
        fd: the descriptor written before the operator (2 in ``2>x``), else ``None``.
        operator: one of ``>`` ``>>`` ``<`` ``<>`` ``>|`` ``>&`` ``<&`` ``&>`` ``&>>`` ``<<`` ``<<-`` ``<<<``.
        target: the target's value, quotes removed (``None`` for a heredoc; ``<&-`` has ``"-"``).
        target_expands: the target holds an expansion, glob, brace or tilde the shell works out.
        body: a heredoc's body (a here-string's value is ``target``).
    """

    fd: int | None
    operator: str
    target: str | None
    target_expands: bool
    body: str | None = None


@final
@dataclass(frozen=True, slots=True)
class SubCommand:
    """One simple command of a command line, as specifiers match it.

    Attributes:
        text: the command as written (for display).
        words: its argument vector after the leading assignments and wrappers: what specifiers match. A
            word the shell expands keeps its source text in place (``"$HOME/x"`` is ``$HOME/x``).
        assignments: leading ``NAME=value`` words (an allow never matches a command that has any).
        wrappers: the wrapper words stripped before ``words`` (``("timeout", "5")``).
        appends_arguments: it runs under a bare ``xargs``, so with more arguments than written.
        name_is_glob: the command name may be any program (a glob, braces, an expansion, a substitution), so
            deny and ask specifiers meet it.
        expanding: per word of ``words``, whether the shell may change it; empty when none may.
        redirects: its redirections, in order.
    """

    text: str
    words: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
    appends_arguments: bool = False
    name_is_glob: bool = False
    expanding: tuple[bool, ...] = ()
    redirects: tuple[Redirect, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class Reading:
    """A command line read two ways: the plain reading an allow matches, the full one deny and ask see.

    Attributes:
        text: the command line.
        subcommands: the simple commands it runs, in order (the plain reading); a ``bash -c`` script counts
            as the commands in it. Only meaningful for allowing when ``understood``.
        visible: every command deny and ask specifiers look at (the full reading).
        understood: whether the command is within the plain reading, so that an allow may match it.
        why: what was not understood (the first thing found), or ``None``.
        fully_read: whether everything it may run was read; when not (past the read limit, nested too
            deeply, text outside the grammar, a launcher with too many candidate commands), deny and ask
            specifiers match it.
        too_long: it is longer than ``READ_LIMIT`` and was not read at all (the policies ask a person).
        unparsed: what the grammar did not cover (a syntax error such as an unterminated quote: the reading
            stopped there), or ``None``; a bound reached (nesting, the read limit) is not named here.
        piped_script: a shell or an interpreter runs what another command writes: through a pipe
            (``curl … | bash``), a process substitution given as its input or as the file it runs
            (``bash <(curl …)``, ``source <(…)``, ``sh < <(…)``), or a descriptor wired to one
            (``exec 3< <(…); bash <&3``). What ``echo``, ``printf``, heredocs and ``cat`` of those write
            there is read as the script; anything else no check can read, and the command is then not
            ``fully_read``.
    """

    text: str
    subcommands: tuple[SubCommand, ...]
    visible: tuple[SubCommand, ...]
    understood: bool
    why: str | None
    fully_read: bool = True
    too_long: bool = False
    unparsed: str | None = None
    piped_script: bool = False


ParsedCommand = Reading
"""The former name of ``Reading``."""


@final
@dataclass(frozen=True, slots=True)
class ShellWord:
    """A word of a specifier: its value after quote removal and where its unquoted ``*`` are."""

    value: str
    stars: tuple[int, ...] = ()


# -- the plain reading's rules for words, names and redirections ------------------------------------------

_NAME_REFUSED_STARTS: Final = ("{", "}", "!", "\\", "]", "'", '"')
_ODD_WORD: Final = re.compile(r"[{}]\Z|==|=~|[0-9]+#\Z")
"""A lone brace, a word starting with ``==`` or ``=~``, or a base number's prefix (``16#``)."""


def _name_problem(word: Word) -> str | None:
    """Refuse command names that a shell may expand, or that other parsers read as syntax."""
    raw = word.text
    if any(isinstance(part, Glob) for part in word.parts):
        return f"a pattern {raw!r} as the command name"
    if raw.startswith("="):
        return f"the command name {raw!r} (zsh expands a leading '=')"
    if raw.startswith(_NAME_REFUSED_STARTS) or "#" in raw:
        return f"the command name {raw!r}"
    return None


def _word_problem(word: Word) -> str | None:
    """The plain reading refuses words that tree-sitter-bash reads unlike bash (see the differential test)."""
    raw = word.text
    if _ODD_WORD.match(raw) is not None:
        return "a lone brace" if raw in ("{", "}") else f"the word {raw!r}"
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is not Escaped:
        return None
    previous: Part | None = None
    for part in parts:
        if isinstance(part, Escaped):
            if part.char == "\t":
                return "an escaped blank at the start of a word or after a quote"
            if part.char == " " and not (
                isinstance(previous, Literal) and previous.text[-1:] not in ("{", "}", "]")
            ):
                return "an escaped blank at the start of a word or after a quote"
            if part.char in ("$", "`"):
                return f"an escaped {part.char!r}"
        previous = part
    return None


_HARMLESS_TARGETS: Final = {
    ">": "/dev/null",
    ">>": "/dev/null",
    "&>": "/dev/null",
    "&>>": "/dev/null",
}


def _redirect_problem(redirection: Redirection) -> str | None:
    """Only redirections to /dev/null and between stdout and stderr are in the plain reading."""
    operator = redirection.operator
    if operator in ("<<", "<<-"):
        return "a heredoc"
    target = redirection.target
    raw = target.text if target is not None else ""
    fd = redirection.fd
    if redirection.fd_variable is None:
        if operator in (">", ">>") and fd in (None, 1, 2) and raw == "/dev/null":
            return None
        if operator in ("&>", "&>>") and fd is None and raw == "/dev/null":
            return None
        if operator == ">&" and fd in (None, 1, 2) and raw in ("1", "2"):
            return None
    written = redirection.text.split(operator, 1)[0]
    return f"a redirection {written}{operator}{raw}"


def _assignment_value(assignment: Assignment) -> str:
    sign = "+=" if assignment.append else "="
    if assignment.value is None:
        return assignment.text
    return assignment.name + sign + word_value(assignment.value)


def _redirect(redirection: Redirection) -> Redirect:
    heredoc = redirection.heredoc
    if heredoc is not None or redirection.operator in ("<<", "<<-"):
        return Redirect(redirection.fd, redirection.operator, None, False, heredoc.body if heredoc else "")
    target = redirection.target
    assert target is not None
    return Redirect(redirection.fd, redirection.operator, word_value(target), word_expands(target))


def _trailing_backslash(text: str) -> bool:
    stripped = text.rstrip("\\")
    return (len(text) - len(stripped)) % 2 == 1


@functools.lru_cache(maxsize=4096)
def _launch_cached(argv: tuple[str, ...]) -> Launch:
    return launch(argv)


def _launch(argv: list[str]) -> Launch:
    """``launch(argv)``, kept for short argument vectors (it is a function of them alone)."""
    if len(argv) <= 16 and sum(map(len, argv)) <= 512:
        return _launch_cached(tuple(argv))
    return launch(argv)


@final
class _Command:
    """A simple command as the readings take it: its text, argument vector (values) and the words they
    come from (``None`` for ``time`` read as a wrapper), its assignments and redirections; ``plain`` when
    every word is plain text (nothing in it expands). Private, made per command: not a value object."""

    __slots__ = ("argv", "assignments", "nodes", "plain", "redirects", "text")

    def __init__(
        self,
        text: str,
        argv: list[str],
        nodes: list[Word | None],
        assignments: tuple[str, ...],
        redirects: tuple[Redirect, ...],
        *,
        plain: bool = False,
    ) -> None:
        self.text = text
        self.argv = argv
        self.nodes = nodes
        self.assignments = assignments
        self.redirects = redirects
        self.plain = plain


# -- the reader -------------------------------------------------------------------------------------------


@final
class _Reader:
    """Reads one command line's tree into both readings (not shared between threads)."""

    __slots__ = (
        "blind",
        "comments",
        "input",
        "later",
        "makes_fifo",
        "opaque",
        "outputs",
        "piped",
        "problems",
        "processes",
        "runs_file",
        "unparsed",
        "visible",
        "wired",
        "wired_input",
        "wired_other",
    )

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.visible: list[SubCommand] = []
        self.blind = False  # not fully read: deny and ask match
        self.comments = 0
        # What the commands read so far write, in order: the text the reading can read (heredoc bodies, what
        # echo and printf print; ``None`` once read as a script, each at most once), and at the indexes in
        # ``opaque`` what it cannot (any other program's output, an expansion's value).
        self.outputs: list[str | None] = []
        self.opaque: list[int] = []
        self.input: _Input = _TERMINAL  # where the commands being read take their standard input from
        self.processes: dict[int, tuple[int, int]] = {}  # id of a process substitution: what it writes
        # What the descriptors the line wires hold (outputs[start:stop], and whether a process substitution
        # fills it), and who runs the shell's input or a descriptor (its kind, and whether it is a shell):
        # settled once the whole line is read, since exec may wire them anywhere in it.
        self.wired: list[tuple[int, int, bool]] = []
        self.wired_input = False  # exec wires the shell's own input
        self.wired_other = False  # ... another descriptor
        self.later: list[tuple[_InputKind, bool]] = []
        self.piped = False  # a shell or an interpreter runs what another command writes
        self.makes_fifo = False
        self.runs_file = False  # a shell or an interpreter runs a file (or reads one as its input)
        self.unparsed: str | None = None  # the first text outside the grammar, in what surely runs

    def problem(self, why: str) -> None:
        self.problems.append(why)

    def reading(self, text: str, subcommands: Sequence[SubCommand]) -> Reading:
        """The reading of ``text``, once its plain sub-commands are ``subcommands``."""
        why = self.problems[0] if self.problems else None
        return Reading(
            text,
            tuple(subcommands),
            tuple(self.visible),
            understood=why is None,
            why=why,
            fully_read=not self.blind,
            unparsed=self.unparsed,
            piped_script=self.piped,
        )

    def read_line(self, text: str) -> list[SubCommand]:
        """The sub-commands of a whole command line: its script, then what the descriptors it wires hold."""
        found = self.read_script(text, 0, plain=True, strict=True)
        self.settle_inputs()
        return found

    # -- what runs what others write ------------------------------------------------------------------

    def output(self, text: str | None) -> None:
        """Note what a command writes: its text when the reading can read it, else ``None``."""
        if text is None:
            self.opaque.append(len(self.outputs))
        self.outputs.append(text)

    def unread(self) -> None:
        """A shell or an interpreter runs what another command writes and the reading did not see: deny and
        ask match the command (fail closed), and the safety checks ask."""
        self.blind = True
        self.piped = True

    def run(self, source: _Input, *, shell: bool, depth: int) -> None:
        """A shell (``shell``) or an interpreter runs what ``source`` holds: a shell script the reading saw
        written is read as one; what it did not see fails closed."""
        kind = source.kind
        if kind in _WRITTEN_BY_ANOTHER:
            self.piped = True
        if kind in ("terminal", "descriptor"):
            self.later.append((kind, shell))
        elif kind == "file":
            self.runs_file = True
        elif kind == "unknown":
            self.unread()
        else:
            self.read_outputs(source.start, source.stop, shell=shell, depth=depth)

    def read_outputs(self, start: int, stop: int, *, shell: bool, depth: int) -> None:
        """What ``outputs[start:stop]`` holds is run: unread output fails closed; a shell's script is read
        (an interpreter's code is not: it is no shell)."""
        opaque = self.opaque
        index = bisect.bisect_left(opaque, start)
        if index < len(opaque) and opaque[index] < stop:
            self.unread()
        if not shell:
            return
        # One stream, as the shell reads it: a quote one command opens another may close.
        outputs = self.outputs
        script: list[str] = []
        for index in range(start, stop):
            output = outputs[index]
            if output is not None:
                outputs[index] = None
                script.append(output)
        if script:
            self.read_script("".join(script), depth + 1, plain=False, strict=False)

    def settle_inputs(self) -> None:
        """Shells and interpreters that run the shell's own input or a descriptor (``<&3``, ``/dev/fd/3``)
        run what the line wires to descriptors (``exec 3< <( … )``, ``exec < <( … )``, ``{ …; } 3<<EOF``),
        wherever it stands in the line. The agent's own input when the line does not wire it (``bash``,
        ``bash /dev/stdin``, ``python3 -``), a descriptor the line does not wire, and a file run in a line
        that makes a named pipe (``mkfifo p; … bash p``) hold what no check read."""
        if self.runs_file and self.makes_fifo:
            self.unread()
        later = self.later
        if not later:
            return
        kinds = {kind for kind, _ in later}
        if ("terminal" in kinds and not self.wired_input) or ("descriptor" in kinds and not self.wired_other):
            self.unread()  # the agent's own input, or a descriptor it was given: no check reads either
        wired = self.wired
        index = 0
        while index < len(wired):  # reading one may wire more, and add runners
            start, stop, process = wired[index]
            index += 1
            if process:
                self.piped = True
            self.read_outputs(start, stop, shell=any(shell for _, shell in later), depth=0)

    def file_source(self, node: Word | None, value: str) -> _Input:
        """Where the content of a file a program runs comes from: a process substitution (what the reading
        saw it write), the program's own input (``/dev/stdin``), a descriptor (``/dev/fd/3``), or a file."""
        if node is not None:
            regions = [
                self.processes[id(part)]
                for part in node.parts
                if type(part) is ProcessSubstitution and id(part) in self.processes
            ]
            if regions:
                return _Input("process", min(start for start, _ in regions), max(stop for _, stop in regions))
        if "/" in value:
            if _INPUT_PATH.search(value) is not None:
                return self.input
            if _DESCRIPTOR_PATH.search(value) is not None:
                return _Input("descriptor")
        return _Input("file")

    def run_inputs(self, command: _Command, started: Launch, *, any_program: bool, depth: int) -> None:
        """What a shell or an interpreter runs besides its words: its input, and the files the table says it
        runs (a process substitution there is read as a pipe into it is)."""
        shell = started.runs_input or any_program  # a name the shell works out may be a shell
        if shell or started.runs_code_input:
            self.run(self.input, shell=shell, depth=depth)
        for files, of_shell in ((started.runs_files, True), (started.runs_code_files, False)):
            for index in files:
                source = self.file_source(command.nodes[index], command.argv[index])
                self.run(source, shell=of_shell, depth=depth)

    # -- lists ----------------------------------------------------------------------------------------

    def read_script(self, text: str, depth: int, *, plain: bool, strict: bool) -> list[SubCommand]:
        """The sub-commands of a script (a command line, a ``bash -c`` script, a launcher's script)."""
        if depth > MAX_DEPTH:
            self.blind = True
            if plain:
                self.problem("commands nested too deeply to read")
            return []
        tree = parse(text, depth)
        if depth == 0:
            self.comments += tree.comments
        if plain and _trailing_backslash(text):
            self.problem("a trailing backslash")
        return self.read_list(tree, depth, plain=plain, strict=strict)

    def read_list(self, body: CommandList, depth: int, *, plain: bool, strict: bool) -> list[SubCommand]:
        found: list[SubCommand] = []
        for item in body.items:
            for pipeline in item.pipelines:
                found.extend(self.read_pipeline(pipeline, depth, plain=plain, strict=strict))
        return found

    def read_pipeline(self, pipeline: Pipeline, depth: int, *, plain: bool, strict: bool) -> list[SubCommand]:
        if plain and pipeline.negated:
            self.problem("the shell keyword '!'")
        commands = pipeline.commands
        if not commands:
            if plain:
                self.problem("the shell keyword 'time' with no command" if pipeline.timed else "a lone '!'")
            return []
        found: list[SubCommand] = []
        outer = self.input
        start = len(self.outputs)
        for index, command in enumerate(commands):
            prefix: tuple[str, ...] = ()
            if pipeline.timed and index == 0:
                prefix = ("time", "-p") if pipeline.posix_time else ("time",)
            if index:
                # What the commands before it write (through the ones that pass it on) is its input.
                self.input = _Input("pipe", start, len(self.outputs))
            found.extend(self.read_command(command, depth, plain=plain, strict=strict, prefix=prefix))
        self.input = outer
        return found

    def read_command(
        self, command: Command, depth: int, *, plain: bool, strict: bool, prefix: tuple[str, ...] = ()
    ) -> list[SubCommand]:
        if isinstance(command, SimpleCommand):
            return self.read_simple(command, depth, plain=plain, strict=strict, prefix=prefix)
        if isinstance(command, NotUnderstood):
            if plain:
                self.problem(command.why)
            if strict or command.too_deep:
                self.blind = True
            if strict and not command.too_deep and self.unparsed is None:
                self.unparsed = command.why
            return []
        if plain:
            self.problem(_compound_problem(command))
        inner = depth + 1
        redirects: tuple[Redirection, ...] = getattr(command, "redirects", ())
        outer = self.input
        read: tuple[Redirect, ...] = ()
        if redirects:
            # Read before the body, as bash sets them up: what runs inside reads the command's input.
            read, given = self.read_redirects(redirects, inner, plain=False, strict=strict)
            if given is not None:
                self.input = given
        if isinstance(command, Coproc):
            self.input = _UNKNOWN  # a coprocess reads what later commands write to it
        self.read_body(command, inner, strict=strict)
        self.input = outer
        if redirects:
            text = " ".join(redirection.text for redirection in redirects)
            self.visible.append(SubCommand(text, (), redirects=read))
        return []

    def read_body(self, command: Command, inner: int, *, strict: bool) -> None:
        """The commands inside a compound command, for the full reading."""
        if isinstance(command, Subshell | Group):
            self.read_list(command.body, inner, plain=False, strict=strict)
        elif isinstance(command, IfCommand):
            for condition, body in command.clauses:
                self.read_list(condition, inner, plain=False, strict=strict)
                self.read_list(body, inner, plain=False, strict=strict)
            if command.otherwise is not None:
                self.read_list(command.otherwise, inner, plain=False, strict=strict)
        elif isinstance(command, Loop):
            self.read_list(command.condition, inner, plain=False, strict=strict)
            self.read_list(command.body, inner, plain=False, strict=strict)
        elif isinstance(command, ForLoop):
            for word in command.words or ():
                self.read_parts(word.parts, inner, plain=False, strict=strict)
            self.read_list(command.body, inner, plain=False, strict=strict)
        elif isinstance(command, ArithmeticFor):
            for clause in command.clauses:
                self.read_parts(clause.parts, inner, plain=False, strict=strict)
            self.read_list(command.body, inner, plain=False, strict=strict)
        elif isinstance(command, Case):
            self.read_parts(command.subject.parts, inner, plain=False, strict=strict)
            for arm in command.arms:
                for pattern in arm.patterns:
                    self.read_parts(pattern.parts, inner, plain=False, strict=strict)
                if arm.body is not None:
                    self.read_list(arm.body, inner, plain=False, strict=strict)
        elif isinstance(command, TestCommand):
            for word in command.words:
                self.read_parts(word.parts, inner, plain=False, strict=strict)
        elif isinstance(command, ArithmeticCommand):
            self.read_parts(command.expression.parts, inner, plain=False, strict=strict)
        elif isinstance(command, FunctionDefinition):
            self.read_command(command.body, inner, plain=False, strict=strict)
        else:
            assert isinstance(command, Coproc)
            self.read_command(command.command, inner, plain=False, strict=strict)

    # -- simple commands ------------------------------------------------------------------------------

    def read_redirects(
        self,
        redirections: Sequence[Redirection],
        depth: int,
        *,
        plain: bool,
        strict: bool,
        wires: bool = False,
    ) -> tuple[tuple[Redirect, ...], _Input | None]:
        """The redirections of a command (``wires``: of ``exec``, whose redirections stay for the rest of
        the shell), with the commands in their targets and heredoc bodies read, and the standard input they
        give it (``None``: they leave it as it is)."""
        found: list[Redirect] = []
        source: _Input | None = None
        for redirection in redirections:
            if plain:
                problem = _redirect_problem(redirection)
                if problem is not None:
                    self.problem(problem)
            start = len(self.outputs)
            heredoc = redirection.heredoc
            target = redirection.target
            operator = redirection.operator
            if heredoc is not None:
                self.read_parts(heredoc.parts, depth, plain=False, strict=strict)
                self.output(heredoc.body)
                if any(type(part) is not Literal for part in heredoc.parts):
                    self.output(None)  # what its expansions give is part of what it holds
            elif target is not None:
                self.read_parts(target.parts, depth, plain=False, strict=strict)
                if operator == "<<<":
                    # A here-string is a shell's script when a shell reads it (bash <<< 'rm -rf x').
                    value = word_value(target)
                    self.read_script(value, depth + 1, plain=False, strict=False)
                    start = len(self.outputs)  # what its commands would write is not what it holds
                    self.output(value + "\n")
                    if word_expands(target):
                        self.output(None)
            kind = _input_kind(redirection) if operator in _INPUT_OPERATORS else None
            if kind is not None:
                given = _Input(kind, start, len(self.outputs))
                if wires or redirection.fd_variable is not None or (redirection.fd or 0) > 2:
                    # A descriptor wired for whatever reads it later (exec 3< <(…), {fd}<<EOF, … 3< <(…)).
                    self.wired.append((given.start, given.stop, kind == "process"))
                    if redirection.fd in (None, 0) and redirection.fd_variable is None:
                        self.wired_input = True
                    else:
                        self.wired_other = True
                if redirection.fd in (None, 0) and redirection.fd_variable is None:
                    source = _stronger(source, given)
            found.append(_redirect(redirection))
        return tuple(found), source

    def read_simple(
        self, command: SimpleCommand, depth: int, *, plain: bool, strict: bool, prefix: tuple[str, ...]
    ) -> list[SubCommand]:
        words = command.words
        argv = list(prefix)
        nodes: list[Word | None] = [None] * len(prefix)
        nodes.extend(words)
        simple = not (command.assignments or command.redirects)
        if simple:
            for word in words:
                parts = word.parts
                if len(parts) != 1 or type(parts[0]) is not Literal or "$" in word.text:
                    simple = False
                    break
        redirects: tuple[Redirect, ...] = ()
        given: _Input | None = None
        if simple:
            argv.extend(word.text for word in words)  # plain words: their text is their value
        else:
            for assignment in command.assignments:
                if assignment.value is not None:
                    self.read_parts(assignment.value.parts, depth, plain=plain, strict=strict)
                for element in assignment.array or ():
                    self.read_parts(element.parts, depth, plain=plain, strict=strict)
                if plain and assignment.array is not None:
                    self.problem(f"an array assignment {assignment.name}=( … )")
            for word in words:
                parts = word.parts
                if len(parts) != 1 or type(parts[0]) is not Literal or "$" in word.text:
                    self.read_parts(parts, depth, plain=plain, strict=strict)
            argv.extend(word_value(word) for word in words)
            wires = len(argv) > len(prefix) and argv[len(prefix)] == "exec"
            redirects, given = self.read_redirects(
                command.redirects, depth, plain=plain, strict=strict, wires=wires
            )
        if plain:
            for word in words:
                problem = _word_problem(word)
                if problem is not None:
                    self.problem(problem)
        assignments = tuple(_assignment_value(assignment) for assignment in command.assignments)
        self.read_later(assignments, argv[len(prefix) :], depth)
        command_read = _Command(command.text, argv, nodes, assignments, redirects, plain=simple)
        outer = self.input
        if given is not None:
            self.input = given
        found = self.read_argv(command_read, depth, plain=plain, strict=strict, launched=set(), origin=0)
        self.input = outer
        return found

    def read_later(self, assignments: Sequence[str], argv: Sequence[str], depth: int) -> None:
        """What bash runs later from a value given now: a prompt it expands (``PS4='$(…)'``, its
        substitutions run), a command it runs (``PROMPT_COMMAND``, an ``alias``), a start-up file it reads
        (``BASH_ENV``: no one can read it here, so the command is not fully read)."""
        given: list[tuple[str, str | None]] = [(text, None) for text in assignments]
        if argv and argv[0] in _DECLARATIONS:
            given.extend((word, None) for word in argv[1:] if "=" in word)
        elif argv and argv[0] == "alias":
            given.extend((word, "script") for word in argv[1:] if "=" in word)
        for text, given_use in given:
            name, _, value = text.partition("=")
            use = given_use or _RUN_LATER.get(name.rstrip("+"))
            if use == "expanded":
                self.read_parts(parse_expansions(value, depth + 1), depth + 1, plain=False, strict=False)
            elif use == "script":
                self.read_script(value, depth + 1, plain=False, strict=False)
            elif use == "file":
                self.blind = True

    def read_argv(
        self,
        command: _Command,
        depth: int,
        *,
        plain: bool,
        strict: bool,
        launched: set[tuple[int, int]],
        origin: int,
    ) -> list[SubCommand]:
        """One simple command's readings from its argument vector (``origin``: where it starts in the
        argument vector of the command it was launched from, for reading each launched command once)."""
        argv = command.argv
        if not argv:
            sub = SubCommand(command.text, (), command.assignments, redirects=command.redirects)
            self.visible.append(sub)
            if plain and not command.assignments:
                self.problem("a redirection with no command")
            return [sub]
        started = _launch(argv)
        wrapped = started.wrapped
        if wrapped >= len(argv):
            if plain:
                self.problem(f"the wrapper {argv[0]!r} with no command")
            sub = SubCommand(command.text, tuple(argv), command.assignments, redirects=command.redirects)
            self.visible.append(sub)
            return [sub]
        if plain:
            self.check_names(command.nodes[0], command.nodes[wrapped])
        sub = self.subcommand(command, started, depth)
        found = [sub]
        rest = sub.words
        name = rest[0].rpartition("/")[2].casefold()
        if started.appends_arguments:
            self.output(None)  # xargs gives it words its input holds
        elif name in _FEEDERS:
            if len(rest) > 1:
                self.output(_printed(rest, command.nodes[wrapped:]))  # should a shell be fed what it prints
        elif name in _PASSERS:
            if not _passes(rest, command.nodes[wrapped:]):
                self.output(None)  # a file's content
        elif name not in _SILENT and started.script_only is None:  # (a script's commands write for it)
            self.output(None)  # what it writes is not read
        if name in _FIFO_MAKERS:
            self.makes_fifo = True
        if len(rest) >= 2 and rest[0] in _SCRIPT_SHELLS and rest[1] in _SCRIPT_FLAGS:
            found = self.read_shell_script(command, started, depth, plain=plain)
        for start, end in started.commands:
            key = (origin + start, origin + end)
            if key in launched:
                continue  # another launcher word already led to it
            launched.add(key)
            if len(launched) > _MAX_LAUNCHED or depth + 1 > MAX_DEPTH:
                self.blind = True
                continue
            inner = _Command(command.text, argv[start:end], command.nodes[start:end], (), ())
            self.read_argv(
                inner, depth + 1, plain=False, strict=False, launched=launched, origin=origin + start
            )
        for script in started.scripts:
            self.read_script(script.text(argv), depth + 1, plain=False, strict=False)
        return found

    def check_names(self, first: Word | None, name: Word | None) -> None:
        """The plain reading's rules for the first word and the command name (after wrappers)."""
        for node in (first,) if first is name else (first, name):
            problem = None if node is None else _name_problem(node)
            if problem is not None:
                self.problem(problem)

    def subcommand(self, command: _Command, started: Launch, depth: int) -> SubCommand:
        """The sub-command a simple command is (after its wrappers), made visible with its other readings."""
        argv = command.argv
        nodes = command.nodes
        wrapped = started.wrapped
        if wrapped:
            self.visible.append(
                SubCommand(command.text, tuple(argv), command.assignments, redirects=command.redirects)
            )
        name_is_glob = False
        expanding: tuple[bool, ...] = ()
        if not command.plain:
            name = nodes[wrapped]
            name_is_glob = name is not None and word_may_name_any_program(name)
            expanding = tuple(node is not None and word_expands(node) for node in nodes[wrapped:])
            if True not in expanding:
                expanding = ()
        if started.unreadable:
            self.blind = True
        sub = SubCommand(
            command.text,
            tuple(argv[wrapped:]),
            command.assignments,
            tuple(argv[:wrapped]),
            started.appends_arguments,
            name_is_glob,
            expanding,
            command.redirects,
        )
        self.visible.append(sub)
        any_program = name_is_glob or started.unreadable
        if (
            any_program
            or started.runs_input
            or started.runs_code_input
            or started.runs_files
            or started.runs_code_files
        ):  # (most commands run nothing of this: the common case stays quick)
            self.run_inputs(command, started, any_program=any_program, depth=depth)
        return sub

    def read_shell_script(
        self, command: _Command, started: Launch, depth: int, *, plain: bool
    ) -> list[SubCommand]:
        """``bash -c 'script'``: the script is what runs; the shell is one more reading for deny and ask."""
        rest = command.argv[started.wrapped :]
        if plain and len(rest) != 3:
            self.problem(f"{rest[0]} {rest[1]} with arguments after the script")
        if plain and started.appends_arguments:
            self.problem(f"a shell under xargs ({rest[0]} {rest[1]})")
        if started.script_only is None:
            return []
        found = self.read_script(command.argv[started.script_only], depth + 1, plain=plain, strict=True)
        if plain and not found:
            self.problem(f"an empty {rest[0]} {rest[1]} script")
        assignments = command.assignments
        if assignments:
            found = [
                dataclasses.replace(inner, assignments=assignments + inner.assignments) for inner in found
            ]
        return found

    # -- words ----------------------------------------------------------------------------------------

    def read_parts(self, parts: Sequence[Part], depth: int, *, plain: bool, strict: bool) -> None:
        """The expansions and substitutions inside a word's parts: the commands they run are visible."""
        for part in parts:
            kind = type(part)
            if kind is Literal:
                if plain and "$" in part.text:  # type: ignore[union-attr]  # a Literal
                    self.problem("a '$'")
            elif kind is DoubleQuoted:
                if plain and part.locale:  # type: ignore[union-attr]  # a DoubleQuoted
                    self.problem('a locale quote $" … "')
                self.read_parts(part.parts, depth, plain=plain, strict=strict)  # type: ignore[union-attr]
            elif kind is AnsiCQuoted:
                if plain:
                    self.problem("an ANSI-C quote $' … '")
            elif kind is Parameter:
                assert isinstance(part, Parameter)
                if plain:
                    self.problem(
                        "a parameter expansion ${ … }"
                        if part.braced
                        else f"a parameter expansion {part.text}"
                    )
                if part.subscript is not None:
                    self.read_parts(part.subscript.parts, depth + 1, plain=False, strict=strict)
                for word in part.words:
                    self.read_parts(word.parts, depth + 1, plain=False, strict=strict)
            elif kind is CommandSubstitution:
                assert isinstance(part, CommandSubstitution)
                if plain:
                    self.problem(
                        "a command substitution ` … `" if part.backtick else "a command substitution $(…)"
                    )
                self.read_list(part.body, depth + 1, plain=False, strict=strict)
            elif kind is ProcessSubstitution:
                assert isinstance(part, ProcessSubstitution)
                if plain:
                    self.problem(f"a process substitution {part.direction}( … )")
                outer = self.input
                if part.direction == ">":
                    self.input = _UNKNOWN  # its commands read what the command it stands in writes
                start = len(self.outputs)
                self.read_list(part.body, depth + 1, plain=False, strict=strict)
                self.processes[id(part)] = (start, len(self.outputs))
                self.input = outer
            elif kind is Arithmetic:
                if plain:
                    self.problem("an arithmetic expansion $(( … ))")
                self.read_parts(part.parts, depth + 1, plain=False, strict=strict)  # type: ignore[union-attr]
            elif kind is BraceExpansion:
                if plain:
                    self.problem("a brace expansion { … }")
                self.read_parts(part.parts, depth, plain=False, strict=strict)  # type: ignore[union-attr]
            elif kind is ExtGlob:
                assert isinstance(part, ExtGlob)
                if plain:
                    self.problem(f"an extended glob {part.operator}( … )")
                self.read_parts(part.parts, depth + 1, plain=False, strict=strict)
                for code in _zsh_qualifier_code(part):
                    self.read_script(code, depth + 1, plain=False, strict=False)


def _compound_problem(command: Command) -> str:
    """What the plain reading calls a compound command."""
    if isinstance(command, Subshell):
        return "a subshell ( … )"
    if isinstance(command, Group):
        return "a command group { … }"
    if isinstance(command, IfCommand):
        return "the shell keyword 'if'"
    if isinstance(command, Loop):
        return "the shell keyword 'until'" if command.until else "the shell keyword 'while'"
    if isinstance(command, ForLoop):
        return "the shell keyword 'select'" if command.select else "the shell keyword 'for'"
    if isinstance(command, ArithmeticFor):
        return "the shell keyword 'for'"
    if isinstance(command, Case):
        return "the shell keyword 'case'"
    if isinstance(command, TestCommand):
        return "the shell keyword '[['"
    if isinstance(command, ArithmeticCommand):
        return "an arithmetic command (( … ))"
    if isinstance(command, FunctionDefinition):
        return f"a function definition {command.name}()"
    return "the shell keyword 'coproc'"


def _zsh_qualifier_code(part: ExtGlob) -> list[str]:
    """Code that zsh runs for glob qualifiers read from the same text: ``*(e:code:)`` (any delimiter, the
    code read both as written and with quotes removed) and ``*(+name)``."""
    found: list[str] = []
    inner_source = part.text[2:-1]
    inner_value = "".join(word_value(Word("", (piece,))) for piece in part.parts)
    for inner in dict.fromkeys((inner_source, inner_value)):
        index = 0
        while index < len(inner):
            char = inner[index]
            if char == "e" and index + 1 < len(inner) and not inner[index + 1].isalnum():
                delimiter = inner[index + 1]
                closing = {"(": ")", "[": "]", "{": "}", "<": ">"}.get(delimiter, delimiter)
                end = inner.find(closing, index + 2)
                end = len(inner) if end < 0 else end
                found.append(inner[index + 2 : end])
                index = end + 1
            elif char == "+" and index + 1 < len(inner):
                end = index + 1
                while end < len(inner) and (inner[end].isalnum() or inner[end] in "_-./"):
                    end += 1
                if end > index + 1:
                    found.append(inner[index + 1 : end])
                index = end
            else:
                index += 1
    return [code for code in found if code.strip()]


# -- entry points -----------------------------------------------------------------------------------------


_PLAIN_LINE: Final = re.compile(r"[ \t]*(" + RULES["PLAIN_COMMAND"].pattern + r")[ \t]*")
_KEYWORDS: Final = frozenset(
    {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done"}
    | {"function", "time", "coproc", "!", "[[", "in"}
)


def _read_plain(text: str) -> Reading | None:
    """The reading of a line that is one simple command of plain words (the parser's ``PLAIN_COMMAND``, no
    keyword first, ASCII): the tree's one ``SimpleCommand`` read as ``_read_tree`` reads it, without the
    rest of the tree. ``None`` for any other line."""
    line = _PLAIN_LINE.fullmatch(text)
    if line is None or not text.isascii() or character_problem(text) is not None:
        return None
    found = line.group(1)
    words = found.split()
    if words[0] in _KEYWORDS:
        return None
    reader = _Reader()
    command = SimpleCommand(found, tuple(plain_word(word) for word in words))
    found = reader.read_simple(command, 0, plain=True, strict=True, prefix=())
    reader.settle_inputs()
    return reader.reading(text, found)


def _read(text: str) -> Reading:
    if len(text) > READ_LIMIT:
        unread = f"longer than the read limit of {READ_LIMIT:,} characters (not read)"
        return Reading(text, (), (), understood=False, why=unread, fully_read=False, too_long=True)
    return _read_plain(text) or _read_tree(text)


def _read_tree(text: str) -> Reading:
    reader = _Reader()
    characters = character_problem(text)
    if characters is not None:
        reader.problem(characters)
    subcommands = reader.read_line(text)
    if characters is not None or not text.isascii():
        # Other readings, for deny and ask only: as a tool that normalizes Unicode reads it, and up to a NUL
        # (where a C string ends).
        alternative = _Reader()
        alternative.visible = reader.visible
        if "\x00" in text:
            alternative.read_script(text[: text.index("\x00")], 0, plain=False, strict=False)
        normalized = cleaned(text)
        if normalized != text:
            alternative.read_script(normalized, 0, plain=False, strict=False)
        alternative.settle_inputs()
        reader.blind = reader.blind or alternative.blind
        reader.piped = reader.piped or alternative.piped
    if not subcommands and not reader.problems:
        reader.problem("no command" if not reader.comments else "only a comment")
    return reader.reading(text, subcommands)


_CACHED_SHORT: Final = 16 * 1024
"""Commands up to this length share one cache of many entries; longer ones (up to the read limit) a cache
of a few, so that the readers of one call (rules, safety checks, suggestions) read a long command once."""


@functools.lru_cache(maxsize=512)
def _read_short(text: str) -> Reading:
    return _read(text)


@functools.lru_cache(maxsize=4)
def _read_long(text: str) -> Reading:
    return _read(text)


def read_command(text: str) -> Reading:
    """Read a shell command line both ways; never raises for a string. Readings are cached.

    Raises:
        TypeError: ``text`` is not a string.
    """
    if type(text) is str:
        return _read_short(text) if len(text) <= _CACHED_SHORT else _read_long(text)
    if isinstance(text, str):
        return _read(str.__str__(text))
    raise TypeError(f"command: expected a string; got {type(text).__name__}")


def command_words(specifier: str) -> tuple[ShellWord, ...]:
    """The words of a command specifier, read with the shell's quoting; it must be one plain command.

    Raises:
        ValueError: the specifier is empty, holds more than one command, an assignment, a redirection, a
            comment or anything a command could not be understood with; or starts with a wrapper.
    """
    problem = character_problem(specifier)
    if problem is not None:
        raise ValueError(f"it holds {problem}")
    tree = parse(specifier)
    commands = [
        command for item in tree.items for pipeline in item.pipelines for command in pipeline.commands
    ]
    for command in commands:
        if isinstance(command, NotUnderstood):
            raise ValueError(f"it holds {command.why}")
    reader = _Reader()
    for command in commands:
        if not isinstance(command, SimpleCommand):
            raise ValueError(f"it holds {_compound_problem(command)}")
        for word in command.words:
            reader.read_parts(word.parts, 0, plain=True, strict=True)
        for assignment in command.assignments:
            if assignment.value is not None:
                reader.read_parts(assignment.value.parts, 0, plain=True, strict=True)
        for redirection in command.redirects:
            found = _redirect_problem(redirection)
            reader.problem(found if found is not None else "a redirection")
    if _trailing_backslash(specifier):
        reader.problem("a trailing backslash")
    if reader.problems:
        raise ValueError(f"it holds {reader.problems[0]}")
    if tree.comments:
        raise ValueError("it holds a comment ('#' starting a word); quote the '#'")
    if not commands:
        raise ValueError("it is empty")
    pipelines = [pipeline for item in tree.items for pipeline in item.pipelines]
    if len(commands) > 1 or len(pipelines) > 1:
        raise ValueError("it holds more than one command; write one rule per command")
    pipeline = pipelines[0]
    if pipeline.negated:
        raise ValueError("it holds the shell keyword '!'")
    command = commands[0]
    assert isinstance(command, SimpleCommand)
    if command.assignments:
        raw = command.assignments[0].text
        raise ValueError(f"it starts with the assignment {raw!r}, which specifiers never match")
    values = [word_value(word) for word in command.words]
    prefix = ["time", "-p"] if pipeline.posix_time else ["time"] if pipeline.timed else []
    if prefix or launch(values).wrapped:
        first = (prefix or values)[0]
        raise ValueError(
            f"it starts with the wrapper {first!r}, which is stripped before matching; "
            "write the command it runs"
        )
    if len(values) >= 2 and values[0] in _SCRIPT_SHELLS and values[1] in _SCRIPT_FLAGS:
        raise ValueError(f"a {values[0]} {values[1]} script is matched as the commands in it; write those")
    return tuple(
        ShellWord(value, word_stars(word)) for value, word in zip(values, command.words, strict=True)
    )
