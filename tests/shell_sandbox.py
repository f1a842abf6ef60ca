"""A bubblewrap sandbox in which real bash runs scripts, and every program it starts is a stub.

The sandbox has no network (``--unshare-all``), a scratch ``tmpfs`` as its working directory and home, and a
root whose ``/bin`` and ``/usr/bin`` hold only bash (also as ``sh``) and one stub per program name the tests
give it. A stub records its argument vector into a log and exits 0, so nothing real ever runs; a command no
stub answers for is recorded by bash's ``command_not_found_handle``. The dynamic loader and the libraries
bash needs are bound read-only. Builtins that act like programs (``echo``, ``printf``, ``test``, ``true``,
``kill``, …) are disabled, so that they reach the stubs too; builtins that run code or shape the shell
(``eval``, ``source``, ``exec``, ``command``, ``builtin``, ``trap``, ``cd``, ``set``, ``exit``, …) are
bash's own.

Tests that need it skip when ``bwrap`` is missing or cannot make a sandbox here, unless
``ASK_PERMISSIONS_REQUIRE_BWRAP=1`` (``.ci/run`` sets it), when they fail instead.

The scripts given to ``Sandbox.run`` are data: they reach bash inside the sandbox as an environment variable,
never through a shell outside it.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

import pytest

__all__ = ["KEPT_BUILTINS", "Run", "Sandbox", "require_bwrap"]

BASH: Final = "/bin/bash"
REQUIRED: Final = os.environ.get("ASK_PERMISSIONS_REQUIRE_BWRAP") == "1"

KEPT_BUILTINS: Final = frozenset(
    {"eval", "source", ".", "exec", "command", "builtin", "trap", "enable", "declare", "typeset", "local"}
    | {"export", "readonly", "set", "shopt", "unset", "shift", "return", "exit", "break", "continue", "wait"}
    | {"alias", "unalias", "read", "mapfile", "readarray", "getopts", "let", "cd", "hash", ":"}
)
"""The builtins that stay bash's own in the sandbox: they run code or shape the shell. Every other builtin is
disabled, so that a command named like it runs its stub."""

_RECORD_FIELD: Final = "\x1f"
_RECORD_END: Final = "\x1e"
_NEWLINE_MARK: Final = "\x1c"
_PROGRAM_NAME: Final = re.compile(r"[A-Za-z0-9_.+-]+")

# A stub: records its own name and arguments (newlines marked) in one write, and exits 0. Run with -p, so it
# does not read BASH_ENV (the harness), whose disabled builtins it needs.
_STUB: Final = (
    "#!/bin/bash -p\n"
    "r=\n"
    "for a in \"${0##*/}\" \"$@\"; do r+=\"${a//$'\\n'/$'\\034'}\"$'\\037'; done\n"
    "printf '%s\\036' \"$r\" >> {log}\n"
    "exit 0\n"
)
_RECORDER: Final = (
    "#!/bin/bash -p\n"
    "r=\n"
    "for a in \"$@\"; do r+=\"${a//$'\\n'/$'\\034'}\"$'\\037'; done\n"
    "printf '%s\\036' \"$r\" >> {log}\n"
    "exit 127\n"
)
# Read by every non-interactive bash in the sandbox (BASH_ENV): what no stub answers for is recorded, and
# builtins that act like programs are disabled so that their stubs run instead.
_HARNESS: Final = (
    'command_not_found_handle() { /bin/.record "$@"; }\n'
    "for __oracle_builtin in $(compgen -b); do\n"
    '  case " {kept} " in\n'
    '    (*" $__oracle_builtin "*) ;;\n'
    '    (*) enable -n "$__oracle_builtin" ;;\n'
    "  esac\n"
    "done\n"
    "unset __oracle_builtin\n"
)


@final
@dataclass(frozen=True, slots=True)
class Run:
    """What one script did in the sandbox: the argument vectors of the programs it started, in the order
    they were recorded; its standard output; and whether it ran out of time."""

    programs: tuple[tuple[str, ...], ...]
    stdout: bytes
    timed_out: bool
    returncode: int | None


def _libraries() -> list[tuple[str, str]] | None:
    """The loader and libraries bash needs: ``(real path, path bash asks for)`` pairs, from ``ldd``."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return None
    listed = subprocess.run([ldd, BASH], capture_output=True, text=True, check=False, timeout=30)
    if listed.returncode != 0:
        return None
    pairs: list[tuple[str, str]] = []
    for line in listed.stdout.splitlines():
        path = line.split("=>")[-1].split("(")[0].strip()
        if path.startswith("/"):
            pairs.append((os.path.realpath(path), path))
    return pairs


@final
class Sandbox:
    """A sandbox root made in ``directory``, with a stub for each of ``programs``; not thread-safe (each
    run truncates the one log)."""

    __slots__ = ("_bin", "_bwrap", "_libraries", "_log", "_log_name", "_support")

    def __init__(self, directory: Path, programs: Iterable[str], bwrap: str) -> None:
        libraries = _libraries()
        if libraries is None:
            raise RuntimeError("ldd cannot list the libraries bash needs")
        self._bwrap = bwrap
        self._libraries = libraries
        self._log_name = f"/.oracle-log-{secrets.token_hex(8)}"  # a path no script guesses
        self._bin = directory / "bin"
        self._support = directory / "support"
        self._log = directory / "log"
        for folder in (self._bin, self._support, self._log):
            folder.mkdir()
        shutil.copy2(BASH, self._bin / "bash")
        shutil.copy2(BASH, self._bin / "sh")
        log = f"{self._log_name}/argv"
        stub = _STUB.replace("{log}", log)
        for name in set(programs):
            if _PROGRAM_NAME.fullmatch(name) and name not in ("bash", "sh", ".", "..") and len(name) < 64:
                self._write(self._bin / name, stub)
        self._write(self._bin / ".record", _RECORDER.replace("{log}", log))
        kept = " ".join(sorted(KEPT_BUILTINS))
        (self._support / "harness.sh").write_text(_HARNESS.replace("{kept}", kept))

    @staticmethod
    def _write(path: Path, text: str) -> None:
        path.write_text(text)
        path.chmod(0o755)

    def _command(self, entry: str) -> list[str]:
        command = [
            self._bwrap,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            str(self._bin),
            "/bin",
            "--ro-bind",
            str(self._bin),
            "/usr/bin",
            "--ro-bind",
            str(self._support),
            "/.oracle",
            "--bind",
            str(self._log),
            self._log_name,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/work",
            "--chdir",
            "/work",
        ]
        for real, wanted in self._libraries:
            command.extend(("--ro-bind", real, wanted))
        command.extend(("--", "/bin/bash", "-c", entry))
        return command

    def run(self, script: str, *, timeout: float = 5.0, harness: bool = True) -> Run:
        """Run ``script`` under bash in the sandbox (with the harness: stubs and disabled builtins)."""
        entry = 'eval "$ORACLE_SCRIPT"; wait' if harness else 'eval "$ORACLE_SCRIPT"'
        return self._run(entry, script, timeout=timeout, harness=harness)

    def syntax_is_valid(self, script: str, *, timeout: float = 5.0) -> bool:
        """Whether bash parses ``script`` without a syntax error (``bash -n``: nothing is run)."""
        return (
            self._run('/bin/bash -n -c "$ORACLE_SCRIPT"', script, timeout=timeout, harness=False).returncode
            == 0
        )

    def _run(self, entry: str, script: str, *, timeout: float, harness: bool) -> Run:
        log = self._log / "argv"
        log.write_bytes(b"")
        env = {"PATH": "/bin:/usr/bin", "HOME": "/work", "ORACLE_SCRIPT": script, "LC_ALL": "C"}
        if harness:
            env["BASH_ENV"] = "/.oracle/harness.sh"
        try:
            done = subprocess.run(
                self._command(entry),
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as expired:
            return Run(self._records(log), expired.stdout or b"", True, None)
        return Run(self._records(log), done.stdout, False, done.returncode)

    @staticmethod
    def _records(log: Path) -> tuple[tuple[str, ...], ...]:
        text = log.read_bytes().decode("utf-8", "surrogateescape")
        return tuple(
            tuple(field.replace(_NEWLINE_MARK, "\n") for field in record.split(_RECORD_FIELD)[:-1])
            for record in text.split(_RECORD_END)[:-1]
        )


@functools.cache
def _usable(bwrap: str) -> str | None:
    """Why bubblewrap cannot make the sandbox here, or ``None`` when it can (tried once per session)."""
    with tempfile.TemporaryDirectory(prefix="ask-permissions-sandbox-probe-") as scratch:
        try:
            sandbox = Sandbox(Path(scratch), ["probe"], bwrap)
            ran = sandbox.run("probe one two", timeout=30)
        except (OSError, RuntimeError, subprocess.SubprocessError) as error:
            return f"{error}"
        if ran.programs != (("probe", "one", "two"),):
            return f"a probe run recorded {ran.programs!r} (exit status {ran.returncode})"
    return None


def require_bwrap() -> str:
    """The ``bwrap`` executable, or skip the test (fail it when ``ASK_PERMISSIONS_REQUIRE_BWRAP=1``)."""
    bwrap = shutil.which("bwrap")
    problem = "bwrap is not installed" if bwrap is None else _usable(bwrap)
    if problem is None and bwrap is not None:
        return bwrap
    if REQUIRED:
        pytest.fail(f"bubblewrap is required (ASK_PERMISSIONS_REQUIRE_BWRAP=1) but unusable: {problem}")
    pytest.skip(f"bubblewrap is unusable here: {problem}")
