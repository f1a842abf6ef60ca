"""The ``ask-permissions`` command: ``demo``, ``check``, ``lint`` and ``mcp-proxy``.

The top of the house: it may import every other package (``mcp-proxy`` imports its server only when it
runs); nothing else in the package imports it.
"""

from ._main import main, run

__all__ = ["main", "run"]
