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
from typing import Final

__all__ = ["PostgresUnavailable", "find_binaries", "postgres_server"]

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


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield a libpq URL for it (through its socket); stop and remove it afterwards.

    Raises:
        PostgresUnavailable: no server binaries here.
    """
    binaries = find_binaries()
    if binaries is None:
        raise PostgresUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib")
    root = Path(tempfile.mkdtemp(prefix="ask-permissions-pg-"))
    data, log = root / "data", root / "server.log"
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
                    str(data),
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
            f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c synchronous_commit=off"
            " -c full_page_writes=off -c max_connections=300"
        )
        started = subprocess.run(
            _as_server_user(
                [
                    str(binaries / "pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    "30",
                    "-o",
                    options,
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
        try:
            yield f"postgresql:///postgres?host={root}&port={port}&user={_USER}"
        finally:
            subprocess.run(
                _as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                check=False,
                capture_output=True,
                timeout=_START_SECONDS,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
