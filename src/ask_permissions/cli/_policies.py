"""The policy a command's ``POLICY`` argument names: a policy file, or a project directory's settings."""

from __future__ import annotations

import os
from collections.abc import Callable

from ask_permissions.policy._layered import LayeredPolicy
from ask_permissions.policy._records import DecisionRecord
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.settings._policy_file import load_policy
from ask_permissions.settings._settings import PermissionSettings
from ask_permissions.typing import PolicyLike

__all__ = ["load_cli_policy"]


def load_cli_policy(
    path: str, *, on_decision: Callable[[DecisionRecord], object] | None = None
) -> PolicyLike:
    """A policy file (``.toml`` for TOML, JSON otherwise) as an ``ApprovalPolicy``, or a project directory:
    a ``LayeredPolicy`` over its ``.agent`` settings files and the user's, as the agent would read them.

    Raises:
        OSError: a file cannot be read.
        InvalidSnapshotError: a file is not a valid policy or settings file (naming the file and field).
    """
    if os.path.isdir(path):
        settings = PermissionSettings.load(project_dir=path)
        return LayeredPolicy(queue=ApprovalQueue(), settings=settings, on_decision=on_decision)
    return load_policy(path, on_decision=on_decision)
