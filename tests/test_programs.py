"""The table of programs: what a simple command wraps, launches, and runs as a script."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions.rules._shell import strip_wrappers
from ask_permissions.shell._programs import Launch, ScriptRef, launch

LAUNCHES = [
    pytest.param(["git", "status"], Launch(), id="plain"),
    pytest.param(["nohup", "rm", "-rf", "x"], Launch(wrapped=1), id="nohup"),
    pytest.param(["timeout", "5", "git", "status"], Launch(wrapped=2), id="timeout"),
    pytest.param(["timeout", "-s", "KILL", "5", "ls"], Launch(wrapped=4), id="timeout-signal"),
    pytest.param(["nice", "-n", "5", "ls"], Launch(wrapped=3), id="nice"),
    pytest.param(["time", "-p", "ls"], Launch(wrapped=2), id="time-p"),
    pytest.param(["command", "-p", "ls"], Launch(wrapped=2), id="command-p"),
    pytest.param(["stdbuf", "-o0", "ls"], Launch(wrapped=1 + 1), id="stdbuf"),
    pytest.param(["xargs", "rm"], Launch(wrapped=1, appends_arguments=True), id="bare-xargs"),
    pytest.param(["nohup"], Launch(wrapped=1), id="wrapper-alone"),
    pytest.param(["bash", "-c", "rm -rf ~"], Launch(script_only=2), id="bash-c"),
    pytest.param(["timeout", "5", "sh", "-lc", "ls"], Launch(wrapped=2, script_only=4), id="wrapped-sh-lc"),
    pytest.param(["bash", "-c"], Launch(), id="bash-c-without-script"),
    pytest.param(
        ["sudo", "-u", "root", "rm", "-rf", "/"],
        Launch(commands=((2, 6), (3, 6), (5, 6))),
        id="sudo-every-later-word",
    ),
    pytest.param(
        ["find", ".", "-exec", "rm", "{}", ";"],
        Launch(commands=((3, 6),)),
        id="find-exec",
    ),
    pytest.param(
        ["su", "-c", "rm -rf ~", "root"],
        Launch(scripts=(ScriptRef(2, 3),), commands=((3, 4),)),
        id="su-c",
    ),
    pytest.param(
        ["eval", "rm", "-rf", "~"],
        Launch(scripts=(ScriptRef(1, 4),), commands=((1, 4), (3, 4))),
        id="eval",
    ),
    pytest.param(["watch", "rm -rf ~"], Launch(scripts=(ScriptRef(1, 2),)), id="watch-script"),
    pytest.param(["bash"], Launch(runs_input=True), id="bash-reads-its-input"),
    pytest.param(["python3", "-"], Launch(runs_input=True), id="python-dash"),
    pytest.param(["bash", "x.sh"], Launch(), id="bash-runs-a-file"),
    pytest.param(["sudo", *(["x"] * 65)], None, id="too-many-candidates"),
]


class TestLaunch:
    """``launch`` reads what a command starts, as today's splitter did."""

    @pytest.mark.parametrize(("argv", "expected"), LAUNCHES)
    def test_launch(self, argv: list[str], expected: Launch | None) -> None:
        """Each command's wrappers, scripts, launched commands and input are read as listed."""
        found = launch(argv)
        if expected is None:
            assert found.unreadable
        else:
            assert found == expected

    def test_script_text(self) -> None:
        """A script reference joins its words and skips an attached option's prefix."""
        assert ScriptRef(1, 3, offset=2).text(["env", "-Srm -rf", "~"]) == "rm -rf ~"

    @given(
        st.lists(
            st.sampled_from(
                [
                    "nohup",
                    "time",
                    "-p",
                    "nice",
                    "-n",
                    "5",
                    "timeout",
                    "xargs",
                    "ls",
                    "--",
                    "command",
                    "stdbuf",
                    "-o0",
                    "-v",
                ]
            ),
            max_size=8,
        )
    )
    @settings(max_examples=300, deadline=None)
    def test_wrappers_as_the_splitter_strips_them(self, argv: list[str]) -> None:
        """The wrapped count and xargs flag agree with the splitter's ``strip_wrappers``."""
        found = launch(argv)
        assert (found.wrapped, found.appends_arguments) == strip_wrappers(argv)
