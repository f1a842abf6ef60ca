"""Safety checks (seed 002): writes to sensitive paths and removals of whole trees always ask a person.

No mode and no allow rule lifts them: ``bypassPermissions``, ``acceptEdits`` and allow rules all come after
them in the layered policy's table. Two kinds of harm are guarded against: code execution (git hooks, shell
start-up files, editor task files, package-manager configs) and an agent changing its own guardrails (the
agent's settings folder, ``.mcp.json``). Both lists are a documented constant a host can extend.

The shell scan over-approximates on purpose: any word of a command that names a protected path, and any
``rm`` of ``/``, a top-level directory, the home directory or the working directory (or a parent of it),
asks. A false alarm costs a person a click; a miss could cost a repository.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, final

__all__ = ["PROTECTED_PATHS", "ProtectedPaths", "SafetyFinding", "check_paths", "check_shell"]


@final
@dataclass(frozen=True, slots=True)
class SafetyFinding:
    """Why a call must ask a person, whatever the mode or the allow rules say.

    ``reviewable`` is whether an automatic reviewer (``auto`` mode) may answer it instead of a person.
    """

    reason: str
    reviewable: bool = False


@final
@dataclass(frozen=True, slots=True)
class ProtectedPaths:
    """Directory names and file names that no edit may touch without a person.

    A path is protected when one of its components is a protected directory (``.git`` anywhere in it, so
    ``.git/hooks/pre-commit`` too) or its last component is a protected file.
    """

    directories: frozenset[str]
    files: frozenset[str]

    def extended(self, *, directories: Iterable[str] = (), files: Iterable[str] = ()) -> ProtectedPaths:
        """These protected paths and more (a host's own guardrail files, say)."""
        return ProtectedPaths(self.directories | frozenset(directories), self.files | frozenset(files))

    def touched_by(self, path: str) -> str | None:
        """The protected name ``path`` touches, or ``None``."""
        parts = [part for part in path.replace("\\", "/").split("/") if part]
        for part in parts:
            if part in self.directories:
                return part + "/"
        if parts and parts[-1] in self.files:
            return parts[-1]
        return None


PROTECTED_PATHS: Final = ProtectedPaths(
    directories=frozenset({".git", ".agent", ".vscode", ".idea", ".husky", ".claude", ".devcontainer"}),
    files=frozenset(
        {
            # Shell start-up files: whatever they hold runs in the next shell.
            ".bashrc",
            ".bash_profile",
            ".bash_login",
            ".bash_logout",
            ".zshrc",
            ".zprofile",
            ".zshenv",
            ".zlogin",
            ".zlogout",
            ".profile",
            ".envrc",
            ".inputrc",
            "config.fish",
            # Git's own configuration and submodules (a URL or a hook path in them runs code).
            ".gitconfig",
            ".gitmodules",
            ".gitattributes",
            # Package-manager and hook configs: install scripts and registries.
            ".npmrc",
            ".yarnrc",
            ".yarnrc.yml",
            ".pnpmfile.cjs",
            ".pre-commit-config.yaml",
            ".pypirc",
            "pip.conf",
            # The agent's guardrails.
            ".mcp.json",
        }
    ),
)
"""The layered policy's protected paths (a host extends them with ``PROTECTED_PATHS.extended``)."""


def _within(path: str, cwd: str) -> str:
    """The part of an absolute path that says where it goes: below the working directory, the rest of it.

    So a project that itself sits in a folder named like a protected one is not protected as a whole.
    """
    working = posixpath.normpath(cwd).rstrip("/") + "/"
    return path[len(working) :] if path.startswith(working) else path


def check_paths(paths: Iterable[str], *, cwd: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """A write to any of these paths (absolute, normalized) that touches a protected one."""
    for path in paths:
        touched = protected.touched_by(_within(path, cwd))
        if touched is not None:
            return SafetyFinding(f"Writing to {path} touches {touched}, which needs a person's approval")
    return None


# Splitting for the scan only: every operator and quote ends a word, so nothing hides inside one.
_SEPARATORS: Final = re.compile(r"&&|\|\||[;&|\n()`]|\$\(")
_REDIRECT: Final = re.compile(r"^(\d*|&)>>?|^<")


def _sub_commands(command: str) -> Iterator[list[str]]:
    for part in _SEPARATORS.split(command):
        try:
            words = shlex.split(part, comments=False, posix=True)
        except ValueError:  # an unterminated quote: read the words as they stand
            words = part.split()
        # "echo x >.bashrc" and "echo x > .bashrc" both name the file.
        split: list[str] = []
        for word in words:
            redirect = _REDIRECT.match(word)
            if redirect is not None and redirect.end() < len(word):
                split.extend((word[: redirect.end()], word[redirect.end() :]))
            else:
                split.append(word)
        if split:
            yield split


_WRAPPERS: Final = frozenset({"sudo", "doas", "command", "builtin", "nohup", "time", "nice", "env", "exec"})


def _removal_targets(words: list[str]) -> Iterator[str]:
    """The operands of an ``rm`` (after wrappers such as ``sudo``)."""
    index = 0
    while index < len(words) and (words[index] in _WRAPPERS or "=" in words[index]):
        index += 1
    if index >= len(words) or posixpath.basename(words[index]) not in ("rm", "rmdir"):
        return
    options_done = False
    for word in words[index + 1 :]:
        if not options_done and word == "--":
            options_done = True
        elif options_done or not word.startswith("-"):
            yield word


def _home_forms(home: str) -> frozenset[str]:
    return frozenset({"~", "~/", "$HOME", "${HOME}", "$HOME/", "${HOME}/", home, home.rstrip("/") + "/"})


def _resolved(word: str, cwd: str, home: str) -> str:
    expanded = word
    for variable in ("${HOME}", "$HOME"):
        expanded = expanded.replace(variable, home)
    expanded = os.path.expanduser(expanded) if expanded.startswith("~") else expanded
    return posixpath.normpath(posixpath.join(cwd, expanded))


def _dangerous_removal(target: str, cwd: str, home: str) -> str | None:
    if target in _home_forms(home):
        return "the home directory"
    # A glob of the working directory (or of /) removes it as surely as naming it.
    stripped = target[:-2] if target.endswith("/*") else ("." if target in ("*", ".*") else target)
    path = _resolved(stripped, cwd, home)
    if path == "/":
        return "/"
    if path.count("/") == 1:
        return f"the top-level directory {path}"
    if path == posixpath.normpath(home):
        return "the home directory"
    working = posixpath.normpath(cwd)
    if path == working or working.startswith(path.rstrip("/") + "/"):
        return "the working directory" if path == working else f"{path}, a parent of the working directory"
    return None


def check_shell(command: str, *, cwd: str, home: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """A shell command that names a protected path, or removes a tree no agent should remove."""
    for words in _sub_commands(command):
        for target in _removal_targets(words):
            removed = _dangerous_removal(target, cwd, home)
            if removed is not None:
                return SafetyFinding(f"The command removes {removed}, which needs a person's approval")
        for word in words:
            if _REDIRECT.fullmatch(word):
                continue
            # "--output=.bashrc" names the file too.
            for part in word.split("="):
                if not part:
                    continue
                touched = protected.touched_by(_within(_resolved(part, cwd, home), cwd))
                if touched is not None:
                    return SafetyFinding(f"The command touches {touched}, which needs a person's approval")
    return None
