"""Safety checks (seed 002): writes to sensitive paths, removals of whole trees and writes to a device or a
kernel setting always ask a person.

No mode and no allow rule lifts them: ``bypassPermissions``, ``acceptEdits`` and allow rules all come after
them in the layered policy's table. Two kinds of harm are guarded against: code execution (git hooks, shell
start-up files, editor task files, package-manager configs) and an agent changing its own guardrails (the
agent's settings folder, ``.mcp.json``). Both lists are a documented constant a host can extend.

A shell command is decided on its effects (``ask_permissions.shell``): every path it writes, removes or may
touch, read from its full reading by the table of programs, with the directories a relative path may be
read from. A write (or possible write) that names a protected path — compared case-insensitively, as macOS
and Windows file systems do, and as a glob where the shell expands it — asks; so does a removal of ``/``, a
top-level directory, the home directory or the working directory (or a parent of it, or everything in one),
a removal whose target the shell works out, a write to a device (a disk, memory) or a kernel setting
(``/proc``, ``/sys``), a protected file written without being named, a shell fed a
pipe, and a command whose name the shell works out. Paths are also followed through the symbolic links that
exist on disk. A false alarm costs a person a click; a miss could cost a repository.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, final

from ask_permissions.rules._paths import normalize_path, resolve_links
from ask_permissions.shell._effects import Effects, PathUse, command_effects
from ask_permissions.shell._programs import QUICK_NAMES

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
        """Finds any protected name, case-insensitively (worked out once per set of protected paths): with
        the table's program names, what ``check_shell``'s quick path looks for."""
        return _needles(self.directories, self.files)

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
def _needles(directories: frozenset[str], files: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(name) for name in sorted(directories | files)), re.IGNORECASE)


# A program's name as a command word holds it: "/usr/bin/rm", "RM", "python3.12", "pre-commit". A launcher's
# attached script (env -S'rm …') has the launcher's own name to find.
_TOKEN: Final = re.compile(r"[a-z_][a-z0-9_+.-]*|(?<![\w.-])\.(?![\w./-])")
"""A word that may name a program: a name, or a lone ``.`` (the shell's ``source``), not part of a path."""
_VERSIONED: Final = re.compile(r"([a-z]+)[0-9][0-9.]*m?")


def _names_a_program(lowered: str) -> bool:
    """Whether lower-cased command text names a program the table says may write, remove or run something
    (``QUICK_NAMES``, derived from the table)."""
    tokens = _TOKEN.findall(lowered)
    if not QUICK_NAMES.isdisjoint(tokens):
        return True
    return any(
        (versioned := _VERSIONED.fullmatch(token)) is not None and versioned.group(1) in QUICK_NAMES
        for token in tokens
        if token[-1].isdigit() or token[-1] == "m"
    )


PROTECTED_PATHS: Final = ProtectedPaths(
    directories=frozenset(
        {".git", ".agent", ".vscode", ".idea", ".husky", ".claude", ".devcontainer"}
        # Keys that log in (authorized_keys, ssh config's ProxyCommand) and gpg's agent, which runs a program.
        | {".ssh", ".gnupg"}
    ),
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

_APPROVAL: Final = ", which needs a person's approval"
_PIPED: Final = f"The command pipes a script into a shell, which no check can read{_APPROVAL}"
"""A shell or an interpreter runs what another command writes (a pipe, a process substitution, a
descriptor)."""


def _within(path: str, working: Iterable[str]) -> str:
    """The part of an absolute path that says where it goes: below the working directory (as written or
    with its links resolved), the rest of it.

    So a project that itself sits in a folder named like a protected one is not protected as a whole.
    """
    for directory in working:
        prefix = directory.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _working(cwd: str) -> tuple[str, ...]:
    """The working directory as written and with its links resolved."""
    normal = posixpath.normpath(cwd)
    physical = resolve_links(normal)
    return (normal,) if physical in (None, normal) else (normal, physical)


def _physical(path: str, cwd: str) -> Iterator[str]:
    """``path`` (absolute, as joined) through the links that exist on disk, when they lead elsewhere."""
    followed = _commands_own(path, cwd)
    if followed is None:
        return
    physical = resolve_links(followed)
    if physical is None:
        raise _TooManyLinks(path)
    if physical != normalize_path(path):
        yield physical


def _commands_own(path: str, cwd: str) -> str | None:
    """``path`` (absolute) as the command's process reads its own entries, not the checker's: its
    descriptors (``/dev/stdout``, ``/dev/fd/3``, ``/proc/self/fd/1``) lead where its redirections say,
    checked on their own (``None``); its ``/proc/self/cwd`` is ``cwd``, its ``/proc/self/root`` is ``/``."""
    normal = normalize_path(path)
    if _OWN_DESCRIPTORS.match(normal):
        return None
    own = _OWN_FOLDERS.match(normal)
    if own is None:
        return path
    return posixpath.join(cwd if own["folder"] == "cwd" else "/", normal[own.end() :].lstrip("/"))


_OWN: Final = r"/proc/(?:self|thread-self)/"
_OWN_DESCRIPTORS: Final = re.compile(rf"/dev/(?:stdin|stdout|stderr|fd)(?:/|$)|{_OWN}(?:fd|fdinfo)(?:/|$)")
_OWN_FOLDERS: Final = re.compile(rf"{_OWN}(?P<folder>cwd|root)(?=/|$)")


class _TooManyLinks(Exception):
    """A path holds more symbolic links than are followed."""


_EVERYDAY_DEVICES: Final = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/ptmx",
        "/dev/console",
    }
)
"""Devices programs write to every day, which hold nothing a write destroys."""
# /dev/tcp/HOST/PORT and /dev/udp/... are bash's own network redirections (`until echo > /dev/tcp/db/5432`),
# no device at all.
_EVERYDAY_DEVICE_FOLDERS: Final = (
    "/dev/fd/",
    "/dev/pts/",
    "/dev/shm/",
    "/dev/mqueue/",
    "/dev/tcp/",
    "/dev/udp/",
)
# A process's descriptors, and the command's own working directory and root (read where they lead, as
# _physical reads them; another process's may not be readable, so they stay kernel settings).
_DESCRIPTORS: Final = re.compile(
    r"/proc/(?:(?:self|thread-self|\d+)/fd/|(?:self|thread-self)/(?:cwd|root)(?:/|$))"
)


_SYSTEM_FOLDERS: Final = ("dev", "proc", "sys")


def _system_file(path: str, *, pattern: bool = False) -> str | None:
    """What a write to ``path`` (absolute, normalized) would change that is no file: a device (a disk's
    blocks, memory), or a kernel setting (``/proc``, ``/sys``). ``None`` for an ordinary file, and for the
    devices and descriptors programs write to every day (``/dev/null``, ``/dev/stderr``, ``/dev/fd/3``).

    The top folder's name compares case-insensitively (macOS finds ``/DEV`` on its case-insensitive root),
    and with ``pattern`` as the glob the shell matches against ``/`` (``/d?v``, ``/*``).
    """
    top, _, rest = path[1:].partition("/")
    folded = top.casefold()
    for folder in _SYSTEM_FOLDERS:
        if folder != folded and not (pattern and fnmatch.fnmatchcase(folder, folded)):
            continue
        if not rest:
            # The folder itself: a link to it (ln -s /dev d) or a mount of it (-v /dev:/dev) hands on all
            # it holds.
            return f"the devices in {path}" if folder == "dev" else f"the kernel settings in {path}"
        named = f"/{folder}/{rest}"
        if folder == "dev":
            if named not in _EVERYDAY_DEVICES and not (named + "/").startswith(_EVERYDAY_DEVICE_FOLDERS):
                return f"the device {path}"
        elif folder == "sys" or _DESCRIPTORS.match(named) is None:
            return f"the kernel setting {path}"
    return None


def _system_named(path: str, cwd: str, home: str, *, expands: bool) -> str | None:
    """The device or kernel setting a path (a shell word, relative to ``cwd``) names, in every form the
    shell may expand it to: a glob, braces, a default (``/d?v/sda``, ``/{dev,x}/sda``, ``${D:-/dev/sda}``)."""
    if not (expands and _SHELL_SPECIAL.search(path)):
        return _system_file(normalize_path(_joined(path, cwd, home)))
    for variable in ("${HOME}", "$HOME"):
        path = path.replace(variable, home)  # a known value, not any text
    for form in _glob_forms(path):
        changed = _system_file(normalize_path(_joined(form, cwd, home)), pattern=True)
        if changed is not None:
            return changed
    return None


def _system_use(use: PathUse, cwd: str, home: str, working: _Working) -> str | None:
    """The device or kernel setting a write or removal the table read changes, as the shell may expand it
    or through the links on disk; or that a word of a program the table cannot read names (by its text)."""
    if use.guessed:
        return _system_word(use, cwd, home)
    for path in _bases(use) or (use.path,):
        changed = _system_named(path, cwd, home, expands=use.expands)
        if changed is not None:
            return changed
        for reading in working.links(_joined(path, cwd, home)):
            changed = _system_file(reading)
            if changed is not None:
                return changed
    return None


def _system_word(use: PathUse, cwd: str, home: str) -> str | None:
    """The device or kernel setting a word of a program the table cannot read names: itself, each side of
    an ``=``, a short option's attached value (``-O/dev/sda``), each piece of a list (``-v /dev/sda:/d``).

    Such a program may write what it is given (``hdparm --security-erase``, ``curl -o``, ``cryptsetup``),
    and a disk is lost at once: it asks, as a protected name in such a word does. The table's readers of
    devices (``lsblk``, ``blkid``, ``df``) are no such program.
    """
    for part in _parts(use.path):
        pieces = _LIST_SEPARATORS.split(part) if _LIST_SEPARATORS.search(part) else [part]
        for piece in pieces:
            named = PathUse(piece, "touch", use.expands, use.bases, use.program)
            for path in _bases(named) or (piece,):
                changed = _system_named(path, cwd, home, expands=use.expands)
                if changed is not None:
                    return changed
    return None


_LIST_SEPARATORS: Final = re.compile(r"[:,]")


def check_paths(paths: Iterable[str], *, cwd: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """A write to any of these paths (absolute) that touches a protected one, as written or through the
    symbolic links on disk."""
    working = _working(cwd)
    for path in paths:
        normal = normalize_path(path)
        try:
            readings = [normal, *_physical(path, cwd)]
        except _TooManyLinks:
            return SafetyFinding(f"Writing to {path} follows too many symbolic links to check{_APPROVAL}")
        for reading in readings:
            changed = _system_file(reading)
            if changed is not None:
                return SafetyFinding(f"Writing to {normal} changes {changed}{_APPROVAL}")
            inside = _within(reading, working)
            touched = protected.touched_by(inside)
            if touched is not None:
                inside_as_written = _within(normal, working)
                shown = normal if inside_as_written == normal else "./" + inside_as_written
                return SafetyFinding(f"Writing to {shown} touches {touched}{_APPROVAL}")
    return None


def _home_forms(home: str) -> frozenset[str]:
    return frozenset({"~", "~/", "$HOME", "${HOME}", "$HOME/", "${HOME}/", home, home.rstrip("/") + "/"})


def _joined(word: str, cwd: str, home: str) -> str:
    """A shell word as an absolute path (not normalized): ``$HOME`` and a leading ``~`` expanded."""
    expanded = word
    for variable in ("${HOME}", "$HOME"):
        expanded = expanded.replace(variable, home)
    if expanded.startswith("~"):
        expanded = home + expanded[1:] if expanded[1:2] in ("", "/") else os.path.expanduser(expanded)
    return posixpath.join(cwd, expanded)


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


def _dangerous_removal(target: str, cwd: str, home: str, *, glob: bool) -> str | None:
    if target in _home_forms(home):
        return "the home directory"
    # A glob of the working directory (or of /, or of ~) removes it as surely as naming it.
    stripped = _fixed_part(target) if glob else target
    if stripped in _home_forms(home):
        return "the home directory"
    path = normalize_path(_joined(stripped, cwd, home))
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


_UNKNOWN_TARGET: Final = re.compile(r"[$`{]|^~[+-]")
_ABSOLUTE: Final = ("/", "~", "$HOME", "${HOME}")


def _bases(use: PathUse) -> tuple[str, ...] | None:
    """The paths a use may name, each still relative to the working directory (``None``: a relative path
    after a directory change no check can follow)."""
    if use.path.startswith(_ABSOLUTE):
        return (use.path,)
    if use.bases is None:
        return None
    return tuple(use.path if base == "." else posixpath.join(base, use.path) for base in use.bases)


def _removed(use: PathUse, cwd: str, home: str, *, spare_working: bool = False) -> str | None:
    """What a removal takes away that no agent should, or why its target cannot be read; with
    ``spare_working``, the working directory itself is no such tree (each directory the path may be read
    from is still checked: ``cd .. && chmod -R 000 .``)."""
    paths = _bases(use)
    if paths is None:
        return f"{use.path} after changing directory"  # "cd $X && rm -rf usr"
    for path in paths:
        removed = _dangerous_removal(path, cwd, home, glob=use.expands)
        if removed is None and not use.guessed and not use.expands:
            joined = _joined(path, cwd, home)
            on_disk = _removed_on_disk(_commands_own(joined, cwd) or joined)
            removed = _dangerous_removal(on_disk, cwd, home, glob=False)
        if removed is not None and not (spare_working and removed == "the working directory"):
            return removed
    if use.expands and _UNKNOWN_TARGET.search(use.path) and use.path not in _home_forms(home):
        return f"{use.path}, which the shell expands"
    return None


def _removed_on_disk(path: str) -> str:
    """What removing ``path`` (absolute, as joined) takes away on disk: a link named last is removed
    itself, but one the path goes through (``link/``, ``link/x``) leads the removal to its target."""
    parent, name = posixpath.split(path)
    if not name:  # a trailing slash: the last link is followed too
        return resolve_links(path) or path
    return (
        posixpath.join(resolve_links(parent) or parent, name)
        if name not in (".", "..")
        else (resolve_links(path) or path)
    )


def _touched(
    use: PathUse,
    cwd: str,
    home: str,
    protected: ProtectedPaths,
    *,
    dotglob: bool,
    working: _Working,
) -> str | None:
    """The protected name a write (or possible write) touches, as written or through links on disk."""
    if use.guessed:
        return _named_in_word(use, cwd, home, protected, dotglob=dotglob, working=working)
    for path in _bases(use) or (use.path,):
        # A path that the shell does not change names a protected name only if its text holds one.
        lexical = use.expands or protected.needles.search(path) is not None
        joined = _joined(path, cwd, home)
        if lexical:
            within = _within(normalize_path(joined), working.written)
            touched = protected.touched_by(within, pattern=use.expands, dotglob=dotglob)
            if touched is not None:
                return touched
        if use.expands and _SHELL_SPECIAL.search(path):
            continue  # a pattern: by name only
        for physical in working.links(joined):
            touched = protected.touched_by(
                _within(physical, working.physical), pattern=False, dotglob=dotglob
            )
            if touched is not None:
                return touched
    return None


def _named_in_word(
    use: PathUse, cwd: str, home: str, protected: ProtectedPaths, *, dotglob: bool, working: _Working
) -> str | None:
    """The protected name a word of a program the table cannot read names: itself, each side of an ``=``
    (``--output=.bashrc``), or a short option's attached value after any run of bundled flags
    (``-t.git/hooks``, ``-sLo.git/hooks``), each as a path read from where the command runs."""
    if not use.expands and not any(protected.needles.search(path) for path in _bases(use) or (use.path,)):
        return None  # neither it nor the directories it may be read from hold a protected name
    for candidate in _parts(use.path):
        part = PathUse(candidate, "touch", use.expands, use.bases, use.program)
        for path in _bases(part) or (candidate,):
            within = _within(normalize_path(_joined(path, cwd, home)), working.written)
            touched = protected.touched_by(within, pattern=use.expands, dotglob=dotglob)
            if touched is not None:
                return touched
    return None


def _parts(word: str) -> Iterator[str]:
    seen: set[str] = set()
    parts = [part for part in word.split("=") if part]
    if word.startswith("-") and not word.startswith("--"):
        parts.extend(word[index:] for index in range(2, min(len(word), 12)))
    for part in parts:
        if part not in seen:
            seen.add(part)
            yield part


@final
class _Working:
    """The working directory as written, and (worked out when first needed) with its links resolved too;
    and the links on disk of the paths one command names, each looked up once for all the checks."""

    __slots__ = ("_links", "_physical", "cwd", "written")

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.written = (posixpath.normpath(cwd),)
        self._physical: tuple[str, ...] | None = None
        self._links: dict[str, tuple[str, ...]] = {}

    def links(self, joined: str) -> tuple[str, ...]:
        """``_physical(joined)``, looked up once per command (``_TooManyLinks`` each time it is asked)."""
        found = self._links.get(joined)
        if found is None:
            found = self._links[joined] = tuple(_physical(joined, self.cwd))
        return found

    @property
    def physical(self) -> tuple[str, ...]:
        if self._physical is None:
            self._physical = _working(self.cwd)
        return self._physical


# Text that a word may be spelled with so that the raw command does not show what it names (quotes are
# dropped before the quick search; anything else here sends the command to the full reading), and ">",
# a redirection that writes (through a link on disk, maybe into .git/hooks).
_SPELLING: Final = re.compile(r"[\\$`*?\[{(>]|[^\x00-\x7f]")
_QUOTES: Final = re.compile("['\"]")
# A device or kernel setting named (or a folder of them a relative name is read from: cd /dev): any program
# may write it, the table's or not, so the command is read in full.
_SYSTEM_NAMES: Final = re.compile(r"(?<![\w.-])(?:dev|proc|sys)(?![\w.-])", re.IGNORECASE)
_QUICK_LENGTH: Final = 10_000
"""Longer commands are always read in full (the reading says when one is too long to read)."""


def check_shell(command: str, *, cwd: str, home: str, protected: ProtectedPaths) -> SafetyFinding | None:
    """A shell command that touches a protected path, or removes a tree no agent should remove."""
    if len(command) > _QUICK_LENGTH:
        return _decided(command_effects(command), command, cwd, home, protected)
    finding, on_disk = _by_text(command, cwd, home, protected)
    # What depends on the links on disk is worked out again for every call; the rest is kept by text.
    return _decided(command_effects(command), command, cwd, home, protected) if on_disk else finding


@functools.lru_cache(maxsize=1024)
def _by_text(
    command: str, cwd: str, home: str, protected: ProtectedPaths
) -> tuple[SafetyFinding | None, bool]:
    """The answer for a command of up to ``_QUICK_LENGTH`` characters, and whether it depends on the
    links on disk (a path the table says it writes or removes: then it is not kept)."""
    # Most commands are plain and name nothing the checks care about: one search settles them at once.
    if _SPELLING.search(command) is None:
        plain = _QUOTES.sub("", command)
        if (
            protected.needles.search(plain) is None
            and _SYSTEM_NAMES.search(plain) is None
            and not _names_a_program(plain.lower())
        ):
            return None, False
    effects = command_effects(command)
    on_disk = any(use.action != "read" and not use.guessed for use in effects.paths)
    return _decided(effects, command, cwd, home, protected), on_disk


def _decided(
    effects: Effects, command: str, cwd: str, home: str, protected: ProtectedPaths
) -> SafetyFinding | None:
    """The safety checks' answer on a command's effects (read once per text; the links on disk each time)."""
    if not effects.fully_read and effects.unparsed is None:
        if effects.piped_input:
            return SafetyFinding(_PIPED)  # what the shell runs is not read: the rest was not read in full
        return SafetyFinding(f"The command is too long or too deeply nested to check{_APPROVAL}")
    if effects.unparsed is not None:
        # The reading stopped there, and the command names what the checks look at (the quick path let it
        # through to here): another reader of it may run what this one did not read.
        return SafetyFinding(f"The command cannot be read as shell ({effects.unparsed}){_APPROVAL}")
    for use in effects.paths:
        if (
            use.program == "a redirection"
            and use.action == "write"
            and use.expands
            and _PARAMETER.search(use.path)
        ):
            return SafetyFinding(f"The command writes to {use.path}, which the shell expands{_APPROVAL}")
    dotglob = "dotglob" in command or "GLOBIGNORE" in command
    working = _Working(cwd)
    try:
        for use in effects.paths:
            if use.action == "read":
                continue
            if use.action in ("remove", "tree"):
                # Changing the working directory's modes is the work (chmod -R u+w .); those of /, of the
                # home directory or of a parent of the project lock out a system or a person.
                removed = _removed(use, cwd, home, spare_working=use.action == "tree")
                if removed is not None:
                    verb = "removes" if use.action == "remove" else "changes everything in"
                    return SafetyFinding(f"The command {verb} {removed}{_APPROVAL}")
            changed = _system_use(use, cwd, home, working)
            if changed is not None:
                verb = "removes" if use.action == "remove" else "may write to" if use.guessed else "writes to"
                return SafetyFinding(f"The command {verb} {changed}{_APPROVAL}")
            touched = _touched(use, cwd, home, protected, dotglob=dotglob, working=working)
            if touched is not None:
                return SafetyFinding(f"The command touches {touched}{_APPROVAL}")
    except _TooManyLinks as error:
        return SafetyFinding(
            f"The command names {error.args[0]}, which follows too many symbolic links to check{_APPROVAL}"
        )
    if effects.implicit:
        return SafetyFinding(f"The command writes {effects.implicit[0]}{_APPROVAL}")
    if effects.removes_input:
        return SafetyFinding(f"The command removes what its input names, which no check can read{_APPROVAL}")
    if effects.piped_input:
        return SafetyFinding(_PIPED)
    if effects.unread_names:
        name = effects.unread_names[0]
        return SafetyFinding(
            f"The command runs {name}, a command the shell works out, which no check can read{_APPROVAL}"
        )
    return None
