"""The modes policies run in, checked where they are given, each set's values derived from its ``Literal``.

Three checks over two sets, each with the fixed text the spec gives it: an ``ApprovalPolicy``'s mode and the
gate's access mode are both a ``Mode``; a ``LayeredPolicy``'s is a ``LayeredMode``. Anything that is not one
of the names, whatever its type, is an unknown mode; a ``str`` subclass is read as its plain text.
"""

from __future__ import annotations

from typing import TypeVar

from ask_permissions._errors import preview
from ask_permissions._vocabulary import LAYERED_MODES, MODES, LayeredMode, Mode, one_of

__all__ = ["read_access_mode", "read_layered_mode", "read_mode"]

_M = TypeVar("_M", bound=str)


def read_mode(mode: object) -> Mode | None:
    """An ``ApprovalPolicy``'s ``mode=``: ``None`` or a ``Mode``.

    Raises:
        ValueError: ``Unknown permission mode: 'x'``.
    """
    return None if mode is None else _known(mode, MODES, "Unknown permission mode: {mode}")


def read_access_mode(mode: object) -> Mode | None:
    """The gate's ``mode=``: ``None`` or a ``Mode``.

    Raises:
        ValueError: ``Unknown access mode: 'x'. Valid: full_access, ask_before_changes, read_only``.
    """
    return None if mode is None else _known(mode, MODES, "Unknown access mode: {mode}. Valid: {valid}")


def read_layered_mode(mode: object) -> LayeredMode:
    """A ``LayeredPolicy``'s mode.

    Raises:
        ValueError: ``Unknown permission mode: 'x'. Valid: default, acceptEdits, ...``.
    """
    return _known(mode, LAYERED_MODES, "Unknown permission mode: {mode}. Valid: {valid}")


def _known(mode: object, names: tuple[_M, ...], text: str) -> _M:
    known = one_of(mode, names)
    if known is None:
        raise ValueError(text.format(mode=preview(mode), valid=", ".join(names)))
    return known
