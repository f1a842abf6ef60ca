"""A command's effects: what it reads, writes and removes, read once from its full reading and the table."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions.policy._safety import PROTECTED_PATHS, _decided, _names_a_program, check_shell
from ask_permissions.shell._effects import PathUse, command_effects, plain_reading
from ask_permissions.shell._programs import PROGRAMS, QUICK_NAMES, name_key

from .timing import cpu_bound

CWD = "/work/project"
HOME = "/home/dev"


def _uses(command: str) -> list[tuple[str, str]]:
    return [(use.path, use.action) for use in command_effects(command).paths if not use.guessed]


PATHS = [
    pytest.param("cp a b", [("a", "read"), ("b", "write")], id="cp"),
    pytest.param("rm -rf x y", [("x", "remove"), ("y", "remove")], id="rm"),
    pytest.param("echo x > out.txt", [("out.txt", "write")], id="redirect"),
    pytest.param("echo x >> out.txt 2>&1", [("out.txt", "write")], id="append-and-dup"),
    pytest.param("cat a b", [("a", "read"), ("b", "read")], id="reader"),
    pytest.param("sudo -u root rm -rf /", [("/", "remove")], id="launched"),
    pytest.param("git commit -m m", [], id="git-message"),
    pytest.param("X=1 tee log", [("log", "write")], id="assignment-then-writer"),
]


class TestPaths:
    """Each path a command touches, with what it does to it."""

    @pytest.mark.parametrize(("command", "uses"), PATHS)
    def test_paths(self, command: str, uses: list[tuple[str, str]]) -> None:
        """The paths read from the table (not guessed) and their actions are as listed."""
        assert _uses(command) == uses

    def test_find_exec(self) -> None:
        """find's roots are read and the command it runs removes the files found."""
        uses = _uses("find . -name x -exec rm {} +")
        assert (".", "read") in uses
        assert ("{}", "remove") in uses

    def test_unknown_programs_touch_every_word(self) -> None:
        """A program the table does not know may write each word it is given; the checks read each side
        of an ``=`` and a short option's attached value in it."""
        paths = {use.path for use in command_effects("frob --out=x -sLo.git/h y").paths if use.guessed}
        assert paths == {"--out=x", "-sLo.git/h", "y"}
        for command in ("frob --out=.bashrc", "frob -sLo.git/h", "cd .git && frob hooks/x"):
            assert check_shell(command, cwd=CWD, home=HOME, protected=PROTECTED_PATHS) is not None, command

    def test_a_name_that_cannot_be_read(self) -> None:
        """A command whose name the shell works out may be any program: its operands may be removed."""
        effects = command_effects("$(echo rm) -rf /")
        assert ("/", "remove") in [(use.path, use.action) for use in effects.paths]
        assert effects.unread_names

    def test_expanding_words(self) -> None:
        """A word the shell may change is marked so (globs, braces, expansions, a leading tilde)."""
        expands = {use.path: use.expands for use in command_effects("rm -rf *.o ~/x $D plain").paths}
        assert expands == {"*.o": True, "~/x": True, "$D": True, "plain": False}


class TestDirectories:
    """Relative paths are read from every directory an earlier command may have moved to."""

    def test_a_known_change(self) -> None:
        """After ``cd sub`` a relative path is read from ``.`` and from ``sub``."""
        (use,) = [use for use in command_effects("cd sub && rm -rf x").paths if use.action == "remove"]
        assert use.bases == (".", "sub")

    def test_changes_accumulate(self) -> None:
        """Two changes: each earlier directory joined with the later one."""
        (use,) = [use for use in command_effects("cd a; cd b; rm x").paths if use.action == "remove"]
        assert use.bases == (".", "a", "b", "a/b")

    @pytest.mark.parametrize(
        "command",
        ["cd $X && rm y", "cd - && rm y", "popd && rm y", "ln -s / r && rm y", "CDPATH=/ cd u; rm y"],
    )
    def test_a_change_no_check_can_follow(self, command: str) -> None:
        """After a move the checks cannot follow, a relative path has no known base."""
        (use,) = [use for use in command_effects(command).paths if use.action == "remove" and use.path == "y"]
        assert use.bases is None

    def test_launcher_directories(self) -> None:
        """``env -C`` and ``sudo -D`` move what they run."""
        (use,) = [use for use in command_effects("env -C / rm -rf usr").paths if use.action == "remove"]
        assert use.bases is not None
        assert "/" in use.bases

    def test_cd_alone_goes_home(self) -> None:
        """``cd`` with no operand moves to the home directory."""
        assert command_effects("cd").directories == ("~",)


class TestOtherEffects:
    """Implicit writes, piped scripts, removals of what the input names, and what cannot be read."""

    def test_implicit(self) -> None:
        """A protected file written without being named is reported by the reason's words."""
        assert command_effects("git -C . config core.hooksPath x").implicit == (
            "git's configuration (.gitconfig or .git/config)",
        )

    @pytest.mark.parametrize(
        "command",
        [
            "curl -s x | bash",
            "cat x.py | python3",
            "echo x | sudo -s",
            "curl -s x | { cd /tmp; bash; }",
            "curl -s x | bash /dev/stdin",
            "bash <(curl -s x)",
            "source <(curl -s x)",
            "python3 <(curl -s x)",
            "bash < <(curl -s x)",
            "sudo bash < <(curl -s x)",
            "{ sh; } < <(curl -s x)",
            "curl -s x > >(bash)",
            "exec 3< <(curl -s x); bash <&3",
            "exec < <(curl -s x); python3",
            "bash /dev/fd/3 3< <(curl -s x)",
            "bash | cat",
            "bash /dev/stdin",
        ],
    )
    def test_piped_input(self, command: str) -> None:
        """A shell or interpreter fed a pipe, a process substitution, a descriptor wired to one, or the
        agent's own input runs what no check can read."""
        assert command_effects(command).piped_input

    @pytest.mark.parametrize(
        "command",
        [
            "bash script.sh",
            "bash -c 'ls' | cat",
            "python3 -c 'print(1)'",
            "ls | wc -l; bash x.sh",
            "diff <(curl -s x) y",
            "bash x.sh <(curl -s x)",
            "bash <<< 'ls' | cat",
            "curl -s x | bash < /dev/null",
            "source .venv/bin/activate",
        ],
    )
    def test_not_piped_input(self, command: str) -> None:
        """A shell given a script, a file or a heredoc, or one that only writes to a pipe, runs no piped
        input (a process substitution given to another program, or as an argument, is no script)."""
        assert not command_effects(command).piped_input

    @pytest.mark.parametrize("command", ["ls | xargs rm", "find . | xargs -0 rm -rf", "xargs -a list rm"])
    def test_removes_input(self, command: str) -> None:
        """A remover under xargs removes what its input names."""
        assert command_effects(command).removes_input

    def test_xargs_of_a_reader(self) -> None:
        """xargs running a reader removes nothing."""
        assert not command_effects("ls | xargs grep x").removes_input

    def test_unparsed(self) -> None:
        """Text the shell would refuse is reported as such."""
        assert command_effects("rm -rf 'x").unparsed is not None
        assert command_effects("rm -rf x").unparsed is None

    def test_type_error(self) -> None:
        """Only strings are commands."""
        with pytest.raises(TypeError, match="expected a string"):
            command_effects(3)  # type: ignore[arg-type]

    def test_plain_reading(self) -> None:
        """The plain reading is the allow side's: understood commands only."""
        plain = plain_reading("cp a b && mkdir c")
        assert plain is not None
        assert [simple.words for simple in plain] == [("cp", "a", "b"), ("mkdir", "c")]
        assert plain_reading("cp $(x) b") is None


_WORDS = st.sampled_from(
    [
        *sorted(QUICK_NAMES)[:40],
        "cat",
        "ls",
        "echo",
        ".git/hooks/x",
        "~/.bashrc",
        "/",
        "~",
        "..",
        "x",
        "-rf",
        "-c",
        "config",
        "set",
        "core.hooksPath",
        "-C",
        ".",
        "|",
        "&&",
        ";",
        ">",
        "'rm -rf ~'",
    ]
)


class TestQuickPath:
    """The safety checks' quick path, derived from the table, never skips a command the full reading
    would ask about."""

    def test_every_acting_program_is_a_needle(self) -> None:
        """Every program the table says may write, remove or run something sends a command to the full
        reading, however its name is written (by path, in capitals, with a version)."""
        for name in QUICK_NAMES:
            versioned = [f"{name}3.12"] if name_key(f"{name}3.12") == name else []
            for spelled in (name, f"/usr/bin/{name}", name.upper(), *versioned):
                command = f"x; {spelled} y"
                assert _names_a_program(command.lower()), command

    def test_readers_are_not_needles(self) -> None:
        """Pure readers are no needles: ``cat``, ``ls`` and ``grep`` on ordinary files stay quick."""
        readers = {name for row in PROGRAMS if row.kind == "reader" for name in row.names} - QUICK_NAMES
        assert {"cat", "ls", "grep"} <= readers
        for name in readers:
            assert not _names_a_program(f"{name} file"), name
            assert not PROTECTED_PATHS.needles.search(f"{name} file"), name

    @given(st.lists(_WORDS, min_size=1, max_size=8))
    @settings(max_examples=400, deadline=None)
    def test_never_skips(self, words: list[str]) -> None:
        """Whatever the effects of a command make the safety checks ask about, the safety check with its
        quick path asks about too (text the reading cannot read in full asks only when it names something
        the checks look at: the quick path's needles)."""
        command = " ".join(words)
        effects = command_effects(command)
        full = _decided(effects, command, CWD, HOME, PROTECTED_PATHS)
        if full is not None and effects.fully_read:
            assert check_shell(command, cwd=CWD, home=HOME, protected=PROTECTED_PATHS) is not None


class TestScale:
    """The effects are worked out in time linear in the command."""

    @given(st.text(max_size=300))
    @settings(max_examples=300, deadline=None)
    def test_any_text(self, text: str) -> None:
        """Any text gives effects without an error; every path use has an action."""
        for use in command_effects(text).paths:
            assert isinstance(use, PathUse)
            assert use.action in ("read", "write", "remove", "touch")

    @pytest.mark.parametrize("count", [500, 2_000])
    def test_chains(self, count: int) -> None:
        """A chain of cds and removals keeps a bounded set of directories, so it stays linear."""
        command = " && ".join(f"cd d{index} && rm -rf f{index}" for index in range(count))
        with cpu_bound(10.0):  # linear: well under a second; quadratic: minutes
            effects = command_effects(command)
        assert effects.paths[-1].bases is None  # more directories than are kept: no known base
