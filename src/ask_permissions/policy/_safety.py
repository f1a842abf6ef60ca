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
        """Finds any protected name, ``rm`` or ``delete``, case-insensitively: a plain command (no quote
        tricks, globs, expansions, groups or escapes; see ``check_shell``) without one cannot touch a
        protected path or remove a tree (worked out once per set of protected paths)."""
        return _needles(self.directories | self.files)

    def extended(self, *, directories: Iterable[str] = (), files: Iterable[str] = ()) -> ProtectedPaths:
        """These protected paths and more (a host's own guardrail files, say)."""
        return ProtectedPaths(self.directories | frozenset(directories), self.files | frozenset(files))

    def touched_by(self, path: str, *, pattern: bool = False, dotglob: bool = False) -> str | None:
        """The protected name ``path`` touches, or ``None``; names compare case-insensitively.

        With ``pattern`` a component is read as the shell would expand it: a glob (``.g?t``, ``.[^x]it``,
        ``.@(g)it``), braces (``.{g,x}it``), an expansion (``.bashrc$u``, ``${u:-.git}``) may name a
        protected name that starts with a dot, as the shell matches a leading dot only literally (unless
        ``dotglob``); protected names without a dot are compared exactly.
        """
        # Windows drops a name's trailing dots and spaces: ".git." is ".git" there.
        parts = [part.rstrip(". ") or part for part in path.replace("\\", "/").split("/") if part]
        directories, files = _folded(self.directories), _folded(self.files)
        for part in parts:
            touched = _protected_name(part, directories, pattern, dotglob)
            if touched is not None:
                return touched + "/"
        if parts:
            return _protected_name(parts[-1], files, pattern, dotglob)
        return None


@functools.lru_cache(maxsize=32)
def _folded(names: frozenset[str]) -> dict[str, str]:
    return {name.casefold(): name for name in names}


def _protected_name(part: str, names: dict[str, str], pattern: bool, dotglob: bool = False) -> str | None:
    folded = part.casefold()
    found = names.get(folded)
    if found is not None or not pattern or _SHELL_SPECIAL.search(part) is None:
        return found
    for form in _glob_forms(folded):
        if not form.strip("*"):
            continue  # "*" alone names every file: it would make every "ls *" ask, and targets none
        for name_folded, name in names.items():
            if not name_folded.startswith("."):
                continue  # pip.conf, config.fish: only named exactly ("ls p*" does not ask)
            if not (form.startswith(".") or dotglob):
                continue  # a glob matches a leading dot only literally
            if fnmatch.fnmatchcase(name_folded, form):
                return name
    return None


_SHELL_SPECIAL: Final = re.compile(r"[*?\[{$`(]")
_BRACES: Final = re.compile(r"\{([^{}]*,[^{}]*)\}")
_PARAMETER: Final = re.compile(r"\$\{[^}]*\}|\$\w+|\$.|`[^`]*`")
_DEFAULT: Final = re.compile(r"\$\{\w+:?[-=+?]([^}]*)\}")
_EXTGLOB: Final = re.compile(r"[@+!*?]\([^)]*\)")
_BRACKET: Final = re.compile(r"\[(?:\[:\w+:\]|[^\]])+\]")


def _glob_forms(component: str) -> list[str]:
    """What a shell word's component may expand to, as fnmatch patterns over-approximating it: braces
    expanded, an expansion's default text kept and any expansion a ``*``, extglob groups a ``*``, and a
    bracket expression (``[^x]``, ``[[:alpha:]]``) any one character."""
    forms = [component]
    for _ in range(4):  # braces, a few levels deep
        expanded: list[str] = []
        for form in forms:
            match = _BRACES.search(form)
            if match is None:
                expanded.append(form)
                continue
            expanded.extend(
                form[: match.start()] + option + form[match.end() :] for option in match[1].split(",")
            )
        forms = expanded[:64]
    result: list[str] = []
    for form in forms:
        defaults = [form[: m.start()] + m[1] + form[m.end() :] for m in _DEFAULT.finditer(form)]
        result.extend(
            _BRACKET.sub("?", _EXTGLOB.sub("*", _PARAMETER.sub("*", variant)))
            for variant in (form, *defaults)
        )
    return result


@functools.lru_cache(maxsize=16)
def _needles(names: frozenset[str]) -> re.Pattern[str]:
    words = {*names, "rm", "del", "remov", "rimraf", "config", "core.", "submodule", "rev-parse", "install"}
    words |= {"init", "husky", "hooks", "template", "ensurepath", " set", "shred", "unlink", "trash", "zip"}
    return re.compile("|".join(re.escape(name) for name in sorted(words)), re.IGNORECASE)


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


def _blank_split(command: str) -> Iterator[list[str]]:
    """The sub-commands of the command split at blanks only (quotes removed where they pair up), cut at
    words that are or end in ``;``, ``&&``, ``||``, ``|`` or ``&``: extglob groups stay in their words."""
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError:
        words = command.split()
    current: list[str] = []
    for word in words:
        stripped = word.rstrip(";&|")
        if stripped:
            current.append(stripped)
        if stripped != word:
            yield current
            current = []
    if current:
        yield current


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


def _removal_targets(words: list[str], home: str = "~") -> Iterator[str]:
    """What a command removes: the operands of an ``rm`` (after wrappers such as ``sudo``), the roots of a
    ``find … -delete`` or ``rsync --delete`` destination, and ``/`` for an ``rm`` fed by ``xargs`` (its
    operands come from its input, which the scan cannot see)."""
    index = 0
    while index < len(words) and (words[index] in _WRAPPERS or "=" in words[index]):
        index += 1
    if index >= len(words):
        return
    program = posixpath.basename(words[index])
    if program in ("npx", "pnpx", "bunx") and index + 1 < len(words):
        index += 1  # npx rimraf ~
        program = posixpath.basename(words[index])
    if program == "find":
        yield from _find_roots(words[index + 1 :])
        return
    if program == "rsync" and any(word.startswith(("--del", "--remove-source")) for word in words):
        operands = [word for word in words[index + 1 :] if not word.startswith("-")]
        yield from operands[-1:] if any(word.startswith("--del") for word in words) else operands[:-1]
        return
    if program == "zip" and any(
        word.startswith("-") and not word.startswith("--") and "m" in word for word in words
    ):
        yield from [word for word in words[index + 1 :] if not word.startswith("-")][
            1:
        ]  # zip -m moves them in
        return
    if program == "tar" and "--remove-files" in words:
        yield from (word for word in words[index + 1 :] if not word.startswith("-"))
        return
    if program == "xargs" and any(posixpath.basename(word) in ("rm", "rmdir") for word in words[index + 1 :]):
        yield "/"  # whatever its input names
        return
    if program not in ("rm", "rmdir", "rimraf", "del-cli", "trash", "shred", "unlink"):
        return
    options_done = False
    for word in words[index + 1 :]:
        if not options_done and word == "--":
            options_done = True
        elif options_done or not word.startswith("-"):
            yield word


_FIND_OPTIONS: Final = frozenset({"-H", "-L", "-P", "--"})
_FIND_TESTS: Final = frozenset(
    {"-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-type", "-newer", "-mtime", "-mmin", "-size"}
    | {"-empty", "-user", "-group", "-perm", "-links", "-wholename", "-iwholename"}
)
_REMOVERS: Final = frozenset({"rm", "rmdir", "unlink", "shred", "rimraf"})


def _find_roots(arguments: list[str]) -> Iterator[str]:
    """The roots a ``find`` empties: with ``-delete`` and no test to choose what, or an ``-exec rm``."""
    removes_all = "-delete" in arguments and not _FIND_TESTS.intersection(arguments)
    runs_a_remover = any(
        word in ("-exec", "-execdir", "-ok", "-okdir")
        and index + 1 < len(arguments)
        and posixpath.basename(arguments[index + 1]) in _REMOVERS
        and not _FIND_TESTS.intersection(arguments)
        for index, word in enumerate(arguments)
    )
    if not (removes_all or runs_a_remover):
        return
    roots: list[str] = []
    position = 0
    while position < len(arguments) and (
        arguments[position] in _FIND_OPTIONS or arguments[position][:2] in ("-O", "-D")
    ):
        position += 2 if arguments[position] == "-D" else 1
    for word in arguments[position:]:
        if word.startswith(("-", "(", "!")):
            break
        roots.append(word)
    yield from roots or ["."]  # GNU find starts at "." without a root


def _home_forms(home: str) -> frozenset[str]:
    return frozenset({"~", "~/", "$HOME", "${HOME}", "$HOME/", "${HOME}/", home, home.rstrip("/") + "/"})


def _resolved(word: str, cwd: str, home: str) -> str:
    expanded = word
    for variable in ("${HOME}", "$HOME"):
        expanded = expanded.replace(variable, home)
    expanded = os.path.expanduser(expanded) if expanded.startswith("~") else expanded
    return normalize_path(posixpath.join(cwd, expanded))


def _fixed_part(target: str) -> str:
    """The directory a glob of every name in it empties (``~/*``, ``./.*``, ``/?*``, ``~/[!.]*``, ``~/*/``):
    removing all it holds is removing it. A glob of some names (``*.pyc``) is left as it is."""
    parts = target.rstrip("/").split("/") if target.rstrip("/") else [""]
    for index, part in enumerate(parts):
        if _SHELL_SPECIAL.search(part) is None or "$" in part or "`" in part:
            continue
        if index != len(parts) - 1 or any(form.lstrip(".").strip("*?") for form in _glob_forms(part)):
            return target
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
_SPELLING: Final = re.compile(r"[\\$`*?\[{(|]")
_CHANGES_DIRECTORY: Final = frozenset({"cd", "pushd", "popd"})
_UNKNOWN_TARGET: Final = re.compile(r"[$`{]|^~[+-]")


def check_shell(command: str, *, cwd: str, home: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """A shell command that names a protected path, or removes a tree no agent should remove."""
    # Most commands are plain and name nothing protected: one search settles them at once.
    if _SPELLING.search(command) is None and protected.needles.search(re.sub("['\"]", "", command)) is None:
        return None
    return _scanned(command, cwd, home, protected)


@functools.lru_cache(maxsize=1024)
def _scanned(command: str, cwd: str, home: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """The full scan (four readings of the command; tens of microseconds), kept for repeated commands."""
    parsed = parse_command(command)
    if not parsed.fully_scanned:
        return SafetyFinding(
            "The command is too long or too deeply nested to check, which needs a person's approval"
        )
    targets = list(parsed.redirect_targets)
    readings = [
        *_sub_commands(command),
        *_operator_aware(command),
        *_blank_split(command),  # extglob groups stay in their words: cp x .@(g)it/hooks/
        *(list(sub.words) for sub in parsed.visible),
        targets,
    ]
    for target in [*targets, *(found for words in readings[:-1] for found in _redirect_targets(words))]:
        if _PARAMETER.search(target):
            written = f"{target}, which the shell expands"
            return SafetyFinding(f"The command writes to {written}, which needs a person's approval")
    moves = any(_moves(words) for words in readings)
    dotglob = "dotglob" in command or "GLOBIGNORE" in command
    for words in readings:
        for target in _removal_targets(words, home):
            removed = _dangerous_removal(target, cwd, home)
            if removed is None and _UNKNOWN_TARGET.search(target) and target not in _home_forms(home):
                removed = f"{target}, which the shell expands"
            elif removed is None and moves and not target.startswith(("/", "~", "$HOME", "${HOME}")):
                removed = f"{target} after changing directory"  # "cd / && rm -rf usr"
            if removed is not None:
                return SafetyFinding(f"The command removes {removed}, which needs a person's approval")
        if _reads_a_script(words) and "|" in command:
            piped = "pipes a script into a shell, which no check can read"
            return SafetyFinding(f"The command {piped}, which needs a person's approval")
        implicit = _implicit_write(words)
        if implicit is not None:
            return SafetyFinding(f"The command writes {implicit}, which needs a person's approval")
        for word in words:
            if _REDIRECT.fullmatch(word):
                continue
            touched = _touched_by_word(word, cwd, home, protected, dotglob)
            if touched is not None:
                return SafetyFinding(f"The command touches {touched}, which needs a person's approval")
    return None


_GIT_CONFIG_READS: Final = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--show-origin", "--show-scope"}
)
_GIT_DIR_NAMES: Final = frozenset({"--git-dir", "--git-path", "--absolute-git-dir", "--git-common-dir"})
# git -c KEY=VALUE settings that run a program or move the hooks.
_GIT_RUNNING_KEYS: Final = (
    "core.hookspath",
    "core.sshcommand",
    "core.fsmonitor",
    "core.pager",
    "core.editor",
)
_CONFIG_SETTERS: Final = {"npm": ".npmrc", "pnpm": ".npmrc", "yarn": ".yarnrc", "pip": "pip.conf"}


def _implicit_write(words: list[str]) -> str | None:
    """A protected file a command writes without naming it: git's configuration and hooks, a package
    manager's configuration, ``pre-commit install``; and the git folder a ``rev-parse`` prints for a pipe."""
    if not words:
        return None
    program, rest = posixpath.basename(words[0]), words[1:]
    if program == "git":
        settings = [rest[index + 1].casefold() for index, word in enumerate(rest[:-1]) if word == "-c"]
        if any(setting.startswith(_GIT_RUNNING_KEYS) for setting in settings):
            return "a git setting that runs a program"
        verbs = [word for word in rest if not word.startswith("-")]
        if verbs[:1] == ["config"] and not _GIT_CONFIG_READS.intersection(rest) and len(verbs) >= 3:
            return "git's configuration (.gitconfig or .git/config)"
        if verbs[:2] == ["submodule", "add"]:
            return ".gitmodules"
        if verbs[:1] == ["rev-parse"] and _GIT_DIR_NAMES.intersection(rest):
            return "into .git/ (the command prints its path for another to use)"
        if verbs[:1] in (["init"], ["clone"]) and any(word.startswith("--template") for word in rest):
            return "git hooks from a template (.git/hooks)"
    if program in ("npx", "pnpx", "bunx") and rest:
        program, rest = posixpath.basename(rest[0]), rest[1:]
    if program in _CONFIG_SETTERS and (rest[:2] in (["config", "set"], ["c", "set"]) or rest[:1] == ["set"]):
        return _CONFIG_SETTERS[program]
    if program == "yarn" and rest[:2] == ["set", "version"]:
        return ".yarnrc.yml"
    if (program == "pre-commit" and "install" in rest) or program in ("husky", "simple-git-hooks"):
        return "git hooks (.git/hooks, .husky)"
    if (program in ("conda", "mamba") and "init" in rest) or (program == "pipx" and "ensurepath" in rest):
        return "shell start-up files"
    return None


_INTERPRETERS: Final = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "perl"})


def _reads_a_script(words: list[str]) -> bool:
    """A shell or interpreter given no script or command: it runs what comes on its input."""
    if not words or posixpath.basename(words[0]) not in _INTERPRETERS:
        return False
    return all(word.startswith("-") for word in words[1:])


def _moves(words: list[str]) -> bool:
    """Whether a sub-command changes the directory to somewhere a relative operand cannot be read from:
    ``cd /``, ``cd ..``, ``cd`` alone, ``env -C DIR``, ``sudo -D DIR``; not ``cd frontend``."""
    if not words:
        return False
    if any(word.startswith("CDPATH=") for word in words):
        return True
    program = posixpath.basename(words[0])
    if program in _CHANGES_DIRECTORY:
        target = next((word for word in words[1:] if not word.startswith("-") or word == "-"), None)
        return (
            target is None
            or target.startswith(("/", "~", "-"))
            or ".." in target.split("/")
            or _SHELL_SPECIAL.search(target) is not None
        )
    if program == "ln" and any(word.startswith("-") and "s" in word for word in words[1:]):
        return True  # ln -s / r && rm -rf r/usr: a link made now moves what a relative path names
    option = {"env": "C", "sudo": "D"}.get(program)
    return option is not None and any(
        word.startswith("--chdir") or (word.startswith("-") and not word.startswith("--") and option in word)
        for word in words[1:]
    )


def _redirect_targets(words: list[str]) -> Iterator[str]:
    """The words after a redirection operator, in a plain split's reading."""
    for index, word in enumerate(words[:-1]):
        if _REDIRECT.fullmatch(word):
            yield words[index + 1]


def _touched_by_word(
    word: str, cwd: str, home: str, protected: ProtectedPaths, dotglob: bool = False
) -> str | None:
    """The protected name a word names: itself, each side of an ``=`` (``--output=.bashrc``), or a short
    option's attached value, after any run of bundled flags (``-t.git/hooks``, ``-sLo.git/hooks``)."""
    candidates = [part for part in word.split("=") if part]
    if word.startswith("-") and not word.startswith("--"):
        candidates.extend(word[index:] for index in range(2, min(len(word), 12)))
    for part in candidates:
        touched = protected.touched_by(
            _within(_resolved(part, cwd, home), cwd), pattern=True, dotglob=dotglob
        )
        if touched is not None:
            return touched
    return None
