"""The ``ask-permissions`` command: ``demo``, ``check``, ``lint`` and ``mcp-proxy``.

May import everything but ``integrations`` (``mcp-proxy`` imports its server only when it runs); nothing else
in the package imports it.
"""

from ._main import main, run

__all__ = ["main", "run"]
