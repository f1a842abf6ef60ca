"""How long a caller is willing to wait: the ``timeout=`` seconds of a queue's ``wait``, a policy's ``decide``
and a sandbox's ``run``, checked once."""

from __future__ import annotations

from ._errors import preview

__all__ = ["check_timeout"]


def check_timeout(timeout: object, field: str = "timeout") -> None:
    """Refuse a ``timeout`` that is neither ``None`` (no limit) nor a non-negative number of seconds.

    ``field`` names it in the message (``Sandbox.run: timeout``, say).

    Raises:
        TypeError: not a number (a bool is not one either).
        ValueError: negative, or NaN.
    """
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"{field}: expected seconds (a number) or None; got {preview(timeout)}")
    if not timeout >= 0:  # NaN fails this too
        raise ValueError(
            f"{field}: expected a non-negative number of seconds or None; got {preview(timeout)}"
        )
