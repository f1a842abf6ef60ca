"""Bubblewrap walls from a plain plan: the argument vector, the placeholders that keep missing protected
paths from being created, and the locks that let concurrent runs share those placeholders.

Standard library only, and importing nothing of its package: this file also runs alone, as the launcher
that ``Sandbox.command`` hands a host (``python -I -S _bwrap.py PLAN``), so that a command the host starts
itself gets the same walls, placeholders and clean-up as one ``Sandbox.run`` starts.

A plan is JSON-safe data:

- ``bwrap``: the bubblewrap program; ``disable_userns``: whether it takes ``--disable-userns`` (0.8+).
- ``cwd``: where the command starts; ``writable``: the folders (and files) it may write.
- ``protected``: ``[path, is_directory]`` pairs inside the writable folders kept read-only; one that does not
  exist is blocked by a placeholder (an empty folder or file, removed once no run needs it).
- ``read_only``: paths kept read-only when they exist; ``unreadable``: paths hidden when they exist.
- ``private``: folders that get a fresh, empty file system; ``binds``: ``[source, target]`` read-only binds
  made last (the domain proxy's socket and its bridge).
- ``secrets``: patterns of environment variables the command never sees; ``argv``: the command.

Why placeholders need locks: unlinking a file from the host's view lazily unmounts whatever another mount
namespace has mounted on it (Linux 3.18 and later). A placeholder is removed only by a run that holds the
only lock on its folder, a lock on the folder itself (not on a file of the runtime folder, which another
environment may place elsewhere): while any sandbox over that folder runs, its placeholders stay.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import functools
import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, final

__all__ = [
    "LAUNCH_FAILED",
    "NAMESPACES",
    "PRIVATE_FOLDERS",
    "Hold",
    "WallsError",
    "bwrap_argv",
    "command_started",
    "filtered_environment",
    "is_under",
    "main",
    "placeholders",
    "runtime_dir",
    "walls",
]

LAUNCH_FAILED: Final = 125
"""The launcher's exit status when the walls could not be set up (the command did not run)."""
PRIVATE_FOLDERS: Final = ("/tmp", "/run", "/var/run")
"""Folders every sandbox gets a fresh, empty file system on: its own ``/tmp``; and ``/run`` (and ``/var/run``
where it is a folder of its own, not a link to ``/run``), where the host's sockets live: D-Bus, the container
engines', ``$XDG_RUNTIME_DIR``."""
NAMESPACES: Final = (
    "--unshare-all",
    # Explicitly: bubblewrap skips its own user namespace when started by root, and so would keep root's
    # capabilities in the host's namespaces.
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
)
"""The namespace options of every sandbox: no network, no capabilities, its own process tree."""
_BASE_MOUNTS: Final = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")


class WallsError(OSError):
    """The walls cannot be set up; ``missing`` says what would be needed, in a few words."""

    def __init__(self, message: str, missing: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.missing = missing
        self.detail = detail


# -- the runtime folder -------------------------------------------------------------------------------------


def runtime_dir() -> str:
    """This user's private folder for locks, placeholder records and proxy sockets (made when missing).

    It lies in ``$XDG_RUNTIME_DIR`` when that is under ``/run``, else in ``/tmp``: both are private inside
    every sandbox, so no sandboxed command can see or change it.

    Raises:
        WallsError: the folder exists but is not a private folder of this user.
    """
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if not (base.startswith("/run/") and os.path.isdir(base)):
        base = "/tmp"
    path = os.path.join(base, f"ask-permissions-sandbox-{os.geteuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise WallsError(
            f"{path} is not a private folder of this user (expected a directory of mode 0700 owned by uid "
            f"{os.geteuid()}): the sandbox keeps its locks there",
            "a private runtime folder",
        )
    return path


def is_under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


# -- environment ------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _secret_names(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for all the patterns (compiled once per set of patterns)."""
    return re.compile("|".join(fnmatch.translate(pattern.upper()) for pattern in patterns) or "(?!)")


def filtered_environment(environment: Mapping[str, str], patterns: Sequence[str]) -> dict[str, str]:
    """The environment without the variables the patterns name."""
    secret = _secret_names(tuple(patterns)).match
    return {name: value for name, value in environment.items() if secret(name.upper()) is None}


# -- the argument vector ------------------------------------------------------------------------------------


def bwrap_argv(plan: Mapping[str, Any], protected: Sequence[str], status_fd: int | None) -> list[str]:
    """Bubblewrap's argument vector for a plan, given the protected paths to bind (each now exists).

    Mount order matters, each later mount covering the earlier: the whole file system read-only, fresh
    ``/dev`` and ``/proc``, the private folders, the writable folders, then what stays read-only or hidden
    inside them, then the proxy's binds. With ``status_fd`` bubblewrap reports there whether the command
    began, its walls up (``command_started`` reads it).
    """
    runtime = runtime_dir()
    argv = [plan["bwrap"], *NAMESPACES]
    if plan["disable_userns"]:
        argv.append("--disable-userns")  # no nested user namespace to rearrange the mounts in
    if status_fd is not None and plan["json_status"]:
        argv.extend(("--json-status-fd", str(status_fd)))
    argv.extend(_BASE_MOUNTS)
    for folder in PRIVATE_FOLDERS:
        if os.path.isdir(folder) and not os.path.islink(folder):
            argv.extend(("--tmpfs", folder))
    for path in plan["writable"]:
        if os.path.exists(path):
            argv.extend(("--bind", path, path))
    # The locks, records and proxy sockets stay out of reach: a private folder hides them, unless a
    # writable folder (a working directory of /tmp itself, say) brings them back into view.
    private = any(is_under(runtime, folder) for folder in PRIVATE_FOLDERS)
    if not private or any(is_under(runtime, path) for path in plan["writable"]):
        argv.extend(("--tmpfs", runtime))
    # A read-only path that is a symbolic link is kept read-only where it leads, which is what its name
    # writes to (a link itself cannot be bound over); only inside the writable folders, where that place
    # is in view anyway: a link a command planted must not bring a host file it cannot see into view.
    kept = [
        real
        for real in map(os.path.realpath, plan["read_only"])
        if os.path.exists(real)
        and any(is_under(real, folder) for folder in plan["writable"])
        and not is_under(real, runtime)
    ]
    for path in [*protected, *kept]:
        argv.extend(("--ro-bind", path, path))
    for path in plan["unreadable"]:
        if not os.path.exists(path):
            continue
        if os.path.isdir(path):
            argv.extend(("--tmpfs", path, "--remount-ro", path))
        else:
            argv.extend(("--ro-bind", _empty_file(runtime), path))
    for source, target in plan["binds"]:
        argv.extend(("--ro-bind", source, target))
    argv.extend(("--chdir", plan["cwd"], "--"))
    if status_fd is not None and not plan["json_status"]:
        # Before bubblewrap 0.5 (no --json-status-fd) a one-line shell writes the proof itself. Through
        # /proc: dash takes only one-digit descriptors after ">&".
        starter = f"printf '%s' '{_STARTED.decode()}' >/proc/self/fd/{status_fd} && exec \"$@\""
        argv.extend(("/bin/sh", "-c", starter, "ask-permissions-sandbox"))
    argv.extend(plan["argv"])
    return argv


_STARTED: Final = b'"exit-code"'
"""What bubblewrap writes to its status descriptor only once the command was started inside the walls
(its ``exit-code`` record), and what the shell of older versions writes in its place."""


def _empty_file(runtime: str) -> str:
    """An empty read-only file of this user's, bound over a file the command may not read."""
    path = os.path.join(runtime, "empty")
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444))
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_size or info.st_uid != os.geteuid():
        raise WallsError(f"{path} is not an empty file of this user", "a private runtime folder")
    return path


# -- placeholders -------------------------------------------------------------------------------------------

_ATTEMPTS: Final = 100
"""How often a run looks again for a protected path's placeholder that vanished before it held its folder."""


def _lock(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _key(folder: str) -> str:
    return hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _folder_lock(folder: str) -> int:
    """A descriptor of the folder itself, whose lock every run over it shares: the folder's own inode is
    the same for every process on the machine, whatever runtime folder its environment chose (a launcher
    given another ``XDG_RUNTIME_DIR`` keeps its records elsewhere, but meets the same lock)."""
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:  # replaced meanwhile (a link now), or gone
        raise WallsError(f"cannot hold {folder}: {error.strerror}", "a writable folder in place") from None


def _records_path(runtime: str, folder: str) -> str:
    return os.path.join(runtime, f"placeholders-{_key(folder)}.json")


def _read_records(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (FileNotFoundError, ValueError):
        return []
    return [entry for entry in data if isinstance(entry, dict)] if isinstance(data, list) else []


def _write_records(path: str, records: list[dict[str, Any]]) -> None:
    if not records:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(records, file)
    os.replace(temporary, path)


def _root_of(path: str, roots: Sequence[str]) -> str:
    inside = [root for root in roots if is_under(path, root) and root != path]
    if not inside:
        raise WallsError(f"{path} is not inside a writable folder", "a protected path inside the walls")
    return max(inside, key=len)


def _block(path: str, is_directory: bool, roots: Sequence[str]) -> tuple[str, dict[str, Any] | None]:
    """The path to bind read-only for a protected path: itself, or the placeholder made at its first
    missing component (with its record). A symbolic link on the way cannot be protected: a command could
    replace it, so the walls are refused."""
    root = _root_of(path, roots)
    current = root
    names = [name for name in path[len(root) :].split("/") if name]
    for index, name in enumerate(names):
        current = os.path.join(current, name)
        last = index == len(names) - 1
        while True:
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                record = _make_placeholder(current, is_directory or not last)
                if record is None:
                    continue  # made by someone else meanwhile: look again
                return current, record
            break
        if stat.S_ISLNK(info.st_mode):
            raise WallsError(
                f"cannot keep {path} read-only: {current} is a symbolic link inside the writable folder "
                f"{root}, which a command could replace (make it a real file or folder, or move it out)",
                "a protected path that is not a symbolic link",
            )
    return path, None


def _make_placeholder(path: str, is_directory: bool) -> dict[str, Any] | None:
    try:
        if is_directory:
            os.mkdir(path, 0o755)
            info = os.lstat(path)
        else:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
            try:
                info = os.fstat(descriptor)
            finally:
                os.close(descriptor)
    except FileExistsError:
        return None
    return {"path": path, "dev": info.st_dev, "ino": info.st_ino, "dir": is_directory}


def _remove_placeholder(record: Mapping[str, Any]) -> bool:
    """Remove one placeholder if it is still the empty thing a sandbox made; whether its record is done."""
    path = record.get("path")
    if not isinstance(path, str):
        return True
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    if (info.st_dev, info.st_ino) != (record.get("dev"), record.get("ino")):
        return True  # replaced by someone: not ours any more
    try:
        if stat.S_ISDIR(info.st_mode):
            os.rmdir(path)
        elif stat.S_ISREG(info.st_mode) and info.st_size == 0:
            os.unlink(path)
    except OSError as error:
        return error.errno in (errno.ENOTEMPTY, errno.EEXIST)  # written into meanwhile: it is theirs now
    return True


@final
class Hold:
    """Placeholders kept after the runs that made them ended, for the next runs to find in place; removed
    by ``release`` (where no other run holds their folder).

    A host that runs command after command keeps one: each run then only checks that its placeholders
    exist, and the removal happens later, off the runs' path. Thread-safe: a private lock guards the kept
    locks.
    """

    __slots__ = ("_kept", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, int] = {}

    def keep(self, users: Mapping[str, int]) -> None:
        """Take over a run's shared locks (one per folder is enough; the others are closed)."""
        with self._lock:
            for folder, descriptor in users.items():
                if folder in self._kept:
                    os.close(descriptor)
                else:
                    self._kept[folder] = descriptor

    def release(self) -> None:
        """Give the kept folders up, removing their placeholders where no run holds them any more."""
        with self._lock:
            kept, self._kept = self._kept, {}
        if kept:
            runtime = runtime_dir()
            _release(runtime, _lock(os.path.join(runtime, "setup.lock")), kept)


@contextlib.contextmanager
def placeholders(plan: Mapping[str, Any], hold: Hold | None = None) -> Iterator[list[str]]:
    """Hold the protected paths of a plan for one run: yield the paths to bind (placeholders made where a
    protected path is missing), then remove the placeholders no other run still needs, or, with ``hold``,
    hand them to it.

    Raises:
        WallsError: a protected path that cannot be kept read-only (a symbolic link on its way).
    """
    runtime = runtime_dir()
    for path in plan["writable"]:
        # The plan names each folder by its real path: one that a link leads to now was replaced since
        # (by a command under older walls), and binding it would open wherever the link leads.
        if os.path.lexists(path) and os.path.realpath(path) != path:
            raise WallsError(
                f"cannot make {path} writable: a symbolic link leads there now, which a command could have "
                "made (make it a real folder again)",
                "a writable folder that no symbolic link leads to",
            )
    folders = [path for path in plan["writable"] if os.path.isdir(path)]  # a missing one is not bound
    setup = _lock(os.path.join(runtime, "setup.lock"))
    users: dict[str, int] = {}
    made: dict[str, list[dict[str, Any]]] = {}
    bound: list[str] = []
    ran = False
    try:
        fcntl.flock(setup, fcntl.LOCK_EX)
        try:
            for path, is_directory in plan["protected"]:
                if not any(is_under(path, folder) and folder != path for folder in folders):
                    continue
                for _ in range(_ATTEMPTS):
                    target, record = _block(path, is_directory, folders)
                    folder = os.path.dirname(target)
                    if folder not in users:
                        users[folder] = _folder_lock(folder)
                        fcntl.flock(users[folder], fcntl.LOCK_SH)
                    # Seen before this run held its folder, a placeholder may have been removed since by a
                    # run ending elsewhere; once held, nobody removes one: look again if it is gone.
                    if os.path.lexists(target):
                        break
                else:
                    raise WallsError(
                        f"cannot keep {path} read-only: what blocks it keeps disappearing",
                        "a protected path that stays in place",
                    )
                if record is not None:
                    made.setdefault(folder, []).append(record)
                bound.append(target)
        finally:
            for folder, records in made.items():
                path = _records_path(runtime, folder)
                _write_records(path, [*_read_records(path), *records])
            fcntl.flock(setup, fcntl.LOCK_UN)
        ran = True
        yield bound
    finally:
        if hold is not None and ran:
            hold.keep(users)
            os.close(setup)
        else:
            _release(runtime, setup, users)


def _release(runtime: str, setup: int, users: Mapping[str, int]) -> None:
    """End a hold: where no other run holds a folder, remove the placeholders made in it."""
    try:
        fcntl.flock(setup, fcntl.LOCK_EX)
        for folder, descriptor in users.items():
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another run over this folder: it cleans up when it ends
            records = _records_path(runtime, folder)
            left = [entry for entry in _read_records(records) if not _remove_placeholder(entry)]
            _write_records(records, left)
    finally:
        for descriptor in users.values():
            os.close(descriptor)
        os.close(setup)


@contextlib.contextmanager
def walls(plan: Mapping[str, Any], status_fd: int | None, hold: Hold | None = None) -> Iterator[list[str]]:
    """The argument vector of one run, valid while the context lasts (its placeholders held)."""
    with placeholders(plan, hold) as protected:
        yield bwrap_argv(plan, protected, status_fd)


# -- the launcher -------------------------------------------------------------------------------------------


def command_started(descriptor: int) -> bool:
    """After the process ended: whether its status descriptor says the command began inside the walls."""
    os.set_blocking(descriptor, False)
    data = b""
    try:
        while chunk := os.read(descriptor, 65536):
            data += chunk
    except BlockingIOError:
        pass
    return _STARTED in data


def main(arguments: Sequence[str]) -> int:
    """Run the plan given as JSON in ``arguments[0]`` with this process's standard streams; return the
    command's exit status, or ``LAUNCH_FAILED`` (with a line on standard error) when the walls could not be
    set up."""
    plan = json.loads(arguments[0])
    reader, writer = os.pipe()
    environment = filtered_environment(os.environ, plan["secrets"])
    try:
        with walls(plan, writer) as argv:
            process = subprocess.Popen(argv, env=environment, pass_fds=(writer,))
            os.close(writer)
            writer = -1

            def forward(number: int, _frame: object) -> None:
                process.send_signal(number)

            for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(number, forward)
            status = process.wait()
            started = command_started(reader)
    except WallsError as error:
        print(f"ask-permissions sandbox: {error}", file=sys.stderr)
        return LAUNCH_FAILED
    finally:
        os.close(reader)
        if writer != -1:
            os.close(writer)
    if not started:
        print("ask-permissions sandbox: bubblewrap could not set up the walls; nothing ran", file=sys.stderr)
        return LAUNCH_FAILED
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
