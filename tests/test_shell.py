"""The plain reading (what an allow matches): sub-commands, what it refuses, what deny and ask see."""

from __future__ import annotations

import shlex
import subprocess
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Node, Parser
from tree_sitter_bash import language as bash_language

from ask_permissions.shell import (
    READ_LIMIT,
    Reading,
    SubCommand,
    _readings,
    command_words,
    launch,
    read_command,
)

from .shell_corpus import BENIGN
from .shell_strategies import command_lines, shell_noise
from .timing import cpu_bound

SPLITS = [
    pytest.param("git status", [("git", "status")], id="one"),
    pytest.param("a && b || c; d | e |& f & g\nh", [(x,) for x in "abcdefgh"], id="every-separator"),
    pytest.param("a&&b||c;d|e|&f&g", [(x,) for x in "abcdefg"], id="no-blanks"),
    pytest.param("git 'a b' \"c d\" e\\ f", [("git", "a b", "c d", "e f")], id="quoting"),
    pytest.param("g'i't \"st\"atus", [("git", "status")], id="quoted-fragments"),
    pytest.param("echo 'a;b' \"c|d\" e\\;f", [("echo", "a;b", "c|d", "e;f")], id="quoted-operators"),
    pytest.param('echo "a\\"b" "\\\\" "\\x"', [("echo", 'a"b', "\\", "\\x")], id="double-quote-escapes"),
    pytest.param("echo '$HOME' '`x`'", [("echo", "$HOME", "`x`")], id="single-quotes-are-literal"),
    pytest.param("ls \\\n  -la", [("ls", "-la")], id="line-continuation"),
    pytest.param("ls a\\\nb", [("ls", "ab")], id="continuation-inside-word"),
    pytest.param("ls # c; rm -rf ~\nls -a", [("ls",), ("ls", "-a")], id="comment-to-end-of-line"),
    pytest.param("echo a#b", [("echo", "a#b")], id="hash-inside-word"),
    pytest.param("ls;", [("ls",)], id="trailing-semicolon"),
    pytest.param("ls &", [("ls",)], id="trailing-background"),
    pytest.param("\n\nls\n\n", [("ls",)], id="blank-lines"),
    pytest.param("a &&\n b", [("a",), ("b",)], id="newline-after-and"),
    pytest.param("ls 2>&1 >/dev/null", [("ls",)], id="harmless-redirections-dropped"),
    pytest.param("ls 2>/dev/null -la", [("ls", "-la")], id="redirection-between-words"),
    pytest.param("timeout 5 nice -n 2 git status", [("git", "status")], id="wrappers-stripped"),
    pytest.param("command -v git", [("command", "-v", "git")], id="command-v-kept"),
    pytest.param("bash -c 'a; b && c'", [("a",), ("b",), ("c",)], id="bash-c-script"),
    pytest.param("sh -c \"bash -c 'a'\" ; b", [("a",), ("b",)], id="nested-scripts"),
    pytest.param("find . -exec rm {} \\;", [("find", ".", "-exec", "rm", "{}", ";")], id="find-exec"),
    pytest.param("ls {}", [("ls", "{}")], id="empty-braces"),
]

SUBCOMMAND_FIELDS = [
    pytest.param("FOO=1 B=2 ls", SubCommand("FOO=1 B=2 ls", ("ls",), ("FOO=1", "B=2")), id="assignments"),
    pytest.param(
        "timeout 5 git status",
        SubCommand("timeout 5 git status", ("git", "status"), wrappers=("timeout", "5")),
        id="wrappers",
    ),
    pytest.param(
        "xargs ls", SubCommand("xargs ls", ("ls",), wrappers=("xargs",), appends_arguments=True), id="xargs"
    ),
    pytest.param("FOO=1", SubCommand("FOO=1", (), ("FOO=1",)), id="assignment-only"),
    pytest.param("X=1 bash -c 'ls'", SubCommand("ls", ("ls",), ("X=1",)), id="assignments-reach-the-script"),
]

REFUSALS = [
    pytest.param("echo $(x)", "command substitution", id="dollar-paren"),
    pytest.param("echo `x`", "command substitution", id="backticks"),
    pytest.param("echo $((1))", "arithmetic", id="arithmetic"),
    pytest.param("echo ${x}", "parameter expansion", id="braced-parameter"),
    pytest.param("echo $x", "parameter expansion $x", id="parameter"),
    pytest.param('echo "$1"', "parameter expansion $1", id="quoted-positional"),
    pytest.param("echo $'x'", "ANSI-C", id="ansi-c"),
    pytest.param("diff <(a) b", "process substitution", id="process-substitution"),
    pytest.param("(ls)", "subshell", id="subshell"),
    pytest.param("{ ls; }", "command group", id="group"),
    pytest.param("ls > x", "redirection >x", id="redirection"),
    pytest.param("ls <<EOF\nx\nEOF", "heredoc", id="heredoc"),
    pytest.param("ls 'x", "unterminated ' quote", id="unterminated-single"),
    pytest.param('ls "x', 'unterminated " quote', id="unterminated-double"),
    pytest.param("ls &&", "trailing operator '&&'", id="trailing-and"),
    pytest.param("ls |", "trailing operator '|'", id="trailing-pipe"),
    pytest.param("; ls", "no command before it", id="leading-semicolon"),
    pytest.param("ls \\", "trailing backslash", id="trailing-backslash"),
    pytest.param("ls " + "a" * READ_LIMIT, "longer than the read limit of 1,048,576", id="too-long"),
    pytest.param("ls\x00", "NUL", id="nul"),
    pytest.param("ls\u00a0-la", "U+00A0", id="no-break-space"),
    pytest.param("ls\uff1bx", "look-alike", id="fullwidth-semicolon"),
    pytest.param("if ls; then x; fi", "keyword 'if'", id="keyword"),
    pytest.param("ls {a,b}", "brace expansion", id="brace-expansion"),
    pytest.param("l? x", "as the command name", id="glob-name"),
    pytest.param("bash -c 'ls' x", "arguments after the script", id="bash-c-arguments"),
    pytest.param("bash -c ''", "empty bash -c script", id="bash-c-empty"),
    pytest.param("", "no command", id="empty"),
    pytest.param("# x", "only a comment", id="comment"),
    pytest.param("timeout 5", "with no command", id="wrapper-alone"),
    pytest.param(">/dev/null", "redirection with no command", id="redirection-alone"),
]

# (command, a word tuple that deny and ask must see in it)
VISIBLE = [
    pytest.param("echo $(rm -rf ~)", ("rm", "-rf", "~"), id="dollar-paren"),
    pytest.param('echo "$(rm -rf ~)"', ("rm", "-rf", "~"), id="quoted-dollar-paren"),
    pytest.param("echo `rm -rf ~`", ("rm", "-rf", "~"), id="backticks"),
    pytest.param("echo ${x:-$(rm -rf ~)}", ("rm", "-rf", "~"), id="inside-parameter-expansion"),
    pytest.param("(cd x && rm -rf ~)", ("rm", "-rf", "~"), id="subshell"),
    pytest.param("{ ls; rm -rf ~; }", ("rm", "-rf", "~"), id="group"),
    pytest.param("diff <(rm -rf ~) x", ("rm", "-rf", "~"), id="process-substitution"),
    pytest.param("bash -c 'ls; rm -rf ~'", ("rm", "-rf", "~"), id="bash-c"),
    pytest.param("bash -x -c 'rm -rf ~'", ("rm", "-rf", "~"), id="bash-other-options"),
    pytest.param("/bin/sh -c 'rm -rf ~'", ("rm", "-rf", "~"), id="shell-by-path"),
    pytest.param("sudo -u root rm -rf /", ("rm", "-rf", "/"), id="sudo"),
    pytest.param("env -i FOO=1 rm -rf /", ("rm", "-rf", "/"), id="env"),
    pytest.param("xargs -0 rm -rf", ("rm", "-rf"), id="xargs-options"),
    pytest.param("watch 'rm -rf ~'", ("rm", "-rf", "~"), id="watch-script"),
    pytest.param("ssh host 'rm -rf ~'", ("rm", "-rf", "~"), id="ssh-script"),
    pytest.param("eval 'rm -rf ~'", ("rm", "-rf", "~"), id="eval"),
    pytest.param("find . -exec rm -rf {} +", ("rm", "-rf", "{}"), id="find-exec"),
    pytest.param("timeout 5 rm x", ("timeout", "5", "rm", "x"), id="wrapper-kept-as-a-reading"),
    pytest.param("if true; then rm -rf ~; fi", ("rm", "-rf", "~"), id="keyword-body"),
    pytest.param("! rm -rf ~", ("rm", "-rf", "~"), id="negation"),
    pytest.param("$'\\x72\\x6d' -rf ~", ("rm", "-rf", "~"), id="ansi-c-decoded"),
    pytest.param("ls\uff1brm -rf ~", ("rm", "-rf", "~"), id="fullwidth-semicolon-normalized"),
    pytest.param("ls\u2028rm -rf ~", ("rm", "-rf", "~"), id="line-separator"),
    pytest.param("ls\x00; rm -rf ~", ("rm", "-rf", "~"), id="after-nul"),
    pytest.param("bash <<EOF\nrm -rf ~\nEOF", ("rm", "-rf", "~"), id="heredoc-fed-to-a-shell"),
    pytest.param("cat <<EOF | sh\nrm -rf ~\nEOF", ("rm", "-rf", "~"), id="heredoc-piped-to-a-shell"),
    pytest.param("cat <<EOF\n$(rm -rf ~)\nEOF", ("rm", "-rf", "~"), id="heredoc-substitution"),
    pytest.param("cat <<'EOF'\nx'\nEOF\nrm -rf ~", ("rm", "-rf", "~"), id="line-after-heredoc-with-quote"),
]


def _subcommand_words(parsed: Reading) -> list[tuple[str, ...]]:
    return [sub.words for sub in parsed.subcommands]


class TestSplitting:
    """Understood commands split into the sub-commands bash runs, with bash's quoting."""

    @pytest.mark.parametrize(("command", "expected"), SPLITS)
    def test_split(self, command: str, expected: list[tuple[str, ...]]) -> None:
        """Each command is understood and splits into these argument vectors."""
        parsed = read_command(command)
        assert parsed.why is None
        assert parsed.understood
        assert _subcommand_words(parsed) == expected

    @pytest.mark.parametrize(("command", "expected"), SUBCOMMAND_FIELDS)
    def test_subcommand_fields(self, command: str, expected: SubCommand) -> None:
        """Assignments, wrappers and xargs are recorded beside the words."""
        assert read_command(command).subcommands == (expected,)

    def test_text_of_each_subcommand(self) -> None:
        """Each sub-command keeps its own text, for showing a decision per sub-command."""
        parsed = read_command("git status  &&  npm test 2>&1 | grep x")
        assert [sub.text for sub in parsed.subcommands] == ["git status", "npm test 2>&1", "grep x"]

    def test_not_a_string(self) -> None:
        """Only strings are commands."""
        with pytest.raises(TypeError, match="expected a string; got bytes"):
            read_command(b"ls")  # type: ignore[arg-type]

    def test_string_subclass(self) -> None:
        """A str subclass is read as its text."""

        class Text(str):
            __slots__ = ()

        assert _subcommand_words(read_command(Text("ls -la"))) == [("ls", "-la")]


class TestRefusals:
    """Anything outside the understood subset makes the command not understood, with a reason."""

    @pytest.mark.parametrize(("command", "reason"), REFUSALS)
    def test_refused(self, command: str, reason: str) -> None:
        """The command is not understood, and ``why`` names what was found."""
        parsed = read_command(command)
        assert not parsed.understood
        assert parsed.why is not None
        assert reason in parsed.why

    def test_over_read_limit_is_not_read(self) -> None:
        """Past the read limit the command is not read at all, and says so."""
        parsed = read_command("ls " + "a" * READ_LIMIT)
        assert not parsed.fully_read
        assert parsed.too_long
        assert parsed.why is not None
        assert "not read" in parsed.why

    def test_within_read_limit_is_read(self) -> None:
        """A long command within the read limit is read like a short one (no length limit on allows)."""
        parsed = read_command("ls " + "a" * (READ_LIMIT - 3))
        assert parsed.understood, parsed.why
        assert parsed.fully_read
        assert not parsed.too_long

    def test_deep_nesting_is_not_fully_read(self) -> None:
        """Substitutions nested past the depth bound leave the command partly unread."""
        parsed = read_command("echo " + "$(" * 20 + "rm" + ")" * 20)
        assert not parsed.understood
        assert not parsed.fully_read


class TestVisible:
    """Deny and ask see every command the scanner can make out, understood or not."""

    @pytest.mark.parametrize(("command", "words"), VISIBLE)
    def test_visible(self, command: str, words: tuple[str, ...]) -> None:
        """The inner or alternative command is among the visible ones."""
        parsed = read_command(command)
        assert words in {sub.words for sub in parsed.visible}

    @pytest.mark.parametrize(("name", "command"), BENIGN, ids=[name for name, _ in BENIGN])
    def test_benign_corpus_understood(self, name: str, command: str) -> None:
        """Every benign command is understood, and its sub-commands are all visible."""
        parsed = read_command(command)
        assert parsed.understood, (name, parsed.why)
        assert set(parsed.subcommands) <= set(parsed.visible)


class TestCommandWords:
    """A specifier is read as one plain command with the shell's quoting."""

    def test_stars_are_recorded_unquoted_only(self) -> None:
        """Unquoted ``*`` are wildcards; quoted ones are literal characters."""
        words = command_words("ls a*b '*' \"x*\" \\* *")
        assert [(word.value, word.stars) for word in words] == [
            ("ls", ()),
            ("a*b", (1,)),
            ("*", ()),
            ("x*", ()),
            ("*", ()),
            ("*", (0,)),
        ]

    @pytest.mark.parametrize(
        ("specifier", "reason"),
        [
            pytest.param("", "empty", id="empty"),
            pytest.param("a && b", "more than one command", id="compound"),
            pytest.param("FOO=1 make", "assignment", id="assignment"),
            pytest.param("ls > x", "redirection", id="redirection"),
            pytest.param("ls 2>&1", "redirection", id="harmless-redirection"),
            pytest.param("ls # x", "comment", id="comment"),
            pytest.param("ls $(x)", "command substitution", id="substitution"),
            pytest.param("timeout 5 make", "wrapper 'timeout'", id="wrapper"),
            pytest.param("bash -c x", "bash -c script", id="script"),
            pytest.param("ls\x00", "NUL", id="nul"),
        ],
    )
    def test_refused(self, specifier: str, reason: str) -> None:
        """What a command could not be understood with, a specifier cannot hold either."""
        with pytest.raises(ValueError, match=reason):
            command_words(specifier)


# -- oracles -----------------------------------------------------------------------------------------------

_TS_PARSER = Parser(Language(bash_language()))
_SHELLS = {"bash", "sh", "zsh"}
_ARGUMENT_NODES = {"word", "string", "raw_string", "concatenation", "number"}


def _text(node: Node) -> str:
    return node.text.decode() if node.text is not None else ""


def _values(nodes: list[Node]) -> list[str]:
    """The words of argument nodes; touching nodes are one word, as in bash (tree-sitter splits ``''\\;``)."""
    texts: list[str] = []
    end = -1
    for node in nodes:
        if node.start_byte == end:
            texts[-1] += _text(node)
        else:
            texts.append(_text(node))
        end = node.end_byte
    values = [shlex.split(text, comments=False, posix=True) for text in texts]
    assert all(len(value) == 1 for value in values), (texts, values)
    return [value[0] for value in values]


def _redirect_extras(redirect: Node) -> list[Node]:
    """tree-sitter files the words after a redirection's target under the redirection."""
    return [child for child in redirect.children if child.type in _ARGUMENT_NODES][1:]


def _argv(command: Node, redirects: list[Node]) -> tuple[list[str], list[str]]:
    assignments: list[Node] = []
    words: list[Node] = []
    for child in command.children:
        if child.type == "variable_assignment":
            assignments.append(child)
        elif child.type == "command_name":
            words.append(child.children[0])
        elif child.type in _ARGUMENT_NODES:
            words.append(child)
        elif child.type == "file_redirect":
            words.extend(_redirect_extras(child))
    for redirect in redirects:
        words.extend(_redirect_extras(redirect))
    return _values(assignments), _values(words)


def _ts_commands(source: str) -> list[tuple[str, ...]] | None:
    """The full argument vectors of the commands tree-sitter finds, ``bash -c`` scripts read in place."""
    tree = _TS_PARSER.parse(source.encode())
    if tree.root_node.has_error:
        return None
    found: list[tuple[str, ...]] = []

    def visit(node: Node) -> None:
        if node.type == "redirected_statement" and node.children[0].type != "command":
            # tree-sitter may give a redirection to a whole list; bash gives it to the last command.
            visit(node.children[0])
            return
        if node.type in ("command", "redirected_statement"):
            command = node if node.type == "command" else node.children[0]
            redirects = [] if node is command else node.children[1:]
            assignments, words = _argv(command, redirects)
            core = words[launch(words).wrapped :]
            if len(core) == 3 and core[0] in _SHELLS and core[1] in ("-c", "-lc"):
                inner = _ts_commands(core[2])
                assert inner is not None, core[2]
                found.extend(tuple(assignments) + argv for argv in inner)
            else:
                found.append(tuple(assignments + words))
            return
        if node.type == "variable_assignment":
            found.append(tuple(_values([node])))
            return
        for child in node.children:
            visit(child)

    visit(tree.root_node)
    return found


def _full_argv(sub: SubCommand) -> tuple[str, ...]:
    return sub.assignments + sub.wrappers + sub.words


def _bash_normalized(source: str) -> str:
    """bash's own reading of ``source``, printed back by ``declare -f`` (nothing is run).

    Only for commands the plain reading understood (so with no lone ``}`` to end the function early), and with
    ``PATH`` empty all the same.
    """
    result = subprocess.run(
        ["/bin/bash", "--norc", "--noprofile", "-c", 'eval "f() {\n$1\n}" && declare -f f', "_", source],
        env={"PATH": "/nonexistent"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return result.stdout


def _agrees_with_tree_sitter(source: str, parsed: Reading) -> bool:
    """tree-sitter finds our sub-commands in ``source``, or in bash's normalized form of it.

    The second reading works around two tree-sitter-bash bugs: it splits a word at a line continuation,
    which bash joins (``a\\<newline>b`` is ``ab``); and after a pipeline of three or more commands and a
    newline it joins later lines into the pipeline's last command when one of them has a redirection
    (``a|b|c\\ny\\nx>&1`` becomes ``c y x``). ``declare -f`` prints neither construct.
    """
    ours = [_full_argv(sub) for sub in parsed.subcommands]
    return _ts_commands(source) == ours or _ts_commands(_bash_normalized(source)) == ours


class TestTreeSitterOracle:
    """Whatever the plain reading understands, tree-sitter-bash parses into the same commands."""

    @given(command_lines(escapes='"\\'))
    @settings(max_examples=200, deadline=None)
    def test_generated_commands(self, line: str) -> None:
        """Generated command lines are understood, and tree-sitter finds the same commands and words."""
        parsed = read_command(line)
        assert parsed.understood, parsed.why
        assert _agrees_with_tree_sitter(line, parsed)

    @given(shell_noise)
    @settings(max_examples=500, deadline=None)
    def test_random_text(self, text: str) -> None:
        """Random text over shell metacharacters: when understood, tree-sitter agrees on it."""
        parsed = read_command(text)
        if not parsed.understood or '"' in text:
            # Inside double quotes shlex, which the oracle unquotes with, reads \$ and \` unlike bash.
            return
        assert _agrees_with_tree_sitter(text, parsed)

    @pytest.mark.parametrize(("name", "command"), BENIGN, ids=[name for name, _ in BENIGN])
    def test_benign_corpus(self, name: str, command: str) -> None:
        """tree-sitter reads every benign command as the plain reading does."""
        assert _agrees_with_tree_sitter(command, read_command(command)), name


_HANDLER = (
    # One write per record: the commands of a pipeline run at once and share the file. A newline in a word
    # would let bash flush mid-record and interleave two records, so newlines travel as \034.
    "command_not_found_handle() { local r; printf -v r \"%s\\037\" \"$@\"; r=${r//$'\\n'/$'\\034'}; "
    'printf "%s\\036" "$r" >&9; }\n'
    'for line in "$@"; do printf "\\035" >&9; eval "$line"; wait; done'
)


def _bash_argvs(lines: list[str], tmp_path: Any) -> list[Counter[tuple[str, ...]]]:
    """What bash runs for each line: the argument vector of every command, with PATH empty so none runs."""
    out = tmp_path / "argv"
    with out.open("ab") as sink:
        subprocess.run(
            ["/bin/bash", "--norc", "--noprofile", "-c", f"exec 9>&{sink.fileno()}\n{_HANDLER}", "_", *lines],
            env={"PATH": "/nonexistent"},
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(sink.fileno(),),
            timeout=30,
            check=True,
        )
    chunks = out.read_bytes().decode().split("\x1d")[1:]
    return [
        Counter(tuple(record.replace("\x1c", "\n").split("\x1f")[:-1]) for record in chunk.split("\x1e")[:-1])
        for chunk in chunks
    ]


class TestBashOracle:
    """Whatever the plain reading understands, bash itself runs exactly those argument vectors."""

    @given(
        st.lists(
            command_lines(separators=(";", " && ", "\n", " | ", " & "), scripts=False), min_size=1, max_size=8
        )
    )
    @settings(max_examples=40, deadline=None)
    def test_generated_commands(self, tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
        """bash runs, for each generated line, the very words the plain reading found (in any order)."""
        tmp_path = tmp_path_factory.mktemp("bash")
        expected = []
        for line in lines:
            parsed = read_command(line)
            assert parsed.understood, parsed.why
            expected.append(Counter(sub.words for sub in parsed.subcommands if sub.words))
        assert _bash_argvs(lines, tmp_path) == expected


_PLAIN_LINES = st.lists(
    st.text(alphabet="abcz019-_./:,+@%^=!#~]", min_size=1, max_size=6), min_size=1, max_size=5
).map(" ".join) | st.sampled_from(
    ["git status", "ls -la src", "! ls", "time ls", "if x", "bash", "sudo rm -rf /", "export PS4=x", "]x y"]
)


class TestQuickPath:
    """The quick path for one plain simple command reads it exactly as the tree does."""

    @given(_PLAIN_LINES | command_lines())
    @settings(max_examples=300, deadline=None)
    def test_same_reading_as_the_tree(self, line: str) -> None:
        """Where the quick path applies, its reading equals the full path's, field by field."""
        quick = _readings._read_plain(line)
        if quick is not None:
            assert quick == _readings._read_tree(line)


class TestFuzz:
    """Any string is split or refused, never an exception, and quickly."""

    @given(st.text(max_size=200) | shell_noise)
    @settings(max_examples=500, deadline=None)
    def test_any_text(self, text: str) -> None:
        """Every string gives a Reading whose ``understood`` and ``why`` agree."""
        parsed = read_command(text)
        assert parsed.understood == (parsed.why is None)
        if parsed.understood:
            assert parsed.subcommands
            assert set(parsed.subcommands) <= set(parsed.visible)

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("$(" * 5_000, id="open-substitutions"),
            pytest.param("`" * 10_000, id="backticks"),
            pytest.param("'" * 10_000, id="single-quotes"),
            pytest.param('"$(' * 3_333, id="quoted-substitutions"),
            pytest.param("{ " * 5_000, id="groups"),
            pytest.param("(" * 10_000, id="parentheses"),
            pytest.param("\\" * 10_000, id="backslashes"),
            pytest.param(";" * 10_000, id="semicolons"),
            pytest.param("a " * 5_000, id="words"),
            pytest.param("*" * 10_000, id="stars"),
            pytest.param("{a," * 3_333, id="braces"),
            pytest.param("sudo " * 2_000, id="launchers"),
            pytest.param("bash -c '" * 1_000, id="scripts"),
            pytest.param("$'\\x" * 2_500, id="ansi-c"),
            pytest.param("\uff1b" * 10_000, id="look-alikes"),
            pytest.param("a\x00" * 5_000, id="nuls"),
            pytest.param("<<" * 5_000, id="heredocs"),
            pytest.param("bash -" + "c" * 9_990 + "1 x", id="long-option-word"),
            pytest.param("a[" + "x" * 9_990 + " y", id="long-assignment-like-word"),
        ],
    )
    def test_adversarial_inputs_are_quick(self, text: str) -> None:
        """Adversarial inputs of about 10,000 characters are read in well under a second."""
        with cpu_bound(1.0):
            parsed = read_command(text)
        assert parsed.understood == (parsed.why is None)
