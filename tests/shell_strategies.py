"""Hypothesis strategies for shell command lines and scripts.

``command_lines`` builds what the plain reading understands (every generated line is meant to be
understood); ``scripts`` builds from the whole grammar (compound commands, substitutions, heredocs,
redirections, functions, ``case``). The property tests check both against independent readers
(tree-sitter-bash, bash itself in a sandbox) rather than trusting the generator.
"""

from __future__ import annotations

from hypothesis import strategies as st

from .shell_corpus import ALLOWED_PARTS, OTHER_PARTS

__all__ = [
    "COMMAND_NAMES",
    "SEPARATORS",
    "command_lines",
    "compositions",
    "scripts",
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
    """Leave out the words the plain reading refuses because tree-sitter reads them unlike bash."""
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


# -- scripts over the whole grammar ----------------------------------------------------------------------

_EXPANSIONS = (
    "$x",
    "${x}",
    '"$x"',
    "${x:-a b}",
    "${#x}",
    "${x%.c}",
    "${x/a/b}",
    "$((1 + 2))",
    "$1",
    '"$@"',
    "~/d",
    "*.c",
    "{a,b}",
    "x{1..3}",
    "$'a\\tb'",
    '$"m"',
)
_REDIRECTIONS = (
    "> out.txt",
    ">> log.txt",
    "2>&1",
    "2> err.txt",
    "< in.txt",
    "&> /dev/null",
    ">&2",
    "3>&-",
    "<<< 'some text'",
    '<<< "$x"',
    ">| out.txt",
    "<> rw.txt",
)
_PATTERNS = ("a", "*.c", "x?", "[ab]*", "'q q'", '"$x"', "*")
_DELIMITERS = ("EOF", "END", "X_1")
_BODY_TEXT = "abc xyz'\"`;|&()<>*?#~!{}[]=-"
_BODY_EXPANSIONS = ("$x", "${x:-d}", "\\$x", "\\\\", "$(frob a)", "`grep b`", "\\`")


def _word_or_expansion(inner: st.SearchStrategy[str] | None) -> st.SearchStrategy[str]:
    choices = words(escapes="") | st.sampled_from(_EXPANSIONS)
    if inner is not None:
        choices |= inner.map(lambda script: f"$({script})") | inner.map(lambda script: f'"$({script})"')
    return choices


@st.composite
def _simple(draw: st.DrawFn, inner: st.SearchStrategy[str] | None) -> str:
    parts = draw(st.lists(st.sampled_from(["x=1", "y=$x", "A=b"]), max_size=1))
    parts.append(draw(st.sampled_from(COMMAND_NAMES)))
    parts.extend(draw(st.lists(_word_or_expansion(inner), max_size=3)))
    if draw(st.integers(0, 3)) == 0:
        parts.append(draw(st.sampled_from(_REDIRECTIONS)))
    return " ".join(parts)


@st.composite
def _heredoc(draw: st.DrawFn) -> str:
    """A command fed a heredoc, its body and its delimiter line (so it must end its line)."""
    delimiter = draw(st.sampled_from(_DELIMITERS))
    form = draw(st.sampled_from(["<<{}", "<<'{}'", '<<"{}"', "<<-{}", "<<\\{}"]))
    strip = form.startswith("<<-")
    unquoted = form in ("<<{}", "<<-{}")
    piece = st.text(alphabet=_BODY_TEXT, min_size=1, max_size=8)
    if unquoted:
        piece |= st.sampled_from(_BODY_EXPANSIONS)
    line = st.lists(piece, max_size=3).map("".join)
    if strip:
        line = line.map(lambda text: "\t" + text)
    if unquoted:
        # A backslash at a line's end joins it to the next in an unquoted body: bash reads it so.
        line |= line.map(lambda text: text + "\\")
    body = [text for text in draw(st.lists(line, max_size=3)) if text.strip("\t\\") != delimiter]
    name = draw(st.sampled_from(COMMAND_NAMES))
    after = draw(st.sampled_from(["", " | grep x", " > out.txt", " && frob"]))
    closing = ("\t" if strip and draw(st.booleans()) else "") + delimiter
    return "\n".join([f"{name} {form.format(delimiter)}{after}", *body, closing])


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    name = st.sampled_from(COMMAND_NAMES)
    word = _word_or_expansion(None)
    pattern = st.lists(st.sampled_from(_PATTERNS), min_size=1, max_size=2).map("|".join)
    arm = st.tuples(
        st.booleans(), pattern, inner, st.sampled_from([";;", ";;", ";;", ";;", ";&", ";;&"])
    ).map(lambda parts: f"{'(' if parts[0] else ''}{parts[1]}) {parts[2]}{parts[3]}")
    return st.one_of(
        inner.map(lambda body: f"( {body} )"),
        inner.map(lambda body: f"{{ {body}; }}"),
        st.tuples(inner, inner).map(lambda parts: f"if {parts[0]}; then {parts[1]}; fi"),
        st.tuples(inner, inner, inner).map(
            lambda parts: f"if {parts[0]}; then {parts[1]}; else {parts[2]}; fi"
        ),
        st.tuples(inner, inner, inner, inner).map(
            lambda parts: f"if {parts[0]}\nthen {parts[1]}\nelif {parts[2]}; then {parts[3]}\nfi"
        ),
        st.tuples(st.lists(word, min_size=1, max_size=2), inner).map(
            lambda parts: f"for v in {' '.join(parts[0])}; do {parts[1]}; done"
        ),
        st.tuples(name, inner).map(lambda parts: f"while {parts[0]}; do {parts[1]}; break; done"),
        st.tuples(name, inner).map(lambda parts: f"until {parts[0]}; do {parts[1]}; done"),
        st.tuples(word, st.lists(arm, min_size=1, max_size=2)).map(
            lambda parts: f"case {parts[0]} in {' '.join(parts[1])} esac"
        ),
        inner.map(lambda body: f"f1() {{ {body}; }}; f1"),
        inner.map(lambda body: f"function f2 {{ {body}; }}; f2 a"),
        word.map(lambda text: f"[[ -n {text} && {text} == a* ]]"),
        st.just("(( x = 1 + 2 ))"),
    )


@st.composite
def _pipeline(draw: st.DrawFn, command: st.SearchStrategy[str]) -> str:
    commands = draw(st.lists(command, min_size=1, max_size=2))
    joined = commands[0]
    for following in commands[1:]:
        joined += draw(st.sampled_from([" | ", "|", " |& "])) + following
    prefix = draw(st.sampled_from(["", "", "", "! ", "time ", "time -p "]))
    return prefix + joined


@st.composite
def _list(draw: st.DrawFn, pipeline: st.SearchStrategy[str], *, heredocs: bool) -> str:
    items = draw(st.lists(pipeline if not heredocs else pipeline | _heredoc(), min_size=1, max_size=3))
    text = ""
    for index, item in enumerate(items):
        if index:
            # A heredoc's delimiter line ends its item: a newline must follow it.
            multiline = "\n" in items[index - 1]
            text += "\n" if multiline else draw(st.sampled_from(["; ", " && ", " || ", "\n", " & "]))
        text += item
    return text


def scripts(*, depth: int = 2, heredocs: bool = True) -> st.SearchStrategy[str]:
    """Scripts from the whole grammar: simple commands with expansions and redirections, pipelines, lists,
    compound commands nested ``depth`` deep, functions, ``case`` arms, and heredocs at the top level.

    Loops always end, even when every program exits 0 (as the sandbox's stubs do).
    """
    inner: st.SearchStrategy[str] | None = None
    for level in range(depth + 1):
        command = _simple(inner) if inner is None else _simple(inner) | _compound(inner)
        pipeline = _pipeline(command)
        inner = _list(pipeline, heredocs=heredocs and level == depth)
    assert inner is not None
    return inner
