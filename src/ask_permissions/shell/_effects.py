"""What a shell command does to paths, worked out once per command text from its full reading and the table.

``command_effects(text)`` walks every simple command the full reading sees (in substitutions, scripts,
behind launchers), reads each argv by the table (``read_argv``), and reports the paths it reads, writes or
removes (with the directories a relative path may be read from, after ``cd`` and ``env -C``), the protected
files it writes without naming them, a shell fed a pipe it cannot read, and command names the shell works
out. It over-approximates: a program the table does not know may write every word it is given, and a
command whose name cannot be read may be any program. The safety checks decide on these effects alone.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple, TypeAlias, final

from ._programs import ArgvReading, Role, assigned_effect, program_named, read_argv, removes
from ._readings import Reading, SubCommand, read_command

__all__ = [
    "Effects",
    "PathAction",
    "PathUse",
    "command_effects",
    "plain_reading",
    "simple_effects",
]

PathAction: TypeAlias = Literal["read", "write", "tree", "remove", "touch"]
"""What a command does to a path: reads it, writes it, changes it with everything under it (``tree``:
``chmod -R``), removes it, or may do either (``touch``: the table cannot tell, so the checks read it as a
write)."""

_ACTIONS: Final[dict[Role, PathAction]] = {
    "read": "read",
    "runs": "read",  # what runs from it is read where the reading can (a process substitution's output)
    "write": "write",
    "tree": "tree",
    "remove": "remove",
    "touch": "touch",
}


class PathUse(NamedTuple):
    """One path a command touches (a named tuple: effects hold many).

    Attributes:
        path: the path as the program gets it (quotes removed; an expansion's text kept in place).
        action: what the command does to it.
        expands: the shell may change it (a glob, braces, a tilde, an expansion).
        bases: the directories a relative ``path`` may be read from, each relative to the working
            directory (``.`` first) or absolute or ``~``-relative; ``None`` when an earlier command moved
            to a directory no check can follow (``cd $X``, ``cd -``, ``ln -s``).
        program: the program that touches it, or ``"a redirection"``, ``"an assignment"``.
        guessed: the table cannot read the program (or its options), so this is only a word it is given
            (``--output=.bashrc``, ``-sLo.git/hooks``): the checks look for a protected name in its parts,
            but do not follow it through links on disk.
    """

    path: str
    action: PathAction
    expands: bool
    bases: tuple[str, ...] | None
    program: str
    guessed: bool = False


@final
@dataclass(frozen=True, slots=True)
class Effects:
    """What one command line does, as the safety checks read it.

    Attributes:
        paths: every path it may read, write or remove, in order.
        implicit: protected files it writes without naming them (``git config …`` writes git's
            configuration), as the reasons name them.
        piped_input: a shell or an interpreter runs what another command writes: through a pipe, a process
            substitution or a descriptor (``curl … | bash``, ``bash <(curl …)``, ``exec 3< <(…); bash <&3``),
            which no check reads in full (``Reading.piped_script``).
        removes_input: it removes paths its input names (``xargs rm``), which no check can read.
        unread_names: command names the shell works out (``$(echo rm)``, ``$CMD``): they may run anything.
        directories: the directory changes it makes, in order (``None``: one no check can follow).
        fully_read: the whole command was read (not: too long, nested too deeply, or text outside the
            grammar).
        too_long: it is longer than the read limit.
        unparsed: what makes the text not valid shell (an unterminated quote), or ``None``: the shell
            stops there, but another reader of it might run something.
    """

    paths: tuple[PathUse, ...] = ()
    implicit: tuple[str, ...] = ()
    piped_input: bool = False
    removes_input: bool = False
    unread_names: tuple[str, ...] = ()
    directories: tuple[str | None, ...] = ()
    fully_read: bool = True
    too_long: bool = False
    unparsed: str | None = None


# What the shell may change in an assignment's value (whose quoting the reading does not keep): read as
# changing (over-approximate).
_MAY_EXPAND: Final = re.compile(r"[$`*?\[]|\{[^{}]*(?:,|\.\.)[^{}]*\}|^~")


# -- effects -----------------------------------------------------------------------------------------------

_WRITES: Final = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_MAX_BASES: Final = 8
"""How many directories a relative path is read from; more directory changes than this and a relative path
counts as read from somewhere no check can follow."""
_HOME_CHANGE: Final = re.compile(r"~(?:/|$)")
_UNREAD_NAME: Final = re.compile(r"[$`{]")
_CODE_SEPARATORS: Final = re.compile(r"[\s'\"(),;=<>|&]")
_CODE_TOKEN: Final = re.compile(r"[^\s'\"(),;=<>|&\[\]{}]+")
"""A command name built by an expansion or braces may be a whole command (``$X``, ``{rm,-rf,/}``)."""


@final
class _Walk:
    """The effects of one command line's simple commands, read in order."""

    __slots__ = ("bases", "directories", "implicit", "paths", "removes_input", "unread")

    def __init__(self) -> None:
        self.bases: tuple[str, ...] | None = (".",)
        self.paths: list[PathUse] = []
        self.implicit: list[str] = []
        self.directories: list[str | None] = []
        self.unread: list[str] = []
        self.removes_input = False

    def command(self, simple: SubCommand) -> None:
        words = simple.words
        expanding = simple.expanding or (False,) * len(words)
        for assignment in simple.assignments:
            self.assign(assignment)
        for redirect in simple.redirects:
            target = redirect.target
            if target is None or (redirect.operator in (">&", "<&") and (target.isdigit() or target == "-")):
                continue
            if redirect.operator in _WRITES or (redirect.operator == ">&" and redirect.fd in (None, 1)):
                self.use(target, "write", redirect.target_expands, "a redirection")
            elif redirect.operator == "<":
                self.use(target, "read", redirect.target_expands, "a redirection")
        if not words:
            return
        if simple.name_is_glob:
            self.any_program(words, expanding)
            return
        reading = read_argv(words)
        if not reading.programs:
            for index in range(1, len(words)):
                self.candidates(words[index], expanding[index], words[0])
            return
        if simple.appends_arguments and removes(reading.programs[-1]):
            self.removes_input = True  # a bare xargs feeds rm what its input names
        self.read(words, expanding, reading)

    def read(self, words: tuple[str, ...], expanding: tuple[bool, ...], reading: ArgvReading) -> None:
        program = reading.programs[0].name
        changes: list[str | None] = []
        for part in reading.parts:
            action = _ACTIONS.get(part.role)
            text = part.text(words)
            expands = part.word >= 0 and expanding[part.word]
            if action is not None:
                self.use(text, action, expands, program, guessed=part.option == "")
            elif part.role == "assign":
                self.assign(text)
            elif part.role == "chdir":
                changes.append(None if expands or not text else text)
            elif part.role == "moves":
                changes.append(None)
        if reading.programs[0].kind == "directory" and not changes:
            changes.append("~" if program == "cd" else None)  # cd alone goes home; pushd alone swaps
        if reading.uncertain:
            for index in range(1, len(words)):
                self.candidates(words[index], expanding[index], program)
        self.implicit.extend(reading.implicit)
        if reading.programs[0].appends_arguments:
            for start, _ in reading.commands:
                launched = program_named(words[start])
                self.removes_input = self.removes_input or (launched is not None and removes(launched))
        if reading.moves:
            changes.append(None)
        for change in changes:
            self.move(change)

    def assign(self, assignment: str) -> None:
        """``NAME=VALUE`` (before a command, or given to ``export`` or ``env``): a value may be a path a
        later command writes, and some variables make a program run another."""
        name, _, value = assignment.partition("=")
        name = name.rstrip("+")
        if name == "CDPATH":
            self.move(None)  # cd now reads its operand against other directories
        implicit = assigned_effect(name)
        if implicit is not None:
            self.implicit.append(implicit)
        if value:
            self.use(value, "touch", _MAY_EXPAND.search(value) is not None, "an assignment", guessed=True)

    def any_program(self, words: tuple[str, ...], expanding: tuple[bool, ...]) -> None:
        """A command whose name the shell works out: it may be any program (``rm`` too), so its words are
        paths it may write or remove; a name built by an expansion may hold a whole command."""
        if _UNREAD_NAME.search(words[0]):
            self.unread.append(words[0])
        for index in range(1, len(words)):
            if not words[index].startswith("-"):
                self.use(words[index], "remove", expanding[index], words[0], guessed=True)
            self.candidates(words[index], expanding[index], words[0])

    def candidates(self, word: str, expands: bool, program: str) -> None:
        """A word a program the table cannot read is given: it may name a path it writes (the checks read
        the word's parts: each side of an ``=``, a short option's attached value)."""
        self.use(word, "touch", expands, program, guessed=True)

    def use(
        self, path: str, action: PathAction, expands: bool, program: str, *, guessed: bool = False
    ) -> None:
        self.paths.append(PathUse(path, action, expands, self.bases, program, guessed))
        if action == "touch" and not guessed and _CODE_SEPARATORS.search(path):
            # Code or a script the table says a program runs (python -c, sed 's/a/b/w .bashrc', awk): each
            # path-like token in it may be a file it writes. (Not the words of a program the table does
            # not know: those are as often prose, a title or a message.)
            for token in _CODE_TOKEN.findall(path):
                if token != path:
                    self.paths.append(PathUse(token, "touch", expands, self.bases, program, True))

    def move(self, target: str | None) -> None:
        """A directory change: later relative paths may be read from ``target`` too (``None``: from
        somewhere no check can follow)."""
        self.directories.append(target)
        if self.bases is None:
            return
        if target is None or target == "-" or (target.startswith("~") and not _HOME_CHANGE.match(target)):
            self.bases = None
            return
        moved = (target if base == "." else posixpath.join(base, target) for base in self.bases)
        joined = tuple(dict.fromkeys((*self.bases, *moved)))
        self.bases = joined if len(joined) <= _MAX_BASES else None


def simple_effects(simple: SubCommand) -> tuple[PathUse, ...]:
    """The paths one simple command touches (read from the working directory), as ``command_effects``
    reads them."""
    walk = _Walk()
    walk.command(simple)
    return tuple(walk.paths)


@functools.lru_cache(maxsize=512)
def _effects(text: str) -> Effects:
    reading = read_command(text)
    walk = _Walk()
    for simple in reading.visible:
        walk.command(simple)
    return Effects(
        tuple(walk.paths),
        tuple(dict.fromkeys(walk.implicit)),
        reading.piped_script,
        walk.removes_input,
        tuple(dict.fromkeys(walk.unread)),
        tuple(walk.directories),
        reading.fully_read,
        reading.too_long,
        reading.unparsed,
    )


def plain_reading(text: str) -> tuple[SubCommand, ...] | None:
    """The simple commands the plain reading of ``text`` runs (what an allow matches), or ``None`` when
    the command is not understood."""
    reading: Reading = read_command(text)
    return reading.subcommands if reading.understood else None


def command_effects(text: str) -> Effects:
    """What the command line ``text`` does to paths; worked out once per text (kept for repeated texts).

    Raises:
        TypeError: ``text`` is not a string.
    """
    if type(text) is not str:
        if not isinstance(text, str):
            raise TypeError(f"command: expected a string; got {type(text).__name__}")
        text = str.__str__(text)
    return _effects(text)
