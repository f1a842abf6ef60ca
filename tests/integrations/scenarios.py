"""The scripted agent session both adapters' tests play: the model's plan and the host's policy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

from ask_permissions import ApprovalPolicy, ApprovalQueue, Check, PermissionRules, SessionPermissionGrants

__all__ = ["PLAN", "POLICY_FILE", "FetchTool", "Plan", "Recorder", "host_policy"]

# The host policy below as a policy file: every integration loads it in the cross-integration tests.
POLICY_FILE = Path(__file__).with_name("policy.toml")

Plan: TypeAlias = dict[str, list[tuple[str, dict[str, Any]]]]

# What the scripted model does on each user message: the tool calls it makes (the call ids are
# "<message>-<n>"); once the tools have answered, it replies with what they said. deploy is not guarded
# by the policy: only the pydantic-ai tests give the agent such a tool.
PLAN: Plan = {
    "read": [("read_file", {"path": "notes.txt"})],
    "delete": [("delete_user", {"name": "bob"})],
    "list": [("bash", {"command": "ls"})],
    "list again": [("bash", {"command": "ls -l"})],
    "fetch": [("fetch", {"url": "https://example.org"})],
    "two": [("bash", {"command": "pwd"}), ("bash", {"command": "whoami"})],
    "list and deploy": [("bash", {"command": "ls"}), ("deploy", {"target": "prod"})],
}


class FetchTool:
    """Tool metadata: fetch needs approval, but the queue may approve it by itself."""

    approval_required = True
    auto_approvable = True


def host_policy(
    queue_snapshot: object = None, grants_snapshot: object = None, checks: Sequence[Check] = ()
) -> tuple[ApprovalQueue, SessionPermissionGrants, ApprovalPolicy]:
    """A host process's queue, grants and policy, restored from the snapshots if given.

    read_file is allowed, delete_user denied, bash needs approval, and fetch is auto-approved by the queue.
    ``checks`` are given to the policy as they are.
    """
    queue = ApprovalQueue(auto_approve={"fetch": True})
    if queue_snapshot is not None:
        queue.restore_pending(queue_snapshot)
    grants = (
        SessionPermissionGrants()
        if grants_snapshot is None
        else SessionPermissionGrants.from_snapshot(grants_snapshot)
    )
    policy = ApprovalPolicy(
        queue=queue,
        rules=PermissionRules(lambda r: r.allow("read_file").deny("delete_user")),
        require_approval="bash",
        # Every tool of the agent, as the registry lists them: a rule for any other would be an error.
        tools={"read_file": {}, "bash": {}, "delete_user": {}, "fetch": FetchTool()},
        session_grants=grants,
        checks=checks,
    )
    return queue, grants, policy


class Recorder:
    """The agent's tools as plain functions (each framework wraps them its own way); records what ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        def read_file(path: str) -> str:
            """Read a file."""
            self.ran.append(("read_file", {"path": path}))
            return f"contents of {path}"

        def bash(command: str) -> str:
            """Run a shell command."""
            self.ran.append(("bash", {"command": command}))
            return f"ran {command}"

        def delete_user(name: str) -> str:
            """Delete a user."""
            self.ran.append(("delete_user", {"name": name}))
            return f"deleted {name}"

        def fetch(url: str) -> str:
            """Fetch a URL."""
            self.ran.append(("fetch", {"url": url}))
            return f"fetched {url}"

        self.functions = [read_file, bash, delete_user, fetch]
