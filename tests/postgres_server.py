"""A throwaway PostgreSQL server for the tests and the store benchmark.

``initdb`` in a temporary directory, started with ``pg_ctl`` on a free local port (and a socket in that
directory), stopped and removed at the end. ``initdb`` refuses to run as root, so as root every server
command runs as the ``postgres`` system user (Debian's ``postgresql`` package creates it) through
``runuser``. The binaries are looked up on ``PATH`` and then under ``/usr/lib/postgresql/*/bin``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final, final

__all__ = ["PostgresServer", "PostgresUnavailable", "find_binaries", "postgres_server", "running_postgres"]

_USER: Final = "ask_permissions"
_START_SECONDS: Final = 60


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def find_binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    found = shutil.which("initdb")
    if found is not None and shutil.which("pg_ctl") is not None:
        return Path(found).parent
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    return candidates[-1].parent if candidates else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    runuser = shutil.which("runuser")
    if runuser is None:
        raise PostgresUnavailable("running as root, and no runuser to start PostgreSQL as user postgres")
    return [runuser, "-u", "postgres", "--", *command]


@final
class PostgresServer:
    """A throwaway server this run started: its URL, and ``stop`` / ``start`` for the fault tests."""

    def __init__(self, binaries: Path, root: Path, port: int, options: str) -> None:
        self._binaries, self._root, self._port, self._options = binaries, root, port, options
        self.url: Final = f"postgresql:///postgres?host={root}&port={port}&user={_USER}"

    @property
    def port(self) -> int:
        """The TCP port it listens on, at 127.0.0.1 (besides its socket)."""
        return self._port

    @property
    def _data(self) -> Path:
        return self._root / "data"

    def start(self) -> None:
        """Start the server (``pg_ctl start -w``).

        Raises:
            PostgresUnavailable: it did not start (the server's log is in the message).
        """
        log = self._root / "server.log"
        started = subprocess.run(
            _as_server_user(
                [
                    str(self._binaries / "pg_ctl"),
                    "-D",
                    str(self._data),
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    "30",
                    "-o",
                    self._options,
                    "start",
                ]
            ),
            check=False,
            capture_output=True,
            text=True,
            timeout=_START_SECONDS,
        )
        if started.returncode != 0:
            detail = log.read_text() if log.exists() else started.stderr
            raise PostgresUnavailable(f"PostgreSQL did not start: {detail[-2000:]}")

    def running(self) -> bool:
        """Whether the server runs (``pg_ctl status``)."""
        status = subprocess.run(
            _as_server_user([str(self._binaries / "pg_ctl"), "-D", str(self._data), "status"]),
            check=False,
            capture_output=True,
            timeout=_START_SECONDS,
        )
        return status.returncode == 0

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (``pg_ctl stop -m MODE -w``): ``immediate`` kills it as a crash would."""
        subprocess.run(
            _as_server_user(
                [str(self._binaries / "pg_ctl"), "-D", str(self._data), "-m", mode, "-w", "stop"]
            ),
            check=False,
            capture_output=True,
            timeout=_START_SECONDS,
        )


@contextlib.contextmanager
def running_postgres(*, crash_safe: bool = False) -> Iterator[PostgresServer]:
    """Start a server; yield it; stop and remove it afterwards.

    ``crash_safe``: a commit is written to the operating system before it is acknowledged (the default
    server acknowledges first, which is faster and loses the last commits when it is killed).

    Raises:
        PostgresUnavailable: no server binaries here.
    """
    binaries = find_binaries()
    if binaries is None:
        raise PostgresUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib")
    root = Path(tempfile.mkdtemp(prefix="ask-permissions-pg-"))
    try:
        if os.geteuid() == 0:
            import pwd

            account = pwd.getpwnam("postgres")
            os.chown(root, account.pw_uid, account.pw_gid)
        subprocess.run(
            _as_server_user(
                [
                    str(binaries / "initdb"),
                    "-D",
                    str(root / "data"),
                    "-U",
                    _USER,
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=_START_SECONDS,
        )
        port = _free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
            " -c full_page_writes=off -c max_connections=300"
        )
        if not crash_safe:
            options += " -c synchronous_commit=off"
        server = PostgresServer(binaries, root, port, options)
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield a libpq URL for it (through its socket); stop and remove it afterwards.

    Raises:
        PostgresUnavailable: no server binaries here.
    """
    with running_postgres() as server:
        yield server.url
