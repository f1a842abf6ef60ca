"""Whether two argument values are the same call's arguments."""

from __future__ import annotations

from ._digest import canonical_json

__all__ = ["same_arguments"]


def same_arguments(left: object, right: object) -> bool:
    """Whether two argument values would give a tool the same input.

    Compared by their canonical JSON, not with ``==``: ``{"n": 1}`` equals ``{"n": True}`` and ``{"n": 1.0}``
    in Python, but a tool may treat them differently, and what a person approved must be what runs. A
    restored queue holds its arguments as JSON gave them back (tuples became lists): the same here.
    ``None`` is ``{}``, as the queue stores it. Values that cannot be compared this way are not the same.
    """
    try:
        return canonical_json({} if left is None else left) == canonical_json({} if right is None else right)
    except (TypeError, ValueError, RecursionError):
        return False
