"""ask_permissions: may this agent tool call proceed?

Ordered allow/ask/deny rules, a thread-safe approval queue, session grants, a nine-layer approval
policy and a mode-based gate, ported from the Ruby gem ask-permissions.
"""

from ._errors import InvalidSnapshotError, PermissionsError
from ._gate import Approval, Permissions
from ._grants import SessionPermissionGrants
from ._patterns import ALL
from ._plan_mode import PlanModePolicy
from ._results import BlockResult, HookResult, PendingResult, ProceedResult
from ._rule_set import PermissionRuleSet
from ._rules import DANGEROUS_TOOLS, PermissionRules, Rule, RuleMatch
from ._tool_call import ToolCall
from ._version import __version__

__all__ = [
    "ALL",
    "DANGEROUS_TOOLS",
    "Approval",
    "BlockResult",
    "HookResult",
    "InvalidSnapshotError",
    "PendingResult",
    "PermissionRuleSet",
    "PermissionRules",
    "Permissions",
    "PermissionsError",
    "PlanModePolicy",
    "ProceedResult",
    "Rule",
    "RuleMatch",
    "SessionPermissionGrants",
    "ToolCall",
    "__version__",
]
