"""Oracles for the shell grammar: tree-sitter-bash, and real bash in a sandbox.

- **Differential against tree-sitter-bash**: on generated scripts from the whole grammar and on the corpora,
  our tree has the same simple commands with the same words as tree-sitter's, or we report text outside the
  grammar (``NotUnderstood``), or tree-sitter cannot parse it. Where we deliberately differ from what
  tree-sitter reads, ``DELIBERATE`` names why, and each such case is counted.
- **Word values**: bash itself prints the words (``printf '%s\\0' WORDS``, inside bubblewrap); our values are
  what it prints.
- **Execution**: scripts run under real bash inside bubblewrap with stub programs (``tests/shell_sandbox``).
  Every program bash ran is in the full reading (a deny naming it would fire); for a script the plain reading
  understands, bash ran exactly the commands that reading lists.

Each oracle prints its counts at the end of the session (scripts tried, agreed, not understood, deliberate
differences), so that a run shows what it covered.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Node, Parser
from tree_sitter_bash import language as bash_language

from ask_permissions.rules._command import CommandPattern
from ask_permissions.shell import Reading, parse, read_command
from ask_permissions.shell._tree import (
    Coproc,
    DoubleQuoted,
    NotUnderstood,
    Pipeline,
    SimpleCommand,
    Word,
)
from ask_permissions.shell._words import word_expands, word_value

from . import deny_corpus, shell_corpus
from .shell_sandbox import KEPT_BUILTINS, Sandbox, require_bwrap
from .shell_strategies import COMMAND_NAMES, command_lines, scripts, words

_TS_PARSER: Final = Parser(Language(bash_language()))
_NOT_WORDS: Final = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect", "comment"})

Commands = Counter[tuple[tuple[str, ...], tuple[str, ...]]]
"""Simple commands as (assignments, words), by their source text."""

CORPUS: Final = [
    *((f"benign-{name}", text) for name, text in shell_corpus.BENIGN),
    *((f"hostile-{name}", text) for name, text in shell_corpus.HOSTILE if len(text) < 100_000),
    *((f"deny-{name}", text) for name, text in deny_corpus.HOSTILE),
    *((f"deny-benign-{name}", text) for name, text in deny_corpus.BENIGN),
]


@dataclasses.dataclass
class Tally:
    """What an oracle saw, by outcome (and, for deliberate differences, by reason)."""

    name: str
    outcomes: Counter[str] = dataclasses.field(default_factory=Counter)

    def add(self, outcome: str) -> None:
        self.outcomes[outcome] += 1

    def line(self) -> str:
        total = sum(self.outcomes.values())
        parts = ", ".join(f"{outcome}: {count}" for outcome, count in sorted(self.outcomes.items()))
        return f"{self.name}: {total} scripts ({parts})"


TALLIES: Final = {
    name: Tally(name) for name in ("tree-sitter differential", "word values", "execution oracle")
}


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print each oracle's counts once the module's tests ran (shown even when output is captured)."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for tally in TALLIES.values():
            if tally.outcomes:
                reporter.write_line(tally.line())


# -- tree-sitter differential ----------------------------------------------------------------------------


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""


def _joined(nodes: list[Node]) -> tuple[str, ...]:
    """Argument nodes as words: touching nodes are one word, as in bash (tree-sitter splits ``''\\;``)."""
    texts: list[str] = []
    end = -1
    for node in nodes:
        if node.start_byte == end:
            texts[-1] += _text(node)
        else:
            texts.append(_text(node))
        end = node.end_byte
    return tuple(texts)


_ARGUMENT_NODES: Final = frozenset(
    {"word", "string", "raw_string", "concatenation", "number", "simple_expansion", "expansion"}
    | {"command_substitution", "process_substitution", "arithmetic_expansion", "ansi_c_string"}
    | {"translated_string", "brace_expression"}
)


def _redirect_extras(redirect: Node) -> list[Node]:
    """tree-sitter files the words after a redirection's target under the redirection: those words."""
    return [child for child in redirect.children if child.type in _ARGUMENT_NODES][1:]


def _ts_commands(source: str) -> Commands | None:
    """The simple commands tree-sitter finds anywhere in ``source``, or ``None`` when it reports an error."""
    tree = _TS_PARSER.parse(source.encode("utf-8", "surrogateescape"))
    if tree.root_node.has_error:
        return None
    found: Commands = Counter()

    def visit(node: Node) -> None:
        if node.type == "command":
            assignments: list[Node] = []
            argument_nodes: list[Node] = []
            extras: list[Node] = []
            for child in node.children:
                if child.type == "variable_assignment":
                    assignments.append(child)
                elif child.type == "command_name":
                    argument_nodes.append(child)
                elif child.type == "file_redirect":
                    extras.extend(_redirect_extras(child))
                elif child.is_named and child.type not in _NOT_WORDS:
                    argument_nodes.append(child)
            parent = node.parent
            if parent is not None and parent.type == "redirected_statement":
                for sibling in parent.children[1:]:
                    if sibling.type == "file_redirect":
                        extras.extend(_redirect_extras(sibling))
            words = _joined(sorted(argument_nodes + extras, key=lambda item: item.start_byte))
            found[(_joined(assignments), words)] += 1
        elif node.type in ("declaration_command", "unset_command"):
            # export, declare, local, readonly, typeset, unset: a command whose words tree-sitter names apart
            found[((), _joined([child for child in node.children if child.type not in _NOT_WORDS]))] += 1
            for child in node.children:
                if child.type != "variable_assignment":
                    visit(child)
                else:
                    for grand in child.children:
                        visit(grand)
            return
        elif node.type == "variable_assignment" and (node.parent is None or node.parent.type != "command"):
            found[((_text(node),), ())] += 1
            # an assignment alone is a command of its own; its value may hold substitutions
        for child in node.children:
            visit(child)

    visit(tree.root_node)
    return found


def _our_commands(source: str) -> Commands | None:
    """Our tree's simple commands anywhere in ``source``, or ``None`` when it holds a ``NotUnderstood``.

    ``time`` and ``coproc`` are words of the command they precede, as tree-sitter reads them (to bash they are
    keywords; see ``DELIBERATE``)."""
    found: Commands = Counter()
    failed = False

    def visit(node: object, prefix: tuple[str, ...] = ()) -> None:
        nonlocal failed
        if isinstance(node, NotUnderstood):
            failed = True
            return
        if isinstance(node, Pipeline):
            for index, command in enumerate(node.commands):
                lead = (("time", "-p") if node.posix_time else ("time",)) if node.timed and index == 0 else ()
                visit(command, lead)
            return
        if isinstance(node, Coproc):
            visit(node.command, ("coproc", *((node.name,) if node.name else ())))
            return
        if isinstance(node, SimpleCommand):
            assignments = tuple(assignment.text for assignment in node.assignments)
            texts = tuple(_as_tree_sitter_writes(word) for word in node.words)
            if prefix:
                # After a word (time), tree-sitter reads assignments as words.
                texts = prefix + assignments + texts
                assignments = ()
            if assignments or texts:
                found[(assignments, texts)] += 1
        if dataclasses.is_dataclass(node):
            for field in dataclasses.fields(node):
                visit(getattr(node, field.name))
        elif isinstance(node, tuple):
            for item in node:
                visit(item)

    visit(parse(source))
    return None if failed else found


def _as_tree_sitter_writes(word: Word) -> str:
    """A word's text as tree-sitter gives it: it leaves out the ``$`` of a ``$"…"`` locale string."""
    text = word.text
    if '$"' in text and any(isinstance(part, DoubleQuoted) and part.locale for part in word.parts):
        return text.replace('$"', '"')
    return text


_BEFORE_COMPOUND: Final = re.compile(
    r"(?:\btime\s+(?:-p\s+)?(?:!\s+)?|(?<![\w$])!\s+)(?:while|until|if|for|case|select|function|\{|\(|\[\[)"
)
_LONE_DOLLAR: Final = re.compile(r"\$(?=[\s;&|)]|\Z)")

DELIBERATE: Final[dict[str, re.Pattern[str]]] = {
    # bash: the continuation is removed before the word is read ("a\<newline>b" is "ab").
    "tree-sitter splits a word at a line continuation": re.compile(r"\\\n"),
    # bash: time and ! take a whole pipeline, a compound command included.
    "tree-sitter reads a compound command after time or ! as words": _BEFORE_COMPOUND,
    # bash: only space, tab and newline separate words; a carriage return is part of one.
    "tree-sitter takes a carriage return, vertical tab or form feed for a blank": re.compile(r"[\r\x0b\x0c]"),
    # bash: a $ before nothing it can expand is a literal $, part of the word.
    "tree-sitter drops a lone $": _LONE_DOLLAR,
    # bash: \` inside backticks nests a substitution, whose commands run.
    "tree-sitter does not read a backtick nested in backticks": re.compile(r"`[^`]*\\`"),
    # bash: a backtick in an unquoted heredoc body is a substitution, whose commands run.
    "tree-sitter does not read backticks in a heredoc body": re.compile(r"<<[^\n]*\n(?:.*\n)*?.*`", re.M),
    # bash: <<- strips the tabs, then expands what the body holds (its substitutions run).
    "tree-sitter does not read substitutions in a <<- body's indented lines": re.compile(
        r"<<-[^\n]*\n(?:.*\n)*?\t"
    ),
    # bash: the body is the first command's input, whatever it holds; the next command's words (after |,
    # ||, && or ; on the heredoc's line) are its own.
    "tree-sitter reads a heredoc's escaped body as words of the command after it": re.compile(
        r"<<[^\n|&;]*(?:\||&&|;)[^\n]*\n(?:.*\n)*?.*\\", re.M
    ),
    # bash: a number or {name} touching < is the redirection's descriptor, whatever its target is.
    "tree-sitter reads the descriptor of a redirection from a process substitution as a word": re.compile(
        r"(?:\d|\{\w+\})< <\("
    ),
    # bash: case arms ending in ;& or ;;&, and the <> redirection, are grammar (tree-sitter errors, and the
    # script is counted as a tree-sitter error, not here).
}
"""Where we read a script unlike tree-sitter on purpose, each with its reason: bash reads it as we do (the
execution oracle checks that). A script counts as deliberately different only when one of these patterns is
in it."""


def _differential(source: str) -> str:
    """The outcome of comparing our reading of ``source`` with tree-sitter's."""
    ours = _our_commands(source)
    if ours is None:
        return "not understood"
    theirs = _ts_commands(source)
    if theirs is None:
        return "tree-sitter error"
    if ours == theirs:
        return "agreed"
    for reason, pattern in DELIBERATE.items():
        if pattern.search(source) is not None:
            return f"deliberate: {reason}"
    missing = theirs - ours
    extra = ours - theirs
    raise AssertionError(f"{source!r}: tree-sitter has {dict(missing)!r}, we have {dict(extra)!r}")


class TestTreeSitterDifferential:
    """Our tree and tree-sitter's find the same simple commands, or the difference is named."""

    @given(scripts())
    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    def test_generated_scripts(self, source: str) -> None:
        """Generated scripts from the whole grammar: the same commands, or a named reason."""
        TALLIES["tree-sitter differential"].add(_differential(source))

    @pytest.mark.parametrize(("name", "source"), CORPUS, ids=[name for name, _ in CORPUS])
    def test_corpora(self, name: str, source: str) -> None:
        """The shell corpora: the same commands, or a named reason."""
        TALLIES["tree-sitter differential"].add(_differential(source))


# -- real bash in a sandbox ------------------------------------------------------------------------------


def _program_names() -> set[str]:
    """Every program name the corpora's full readings see, and the generators use: each gets a stub."""
    names = set(COMMAND_NAMES) | {"cat", "echo", "printf", "rm", "curl", "sudo", "env", "xargs", "true"}
    for _, source in CORPUS:
        for sub in read_command(source).visible:
            if sub.words:
                names.add(sub.words[0].rsplit("/", 1)[-1])
                names.update(sub.wrappers[:1])
    return names


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """One sandbox for the module: bash and a stub for each program name the tests use."""
    bwrap = require_bwrap()
    return Sandbox(tmp_path_factory.mktemp("sandbox"), _program_names(), bwrap)


def _seen_by_a_deny(reading: Reading, name: str) -> bool:
    """Whether a deny rule naming the program ``name`` would fire on the reading."""
    try:
        pattern = CommandPattern(f"{shlex.quote(name)} *")
    except ValueError:  # a name no specifier can write: compare as a deny compares names
        folded = name.casefold()
        return not reading.fully_read or any(
            sub.name_is_glob or (sub.words and sub.words[0].rsplit("/", 1)[-1].casefold() == folded)
            for sub in reading.visible
        )
    return pattern.matches_command(reading, "deny")


_OTHER_SHELLS: Final = frozenset({"zsh", "ksh", "dash", "fish", "mksh", "busybox"})
_NOT_STUBS: Final = KEPT_BUILTINS | _OTHER_SHELLS | {"time", "bash", "sh"}
"""Names whose commands the sandbox does not record as they are written: bash's own builtins (they run, or
run what they are given), the time keyword, and shells the sandbox has no copy of."""


def _expected(sub: Any) -> tuple[str, ...] | None:
    """The argument vector a stub records for a plain sub-command (``None``: the sandbox does not record it
    as written, so an exact comparison cannot be made)."""
    wrappers = list(sub.wrappers)
    while wrappers and wrappers[0] in ("command", "builtin"):
        wrappers.pop(0)  # bash's own: it runs the rest (after its -p and --)
        while wrappers[:1] in (["-p"], ["--"]):
            wrappers.pop(0)
    argv = (*wrappers, *sub.words)
    if not argv or argv[0].rsplit("/", 1)[-1] in _NOT_STUBS:
        return None
    if "/" in argv[0] and not argv[0].startswith(("/bin/", "/usr/bin/")):
        return None  # a path outside the stubs' folders names nothing in the sandbox: nothing runs
    return (argv[0].rsplit("/", 1)[-1], *argv[1:])


def _execution(source: str, box: Sandbox) -> str:
    """Run ``source`` in the sandbox; check that the readings cover what bash ran. Returns the outcome."""
    if "\x00" in source or len(source.encode("utf-8", "surrogateescape")) > 100_000:
        return "not run (NUL or too long for an environment variable)"
    reading = read_command(source)
    ran = box.run(source, timeout=2.0)  # a loop that never ends (while true) is cut short
    for argv in ran.programs:
        assert _seen_by_a_deny(reading, argv[0]), f"{source!r}: bash ran {argv!r}, unseen by the full reading"
    if not reading.understood:
        return "full reading covered the run"
    expected = [_expected(sub) for sub in reading.subcommands]
    expands = any(True in sub.expanding for sub in reading.subcommands)
    # A shell the sandbox has no copy of, or a script under a wrapper (the wrapper's stub does not start it),
    # does not run as the plain reading reads it.
    other_shell = any(
        sub.words
        and (
            sub.words[0].rsplit("/", 1)[-1] in _OTHER_SHELLS
            or (sub.wrappers and sub.words[0] in ("bash", "sh"))
        )
        for sub in reading.visible
    )
    if ran.timed_out or "||" in source or expands or other_shell or None in expected:
        # A stub exits 0, so what follows || never runs; builtins and keywords are not recorded; the shell
        # gives an expanding word its own value (a tilde is the home directory).
        return "full reading covered the run"
    recorded = Counter((argv[0].rsplit("/", 1)[-1], *argv[1:]) for argv in ran.programs)
    assert recorded == Counter(expected), (
        f"{source!r}: bash ran {recorded!r}, the plain reading lists {expected!r}"
    )
    return "plain reading listed exactly what ran"


class TestExecutionOracle:
    """Every program bash runs is in the full reading; an understood script runs exactly its plain reading."""

    @given(scripts())
    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    def test_generated_scripts(self, sandbox: Sandbox, source: str) -> None:
        """Generated scripts from the whole grammar run only what the full reading sees."""
        TALLIES["execution oracle"].add(_execution(source, sandbox))

    @given(command_lines(separators=(";", " && ", "\n", " | ", " & ")))
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    def test_generated_command_lines(self, sandbox: Sandbox, source: str) -> None:
        """Generated understood command lines run exactly what the plain reading lists."""
        TALLIES["execution oracle"].add(_execution(source, sandbox))

    @pytest.mark.parametrize(("name", "source"), CORPUS, ids=[name for name, _ in CORPUS])
    def test_corpora(self, sandbox: Sandbox, name: str, source: str) -> None:
        """The corpora run only what the full reading sees (and what the plain reading lists)."""
        TALLIES["execution oracle"].add(_execution(source, sandbox))


_SHOW_LINES: Final = "while IFS= read -r l; do printf '[%s]' \"$l\"; done"
HEREDOC_BODIES: Final = [
    pytest.param(_SHOW_LINES + " <<EOF\na\\\nEOF\nb\nEOF", id="a-continuation-joins-the-delimiter-line"),
    pytest.param(_SHOW_LINES + " <<EOF\na\\\\\nEOF\nb\nEOF", id="an-escaped-backslash-does-not"),
    pytest.param(_SHOW_LINES + " <<EOF\na\\\\\\\nEOF\nb\nEOF", id="three-backslashes-do"),
    pytest.param(_SHOW_LINES + " <<'EOF'\na\\\nEOF\nb\nEOF", id="a-quoted-delimiter-keeps-lines"),
    pytest.param(_SHOW_LINES + " <<-EOF\n\ta\\\n\tEOF\n\tb\n\tEOF", id="tabs-stripped-where-a-line-starts"),
    pytest.param(_SHOW_LINES + " <<EOF\na\nEO\\\nF\nb\nEOF", id="a-delimiter-split-by-a-continuation"),
    pytest.param(_SHOW_LINES + " <<EOF\nx\\\ny\nEOF", id="a-continued-line-then-the-delimiter"),
    pytest.param(_SHOW_LINES + " <<EOF\n\\$x \\`y\\` \\\\\nEOF", id="escapes-in-the-body"),
]


class TestHeredocBodies:
    """A heredoc's body is the lines bash reads for it, line continuations included."""

    @pytest.mark.parametrize("source", HEREDOC_BODIES)
    def test_bodies_are_what_bash_reads(self, sandbox: Sandbox, source: str) -> None:
        """bash prints the body's lines (read -r) exactly as our body's lines are, escapes applied."""
        printed = sandbox.run(source, harness=False).stdout.decode("utf-8", "surrogateescape")
        redirection = parse(source).items[0].pipelines[0].commands[0].redirects[0]  # type: ignore[union-attr]
        heredoc = redirection.heredoc
        assert heredoc is not None
        value = (
            heredoc.body
            if heredoc.quoted
            else "".join(word_value(Word("", (part,))) for part in heredoc.parts)
        )
        assert printed == "".join(f"[{line}]" for line in value.splitlines()), source


_ANSI_ESCAPES: Final = (
    "\\n",
    "\\t",
    "\\x41",
    "\\101",
    "\\\\",
    "\\'",
    '\\"',
    "\\a",
    "\\e",
    "\\cA",
    "\\?",
    "\\q",
)
_ansi_c_words = st.lists(
    st.text(alphabet='abc xyz;|&()<>*?#$`{}"', max_size=4) | st.sampled_from(_ANSI_ESCAPES), max_size=4
).map(lambda pieces: "$'" + "".join(pieces) + "'")
_locale_words = st.text(alphabet="abc xyz;|&()<>*?#{}'", max_size=6).map(lambda text: f'$"{text}"')
_continued_words = st.tuples(words(), words()).map(lambda pair: f"{pair[0]}\\\n{pair[1]}")


class TestWordValues:
    """A word's value is what bash passes for it (quotes removed, escapes and ``$'…'`` decoded)."""

    @given(st.lists(words(escapes='"\\$`') | _ansi_c_words | _locale_words | _continued_words, min_size=1))
    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
    def test_values_are_what_bash_prints(self, sandbox: Sandbox, given_words: list[str]) -> None:
        """bash prints, for each word that nothing expands, exactly our value."""
        tree = parse("printf '%s\\0' " + " ".join(given_words))
        (item,) = tree.items
        (command,) = item.pipelines[0].commands
        assert isinstance(command, SimpleCommand)
        kept = [word for word in command.words[2:] if not word_expands(word)]
        source = "printf '%s\\0' " + " ".join(word.text for word in kept)
        printed = sandbox.run(source, harness=False).stdout.decode("utf-8", "surrogateescape").split("\0")
        assert printed[:-1] == [word_value(word) for word in kept], source
        TALLIES["word values"].add(f"{len(kept)} words" if len(kept) < 5 else "5 words or more")
