"""PermissionSettings: the seven settings sources of a layered policy, merged, and answers that persist."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

from ask_permissions._errors import preview
from ask_permissions._vocabulary import SETTINGS_SOURCES, LayeredMode, SettingsSourceName

from ._atomic import update_json_file
from ._sources import (
    RUNTIME_SOURCES,
    SettingsSource,
    host_key_names,
    read_settings_file,
    runtime_source,
    settings_from_data,
)

__all__ = ["AGENT_DIR", "LOCAL_SETTINGS", "PROJECT_SETTINGS", "USER_SETTINGS", "PermissionSettings"]

AGENT_DIR: Final = ".agent"
"""The folder settings live in: ``<project>/.agent/`` and ``~/.agent/``."""
PROJECT_SETTINGS: Final = "settings.json"
LOCAL_SETTINGS: Final = "settings.local.json"
USER_SETTINGS: Final = "settings.json"


@final
class PermissionSettings:
    """The settings sources of a layered policy, highest priority first: managed, user, project, local, cli,
    command, session.

    Rules of every source merge with deny beating ask beating allow, whatever the source ("denied at any
    level, no other level can allow it"). For ``defaultMode`` the highest source that sets it wins;
    ``disableBypassPermissionsMode`` set by any source disables bypass mode, and nothing below can undo a
    managed one. ``version`` grows with every change, so a policy knows when to rebuild its rules.

    Thread-safe: a private lock guards the sources; readers get the frozen source values.

    Args:
        sources: the sources (at most one of each name; missing ones are empty).
        project_dir: the project's directory (runtime sources anchor their path rules there).
        local_path: the file ``persist`` writes (``<project>/.agent/settings.local.json`` by default).
        host_keys: top-level keys of the host's own that the files may hold (read again by ``persist``).
    """

    __slots__ = ("_host_keys", "_local_path", "_lock", "_project_dir", "_sources", "_version")

    def __init__(
        self,
        sources: Iterable[SettingsSource] = (),
        *,
        project_dir: str | os.PathLike[str] | None = None,
        local_path: str | os.PathLike[str] | None = None,
        host_keys: Iterable[str] = (),
    ) -> None:
        project = os.path.abspath(os.fspath(project_dir) if project_dir is not None else os.getcwd())
        self._host_keys: Final = host_key_names(host_keys)
        by_name: dict[SettingsSourceName, SettingsSource] = {}
        for source in sources:
            if not isinstance(source, SettingsSource):
                raise TypeError(f"sources: expected SettingsSource values; got {preview(source)}")
            if source.name in by_name:
                raise ValueError(f"sources: the {source.name!r} source is given twice")
            by_name[source.name] = source
        self._project_dir: Final = project
        self._local_path: Final = os.path.abspath(
            os.fspath(local_path)
            if local_path is not None
            else os.path.join(project, AGENT_DIR, LOCAL_SETTINGS)
        )
        self._sources: dict[SettingsSourceName, SettingsSource] = {
            name: by_name.get(name) or SettingsSource(name, project) for name in SETTINGS_SOURCES
        }
        self._lock: Final = threading.Lock()
        self._version = 0

    @classmethod
    def load(
        cls,
        *,
        project_dir: str | os.PathLike[str],
        user_dir: str | os.PathLike[str] | None = None,
        managed_path: str | os.PathLike[str] | None = None,
        cli: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        host_keys: Iterable[str] = (),
    ) -> PermissionSettings:
        """Read every file source: the project's and the local file under ``<project_dir>/.agent/``, the
        user's ``<user_dir or ~/.agent>/settings.json``, the managed file when given, and ``cli`` (a file, or
        settings data given directly).

        A missing project, local or user file is an empty source; the managed and cli files, named
        explicitly, must exist. Every file is read strictly: one that cannot be read or parsed, or holds an
        unknown key, stops the loading (its deny rules must never vanish quietly). Path rules are anchored
        per source: ``/path`` is relative to the project directory for project and local, to the user
        directory for user, and to the file's own directory for managed and cli (the project directory for
        cli data).

        Args:
            host_keys: top-level keys of the host's own that the files may hold (``"model"``, say); any
                other key but ``permissions``, ``hooks`` and ``$schema`` is an error.

        Raises:
            InvalidSnapshotError: a malformed file, or an unknown key, naming the file, the field and the
                nearest known key.
            OSError: a file that exists but cannot be read (a folder, no permission, a dangling link), or a
                managed or cli file that does not exist.
        """
        project = os.path.abspath(os.fspath(project_dir))
        user = os.path.abspath(
            os.fspath(user_dir) if user_dir is not None else os.path.join(os.path.expanduser("~"), AGENT_DIR)
        )
        agent = os.path.join(project, AGENT_DIR)
        keys = host_key_names(host_keys)
        sources = [
            read_settings_file("project", os.path.join(agent, PROJECT_SETTINGS), project, host_keys=keys),
            read_settings_file("local", os.path.join(agent, LOCAL_SETTINGS), project, host_keys=keys),
            read_settings_file("user", os.path.join(user, USER_SETTINGS), user, host_keys=keys),
        ]
        if managed_path is not None:
            managed = os.path.abspath(os.fspath(managed_path))
            sources.append(
                read_settings_file(
                    "managed", managed, os.path.dirname(managed), required=True, host_keys=keys
                )
            )
        if isinstance(cli, Mapping):
            sources.append(settings_from_data("cli", cli, project, host_keys=keys))
        elif cli is not None:
            given = os.path.abspath(os.fspath(cli))
            sources.append(
                read_settings_file("cli", given, os.path.dirname(given), required=True, host_keys=keys)
            )
        return cls(sources, project_dir=project, host_keys=keys)

    # -- reading ---------------------------------------------------------------------------------------

    @property
    def project_dir(self) -> str:
        """The project's directory."""
        return self._project_dir

    @property
    def local_path(self) -> str:
        """The file that ``persist`` writes (the local settings)."""
        return self._local_path

    @property
    def version(self) -> int:
        """A number that grows with every change of any source."""
        with self._lock:
            return self._version

    @property
    def sources(self) -> tuple[SettingsSource, ...]:
        """Every source, highest priority first (empty ones included)."""
        with self._lock:
            return tuple(self._sources[name] for name in SETTINGS_SOURCES)

    def source(self, name: SettingsSourceName) -> SettingsSource:
        """One source by name.

        Raises:
            ValueError: not a source name.
        """
        if name not in SETTINGS_SOURCES:
            raise ValueError(
                f"Unknown settings source: {preview(name)}. Valid: {', '.join(SETTINGS_SOURCES)}"
            )
        with self._lock:
            return self._sources[name]

    def snapshot(self) -> tuple[int, tuple[SettingsSource, ...]]:
        """The version and the sources read together (a consistent view for a policy rebuilding its rules)."""
        with self._lock:
            return self._version, tuple(self._sources[name] for name in SETTINGS_SOURCES)

    @property
    def default_mode(self) -> LayeredMode | None:
        """The ``defaultMode`` of the highest source that sets one."""
        for source in self.sources:
            if source.default_mode is not None:
                return source.default_mode
        return None

    @property
    def bypass_disabled(self) -> bool:
        """Whether any source disables ``bypassPermissions`` mode (a higher one cannot be undone below it)."""
        return any(source.disable_bypass for source in self.sources)

    @property
    def bypass_disabled_by(self) -> SettingsSourceName | None:
        """The highest source that disables ``bypassPermissions`` mode, if any."""
        for source in self.sources:
            if source.disable_bypass:
                return source.name
        return None

    @property
    def additional_directories(self) -> tuple[str, ...]:
        """Every source's additional directories, in source order, each once."""
        return tuple(dict.fromkeys(path for source in self.sources for path in source.additional_directories))

    def __repr__(self) -> str:
        counts = {
            source.name: len(source.allow) + len(source.ask) + len(source.deny)
            for source in self.sources
            if not source.is_empty
        }
        return f"<PermissionSettings project_dir={self._project_dir!r} rules={counts!r}>"

    # -- changing ----------------------------------------------------------------------------------------

    def add_rules(
        self,
        source: SettingsSourceName,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
    ) -> PermissionSettings:
        """Add rules to a runtime source (``command`` or ``session``), after its own; returns the settings.

        Raises:
            ValueError: a file source (change its file, or ``persist`` for the local one), or an empty rule.
            TypeError: a rule list that is a string, or holds a non-string.
        """
        if source not in RUNTIME_SOURCES:
            raise ValueError(
                f"add_rules: expected a runtime source ({', '.join(RUNTIME_SOURCES)}); got {preview(source)}"
            )
        added = runtime_source(source, self._project_dir, allow=allow, ask=ask, deny=deny)
        with self._lock:
            current = self._sources[source]
            self._sources[source] = SettingsSource(
                source,
                current.anchor,
                current.path,
                allow=_merged(current.allow, added.allow),
                ask=_merged(current.ask, added.ask),
                deny=_merged(current.deny, added.deny),
            )
            self._version += 1
        return self

    def persist(self, *, allow: Iterable[str]) -> PermissionSettings:
        """Add allow rules to the local settings file, so the next process starts with them; returns the
        settings.

        The file is rewritten atomically (temporary file, fsync, rename), keeping every other key, under a
        lock shared with other processes doing the same; the ``local`` source is reread from it.

        Raises:
            InvalidSnapshotError: the local file is malformed (nothing is written).
            OSError: it cannot be written.
            TypeError, ValueError: as for ``add_rules``.
        """
        added = runtime_source("local", self._project_dir, allow=allow).allow

        def change(data: dict[str, Any]) -> dict[str, Any]:
            permissions = data.get("permissions")
            if permissions is None:
                permissions = {}
            if not isinstance(permissions, dict):
                return data  # left as it is: rereading it below reports what is wrong
            existing = permissions.get("allow")
            listed = list(existing) if isinstance(existing, list) else []
            listed.extend(text for text in added if text not in listed)
            return {**data, "permissions": {**permissions, "allow": listed}}

        update_json_file(self._local_path, change)
        reread = read_settings_file("local", self._local_path, self._project_dir, host_keys=self._host_keys)
        with self._lock:
            self._sources["local"] = reread
            self._version += 1
        return self


def _merged(current: tuple[str, ...], added: tuple[str, ...]) -> tuple[str, ...]:
    return current + tuple(text for text in added if text not in current)
