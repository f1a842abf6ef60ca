"""Shell commands as permission rules read them: split into sub-commands, closed on anything not understood.

A command is read the way bash reads it, for a small subset of bash: words (with ``'…'``, ``"…"`` and
backslash quoting, line continuations and comments), the separators ``&&``, ``||``, ``;``, ``|``, ``|&``,
``&`` and newlines, leading ``NAME=value`` assignments, and the redirections ``2>&1`` and ``>/dev/null``.
Everything else — substitutions, expansions, groups, other redirections, keywords, unusual characters —
makes the command *not understood*: no specifier may then allow it. The scanner still reads on, leniently,
so that deny and ask specifiers see every command it can make out, including those inside ``$(…)``,
backticks, groups, ``bash -c`` scripts and behind launchers such as ``sudo``.

The scanner is ours rather than ``shlex``'s: ``shlex`` drops the quoting it removes (``'$HOME'`` and
``"$HOME"`` come out alike, though bash expands only the second), takes newlines for blanks, and reads
``"\\$"`` differently from bash. The test suite checks this scanner against tree-sitter-bash and ``shlex``.
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from dataclasses import dataclass
from typing import Final, final

__all__ = [
    "MAX_COMMAND_LENGTH",
    "ParsedCommand",
    "ShellWord",
    "SubCommand",
    "command_words",
    "parse_command",
    "strip_wrappers",
]

MAX_COMMAND_LENGTH: Final = 10_000
"""The longest command (in characters) that can be understood: a longer one is never allowed."""

_SCAN_LIMIT: Final = 10 * MAX_COMMAND_LENGTH
"""Past this length a command is not read at all: deny and ask specifiers then match it (fail closed)."""

_MAX_DEPTH: Final = 8
"""How deeply substitutions, groups and ``bash -c`` scripts are read; deeper, deny and ask match."""

_MAX_LAUNCHER_READINGS: Final = 64
"""How many later words of a launcher (``sudo``, ``env``, …) are tried as the command it starts; a launcher
with more leaves the command not fully read, so deny and ask match it."""


@final
@dataclass(frozen=True, slots=True)
class SubCommand:
    """One simple command of a shell command line, as specifiers match it.

    Attributes:
        text: the command as written (for display).
        words: its argument vector after the leading assignments and wrappers: what specifiers match.
        assignments: leading ``NAME=value`` words (an allow never matches a command that has any).
        wrappers: the wrapper words stripped before ``words`` (``("timeout", "5")``).
        appends_arguments: it runs under a bare ``xargs``, so with more arguments than written.
        name_is_glob: the command name holds an unquoted ``*``, ``?`` or ``[``, or an expansion (``$RM``,
            ``$(echo rm)``, a backtick): it may name any program, so deny and ask specifiers meet it.
    """

    text: str
    words: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
    appends_arguments: bool = False
    name_is_glob: bool = False


@final
@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """A command line split into the sub-commands it runs.

    Attributes:
        text: the command line.
        subcommands: the simple commands it runs, in order; a ``bash -c`` script counts as the commands
            in it. Only meaningful for allowing when ``understood``.
        visible: every command deny and ask specifiers look at: the sub-commands, those inside
            substitutions, groups and scripts, and other readings of launchers and unusual characters.
        understood: whether the command is fully understood, so that an allow specifier may match it.
        why: what was not understood (the first thing found), or ``None``.
        fully_scanned: whether the whole command was read; when not, deny and ask specifiers match it.
        redirect_targets: the files its redirections name, quotes removed (what a write may touch).
    """

    text: str
    subcommands: tuple[SubCommand, ...]
    visible: tuple[SubCommand, ...]
    understood: bool
    why: str | None
    fully_scanned: bool = True
    redirect_targets: tuple[str, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class ShellWord:
    """A word of a specifier: its text after quote removal and where its unquoted ``*`` are."""

    value: str
    stars: tuple[int, ...] = ()


# -- characters --------------------------------------------------------------------------------------------

_ASCII_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SHELL_SPECIAL: Final = frozenset(";&|<>()$`\\\"'{}[]*?#~=! \t\n")
_REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs", "Co", "Cs", "Cn"})
# Look-alikes of shell operators that NFKC leaves alone.
_CONFUSABLES: Final = {
    "\u01c0": "|",  # LATIN LETTER DENTAL CLICK
    "\u2223": "|",  # DIVIDES
    "\u2758": "|",  # LIGHT VERTICAL BAR
    "\uffe8": "|",  # HALFWIDTH FORMS LIGHT VERTICAL
    "\u204f": ";",  # REVERSED SEMICOLON
    "\u2e35": ";",  # TURNED SEMICOLON
    "\u02c2": "<",  # MODIFIER LETTER LEFT ARROWHEAD
    "\u02c3": ">",  # MODIFIER LETTER RIGHT ARROWHEAD
    "\u2039": "<",  # SINGLE LEFT-POINTING ANGLE QUOTATION MARK
    "\u203a": ">",  # SINGLE RIGHT-POINTING ANGLE QUOTATION MARK
    "\u2774": "{",  # MEDIUM LEFT CURLY BRACKET ORNAMENT
    "\u2775": "}",  # MEDIUM RIGHT CURLY BRACKET ORNAMENT
}


def _character_problem(text: str) -> str | None:
    """What makes the characters of ``text`` unsafe to read as a shell command, or ``None``."""
    control = _ASCII_CONTROL.search(text)
    if control is not None:
        char = control.group()
        return "a NUL character" if char == "\x00" else f"a control character {char!r}"
    if text.isascii():
        return None
    for char in text:
        if char.isascii():
            continue
        category = unicodedata.category(char)
        if category in _REFUSED_CATEGORIES:
            return f"an invisible or unusual character U+{ord(char):04X} ({category})"
        folded = unicodedata.normalize("NFKC", char)
        if char in _CONFUSABLES or any(part in _SHELL_SPECIAL for part in folded):
            return f"a look-alike of a shell character U+{ord(char):04X}"
    return None


def _cleaned(text: str) -> str:
    """``text`` as read by a tool that normalizes Unicode and takes control characters for line breaks."""
    text = unicodedata.normalize("NFKC", text)
    out: list[str] = []
    for char in text:
        if char in "\t\n" or " " <= char < "\x7f":
            out.append(char)
            continue
        category = unicodedata.category(char)
        if category == "Cf":
            continue
        if category in ("Cc", "Zl", "Zp"):
            out.append("\n")
        elif category == "Zs":
            out.append(" ")
        else:
            out.append(_CONFUSABLES.get(char, char))
    return "".join(out)


# -- words and commands, as the scanner finds them ---------------------------------------------------------


class _Word:
    __slots__ = ("expands", "glob", "raw", "stars", "value")

    def __init__(
        self, value: str, raw: str, stars: tuple[int, ...], glob: bool, expands: bool = False
    ) -> None:
        self.value = value
        self.raw = raw  # the source text: an assignment or a keyword must be unquoted
        self.stars = stars
        self.glob = glob
        self.expands = expands  # holds a parameter expansion or a command substitution


class _Raw:
    __slots__ = ("end", "redirects", "start", "words")

    def __init__(self, words: list[_Word], start: int, end: int, redirects: int) -> None:
        self.words = words
        self.start = start
        self.end = end
        self.redirects = redirects


class _Sink:
    """What every scanner of one command line reports into."""

    __slots__ = ("blind", "comments", "problems", "targets", "visible")

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.visible: list[SubCommand] = []
        self.targets: list[str] = []
        self.blind = False
        self.comments = 0


_BLANKS: Final = " \t"
_WORD_END: Final = frozenset(" \t\n;&|<>()")
_PLAIN_RUN: Final = re.compile(r"[^ \t\n;&|<>()\\'\"$`*?\[\]{}]+")
_QUOTED_RUN: Final = re.compile(r'[^"\\$`]+')
_NAME_START: Final = re.compile(r"[A-Za-z_]")
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAMETER: Final = frozenset("0123456789@*#?-$!")
_BASE_NUMBER: Final = re.compile(r"[0-9]+#")
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_ANSI_SIMPLE: Final = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_NUMERIC: Final = re.compile(r"x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}")
_OPERATORS: Final = (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|")
_REDIRECTIONS: Final = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">")
_CHAINING: Final = frozenset({"&&", "||", "|", "|&"})
_KEYWORDS: Final = frozenset(
    {"!", "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done"}
    | {"function", "in", "[[", "]]", "coproc", "{", "}"}
)
_SHELLS: Final = frozenset({"bash", "sh", "zsh"})
_SCRIPT_FLAGS: Final = frozenset({"-c", "-lc"})
_ANY_SHELL: Final = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox"})
_SHORT_OPTIONS: Final = re.compile(r"-[A-Za-z]+")
# Programs that start another command given in their arguments: deny and ask also look at each of the
# later words as the start of a command (``sudo -u root rm -rf /`` is read as ``rm -rf /`` too).
_LAUNCHERS: Final = frozenset(
    {"sudo", "doas", "su", "runuser", "env", "exec", "xargs", "nice", "ionice", "timeout", "stdbuf"}
    | {"nohup", "time", "command", "builtin", "noglob", "watch", "setsid", "chrt", "taskset", "unbuffer"}
    | {"flock", "strace", "ltrace", "chronic", "chroot", "nsenter", "unshare", "ssh", "script", "eval"}
    | {"parallel", "torsocks", "proxychains", "firejail", "caffeinate", "busybox", "pkexec", "systemd-run"}
    | {"eatmydata", "fakeroot", "screen", "tmux", "sg", "trap", "nocorrect", "catchsegv", "valgrind"}
)


class _Scanner:
    """Reads one text (a command line, a ``bash -c`` script, a backtick body) into commands."""

    __slots__ = ("depth", "expansions", "pos", "sink", "text")

    def __init__(self, text: str, depth: int, sink: _Sink) -> None:
        self.text = text
        self.pos = 0
        self.depth = depth
        self.sink = sink
        self.expansions = 0  # parameter expansions and substitutions read so far

    def problem(self, what: str) -> None:
        self.sink.problems.append(what)

    # -- lists of commands -------------------------------------------------------------------------------

    def script(self, closer: str | None) -> list[_Raw]:
        """The commands up to ``closer`` (``)`` or ``}``, consumed) or the end of the text."""
        text = self.text
        size = len(text)
        raws: list[_Raw] = []
        pending: str | None = "start"  # the operator since the last command, or None right after one
        while True:
            self.skip_blanks()
            if self.pos >= size:
                if closer is not None:
                    self.problem(f"an unclosed {'(' if closer == ')' else '{'}")
                break
            char = text[self.pos]
            if closer == ")" and char == ")":
                self.pos += 1
                break
            if closer == "}" and char == "}" and self.stands_alone(self.pos + 1):
                self.pos += 1
                break
            if char == "#":
                self.skip_comment()
                continue
            if char == "\n":
                self.pos += 1
                if pending is None:
                    pending = "\n"
                continue
            if char in ";&|" and not text.startswith("&>", self.pos):
                pending = self.operator(pending)
                continue
            if char == ")":
                self.problem("an unbalanced ')'")
                self.pos += 1
                continue
            if char == "(" or (char == "{" and self.stands_alone(self.pos + 1)):
                self.problem("a subshell ( … )" if char == "(" else "a command group { … }")
                self.pos += 1
                self.nested(")" if char == "(" else "}")
            else:
                raws.append(self.command())
            pending = None
        if pending in _CHAINING:
            self.problem(f"a trailing operator {pending!r}")
        return raws

    def operator(self, pending: str | None) -> str:
        """Read a control operator; ``pending`` is the one since the last command, if any."""
        operator = next(op for op in _OPERATORS if self.text.startswith(op, self.pos))
        self.pos += len(operator)
        if pending is not None:
            self.problem(f"an operator {operator!r} with no command before it")
        if operator.startswith(";;") or operator == ";&":
            self.problem(f"the case operator {operator!r}")
        return operator

    def nested(self, closer: str) -> None:
        """Read a nested list (a subshell, group or substitution) into the visible commands only."""
        if self.depth >= _MAX_DEPTH:
            self.problem("commands nested too deeply to read")
            self.sink.blind = True
            self.pos = len(self.text)
            return
        self.depth += 1
        try:
            for raw in self.script(closer):
                self.interpret(raw)
        finally:
            self.depth -= 1

    def command(self) -> _Raw:
        """One simple command: words and redirections up to an operator."""
        text = self.text
        size = len(text)
        start = self.pos
        end = start
        words: list[_Word] = []
        redirects = 0
        while True:
            self.skip_blanks()
            if self.pos >= size:
                break
            char = text[self.pos]
            if char in "\n;|)" or (char == "&" and not text.startswith("&>", self.pos)):
                break
            if char == "#":
                self.skip_comment()
                break
            if char == "(":
                self.problem("a parenthesis")
                self.pos += 1
                self.nested(")")
                end = self.pos
                continue
            if char in "<>&":
                self.redirect(None)
                redirects += 1
                end = self.pos
                continue
            word = self.word()
            end = self.pos
            if self.pos < size and text[self.pos] in "<>" and word.raw.isdigit() and word.raw.isascii():
                if words and words[-1].raw == "-":
                    self.problem("a '-' before a redirection")  # tree-sitter drops the '-'
                self.redirect(word.raw)
                redirects += 1
                end = self.pos
                continue
            words.append(word)
        return _Raw(words, start, end, redirects)

    def redirect(self, descriptor: str | None) -> None:
        text = self.text
        operator = next(op for op in _REDIRECTIONS if text.startswith(op, self.pos))
        if operator in ("<", ">") and text.startswith("(", self.pos + 1):
            self.problem(f"a process substitution {operator}( … )")
            self.pos += 2
            self.nested(")")
            return
        self.pos += len(operator)
        if operator.startswith("<<") and operator != "<<<":
            self.problem("a heredoc")
        self.skip_blanks()
        if self.pos >= len(text) or text[self.pos] in _WORD_END:
            self.problem(f"a redirection {operator!r} with no target")
            return
        target = self.word()
        self.sink.targets.append(target.value)
        if operator == "<<<":
            # A here-string is a shell's script when a shell reads it (bash <<< 'rm -rf x'): deny sees it.
            self.read_script(target.value, lenient=True)
        harmless = (
            (operator in (">", ">>") and descriptor in (None, "1", "2") and target.raw == "/dev/null")
            or (operator in ("&>", "&>>") and descriptor is None and target.raw == "/dev/null")
            or (operator == ">&" and descriptor in (None, "1", "2") and target.raw in ("1", "2"))
        )
        if not harmless:
            self.problem(f"a redirection {(descriptor or '') + operator}{target.raw}")

    # -- words ---------------------------------------------------------------------------------------------

    def word(self) -> _Word:
        text = self.text
        size = len(text)
        start = self.pos
        expansions = self.expansions
        chars: list[str] = []
        stars: list[int] = []  # indexes into chars, each a lone "*"
        glob = False
        brace: int | None = None
        after_plain = False  # whether the last character read was an unquoted, unescaped one
        while self.pos < size:
            plain = _PLAIN_RUN.match(text, self.pos)
            if plain is not None:
                chars.append(plain.group())
                self.pos = plain.end()
                after_plain = True
                continue
            char = text[self.pos]
            if char in _WORD_END:
                break
            if char in "\\'\"$`":
                if char == "\\":
                    self.check_escape(after_plain)
                after_plain = False
                if not self.quoted(char, chars):
                    break
                continue
            # Not plain for what follows: tree-sitter reads `{\ ` and `]\ ` unlike bash.
            after_plain = False
            if char == "{":
                brace = len(chars)
            elif char == "}":
                if brace is not None and len(chars) > brace + 1:
                    # Conservative: bash expands only {a,b} and {1..3}, but {x} is refused as well.
                    self.problem("a brace expansion { … }")
                    self.expansions += 1  # {rm,-rf,x} runs rm: as a name, it may be any program
                brace = None
            elif char != "]":  # an unquoted * ? or [
                glob = True
                if char == "*":
                    stars.append(len(chars))
            chars.append(char)
            self.pos += 1
        offsets: list[int] = []
        if stars:
            position = 0
            wanted = iter(stars)
            target = next(wanted)
            for index, part in enumerate(chars):
                if index == target:
                    offsets.append(position)
                    target = next(wanted, -1)
                position += len(part)
        return _Word(
            "".join(chars), text[start : self.pos], tuple(offsets), glob, self.expansions != expansions
        )

    def check_escape(self, after_plain: bool) -> None:
        """Refuse the escapes that other shell parsers (tree-sitter-bash) read differently from bash."""
        escaped = self.text[self.pos + 1 : self.pos + 2]
        if escaped == "\t" or (escaped == " " and not after_plain):
            self.problem("an escaped blank at the start of a word or after a quote")
        elif escaped in ("$", "`"):
            self.problem(f"an escaped {escaped!r}")

    def quoted(self, char: str, chars: list[str]) -> bool:
        """Read a backslash escape, a quote or an expansion into ``chars``; False when the word must end."""
        text = self.text
        size = len(text)
        if char == "\\":
            if self.pos + 1 >= size:
                self.problem("a trailing backslash")
                self.pos += 1
                return False
            escaped = text[self.pos + 1]
            self.pos += 2
            if escaped != "\n":  # a line continuation disappears
                chars.append(escaped)
        elif char == "'":
            close = text.find("'", self.pos + 1)
            if close < 0:
                self.problem("an unterminated ' quote")
                chars.append(text[self.pos + 1 :])
                self.pos = size
                return False
            chars.append(text[self.pos + 1 : close])
            self.pos = close + 1
        elif char == '"':
            self.double_quoted(chars)
        elif char == "$":
            self.dollar(chars, quoted=False)
        else:
            self.backtick(chars)
        return True

    def double_quoted(self, chars: list[str]) -> None:
        text = self.text
        size = len(text)
        self.pos += 1
        while self.pos < size:
            plain = _QUOTED_RUN.match(text, self.pos)
            if plain is not None:
                chars.append(plain.group())
                self.pos = plain.end()
                continue
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char == "\\" and self.pos + 1 < size and text[self.pos + 1] in '$`"\\\n':
                if text[self.pos + 1] != "\n":
                    chars.append(text[self.pos + 1])
                self.pos += 2
                continue
            if char == "$":
                self.dollar(chars, quoted=True)
                continue
            if char == "`":
                self.backtick(chars)
                continue
            chars.append(char)
            self.pos += 1
        self.problem('an unterminated " quote')

    def dollar(self, chars: list[str], *, quoted: bool) -> None:
        text = self.text
        start = self.pos
        following = text[self.pos + 1 : self.pos + 2]
        if following == "(":
            self.expansions += 1
            arithmetic = text.startswith("((", self.pos + 1)
            self.problem("an arithmetic expansion $(( … ))" if arithmetic else "a command substitution $(…)")
            self.pos += 2
            self.nested(")")
        elif following == "{":
            self.expansions += 1
            self.problem("a parameter expansion ${ … }")
            self.pos += 2
            self.parameter_expansion()
        elif following == "'" and not quoted:
            self.problem("an ANSI-C quote $' … '")
            self.pos += 2
            # Decoded, so that deny and ask see the command it spells: $'\x72m' is rm.
            chars.append(self.ansi_c())
            return
        elif following == '"' and not quoted:
            self.problem('a locale quote $" … "')
            self.pos += 1
            self.double_quoted(chars)
            return
        elif following in _SPECIAL_PARAMETER and following:
            self.expansions += 1
            self.problem(f"a parameter expansion ${following}")
            self.pos += 2
        elif following and _NAME_START.match(following):
            name = _NAME.match(text, self.pos + 1)
            assert name is not None
            self.expansions += 1
            self.problem(f"a parameter expansion ${name.group()}")
            self.pos = name.end()
        else:
            self.problem("a '$'")
            self.pos += 1
        chars.append(text[start : self.pos])

    def parameter_expansion(self) -> None:
        text = self.text
        size = len(text)
        scratch: list[str] = []
        while self.pos < size:
            char = text[self.pos]
            if char == "}":
                self.pos += 1
                return
            if char == "\\":
                self.pos += 2
            elif char == "'":
                close = text.find("'", self.pos + 1)
                self.pos = size if close < 0 else close + 1
            elif char == '"':
                self.double_quoted(scratch)
            elif char == "$":
                self.dollar(scratch, quoted=True)
            elif char == "`":
                self.backtick(scratch)
            else:
                self.pos += 1
        self.problem("an unterminated ${")

    def ansi_c(self) -> str:
        text = self.text
        size = len(text)
        out: list[str] = []
        while self.pos < size:
            char = text[self.pos]
            if char == "'":
                self.pos += 1
                return "".join(out)
            if char == "\\" and self.pos + 1 < size:
                escaped = text[self.pos + 1]
                if escaped in _ANSI_SIMPLE:
                    out.append(_ANSI_SIMPLE[escaped])
                    self.pos += 2
                    continue
                number = _ANSI_NUMERIC.match(text, self.pos + 1)
                if number is not None:
                    digits = number.group()
                    value = int(digits, 8) if digits[0].isdigit() else int(digits[1:], 16)
                    out.append(chr(value) if value <= 0x10FFFF else "\ufffd")
                    self.pos = number.end()
                    continue
                out.append(char)
                self.pos += 1
                continue
            out.append(char)
            self.pos += 1
        self.problem("an unterminated $'")
        return "".join(out)

    def backtick(self, chars: list[str]) -> None:
        text = self.text
        size = len(text)
        start = self.pos
        self.expansions += 1
        self.problem("a command substitution ` … `")
        self.pos += 1
        body: list[str] = []
        while self.pos < size:
            char = text[self.pos]
            if char == "\\" and self.pos + 1 < size and text[self.pos + 1] in "`\\$":
                body.append(text[self.pos + 1])
                self.pos += 2
                continue
            if char == "`":
                self.pos += 1
                break
            body.append(char)
            self.pos += 1
        else:
            self.problem("an unterminated `")
        chars.append(text[start : self.pos])
        self.read_script("".join(body))

    # -- helpers -------------------------------------------------------------------------------------------

    def skip_blanks(self) -> None:
        text = self.text
        size = len(text)
        while self.pos < size:
            char = text[self.pos]
            if char in _BLANKS:
                self.pos += 1
            elif char == "\\" and text.startswith("\\\n", self.pos):
                self.pos += 2
            else:
                break

    def skip_comment(self) -> None:
        self.sink.comments += 1
        newline = self.text.find("\n", self.pos)
        self.pos = len(self.text) if newline < 0 else newline

    def stands_alone(self, index: int) -> bool:
        """Whether the character before ``index`` is a word on its own (``{`` or ``}`` as a keyword)."""
        return index >= len(self.text) or self.text[index] in _WORD_END

    def read_script(self, script: str, *, lenient: bool = False) -> list[SubCommand]:
        """The sub-commands of another text (a script argument, a backtick body), one level deeper.

        A ``lenient`` reading is only one more reading for deny and ask: what it finds is visible, but
        what it cannot understand does not count against the command.
        """
        if self.depth >= _MAX_DEPTH:
            self.problem("commands nested too deeply to read")
            self.sink.blind = True
            return []
        sink = self.sink
        if lenient:
            sink = _Sink()
            sink.visible = self.sink.visible
        scanner = _Scanner(script, self.depth + 1, sink)
        found = [sub for raw in scanner.script(None) for sub in scanner.interpret(raw)]
        self.sink.blind = self.sink.blind or sink.blind
        return found

    # -- meaning -------------------------------------------------------------------------------------------

    def interpret(self, raw: _Raw) -> list[SubCommand]:
        """The sub-commands ``raw`` runs (itself, or a ``bash -c`` script's), each reading made visible."""
        text = self.text[raw.start : raw.end].strip()
        words = raw.words
        start = 0
        while start < len(words) and _ASSIGNMENT.match(words[start].raw):
            start += 1
        assignments = tuple(word.value for word in words[:start])
        rest = words[start:]
        if not rest:
            if not assignments:
                self.problem("a redirection with no command")
            sub = SubCommand(text, (), assignments)
            self.sink.visible.append(sub)
            return [sub]
        keywords = 0
        while keywords < len(rest) and rest[keywords].raw in _KEYWORDS:
            keywords += 1
        if keywords:
            self.problem(f"the shell keyword {rest[0].raw!r}")
            rest = rest[keywords:]
            if not rest:
                return []
        for index, word in enumerate(rest):
            if word.raw in ("{", "}"):
                self.problem("a lone brace")  # a group's brace out of place, and tree-sitter joins it
                if word.raw == "{" and index + 1 < len(rest):
                    # A function body (f() { rm -rf x; }) reads as words; deny sees the command in it.
                    body = tuple(later.value for later in rest[index + 1 :])
                    self.sink.visible.append(SubCommand(text, body, name_is_glob=rest[index + 1].expands))
            elif word.raw.startswith(("==", "=~")) or _BASE_NUMBER.fullmatch(word.raw):
                self.problem(f"the word {word.raw!r}")  # test syntax to tree-sitter
        values = [word.value for word in rest]
        stripped, appends = strip_wrappers(values)
        wrappers = tuple(values[:stripped])
        command = rest[stripped:]
        if not command:
            self.problem(f"the wrapper {values[0]!r} with no command")
            sub = SubCommand(text, tuple(values), assignments)
            self.sink.visible.append(sub)
            return [sub]
        name = command[0]
        argv = tuple(word.value for word in command)
        self.check_name(rest[0])
        if name is not rest[0]:
            self.check_name(name)
        if wrappers:
            self.sink.visible.append(SubCommand(text, tuple(values), assignments))
        if not (argv[0] in _SHELLS and len(argv) >= 2 and argv[1] in _SCRIPT_FLAGS):
            sub = SubCommand(text, argv, assignments, wrappers, appends, name.glob or name.expands)
            self.sink.visible.append(sub)
            self.launcher_readings(text, argv, tuple(word.expands for word in command))
            return [sub]
        return self.shell_script(text, argv, assignments, wrappers, appends)

    def check_name(self, name: _Word) -> None:
        """Refuse command names that a shell may expand, or that other parsers read as syntax."""
        if name.glob:
            self.problem(f"a pattern {name.raw!r} as the command name")
        elif name.raw.startswith("="):
            self.problem(f"the command name {name.raw!r} (zsh expands a leading '=')")
        elif name.raw.startswith(("{", "}", "!", "\\", "]", "'", '"')) or "#" in name.raw:
            self.problem(f"the command name {name.raw!r}")

    def shell_script(
        self,
        text: str,
        argv: tuple[str, ...],
        assignments: tuple[str, ...],
        wrappers: tuple[str, ...],
        appends: bool,
    ) -> list[SubCommand]:
        """``bash -c '<script>'``: the script is what runs; the shell is one more reading for deny and ask."""
        self.sink.visible.append(SubCommand(text, argv, assignments, wrappers, appends))
        if len(argv) != 3:
            self.problem(f"{argv[0]} {argv[1]} with arguments after the script")
        if appends:
            self.problem(f"a shell under xargs ({argv[0]} {argv[1]})")
        if len(argv) < 3:
            return []
        inner = self.read_script(argv[2])
        if not inner:
            self.problem(f"an empty {argv[0]} {argv[1]} script")
        if assignments:
            inner = [_with_assignments(sub, assignments) for sub in inner]
        return inner

    def launcher_readings(self, text: str, argv: tuple[str, ...], expanding: tuple[bool, ...]) -> None:
        """Other readings of a command for deny and ask: scripts it runs and commands it launches
        (``expanding``: which words hold an expansion, so may name any program)."""
        program = posixpath.basename(argv[0]).lower()
        if program in _ANY_SHELL or program in ("su", "runuser", "script"):
            for index, word in enumerate(argv[1:-1], start=1):
                # A run of short options with c in it (-c, -lc, -xec); not a regex with two repeats, which
                # backtracks quadratically on a long word.
                if "c" in word and _SHORT_OPTIONS.fullmatch(word):
                    self.read_script(argv[index + 1], lenient=True)
                    break
        if program == "eval" and len(argv) > 1:
            self.read_script(" ".join(argv[1:]), lenient=True)
        if program == "find":
            for index, word in enumerate(argv[:-1]):
                if word in ("-exec", "-execdir", "-ok", "-okdir"):
                    self.sink.visible.append(SubCommand(text, argv[index + 1 :]))
            return
        if program not in _LAUNCHERS:
            return
        tried = 0
        for index in range(1, len(argv)):
            word = argv[index]
            if word.startswith("-") or _ASSIGNMENT.match(word) or not word:
                continue
            if tried == _MAX_LAUNCHER_READINGS:
                # More words than readings tried: the command may hide behind them, so deny and ask match.
                self.sink.blind = True
                break
            tried += 1
            if any(char in word for char in " \t\n;&|"):
                self.read_script(word, lenient=True)  # watch 'rm -rf ~', ssh host 'rm -rf ~'
            else:
                self.sink.visible.append(SubCommand(text, argv[index:], name_is_glob=expanding[index]))


def _with_assignments(sub: SubCommand, assignments: tuple[str, ...]) -> SubCommand:
    return SubCommand(
        sub.text,
        sub.words,
        assignments + sub.assignments,
        sub.wrappers,
        sub.appends_arguments,
        sub.name_is_glob,
    )


_DURATION: Final = re.compile(r"[0-9]+(?:\.[0-9]+)?[smhd]?")
_SIGNAL: Final = re.compile(r"(?:SIG)?[A-Z0-9]+")
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_NICE_JOINED: Final = re.compile(r"-n?[+-]?[0-9]+|--adjustment=[+-]?[0-9]+")
_STDBUF_JOINED: Final = re.compile(r"-[ioe][0-9A-Za-z]+|--(?:input|output|error)=[0-9A-Za-z]+")


def strip_wrappers(words: list[str]) -> tuple[int, bool]:
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


# -- entry points ------------------------------------------------------------------------------------------


def _scan(text: str, sink: _Sink) -> list[SubCommand]:
    scanner = _Scanner(text, 0, sink)
    return [sub for raw in scanner.script(None) for sub in scanner.interpret(raw)]


def _parse(text: str) -> ParsedCommand:
    if len(text) > _SCAN_LIMIT:
        unread = f"longer than {_SCAN_LIMIT:,} characters (not read)"
        return ParsedCommand(text, (), (), understood=False, why=unread, fully_scanned=False)
    sink = _Sink()
    if len(text) > MAX_COMMAND_LENGTH:
        sink.problems.append(f"longer than {MAX_COMMAND_LENGTH:,} characters")
    characters = _character_problem(text)
    if characters is not None:
        sink.problems.append(characters)
    subcommands = _scan(text, sink)
    if characters is not None:
        # Other readings, for deny and ask only: up to a NUL (where a C string ends) and normalized.
        alternative = _Sink()
        if "\x00" in text:
            _scan(text[: text.index("\x00")], alternative)
        _scan(_cleaned(text), alternative)
        sink.visible.extend(alternative.visible)
        sink.targets.extend(alternative.targets)
        sink.blind = sink.blind or alternative.blind
    if not subcommands and not sink.problems:
        sink.problems.append("no command" if not sink.comments else "only a comment")
    why = sink.problems[0] if sink.problems else None
    return ParsedCommand(
        text,
        tuple(subcommands),
        tuple(sink.visible),
        understood=why is None,
        why=why,
        fully_scanned=not sink.blind,
        redirect_targets=tuple(sink.targets),
    )


@functools.lru_cache(maxsize=512)
def _parse_cached(text: str) -> ParsedCommand:
    return _parse(text)


def parse_command(command: str) -> ParsedCommand:
    """Split a shell command line into the sub-commands it runs; never raises for a string.

    Raises:
        TypeError: ``command`` is not a string.
    """
    if type(command) is str:
        # Several specifiers of one tool read the same command: parse it once.
        return _parse_cached(command) if len(command) <= MAX_COMMAND_LENGTH else _parse(command)
    if isinstance(command, str):
        return _parse(str.__str__(command))
    raise TypeError(f"command: expected a string; got {type(command).__name__}")


def command_words(specifier: str) -> tuple[ShellWord, ...]:
    """The words of a command specifier, read with the shell's quoting; it must be one plain command.

    Raises:
        ValueError: the specifier is empty, holds more than one command, an assignment, a redirection,
            a comment or anything a command could not be understood with; or starts with a wrapper.
    """
    sink = _Sink()
    problem = _character_problem(specifier)
    if problem is not None:
        raise ValueError(f"it holds {problem}")
    scanner = _Scanner(specifier, 0, sink)
    raws = scanner.script(None)
    if sink.problems:
        raise ValueError(f"it holds {sink.problems[0]}")
    if sink.comments:
        raise ValueError("it holds a comment ('#' starting a word); quote the '#'")
    if not raws:
        raise ValueError("it is empty")
    if len(raws) > 1:
        raise ValueError("it holds more than one command; write one rule per command")
    raw = raws[0]
    if raw.redirects:
        raise ValueError("it holds a redirection")
    words = raw.words
    if words and _ASSIGNMENT.match(words[0].raw):
        raise ValueError(f"it starts with the assignment {words[0].raw!r}, which specifiers never match")
    values = [word.value for word in words]
    stripped, _ = strip_wrappers(values)
    if stripped:
        raise ValueError(
            f"it starts with the wrapper {values[0]!r}, which is stripped before matching; "
            "write the command it runs"
        )
    if len(values) >= 2 and values[0] in _SHELLS and values[1] in _SCRIPT_FLAGS:
        raise ValueError(f"a {values[0]} {values[1]} script is matched as the commands in it; write those")
    return tuple(ShellWord(word.value, word.stars) for word in words)
