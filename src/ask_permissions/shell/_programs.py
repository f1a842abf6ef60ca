"""What programs do: which leading words only wrap a command, and what else a command starts.

``launch(argv)`` reads one simple command's argument vector (word values, after leading assignments) and
says what it runs besides itself: the wrapped command (``nohup``, ``timeout 5``), a shell script it is given
(``bash -c S``, ``su -c S``, ``eval WORDS``), commands it launches (``sudo -u root rm -rf /``,
``find … -exec rm {} \\;``) and whether it runs its standard input. The shell readings call it for every
simple command they find; the safety checks read the same answers.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, final

__all__ = ["Launch", "ScriptRef", "launch"]


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


@final
@dataclass(frozen=True, slots=True)
class Launch:
    """What one simple command starts besides itself, read from its argv (word values).

    Indexes refer to the argv given to ``launch``.

    Attributes:
        wrapped: how many leading words only change how the rest runs (``nohup``, ``timeout 5``,
            ``nice -n 5``, ``time -p``, ``command``, ``builtin``, ``stdbuf -o0``, a bare ``xargs``): the
            plain reading matches ``argv[wrapped:]``. It equals ``len(argv)`` when nothing follows them.
        appends_arguments: the wrapped command gets more arguments than written (a bare ``xargs``).
        script_only: the index of ``SCRIPT`` when ``argv[wrapped:]`` is ``sh|bash|zsh -c|-lc SCRIPT …``:
            the plain reading reads ``SCRIPT`` as what runs (words after it make the command not
            understood). Not repeated in ``scripts``.
        commands: ``argv[start:end]`` slices it runs (``sudo -u root rm -rf /`` gives the slice of
            ``rm -rf /``), each also read by ``launch`` in turn by whoever reads them.
        scripts: shell scripts it runs (``su -c S``, ``eval WORDS``, ``watch 'S'``, ``ssh HOST 'S'``).
        runs_input: it runs its standard input as a script (``bash``, ``sh -s``, ``python3 -``): a heredoc,
            here-string or pipe feeding it is read as a script.
        unreadable: it may start a command the table cannot read (too many candidate words): deny and ask
            must then match the command (fail closed).
    """

    wrapped: int = 0
    appends_arguments: bool = False
    script_only: int | None = None
    commands: tuple[tuple[int, int], ...] = ()
    scripts: tuple[ScriptRef, ...] = ()
    runs_input: bool = False
    unreadable: bool = False


_MAX_LAUNCHER_READINGS: Final = 64
"""How many later words of a launcher (``sudo``, ``env``, …) are tried as the command it starts; a launcher
with more is ``unreadable``, so deny and ask match it."""

_SHELLS: Final = frozenset({"bash", "sh", "zsh"})
_SCRIPT_FLAGS: Final = frozenset({"-c", "-lc"})
_ANY_SHELL: Final = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox"})
_INTERPRETERS: Final = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "perl"})
_SHORT_OPTIONS: Final = re.compile(r"-[A-Za-z]+")
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
# Programs that start another command given in their arguments: deny and ask also look at each of the
# later words as the start of a command (``sudo -u root rm -rf /`` is read as ``rm -rf /`` too).
_LAUNCHERS: Final = frozenset(
    {"sudo", "doas", "su", "runuser", "env", "exec", "xargs", "nice", "ionice", "timeout", "stdbuf"}
    | {"nohup", "time", "command", "builtin", "noglob", "watch", "setsid", "chrt", "taskset", "unbuffer"}
    | {"flock", "strace", "ltrace", "chronic", "chroot", "nsenter", "unshare", "ssh", "script", "eval"}
    | {"parallel", "torsocks", "proxychains", "firejail", "caffeinate", "busybox", "pkexec", "systemd-run"}
    | {"eatmydata", "fakeroot", "screen", "tmux", "sg", "trap", "nocorrect", "catchsegv", "valgrind"}
)

_DURATION: Final = re.compile(r"[0-9]+(?:\.[0-9]+)?[smhd]?")
_SIGNAL: Final = re.compile(r"(?:SIG)?[A-Z0-9]+")
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_NICE_JOINED: Final = re.compile(r"-n?[+-]?[0-9]+|--adjustment=[+-]?[0-9]+")
_STDBUF_JOINED: Final = re.compile(r"-[ioe][0-9A-Za-z]+|--(?:input|output|error)=[0-9A-Za-z]+")


def launch(argv: Sequence[str]) -> Launch:
    """What the simple command ``argv`` (word values, after leading assignments) starts besides itself."""
    words = list(argv)
    wrapped, appends = _strip_wrappers(words)
    command = words[wrapped:]
    if not command:
        return Launch(wrapped, appends)
    if command[0] in _SHELLS and len(command) >= 2 and command[1] in _SCRIPT_FLAGS:
        script = wrapped + 2 if len(command) >= 3 else None
        return Launch(wrapped, appends, script_only=script)
    commands, scripts, unreadable = _launcher_readings(command, wrapped)
    return Launch(
        wrapped,
        appends,
        commands=commands,
        scripts=scripts,
        runs_input=_reads_its_input(command),
        unreadable=unreadable,
    )


def _launcher_readings(
    argv: list[str], offset: int
) -> tuple[tuple[tuple[int, int], ...], tuple[ScriptRef, ...], bool]:
    """The commands and scripts a launcher ``argv`` (standing at ``offset``) may start, and whether it has
    more candidates than are tried."""
    commands: list[tuple[int, int]] = []
    scripts: list[ScriptRef] = []
    size = len(argv)
    end = offset + size
    program = posixpath.basename(argv[0]).lower()
    if program in _ANY_SHELL or program in ("su", "runuser", "script"):
        for index, word in enumerate(argv[1:-1], start=1):
            # A run of short options with c in it (-c, -lc, -xec); not a regex with two repeats, which
            # backtracks quadratically on a long word.
            if "c" in word and _SHORT_OPTIONS.fullmatch(word):
                scripts.append(ScriptRef(offset + index + 1, offset + index + 2))
                break
    if program == "eval" and size > 1:
        scripts.append(ScriptRef(offset + 1, end))
    if program == "find":
        for index, word in enumerate(argv[:-1]):
            if word in ("-exec", "-execdir", "-ok", "-okdir"):
                commands.append((offset + index + 1, end))
        return tuple(commands), tuple(scripts), False
    if program not in _LAUNCHERS:
        return tuple(commands), tuple(scripts), False
    tried = 0
    for index in range(1, size):
        word = argv[index]
        if word.startswith("-") or _ASSIGNMENT.match(word) or not word:
            continue
        if tried == _MAX_LAUNCHER_READINGS:
            # More words than readings tried: the command may hide behind them, so deny and ask match.
            return tuple(commands), tuple(scripts), True
        tried += 1
        if any(char in word for char in " \t\n;&|"):
            script = ScriptRef(offset + index, offset + index + 1)  # watch 'rm -rf ~'
            if script not in scripts:
                scripts.append(script)
        else:
            commands.append((offset + index, end))
    return tuple(commands), tuple(scripts), False


def _reads_its_input(argv: list[str]) -> bool:
    """A shell or interpreter given no script or command: it runs what comes on its input."""
    if posixpath.basename(argv[0]) not in _INTERPRETERS:
        return False
    return all(word.startswith("-") for word in argv[1:])


def _strip_wrappers(words: list[str]) -> tuple[int, bool]:
    """How many leading words are wrappers that only change how the command runs, and whether one is xargs."""
    index = 0
    appends = False
    size = len(words)
    while index < size:
        word = words[index]
        following = words[index + 1] if index + 1 < size else None
        if word in ("nohup", "builtin", "noglob"):
            index += 1
        elif word == "command":
            if following == "-p":
                index += 2
            elif following is not None and following.startswith("-"):
                break  # command -v / -V only describe the command
            else:
                index += 1
        elif word == "time":
            index += 2 if following == "-p" else 1
        elif word == "nice":
            index += 1
            if following == "-n" and index + 1 < size and _INTEGER.fullmatch(words[index + 1]):
                index += 2
            elif following is not None and _NICE_JOINED.fullmatch(following):
                index += 1
            if index < size and words[index] == "--":
                index += 1
        elif word == "timeout":
            end = _timeout_options(words, index + 1)
            if end is None:
                break
            index = end
        elif word == "stdbuf":
            end = index + 1
            while end < size:
                if _STDBUF_JOINED.fullmatch(words[end]):
                    end += 1
                elif words[end] in ("-i", "-o", "-e") and end + 1 < size:
                    end += 2
                else:
                    break
            if end == index + 1:
                break
            index = end
        elif word == "xargs" and following is not None and not following.startswith("-"):
            appends = True
            index += 1
        else:
            break
    return index, appends


def _timeout_options(words: list[str], index: int) -> int | None:
    """The index after ``timeout``'s options and duration, or ``None`` when they are not the usual ones."""
    size = len(words)
    while index < size:
        word = words[index]
        if word in ("--preserve-status", "--foreground", "-v", "--verbose"):
            index += 1
        elif word in ("-s", "-k") and index + 1 < size:
            valid = _SIGNAL if word == "-s" else _DURATION
            if not valid.fullmatch(words[index + 1]):
                return None
            index += 2
        elif word.startswith(("--signal=", "--kill-after=")):
            index += 1
        else:
            break
    if index < size and _DURATION.fullmatch(words[index]):
        return index + 1
    return None
