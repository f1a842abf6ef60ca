"""Type-checked only (mypy --strict): the public API as a user writes it. Not collected by pytest."""

from __future__ import annotations

import re
from datetime import timedelta

from ask_permissions import (
    ALL,
    Action,
    ApprovalPolicy,
    ApprovalQueue,
    ApprovalStore,
    ClaimLostError,
    CommandHook,
    CorruptStoreError,
    DecisionRecord,
    HookResult,
    Hooks,
    LayeredPolicy,
    PermissionCheck,
    PermissionRules,
    PermissionRuleSet,
    Permissions,
    PermissionSettings,
    PlanModePolicy,
    PostgresStore,
    ProceedResult,
    ResolutionNotRecordedError,
    SandboxUnavailableError,
    SessionPermissionGrants,
    SqliteStore,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
    SubmitOutcomeUnknownError,
    ToolCall,
    UnknownToolError,
    load_policy,
    open_store,
    require_known_tools,
    unknown_tools,
)
from ask_permissions.typing import (
    HookFunction,
    HooksConfig,
    PolicyDefault,
    PreToolUseHook,
    SandboxLike,
    UnknownTools,
)


def hook(policy: ApprovalPolicy, call: ToolCall) -> str:
    result: HookResult = policy.before_tool_call(call)
    if result["action"] == "proceed":
        return "run"
    if result["action"] == "block":
        return result["reason"]
    action: Action | None = policy.queue.wait(result["action_id"], timeout=1.0)
    return "run" if action is not None and action.is_approved else "refused"


def build() -> ApprovalPolicy:
    rules = PermissionRules(lambda r: r.allow("read_file").deny("bash", re.compile(r"rm\s+-rf")).ask(ALL))
    composed = PermissionRuleSet(default_rules=rules, project_rules=PermissionRules().allow("fetch"))
    grants = SessionPermissionGrants(["read_file"])
    queue = ApprovalQueue(auto_approve={"fetch": True}, on_approve=lambda action: None)
    audit: list[DecisionRecord] = []
    policy = ApprovalPolicy(
        queue=queue,
        rules=composed,
        require_approval=["bash", re.compile("^write_")],
        mode="ask_before_changes",
        session_grants=grants,
        on_decision=audit.append,
        interactive=False,
    )
    queue.approve(1, 2, scope="session")
    queue.reject(3, feedback="no")
    queue.expire_pending(timedelta(minutes=5))
    grants.restore_snapshot(grants.snapshot())
    return policy


def gates() -> bool:
    gate = Permissions(mode="read_only", timeout=timedelta(seconds=30))
    plan = PlanModePolicy(allowed_tools=["read_file"])
    plan.before_tool_call(ToolCall("read_file"))
    return gate.approve("tc-1") and gate.before_tool_call({"name": "bash", "id": "tc-1"})["action"] == "block"


def files() -> ApprovalPolicy:
    return load_policy("examples/policy.toml")


def stores(url: str) -> int:
    store: ApprovalStore = (
        open_store(url) if url else SqliteStore("approvals.db", lease=timedelta(seconds=10), timeout=2.0)
    )
    queue = ApprovalQueue(store=store, session="agent-42", require_json=True)
    grants = SessionPermissionGrants(["read_file"], store=store, session="agent-42")
    shared: ApprovalStore = PostgresStore("postgresql://agent@db/approvals")
    try:
        queue.approve(queue.submit(tool_call_id="tc-1", tool_name="bash", args='{"command": "ls"}'))
    except ClaimLostError as lost:
        return lost.action_id
    except ResolutionNotRecordedError as deferred:
        return deferred.action_id if deferred.status == "approved" else -1
    except SubmitOutcomeUnknownError as unknown:
        return len(unknown.session)
    except StoreUnavailableError as away:
        return len(away.store)
    except CorruptStoreError as corrupt:
        return len(corrupt.path)
    except StoreClosedError as closed:
        store.check_open()
        return len(closed.store)
    except StoreError:
        return 0
    finally:
        store.close()
        shared.close()
    return queue.forget_resolved(timedelta(hours=1)) + len(grants)


def hooks() -> ApprovalPolicy:
    config: HooksConfig = {
        "PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "guard", "timeout": 5}]}]
    }

    def no_curl(call: ToolCall) -> PermissionCheck | None:
        return PermissionCheck.deny("no network") if call.name == "curl" else None

    hook: PreToolUseHook = CommandHook(["guard", "--strict"], matcher="Edit|Write", timeout=2.5)
    function: HookFunction = no_curl
    answer: PermissionCheck | None = hook.run(ToolCall("Edit"), cwd=".", mode=None)
    assert answer is None or answer.is_deny
    both = Hooks([*Hooks.from_config(config, base_dir="."), hook])
    return ApprovalPolicy(queue=ApprovalQueue(), hooks=[*both, function])


def sandboxed(settings: PermissionSettings) -> str:
    from ask_permissions.sandbox import SECRET_VARIABLES, BwrapBackend, Sandbox, SandboxProfile, SandboxResult

    policy = LayeredPolicy(queue=ApprovalQueue(), settings=settings, sandbox=Sandbox.from_policy)
    walls: SandboxLike | None = policy.sandbox
    own = Sandbox.from_policy(
        policy, secrets=(*SECRET_VARIABLES, "DEPLOY_KEY"), backend=BwrapBackend(linger=0)
    )
    profile: SandboxProfile = own.profile
    try:
        result: SandboxResult = own.run(["make", "test"], timeout=60.0)
        argv: list[str] = own.command("make test")
    except SandboxUnavailableError as error:
        return error.missing
    finally:
        own.close()
    record = policy.evaluate(ToolCall("Bash", {"command": "make"}))
    decided: ProceedResult | None = None
    outcome = policy.before_tool_call(ToolCall("Bash", {"command": "make"}))
    if outcome["action"] == "proceed":
        decided = outcome
    sandboxed_call = decided is not None and decided.get("sandboxed", False)
    return f"{walls is not None} {profile.cwd} {result.stdout} {argv} {record.sandboxed} {sandboxed_call}"


def known_tools() -> list[str]:
    policy = ApprovalPolicy(queue=ApprovalQueue(), tools={"bash": {}}, default="ask", unknown_tools="keep")
    default: PolicyDefault = policy.default
    keep: UnknownTools = policy.unknown_tools
    try:
        require_known_tools(policy, ["bash"], where="host")
    except UnknownToolError as error:
        return [found.reference.field for found in unknown_tools(policy.tool_references(), error.known)]
    return [default, keep]
