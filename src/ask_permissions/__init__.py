"""ask_permissions: may this agent tool call proceed?

Ordered allow/ask/deny rules, a thread-safe approval queue, session grants, a nine-layer approval
policy and a mode-based gate, ported from the Ruby gem ask-permissions.
"""

from ._errors import ClaimLostError, CorruptStoreError, InvalidSnapshotError, PermissionsError
from ._tool_call import ToolCall
from ._version import __version__
from .policy._approval import ApprovalPolicy
from .policy._digest import args_digest
from .policy._gate import Approval, Permissions
from .policy._plan_mode import PlanModePolicy
from .policy._records import DecisionLayer, DecisionRecord, MatchedRule
from .policy._results import BlockResult, HookResult, PendingResult, ProceedResult
from .policy._tool_metadata import ToolMetadata
from .queue._grants import SessionPermissionGrants
from .queue._open import open_store
from .queue._postgres import PostgresStore
from .queue._queue import Action, ApprovalQueue
from .queue._sqlite import SqliteStore
from .queue._store import ApprovalStore, MemoryStore
from .rules._patterns import ALL
from .rules._rule_set import PermissionRuleSet
from .rules._rules import DANGEROUS_TOOLS, PermissionRules, Rule, RuleMatch
from .settings._policy_file import load_policy

__all__ = [
    "ALL",
    "DANGEROUS_TOOLS",
    "Action",
    "Approval",
    "ApprovalPolicy",
    "ApprovalQueue",
    "ApprovalStore",
    "BlockResult",
    "ClaimLostError",
    "CorruptStoreError",
    "DecisionLayer",
    "DecisionRecord",
    "HookResult",
    "InvalidSnapshotError",
    "MatchedRule",
    "MemoryStore",
    "PendingResult",
    "PermissionRuleSet",
    "PermissionRules",
    "Permissions",
    "PermissionsError",
    "PlanModePolicy",
    "PostgresStore",
    "ProceedResult",
    "Rule",
    "RuleMatch",
    "SessionPermissionGrants",
    "SqliteStore",
    "ToolCall",
    "ToolMetadata",
    "__version__",
    "args_digest",
    "load_policy",
    "open_store",
]
