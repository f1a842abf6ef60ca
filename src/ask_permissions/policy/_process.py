"""Running a program we do not trust to end: bounded in time and in what it can make us hold.

Used by command hooks. The program gets a process group of its own; when it has to be stopped (its deadline
passed, it wrote too much), the whole group is killed, so nothing it started outlives it. POSIX only.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import IO, Final, NamedTuple

__all__ = ["Ended", "run_bounded"]

_CHUNK: Final = 64 * 1024


class Ended(NamedTuple):
    """How a program ended.

    Attributes:
        status: its exit status (negative: the signal that killed it); ``None`` when it was stopped or
            never started, and then ``failure`` says why.
        stdout: what it wrote to standard output (at most the limit).
        stderr: the first bytes it wrote to standard error (at most the limit; the rest was read away).
        failure: ``None``, or why the program has no status of its own.
    """

    status: int | None
    stdout: bytes
    stderr: bytes
    failure: str | None = None


def run_bounded(
    argv: Sequence[str],
    *,
    stdin: bytes,
    environment: Mapping[str, str],
    cwd: str,
    timeout: float,
    max_stdout: int,
    max_stderr: int,
) -> Ended:
    """Run ``argv`` to its end, feeding it ``stdin``, for at most ``timeout`` seconds.

    More than ``max_stdout`` bytes on standard output stops it (a failure); standard error past
    ``max_stderr`` bytes is read and dropped, so the program never blocks on it. A program that cannot be
    started is a failure too. Never leaves a process running or a pipe open behind it.
    """
    deadline = time.monotonic() + timeout
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=environment,
            start_new_session=True,  # a process group of its own: a kill reaches everything it started
        )
    except OSError as error:  # no such program, not executable, no such working folder, ...
        return Ended(None, b"", b"", f"it could not be started: {error.strerror or type(error).__name__}")
    late = f"it did not answer within {timeout:g} seconds"
    stopped = True
    try:
        stdout, stderr, failure = _exchange(process, stdin, deadline, (max_stdout, max_stderr), late)
        if failure is None:
            try:
                status = process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                failure = late
            else:
                stopped = False
                return Ended(status, stdout, stderr)
        return Ended(None, stdout, stderr, failure)
    finally:
        if stopped:
            # Not reaped yet, so its id still names its group: the kill cannot reach anyone else's.
            with contextlib.suppress(OSError):  # the group is gone already
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _exchange(
    process: subprocess.Popen[bytes], data: bytes, deadline: float, limits: tuple[int, int], late: str
) -> tuple[bytes, bytes, str | None]:
    """Write ``data`` to the program and read its output until both streams end (failure ``None``), the
    deadline passes (failure ``late``) or it writes more than ``limits[0]`` bytes to standard output."""
    max_stdout, max_stderr = limits
    stdin, stdout, stderr = _pipe(process.stdin), _pipe(process.stdout), _pipe(process.stderr)
    out = bytearray()
    err = bytearray()
    pending = memoryview(data)
    with selectors.DefaultSelector() as selector:
        if pending:
            os.set_blocking(stdin.fileno(), False)
            selector.register(stdin, selectors.EVENT_WRITE)
        else:
            stdin.close()
        selector.register(stdout, selectors.EVENT_READ)
        selector.register(stderr, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return bytes(out), bytes(err), late
            for key, _ in selector.select(remaining):
                if key.fileobj is stdin:
                    try:
                        written = os.write(key.fd, pending[:_CHUNK])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # it stopped reading: what it read is what it answers on
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(stdin)
                        stdin.close()
                    continue
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.fileobj is stdout:
                    out += chunk
                    if len(out) > max_stdout:
                        return (
                            bytes(out[:max_stdout]),
                            bytes(err),
                            (f"it wrote more than {max_stdout} bytes to standard output"),
                        )
                elif len(err) < max_stderr:
                    err += chunk[: max_stderr - len(err)]
    return bytes(out), bytes(err), None


def _pipe(pipe: IO[bytes] | None) -> IO[bytes]:
    if pipe is None:  # pragma: no cover - every stream is a pipe
        raise AssertionError("the program's streams are pipes")
    return pipe
