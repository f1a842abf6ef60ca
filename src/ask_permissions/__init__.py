"""ask_permissions: may this agent tool call proceed?

Ordered allow/ask/deny rules, a thread-safe approval queue, session grants, a nine-layer approval
policy and a mode-based gate, ported from the Ruby gem ask-permissions.
"""

from ._errors import (
    ClaimLostError,
    CorruptStoreError,
    InvalidEvidenceError,
    InvalidSnapshotError,
    PermissionsError,
    ResolutionNotRecordedError,
    SandboxUnavailableError,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
    SubmitOutcomeUnknownError,
    UnknownToolError,
)
from ._tool_call import ToolCall
from ._version import __version__
from ._vocabulary import DecisionLayer
from .loading._policy_file import load_policy
from .notify._webhook import WebhookNotifier, slack_message
from .policy._approval import ApprovalPolicy
from .policy._checks import Check, PermissionCheck, allow_all, check, deny_all
from .policy._command_hooks import CommandHook
from .policy._digest import args_digest
from .policy._gate import Approval, Permissions
from .policy._hooks import Hooks
from .policy._layered import LayeredPolicy, ModeChange
from .policy._outcome import Outcome
from .policy._plan_mode import PlanModePolicy
from .policy._records import DecisionRecord, MatchedRule, ShadowRecord
from .policy._results import BlockResult, HookResult, PendingResult, ProceedResult
from .policy._reviewer import DenialTracker, Review
from .policy._safety import PROTECTED_PATHS, ProtectedPaths
from .policy._tool_metadata import ToolMetadata
from .policy._tool_names import ToolReference, UnknownTool, require_known_tools, unknown_tools
from .queue._grants import SessionPermissionGrants
from .queue._open import open_store
from .queue._postgres import PostgresStore
from .queue._queue import Action, ApprovalQueue
from .queue._sqlite import SqliteStore
from .queue._store import ApprovalStore, MemoryStore
from .rules._command import CommandPattern
from .rules._domains import DomainPattern
from .rules._paths import PathPattern
from .rules._patterns import ALL
from .rules._rule_set import PermissionRuleSet
from .rules._rules import DANGEROUS_TOOLS, CompoundPart, PermissionRules, Rule, RuleMatch
from .rules._text import RuleTextError
from .settings._settings import PermissionSettings
from .settings._sources import SettingsSource

__all__ = [
    "ALL",
    "DANGEROUS_TOOLS",
    "PROTECTED_PATHS",
    "Action",
    "Approval",
    "ApprovalPolicy",
    "ApprovalQueue",
    "ApprovalStore",
    "BlockResult",
    "Check",
    "ClaimLostError",
    "CommandHook",
    "CommandPattern",
    "CompoundPart",
    "CorruptStoreError",
    "DecisionLayer",
    "DecisionRecord",
    "DenialTracker",
    "DomainPattern",
    "HookResult",
    "Hooks",
    "InvalidEvidenceError",
    "InvalidSnapshotError",
    "LayeredPolicy",
    "MatchedRule",
    "MemoryStore",
    "ModeChange",
    "Outcome",
    "PathPattern",
    "PendingResult",
    "PermissionCheck",
    "PermissionRuleSet",
    "PermissionRules",
    "PermissionSettings",
    "Permissions",
    "PermissionsError",
    "PlanModePolicy",
    "PostgresStore",
    "ProceedResult",
    "ProtectedPaths",
    "ResolutionNotRecordedError",
    "Review",
    "Rule",
    "RuleMatch",
    "RuleTextError",
    "SandboxUnavailableError",
    "SessionPermissionGrants",
    "SettingsSource",
    "ShadowRecord",
    "SqliteStore",
    "StoreClosedError",
    "StoreError",
    "StoreUnavailableError",
    "SubmitOutcomeUnknownError",
    "ToolCall",
    "ToolMetadata",
    "ToolReference",
    "UnknownTool",
    "UnknownToolError",
    "WebhookNotifier",
    "__version__",
    "allow_all",
    "args_digest",
    "check",
    "deny_all",
    "load_policy",
    "open_store",
    "require_known_tools",
    "slack_message",
    "unknown_tools",
]
