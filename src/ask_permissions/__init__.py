"""ask_permissions: may this agent tool call proceed?

Ordered allow/ask/deny rules, a thread-safe approval queue, session grants, a nine-layer approval
policy and a mode-based gate, ported from the Ruby gem ask-permissions.
"""

from ._errors import InvalidSnapshotError, PermissionsError
from ._patterns import ALL
from ._queue import Action, ApprovalQueue
from ._tool_call import ToolCall
from ._version import __version__

__all__ = [
    "ALL",
    "Action",
    "ApprovalQueue",
    "InvalidSnapshotError",
    "PermissionsError",
    "ToolCall",
    "__version__",
]
