"""Safety checks (seed 002): writes to sensitive paths and removals of whole trees always ask a person.

No mode and no allow rule lifts them: ``bypassPermissions``, ``acceptEdits`` and allow rules all come after
them in the layered policy's table. Two kinds of harm are guarded against: code execution (git hooks, shell
start-up files, editor task files, package-manager configs) and an agent changing its own guardrails (the
agent's settings folder, ``.mcp.json``). Both lists are a documented constant a host can extend.

The shell scan over-approximates on purpose: any word of a command that names a protected path (compared
case-insensitively, as macOS and Windows file systems do, and as a glob where it holds ``*``, ``?`` or
``[``), and any ``rm`` of ``/``, a top-level directory, the home directory or the working directory (or a
parent of it, or everything in one), asks. Words are read twice: as the rules' shell splitter reads them
(quotes removed, ``$'…'`` decoded, wrappers, launchers, ``bash -c`` and ``eval`` scripts seen through) and by
a plain split at every operator. A false alarm costs a person a click; a miss could cost a repository.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, final

from ask_permissions.rules._paths import normalize_path
from ask_permissions.rules._shell import parse_command

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

    @property
    def needles(self) -> re.Pattern[str]:
        """Finds any protected name, or ``rm``, case-insensitively: a plain command (no quote tricks, globs,
        expansions or escapes; see ``check_shell``) without one cannot touch a protected path or remove a
        tree (worked out once per set of protected paths)."""
        return _needles(self.directories | self.files)

    def extended(self, *, directories: Iterable[str] = (), files: Iterable[str] = ()) -> ProtectedPaths:
        """These protected paths and more (a host's own guardrail files, say)."""
        return ProtectedPaths(self.directories | frozenset(directories), self.files | frozenset(files))

    def touched_by(self, path: str, *, pattern: bool = False) -> str | None:
        """The protected name ``path`` touches, or ``None``; names compare case-insensitively, and with
        ``pattern`` a component holding ``*``, ``?`` or ``[`` is a glob that may name one (``.g?t``)."""
        parts = [part for part in path.replace("\\", "/").split("/") if part]
        directories, files = _folded(self.directories), _folded(self.files)
        for part in parts:
            touched = _protected_name(part, directories, pattern)
            if touched is not None:
                return touched + "/"
        if parts:
            return _protected_name(parts[-1], files, pattern)
        return None


@functools.lru_cache(maxsize=32)
def _folded(names: frozenset[str]) -> dict[str, str]:
    return {name.casefold(): name for name in names}


def _protected_name(part: str, names: dict[str, str], pattern: bool) -> str | None:
    folded = part.casefold()
    found = names.get(folded)
    if found is not None or not pattern or not any(char in part for char in "*?["):
        return found
    if not folded.strip("*"):
        return None  # "*" alone names every file: it would make every "ls *" ask, and targets none
    for name_folded, name in names.items():
        # A shell glob matches a leading dot only literally: "*" is not ".git".
        if name_folded.startswith(".") and not folded.startswith("."):
            continue
        if fnmatch.fnmatchcase(name_folded, folded):
            return name
    return None


@functools.lru_cache(maxsize=16)
def _needles(names: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(name) for name in sorted({*names, "rm"})), re.IGNORECASE)


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
        inside = _within(path, cwd)
        touched = protected.touched_by(inside)
        if touched is not None:
            shown = path if inside == path else "./" + inside
            return SafetyFinding(f"Writing to {shown} touches {touched}, which needs a person's approval")
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


def _operator_aware(command: str) -> Iterator[list[str]]:
    """The words of each sub-command as a quote-aware split at the shell's operators reads them."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    try:
        for token in lexer:
            if token and all(char in "();<>|&" for char in token):
                if words:
                    yield words
                words = []
            else:
                words.append(token)
    except ValueError:  # an unterminated quote: the other readings see it
        pass
    if words:
        yield words


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
    return normalize_path(posixpath.join(cwd, expanded))


def _fixed_part(target: str) -> str:
    """The path up to its first component holding a glob: what a globbed removal empties at least."""
    parts = target.split("/")
    for index, part in enumerate(parts):
        if any(char in part for char in "*?["):
            return "/".join(parts[:index]) or ("/" if target.startswith("/") else ".")
    return target


def _dangerous_removal(target: str, cwd: str, home: str) -> str | None:
    if target in _home_forms(home):
        return "the home directory"
    # A glob of the working directory (or of /, or of ~) removes it as surely as naming it.
    stripped = _fixed_part(target)
    if stripped in _home_forms(home):
        return "the home directory"
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


# Text that a word may be spelled with so that the raw command does not show what it names: quotes are
# dropped before the quick search, and anything else here sends the command to the full scan.
_SPELLING: Final = re.compile(r"[\\$`*?\[{]")
_CHANGES_DIRECTORY: Final = frozenset({"cd", "pushd", "popd"})


def check_shell(command: str, *, cwd: str, home: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """A shell command that names a protected path, or removes a tree no agent should remove."""
    # Most commands are plain and name nothing protected: one search settles them at once.
    if _SPELLING.search(command) is None and protected.needles.search(re.sub("['\"]", "", command)) is None:
        return None
    return _scanned(command, cwd, home, protected)


@functools.lru_cache(maxsize=1024)
def _scanned(command: str, cwd: str, home: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """The full scan (three readings of the command; tens of microseconds), kept for repeated commands."""
    parsed = parse_command(command)
    if not parsed.fully_scanned:
        return SafetyFinding(
            "The command is too long or too deeply nested to check, which needs a person's approval"
        )
    readings = [
        *_sub_commands(command),
        *_operator_aware(command),
        *(list(sub.words) for sub in parsed.visible),
        list(parsed.redirect_targets),
    ]
    moves = any(words and posixpath.basename(words[0]) in _CHANGES_DIRECTORY for words in readings)
    for words in readings:
        for target in _removal_targets(words):
            if moves and not target.startswith(("/", "~", "$HOME", "${HOME}")):
                # After a cd, a relative operand may name anything: "cd / && rm -rf usr".
                return SafetyFinding(
                    f"The command removes {target} after changing directory, which needs a person's approval"
                )
            removed = _dangerous_removal(target, cwd, home)
            if removed is not None:
                return SafetyFinding(f"The command removes {removed}, which needs a person's approval")
        for word in words:
            if _REDIRECT.fullmatch(word):
                continue
            touched = _touched_by_word(word, cwd, home, protected)
            if touched is not None:
                return SafetyFinding(f"The command touches {touched}, which needs a person's approval")
    return None


def _touched_by_word(word: str, cwd: str, home: str, protected: ProtectedPaths) -> str | None:
    """The protected name a word names: itself, each side of an ``=`` (``--output=.bashrc``), or a short
    option's attached value (``-t.git/hooks``)."""
    candidates = [part for part in word.split("=") if part]
    if word.startswith("-") and not word.startswith("--") and len(word) > 2:
        candidates.append(word[2:])
    for part in candidates:
        touched = protected.touched_by(_within(_resolved(part, cwd, home), cwd), pattern=True)
        if touched is not None:
            return touched
    return None
