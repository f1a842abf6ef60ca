"""What the evidence commands read: the policy a ``POLICY`` argument names (a policy file, or a project
directory's settings), and the history of the store a ``--store`` URL names."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator

from ask_permissions.loading._policy_file import load_policy
from ask_permissions.policy._layered import LayeredPolicy
from ask_permissions.policy._policy import PolicyLike
from ask_permissions.policy._records import DecisionRecord
from ask_permissions.queue._history import HistoryEntry, open_history
from ask_permissions.queue._open import describe_url
from ask_permissions.queue._queue import ApprovalQueue
from ask_permissions.settings._settings import PermissionSettings

from ._approvals import _store_error

__all__ = ["is_project", "load_cli_policy", "read_history"]


def is_project(path: str) -> bool:
    """Whether the command reads ``path`` as a project directory: a folder, unless it is named like a policy
    file (``policy.toml`` made a folder by mistake is refused as the file it should be, not read as an empty
    project that asks about everything)."""
    return os.path.isdir(path) and not path.rstrip("/").endswith((".toml", ".json"))


def load_cli_policy(
    path: str, *, on_decision: Callable[[DecisionRecord], object] | None = None
) -> PolicyLike:
    """A policy file (``.toml`` for TOML, JSON otherwise) as an ``ApprovalPolicy``, or a project directory:
    a ``LayeredPolicy`` over its ``.agent`` settings files and the user's, as the agent would read them.

    Raises:
        OSError: a file cannot be read.
        InvalidSnapshotError: a file is not a valid policy or settings file (naming the file and field).
    """
    if is_project(path):
        settings = PermissionSettings.load(project_dir=path)
        return LayeredPolicy(queue=ApprovalQueue(), settings=settings, on_decision=on_decision)
    return load_policy(path, on_decision=on_decision)


@contextlib.contextmanager
def read_history(url: str) -> Iterator[Iterator[HistoryEntry]]:
    """The actions of the store ``url`` names, read-only (``open_history``), closed afterwards.

    Raises:
        ValueError: a store that cannot be opened or read, as one line naming it (the caller exits 2);
            ``CorruptStoreError`` for a row this package would not have written.
        FileNotFoundError: an SQLite file that does not exist.
    """
    try:
        history = open_history(url)
    except (sqlite3.Error, RuntimeError, ImportError) as error:
        raise ValueError(f"store {describe_url(url)}: {error}") from None
    except (OSError, ValueError, TypeError):
        raise
    except Exception as error:
        raise _store_error(url, error) from None
    with history:
        try:
            yield history.actions()
        except sqlite3.Error as error:
            raise ValueError(f"store {describe_url(url)}: {error}") from None
        except (OSError, ValueError, TypeError):
            raise
        except Exception as error:
            raise _store_error(url, error) from None
