"""What programs do, as one table: their options, what they run, and what they do to paths.

Each row of ``PROGRAMS`` describes one program (or a family of names): its option grammar (which options
take a value, attached ``-Sx`` / ``--opt=value`` values, bundled short flags, ``--``), the role of each option
value and operand (a path it reads, writes or removes, a directory it moves to, a command or shell script
it runs, plain data), its sub-commands (``git -C d config …``, ``npm -g config set …``), and what it writes
without naming it (git's configuration, a package manager's, git hooks). ``read_argv`` reads an argument
vector by the table; ``launch`` is the shell readings' view of it (wrappers, launched commands, scripts).

A program the table does not know is read as touching every word it is given; an option a row does not
know makes its reading uncertain: the command it launches is then looked for at every later word, and every
word counts as a path it may write. The table may over-approximate; it must never under-read.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, NamedTuple, TypeAlias, final, get_args

__all__ = [
    "EDIT_COMMANDS",
    "PROGRAMS",
    "QUICK_NAMES",
    "ArgvReading",
    "InputKind",
    "Launch",
    "Option",
    "Part",
    "Program",
    "ProgramKind",
    "Role",
    "ScriptRef",
    "Slot",
    "Strip",
    "When",
    "assigned_effect",
    "launch",
    "name_key",
    "program_named",
    "read_argv",
    "removes",
    "strip_wrappers",
]

Role: TypeAlias = Literal[
    "data",
    "read",
    "runs",
    "write",
    "tree",
    "remove",
    "touch",
    "chdir",
    "moves",
    "command",
    "script",
    "assign",
]
"""What a word (an operand, or an option's value) is to its program:

- ``data``: not a path (a pattern, a message, a user, a number);
- ``read``: a path it only reads;
- ``runs``: a file it reads and runs: a shell script for a shell (``bash FILE``, ``source FILE``), code for
  an interpreter (``python3 FILE``, ``awk -f FILE``); what a process substitution there writes is read as a
  pipe into the program is read;
- ``write``: a path it creates or changes;
- ``tree``: a path it changes with everything under it (``chmod -R``, ``chown -R``): a write, and where
  the path is a tree no agent should change whole (``/``, the home directory), checked as a removal is;
- ``remove``: a path it removes (or moves away);
- ``touch``: a path it may read or write — the table cannot tell which (checked as a write);
- ``chdir``: a directory the rest of the command (and what follows it) runs in;
- ``moves``: a directory the rest runs in that no check can follow (a new root, a namespace's);
- ``command``: the start of a command it runs, to the end of the words (or to ``;`` / ``+`` for find);
- ``script``: a shell script it runs (its word, or its words joined with spaces for a many-slot);
- ``assign``: ``NAME=VALUE`` words it sets in the environment (env), read as paths it may touch.
"""

ProgramKind: TypeAlias = Literal[
    "wrapper",
    "launcher",
    "shell",
    "interpreter",
    "remover",
    "writer",
    "reader",
    "directory",
    "variables",
    "subcommands",
]
"""How the docs group a program:

- ``wrapper``: changes only how the rest runs (``nohup``, ``timeout 5``): an allow looks through it;
- ``launcher``: runs another command or script given in its arguments (``sudo``, ``env``, ``ssh``);
- ``shell``: runs a shell script (``-c``), a script file, or its input;
- ``interpreter``: runs code in another language (``-c``/``-e``), a file, or its input;
- ``remover``: removes the paths it is given (``rm``, ``find -delete``, ``rsync --delete``);
- ``writer``: writes the paths it is given (``cp``, ``tee``, ``sed -i``);
- ``reader``: only reads (``cat``, ``ls``, ``grep``): naming a protected path does not ask;
- ``directory``: changes the directory later commands run in (``cd``);
- ``variables``: sets shell variables (``export``), which may change what a later program does;
- ``subcommands``: its sub-command stands after global options (``git``, ``npm``, ``pip``).
"""

InputKind: TypeAlias = Literal["shell", "code"]
"""What a program runs from its standard input: a shell script, or code in another language."""

Takes: TypeAlias = Literal["none", "value", "optional", "until"]
"""An option's value: none, one (attached or the next word), an optional attached one, or the words up to
``;`` or ``+`` (find's ``-exec``)."""

Syntax: TypeAlias = Literal["getopt", "find", "tar"]
"""How a program's options are written: getopt (bundled short options, ``--long[=value]``, ``--``), find's
(roots, then whole-word primaries), tar's (getopt, or an old-style first word of bundled letters)."""


# -- the rows ----------------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class Option:
    """One option of a program.

    Attributes:
        names: its spellings (``-u``, ``--user``, ``+o``, ``-name``); a long name also matches an
            unambiguous prefix of it, as getopt reads it (``--comm=`` is ``--command=``).
        takes: whether it takes a value, and how.
        role: what its value is.
        tags: names the row's ``When`` conditions test (``delete``, ``inplace``).
        implicit: a protected file it writes without naming it (the reason's words).
        implicit_values: ... only when its value starts with one of these (compared case-folded).
        script_prefixes: its value runs the rest as a shell script when it starts with one of these
            (``ProxyCommand=``; compared case-folded).
        ends_options: no option of the program follows it (python's ``-c`` and ``-m``).
        names_verb: its value names the row's sub-command that reads the rest (``python -m pip``).
    """

    names: tuple[str, ...]
    takes: Takes = "none"
    role: Role = "data"
    tags: frozenset[str] = frozenset()
    implicit: str | None = None
    implicit_values: tuple[str, ...] = ()
    script_prefixes: tuple[str, ...] = ()
    ends_options: bool = False
    names_verb: bool = False


@final
@dataclass(frozen=True, slots=True)
class Slot:
    """The role of one operand, or of every operand left (``many``) once the slots around it have theirs."""

    role: Role
    many: bool = False


@final
@dataclass(frozen=True, slots=True)
class When:
    """A change to a row's reading when its options (or operands) say so.

    Attributes:
        tags: every one of these tags is given.
        without: none of these tags is given.
        operands: the number of operands is exactly this (``None``: any).
        min_operands: there are at least this many operands.
        launches: a command it runs (find's ``-exec``) is a program of this kind.
        slots: the operands are read by these slots instead (the first ``When`` with slots wins).
        implicit: it writes this protected file without naming it.
        runs_input: it runs its standard input.
        moves: later commands may run in a directory no check can follow (``ln -s`` makes one).
    """

    tags: frozenset[str] = frozenset()
    without: frozenset[str] = frozenset()
    operands: int | None = None
    min_operands: int = 0
    launches: ProgramKind | None = None
    slots: tuple[Slot, ...] | None = None
    implicit: str | None = None
    runs_input: InputKind | None = None
    moves: bool = False


@final
@dataclass(frozen=True, slots=True)
class Strip:
    """How the plain reading (what an allow matches) strips a wrapper: only with these options and leading
    operands, each value matching its pattern; anything else leaves the wrapper in place.

    Attributes:
        flags: options without a value it may carry.
        valued: options with a value (attached, after ``=``, or the next word) and the pattern it matches.
        operands: patterns of the operands before the command (timeout's duration).
        double_dash: ``--`` may end its options.
        needs_option: stripped only with at least one option (stdbuf).
        bare: stripped only when a word follows that is not an option (xargs).
        appends: the command it runs gets more arguments than written (xargs).
        numeric: ``-N`` is an option (nice's ``-5``).
    """

    flags: frozenset[str] = frozenset()
    valued: tuple[tuple[str, re.Pattern[str]], ...] = ()
    operands: tuple[re.Pattern[str], ...] = ()
    double_dash: bool = True
    needs_option: bool = False
    bare: bool = False
    appends: bool = False
    numeric: re.Pattern[str] | None = None


@final
class _OptionIndex:
    """A row's options by spelling: short letters (with their ``-`` or ``+``), long names, whole words."""

    __slots__ = ("long", "short", "words")

    def __init__(self, options: Iterable[Option]) -> None:
        self.short: dict[str, Option] = {}
        self.long: dict[str, Option] = {}
        self.words: dict[str, Option] = {}
        for option in options:
            for name in option.names:
                self.words.setdefault(name, option)
                if name.startswith("--"):
                    self.long.setdefault(name[2:], option)
                elif len(name) == 2 and name[0] in "-+":
                    self.short.setdefault(name, option)

    def long_options(self, name: str) -> tuple[Option, ...]:
        """The options ``--name`` may mean: its exact spelling, else every one it abbreviates."""
        exact = self.long.get(name)
        if exact is not None:
            return (exact,)
        if not name:
            return ()
        return tuple(dict.fromkeys(option for long, option in self.long.items() if long.startswith(name)))


@final
@dataclass(frozen=True, slots=True, eq=False)
class Program:
    """One row of the table: a program's option grammar and what it does (a row is itself: rows compare,
    and hash, by identity).

    Attributes:
        names: the names it is run by (compared by file name, case-folded; ``python3.12`` is ``python``).
        kind: how the docs group it.
        does: what it does, in a few words (for the docs).
        options: its options.
        operands: the role of each operand, in order.
        verbs: its sub-commands: its first operand names one, whose row reads the words after it (one the
            table does not know makes the reading uncertain, unless ``verbs_optional``).
        verbs_optional: its first operand need not name a sub-command (``git config KEY VALUE``).
        when: changes to the reading by the options given.
        implicit: a protected file it writes without naming it, whenever this row is read.
        options_first: its options end at its first operand (sudo, env, bash): the rest is the command's.
        strict: an option it does not know makes the reading uncertain (every word a possible write, and
            a launched command or a sub-command looked for at every later word).
        syntax: how its options are written.
        strip: how the plain reading strips it, as a wrapper.
        keyed: ``KEY=VALUE`` operands and their values' roles (dd's ``of=``; ``*`` for any key).
        every_word: a launcher whose command may start at any later word (tmux, screen).
        appends_arguments: the command it runs gets more arguments, read from its input (xargs).
        edit: an edit command ``acceptEdits`` may accept when every path it touches lies inside the working
            directories (mkdir, touch, mv, cp).
        stdin_operand: the operand that makes it read its script from its input (``-``).
    """

    names: tuple[str, ...]
    kind: ProgramKind
    does: str
    options: tuple[Option, ...] = ()
    operands: tuple[Slot, ...] = (Slot("touch", many=True),)
    verbs: tuple[Program, ...] = ()
    verbs_optional: bool = False
    when: tuple[When, ...] = ()
    implicit: str | None = None
    options_first: bool = False
    strict: bool = True
    syntax: Syntax = "getopt"
    strip: Strip | None = None
    keyed: tuple[tuple[str, Role], ...] = ()
    every_word: bool = False
    appends_arguments: bool = False
    edit: bool = False
    stdin_operand: str | None = None
    index: _OptionIndex = field(init=False, repr=False)
    verb_index: Mapping[str, Program] = field(init=False, repr=False)
    streams: bool = field(init=False, repr=False)
    launches: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", _OptionIndex(self.options))
        verbs: dict[str, Program] = {}
        for verb in self.verbs:
            for name in verb.names:
                verbs.setdefault(name, verb)
        object.__setattr__(self, "verb_index", MappingProxyType(verbs))
        groups = [self.operands, *(when.slots for when in self.when if when.slots is not None)]
        slots = [slot for group in groups for slot in group]
        # Operands that start a command or a joined script end the reading where they stand: such rows
        # are read operand by operand, so their slots may not depend on a count of operands.
        streams = any(
            slot.role in ("command", "assign") or (slot.role == "script" and slot.many) for slot in slots
        )
        if streams and any(when.operands is not None and when.slots is not None for when in self.when):
            raise ValueError(f"{self.names[0]}: a launcher's slots cannot depend on its operand count")
        object.__setattr__(self, "streams", streams)
        launches = (
            self.every_word
            or any(role in ("command", "script") for _, role in self.keyed)
            or any(slot.role in ("command", "script") for slot in slots)
            or any(option.role in ("command", "script") or option.takes == "until" for option in self.options)
        )
        object.__setattr__(self, "launches", launches)

    @property
    def name(self) -> str:
        """Its first name."""
        return self.names[0]


# -- a compact notation for option lists -------------------------------------------------------------------

_ROLES: Final = frozenset(get_args(Role))


def _options(text: str, *special: Option) -> tuple[Option, ...]:
    """Options written compactly: space-separated entries of ``-a|--all`` (a flag), ``-u|--user=`` (a
    value), ``-C|--chdir=chdir`` (a value with a role), ``--color?`` (an optional attached value), each
    with optional ``#tag,tag``; ``special`` options follow (those that need more than this says)."""
    found: list[Option] = []
    for written in text.split():
        entry, _, tags = written.partition("#")
        takes: Takes = "none"
        role = "data"
        at = min((entry.find(marker, 1) for marker in "=?" if entry.find(marker, 1) > 0), default=-1)
        if at > 0:
            takes = "value" if entry[at] == "=" else "optional"
            role = entry[at + 1 :] or "data"
            entry = entry[:at]
        if role not in _ROLES:
            raise ValueError(f"option {written!r}: unknown role {role!r}")
        tagged = frozenset(filter(None, tags.split(",")))
        found.append(Option(tuple(entry.split("|")), takes, role, tagged))  # type: ignore[arg-type]
    return (*found, *special)


def _slots(text: str) -> tuple[Slot, ...]:
    """Operand slots written compactly: ``data command``, ``read* write`` (``*``: every operand left)."""
    slots: list[Slot] = []
    for entry in text.split():
        role = entry.rstrip("*")
        if role not in _ROLES:
            raise ValueError(f"slot {entry!r}: unknown role {role!r}")
        slots.append(Slot(role, many=entry.endswith("*")))  # type: ignore[arg-type]
    return tuple(slots)


def _when(
    tags: str = "",
    without: str = "",
    *,
    slots: str | None = None,
    operands: int | None = None,
    min_operands: int = 0,
    launches: ProgramKind | None = None,
    implicit: str | None = None,
    runs_input: InputKind | None = None,
    moves: bool = False,
) -> When:
    return When(
        frozenset(tags.split()),
        frozenset(without.split()),
        operands,
        min_operands,
        launches,
        None if slots is None else _slots(slots),
        implicit,
        runs_input,
        moves,
    )


def _row(
    names: str,
    kind: ProgramKind,
    does: str,
    options: str | tuple[Option, ...] = "",
    operands: str = "touch*",
    **fields: object,
) -> Program:
    return Program(
        tuple(names.split()),
        kind,
        does,
        _options(options) if isinstance(options, str) else options,
        _slots(operands),
        **fields,  # type: ignore[arg-type]
    )


def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


_DURATION: Final = _pattern(r"[0-9]+(?:\.[0-9]+)?[smhd]?")
_SIGNAL: Final = _pattern(r"(?:SIG)?[A-Z0-9]+")
_INTEGER: Final = _pattern(r"[+-]?[0-9]+")
_ANY: Final = _pattern(r".*")
_MODE: Final = _pattern(r"[0-9A-Za-z]+")

# The protected files some programs write without naming them (the reasons' words).
_GIT_CONFIG: Final = "git's configuration (.gitconfig or .git/config)"
_GIT_RUNS: Final = "a git setting that runs a program"
_GIT_HOOKS: Final = "git hooks (.git/hooks, .husky)"
_GIT_TEMPLATE: Final = "git hooks from a template (.git/hooks)"
_GIT_DIR: Final = "into .git/ (the command prints its path for another to use)"
_START_UP: Final = "shell start-up files"
# What some disk and firmware tools change without naming a device (the reasons' words).
_VOLUMES: Final = "a disk's volumes (LVM)"
_POOLS: Final = "a disk's pools or datasets (ZFS)"
_MAPPER: Final = "the device mapper's devices"
_FIRMWARE: Final = "a firmware chip"
_DEVICE_NODE: Final = "a device node (a disk or memory, opened to whatever writes the node)"
_BOOT_ENTRIES: Final = "the firmware's boot entries"
_KERNEL_SETTINGS: Final = "kernel settings"
# git settings whose value runs a program (or moves the hooks), compared case-folded as prefixes.
_GIT_RUNNING_KEYS: Final = (
    "core.hookspath",
    "core.sshcommand",
    "core.fsmonitor",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "credential.helper",
    "diff.external",
    "gpg.program",
    "gpg.ssh.program",
    "sequence.editor",
    "uploadpack.packobjectshook",
    "protocol.ext.allow",
    "alias.",
    "filter.",
    "pager.",
    "mergetool.",
    "difftool.",
)
# Environment variables whose value makes git run a program (or read settings that may): assigning one is
# a git setting that runs a program, as `git -c` is.
_GIT_RUNNING_VARIABLES: Final = frozenset(
    {
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_PAGER",
        "GIT_ASKPASS",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_EXTERNAL_DIFF",
        "GIT_PROXY_COMMAND",
    }
)
_GIT_RUNNING_VARIABLE_PREFIXES: Final = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")


def assigned_effect(name: str) -> str | None:
    """What assigning the environment variable ``name`` writes without naming it, as the reasons say it."""
    if name in _GIT_RUNNING_VARIABLES or name.startswith(_GIT_RUNNING_VARIABLE_PREFIXES):
        return _GIT_RUNS
    return None


_SSH_SCRIPTS: Final = ("proxycommand=", "proxycommand ", "localcommand=", "localcommand ")
_SSH_OPTION: Final = Option(("-o",), "value", script_prefixes=_SSH_SCRIPTS)


def _shell(names: str, does: str, extra: str = "") -> Program:
    """A POSIX-like shell: ``-c`` makes its first operand the script, ``-s`` or no operand its input, and
    otherwise its first operand is the file it runs."""
    return _row(
        names,
        "shell",
        does,
        "-c#c -s#stdin -i -l|--login -o= +o= -O= +O= -a -b -e -f -h -k -m -n -p -t -u -v -x -B -C -E -H "
        "-P -T +a +b +e +f +h +k +m +n +p +t +u +v +x +B +C +E +H +P +T -D -r --norc --noprofile "
        "--posix --restricted --verbose --version --help --debugger --dump-strings --dump-po-strings "
        "--pretty-print --rcfile=runs --init-file=runs --noediting " + extra,
        "runs data*",
        options_first=True,
        stdin_operand="-",
        when=(
            _when("c", slots="script data*"),
            _when("stdin", "c", slots="data*", runs_input="shell"),
            _when("", "c stdin", operands=0, runs_input="shell"),
        ),
    )


def _editing_interpreter(names: str, language: str, options: str) -> Program:
    """An interpreter whose ``-e`` runs code and ``-i`` edits the files it reads (perl, ruby)."""
    return _row(
        names,
        "interpreter",
        f"runs {language} code: `-e CODE`, a file, or its input; `-i` edits the files it reads",
        options,
        "runs data*",
        options_first=True,
        stdin_operand="-",
        when=(
            _when("e inplace", slots="write*"),
            _when("inplace", "e", slots="runs write*"),
            _when("e", slots="read*"),
            _when("", "e", operands=0, runs_input="code"),
        ),
    )


def _launcher(
    names: str, does: str, options: str = "", operands: str = "command", **fields: object
) -> Program:
    fields.setdefault("options_first", True)
    return _row(names, "launcher", does, options, operands, **fields)


def _remover(names: str, does: str, options: str = "", **fields: object) -> Program:
    return _row(names, "remover", does, options, "remove*", strict=False, **fields)


def _reader(names: str, does: str, options: str = "", operands: str = "read*", **fields: object) -> Program:
    return _row(names, "reader", does, options, operands, strict=False, **fields)


def _verb(
    names: str, does: str, options: str | tuple[Option, ...] = "", operands: str = "touch*", **fields: object
) -> Program:
    fields.setdefault("strict", False)
    return _row(names, "subcommands", does, options, operands, **fields)


def _config_verbs(written: str, *, reads: str = "get list ls") -> tuple[Program, ...]:
    """A package manager's ``config`` sub-commands: setting writes ``written``; reading does not."""
    return (
        _verb("set delete unset rm edit fix", f"changes {written}", operands="data*", implicit=written),
        _verb(reads, "reads the configuration", operands="data*"),
    )


_PIP_GLOBAL: Final = (
    "-h|--help --debug --isolated --require-virtualenv -v|--verbose -V|--version -q|--quiet --no-input "
    "--no-color --no-cache-dir --disable-pip-version-check --no-python-version-warning --log=write "
    "--proxy= --retries= --timeout= --exists-action= --trusted-host= --cert=read --client-cert=read "
    "--cache-dir=touch --python=data --keyring-provider= --use-feature= --use-deprecated= "
    "--root-user-action= --resume-retries= "
)


def _pip(names: str) -> Program:
    return _row(
        names,
        "subcommands",
        "installs Python packages; `config set` writes pip.conf",
        _PIP_GLOBAL,
        "data*",
        strict=False,
        verbs=(
            _verb(
                "config",
                "reads or changes pip.conf",
                _PIP_GLOBAL + "--editor=data --global --user --site",
                "data*",
                verbs=_config_verbs("pip.conf", reads="get list debug"),
            ),
            _verb(
                "install download wheel",
                "installs packages",
                _PIP_GLOBAL + "-r|--requirement=read -c|--constraint=read -e|--editable=read "
                "-t|--target=write --prefix=touch --root=touch --src=touch -i|--index-url= "
                "--extra-index-url= -f|--find-links= -d|--dest=write -w|--wheel-dir=write",
                "data*",
            ),
        ),
    )


_FIND_TESTS: Final = (
    "-name -iname -path -ipath -regex -iregex -type -xtype -mtime -mmin -atime -amin -ctime -cmin -size "
    "-user -group -uid -gid -perm -links -wholename -iwholename -lname -ilname -inum -used -fstype "
    "-context"
)


def _find() -> Program:
    tests = tuple(Option((name,), "value", tags=frozenset({"test"})) for name in _FIND_TESTS.split())
    others = _options(
        "-H -L -P -D= -O? -maxdepth= -mindepth= -depth -d -mount -xdev -noleaf -ignore_readdir_race "
        "-noignore_readdir_race -regextype= -warn -nowarn -daystart -follow -help -version "
        "-files0-from=read -print -print0 -printf= -ls -prune -quit -true -false -not -a -and -o -or "
        "-fprint=write -fprint0=write -fls=write -fprintf=write -delete#delete"
    )
    flags = tuple(
        Option((name,), tags=frozenset({"test"}))
        for name in ("-empty", "-nouser", "-nogroup", "-readable", "-writable", "-executable")
    )
    reads = tuple(
        Option((name,), "value", "read", frozenset({"test"}))
        for name in ("-newer", "-anewer", "-cnewer", "-samefile")
    )
    runs = tuple(
        Option((name,), "until", "command", frozenset({"exec"}))
        for name in ("-exec", "-execdir", "-ok", "-okdir")
    )
    return Program(
        ("find",),
        "remover",
        "finds files; `-delete` or an `-exec rm` without a test removes what it starts from "
        "(an `-exec chmod` changes it whole)",
        (*tests, *others, *flags, *reads, *runs),
        _slots("read*"),
        syntax="find",
        strict=False,
        when=(
            _when("delete", "test", slots="remove*"),
            When(without=frozenset({"test"}), launches="remover", slots=_slots("remove*")),
            # A writer run on everything found changes the whole tree, as chmod -R does; on what a test
            # picks, it writes below where find starts (find /dev -name 'sd*' -exec wipefs -a {} +).
            When(without=frozenset({"test"}), launches="writer", slots=_slots("tree*")),
            When(launches="writer", slots=_slots("touch*")),
        ),
    )


PROGRAMS: Final[tuple[Program, ...]] = (
    # -- wrappers: the plain reading (what an allow matches) looks through them -------------------------
    _row(
        "nohup",
        "wrapper",
        "runs a command immune to hangups",
        "",
        "command",
        options_first=True,
        strip=Strip(),
    ),
    _row("builtin", "wrapper", "runs a shell builtin", "", "command", options_first=True, strip=Strip()),
    _row(
        "noglob",
        "wrapper",
        "runs a command without globbing (zsh)",
        "",
        "command",
        options_first=True,
        strip=Strip(double_dash=False),
    ),
    _row(
        "command",
        "wrapper",
        "runs a command, not a function; `-v`/`-V` only describe it",
        "-p -v#describe -V#describe",
        "command",
        options_first=True,
        when=(_when("describe", slots="data*"),),
        strip=Strip(flags=frozenset({"-p"})),
    ),
    _row(
        "time",
        "wrapper",
        "times a command",
        "-p|--portability -o|--output=write -a|--append -f|--format= -v|--verbose -q|--quiet",
        "command",
        options_first=True,
        strip=Strip(flags=frozenset({"-p"}), double_dash=False),
    ),
    _row(
        "nice",
        "wrapper",
        "runs a command at another priority",
        "-n|--adjustment=",
        "command",
        options_first=True,
        strip=Strip(
            valued=(("-n", _INTEGER), ("--adjustment", _INTEGER)),
            numeric=_pattern(r"-[+-]?[0-9]+"),
        ),
    ),
    _row(
        "timeout",
        "wrapper",
        "runs a command with a time limit",
        "-s|--signal= -k|--kill-after= --preserve-status --foreground -v|--verbose",
        "data command",
        options_first=True,
        strip=Strip(
            flags=frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
            valued=(("-s", _SIGNAL), ("--signal", _ANY), ("-k", _DURATION), ("--kill-after", _ANY)),
            operands=(_DURATION,),
        ),
    ),
    _row(
        "stdbuf",
        "wrapper",
        "runs a command with other stream buffering",
        "-i|--input= -o|--output= -e|--error=",
        "command",
        options_first=True,
        strip=Strip(
            valued=tuple((name, _ANY) for name in ("-i", "-o", "-e", "--input", "--output", "--error")),
            needs_option=True,
        ),
    ),
    _row(
        "xargs",
        "wrapper",
        "runs a command with arguments read from its input",
        "-0|--null -a|--arg-file=read -d|--delimiter= -E= -e|--eof? -I= -i|--replace? -L= -l|--max-lines? "
        "-n|--max-args= -P|--max-procs= -p|--interactive -r|--no-run-if-empty -s|--max-chars= -t|--verbose "
        "-x|--exit --process-slot-var= -o|--open-tty --show-limits",
        "command",
        options_first=True,
        appends_arguments=True,
        strip=Strip(bare=True, appends=True, double_dash=False),
    ),
    # -- launchers: the command or script they run is read as well ----------------------------------------
    _launcher(
        "sudo",
        "runs a command as another user; `-e` edits files; `-s`/`-i` alone run a shell on its input",
        "-A|--askpass -b|--background -C|--close-from= -D|--chdir=chdir -E -e|--edit#edit -g|--group= "
        "-H|--set-home -h|--host? -i|--login#shell -K|--remove-timestamp -k|--reset-timestamp -l|--list "
        "-n|--non-interactive -P|--preserve-groups -p|--prompt= -R|--chroot=moves -r|--role= -S|--stdin "
        "-s|--shell#shell -T|--command-timeout= -t|--type= -U|--other-user= -u|--user= -V|--version "
        "-v|--validate -N|--no-update --preserve-env? -B|--bell",
        when=(
            _when("edit", slots="write*"),
            _when("shell", operands=0, runs_input="shell"),
        ),
    ),
    _row(
        "sudoedit", "writer", "edits files as another user", "-u|--user= -g|--group= -C= -D= -h? -n", "write*"
    ),
    _launcher(
        "doas",
        "runs a command as another user",
        "-L -n -s#shell -a= -C=read -u=",
        when=(_when("shell", operands=0, runs_input="shell"),),
    ),
    _launcher(
        "pkexec",
        "runs a command as another user",
        "--user= --disable-internal-agent --keep-cwd --help --version",
    ),
    _row(
        "su",
        "launcher",
        "runs a shell, or a `-c` command, as another user",
        "-c|--command=script --session-command=script -f|--fast -g|--group= -G|--supp-group= -|-l|--login "
        "-m|-p|--preserve-environment -P|--pty -s|--shell= -w|--whitelist-environment=",
        "data data*",
    ),
    _row(
        "runuser",
        "launcher",
        "runs a command (`-u`) or a shell (`-c`) as another user",
        "-u|--user=#user -c|--command=script --session-command=script -f|--fast -g|--group= "
        "-G|--supp-group= -|-l|--login -m|-p|--preserve-environment -P|--pty -s|--shell= "
        "-w|--whitelist-environment=",
        "data data*",
        when=(_when("user", slots="command"),),
    ),
    _launcher(
        "env",
        "runs a command in another environment; `-S` splits a string into one; `-C` in another directory",
        "-|-i|--ignore-environment -0|--null -u|--unset= -C|--chdir=chdir -S|--split-string=script "
        "-v|--debug "
        "--block-signal? --default-signal? --ignore-signal? --list-signal-handling",
        "assign* command",
    ),
    _launcher("exec", "replaces the shell with a command", "-c -l -a="),
    _launcher(
        "ionice",
        "runs a command at another I/O priority",
        "-c|--class= -n|--classdata= -p|--pid#pid -P|--pgid#pid -u|--uid#pid -t|--ignore",
        when=(_when("pid", slots="data*"),),
    ),
    _launcher("setsid", "runs a command in a new session", "-c|--ctty -f|--fork -w|--wait"),
    _launcher(
        "chrt",
        "runs a command with another scheduling policy",
        "-a|--all-tasks -b|--batch -d|--deadline -e|--ext -f|--fifo -i|--idle -o|--other -r|--rr "
        "-p|--pid#pid -R|--reset-on-fork -v|--verbose -T|--sched-runtime= -P|--sched-period= "
        "-D|--sched-deadline= -m|--max",
        "data command",
        when=(_when("pid", slots="data*"),),
    ),
    _launcher(
        "taskset",
        "runs a command on chosen processors",
        "-a|--all-tasks -c|--cpu-list -p|--pid#pid",
        "data command",
        when=(_when("pid", slots="data*"),),
    ),
    _launcher("unbuffer", "runs a command without buffering (expect)", "-p"),
    _launcher(
        "flock",
        "runs a command holding a lock; `-c` a shell command",
        "-s|--shared -x|-e|--exclusive -u|--unlock -n|--nb|--nonblock -w|--timeout= -E|--conflict-exit-code= "
        "-o|--close -c|--command=script#c -F|--no-fork --verbose",
        "touch command",
        options_first=False,
        when=(_when("c", slots="touch"),),
    ),
    _launcher(
        "strace",
        "traces a command",
        "-o|--output=write -e= -P=read -p= -s= -u= -E= -a= -b= -I= -O= -S= -X= -c -C -d -D -f -ff -F -h -i "
        "-k -q -r -t -tt -ttt -T -v -V -w -x -xx -y -yy -z -Z",
    ),
    _launcher(
        "ltrace",
        "traces a command's library calls",
        "-o|--output=write -e= -p= -s= -u= -a= -A= -D= -n= -F=read -l= -L -b -c -C -f -h -i -r -S -t -tt "
        "-ttt -T -V -w= -x=",
    ),
    _launcher("chronic", "runs a command, printing its output only on failure", "-e -v"),
    _launcher(
        "chroot", "runs a command in another root", "--userspec= --groups= --skip-chdir", "moves command"
    ),
    _launcher(
        "nsenter",
        "runs a command in other namespaces",
        "-t|--target= -m|--mount? -u|--uts? -i|--ipc? -n|--net? -p|--pid? -C|--cgroup? -U|--user? "
        "-T|--time? -S|--setuid= -G|--setgid= --preserve-credentials -r|--root?moves -w|--wd?moves "
        "-W|--wdns= -F|--no-fork -Z|--follow-context -a|--all -e|--env -c|--join-cgroup",
    ),
    _launcher(
        "unshare",
        "runs a command in new namespaces",
        "-m|--mount? -u|--uts? -i|--ipc? -n|--net? -p|--pid? -U|--user? -C|--cgroup? -T|--time? "
        "-f|--fork --kill-child? --mount-proc? -r|--map-root-user -c|--map-current-user --map-user= "
        "--map-group= --map-users= --map-groups= --map-auto --propagation= --setgroups= -R|--root=moves "
        "-w|--wd=moves -S|--setuid= -G|--setgid= --monotonic= --boottime= -l|--load-interp= --keep-caps",
    ),
    _launcher(
        "parallel",
        "runs a command for each argument (GNU parallel)",
        "-j|--jobs= -N= -n|--max-args= -a|--arg-file=read --colsep= -d|--delimiter= -E= -I= --replace? -X "
        "-m -k|--keep-order -q|--quote --halt= --joblog=write --results=write --tmpdir=touch "
        "-S|--sshlogin= --bar --eta --progress -v --dry-run --tag --line-buffer -u|--ungroup --pipe "
        "--block= --timeout= --retries= --delay= -0|--null --shuf --will-cite",
        "script*",
    ),
    _launcher(
        "torsocks", "runs a command through Tor", "-u|--user= -p|--pass= -a|--address= -P|--port= -i -d -q"
    ),
    _launcher("proxychains proxychains4", "runs a command through proxies", "-q -f=read"),
    _launcher("firejail", "runs a command in a sandbox", "", strict=False),
    _launcher("caffeinate", "runs a command keeping the machine awake (macOS)", "-d -i -m -s -u -t= -w="),
    _launcher("busybox", "runs the applet it names"),
    _launcher(
        "systemd-run",
        "runs a command as a systemd unit",
        "-u|--unit= -p|--property= --description= --slice= -E|--setenv= -M|--machine= -H|--host= -t|--pty "
        "-P|--pipe -S|--shell#shell --scope --user --system -G|--collect -q|--quiet --wait --same-dir "
        "-d|--working-directory=moves --uid= --gid= --nice= -r|--remain-after-exit --send-sighup "
        "--service-type= --no-block --no-ask-password --on-active= --on-boot= --on-startup= "
        "--on-unit-active= --on-unit-inactive= --on-calendar= --on-clock-change --on-timezone-change "
        "--timer-property= --path-property= --socket-property= --slice-inherit --expand-environment= "
        "--json= -v|--verbose",
    ),
    _launcher("eatmydata", "runs a command without fsync"),
    _launcher(
        "fakeroot",
        "runs a command as a fake root",
        "-l|--lib= --faked= -i=read -s=write -u|--unknown-is-real -b= -h -v",
    ),
    _launcher("screen", "runs a command in a terminal session", every_word=True),
    _launcher("tmux", "runs a command in a terminal session", every_word=True),
    _row(
        "sg",
        "launcher",
        "runs a command (or a `-c` script) as another group",
        "-|-c=script#c",
        "data command",
        when=(_when("c", slots="data"),),
    ),
    _launcher("nocorrect", "runs a command without spelling correction (zsh)"),
    _launcher("catchsegv", "runs a command, reporting a crash"),
    _launcher("valgrind", "runs a command under a debugger", "-q -v -h", strict=False),
    _launcher(
        "watch",
        "runs a shell command again and again; `-x` runs it without a shell",
        "-b|--beep -c|--color -C|--no-color -d|--differences? -e|--errexit -g|--chgexit -n|--interval= "
        "-p|--precise -q|--equexit= -r|--no-rerun -s|--shell= -t|--no-title -w|--no-wrap -x|--exec#exec",
        "script*",
        when=(_when("exec", slots="command"),),
    ),
    _row(
        "ssh",
        "launcher",
        "runs a command on another host (its words joined, as a script); `-o ProxyCommand=` locally",
        _options(
            "-4 -6 -A -a -C -f -G -g -K -k -M -N -n -q -s -T -t -V -v -X -x -Y -y -B= -b= -c= -D= -E=write "
            "-e= -F=read -I= -i=read -J= -L= -l= -m= -O= -p= -Q= -R= -S=touch -W= -w=",
            _SSH_OPTION,
        ),
        "data script*",
        options_first=False,
    ),
    _row(
        "scp",
        "writer",
        "copies files between hosts; `-S` runs a program, `-o ProxyCommand=` a command",
        _options(
            "-3 -4 -6 -A -B -C -O -p -q -R -r -s -T -v -c= -D= -F=read -i=read -J= -l= -P= -S=command -X=",
            _SSH_OPTION,
        ),
        "read* write",
    ),
    _row(
        "script",
        "launcher",
        "records a terminal session of a shell, or of a `-c` command",
        "-a|--append -c|--command=script -E|--echo= -e|--return -f|--flush --force -B|--log-io=write "
        "-I|--log-in=write -O|--log-out=write -T|--log-timing=write -m|--logging-format= "
        "-o|--output-limit= -q|--quiet -t|--timing?write -d -k -p -r -F=write",
        "write command",
        options_first=False,
    ),
    _row("eval", "launcher", "runs its words, joined, as a shell script", "", "script*", strict=False),
    _row(
        "trap",
        "launcher",
        "runs a shell script when a signal comes",
        "-l -p",
        "script data*",
        when=(_when(operands=1, slots="data"),),
    ),
    _launcher(
        "npx pnpx bunx",
        "runs a package's program",
        "-p|--package= -c|--call=script -y|--yes --no -q|--quiet --shell= --ignore-existing",
        strict=False,
    ),
    _launcher(
        "uvx",
        "runs a Python package's program",
        "--from= --with= --with-editable= --with-requirements=read -p|--python= --isolated -q|--quiet "
        "-v|--verbose --offline --no-cache",
        strict=False,
    ),
    # -- shells and interpreters --------------------------------------------------------------------------
    _shell(
        "sh bash dash ksh mksh ash zsh yash rbash", "runs a shell script: `-c SCRIPT`, a file, or its input"
    ),
    _row(
        "fish",
        "shell",
        "runs a fish script: `-c SCRIPT`, a file, or its input",
        "-c|--command=script#c -C|--init-command=script -i|--interactive -l|--login -N|--no-config "
        "-n|--no-execute -p|--profile=write -P|--private -d|--debug= -o|--debug-output=write -f|--features= "
        "-v|--version -h|--help",
        "runs data*",
        options_first=True,
        when=(_when("", "c", operands=0, runs_input="shell"),),
    ),
    _row(
        "source .",
        "shell",
        "runs a shell script file in the current shell",
        "",
        "runs data*",
        options_first=True,
        strict=False,
    ),
    _row(
        "python pypy",
        "interpreter",
        "runs Python code: `-c CODE`, `-m MODULE` (`-m pip` is pip), a file, or its input",
        (
            *_options(
                "-b -B -d -E -h -i -I -O -OO -P -q -R -s -S -u -v -V -x -X= -W= --check-hash-based-pycs= "
                "--help-env --help-xoptions --help-all --version"
            ),
            Option(("-c",), "value", "touch", frozenset({"c"}), ends_options=True),
            Option(("-m",), "value", "data", frozenset({"m"}), ends_options=True, names_verb=True),
        ),
        "runs data*",
        options_first=True,
        stdin_operand="-",
        verbs=(_pip("pip"),),
        verbs_optional=True,  # `-m` names its sub-command; its first operand is the file it runs
        when=(
            _when("c", slots="data*"),
            _when("m", slots="data*"),
            _when("", "c m", operands=0, runs_input="code"),
        ),
    ),
    _editing_interpreter(
        "perl",
        "Perl",
        "-e=touch#e -E=touch#e -i?#inplace -n -p -a -c -s -S -t -T -u -U -v -V -w -W -X -h -l? -0? -F? -M= "
        "-m= -I= -x? -C? -d? -D?",
    ),
    _editing_interpreter(
        "ruby",
        "Ruby",
        "-e=touch#e -i?#inplace -n -p -a -c -l -s -S -w -W? -v -d -y -h -I= -r= -C=chdir -x? -F? -0? -E= "
        "-K? -T? --enable= --disable= --jit --yjit --version --help --verbose",
    ),
    _row(
        "awk gawk mawk nawk",
        "interpreter",
        "runs an awk program over files; the program may write files (print > FILE) and run commands",
        "-f|--file=runs#program -v|--assign= -F|--field-separator= -W= -e|--source=touch#program -b -c -d? "
        "-D? -E=runs#program -g -h -i|--include=runs -l|--load= -L? -M -n -N -o? -O -p? -P -r -s -S -t -V",
        "touch read*",
        strict=False,
        when=(_when("program", slots="read*"),),
    ),
    _row(
        "node nodejs deno bun",
        "interpreter",
        "runs JavaScript: `-e CODE`, a file, or its input",
        "-e|--eval=touch#e -p|--print=touch#e -r|--require= --import= --input-type= -c|--check "
        "-i|--interactive --loader= -v|--version -h|--help",
        "runs data*",
        options_first=True,
        strict=False,
        stdin_operand="-",
        when=(
            _when("e", slots="data*"),
            _when("", "e", operands=0, runs_input="code"),
        ),
    ),
    # -- removers -----------------------------------------------------------------------------------------
    _remover(
        "rm",
        "removes files and trees",
        "-f|--force -i -I --interactive? --one-file-system --no-preserve-root --preserve-root? "
        "-r|-R|--recursive "
        "-d|--dir -v|--verbose",
    ),
    _remover("rmdir", "removes empty directories", "-p|--parents --ignore-fail-on-non-empty -v|--verbose"),
    _remover("unlink", "removes a file"),
    _remover(
        "shred",
        "overwrites files, and removes them with `-u`",
        "-f|--force -n|--iterations= --random-source=read -s|--size= -u --remove? -v|--verbose -x|--exact "
        "-z|--zero",
    ),
    _remover("rimraf del del-cli trash trash-put srm", "removes files and trees"),
    _find(),
    _row(
        "rsync",
        "remover",
        "copies files; `--delete` removes from the destination, `--remove-source-files` the sources",
        "-e|--rsh=script --rsync-path= -f|--filter= --exclude= --include= --exclude-from=read "
        "--include-from=read --files-from=read --log-file=write --log-file-format= --backup-dir=write "
        "--suffix= --partial-dir=touch -T|--temp-dir=touch --compare-dest=read --copy-dest=read "
        "--link-dest=read --password-file=read --write-batch=write --only-write-batch=write "
        "--read-batch=read --chmod= --chown= --usermap= --groupmap= --timeout= --contimeout= --port= "
        "--sockopts= -B|--block-size= --max-size= --min-size= --max-delete= --bwlimit= --modify-window= "
        "--address= --out-format= --info= --debug= --stop-after= --stop-at= --checksum-choice= --cc= "
        "--compress-choice= --zc= --compress-level= --zl= --skip-compress= --iconv= --protocol= "
        "-M|--remote-option= --outbuf= --max-alloc= --delete#delete --del#delete --delete-before#delete "
        "--delete-during#delete --delete-delay#delete --delete-after#delete --delete-excluded#delete "
        "--delete-missing-args#delete --remove-source-files#sources",
        "read* write",
        strict=False,
        when=(
            _when("delete sources", slots="remove* remove"),
            _when("delete", slots="read* remove"),
            _when("sources", slots="remove* write"),
        ),
    ),
    _row(
        "tar",
        "remover",
        "archives files; `--remove-files` removes them",
        "-c|--create -x|--extract|--get -t|--list -r|--append -u|--update -A|--catenate -d|--diff|--compare "
        "-z|--gzip -j|--bzip2 -J|--xz -a|--auto-compress -v|--verbose -p|--preserve-permissions "
        "-k|--keep-old-files "
        "-h|--dereference -O|--to-stdout -P|--absolute-names -S|--sparse -W|--verify -m|--touch "
        "-l|--check-links -s|--same-order -B|--read-full-records -G|--incremental -M|--multi-volume "
        "-R|--block-number -w|--interactive --zstd --lzma --lzip --lzop --no-same-owner --same-owner "
        "--numeric-owner --overwrite --keep-newer-files --wildcards --no-wildcards --anchored "
        "--delete -f|--file=touch -C|--directory=touch -T|--files-from=read -X|--exclude-from=read "
        "--exclude= -I|--use-compress-program=command --to-command=script "
        "-F|--info-script|--new-volume-script=command "
        "--rsh-command=command --index-file=write -g|--listed-incremental=write -N|--newer|--after-date= "
        "-b|--blocking-factor= -H|--format= -K|--starting-file= -L|--tape-length= -V|--label= --owner= "
        "--group= --mode= --mtime= --transform|--xform= --strip-components= --suffix= --backup? "
        "--remove-files#remove",
        "touch*",
        syntax="tar",
        strict=False,
        when=(_when("remove", slots="remove*"),),
    ),
    _row(
        "zip",
        "remover",
        "archives files; `-m` moves them in (removes them)",
        "-m|--move#move -b=touch -t= -tt= -n= -O|--output-file=write -P= -Z= -s= -TT|--unzip-command=script "
        "-q -r -R -j -J -D -e -f -F -g -h -k -l -L -o -p -S -T -u -v -V -w -X -y -z -@ -c -d -x -i -a -A -H",
        "write read*",
        strict=False,
        when=(_when("move", slots="write remove*"),),
    ),
    # -- writers ------------------------------------------------------------------------------------------
    _row(
        "cp",
        "writer",
        "copies files to the last operand (or `-t DIR`)",
        "-a|--archive --attributes-only --backup? -b --copy-contents -d --debug -f|--force -i|--interactive "
        "-H -l|--link -L|--dereference -n|--no-clobber -P|--no-dereference -p --preserve? --no-preserve= "
        "--parents -R|-r|--recursive --reflink? --remove-destination --sparse= --strip-trailing-slashes "
        "-s|--symbolic-link -S|--suffix= -t|--target-directory=write#target -T|--no-target-directory "
        "-u|--update? -v|--verbose --keep-directory-symlink -x|--one-file-system -Z|--context?",
        "read* write",
        when=(_when("target", slots="read*"),),
        edit=True,
    ),
    _row(
        "mv",
        "writer",
        "moves files (away from where they were) to the last operand (or `-t DIR`)",
        "--backup? -b --debug -f|--force -i|--interactive -n|--no-clobber --exchange --no-copy "
        "--strip-trailing-slashes -S|--suffix= -t|--target-directory=write#target -T|--no-target-directory "
        "-u|--update? -v|--verbose -Z|--context",
        "remove* write",
        when=(_when("target", slots="remove*"),),
        edit=True,
    ),
    _row(
        "ln",
        "writer",
        "makes links; a symbolic link changes what a relative path names",
        "--backup? -b -d|-F|--directory -f|--force -i|--interactive -L|--logical -n|--no-dereference "
        "-P|--physical -r|--relative -s|--symbolic#symbolic -S|--suffix= -t|--target-directory=write#target "
        "-T|--no-target-directory -v|--verbose",
        "touch* write",
        when=(_when("target", slots="touch*"), _when("symbolic", moves=True)),
    ),
    _row(
        "install",
        "writer",
        "copies files and sets their attributes",
        "--backup? -b -C|--compare -c -d|--directory#directories -D -g|--group= -m|--mode= -o|--owner= "
        "-p|--preserve-timestamps -s|--strip --strip-program=command -S|--suffix= "
        "-t|--target-directory=write#target -T|--no-target-directory -v|--verbose -Z|--context? "
        "--preserve-context",
        "read* write",
        when=(_when("directories", slots="write*"), _when("target", slots="read*")),
    ),
    _row(
        "mkdir",
        "writer",
        "makes directories",
        "-m|--mode= -p|--parents -v|--verbose -Z|--context?",
        "write*",
        edit=True,
    ),
    _row(
        "touch",
        "writer",
        "makes files or changes their times",
        "-a -c|--no-create -d|--date= -f -h|--no-dereference -m -r|--reference=read -t= --time=",
        "write*",
        edit=True,
    ),
    _row(
        "tee",
        "writer",
        "writes its input to files",
        "-a|--append -i|--ignore-interrupts -p --output-error?",
        "write*",
    ),
    # The first operand is a mode or an owner (`chown -R $USER build`), but with --reference; GNU chmod reads
    # `-w`, `-x`, ... as the mode.
    _row(
        "chmod",
        "writer",
        "changes files' modes",
        "-c|--changes -f|--silent|--quiet -v|--verbose --no-preserve-root --preserve-root "
        "--reference=read#reference -R|--recursive#tree "
        + " ".join(f"-{letter}?#mode" for letter in "rwxXstugoa"),
        "data write*",
        strict=False,
        when=(
            _when("tree reference", slots="tree*"),
            _when("tree mode", slots="tree*"),
            _when("tree", slots="data tree*"),
            _when("reference", slots="write*"),
            _when("mode", slots="write*"),
        ),
    ),
    _row(
        "chown chgrp",
        "writer",
        "changes files' owners",
        "-c|--changes -f|--silent|--quiet -v|--verbose --dereference -h|--no-dereference -H -L -P "
        "--no-preserve-root --preserve-root --reference=read#reference -R|--recursive#tree --from=",
        "data write*",
        strict=False,
        when=(
            _when("tree reference", slots="tree*"),
            _when("tree", slots="data tree*"),
            _when("reference", slots="write*"),
        ),
    ),
    # chattr reads `-i`, `-a`, ... (and `+i`, `=i`) as the attributes it clears (or sets).
    _row(
        "chattr",
        "writer",
        "changes files' attributes",
        "-R#tree -V -f -v= -p= " + " ".join(f"-{letter}" for letter in "aAcCdDeFijmPsStTux"),
        "write*",
        strict=False,
        when=(_when("tree", slots="tree*"),),
    ),
    _row(
        "setfacl",
        "writer",
        "changes files' access lists",
        "-m|--modify= -x|--remove= -M|--modify-file=read -X|--remove-file=read --set= --set-file=read "
        "-b|--remove-all -k|--remove-default -d|--default -L|--logical -P|--physical -n|--no-mask --mask "
        "--restore=read --test -R|--recursive#tree",
        "write*",
        strict=False,
        when=(_when("tree", slots="tree*"),),
    ),
    _row(
        "truncate",
        "writer",
        "changes files' sizes",
        "-c|--no-create -o|--io-blocks -r|--reference=read -s|--size=",
        "write*",
    ),
    _row("dd", "writer", "copies `if=` to `of=`", "", "data*", keyed=(("of", "write"), ("if", "read"))),
    # What they write is a disk: the safety checks ask for a write to a device, whatever the mode.
    _row(
        "mkfs mkfs.ext2 mkfs.ext3 mkfs.ext4 mkfs.xfs mkfs.btrfs mkfs.vfat mkfs.fat mkfs.exfat mkfs.ntfs "
        "mkfs.f2fs mke2fs mkdosfs mkswap wipefs blkdiscard",
        "writer",
        "makes a file system (or wipes one) on a device",
        "-t|--type= -L|--label= -b= -n= -V|--verbose -h|--help",
        "write*",
        strict=False,
    ),
    _row(
        "fdisk gdisk",
        "writer",
        "changes a disk's partition table; `-l` lists it",
        "-l|--list#list -x|--list-details#list -b|--sector-size= -u|--units? -o|--output= -h|--help",
        "write*",
        strict=False,
        when=(_when("list", slots="read*"),),
    ),
    _row(
        "sfdisk",
        "writer",
        "changes a disk's partition table; `-l`, `-d`, `-J` list it",
        "-l|--list#list -F|--list-free#list -d|--dump#list -J|--json#list -s|--show-size#list "
        "-g|--show-geometry#list -V|--verify#list -o|--output= -u|--unit= -h|--help",
        "write*",
        strict=False,
        when=(_when("list", slots="read*"),),
    ),
    # sgdisk -l loads a backup into the disk; parted -l lists every disk but runs the commands it is given.
    _row(
        "cfdisk sgdisk parted",
        "writer",
        "changes a disk's partition table",
        "-b|--sector-size= -u|--units? -h|--help",
        "write*",
        strict=False,
    ),
    # These lose a disk's data by a volume's or a pool's name, no device path in sight: each such call asks,
    # as a write to a device does (their readers are other programs or verbs: lvs, zpool status).
    _row(
        "pvremove vgremove lvremove vgreduce lvreduce lvresize pvmove vgsplit vgmerge lvconvert",
        "writer",
        "changes a disk's volumes (LVM)",
        "",
        "touch*",
        strict=False,
        implicit=_VOLUMES,
    ),
    _row(
        "lvm",
        "subcommands",
        "runs an LVM command; `vgremove`, `lvremove`, … change a disk's volumes",
        "",
        "touch*",
        strict=False,
        verbs=(
            _verb(
                "pvremove vgremove lvremove vgreduce lvreduce lvresize pvmove vgsplit vgmerge lvconvert",
                "changes a disk's volumes",
                implicit=_VOLUMES,
            ),
        ),
    ),
    _row(
        "zpool zfs",
        "subcommands",
        "manages ZFS pools and datasets; `destroy`, `create`, `rollback`, … change them",
        "",
        "touch*",
        strict=False,
        verbs=(
            _verb(
                "destroy create labelclear add attach detach replace split offline initialize trim rollback "
                "receive recv",
                "changes a disk's pools or datasets",
                implicit=_POOLS,
            ),
        ),
    ),
    _row(
        "dmsetup",
        "subcommands",
        "manages device-mapper devices; `remove`, `create`, `load`, … change them",
        "",
        "touch*",
        strict=False,
        verbs=(
            _verb(
                "remove remove_all create load reload wipe_table clear rename message suspend",
                "changes device-mapper devices",
                implicit=_MAPPER,
            ),
        ),
    ),
    # A block or character node made anywhere opens the disk (or memory) it numbers to every later writer.
    _row(
        "mknod",
        "writer",
        "makes a device node (or a FIFO)",
        "-m|--mode= -Z|--context?",
        "write data*",
        when=(_when(min_operands=3, implicit=_DEVICE_NODE),),
    ),
    _row(
        "flashrom",
        "writer",
        "reads or writes a firmware chip",
        "",
        "touch*",
        strict=False,
        implicit=_FIRMWARE,
    ),
    _row(
        "efibootmgr",
        "writer",
        "lists the firmware's boot entries; its options change them",
        _options(
            "-v|--verbose -q|--quiet -b|--bootnum= -d|--disk=touch -p|--part= -L|--label= -l|--loader=",
            *(
                Option(names, implicit=_BOOT_ENTRIES)
                for names in (
                    ("-B", "--delete-bootnum"),
                    ("-c", "--create"),
                    ("-C", "--create-only"),
                    ("-O", "--delete-bootorder"),
                    ("-a", "--active"),
                    ("-A", "--inactive"),
                    ("-N", "--delete-bootnext"),
                    ("-T", "--delete-timeout"),
                )
            ),
            *(
                Option(names, "value", implicit=_BOOT_ENTRIES)
                for names in (("-o", "--bootorder"), ("-n", "--bootnext"), ("-t", "--timeout"))
            ),
        ),
        "touch*",
        strict=False,
    ),
    _row(
        "sysctl",
        "writer",
        "reads kernel settings; `-w`, `-p` and `--system` change them",
        _options(
            "-a|--all -n|--values -N|--names -e|--ignore -q|--quiet -b|--binary -r|--pattern=",
            Option(("-w", "--write"), implicit=_KERNEL_SETTINGS),
            Option(("-p", "--load"), "optional", "read", implicit=_KERNEL_SETTINGS),
            Option(("--system",), implicit=_KERNEL_SETTINGS),
        ),
        "data*",
        strict=False,
    ),
    _row(
        "sed",
        "writer",
        "edits text; `-i` edits the files it reads (and a script may write files)",
        "-n|--quiet|--silent --debug -e|--expression=touch#script -f|--file=runs#script --follow-symlinks "
        "-i|--in-place?#inplace -l|--line-length= --posix -E|-r|--regexp-extended -s|--separate --sandbox "
        "-u|--unbuffered -z|--null-data",
        "touch read*",
        when=(
            _when("inplace script", slots="write*"),
            _when("inplace", "script", slots="touch write*"),
            _when("script", slots="read*"),
        ),
    ),
    # -- readers ------------------------------------------------------------------------------------------
    _reader("cat", "prints files"),
    _reader(
        "ls dir vdir",
        "lists directories",
        "-I|--ignore= --hide= -w|--width= -T|--tabsize= --block-size= --color? --format= --quoting-style= "
        "--sort= --time= --time-style= --indicator-style= --hyperlink?",
    ),
    _reader(
        "head tail",
        "prints the start or end of files",
        "-n|--lines= -c|--bytes= --pid= -s|--sleep-interval= --max-unchanged-stats=",
    ),
    _reader("wc", "counts lines and words", "--files0-from=read --total="),
    _reader(
        "grep egrep fgrep",
        "searches files",
        "-e|--regexp=data#pattern -f|--file=read#pattern -m|--max-count= -A|--after-context= "
        "-B|--before-context= -C|--context= --include= --exclude= --exclude-dir= --exclude-from=read "
        "--color|--colour? --label= -d|--directories= -D|--devices= --binary-files= --group-separator=",
        "data read*",
        when=(_when("pattern", slots="read*"),),
    ),
    _reader("echo printf", "prints its words", "-v=", "data*"),
    _reader("pwd true false : basename dirname realpath readlink which type", "prints names", "", "data*"),
    _reader("test [", "tests files and strings", "", "read*"),
    # Known so that naming a disk in them does not ask (a program the table cannot read may write one).
    _reader(
        "lsblk blkid findmnt df",
        "lists disks, partitions and file systems",
        "-o|--output= -t|--type= -x|--sort= -e|--exclude= -I|--include= -B|--block-size= -S|--source= "
        "-T|--target= -F|--tab-file=read -n -l -P -J -b -a -f -h -s -i -k -m -p",
    ),
    _reader(
        "stat file du diff cmp comm cut nl od tr cksum md5sum sha1sum sha256sum sha512sum",
        "reads files",
        "-c|--format= --printf= -m=read -f=read -X=read --exclude= -d|--max-depth= -t|--threshold= "
        "--time-style= -B|--block-size= -x= -I= --label= -L= -U= -W= --to-file=read --from-file=read "
        "--files0-from=read --tabsize= --line-format= --old-line-format= --new-line-format= "
        "--unchanged-line-format= --palette= --color?",
    ),
    _row(
        "sort",
        "reader",
        "sorts lines; `-o` writes a file",
        "-o|--output=write -T|--temporary-directory=touch -k|--key= -t|--field-separator= -S|--buffer-size= "
        "--compress-program=command --files0-from=read --batch-size= --parallel= --random-source=read",
        "read*",
        strict=False,
    ),
    _row(
        "uniq",
        "reader",
        "drops repeated lines (a second operand is written)",
        "-f|--skip-fields= -s|--skip-chars= -w|--check-chars= --all-repeated? --group?",
        "read write",
        strict=False,
    ),
    _row(
        "tree",
        "reader",
        "lists a tree; `-o` writes a file",
        "-o=write -I= -P= -L= --filelimit= --charset= -H= -T= --fromfile",
        "read*",
        strict=False,
    ),
    _row(
        "alias",
        "launcher",
        "defines commands: each NAME=VALUE's value runs as a script when the name is used",
        "-p",
        "data*",
        keyed=(("*", "script"),),
        strict=False,
    ),
    # -- variables --------------------------------------------------------------------------------------
    _row(
        "export declare typeset local readonly",
        "variables",
        "sets shell variables (GIT_SSH_COMMAND=…, GIT_CONFIG_*=… make git run a program)",
        "-a -A -f -F -g -i -l -n -p -r -t -u -x -I +a +A +f +i +l +n +r +t +u +x",
        "assign*",
        strict=False,
    ),
    # -- directory changes -------------------------------------------------------------------------------
    _row(
        "cd", "directory", "changes the directory later commands run in", "-L -P -e -@", "chdir", strict=False
    ),
    _row("pushd", "directory", "changes the directory, remembering the last", "-n", "chdir", strict=False),
    _row("popd", "directory", "changes back to a remembered directory", "-n", "moves*", strict=False),
    # -- sub-commands after global options ---------------------------------------------------------------
    _row(
        "git",
        "subcommands",
        "version control; `config`, `-c` settings, `submodule add`, hook templates write git's own files",
        (
            *_options(
                "-v|--version -h|--help --html-path --man-path --info-path -p|--paginate -P|--no-pager "
                "--no-replace-objects --no-lazy-fetch --no-optional-locks --no-advice --bare "
                "--literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs -C=touch "
                "--exec-path?touch --git-dir=touch --work-tree=touch --namespace= --super-prefix= "
                "--list-cmds= --attr-source="
            ),
            Option(("-c",), "value", implicit=_GIT_RUNS, implicit_values=_GIT_RUNNING_KEYS),
            Option(("--config-env",), "value", implicit=_GIT_RUNS, implicit_values=_GIT_RUNNING_KEYS),
        ),
        "touch*",
        options_first=True,
        verbs=(
            _verb(
                "config",
                "reads or writes git's configuration",
                "--global --system --local --worktree -f|--file=write#file --blob=#file --get#read "
                "--get-all#read --get-regexp#read --get-urlmatch#read -l|--list#read --get-color#read "
                "--get-colorbool#read --show-origin --show-scope --name-only -z|--null --includes "
                "--no-includes --default= --type= --bool --int --bool-or-int --path --expiry-date "
                "--fixed-value -e|--edit#write --add#write --replace-all#write --unset#write "
                "--unset-all#write --rename-section#write --remove-section#write --comment=",
                "data*",
                verbs_optional=True,
                verbs=(
                    _verb(
                        "set unset edit rename-section remove-section",
                        "writes git's configuration",
                        "--global --system --local --worktree -f|--file=write --all --append --comment= "
                        "--type= --value= --fixed-value",
                        "data*",
                        implicit=_GIT_CONFIG,
                    ),
                    _verb("get list", "reads git's configuration", "", "data*"),
                ),
                when=(
                    _when("write", "file", implicit=_GIT_CONFIG),
                    _when("", "read file", min_operands=2, implicit=_GIT_CONFIG),
                ),
            ),
            _verb(
                "submodule",
                "manages submodules",
                "-q|--quiet --recursive --cached",
                "touch*",
                verbs=(
                    _verb(
                        "add",
                        "adds a submodule (writes .gitmodules)",
                        "-b= -f --name= --reference= --depth=",
                        "data*",
                        implicit=".gitmodules",
                    ),
                    _verb(
                        "foreach",
                        "runs a shell command in each submodule",
                        "-q|--quiet --recursive",
                        "script*",
                    ),
                ),
            ),
            _verb(
                "rev-parse",
                "prints revisions and paths",
                "--git-dir#gitdir --git-path=#gitdir --absolute-git-dir#gitdir --git-common-dir#gitdir",
                "data*",
                when=(_when("gitdir", implicit=_GIT_DIR),),
            ),
            _verb(
                "init",
                "makes a repository",
                (
                    *_options(
                        "-q|--quiet --bare --separate-git-dir=touch -b|--initial-branch= --shared? "
                        "--object-format= --ref-format="
                    ),
                    Option(("--template",), "value", "touch", implicit=_GIT_TEMPLATE),
                ),
            ),
            _verb(
                "clone",
                "copies a repository",
                (
                    *_options(
                        "-q|--quiet -v|--verbose -l|--local --no-hardlinks -s|--shared --bare --mirror "
                        "-n|--no-checkout "
                        "--separate-git-dir=touch -o|--origin= -b|--branch= --reference= "
                        "--reference-if-able= "
                        "--depth= --shallow-since= --shallow-exclude= --filter= -j|--jobs= "
                        "--recurse-submodules? "
                        "-u|--upload-pack=script"
                    ),
                    Option(("--template",), "value", "touch", implicit=_GIT_TEMPLATE),
                    Option(
                        ("-c", "--config"), "value", implicit=_GIT_RUNS, implicit_values=_GIT_RUNNING_KEYS
                    ),
                ),
                "data touch*",
            ),
            _verb(
                "commit",
                "records changes",
                "-m|--message= -F|--file=read -C|--reuse-message= -c|--reedit-message= --fixup= --squash= "
                "--author= --date= -t|--template=read --cleanup= -S|--gpg-sign? --trailer=",
            ),
        ),
    ),
    _row(
        "npm",
        "subcommands",
        "runs Node packages; `config set` / `set` write .npmrc; `exec` runs a command",
        "-g|--global --location= --prefix=touch -w|--workspace= --workspaces --userconfig=touch "
        "--globalconfig=touch --registry= --loglevel= -d -dd -ddd -s|--silent -q|--quiet --json "
        "--parseable -l|--long --dry-run -f|--force --no-audit --no-fund --legacy-peer-deps -D|--save-dev "
        "-S|--save -E|--save-exact -O|--save-optional -B|--save-bundle -P|--save-prod --production "
        "--include= --omit= --cache=touch --scope= --tag= --otp= -y|--yes --no-save --ignore-scripts "
        "--foreground-scripts --no-package-lock --package-lock-only --install-strategy= -C|--dir=touch",
        "data*",
        verbs=(
            _verb(
                "config c",
                "reads or changes .npmrc",
                "--location= -g|--global --json -l|--long",
                "data*",
                verbs=_config_verbs(".npmrc"),
            ),
            _verb("set", "changes .npmrc", "-g|--global --location=", "data*", implicit=".npmrc"),
            _verb(
                "exec x",
                "runs a package's program",
                "--package= -c|--call=script -y|--yes -w|--workspace=",
                "command",
                options_first=True,
            ),
        ),
    ),
    _row(
        "pnpm",
        "subcommands",
        "runs Node packages; `config set` writes .npmrc; `exec` and `dlx` run a command",
        "-g|--global -C|--dir=touch -w|--workspace-root -r|--recursive --filter= -F= --loglevel= --silent "
        "-s --reporter= --stream --aggregate-output --color --no-color",
        "data*",
        verbs=(
            _verb(
                "config c",
                "reads or changes .npmrc",
                "-g|--global --location= --json",
                "data*",
                verbs=_config_verbs(".npmrc"),
            ),
            _verb("set", "changes .npmrc", "-g|--global --location=", "data*", implicit=".npmrc"),
            _verb(
                "exec dlx",
                "runs a program",
                "-c|--shell-mode --package= -r|--recursive",
                "command",
                options_first=True,
            ),
        ),
    ),
    _row(
        "yarn",
        "subcommands",
        "runs Node packages; `config set` writes .yarnrc, `set version` .yarnrc.yml",
        "--cwd=touch --silent --verbose --offline --json --no-progress",
        "data*",
        verbs=(
            _verb(
                "config",
                "reads or changes .yarnrc",
                "-g|--global -H|--home --json",
                "data*",
                verbs=_config_verbs(".yarnrc"),
            ),
            _verb(
                "set",
                "changes the project's yarn settings",
                "",
                "data*",
                implicit=".yarnrc",
                verbs_optional=True,
                verbs=(
                    _verb(
                        "version",
                        "installs a yarn release (writes .yarnrc.yml)",
                        "",
                        "data*",
                        implicit=".yarnrc.yml",
                    ),
                ),
            ),
            _verb("exec dlx", "runs a program", "-p|--package= -q|--quiet", "command", options_first=True),
        ),
    ),
    _pip("pip"),
    _row(
        "uv",
        "subcommands",
        "manages Python projects; `uv pip` is pip, `uv run` and `uv tool run` run a command",
        "--directory=moves --project=touch --config-file=read --cache-dir=touch -q|--quiet -v|--verbose "
        "--offline --no-cache -n --native-tls --no-progress --color= --python-preference= "
        "--no-python-downloads --allow-insecure-host= --no-config --managed-python --no-managed-python",
        "data*",
        verbs=(
            _verb(
                "pip",
                "installs Python packages",
                "",
                "data*",
                verbs=(
                    _verb(
                        "install sync compile",
                        "installs packages",
                        "-r|--requirement=read -c|--constraint=read -e|--editable=read -t|--target=write "
                        "--prefix=touch -o|--output-file=write -p|--python=",
                        "data*",
                    ),
                ),
            ),
            _verb(
                "run",
                "runs a command in the project's environment",
                "--with= --with-editable= --with-requirements=read -p|--python= --env-file=read --package= "
                "--directory=moves --isolated --no-sync --frozen --locked --extra= --all-extras --no-dev "
                "--group= -m|--module --script -s",
                "command",
                options_first=True,
            ),
            _verb(
                "tool",
                "runs and installs tools",
                "",
                "data*",
                verbs=(
                    _verb(
                        "run",
                        "runs a tool",
                        "--from= --with= -p|--python= --isolated",
                        "command",
                        options_first=True,
                    ),
                ),
            ),
        ),
    ),
    _row(
        "pre-commit",
        "subcommands",
        "runs git hooks; `install` writes them",
        "-c|--config=read --color=",
        "data*",
        verbs=(
            _verb(
                "install init-templatedir uninstall",
                "writes git hooks",
                "-c|--config=read -t|--hook-type= -f|--overwrite --install-hooks --allow-missing-config",
                "data*",
                implicit=_GIT_HOOKS,
            ),
        ),
    ),
    _row(
        "husky simple-git-hooks",
        "subcommands",
        "writes git hooks",
        "",
        "data*",
        implicit=_GIT_HOOKS,
        strict=False,
    ),
    _row(
        "conda mamba micromamba",
        "subcommands",
        "manages environments; `init` writes shell start-up files",
        "-v|--verbose -q|--quiet --json",
        "data*",
        strict=False,
        verbs=(
            _verb(
                "init",
                "writes shell start-up files",
                "--all --user --system --reverse -d|--dry-run",
                "data*",
                implicit=_START_UP,
            ),
            _verb(
                "run",
                "runs a command in an environment",
                "-n|--name= -p|--prefix=touch --cwd=moves --no-capture-output --live-stream -v|--verbose",
                "command",
                options_first=True,
            ),
        ),
    ),
    _row(
        "poetry pipenv pdm hatch rye",
        "subcommands",
        "manages Python projects; `run` runs a command in the project's environment",
        "-q|--quiet -v|--verbose -n|--no-interaction --no-ansi --ansi -C|--directory=moves "
        "-P|--project=touch",
        "data*",
        strict=False,
        verbs=(_verb("run", "runs a command", "", "command", options_first=True),),
    ),
    _row(
        "bundle bundler",
        "subcommands",
        "manages Ruby gems; `exec` runs a command with them",
        "--verbose --no-color -r|--retry=",
        "data*",
        strict=False,
        verbs=(
            _verb(
                "exec",
                "runs a command",
                "--keep-file-descriptors --gemfile=read",
                "command",
                options_first=True,
            ),
        ),
    ),
    _launcher(
        "nix-shell",
        "runs a shell (or a `--run` / `--command` script) with packages",
        "--run=script --command=script -p|--packages --pure -I= --arg= --argstr= -A|--attr= --keep= "
        "-i= --option=",
        "data*",
        strict=False,
        options_first=False,
    ),
    _row(
        "pipx",
        "subcommands",
        "installs Python applications; `ensurepath` writes shell start-up files; `run` runs one",
        "-v|--verbose -q|--quiet",
        "data*",
        strict=False,
        verbs=(
            _verb(
                "ensurepath", "writes shell start-up files", "--force --prepend", "data*", implicit=_START_UP
            ),
            _verb(
                "run",
                "runs an application",
                "--spec= --python= --pip-args= --no-cache",
                "command",
                options_first=True,
            ),
        ),
    ),
)
"""The table: one row per program (or family of names), in the order the docs list them."""


# -- finding a program's row -------------------------------------------------------------------------------

_VERSIONED: Final = re.compile(r"(python|pypy|pip|perl|ruby|php|node|lua)[0-9][0-9.]*m?")


def _rows_by_name(programs: Iterable[Program]) -> Mapping[str, Program]:
    found: dict[str, Program] = {}
    for program in programs:
        for name in program.names:
            if name in found:
                raise ValueError(f"the program {name!r} has two rows")
            found[name] = program
    return MappingProxyType(found)


_BY_NAME: Final = _rows_by_name(PROGRAMS)
_WRAPPERS: Final = MappingProxyType(
    {name: program for program in PROGRAMS if program.strip is not None for name in program.names}
)


def name_key(word: str) -> str:
    """The name a command word runs a program by, as the table compares names: its file name, case-folded
    (a case-insensitive file system runs ``RM`` as ``rm``), without zsh's leading ``=``, and without a
    version (``python3.12`` is ``python``)."""
    name = posixpath.basename(word).casefold().lstrip("=")
    versioned = _VERSIONED.fullmatch(name)
    return versioned.group(1) if versioned is not None else name


def program_named(word: str) -> Program | None:
    """The row of the program a command word runs, or ``None`` when the table does not know it."""
    return _BY_NAME.get(name_key(word))


def removes(program: Program) -> bool:
    """Whether a row may remove the paths it is given (by an operand's role or an option's)."""
    slots = [program.operands, *(when.slots for when in program.when if when.slots is not None)]
    return any(slot.role == "remove" for group in slots for slot in group) or any(
        option.role == "remove" for option in program.options
    )


def _acts(program: Program) -> bool:
    """Whether a row can do what the safety checks ask about with no protected name written in the
    command: write, remove or touch a path (which a symbolic link on disk may lead into ``.git/hooks``),
    write a protected file it does not name, or run another command, a script or its input."""
    if program.kind not in ("reader", "directory") or program.launches or program.implicit is not None:
        return True
    slots = [program.operands, *(when.slots for when in program.when if when.slots is not None)]
    roles = {slot.role for group in slots for slot in group} | {option.role for option in program.options}
    if roles & {"write", "tree", "remove", "touch", "command", "script", "runs"}:
        return True
    if any(option.implicit is not None for option in program.options):
        return True
    if any(when.implicit is not None or when.runs_input is not None for when in program.when):
        return True
    return any(_acts(verb) for verb in program.verbs)


EDIT_COMMANDS: Final = frozenset(name for program in PROGRAMS if program.edit for name in program.names)
"""The edit commands ``acceptEdits`` may accept (the rows marked ``edit``)."""

QUICK_NAMES: Final = frozenset(name for program in PROGRAMS if _acts(program) for name in program.names)
"""The names of the programs whose rows may write, remove or run something (every row but the readers'
and the directory changers'): a command that names none of them, no protected path, no redirection that
writes and nothing the shell expands cannot make a safety check ask. Derived from the table, so a program
added to it is never skipped."""


# -- reading an argument vector by the table ---------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class ScriptRef:
    """A shell script a command runs: words ``argv[first:last]`` joined by single spaces, the first of them
    read from character ``offset`` on (an attached option value: ``-S'…'`` is offset 2, ``--command=…``
    after the ``=``)."""

    first: int
    last: int
    offset: int = 0

    def text(self, argv: Sequence[str]) -> str:
        """The script's text in ``argv``."""
        return " ".join(argv[self.first : self.last])[self.offset :]


class Part(NamedTuple):
    """A word, or the attached end of one, that the table gives a role: an operand or an option's value
    (a named tuple: readings make many).

    Attributes:
        word: the word's index in the argv (``-1`` for a value the program implies, see ``value``).
        role: what it is to the program.
        offset: where in the word it starts (an attached value: ``-t.git`` is offset 2).
        option: the option whose value it is (its first spelling; ``""`` for one the row does not know, so
            the value is only a guess); ``None`` for an operand.
        value: the text of an operand the program implies without it being written (find's ``.``).
    """

    word: int
    role: Role
    offset: int = 0
    option: str | None = None
    value: str | None = None

    def text(self, argv: Sequence[str]) -> str:
        """Its text in ``argv``."""
        return self.value if self.value is not None else argv[self.word][self.offset :]


class ArgvReading(NamedTuple):
    """An argument vector as the table reads it (a named tuple: one is made per distinct argv).

    Attributes:
        programs: the rows read: the program's, then each sub-command's (empty: the table does not know
            the program, so every word it is given may be a path it writes).
        parts: the words (or attached values) with a role, in order.
        commands: ``argv[start:end]`` slices it runs.
        scripts: shell scripts it runs.
        implicit: protected files it writes without naming them (the reasons' words).
        runs_input: what it runs from its standard input, if anything.
        moves: later commands may run in a directory no check can follow (``ln -s``, ``popd``).
        uncertain: it has an option (or a sub-command) the table does not know: every word may be a path
            it writes.
        unreadable: it may start more commands than are read (deny and ask match it).
        options: the options given (their first spellings), in order.
    """

    programs: tuple[Program, ...] = ()
    parts: tuple[Part, ...] = ()
    commands: tuple[tuple[int, int], ...] = ()
    scripts: tuple[ScriptRef, ...] = ()
    implicit: tuple[str, ...] = ()
    runs_input: InputKind | None = None
    moves: bool = False
    uncertain: bool = False
    unreadable: bool = False
    options: tuple[str, ...] = ()


_MAX_CANDIDATES: Final = 64
"""How many later words of a launcher the table cannot read are tried as the command it starts; one with
more is ``unreadable``, so deny and ask match it."""

_MAX_VERB_READINGS: Final = 8
"""How many later words are read as the sub-command when options before it cannot be read."""

_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_SCRIPT_CHARACTERS: Final = re.compile(r"[ \t\n;&|]")
_EXTRA: Final = Slot("touch")
_NAME_TESTS: Final = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename"})
_EMPTY: Final = ArgvReading()


@final
class _Reader:
    """Reads one argv by the table, row by row (a program, then its sub-commands)."""

    __slots__ = (
        "argv",
        "commands",
        "implicit",
        "moves",
        "options",
        "parts",
        "programs",
        "runs_input",
        "scripts",
        "size",
        "uncertain",
        "unreadable",
    )

    def __init__(self, argv: tuple[str, ...]) -> None:
        self.argv = argv
        self.size = len(argv)
        self.programs: list[Program] = []
        self.parts: list[Part] = []
        self.commands: list[tuple[int, int]] = []
        self.scripts: list[ScriptRef] = []
        self.implicit: list[str] = []
        self.options: list[str] = []
        self.runs_input: InputKind | None = None
        self.moves = False
        self.uncertain = False
        self.unreadable = False

    def result(self) -> ArgvReading:
        return ArgvReading(
            tuple(self.programs),
            tuple(self.parts),
            tuple(dict.fromkeys(self.commands)),
            tuple(dict.fromkeys(self.scripts)),
            tuple(dict.fromkeys(self.implicit)),
            self.runs_input,
            self.moves,
            self.uncertain,
            self.unreadable,
            tuple(self.options),
        )

    # -- rows ---------------------------------------------------------------------------------------------

    def read(self, row: Program, start: int) -> None:
        """Read ``argv[start:]`` as the arguments of ``row``."""
        self.programs.append(row)
        if row.implicit is not None:
            self.implicit.append(row.implicit)
        if row.every_word:
            self.every_word(start)
            return
        if row.syntax == "find":
            self.read_find(row, start)
            return
        argv = self.argv
        tags: set[str] = set()
        operands: list[int] = []
        unsure = False  # an option this row does not know
        index = self.old_style(row, start, tags) if row.syntax == "tar" else start
        ended = False
        position = 0  # the slot the next operand fills, for rows read operand by operand
        while index < self.size:
            word = argv[index]
            if not ended and self.is_option(row, word):
                if word == "--":
                    ended = True
                    index += 1
                    continue
                index, verb, known, ended = self.option(row, word, index, tags)
                unsure = unsure or not known
                if verb is not None:
                    self.enter(row, verb, index, tags, unsure=unsure)
                    return
                continue
            if not operands and row.verbs:
                verb = row.verb_index.get(word) or row.verb_index.get(word.casefold())
                if verb is not None:
                    self.enter(row, verb, index + 1, tags, unsure=unsure)
                    return
                if unsure:
                    self.verbs_anywhere(row, index + 1)
                if not row.verbs_optional:
                    # A sub-command the table does not know: its words are its own, which no row reads.
                    self.uncertain = True
                    self.parts.extend(Part(later, "data") for later in range(index, self.size))
                    self.finish(row, tags, [])
                    return
            ended = ended or row.options_first
            operands.append(index)
            if row.streams:
                position = self.stream(row, tags, index, position)
                if position < 0:
                    break
            index += 1
        self.finish(row, tags, operands)
        if unsure and row.strict:
            self.uncertain = True
            if row.launches:
                self.every_word(start)

    def enter(self, row: Program, verb: Program, start: int, tags: set[str], *, unsure: bool) -> None:
        """Finish ``row`` at its sub-command ``verb``, then read the words from ``start`` by its row."""
        self.uncertain = self.uncertain or (unsure and row.strict)
        self.finish(row, tags, [])
        self.read(verb, start)

    def stream(self, row: Program, tags: set[str], index: int, position: int) -> int:
        """Give the operand at ``index`` the role of slot ``position``: the next position, or -1 when the
        rest of the words are a command or a script it runs."""
        slots = self.slots(row, tags)
        word = self.argv[index]
        while position < len(slots) and slots[position].role == "assign" and not _ASSIGNMENT.match(word):
            position += 1
        slot = slots[position] if position < len(slots) else _EXTRA
        if slot.role == "command":
            self.commands.append((index, self.size))
            return -1
        if slot.role == "script" and slot.many:
            self.scripts.append(ScriptRef(index, self.size))
            return -1
        self.operand(index, slot.role)
        return position if slot.many else position + 1

    def slots(self, row: Program, tags: set[str], count: int | None = None) -> tuple[Slot, ...]:
        """The operand slots of ``row`` given these tags (and, when known, this many operands)."""
        for when in row.when:
            if when.slots is not None and self.applies(when, tags, count):
                return when.slots
        return row.operands

    def applies(self, when: When, tags: set[str], count: int | None) -> bool:
        if not when.tags <= tags or not when.without.isdisjoint(tags):
            return False
        if count is not None and (
            (when.operands is not None and when.operands != count) or count < when.min_operands
        ):
            return False
        if count is None and (when.operands is not None or when.min_operands):
            return False
        if when.launches is not None:
            return any(
                (launched := program_named(self.argv[start])) is not None and launched.kind == when.launches
                for start, end in self.commands
                if start < end
            )
        return True

    def finish(self, row: Program, tags: set[str], operands: list[int]) -> None:
        """Apply ``row``'s conditions, and give its operands their roles (unless read one by one)."""
        count = len(operands)
        for when in row.when:
            if not self.applies(when, tags, count):
                continue
            if when.implicit is not None:
                self.implicit.append(when.implicit)
            if when.runs_input is not None:
                self.runs_input = when.runs_input
            self.moves = self.moves or when.moves
        stdin = row.stdin_operand is not None and operands and self.argv[operands[0]] == row.stdin_operand
        if stdin:
            self.runs_input = "shell" if row.kind == "shell" else "code"
        if row.streams:
            return
        slots = self.slots(row, tags, count)
        if stdin and not slots[0].many:
            slots = (Slot("data"), *slots[1:])  # it names the input, not a file it runs
        if row.keyed:
            self.keyed(row, operands)
            return
        many = next((at for at, slot in enumerate(slots) if slot.many), None)
        if many is None:
            for at, index in enumerate(operands):
                self.operand(index, slots[at].role if at < len(slots) else "touch")
            return
        head, tail = slots[:many], slots[many + 1 :]
        rest = operands[len(head) :]
        split = max(len(rest) - len(tail), 0)
        for slot, index in zip(head, operands, strict=False):
            self.operand(index, slot.role)
        for index in rest[:split]:
            self.operand(index, slots[many].role)
        for slot, index in zip(tail, rest[split:], strict=False):
            self.operand(index, slot.role)
        if not operands and row.syntax == "find":
            self.parts.append(Part(-1, slots[many].role, value="."))  # find starts at "." without a root

    def operand(self, index: int, role: Role) -> None:
        self.parts.append(Part(index, role))
        if role == "script":
            self.scripts.append(ScriptRef(index, index + 1))
        elif role == "command":
            self.commands.append((index, self.size))

    def keyed(self, row: Program, operands: list[int]) -> None:
        """``KEY=VALUE`` operands: each value's role by its key (``*``: any key)."""
        roles = dict(row.keyed)
        for index in operands:
            key, equals, _ = self.argv[index].partition("=")
            role = (roles.get(key) or roles.get("*")) if equals else None
            offset = len(key) + 1 if role else 0
            self.parts.append(Part(index, role or "data", offset))
            if role == "script":
                self.scripts.append(ScriptRef(index, index + 1, offset))

    # -- options ------------------------------------------------------------------------------------------

    def is_option(self, row: Program, word: str) -> bool:
        if word == "-":
            return "-" in row.index.words
        if len(word) < 2:
            return False
        return word[0] == "-" or (word[0] == "+" and word[:2] in row.index.short)

    def option(
        self, row: Program, word: str, index: int, tags: set[str]
    ) -> tuple[int, Program | None, bool, bool]:
        """Read the option word at ``index``: the index after it (and its value), the sub-command its value
        names, whether the row knows it, and whether options end with it."""
        if word == "-":
            return self.take(row, row.index.words["-"], None, tags=tags, after=index + 1)
        if word.startswith("--"):
            return self.long_option(row, word, index, tags)
        prefix = word[0]
        for at in range(1, len(word)):
            option = row.index.short.get(prefix + word[at])
            if option is None:
                if word[at].isdigit() and at == 1:  # -5: a count (head, nice), as their own parsers read it
                    return index + 1, None, True, False
                if at + 1 < len(word):
                    self.unknown_value(row, index, at + 1)  # it may take the rest as its value
                return index + 1, None, False, False
            attached = at + 1 < len(word)
            if option.takes == "value" and not attached:
                value = index + 1 if index + 1 < self.size else None
                return self.take(row, option, value, tags=tags, after=index + 2)
            if option.takes in ("value", "optional") and attached:
                return self.take(row, option, index, offset=at + 1, tags=tags, after=index + 1)
            _, _, _, ends = self.take(row, option, None, tags=tags, after=index + 1)
            if ends:
                return index + 1, None, True, True
        return index + 1, None, True, False

    def unknown_value(self, row: Program, index: int, offset: int) -> None:
        """The value an option the row does not know may carry: a path it may write, unless the row only
        reads (the option is recorded as ``""``: a guess)."""
        if _acts(row):
            self.parts.append(Part(index, "touch", offset, ""))

    def long_option(
        self, row: Program, word: str, index: int, tags: set[str]
    ) -> tuple[int, Program | None, bool, bool]:
        """``--name``, ``--name=value`` or ``--name value``; an abbreviation of several is read as all of
        them (and as not known)."""
        name, equals, _ = word[2:].partition("=")
        options = row.index.long_options(name)
        if not options:
            if equals:
                self.unknown_value(row, index, len(name) + 3)
            return index + 1, None, False, False
        known = len(options) == 1
        option = next((option for option in options if option.takes == "value"), options[0])
        if option.takes in ("value", "optional") and equals:
            return self.take(
                row, option, index, offset=len(name) + 3, tags=tags, after=index + 1, known=known
            )
        if option.takes == "value":
            value = index + 1 if index + 1 < self.size else None
            return self.take(row, option, value, tags=tags, after=index + 2, known=known)
        return self.take(row, option, None, tags=tags, after=index + 1, known=known)

    def take(
        self,
        row: Program,
        option: Option,
        value: int | None,
        *,
        offset: int = 0,
        tags: set[str],
        after: int,
        known: bool = True,
    ) -> tuple[int, Program | None, bool, bool]:
        """Record an option given (with its value at word ``value``, from ``offset``)."""
        tags.update(option.tags)
        self.options.append(option.names[0])
        verb: Program | None = None
        text = "" if value is None else self.argv[value][offset:]
        if option.implicit is not None and (
            not option.implicit_values or text.casefold().startswith(option.implicit_values)
        ):
            self.implicit.append(option.implicit)
        if value is not None:
            if option.role in ("command", "script"):
                self.scripts.append(ScriptRef(value, value + 1, offset))
            self.parts.append(Part(value, option.role, offset, option.names[0]))
            folded = text.casefold()
            for prefix in option.script_prefixes:
                if folded.startswith(prefix):
                    self.scripts.append(ScriptRef(value, value + 1, offset + len(prefix)))
            if option.names_verb:
                verb = row.verb_index.get(text)
        return min(after, self.size), verb, known, option.ends_options

    def old_style(self, row: Program, index: int, tags: set[str]) -> int:
        """tar's old-style first word (``tar xzf a.tar``): bundled letters whose values follow in order."""
        if index >= self.size or self.argv[index].startswith("-") or not self.argv[index].isalpha():
            return index
        word = self.argv[index]
        options = [row.index.short.get("-" + letter) for letter in word]
        if any(option is None for option in options):
            return index  # not a bundle of its options: an operand
        following = index + 1
        for option in options:
            assert option is not None
            value = None
            if option.takes == "value" and following < self.size:
                value = following
                following += 1
            self.take(row, option, value, tags=tags, after=following)
        return following

    def verbs_anywhere(self, row: Program, start: int) -> None:
        """Options before the sub-command could not be read, so a later word may be it: read each one."""
        read = 0
        for index in range(start, self.size):
            verb = row.verb_index.get(self.argv[index])
            if verb is None:
                continue
            if read == _MAX_VERB_READINGS:
                self.unreadable = True
                return
            read += 1
            self.read(verb, index + 1)

    # -- find, and launchers the table cannot read --------------------------------------------------------

    def read_find(self, row: Program, start: int) -> None:
        """find: options, roots, then an expression of whole-word primaries."""
        argv = self.argv
        size = self.size
        index = start
        while index < size and (argv[index] in ("-H", "-L", "-P", "--") or argv[index].startswith("-O")):
            index += 1
            if argv[index - 1] == "--":
                break
        if index + 1 < size and argv[index] == "-D":
            index += 2
        roots: list[int] = []
        while index < size and not argv[index].startswith(("-", "(", "!", ")", ",")):
            roots.append(index)
            index += 1
        tags: set[str] = set()
        while index < size:
            option = row.index.words.get(argv[index])
            if option is None:
                index += 1
                continue
            value = argv[index + 1] if index + 1 < size else ""
            if not ("test" in option.tags and option.names[0] in _NAME_TESTS and not value.strip("*")):
                tags.update(option.tags)  # -name '*' chooses every file: no test that chooses some
            self.options.append(option.names[0])
            if option.takes == "until":
                end = index + 1
                while end < size and argv[end] != ";" and not (argv[end] == "+" and argv[end - 1] == "{}"):
                    end += 1
                self.commands.append((index + 1, end))
                index = end + 1
            elif option.takes == "value" and index + 1 < size:
                self.parts.append(Part(index + 1, option.role, 0, option.names[0]))
                index += 2
            else:
                index += 1
        self.finish(row, tags, roots)

    def every_word(self, start: int) -> None:
        """Every later word may start the command (and every word with blanks be a script), as a launcher
        the table cannot read is read."""
        argv = self.argv
        tried = 0
        for index in range(start, self.size):
            word = argv[index]
            if not word or _ASSIGNMENT.match(word):
                continue
            if word[0] == "-":
                equals = word.find("=")
                if equals < 0 or equals + 1 == len(word):
                    continue
            if tried == _MAX_CANDIDATES:
                self.unreadable = True  # the command may hide behind them: deny and ask match
                return
            tried += 1
            if word[0] == "-":
                self.scripts.append(ScriptRef(index, index + 1, word.find("=") + 1))  # --command=…
            elif _SCRIPT_CHARACTERS.search(word):
                self.scripts.append(ScriptRef(index, index + 1))  # watch 'rm -rf ~'
            else:
                self.commands.append((index, self.size))


@functools.lru_cache(maxsize=4096)
def _read(argv: tuple[str, ...], start: int) -> ArgvReading:
    # Keyed by the words alone: a row is a large value, and hashing it would cost more than reading.
    row = program_named(argv[start])
    if row is None:
        return _EMPTY
    reader = _Reader(argv)
    reader.read(row, start + 1)
    return reader.result()


def read_argv(argv: Sequence[str], start: int = 0) -> ArgvReading:
    """``argv[start:]`` (word values, after leading assignments) read by the table; ``programs`` is empty
    when the table does not know the program."""
    words = tuple(argv)
    if start >= len(words):
        return _EMPTY
    return _read(words, start)


# -- the shell readings' view: wrappers and what a command launches ----------------------------------------


@final
@dataclass(frozen=True, slots=True)
class Launch:
    """What one simple command starts besides itself, read from the table by its argv (word values).

    Indexes refer to the argv given to ``launch``.

    Attributes:
        wrapped: how many leading words only change how the rest runs (``nohup``, ``timeout 5``,
            ``nice -n 5``, ``time -p``, ``command``, ``builtin``, ``stdbuf -o0``, a bare ``xargs``, each
            with an optional ``--``): the plain reading matches ``argv[wrapped:]``. It equals
            ``len(argv)`` when nothing follows them.
        appends_arguments: the wrapped command gets more arguments than written (a bare ``xargs``).
        script_only: the index of ``SCRIPT`` when ``argv[wrapped:]`` is ``sh|bash|zsh -c|-lc SCRIPT …``:
            the plain reading reads ``SCRIPT`` as what runs (words after it make the command not
            understood). Not repeated in ``scripts``.
        commands: ``argv[start:end]`` slices it runs (``sudo -u root rm -rf /`` gives the slice of
            ``rm -rf /``; ``find … -exec rm {} \\;`` that of ``rm {}``), each to be read by ``launch`` in
            turn by whoever reads them.
        scripts: shell scripts it runs (``su -c S``, ``env -S S``, ``eval WORDS``, ``ssh HOST WORDS``).
        runs_input: it runs its standard input as a shell script (``bash``, ``sh -s``, ``sudo -s``): a
            heredoc, here-string, pipe or process substitution feeding it is read as a script.
        runs_files: the words naming a file it runs as a shell script (the ``runs`` role of a shell's row:
            ``bash FILE``, ``source FILE``, ``. FILE``, ``bash --rcfile FILE``): a process substitution
            there is read as a pipe into it.
        runs_code_input: it runs its standard input as code in another language (``python3``, ``perl -``).
        runs_code_files: the words naming a file of code it runs (``python3 FILE``, ``awk -f FILE``).
        unreadable: it may start a command the table cannot read (more candidate words than are tried):
            deny and ask must then match the command (fail closed).
    """

    wrapped: int = 0
    appends_arguments: bool = False
    script_only: int | None = None
    commands: tuple[tuple[int, int], ...] = ()
    scripts: tuple[ScriptRef, ...] = ()
    runs_input: bool = False
    runs_files: tuple[int, ...] = ()
    runs_code_input: bool = False
    runs_code_files: tuple[int, ...] = ()
    unreadable: bool = False


_SCRIPT_SHELLS: Final = frozenset({"bash", "sh", "zsh"})
_SCRIPT_FLAGS: Final = frozenset({"-c", "-lc"})


def launch(argv: Sequence[str]) -> Launch:
    """What the simple command ``argv`` (word values, after leading assignments) starts besides itself."""
    words = tuple(argv)
    wrapped, appends = strip_wrappers(words)
    if wrapped >= len(words):
        return Launch(wrapped, appends)
    if words[wrapped] in _SCRIPT_SHELLS and wrapped + 1 < len(words) and words[wrapped + 1] in _SCRIPT_FLAGS:
        return Launch(wrapped, appends, script_only=wrapped + 2 if wrapped + 2 < len(words) else None)
    reading = read_argv(words, wrapped)
    files = tuple([part.word for part in reading.parts if part.role == "runs"])
    # What a file it runs holds is in the language of the program's own row (a shell's, or code).
    shell = bool(files) and reading.programs[0].kind == "shell"
    return Launch(
        wrapped,
        appends,
        commands=reading.commands,
        scripts=reading.scripts,
        runs_input=reading.runs_input == "shell",
        runs_files=files if shell else (),
        runs_code_input=reading.runs_input == "code",
        runs_code_files=() if shell else files,
        unreadable=reading.unreadable,
    )


def strip_wrappers(argv: Sequence[str]) -> tuple[int, bool]:
    """How many leading words of ``argv`` are wrappers the plain reading strips, and whether one of them
    gives the command more arguments than written (xargs)."""
    index = 0
    appends = False
    size = len(argv)
    while index < size:
        row = _WRAPPERS.get(argv[index])
        if row is None or row.strip is None:
            break
        end = _stripped(row.strip, argv, index + 1)
        if end is None:
            break
        appends = appends or row.strip.appends
        index = end
    return index, appends


def _stripped(strip: Strip, argv: Sequence[str], index: int) -> int | None:
    """The index after a wrapper's options and leading operands, or ``None`` when they are not ones the
    plain reading strips."""
    size = len(argv)
    if strip.bare:
        return index if index < size and not argv[index].startswith("-") else None
    valued = dict(strip.valued)
    seen = False
    while index < size:
        word = argv[index]
        if word == "--" and strip.double_dash:
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        if word in strip.flags or (strip.numeric is not None and strip.numeric.fullmatch(word)):
            step = 1
        else:
            step = _valued_step(valued, argv, index)
        if not step:
            return None
        index += step
        seen = True
    if strip.needs_option and not seen:
        return None
    for pattern in strip.operands:
        if index >= size or not pattern.fullmatch(argv[index]):
            return None
        index += 1
    return index


def _valued_step(valued: Mapping[str, re.Pattern[str]], argv: Sequence[str], index: int) -> int:
    """How many words the valued option at ``index`` takes with its value (0: not one the strip allows)."""
    word = argv[index]
    name, equals, value = word.partition("=")
    if equals and name.startswith("--"):
        pattern = valued.get(name)
        return 1 if pattern is not None and pattern.fullmatch(value) else 0
    pattern = valued.get(word)
    if pattern is not None:
        return 2 if index + 1 < len(argv) and pattern.fullmatch(argv[index + 1]) else 0
    if not word.startswith("--") and len(word) > 2:
        pattern = valued.get(word[:2])
        if pattern is not None and pattern.fullmatch(word[2:]):
            return 1
    return 0
