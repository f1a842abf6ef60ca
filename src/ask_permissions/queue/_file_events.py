"""Waiting for another process to write a file: Linux inotify (through ctypes), or a timeout elsewhere."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import struct
import sys
import time
from collections.abc import Collection
from typing import Final, final

__all__ = ["FileEvents"]

_IN_MODIFY: Final = 0x002
_IN_MOVED_TO: Final = 0x080
_IN_CREATE: Final = 0x100
_IN_NONBLOCK: Final = 0o4000
_IN_CLOEXEC: Final = 0o2000000
_EVENT: Final = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of the name


@final
class FileEvents:
    """Tells when one of some files of a directory is written, so a watcher need not poll to notice.

    On Linux it reads inotify events; elsewhere (or when inotify cannot be had) ``wait`` only sleeps for
    its timeout, and the caller's periodic look is all there is. Used by one thread at a time.
    """

    __slots__ = ("_descriptor", "_names")

    def __init__(self, directory: str, names: Collection[str]) -> None:
        self._names: Final = frozenset(os.fsencode(name) for name in names)
        self._descriptor = _inotify(directory)

    @property
    def active(self) -> bool:
        """Whether writes are noticed (inotify), not only timeouts."""
        return self._descriptor is not None

    def wait(self, timeout: float) -> bool:
        """Block until one of the files is written (True) or ``timeout`` seconds pass (False)."""
        descriptor = self._descriptor
        if descriptor is None:
            time.sleep(timeout)
            return False
        poller = select.poll()
        poller.register(descriptor, select.POLLIN)
        try:
            ready = poller.poll(timeout * 1000)
        except OSError:  # interrupted, or the descriptor went bad: a plain wait from now on
            self.close()
            time.sleep(timeout)
            return False
        return bool(ready) and self._drain(descriptor)

    def _drain(self, descriptor: int) -> bool:
        """Read every queued event; whether one was about the files watched."""
        seen = False
        while True:
            try:
                data = os.read(descriptor, 64 * 1024)
            except BlockingIOError:
                return seen
            except OSError:
                return True  # look at the database anyway
            if not data:
                return seen
            offset = 0
            while offset + _EVENT.size <= len(data):
                _, _, _, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                seen = seen or name in self._names
                offset += _EVENT.size + length

    def close(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            with contextlib.suppress(OSError):
                os.close(descriptor)


def _inotify(directory: str) -> int | None:
    """An inotify descriptor watching writes in ``directory``, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        descriptor = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    except (OSError, AttributeError):
        return None
    if descriptor < 0:
        return None
    watch = libc.inotify_add_watch(descriptor, os.fsencode(directory), _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO)
    if watch < 0:
        os.close(descriptor)
        return None
    return descriptor
