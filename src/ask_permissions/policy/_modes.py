"""The modes policies run in, checked where they are given, each set's values derived from its ``Literal``.

Three checks over two sets, each with the fixed text the spec gives it: an ``ApprovalPolicy``'s mode and the
gate's access mode are both a ``Mode``; a ``LayeredPolicy``'s is a ``LayeredMode``. Anything that is not one
of the names, whatever its type, is an unknown mode; a ``str`` subclass is read as its plain text.
"""

from __future__ import annotations

from ask_permissions._errors import preview
from ask_permissions._vocabulary import LAYERED_MODES, MODES, LayeredMode, Mode, one_of

__all__ = ["read_access_mode", "read_layered_mode", "read_mode"]


def read_mode(mode: object) -> Mode | None:
    """An ``ApprovalPolicy``'s ``mode=``: ``None`` or a ``Mode``.

    Raises:
        ValueError: ``Unknown permission mode: 'x'``.
    """
    if mode is None:
        return None
    known = one_of(mode, MODES)
    if known is None:
        raise ValueError(f"Unknown permission mode: {preview(mode)}")
    return known


def read_access_mode(mode: object) -> Mode | None:
    """The gate's ``mode=``: ``None`` or a ``Mode``.

    Raises:
        ValueError: ``Unknown access mode: 'x'. Valid: full_access, ask_before_changes, read_only``.
    """
    if mode is None:
        return None
    known = one_of(mode, MODES)
    if known is None:
        raise ValueError(f"Unknown access mode: {preview(mode)}. Valid: {', '.join(MODES)}")
    return known


def read_layered_mode(mode: object) -> LayeredMode:
    """A ``LayeredPolicy``'s mode.

    Raises:
        ValueError: ``Unknown permission mode: 'x'. Valid: default, acceptEdits, ...``.
    """
    known = one_of(mode, LAYERED_MODES)
    if known is None:
        raise ValueError(f"Unknown permission mode: {preview(mode)}. Valid: {', '.join(LAYERED_MODES)}")
    return known
