"""The table of programs: what a simple command wraps, launches, runs as a script, and does to paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions.shell._programs import (
    PROGRAMS,
    Launch,
    Program,
    ScriptRef,
    launch,
    program_named,
    read_argv,
    strip_wrappers,
)

from .timing import cpu_bound

LAUNCHES = [
    pytest.param(["git", "status"], Launch(), id="plain"),
    pytest.param(["nohup", "rm", "-rf", "x"], Launch(wrapped=1), id="nohup"),
    pytest.param(["nohup", "--", "rm", "-rf", "/"], Launch(wrapped=2), id="nohup-double-dash"),
    pytest.param(["timeout", "5", "git", "status"], Launch(wrapped=2), id="timeout"),
    pytest.param(["timeout", "-s", "KILL", "5", "ls"], Launch(wrapped=4), id="timeout-signal"),
    pytest.param(["nice", "-n", "5", "ls"], Launch(wrapped=3), id="nice"),
    pytest.param(["nice", "-n", "5", "--", "rm"], Launch(wrapped=4), id="nice-double-dash"),
    pytest.param(["time", "-p", "ls"], Launch(wrapped=2), id="time-p"),
    pytest.param(["command", "-p", "ls"], Launch(wrapped=2), id="command-p"),
    pytest.param(["command", "--", "ls"], Launch(wrapped=2), id="command-double-dash"),
    pytest.param(["stdbuf", "-o0", "ls"], Launch(wrapped=2), id="stdbuf"),
    pytest.param(["xargs", "rm"], Launch(wrapped=1, appends_arguments=True), id="bare-xargs"),
    pytest.param(["nohup"], Launch(wrapped=1), id="wrapper-alone"),
    pytest.param(["bash", "-c", "rm -rf ~"], Launch(script_only=2), id="bash-c"),
    pytest.param(["timeout", "5", "sh", "-lc", "ls"], Launch(wrapped=2, script_only=4), id="wrapped-sh-lc"),
    pytest.param(["bash", "-c"], Launch(), id="bash-c-without-script"),
    pytest.param(["sudo", "-u", "root", "rm", "-rf", "/"], Launch(commands=((3, 6),)), id="sudo-user"),
    pytest.param(
        ["sudo", *(["-u", "root"] * 40), "rm", "x"], Launch(commands=((81, 83),)), id="sudo-many-options"
    ),
    pytest.param(["env", "-i", "FOO=1", "rm", "-rf", "/"], Launch(commands=((3, 6),)), id="env-assignment"),
    pytest.param(["env", "-S", "rm -rf /"], Launch(scripts=(ScriptRef(2, 3),)), id="env-split-string"),
    pytest.param(["env", "-Srm -rf /"], Launch(scripts=(ScriptRef(1, 2, 2),)), id="env-attached-string"),
    pytest.param(["su", "--command=rm -rf /"], Launch(scripts=(ScriptRef(1, 2, 10),)), id="su-long-command"),
    pytest.param(["su", "--comm=rm -rf /"], Launch(scripts=(ScriptRef(1, 2, 7),)), id="su-abbreviated"),
    pytest.param(["su", "-c", "rm -rf ~", "root"], Launch(scripts=(ScriptRef(2, 3),)), id="su-c"),
    pytest.param(["script", "--command=rm x"], Launch(scripts=(ScriptRef(1, 2, 10),)), id="script-command"),
    pytest.param(["find", ".", "-exec", "rm", "{}", ";"], Launch(commands=((3, 5),)), id="find-exec"),
    pytest.param(
        ["find", ".", "-exec", "sh", "-c", "rm x", ";", "-print"],
        Launch(commands=((3, 6),)),
        id="find-exec-sh",
    ),
    pytest.param(
        ["find", ".", "-execdir", "rm", "{}", "+"], Launch(commands=((3, 5),)), id="find-execdir-plus"
    ),
    pytest.param(["eval", "rm", "-rf", "~"], Launch(scripts=(ScriptRef(1, 4),)), id="eval"),
    pytest.param(["watch", "-n", "1", "rm -rf ~"], Launch(scripts=(ScriptRef(3, 4),)), id="watch-script"),
    pytest.param(["ssh", "-p", "22", "host", "rm", "-rf", "/"], Launch(scripts=(ScriptRef(4, 7),)), id="ssh"),
    pytest.param(
        ["ssh", "-o", "ProxyCommand=rm -rf /", "host"], Launch(scripts=(ScriptRef(2, 3, 13),)), id="ssh-proxy"
    ),
    pytest.param(["trap", "rm -rf x", "EXIT"], Launch(scripts=(ScriptRef(1, 2),)), id="trap"),
    pytest.param(["trap", "EXIT"], Launch(), id="trap-reset"),
    pytest.param(["xargs", "-0", "rm", "-rf"], Launch(commands=((2, 4),)), id="xargs-options"),
    pytest.param(["sg", "staff", "-c", "rm x"], Launch(scripts=(ScriptRef(3, 4),)), id="sg-c"),
    pytest.param(["busybox", "rm", "-rf", "/"], Launch(commands=((1, 4),)), id="busybox"),
    pytest.param(["npx", "rimraf", "~"], Launch(commands=((1, 3),)), id="npx"),
    pytest.param(["command", "-v", "rm"], Launch(), id="command-v-describes"),
    pytest.param(["bash"], Launch(runs_input=True), id="bash-reads-its-input"),
    pytest.param(["bash", "-s"], Launch(runs_input=True), id="bash-s"),
    pytest.param(["sudo", "-s"], Launch(runs_input=True), id="sudo-shell"),
    pytest.param(["bash", "x.sh"], Launch(runs_files=(1,)), id="bash-runs-a-file"),
    pytest.param(["bash", "--", "x.sh"], Launch(runs_files=(2,)), id="bash-double-dash-file"),
    pytest.param(["bash", "-s", "x.sh"], Launch(runs_input=True), id="bash-s-takes-arguments"),
    pytest.param(["bash", "--rcfile", "r", "-i"], Launch(runs_input=True, runs_files=(2,)), id="rcfile"),
    pytest.param(["source", "x.sh", "a"], Launch(runs_files=(1,)), id="source"),
    pytest.param(["timeout", "5", ".", "x.sh"], Launch(wrapped=2, runs_files=(3,)), id="wrapped-dot"),
    pytest.param(["python3"], Launch(runs_code_input=True), id="python-reads-its-input"),
    pytest.param(["python3", "-"], Launch(runs_code_input=True), id="python-dash"),
    pytest.param(["python3", "x.py"], Launch(runs_code_files=(1,)), id="python-runs-a-file"),
    pytest.param(["python3", "-c", "print(1)"], Launch(), id="python-c"),
    pytest.param(["awk", "-f", "p.awk", "x"], Launch(runs_code_files=(2,)), id="awk-program-file"),
    pytest.param(["bash", "-x", "-c", "rm ~"], Launch(scripts=(ScriptRef(3, 4),)), id="bash-other-options"),
    pytest.param(
        ["timeout", "--weird", "5", "rm"], Launch(commands=((3, 4), (2, 4))), id="unknown-option-every-word"
    ),
    pytest.param(
        ["tmux", "new", "rm -rf x"], Launch(commands=((1, 3),), scripts=(ScriptRef(2, 3),)), id="tmux"
    ),
]


class TestLaunch:
    """``launch`` reads what a command starts from the table."""

    @pytest.mark.parametrize(("argv", "expected"), LAUNCHES)
    def test_launch(self, argv: list[str], expected: Launch) -> None:
        """Each command's wrappers, scripts, launched commands and input are read as listed."""
        assert launch(argv) == expected

    def test_too_many_candidates_are_unreadable(self) -> None:
        """A launcher the table cannot read, with more candidate words than are tried, is unreadable."""
        assert launch(["tmux", *(["x"] * 65)]).unreadable
        assert not launch(["tmux", *(["x"] * 64)]).unreadable

    def test_script_text(self) -> None:
        """A script reference joins its words and skips an attached option's prefix."""
        assert ScriptRef(1, 3, offset=2).text(["env", "-Srm -rf", "~"]) == "rm -rf ~"


# -- the splitter's wrapper stripping, kept as the reference model --------------------------------------

_REF_DURATION = re.compile(r"[0-9]+(?:\.[0-9]+)?[smhd]?")
_REF_SIGNAL = re.compile(r"(?:SIG)?[A-Z0-9]+")
_REF_INTEGER = re.compile(r"[+-]?[0-9]+")
_REF_NICE_JOINED = re.compile(r"-n?[+-]?[0-9]+|--adjustment=[+-]?[0-9]+")
_REF_STDBUF_JOINED = re.compile(r"-[ioe][0-9A-Za-z]+|--(?:input|output|error)=[0-9A-Za-z]+")


def splitter_strip_wrappers(words: list[str]) -> tuple[int, bool]:
    """The splitter's wrapper stripping before the table (the reference the table must agree with)."""
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
            if following == "-n" and index + 1 < size and _REF_INTEGER.fullmatch(words[index + 1]):
                index += 2
            elif following is not None and _REF_NICE_JOINED.fullmatch(following):
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
                if _REF_STDBUF_JOINED.fullmatch(words[end]):
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
            valid = _REF_SIGNAL if word == "-s" else _REF_DURATION
            if not valid.fullmatch(words[index + 1]):
                return None
            index += 2
        elif word.startswith(("--signal=", "--kill-after=")):
            index += 1
        else:
            break
    if index < size and _REF_DURATION.fullmatch(words[index]):
        return index + 1
    return None


# Well-formed wrapper groups: the plain reading strips them as the splitter did.
WRAPPER_GROUPS = [
    ["nohup"],
    ["time"],
    ["time", "-p"],
    ["nice"],
    ["nice", "-n", "5"],
    ["nice", "-5"],
    ["timeout", "5"],
    ["timeout", "-s", "KILL", "5"],
    ["timeout", "-k", "3", "10s"],
    ["command"],
    ["command", "-p"],
    ["stdbuf", "-o0"],
    ["stdbuf", "-i", "L", "-e0"],
    ["builtin"],
    ["xargs"],
]


class TestStrip:
    """Wrappers are stripped for the plain reading as the splitter stripped them, plus their ``--``."""

    @given(
        st.lists(st.sampled_from(WRAPPER_GROUPS), max_size=4),
        st.sampled_from([["ls", "-la"], ["git", "status"], [], ["x"]]),
    )
    @settings(max_examples=300, deadline=None)
    def test_as_the_splitter(self, groups: list[list[str]], command: list[str]) -> None:
        """The wrapped count and xargs flag agree with the splitter's on well-formed wrappers."""
        argv = [word for group in groups for word in group] + command
        assert strip_wrappers(argv) == splitter_strip_wrappers(argv)

    @pytest.mark.parametrize(
        ("argv", "wrapped"),
        [
            pytest.param(["nohup", "--", "rm"], 2, id="nohup"),
            pytest.param(["timeout", "--", "5", "rm"], 3, id="timeout"),
            pytest.param(["stdbuf", "-o0", "--", "rm"], 3, id="stdbuf"),
            pytest.param(["builtin", "--", "echo"], 2, id="builtin"),
        ],
    )
    def test_double_dash(self, argv: list[str], wrapped: int) -> None:
        """A wrapper's ``--`` is stripped with it, so the command after it is what the plain reading sees."""
        assert strip_wrappers(argv) == (wrapped, False)

    @pytest.mark.parametrize(
        "argv",
        [
            pytest.param(["nohup", "-p", "x"], id="unknown-option"),
            pytest.param(["nice", "-n", "x", "ls"], id="bad-value"),
            pytest.param(["timeout", "ls"], id="no-duration"),
            pytest.param(["command", "-v", "ls"], id="describes"),
            pytest.param(["xargs", "-0", "ls"], id="xargs-with-options"),
            pytest.param(["/usr/bin/nohup", "ls"], id="by-path"),
            pytest.param(["time", "--", "ls"], id="time-keyword-takes-no-double-dash"),
        ],
    )
    def test_left_in_place(self, argv: list[str]) -> None:
        """A wrapper with anything but what the plain reading strips stays: an allow must match it."""
        assert strip_wrappers(argv)[0] == 0


def _roles(argv: list[str]) -> list[tuple[str, str]]:
    reading = read_argv(argv)
    return [(part.text(argv), part.role) for part in reading.parts]


ROLES = [
    pytest.param(["rm", "-rf", "--", "a", "-b"], [("a", "remove"), ("-b", "remove")], id="rm-double-dash"),
    pytest.param(["rm", "a", "-f", "b"], [("a", "remove"), ("b", "remove")], id="rm-options-anywhere"),
    pytest.param(["cp", "-r", "a", "b", "c"], [("a", "read"), ("b", "read"), ("c", "write")], id="cp"),
    pytest.param(["cp", "-t", "d", "a"], [("d", "write"), ("a", "read")], id="cp-target"),
    pytest.param(["cp", "-td", "a"], [("d", "write"), ("a", "read")], id="cp-attached-target"),
    pytest.param(["cp", "--target-directory=d", "a"], [("d", "write"), ("a", "read")], id="cp-long-target"),
    pytest.param(["mv", "a", "b"], [("a", "remove"), ("b", "write")], id="mv"),
    pytest.param(["ln", "-s", "/", "r"], [("/", "touch"), ("r", "write")], id="ln"),
    pytest.param(["tee", "-a", "x"], [("x", "write")], id="tee"),
    pytest.param(["sed", "-i", "s/a/b/", "f"], [("s/a/b/", "touch"), ("f", "write")], id="sed-in-place"),
    pytest.param(["sed", "-e", "s/a/b/", "f"], [("s/a/b/", "touch"), ("f", "read")], id="sed-script-option"),
    pytest.param(["sed", "s/a/b/", "f"], [("s/a/b/", "touch"), ("f", "read")], id="sed-reads"),
    pytest.param(["dd", "if=a", "of=b"], [("a", "read"), ("b", "write")], id="dd"),
    pytest.param(["cat", "a", "b"], [("a", "read"), ("b", "read")], id="cat"),
    pytest.param(["grep", "-e", "x", "f"], [("x", "data"), ("f", "read")], id="grep-pattern-option"),
    pytest.param(["grep", "x", "f"], [("x", "data"), ("f", "read")], id="grep"),
    pytest.param(["echo", ".git/hooks"], [(".git/hooks", "data")], id="echo"),
    pytest.param(["find", "/", "-delete"], [("/", "remove")], id="find-delete"),
    pytest.param(["find", "-delete"], [(".", "remove")], id="find-delete-default-root"),
    pytest.param(
        ["find", "b", "-name", "*.o", "-delete"], [("*.o", "data"), ("b", "read")], id="find-delete-with-test"
    ),
    pytest.param(["find", ".", "-exec", "rm", "{}", "+"], [(".", "remove")], id="find-exec-rm"),
    pytest.param(["find", ".", "-exec", "grep", "x", "{}", "+"], [(".", "read")], id="find-exec-grep"),
    pytest.param(["find", ".", "-fprint", "f"], [("f", "write"), (".", "read")], id="find-fprint"),
    pytest.param(
        ["rsync", "-a", "--delete", "a/", "b/"], [("a/", "read"), ("b/", "remove")], id="rsync-delete"
    ),
    pytest.param(["rsync", "--del", "a/", "b/"], [("a/", "read"), ("b/", "remove")], id="rsync-del"),
    pytest.param(
        ["rsync", "--remove-source-files", "a", "b"], [("a", "remove"), ("b", "write")], id="rsync-sources"
    ),
    pytest.param(["tar", "-cf", "t", "--remove-files", "a"], [("t", "touch"), ("a", "remove")], id="tar"),
    pytest.param(["tar", "xzf", "t", "-C", "d"], [("t", "touch"), ("d", "touch")], id="tar-old-style"),
    pytest.param(["zip", "-qmr", "z", "a"], [("z", "write"), ("a", "remove")], id="zip-move"),
    pytest.param(["env", "-C", "/", "rm"], [("/", "chdir")], id="env-chdir"),
    pytest.param(["sudo", "-D", "/", "rm"], [("/", "chdir")], id="sudo-chdir"),
    pytest.param(["cd", "src"], [("src", "chdir")], id="cd"),
    pytest.param(["git", "commit", "-m", ".git ignore"], [(".git ignore", "data")], id="git-commit-message"),
    pytest.param(
        ["git", "config", "--file=.gitmodules", "a.b", "c"],
        [(".gitmodules", "write"), ("a.b", "data"), ("c", "data")],
        id="git-config-file",
    ),
    pytest.param(["bash", "-e", "x.sh", "a"], [("x.sh", "runs"), ("a", "data")], id="bash-runs-a-file"),
    pytest.param(["bash", "--rcfile=r", "-i"], [("r", "runs")], id="bash-rcfile"),
    pytest.param([".", "x.sh", "a"], [("x.sh", "runs"), ("a", "data")], id="dot"),
    pytest.param(["source", "x.sh"], [("x.sh", "runs")], id="source"),
    pytest.param(["python3", "-u", "x.py", "a"], [("x.py", "runs"), ("a", "data")], id="python-file"),
    pytest.param(
        ["python3", "-m", "http.server", "8000"], [("http.server", "data"), ("8000", "data")], id="python-m"
    ),
    pytest.param(["perl", "x.pl"], [("x.pl", "runs")], id="perl-file"),
    pytest.param(["awk", "-f", "p.awk", "f"], [("p.awk", "runs"), ("f", "read")], id="awk-program-file"),
    pytest.param(["sed", "-f", "s.sed", "f"], [("s.sed", "runs"), ("f", "read")], id="sed-script-file"),
]


class TestRoles:
    """Each operand and option value gets the role the table gives it."""

    @pytest.mark.parametrize(("argv", "roles"), ROLES)
    def test_roles(self, argv: list[str], roles: list[tuple[str, str]]) -> None:
        """The parts of each argv and their roles are as listed."""
        assert _roles(argv) == roles

    def test_an_unknown_program_has_no_row(self) -> None:
        """A program the table does not know reads as no rows: its words are for the caller to fear."""
        assert read_argv(["frobnicate", "-x", ".git"]).programs == ()

    @pytest.mark.parametrize(
        ("word", "name"),
        [
            ("/usr/bin/RM", "rm"),
            ("python3.12", "python"),
            ("pip3", "pip"),
            ("=rm", "rm"),
            ("Bash", "sh"),
        ],
    )
    def test_names(self, word: str, name: str) -> None:
        """A command word finds its row by file name, case-folded, without a version or zsh's ``=``."""
        row = program_named(word)
        assert row is not None
        assert row.name == name

    def test_an_unknown_option_makes_the_reading_uncertain(self) -> None:
        """An option a strict row does not know makes every word a possible write."""
        assert read_argv(["cp", "--frobnicate", "a", "b"]).uncertain
        assert not read_argv(["cp", "-r", "a", "b"]).uncertain
        assert not read_argv(["cat", "--frobnicate", "a"]).uncertain  # readers never write


IMPLICIT = [
    pytest.param(["git", "config", "core.hooksPath", "hooks"], "git's configuration", id="git-config"),
    pytest.param(["git", "-C", ".", "config", "core.hooksPath", "x"], "git's configuration", id="git-C"),
    pytest.param(["git", "--git-dir=.git", "config", "a.b", "c"], "git's configuration", id="git-dir"),
    pytest.param(["git", "config", "--unset", "core.hooksPath"], "git's configuration", id="git-unset"),
    pytest.param(["git", "config", "set", "core.pager", "x"], "git's configuration", id="git-config-set"),
    pytest.param(["git", "-c", "core.hooksPath=x", "commit"], "a git setting that runs", id="git-c"),
    pytest.param(["git", "-c", "Core.HooksPath=x", "commit"], "a git setting that runs", id="git-c-case"),
    pytest.param(["git", "--config-env=core.pager=X", "log"], "a git setting that runs", id="git-config-env"),
    pytest.param(
        ["git", "clone", "-c", "core.fsmonitor=x", "u"], "a git setting that runs", id="git-clone-c"
    ),
    pytest.param(
        ["git", "--weird", "x", "config", "a.b", "c"], "git's configuration", id="git-unknown-option"
    ),
    pytest.param(["git", "submodule", "add", "u", "p"], ".gitmodules", id="git-submodule-add"),
    pytest.param(["git", "rev-parse", "--git-dir"], "into .git/", id="git-rev-parse"),
    pytest.param(["git", "init", "--template=t"], "hooks from a template", id="git-init-template"),
    pytest.param(["npm", "config", "set", "a", "b"], ".npmrc", id="npm-config-set"),
    pytest.param(["npm", "-g", "config", "set", "a", "b"], ".npmrc", id="npm-global"),
    pytest.param(["npm", "--location=user", "config", "set", "a"], ".npmrc", id="npm-location"),
    pytest.param(["npm", "--location", "user", "c", "set", "a"], ".npmrc", id="npm-location-word"),
    pytest.param(["npm", "set", "a=b"], ".npmrc", id="npm-set"),
    pytest.param(["pnpm", "-C", "d", "config", "set", "a", "b"], ".npmrc", id="pnpm"),
    pytest.param(["yarn", "config", "set", "a", "b"], ".yarnrc", id="yarn"),
    pytest.param(["yarn", "set", "version", "x"], ".yarnrc.yml", id="yarn-set-version"),
    pytest.param(["pip", "config", "set", "a.b", "c"], "pip.conf", id="pip"),
    pytest.param(["pip3", "config", "--user", "set", "a.b", "c"], "pip.conf", id="pip3-user"),
    pytest.param(["python3", "-m", "pip", "config", "set", "a.b", "c"], "pip.conf", id="python-m-pip"),
    pytest.param(["python", "-I", "-mpip", "config", "set", "a.b", "c"], "pip.conf", id="python-attached-m"),
    pytest.param(["pre-commit", "install"], "git hooks", id="pre-commit"),
    pytest.param(["husky", "init"], "git hooks", id="husky"),
    pytest.param(["conda", "init", "bash"], "shell start-up files", id="conda"),
    pytest.param(["pipx", "ensurepath"], "shell start-up files", id="pipx"),
]

NOT_IMPLICIT = [
    pytest.param(["git", "config", "--get", "user.name"], id="git-config-get"),
    pytest.param(["git", "config", "user.name"], id="git-config-one-operand-reads"),
    pytest.param(["git", "config", "--list"], id="git-config-list"),
    pytest.param(["git", "config", "--file=/tmp/x.cfg", "a.b", "c"], id="git-config-other-file"),
    pytest.param(["git", "-C", ".", "status"], id="git-C-status"),
    pytest.param(["git", "-c", "user.name=x", "commit"], id="git-c-harmless"),
    pytest.param(["npm", "config", "get", "registry"], id="npm-config-get"),
    pytest.param(["npm", "-g", "ls"], id="npm-ls"),
    pytest.param(["pip", "install", "-e", "."], id="pip-install"),
    pytest.param(["python3", "-m", "pip", "list"], id="python-m-pip-list"),
    pytest.param(["pre-commit", "run", "--all-files"], id="pre-commit-run"),
]


class TestImplicit:
    """Programs that write a protected file without naming it, whatever options stand before the verb."""

    @pytest.mark.parametrize(("argv", "written"), IMPLICIT)
    def test_implicit(self, argv: list[str], written: str) -> None:
        """The reading names the protected file written."""
        assert any(written in implicit for implicit in read_argv(argv).implicit)

    @pytest.mark.parametrize("argv", NOT_IMPLICIT)
    def test_not_implicit(self, argv: list[str]) -> None:
        """Reading configuration, or writing a file named elsewhere, is no implicit write."""
        assert read_argv(argv).implicit == ()


_KIND_TITLES = {
    "wrapper": "Wrappers (the plain reading looks through them)",
    "launcher": "Launchers (what they run is read too)",
    "shell": "Shells",
    "interpreter": "Interpreters",
    "remover": "Removers",
    "writer": "Writers",
    "reader": "Readers (naming a protected path in them does not ask)",
    "directory": "Directory changes",
    "variables": "Variables (some make a program run another)",
    "subcommands": "Sub-commands after global options",
}
_DOCS = Path(__file__).parent.parent / "docs" / "reference" / "programs.md"


def programs_markdown() -> str:
    """The docs' list of the table's programs, by kind, as generated from the table."""
    lines: list[str] = []
    for kind, title in _KIND_TITLES.items():
        lines += [f"### {title}", "", "| program | what it does |", "| --- | --- |"]
        for row in PROGRAMS:
            if row.kind == kind:
                names = ", ".join(f"`{name}`" for name in row.names)
                lines.append(f"| {names} | {row.does.replace('|', chr(92) + '|')} |")
        lines.append("")
    return "\n".join(lines)


class TestDocs:
    """The docs list exactly the table's programs."""

    def test_every_kind_has_a_title(self) -> None:
        """Each kind a row uses is listed in the docs."""
        assert {row.kind for row in PROGRAMS} <= set(_KIND_TITLES)

    def test_the_docs_list_the_table(self) -> None:
        """docs/reference/programs.md holds the table as generated from it (regenerate on a change)."""
        text = _DOCS.read_text(encoding="utf-8")
        start, end = "<!-- programs:start -->\n", "<!-- programs:end -->"
        listed = text[text.index(start) + len(start) : text.index(end)]
        assert listed.strip() == programs_markdown().strip()


class TestTable:
    """The table itself: well formed, and read in time linear in the words."""

    def test_every_row_has_a_description_and_names(self) -> None:
        """Each row says what it does and runs by at least one name, found again by that name."""
        for row in PROGRAMS:
            assert row.does
            for name in row.names:
                assert program_named(name) is row

    def test_launchers_launch(self) -> None:
        """Every launcher and wrapper row can start a command or a script."""
        for row in PROGRAMS:
            if row.kind in ("launcher", "wrapper"):
                assert row.launches, row.name

    def test_notation_errors(self) -> None:
        """A misspelt role in the table's notation is refused when the table is built."""
        from ask_permissions.shell import _programs

        with pytest.raises(ValueError, match="unknown role"):
            _programs._options("-x=writes")
        with pytest.raises(ValueError, match="unknown role"):
            _programs._slots("reads*")

    def test_a_launchers_slots_cannot_count_operands(self) -> None:
        """A row read operand by operand cannot change its slots by the operand count."""
        from ask_permissions.shell import _programs

        with pytest.raises(ValueError, match="operand count"):
            Program(
                ("x",),
                "launcher",
                "x",
                operands=_programs._slots("command"),
                when=(_programs._when(operands=1, slots="data"),),
            )

    @given(
        st.lists(
            st.text(max_size=12) | st.sampled_from(["-c", "--", "-", "-exec", ";", "+", "config", "set"]),
            max_size=20,
        ),
        st.sampled_from([row.names[0] for row in PROGRAMS]),
    )
    @settings(max_examples=500, deadline=None)
    def test_any_words(self, words: list[str], name: str) -> None:
        """Any words after any program are read without error, every index inside the argv."""
        argv = [name, *words]
        reading = read_argv(argv)
        for part in reading.parts:
            assert part.word == -1 or 0 <= part.word < len(argv)
        for start, end in reading.commands:
            assert 0 < start <= end <= len(argv)
        for script in reading.scripts:
            assert 0 < script.first < script.last <= len(argv)
        launched = launch(argv)
        assert 0 <= launched.wrapped <= len(argv)

    @pytest.mark.parametrize(
        "argv",
        [
            pytest.param(["sudo"] * 20_000, id="nested-launchers"),
            pytest.param(["git", *(["--weird"] * 10_000), *(["config"] * 10_000)], id="verbs-everywhere"),
            pytest.param(["tmux", *(["x"] * 20_000)], id="every-word"),
            pytest.param(["rm", *(["-rf"] * 20_000)], id="options"),
            pytest.param(["cp", "-" + "r" * 20_000, "a", "b"], id="bundle"),
            pytest.param(["find", ".", *(["-exec", "rm", ";"] * 5_000)], id="find"),
        ],
    )
    def test_long_argv_is_quick(self, argv: list[str]) -> None:
        """Reading a long argv takes time linear in it (a tenth of a second for 20,000 words; the bound only
        catches a quadratic reading, which would take minutes)."""
        with cpu_bound(10.0):
            read_argv(argv)
            launch(argv)
