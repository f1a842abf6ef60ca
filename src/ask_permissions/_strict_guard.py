"""Strict reading of hostile values: whatever a snapshot holds, reading it fails with InvalidSnapshotError."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ._errors import InvalidSnapshotError, preview
from ._strict import fail

__all__ = ["guard_reading", "read_text"]

T = TypeVar("T")


def guard_reading(read: Callable[[], T], snapshot: object, path: str) -> T:
    """``read()``, with any exception but ``InvalidSnapshotError`` turned into one for ``snapshot``.

    The strict readers check every value they meet, but a snapshot can hold objects that fail when merely
    looked at: a ``dict`` subclass whose ``__iter__`` raises, a ``str`` subclass whose ``__eq__`` or
    ``__hash__`` does, values nested past the recursion limit. A caller of ``from_snapshot`` must get the
    documented error for those too, never the object's own exception.
    """
    try:
        return read()
    except InvalidSnapshotError:
        raise
    except Exception as error:
        raise InvalidSnapshotError(
            f"{path or 'snapshot'}: expected plain snapshot data (dicts, lists, strings, numbers); got "
            f"{preview(snapshot)}, which raised {_type_name(error)} when read",
            path=path,
            value=snapshot,
        ) from error


def _type_name(error: BaseException) -> str:
    try:
        return str(type(error).__qualname__)
    except Exception:  # a metaclass can make even the name fail
        return "an exception"


def read_text(value: object, path: str, *, non_empty: bool = False) -> str:
    """The plain text of a string (non-empty when asked), refusing anything else.

    A ``str`` subclass's own methods (``__len__``, ``__eq__``, ``__hash__``) are never called, here or by
    whoever keeps the text: it is read with ``str``'s.
    """
    text = str.__str__(value) if isinstance(value, str) else None
    if text is None or (non_empty and not text):
        fail(path, "a non-empty string" if non_empty else "a string", value)
    return text
