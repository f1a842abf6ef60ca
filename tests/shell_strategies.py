"""Hypothesis strategies for shell command lines, built from the constructs the splitter understands.

Every generated command is meant to be understood; the property tests check that against independent
readers (tree-sitter-bash, bash itself) rather than trusting the generator.
"""

from __future__ import annotations

from hypothesis import strategies as st

from .shell_corpus import ALLOWED_PARTS, OTHER_PARTS

__all__ = [
    "COMMAND_NAMES",
    "SEPARATORS",
    "command_lines",
    "compositions",
    "shell_noise",
    "simple_commands",
    "words",
]

COMMAND_NAMES = ("git", "npm", "ls", "frob", "grep", "make", "cargo", "node")
"""Programs the generated commands run: none is a bash builtin, keyword or wrapper."""

SEPARATORS = (";", "; ", " ; ", "&&", " && ", "||", " || ", "|", " | ", "|&", " & ", "\n", "\n\n", " ;\n")
"""Everything that separates two commands, with and without blanks around it."""

_PLAIN = "abcxyzABC019-_./:,+@%^="
_SPECIAL = ";|&<>()$`\"'*?#~!{}[]\\ \t\n"

_plain_runs = st.text(alphabet=_PLAIN, min_size=1, max_size=6)
_single_quoted = st.text(alphabet=_PLAIN + _SPECIAL.replace("'", ""), max_size=6).map(lambda s: f"'{s}'")


def _double_quoted(*, escapes: str) -> st.SearchStrategy[str]:
    part = st.text(alphabet=_PLAIN + ";|&<>()*?#~!{}[]' \t\n", min_size=1, max_size=4)
    if escapes:
        part |= st.sampled_from([f"\\{char}" for char in escapes])
    inside = st.lists(part, max_size=3)
    return inside.map(lambda parts: '"' + "".join(parts) + '"')


def words(*, escapes: str = '"\\') -> st.SearchStrategy[str]:
    """A word that is not a command name: plain, quoted, escaped or a concatenation of those.

    ``escapes`` are the characters that may follow a backslash inside double quotes (``shlex`` reads
    ``"\\$"`` differently from bash, so the tree-sitter oracle, which unquotes with ``shlex``, leaves ``$``
    out).
    """
    piece = st.one_of(
        _plain_runs,
        _plain_runs.map(lambda run: run + "\\ "),  # an escaped blank right after a plain character
        _single_quoted,
        _double_quoted(escapes=escapes),
        st.sampled_from(["\\;", "\\|", "\\&", "\\'", '\\"', "\\\\", "\\#", "\\(", "\\*", "\\!"]),
    )
    return st.lists(piece, min_size=1, max_size=3).map("".join).filter(_understood_word)


def _understood_word(word: str) -> bool:
    """Leave out the words the splitter refuses because tree-sitter reads them unlike bash."""
    return not word.startswith(("#", "==", "=~")) and word != "-"


_assignments = st.tuples(
    st.sampled_from(["FOO", "A", "x_1", "GIT_DIR"]), st.text(alphabet=_PLAIN, max_size=4)
).map(lambda pair: f"{pair[0]}={pair[1]}")
_harmless_redirects = st.sampled_from(
    ["2>&1", ">/dev/null", "> /dev/null", "2>/dev/null", "&>/dev/null", ">&2"]
)


@st.composite
def simple_commands(draw: st.DrawFn, *, escapes: str = '"\\', redirects: bool = True) -> str:
    """One simple command: optional assignments, a program, words, and optionally a harmless redirection."""
    parts = draw(st.lists(_assignments, max_size=2))
    parts.append(draw(st.sampled_from(COMMAND_NAMES)))
    parts.extend(draw(st.lists(words(escapes=escapes), max_size=4)))
    if redirects and draw(st.booleans()):
        parts.append(draw(_harmless_redirects))
    blank = draw(st.sampled_from([" ", "\t", "  "]))
    return blank.join(parts)


@st.composite
def command_lines(
    draw: st.DrawFn,
    *,
    escapes: str = '"\\',
    separators: tuple[str, ...] = SEPARATORS,
    scripts: bool = True,
) -> str:
    """Commands joined by separators, maybe ending in ``;``/``&``/a newline/a comment; maybe ``bash -c``."""
    commands = draw(st.lists(simple_commands(escapes=escapes), min_size=1, max_size=4))
    if scripts and draw(st.integers(0, 4)) == 0:
        inner = draw(command_lines(escapes="", separators=separators, scripts=False))
        if "'" not in inner:
            shell = draw(st.sampled_from(["bash -c", "sh -c", "zsh -c", "bash -lc"]))
            commands.insert(draw(st.integers(0, len(commands))), f"{shell} '{inner}'")
    line = commands[0]
    for command in commands[1:]:
        line += draw(st.sampled_from(separators)) + command
    line += draw(st.sampled_from(["", "", ";", " &", "\n", " # a comment", " #;rm -rf ~"]))
    return line


shell_noise = st.text(alphabet=_PLAIN[:8] + _SPECIAL + "2", max_size=30)
"""Short random text over shell metacharacters: mostly not understood, sometimes understood."""


@st.composite
def compositions(draw: st.DrawFn) -> tuple[str, bool]:
    """A command line of allowed and other simple commands, and whether every part of it is allowed.

    Parts are joined by any separator and may run under a wrapper or in a ``bash -c`` script.
    """
    parts = draw(st.lists(st.tuples(st.booleans(), st.data()), min_size=1, max_size=5))
    line = ""
    every_part_allowed = True
    for index, (allowed, data) in enumerate(parts):
        command = data.draw(st.sampled_from(ALLOWED_PARTS if allowed else OTHER_PARTS))
        every_part_allowed = every_part_allowed and allowed
        form = data.draw(
            st.sampled_from(["{}", "{}", "timeout 5 {}", "nice -n 2 {}", 'bash -c "{}"', "{} 2>&1"])
        )
        if index:
            line += data.draw(st.sampled_from(SEPARATORS))
        line += form.format(command)
    return line + draw(st.sampled_from(["", ";", "\n", " &"])), every_part_allowed
