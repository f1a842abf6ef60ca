"""The seam between a sandbox and an operating system's walls, and Linux's: bubblewrap.

A backend turns a ``SandboxProfile`` into the walls of one process. ``BwrapBackend`` is built; another
system is one more class with the three methods of ``SandboxBackend`` — macOS's Seatbelt would write the
profile as an SBPL policy (``(deny default)``, ``(allow file-write* (subpath cwd))``, the protected paths as
``(deny file-write* ...)``, network only to the proxy's port) and start ``sandbox-exec -p POLICY``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final, Protocol, final

from ask_permissions._errors import SandboxUnavailableError, preview

from . import _bridge, _bwrap
from ._profile import SandboxProfile

__all__ = ["BwrapBackend", "Launch", "LaunchPlan", "SandboxBackend"]

_INSIDE: Final = "/run/ask-permissions"
"""Where a sandbox sees the proxy's bridge and socket (inside its private ``/run``)."""
_PROBE_TIMEOUT: Final = 30.0


@final
@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """One command to run inside a profile's walls, as data.

    Attributes:
        profile: the walls.
        argv: the command, as the process inside runs it.
        proxy: the domain proxy's socket folder when the profile has a network (``None``: no network).
    """

    profile: SandboxProfile
    argv: tuple[str, ...]
    proxy: str | None = None


class Launch(Protocol):
    """One process about to start inside walls: what to start, and whether it did start inside them."""

    @property
    def argv(self) -> list[str]:
        """The argument vector to start (a host process: the backend's program around the command)."""
        ...

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """File descriptors the process must inherit."""
        ...

    def spawned(self) -> None:
        """The process has been started: the host's copies of ``pass_fds`` can go."""
        ...

    def started(self) -> bool:
        """After the process ended: whether the walls were up and the command itself began."""
        ...


class SandboxBackend(Protocol):
    """How one operating system builds a profile's walls around a command (the seam for other systems)."""

    def check(self) -> None:
        """Raise ``SandboxUnavailableError`` unless walls can be built here (when a sandbox is built)."""
        ...

    def launch(self, plan: LaunchPlan) -> AbstractContextManager[Launch]:
        """What to start for one command; the context lasts as long as the process (resources held)."""
        ...

    def command(self, plan: LaunchPlan) -> list[str]:
        """An argument vector a host may start on its own that runs the command inside the walls, holding
        and releasing whatever the walls need by itself."""
        ...

    def close(self) -> None:
        """Release what the backend keeps between commands (the sandbox's ``close`` calls it)."""
        ...


@final
class _BwrapLaunch:
    __slots__ = ("_reader", "_writer", "argv")

    def __init__(self, argv: list[str], reader: int, writer: int) -> None:
        self.argv = argv
        self._reader = reader
        self._writer = writer

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self._writer,)

    def spawned(self) -> None:
        if self._writer != -1:
            os.close(self._writer)
            self._writer = -1

    def started(self) -> bool:
        return _bwrap.command_started(self._reader)

    def close(self) -> None:
        self.spawned()
        os.close(self._reader)


_PROBED: dict[str, tuple[int, ...]] = {}
"""The version of each bubblewrap program that passed the probe (tried once per program)."""
_PROBE_LOCK: Final = threading.Lock()


@final
class BwrapBackend:
    """Walls made by bubblewrap (Linux): namespaces of its own for the mounts, the processes, the network
    and the user (no capabilities), a read-only view of the file system with the profile's writable folders
    bound in, and the protected paths bound read-only over them.

    The placeholders that block missing protected paths stay for ``linger`` seconds after a run ends, so
    that a burst of commands makes them once and their removal happens off the commands' path; ``close``
    removes them at once (a sandbox's ``close`` calls it).

    Thread-safe: a private lock guards the timer of the kept placeholders; each launch has its own state.

    Args:
        bwrap: the bubblewrap program (default: ``/usr/bin/bwrap``, else ``bwrap`` on ``PATH``).
        linger: seconds the placeholders stay after the last run (``0``: removed as each run ends).
    """

    __slots__ = ("__weakref__", "_bwrap", "_hold", "_linger", "_lock", "_timer")

    def __init__(self, bwrap: str | os.PathLike[str] | None = None, *, linger: float = 2.0) -> None:
        seconds: object = linger
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds >= 0:
            raise ValueError(f"BwrapBackend: linger: expected seconds (0 or more); got {preview(seconds)}")
        if bwrap is not None:
            self._bwrap: str | None = os.fspath(bwrap)
        elif os.access("/usr/bin/bwrap", os.X_OK):
            self._bwrap = "/usr/bin/bwrap"
        else:
            self._bwrap = shutil.which("bwrap")
        self._linger: Final = float(linger)
        self._lock: Final = threading.Lock()
        self._hold: Final = _bwrap.Hold()
        self._timer: threading.Timer | None = None
        weakref.finalize(self, self._hold.release)  # at exit, or when the backend goes

    def __repr__(self) -> str:
        return f"<BwrapBackend bwrap={self._bwrap!r} linger={self._linger}>"

    def check(self) -> None:
        """Raise unless bubblewrap is there and can make its namespaces (tried once per program).

        Raises:
            SandboxUnavailableError: not Linux, no bubblewrap, or the kernel refuses its namespaces.
        """
        self._version()

    def _version(self) -> tuple[int, ...]:
        """Bubblewrap's version, after making sure it can make its sandbox at all (tried once)."""
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailableError(
                f"The sandbox's walls are made by bubblewrap, which needs Linux; this is {sys.platform!r} "
                "(other systems plug in as a SandboxBackend); nothing runs unsandboxed in its place",
                missing="Linux",
            )
        program = self._bwrap
        if program is None or not os.access(program, os.X_OK):
            where = "on PATH or at /usr/bin/bwrap" if program is None else f"at {program!r}"
            raise SandboxUnavailableError(
                f"The sandbox needs bubblewrap (bwrap), which is not installed {where} (Debian and Ubuntu: "
                "apt-get install bubblewrap); nothing runs unsandboxed in its place",
                missing="bwrap",
            )
        with _PROBE_LOCK:
            known = _PROBED.get(program)
        if known is not None:
            return known
        version = _bwrap_version(program)
        disable = version >= (0, 8)
        probe = [program, *_bwrap.NAMESPACES, *(["--disable-userns"] if disable else [])]
        probe.extend(("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "/bin/sh", "-c", ":"))
        try:
            result = subprocess.run(
                probe, capture_output=True, text=True, timeout=_PROBE_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SandboxUnavailableError(
                f"bubblewrap ({program}) could not be started: {error}; nothing runs unsandboxed instead",
                missing="a working bwrap",
                detail=str(error),
            ) from None
        if result.returncode != 0:
            detail = result.stderr.strip()
            missing = (
                "user namespaces" if re.search(r"namespace|uid map|setting up uid", detail, re.I) else ""
            )
            raise SandboxUnavailableError(
                f"bubblewrap ({program}) cannot create its sandbox here: {detail or 'it failed'}"
                + (
                    " (the kernel or a security module refuses unprivileged user namespaces)"
                    if missing
                    else ""
                )
                + "; nothing runs unsandboxed in its place",
                missing=missing or "a working bwrap",
                detail=detail,
            )
        with _PROBE_LOCK:
            _PROBED[program] = version
        return version

    # -- launching -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def launch(self, plan: LaunchPlan) -> Iterator[Launch]:
        """The bubblewrap process for one command, its placeholders held while the context lasts.

        Raises:
            SandboxUnavailableError: the walls cannot be set up (a protected path is a symbolic link, say).
        """
        data = self._plan_data(plan)
        reader, writer = os.pipe()
        launch = _BwrapLaunch([], reader, writer)
        hold = self._hold if self._linger else None
        try:
            with _walls_error(), _bwrap.walls(data, writer, hold) as argv:
                launch.argv = argv
                yield launch
        finally:
            launch.close()
            if hold is not None:
                self._release_later()

    def close(self) -> None:
        """Remove the kept placeholders now (where no other run holds their folder); idempotent."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            timer.join(_PROBE_TIMEOUT)
        self._hold.release()

    def _release_later(self) -> None:
        timer = threading.Timer(self._linger, self._hold.release)
        timer.daemon = True
        with self._lock:
            previous, self._timer = self._timer, timer
        if previous is not None:
            previous.cancel()
        timer.start()

    def command(self, plan: LaunchPlan) -> list[str]:
        """The launcher's argument vector: this interpreter running ``_bwrap.py`` with the plan, which sets
        the walls up, runs the command with the host's standard streams, cleans up and exits with the
        command's status (125, with a line on standard error, when the walls could not be set up)."""
        data = self._plan_data(plan)
        return [_interpreter(), "-I", "-S", _bwrap.__file__, json.dumps(data, separators=(",", ":"))]

    def _plan_data(self, plan: LaunchPlan) -> dict[str, Any]:
        version = self._version()
        profile = plan.profile
        argv = list(plan.argv)
        binds: list[list[str]] = []
        if plan.proxy is not None:
            python = _interpreter()
            if any(_bwrap.is_under(python, folder) for folder in (*profile.private, *profile.unreadable)):
                raise SandboxUnavailableError(
                    f"The domain proxy's bridge runs with this interpreter ({python}), which sandboxes "
                    "cannot see (it lies in a private or hidden folder); nothing runs unsandboxed instead",
                    missing="a Python interpreter visible inside the sandbox",
                )
            binds = [[_bridge.__file__, f"{_INSIDE}/bridge.py"], [plan.proxy, f"{_INSIDE}/proxy"]]
            argv = [python, "-I", "-S", f"{_INSIDE}/bridge.py", f"{_INSIDE}/proxy/proxy.sock", *argv]
        return {
            "bwrap": self._bwrap,
            "disable_userns": version >= (0, 8),
            "json_status": version >= (0, 5),
            "cwd": profile.cwd,
            "writable": list(profile.writable),
            "protected": [[path, folder] for path, folder in profile.protected],
            "read_only": list(profile.read_only),
            "unreadable": list(profile.unreadable),
            "binds": binds,
            "secrets": list(profile.secrets),
            "argv": argv,
        }


@contextlib.contextmanager
def _walls_error() -> Iterator[None]:
    try:
        yield
    except _bwrap.WallsError as error:
        raise SandboxUnavailableError(
            f"The sandbox cannot set up its walls, so nothing ran: {error}", missing=error.missing
        ) from None


def _interpreter() -> str:
    return os.path.realpath(sys.executable)


def _bwrap_version(program: str) -> tuple[int, ...]:
    """Bubblewrap's version (``bubblewrap 0.8.0`` → ``(0, 8, 0)``; ``()`` when it does not say)."""
    try:
        output = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", output)
    return () if found is None else tuple(int(part) for part in found.groups() if part is not None)
