"""SandboxProfile: the walls a sandbox builds, worked out from a layered policy's folders and rules."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, final

from ask_permissions._errors import preview
from ask_permissions.policy._sandbox_view import PathRuleView, SandboxView
from ask_permissions.rules._domains import DomainPattern
from ask_permissions.rules._paths import normalize_path

from ._bwrap import PRIVATE_FOLDERS, is_under

__all__ = ["HOME_FILES", "SECRET_VARIABLES", "NetworkRules", "SandboxProfile", "profile_from_view"]

SECRET_VARIABLES: Final = (
    "*_TOKEN",
    "*_TOKEN_*",
    "*_SECRET",
    "*_SECRET_*",
    "*_SECRET_KEY",
    "*_PASSWORD",
    "*_PASSWD",
    "*_API_KEY",
    "*_APIKEY",
    "*_ACCESS_KEY",
    "*_ACCESS_KEY_ID",
    "*_PRIVATE_KEY",
    "*_CREDENTIALS",
    "*_AUTH",
    "*DATABASE_URL",
    "PGPASSWORD",
    "MYSQL_PWD",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
)
"""The environment variables no sandboxed command sees by default (glob patterns, compared
case-insensitively): credentials, and the agents' sockets that hand them out. Extend it for your own:
``secrets=(*SECRET_VARIABLES, "DEPLOY_KEY")``."""

HOME_FILES: Final = frozenset(
    {
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
        ".inputrc",
        "config.fish",
        ".gitconfig",
        ".pypirc",
        "pip.conf",
        ".ssh",
        ".gnupg",
    }
)
"""Protected names that take effect only in the home directory (a shell reads ``~/.bashrc``, not
``./.bashrc``): a sandbox blocks them there when missing, and elsewhere keeps them read-only if they exist,
so as not to litter every project with placeholders nothing would read."""


@final
@dataclass(frozen=True, slots=True)
class NetworkRules:
    """Which hosts the domain proxy lets a sandboxed command reach: the policy's domain rules.

    A host is reached when no deny or ask rule of a URL tool matches it (a person cannot be asked from inside
    a sandbox) and an allow rule's ``domain:`` specifier does, reading the host as the rules read a URL's
    (an allow never matches a host that URL parsers could read differently). A rule that names a URL tool
    alone (``WebFetch`` in ``deny``) refuses every host; one in ``allow`` opens nothing.

    Attributes:
        allowed: the allow rules' domain specifiers.
        refused: the deny and ask rules' domain specifiers (``None``: a rule for every URL).
        texts: the allow rules' texts, for display.
    """

    allowed: tuple[DomainPattern, ...]
    refused: tuple[DomainPattern | None, ...] = ()
    texts: tuple[str, ...] = ()

    def allows(self, url: str) -> bool:
        """Whether the rules let a command reach the host of ``url`` (``https://host:port/`` for a tunnel)."""
        if any(pattern is None or pattern.matches_url(url, "deny") for pattern in self.refused):
            return False
        return any(pattern.matches_url(url, "allow") for pattern in self.allowed)


@final
@dataclass(frozen=True, slots=True)
class SandboxProfile:
    """The walls around a sandboxed command, as data.

    Everything outside ``writable`` is read-only; inside it, ``protected`` paths stay read-only (and one that
    does not exist cannot be created), as do ``read_only`` paths that exist, and ``unreadable`` paths that
    exist are hidden. ``/tmp``, ``/run`` and ``/var/run`` are private: fresh and empty. With ``network`` the
    command reaches only the hosts those rules allow, through the domain proxy; without it, no network at
    all. Variables matching ``secrets`` are removed from its environment.

    Attributes:
        cwd: where commands start (a real path).
        writable: the folders (and files) commands may write, real paths.
        protected: paths inside them that stay read-only, each with whether it is a folder.
        read_only: more paths kept read-only where they exist (deny and ask rules of editing tools).
        unreadable: paths hidden where they exist (deny and ask rules of reading tools).
        network: the domain rules, or ``None`` for no network.
        secrets: the environment variables removed (glob patterns).

    Raises:
        ValueError: a path that is not absolute, a working directory that is not writable.
        TypeError: a field of the wrong type.
    """

    cwd: str
    writable: tuple[str, ...]
    protected: tuple[tuple[str, bool], ...] = ()
    read_only: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()
    network: NetworkRules | None = None
    secrets: tuple[str, ...] = SECRET_VARIABLES
    private: tuple[str, ...] = field(default=PRIVATE_FOLDERS, init=False)

    def __post_init__(self) -> None:
        given: dict[str, object] = {
            "writable": self.writable,
            "protected": self.protected,
            "read_only": self.read_only,
            "unreadable": self.unreadable,
            "secrets": self.secrets,
        }
        for name, value in given.items():
            if not isinstance(value, tuple):
                raise TypeError(f"SandboxProfile: {name}: expected a tuple; got {preview(value)}")
        pairs: tuple[object, ...] = self.protected
        if not all(
            isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], bool) for pair in pairs
        ):
            raise TypeError(
                f"SandboxProfile: protected: expected (path, is_folder) pairs; got {preview(pairs)}"
            )
        paths: list[tuple[str, object]] = [
            ("cwd", self.cwd),
            *(("writable", path) for path in self.writable),
            *(("protected", path) for path, _ in self.protected),
            *(("read_only", path) for path in self.read_only),
            *(("unreadable", path) for path in self.unreadable),
        ]
        for name, path in paths:
            if not (isinstance(path, str) and path.startswith("/") and "\x00" not in path):
                raise ValueError(f"SandboxProfile: {name}: expected absolute paths; got {preview(path)}")
        if not any(is_under(self.cwd, folder) for folder in self.writable):
            raise ValueError(
                f"SandboxProfile: cwd: expected a path inside a writable folder; got {self.cwd!r}"
            )
        network: object = self.network
        if network is not None and not isinstance(network, NetworkRules):
            raise TypeError(f"SandboxProfile: network: expected NetworkRules or None; got {preview(network)}")
        names: tuple[object, ...] = self.secrets
        if not all(isinstance(name, str) for name in names):
            raise TypeError(f"SandboxProfile: secrets: expected strings; got {preview(names)}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data, for display and logs."""
        return {
            "cwd": self.cwd,
            "writable": list(self.writable),
            "protected": [path + "/" if folder else path for path, folder in self.protected],
            "read_only": list(self.read_only),
            "unreadable": list(self.unreadable),
            "private": list(self.private),
            "network": None
            if self.network is None
            else {"allowed": list(self.network.texts), "refused": len(self.network.refused)},
            "secrets": list(self.secrets),
        }


def _real(path: str) -> str:
    return os.path.realpath(normalize_path(path))


def profile_from_view(
    view: SandboxView, *, cwd: str, secrets: Iterable[str], writable: Iterable[str] = ()
) -> SandboxProfile:
    """The profile a policy's view asks for.

    Writable: the working directory, the policy's working directories (its additional directories), the
    folders of allow rules of editing tools written as a whole tree (``Edit(//data/out/**)``) or as one
    existing file, and ``writable``; only what exists, and never ``/`` itself (no walls would be left).

    Protected: each protected name at the top of each writable folder, and of the home directory when a
    writable folder holds it, and the settings files inside them: read-only, and blocked where missing.
    The names that only take effect in the home directory (``HOME_FILES``: shell start-up files,
    ``.gitconfig``, ...) are blocked only there; at the top of other folders they are kept read-only where
    they exist.

    Read-only where they exist: the paths of deny and ask rules of tools that are not readers, written as
    one path or a whole tree (``Edit(./config/**)``). Unreadable: the same for reading tools
    (``Read(~/.ssh/**)``), unless the path holds a writable folder.
    """
    working = _real(cwd)
    named = [normalize_path(path) for path in view.directories]
    named.extend(normalize_path(folder) for rule in view.path_rules if (folder := _granted(rule)) is not None)
    named.extend(normalize_path(path) for path in writable)
    roots = [working, *(os.path.realpath(path) for path in named)]
    chosen = [working, *(os.path.realpath(path) for path in named if not _linked_from(path, roots))]
    folders = tuple(path for path in dict.fromkeys(chosen) if path != "/" and os.path.exists(path))
    if working not in folders or not os.path.isdir(working):
        raise ValueError(f"Sandbox: cwd: expected an existing folder; got {cwd!r}")
    directories = [path for path in folders if os.path.isdir(path)]
    protected, read_only = _protected(view, directories)
    unreadable: list[str] = []
    for rule in view.path_rules:
        path, shape = rule.pattern.fixed_part
        if rule.decision == "allow" or shape not in ("exact", "tree"):
            continue
        if rule.reads:
            unreadable.append(path)
        elif any(is_under(path, folder) for folder in directories):
            read_only.append(path)
    blocked = [path for path, _ in protected]
    return SandboxProfile(
        cwd=working,
        writable=folders,
        protected=protected,
        read_only=_outermost(path for path in read_only if not any(is_under(path, b) for b in blocked)),
        unreadable=_outermost(path for path in unreadable if not any(is_under(f, path) for f in folders)),
        network=_network(view),
        secrets=tuple(secrets),
    )


def _protected(view: SandboxView, folders: list[str]) -> tuple[tuple[tuple[str, bool], ...], list[str]]:
    """The protected paths (with whether each is a folder), and the home-only names elsewhere."""
    names = [(name, True) for name in sorted(view.protected.directories)]
    names.extend((name, False) for name in sorted(view.protected.files))
    home = _real(view.home)
    tops = list(folders)
    if any(is_under(home, folder) for folder in folders) and home not in tops:
        tops.append(home)  # shell start-up files and the user's settings folder live there
    found: dict[str, bool] = {}
    elsewhere: list[str] = []
    for top in tops:
        for name, is_folder in names:
            path = posixpath.join(top, name)
            if top == home or name not in HOME_FILES:
                found.setdefault(path, is_folder)
            else:
                elsewhere.append(path)
    for path in view.settings_files:
        real = _real(path)
        if any(is_under(real, folder) and real != folder for folder in folders):
            found.setdefault(real, False)
    return tuple((path, found[path]) for path in _outermost(found)), elsewhere


def _linked_from(path: str, roots: Iterable[str]) -> bool:
    """Whether a symbolic link on the way to ``path`` lies in one of the folders that may become writable:
    a sandboxed command could have made it, to lead a rule or folder that names a path there to anywhere
    on the host (``out -> /run``), so such a path is not made writable."""
    folders = list(roots)
    current = "/"
    for name in path.strip("/").split("/"):
        current = posixpath.join(current, name)
        if os.path.islink(current):
            parent = os.path.realpath(posixpath.dirname(current))
            if any(is_under(parent, folder) for folder in folders):
                return True
    return False


def _granted(rule: PathRuleView) -> str | None:
    """The folder (or file) an allow rule of an editing tool lets the agent write, if the mounts can say
    exactly that much: a whole tree, or one existing file. Any narrower shape grants nothing."""
    if rule.decision != "allow" or not rule.edits:
        return None
    path, shape = rule.pattern.fixed_part
    if shape == "tree" or (shape == "exact" and os.path.isfile(path)):
        return path
    return None


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """The paths without those inside another of them (a read-only folder covers what it holds)."""
    unique = sorted(set(paths))
    kept: list[str] = []
    for path in unique:
        if not any(is_under(path, outer) for outer in kept):
            kept.append(path)
    return tuple(kept)


def _network(view: SandboxView) -> NetworkRules | None:
    allowed = tuple(
        rule.pattern for rule in view.domain_rules if rule.decision == "allow" and rule.pattern is not None
    )
    if not allowed:
        return None
    refused = tuple(rule.pattern for rule in view.domain_rules if rule.decision != "allow")
    texts = tuple(
        rule.text for rule in view.domain_rules if rule.decision == "allow" and rule.pattern is not None
    )
    return NetworkRules(allowed, refused, texts)
