"""ask_permissions: may this agent tool call proceed?

Ordered allow/ask/deny rules, a thread-safe approval queue, session grants, a nine-layer approval
policy and a mode-based gate, ported from the Ruby gem ask-permissions.
"""

from ._decision import DecisionLayer, DecisionRecord, MatchedRule
from ._digest import args_digest
from ._errors import InvalidSnapshotError, PermissionsError
from ._gate import Approval, Permissions
from ._grants import SessionPermissionGrants
from ._patterns import ALL
from ._plan_mode import PlanModePolicy
from ._policy import ApprovalPolicy
from ._policy_file import load_policy
from ._queue import Action, ApprovalQueue
from ._results import BlockResult, HookResult, PendingResult, ProceedResult
from ._rule_set import PermissionRuleSet
from ._rules import DANGEROUS_TOOLS, PermissionRules, Rule, RuleMatch
from ._tool_call import ToolCall
from ._tool_metadata import ToolMetadata
from ._version import __version__

__all__ = [
    "ALL",
    "DANGEROUS_TOOLS",
    "Action",
    "Approval",
    "ApprovalPolicy",
    "ApprovalQueue",
    "BlockResult",
    "DecisionLayer",
    "DecisionRecord",
    "HookResult",
    "InvalidSnapshotError",
    "MatchedRule",
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
    "ToolMetadata",
    "__version__",
    "args_digest",
    "load_policy",
]
