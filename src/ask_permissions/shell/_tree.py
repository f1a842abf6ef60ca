"""The syntax tree of a bash command, as the parser builds it: what was written, never what it means.

Every node is a frozen, slotted dataclass. A word is a sequence of parts (literal text, quotes, escapes,
expansions); a command is a simple command, a compound command, a function definition or a
``NotUnderstood`` node for text outside the grammar. Nodes keep the source text a person needs to see
(``text``); meanings (a word's value, what a command runs) are worked out over the tree by ``_words`` and
``_readings``, never here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal as TypingLiteral
from typing import TypeAlias, final

__all__ = [
    "AndOr",
    "AnsiCQuoted",
    "Arithmetic",
    "ArithmeticCommand",
    "ArithmeticFor",
    "Assignment",
    "BraceExpansion",
    "Case",
    "CaseArm",
    "Command",
    "CommandList",
    "CommandSubstitution",
    "Coproc",
    "DoubleQuoted",
    "Escaped",
    "ExtGlob",
    "ForLoop",
    "FunctionDefinition",
    "Glob",
    "Group",
    "Heredoc",
    "IfCommand",
    "Literal",
    "Loop",
    "NotUnderstood",
    "Parameter",
    "Part",
    "Pipeline",
    "ProcessSubstitution",
    "Redirection",
    "SimpleCommand",
    "SingleQuoted",
    "Subshell",
    "TestCommand",
    "Tilde",
    "Word",
]

# -- the parts of a word -----------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class Literal:
    """Text with no special meaning where it stands (unquoted, or inside double quotes)."""

    text: str


@final
@dataclass(frozen=True, slots=True)
class Escaped:
    """A backslash and the character it quotes (``\\;``); ``char`` is empty for a line continuation."""

    char: str


@final
@dataclass(frozen=True, slots=True)
class SingleQuoted:
    """``'…'``: ``text`` is what stands between the quotes, taken literally."""

    text: str


@final
@dataclass(frozen=True, slots=True)
class AnsiCQuoted:
    """``$'…'``: ``text`` as written between the quotes, ``value`` with its escapes decoded."""

    text: str
    value: str


@final
@dataclass(frozen=True, slots=True)
class DoubleQuoted:
    """``"…"`` (or ``$"…"`` when ``locale``): literal text, escapes and expansions inside."""

    parts: tuple[Part, ...]
    text: str
    locale: bool = False


@final
@dataclass(frozen=True, slots=True)
class Parameter:
    """A parameter expansion: ``$name``, ``$1``, ``$@``, or ``${…}`` with its operator and words.

    Attributes:
        name: the parameter (``HOME``, ``1``, ``@``), with ``${#x}``'s ``#`` or ``${!x}``'s ``!`` in
            ``prefix``, and an array subscript in ``subscript``.
        operator: ``:-``, ``-``, ``:=``, ``=``, ``:?``, ``?``, ``:+``, ``+``, ``#``, ``##``, ``%``,
            ``%%``, ``/``, ``//``, ``/#``, ``/%``, ``^``, ``^^``, ``,``, ``,,``, ``@`` or ``:`` (an
            offset), or ``None``.
        words: the words the operator takes (a default, a pattern and its replacement, an offset and its
            length), each as the shell reads it.
        text: the expansion as written.
    """

    name: str
    text: str
    braced: bool = False
    prefix: str = ""
    subscript: Word | None = None
    operator: str | None = None
    words: tuple[Word, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class CommandSubstitution:
    """``$(…)``, or a backtick ``\\`…\\``` (``backtick``): the commands inside, parsed."""

    body: CommandList
    text: str
    backtick: bool = False


@final
@dataclass(frozen=True, slots=True)
class ProcessSubstitution:
    """``<(…)`` or ``>(…)``: the commands inside, parsed."""

    direction: TypingLiteral["<", ">"]
    body: CommandList
    text: str


@final
@dataclass(frozen=True, slots=True)
class Arithmetic:
    """An arithmetic expression (``$((…))``, ``$[…]``, ``((…))``, a ``for ((…))`` clause): its text, and
    the expansions and substitutions inside it as parts (everything else is ``Literal`` text)."""

    parts: tuple[Part, ...]
    text: str


@final
@dataclass(frozen=True, slots=True)
class Glob:
    """An unquoted ``*``, ``?`` or ``[``, which the shell may match against file names."""

    text: str


@final
@dataclass(frozen=True, slots=True)
class ExtGlob:
    """An extended glob ``@(…)``, ``*(…)``, ``+(…)``, ``?(…)``, ``!(…)`` (zsh reads the same text as glob
    qualifiers, some of which run code): ``operator`` and the parts between the parentheses."""

    operator: str
    parts: tuple[Part, ...]
    text: str


@final
@dataclass(frozen=True, slots=True)
class BraceExpansion:
    """``{a,b}`` or ``{1..3}``: the parts from the opening to the closing brace, both included."""

    parts: tuple[Part, ...]
    text: str


@final
@dataclass(frozen=True, slots=True)
class Tilde:
    """A leading ``~``, ``~user``, ``~+`` or ``~-`` (and after ``=`` or ``:`` in an assignment)."""

    text: str


Part: TypeAlias = (
    Literal
    | Escaped
    | SingleQuoted
    | AnsiCQuoted
    | DoubleQuoted
    | Parameter
    | CommandSubstitution
    | ProcessSubstitution
    | Arithmetic
    | Glob
    | ExtGlob
    | BraceExpansion
    | Tilde
)
"""One part of a word."""


@final
@dataclass(frozen=True, slots=True)
class Word:
    """A shell word: its source text and its parts."""

    text: str
    parts: tuple[Part, ...]


# -- redirections and assignments -------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class Heredoc:
    """A heredoc's body, kept as data.

    Attributes:
        delimiter: the delimiter word with its quotes removed.
        quoted: part of the delimiter was quoted, so the body is taken literally; otherwise ``parts`` holds
            its expansions and substitutions, and between them ``Literal`` text with its escapes (``\\$``,
            ``\\```, ``\\\\``, line continuations) applied.
        strip_tabs: ``<<-``: leading tabs are removed from each line (``body`` is without them).
        body: the body's text, up to (not including) the delimiter line.
        terminated: the delimiter line was found (bash also ends a heredoc at the end of the input).
    """

    delimiter: str
    quoted: bool
    strip_tabs: bool
    body: str = ""
    parts: tuple[Part, ...] = ()
    terminated: bool = True


@final
@dataclass(frozen=True, slots=True)
class Redirection:
    """A redirection: ``[fd]operator target``, or a heredoc (``<<``, ``<<-``) with its body.

    ``fd`` is the descriptor number written before the operator (``2`` in ``2>x``); ``fd_variable`` the
    name of a ``{name}>x`` descriptor variable. ``heredoc`` is ``None`` until the parser has read the body,
    which comes after the end of the line (see ``_parser``).
    """

    operator: str
    target: Word | None
    text: str
    fd: int | None = None
    fd_variable: str | None = None
    heredoc: Heredoc | None = None


@final
@dataclass(frozen=True, slots=True)
class Assignment:
    """``NAME=value``, ``NAME+=value``, ``NAME[index]=value`` or ``NAME=(words)``.

    ``name`` includes the subscript as written; ``value`` is ``None`` for an array assignment, whose
    elements are in ``array``.
    """

    name: str
    text: str
    value: Word | None
    append: bool = False
    array: tuple[Word, ...] | None = None


# -- commands ---------------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """Leading assignments, words and redirections (in any order after the assignments)."""

    text: str
    words: tuple[Word, ...] = ()
    assignments: tuple[Assignment, ...] = ()
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class Subshell:
    """``( list )``."""

    body: CommandList
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class Group:
    """``{ list; }``."""

    body: CommandList
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class IfCommand:
    """``if c; then b; [elif c; then b;]… [else b;] fi``: each ``(condition, body)`` clause in order."""

    clauses: tuple[tuple[CommandList, CommandList], ...]
    otherwise: CommandList | None = None
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class Loop:
    """``while c; do b; done``, or ``until`` when ``until``."""

    condition: CommandList
    body: CommandList
    until: bool = False
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class ForLoop:
    """``for name [in words]; do b; done``, or ``select`` when ``select`` (``words`` is ``None`` without
    ``in``: the positional parameters)."""

    variable: str
    words: tuple[Word, ...] | None
    body: CommandList
    select: bool = False
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class ArithmeticFor:
    """``for (( init; test; update )); do b; done``."""

    clauses: tuple[Arithmetic, Arithmetic, Arithmetic]
    body: CommandList
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class CaseArm:
    """One arm of a ``case``: its patterns, its commands (``None`` when empty), and how it ends (``;;``,
    ``;&``, ``;;&``, or ``""`` for a last arm with no terminator)."""

    patterns: tuple[Word, ...]
    body: CommandList | None
    terminator: str


@final
@dataclass(frozen=True, slots=True)
class Case:
    """``case word in arms… esac``."""

    subject: Word
    arms: tuple[CaseArm, ...]
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class TestCommand:
    """``[[ … ]]``: its words, operators (``&&``, ``||``, ``!``, ``(``, ``)``, ``<``, ``>``) as literal
    words among them."""

    words: tuple[Word, ...]
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class ArithmeticCommand:
    """``(( expression ))``."""

    expression: Arithmetic
    redirects: tuple[Redirection, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class FunctionDefinition:
    """``name () body`` or ``function name [()] body`` (``keyword``)."""

    name: str
    body: Command
    text: str
    keyword: bool = False


@final
@dataclass(frozen=True, slots=True)
class Coproc:
    """``coproc [name] command``."""

    name: str | None
    command: Command


@final
@dataclass(frozen=True, slots=True)
class NotUnderstood:
    """Text outside the grammar, from where reading stopped to the end of its script.

    ``why`` says what was found; ``too_deep`` is set when the text was left unread because it is nested
    deeper than the parser reads (not a syntax error), which deny and ask rules must then meet.
    """

    text: str
    why: str
    too_deep: bool = False


Command: TypeAlias = (
    SimpleCommand
    | Subshell
    | Group
    | IfCommand
    | Loop
    | ForLoop
    | ArithmeticFor
    | Case
    | TestCommand
    | ArithmeticCommand
    | FunctionDefinition
    | Coproc
    | NotUnderstood
)
"""One command of a pipeline."""


@final
@dataclass(frozen=True, slots=True)
class Pipeline:
    """Commands joined by ``|`` or ``|&`` (``operators[i]`` joins ``commands[i]`` and the next), maybe
    negated by ``!`` and timed by ``time`` (``time -p``: ``posix_time``)."""

    commands: tuple[Command, ...]
    operators: tuple[str, ...] = ()
    negated: bool = False
    timed: bool = False
    posix_time: bool = False


@final
@dataclass(frozen=True, slots=True)
class AndOr:
    """Pipelines joined by ``&&`` or ``||`` (``operators[i]`` joins ``pipelines[i]`` and the next)."""

    pipelines: tuple[Pipeline, ...]
    operators: tuple[str, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class CommandList:
    """A list of and-or lists, each ended by ``;``, ``&``, a newline or nothing (``separators[i]`` ends
    ``items[i]``); ``comments`` counts the comments read in it, ``text`` is the list as written."""

    items: tuple[AndOr, ...]
    separators: tuple[str, ...] = ()
    text: str = field(default="", compare=False)
    comments: int = field(default=0, compare=False)
