"""The ``ask-permissions`` command: ``demo``, ``check`` and ``lint``.

May import everything but ``integrations``; nothing else in the package imports it.
"""

from ._main import main, run

__all__ = ["main", "run"]
