"""Updating a JSON settings file so that no reader ever sees half of it, and no writer's change is lost.

A reader opens the file whole or not at all: the new content goes to a temporary file in the same directory,
is flushed to disk, and replaces the old one by rename. Writers take an exclusive lock on a lock file beside
it for the whole read-modify-write, so two processes adding a rule at once both keep theirs (POSIX only).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from ask_permissions._strict import fail

from ._policy_text import parse_policy_bytes, read_policy_bytes

__all__ = ["update_json_file"]


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    with open(path + ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def update_json_file(path: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Read the JSON object at ``path`` (``{}`` if none), apply ``change``, and write the result atomically.

    Keys ``change`` leaves alone are kept as they were. Returns what was written.

    Raises:
        InvalidSnapshotError: the file holds something that is not a JSON object (nothing is written).
        OSError: the directory cannot be created or written.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with _locked(path):
        try:
            current = parse_policy_bytes(read_policy_bytes(path), path, toml=False)
        except FileNotFoundError:
            current = {}
        if not isinstance(current, dict):
            fail(path, "a JSON object", current)
        updated = change(current)
        text = json.dumps(updated, indent=2, ensure_ascii=False) + "\n"
        handle, temporary = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        # The rename itself must reach the disk too, or a crash could bring the old file back.
        with contextlib.suppress(OSError):
            directory_handle = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(directory_handle)
            finally:
                os.close(directory_handle)
        return updated
