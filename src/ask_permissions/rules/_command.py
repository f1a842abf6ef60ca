"""CommandPattern: a shell command specifier (``Bash(npm run test:*)``), matched word by word."""

from __future__ import annotations

import functools
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, final

from ask_permissions._errors import preview
from ask_permissions._strict import child, fail
from ask_permissions.shell import Reading, ShellWord, SubCommand, command_words, read_command
from ask_permissions.typing import Decision

from ._glob import Glob
from ._specifier_base import check_key, read_specifier_snapshot, subject_values

__all__ = [
    "COMMAND_KEYS",
    "READ_LIMIT_TEXT",
    "CommandPattern",
    "argv_texts",
    "command_readings",
    "compound_allow",
]

COMMAND_KEYS: Final = ("command", "cmd")
"""The arguments a command specifier reads when it names no key."""

READ_LIMIT_TEXT: Final = (
    "Tool '{tool}': the command is longer than the read limit of {limit:,} characters, so it was not read; "
    "it needs a person's approval"
)
"""Why a command past the read limit asks (``ask_permissions.shell.READ_LIMIT``): it is never allowed, and
never blocked for its length alone."""

_Element = str | Glob | None
"""One word of a specifier: a literal word, a glob over one word, or ``None`` for any run of words."""

T = TypeVar("T")


def _glob(word: ShellWord, *, fold: bool) -> str | Glob:
    """A word's literal text, or a glob where its unquoted ``*`` match any characters within the word."""
    pieces: list[str] = []
    previous = 0
    for star in word.stars:
        pieces.append(word.value[previous:star])
        previous = star + 1
    pieces.append(word.value[previous:])
    if fold:
        pieces = [piece.casefold() for piece in pieces]
    return pieces[0] if len(pieces) == 1 else Glob(pieces)


def _elements(text: str) -> tuple[tuple[_Element, ...], tuple[_Element, ...], bool]:
    """The specifier's elements, their case-folded forms for the command name, and whether it is open-ended.

    Raises:
        ValueError: the specifier is not one plain command (the message says why).
    """
    words = list(command_words(text))
    rest = False
    if words:
        last = words[-1]
        value = last.value
        ends_with_star = bool(last.stars) and last.stars[-1] == len(value) - 1
        if ends_with_star and len(last.stars) != len(value):
            # `npm run test:*` is the coding-agent CLIs' prefix form: `npm run test`, then any words.
            if value.endswith(":*") and len(value) > 2:
                words[-1] = ShellWord(value[:-2], last.stars[:-1])
            rest = True  # `ls*` globs over the rest of the command: lsof, and lsof -i too
    exact: list[_Element] = []
    folded: list[_Element] = []
    for word in words:
        if word.stars and len(word.stars) == len(word.value):
            exact.append(None)
            folded.append(None)
        else:
            exact.append(_glob(word, fold=False))
            folded.append(_glob(word, fold=True))
    return tuple(exact), tuple(folded), rest


def _word_matches(element: str | Glob, word: str) -> bool:
    if isinstance(element, str):
        return element == word
    return element.matches(word)


@functools.lru_cache(maxsize=4096)
def _name_forms(name: str) -> tuple[str, ...]:
    """The ways deny and ask compare a command name: as written, by its file name, without zsh's ``=``
    (a function of the name alone, kept for the names commands use again and again)."""
    folded = name.casefold()
    base = posixpath.basename(folded)
    return (folded, base, base.lstrip("="))


@final
@dataclass(frozen=True, slots=True)
class CommandPattern:
    """A shell command specifier, as in ``Bash(git status)``; an argument pattern like the gem's.

    Matching is over argument words, never over text: the specifier and the command are both split into
    words with the shell's quoting, so ``git "status"`` runs, and matches, ``git status``, while
    ``git "status; rm -rf ~"`` is ``git`` with one odd argument and matches neither ``git status`` nor
    ``git status *``. Words are compared exactly; an unquoted ``*`` inside a word matches any characters
    of that word; a word that is only ``*`` matches any run of words, none included (``git * main``); a
    last word ending in ``*`` also matches any words after it (``ls*`` matches ``lsof -i``), and the
    prefix form ``npm run test:*`` means ``npm run test`` followed by any words. So ``ls *`` matches
    ``ls`` and ``ls -la`` but never ``lsof``.

    A command line is read into sub-commands (see ``ask_permissions.shell.read_command``). An ``allow``
    matches when the command is understood and the specifier matches every sub-command, none of which may
    start with ``NAME=value`` assignments; a ``deny`` or ``ask`` matches when it matches any command
    visible in it, assignments skipped, the command name also compared by its file name and
    case-insensitively (``/usr/bin/RM`` meets a deny for ``rm``), and always when the command is not fully
    read (past the read limit, nested too deeply, or outside the grammar). The subject is the call's
    argument at ``key``, else ``command`` or ``cmd`` (an allow then needs each present one to match), or a
    plain string argument itself.

    Args:
        text: the specifier, one plain command with optional ``*``.
        key: the argument holding the command, when it is not ``command`` or ``cmd``.

    Raises:
        ValueError: the text is empty, or more than one command, or holds an assignment, a redirection, a
            substitution or anything else a command could not be understood with, or starts with a wrapper
            that matching strips (``timeout 5 …``, ``bash -c …``).
    """

    text: str
    key: str | None = field(default=None, kw_only=True)
    _exact: tuple[_Element, ...] = field(init=False, repr=False, compare=False)
    _folded: tuple[_Element, ...] = field(init=False, repr=False, compare=False)
    _rest: bool = field(init=False, repr=False, compare=False)
    _first_word: str | None = field(init=False, repr=False, compare=False)
    _open_ended: bool = field(init=False, repr=False, compare=False)
    _prefix: tuple[str, ...] | None = field(init=False, repr=False, compare=False)
    """The literal words of a prefix-only specifier (``git push *``): an allow compares them alone."""

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"CommandPattern: text: expected a string; got {preview(self.text)}")
        text = str.__str__(self.text)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "key", check_key(self.key, "CommandPattern"))
        try:
            exact, folded, rest = _elements(text)
        except ValueError as error:
            raise ValueError(f"command specifier {preview(text)}: {error}") from None
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_folded", folded)
        object.__setattr__(self, "_rest", rest)
        object.__setattr__(self, "_first_word", exact[0] if isinstance(exact[0], str) else None)
        object.__setattr__(self, "_open_ended", self.is_open_ended)
        object.__setattr__(self, "_prefix", self.literal_prefix if self.is_prefix_only else None)

    # -- what it is ----------------------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``"shell"``."""
        return "shell"

    @property
    def is_unrestricted(self) -> bool:
        """Whether it matches every command (``*``): for the dangerous-tool guard, no restriction at all."""
        return all(element is None for element in self._exact)

    @property
    def is_open_ended(self) -> bool:
        """Whether it accepts any words after what it spells (``ls *``, ``npm run test:*``, ``ls*``)."""
        return self._rest or self._exact[-1] is None

    @property
    def literal_prefix(self) -> tuple[str, ...]:
        """The leading words it spells out literally (``("git", "push")`` for ``git push *``)."""
        prefix: list[str] = []
        for element in self._exact:
            if not isinstance(element, str):
                break
            prefix.append(element)
        return tuple(prefix)

    @property
    def is_prefix_only(self) -> bool:
        """Whether it is literal words followed by any words (``git push *``, ``npm run test:*``)."""
        count = len(self.literal_prefix)
        rest = self._exact[count:]
        return count > 0 and all(element is None for element in rest) and (bool(rest) or self._rest)

    @property
    def starts_with_wildcard(self) -> bool:
        """Whether its first word is ``*``, so that it matches whatever program a command runs."""
        return self._exact[0] is None

    # -- matching ------------------------------------------------------------------------------------------

    def matches(self, arguments: object, decision: Decision) -> bool:
        """Whether the specifier, in a rule of ``decision``, matches a call with these arguments."""
        return self.matches_readings(command_readings(arguments, self.key), decision)

    def matches_readings(self, readings: tuple[Reading | None, ...], decision: Decision) -> bool:
        """``matches``, given ``command_readings(arguments, self.key)`` (shared by a call's rules)."""
        if decision != "allow":
            return any(parsed is not None and self.matches_command(parsed, decision) for parsed in readings)
        if not readings:
            return False
        # The hot path of a policy of many allow rules: plain loops, the first word compared first.
        first = self._first_word
        for parsed in readings:
            if parsed is None or not parsed.understood:
                return False
            for sub in parsed.subcommands:
                words = sub.words
                if not words or (first is not None and words[0] != first):
                    return False
                if not self.matches_subcommand(sub, "allow"):
                    return False
        return True

    def matches_command(self, command: str | Reading, decision: Decision) -> bool:
        """Whether the specifier, in a rule of ``decision``, matches a command line."""
        parsed = command if isinstance(command, Reading) else read_command(command)
        if decision == "allow":
            subcommands = parsed.subcommands
            return parsed.understood and all(self.matches_subcommand(sub, "allow") for sub in subcommands)
        if not parsed.fully_read:
            return True
        name = self._folded[0]
        if not isinstance(name, str):
            return any(self.matches_subcommand(sub, decision) for sub in parsed.visible)
        # A long command may hold thousands of commands: most name another program, settled by its name.
        for sub in parsed.visible:
            words = sub.words
            if not words or not (sub.name_is_glob or name in _name_forms(words[0])):
                continue
            if self._match(words, lenient=True, name_is_glob=sub.name_is_glob):
                return True
        return False

    def matches_subcommand(self, sub: SubCommand, decision: Decision) -> bool:
        """Whether the specifier, in a rule of ``decision``, matches one sub-command."""
        words = sub.words
        if not words:
            return False
        if decision == "allow":
            if sub.assignments or (sub.appends_arguments and not self._open_ended):
                return False
            prefix = self._prefix
            if prefix is not None:
                return words[: len(prefix)] == prefix
            return self._match(words, lenient=False, name_is_glob=False)
        return self._match(words, lenient=True, name_is_glob=sub.name_is_glob)

    def _match(self, words: tuple[str, ...], *, lenient: bool, name_is_glob: bool) -> bool:
        first = self._exact[0]
        if not lenient and isinstance(first, str) and words[0] != first:
            return False  # most specifiers name another program: no walk needed
        size = len(words)
        positions = {0}
        for index, element in enumerate(self._exact):
            if element is None:
                positions = set(range(min(positions), size + 1))
                continue
            reached: set[int] = set()
            for position in positions:
                if position >= size:
                    continue
                if position == 0 and lenient:
                    folded = self._folded[index]
                    assert folded is not None
                    if name_is_glob or any(_word_matches(folded, form) for form in _name_forms(words[0])):
                        reached.add(1)
                elif _word_matches(element, words[position]):
                    reached.add(position + 1)
            if not reached:
                return False
            positions = reached
        return bool(positions) if self._rest else size in positions

    # -- snapshots -----------------------------------------------------------------------------------------

    def to_snapshot(self) -> dict[str, object]:
        """The pattern in snapshot form: ``{"type": "command", "text": ..., "key": ...}`` (key when set)."""
        data: dict[str, object] = {"type": "command", "text": self.text}
        if self.key is not None:
            data["key"] = self.key
        return data

    @classmethod
    def from_snapshot(cls, data: Mapping[str, Any], path: str = "") -> CommandPattern:
        """The pattern from ``to_snapshot()`` data; strict.

        Raises:
            InvalidSnapshotError: anything unknown, missing, mistyped or invalid, naming its path.
        """
        text, key = read_specifier_snapshot(data, path, "command")
        try:
            return cls(text, key=key)
        except ValueError as error:
            fail(child(path, "text"), f"a valid command specifier ({error})", text)


def command_readings(arguments: object, key: str | None) -> tuple[Reading | None, ...]:
    """The commands a call gives at ``key`` (else ``command``/``cmd``), parsed; ``None`` for another value.

    A list of strings is an argument vector (``["bash", "-lc", "rm -rf x"]``, as some shell tools send):
    read for deny and ask only, never understood, so no allow specifier matches it.
    """
    return tuple(_reading(value) for value in subject_values(arguments, key, COMMAND_KEYS))


def _reading(value: object) -> Reading | None:
    if isinstance(value, str):
        return read_command(value)
    texts = argv_texts(value)
    return None if texts is None else argv_reading(texts)


def argv_texts(value: object) -> tuple[str, str] | None:
    """The two command lines an argument vector (a non-empty list of strings) stands for: as it runs, each
    word quoted, and as a tool that joins it with spaces for a shell runs it; ``None`` for anything else."""
    if not isinstance(value, list | tuple) or not value or not all(isinstance(word, str) for word in value):
        return None
    argv = [str.__str__(word) for word in value]
    return shlex.join(argv), " ".join(argv)


def argv_reading(texts: tuple[str, str]) -> Reading:
    """What deny and ask specifiers see of an argument vector (``argv_texts``): both its command lines.
    Never understood, so an allow refuses it."""
    quoted, joined = (read_command(text) for text in texts)
    return Reading(
        text=texts[0],
        subcommands=(),
        visible=quoted.visible + joined.visible,
        understood=False,
        why="an argument vector (a list), which only a command string can be allowed as",
        fully_read=quoted.fully_read and joined.fully_read,
        too_long=quoted.too_long or joined.too_long,
    )


def compound_allow(
    arguments: object, candidates: Sequence[tuple[T, CommandPattern]]
) -> tuple[tuple[SubCommand, T], ...] | None:
    """The allow rule of each sub-command, when every sub-command of the call is allowed by some rule.

    For the rule "no single rule matches, but each sub-command is matched by some allow specifier". The
    ``candidates`` are ``(rule, pattern)`` pairs of allow rules, in order; each sub-command is given the
    first that allows it. Only patterns that read the same argument are combined, and the command must be
    fully understood.

    Returns:
        ``(sub-command, rule)`` pairs in the command's order, or ``None``.
    """
    keys: dict[str | None, None] = dict.fromkeys(pattern.key for _, pattern in candidates)
    for key in keys:
        values = subject_values(arguments, key, COMMAND_KEYS)
        if len(values) != 1 or not isinstance(values[0], str):
            continue
        parsed = read_command(values[0])
        if not parsed.understood or len(parsed.subcommands) < 2:
            continue  # one sub-command: a single rule matched it or none does
        usable = [(rule, pattern) for rule, pattern in candidates if pattern.key == key]
        covered = [_first_allowing(sub, usable) for sub in parsed.subcommands]
        if all(entry is not None for entry in covered):
            return tuple(entry for entry in covered if entry is not None)
    return None


def _first_allowing(
    sub: SubCommand, usable: Sequence[tuple[T, CommandPattern]]
) -> tuple[SubCommand, T] | None:
    for rule, pattern in usable:
        if pattern.matches_subcommand(sub, "allow"):
            return (sub, rule)
    return None
