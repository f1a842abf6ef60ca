"""PermissionSettings: settings sources read from real files, merged, added to at run time, persisted."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from pathlib import Path
from typing import Any

import pytest

from ask_permissions import InvalidSnapshotError
from ask_permissions._vocabulary import SETTINGS_SOURCES as SOURCES
from ask_permissions.settings._settings import PermissionSettings

from .threads import JOIN_TIMEOUT


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "home" / ".agent"
    directory.mkdir(parents=True)
    return directory


class TestLoad:
    """Every file source is read from its place; a missing file is an empty source."""

    def test_every_source_from_its_file(self, project: Path, user_dir: Path, tmp_path: Path) -> None:
        """project, local, user, managed and cli files land in their sources, each with its anchor."""
        _write(project / ".agent/settings.json", {"permissions": {"allow": ["Bash(npm test)"]}})
        _write(project / ".agent/settings.local.json", {"permissions": {"ask": ["Bash(git push)"]}})
        _write(user_dir / "settings.json", {"permissions": {"deny": ["Read(~/.ssh/**)"]}})
        managed = _write(tmp_path / "etc/agent/managed.json", {"permissions": {"deny": ["WebFetch"]}})
        cli = _write(tmp_path / "cli/settings.json", {"permissions": {"allow": ["Read"]}})
        settings = PermissionSettings.load(
            project_dir=project, user_dir=user_dir, managed_path=managed, cli=cli
        )
        by_name = {source.name: source for source in settings.sources}
        assert [source.name for source in settings.sources] == list(SOURCES)
        assert by_name["project"].allow == ("Bash(npm test)",)
        assert by_name["local"].ask == ("Bash(git push)",)
        assert by_name["user"].deny == ("Read(~/.ssh/**)",)
        assert by_name["managed"].deny == ("WebFetch",)
        assert by_name["cli"].allow == ("Read",)
        assert (by_name["project"].anchor, by_name["local"].anchor) == (str(project), str(project))
        assert by_name["user"].anchor == str(user_dir)
        assert by_name["managed"].anchor == str(managed.parent)
        assert by_name["cli"].anchor == str(cli.parent)

    def test_missing_files_are_empty_sources(self, project: Path, user_dir: Path) -> None:
        """No file anywhere: every source is empty, nothing fails."""
        settings = PermissionSettings.load(project_dir=project, user_dir=user_dir)
        assert all(source.is_empty for source in settings.sources)

    def test_the_hosts_own_keys_are_declared(self, project: Path, user_dir: Path) -> None:
        """Keys a host declares with host_keys (a model, an environment) are left alone (changed on purpose:
        an undeclared key is refused, so that a misspelt "permisions" cannot load as a file without rules)."""
        path = _write(
            project / ".agent/settings.json",
            {"model": "x", "env": {"A": "1"}, "permissions": {"deny": ["rm"]}},
        )
        settings = PermissionSettings.load(project_dir=project, user_dir=user_dir, host_keys=("model", "env"))
        assert settings.source("project").deny == ("rm",)
        with pytest.raises(InvalidSnapshotError) as raised:
            PermissionSettings.load(project_dir=project, user_dir=user_dir, host_keys=("model",))
        assert str(raised.value) == (
            f"{path}: env: expected no such key (known: $schema, hooks, model, permissions); got {{'A': '1'}}"
        )
        assert raised.value.path == "env"

    @pytest.mark.parametrize(
        ("content", "where"),
        [
            ("{not json", "invalid JSON"),
            (
                '{"permissions": {"allow": ["Bash", 3]}}',
                "permissions.allow[1]: expected a non-empty string; got 3",
            ),
            ('{"permissions": {"allow": "Bash"}}', "permissions.allow: expected an array"),
            ('{"permissions": {"alow": []}}', "permissions.alow: expected no such key"),
            ('{"permissions": {"defaultMode": "yolo"}}', "permissions.defaultMode: expected one of"),
            ('{"permissions": {"disableBypassPermissionsMode": true}}', "disableBypassPermissionsMode"),
            ('{"permissions": {"deny": [""]}}', "permissions.deny[0]: expected a non-empty string"),
            ('{"hooks": []}', "hooks: expected an object"),
            ("[]", "expected a settings object"),
            ('{"permissions": {"allow": [], "allow": []}}', "appears twice"),
        ],
        ids=[
            "not-json",
            "not-a-string",
            "not-a-list",
            "unknown-key",
            "unknown-mode",
            "lock-value",
            "empty-rule",
            "hooks-list",
            "not-an-object",
            "duplicate-key",
        ],
    )
    def test_a_malformed_file_names_the_file_and_field(
        self, project: Path, user_dir: Path, content: str, where: str
    ) -> None:
        """A malformed file is an InvalidSnapshotError naming the file and the bad field."""
        path = _write(project / ".agent/settings.local.json", content)
        with pytest.raises(InvalidSnapshotError, match=re.escape(where)) as caught:
            PermissionSettings.load(project_dir=project, user_dir=user_dir)
        assert str(path) in str(caught.value)

    def test_additional_directories_are_absolute(self, project: Path, user_dir: Path) -> None:
        """Relative additional directories are the source's anchor's; ~ is the home directory."""
        _write(
            project / ".agent/settings.json",
            {"permissions": {"additionalDirectories": ["../shared", "~/notes"]}},
        )
        settings = PermissionSettings.load(project_dir=project, user_dir=user_dir)
        assert settings.additional_directories == (
            str(project.parent / "shared"),
            os.path.join(os.path.expanduser("~"), "notes"),
        )


class TestScalars:
    """For scalar settings the higher source wins; a managed bypass lock cannot be undone below it."""

    def test_the_highest_source_sets_the_mode(self, project: Path, user_dir: Path) -> None:
        """user beats project beats local for defaultMode."""
        _write(user_dir / "settings.json", {"permissions": {"defaultMode": "plan"}})
        _write(project / ".agent/settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
        _write(project / ".agent/settings.local.json", {"permissions": {"defaultMode": "bypassPermissions"}})
        assert PermissionSettings.load(project_dir=project, user_dir=user_dir).default_mode == "plan"

    def test_the_bypass_lock_holds_from_any_source(
        self, project: Path, user_dir: Path, tmp_path: Path
    ) -> None:
        """A managed lock is reported as managed's, and nothing below can turn it off."""
        managed = _write(
            tmp_path / "managed.json", {"permissions": {"disableBypassPermissionsMode": "disable"}}
        )
        _write(project / ".agent/settings.local.json", {"permissions": {"defaultMode": "bypassPermissions"}})
        settings = PermissionSettings.load(project_dir=project, user_dir=user_dir, managed_path=managed)
        assert (settings.bypass_disabled, settings.bypass_disabled_by) == (True, "managed")
        assert not PermissionSettings.load(project_dir=project, user_dir=user_dir).bypass_disabled


class TestRuntimeSources:
    """command and session sources are filled at run time; file sources are not."""

    def test_rules_are_added_once_each_and_bump_the_version(self, project: Path) -> None:
        """add_rules appends new rules after the source's own, each once."""
        settings = PermissionSettings(project_dir=project)
        before = settings.version
        settings.add_rules("session", allow=["Bash(npm test)"]).add_rules(
            "session", allow=["Bash(npm test)", "Read"]
        )
        assert settings.source("session").allow == ("Bash(npm test)", "Read")
        assert settings.version == before + 2

    @pytest.mark.parametrize("source", ["project", "local", "managed", "user", "cli"])
    def test_file_sources_are_not_runtime_sources(self, project: Path, source: str) -> None:
        """A file source is changed through its file (or persist), never add_rules."""
        with pytest.raises(ValueError, match="runtime source"):
            PermissionSettings(project_dir=project).add_rules(source, allow=["Read"])  # type: ignore[arg-type]

    def test_bad_rule_lists(self, project: Path) -> None:
        """A string where a list belongs, or an empty rule, is refused."""
        settings = PermissionSettings(project_dir=project)
        with pytest.raises(TypeError, match="not a string"):
            settings.add_rules("command", deny="rm")
        with pytest.raises(ValueError, match="non-empty"):
            settings.add_rules("command", deny=[""])


class TestPersist:
    """persist writes allow rules to the local file, atomically, keeping everything else."""

    def test_persisted_rules_survive_a_fresh_load(self, project: Path, user_dir: Path) -> None:
        """A fresh PermissionSettings.load reads back what persist wrote, and the other keys stay."""
        local = _write(
            project / ".agent/settings.local.json", {"model": "m", "permissions": {"deny": ["rm"]}}
        )
        settings = PermissionSettings.load(project_dir=project, user_dir=user_dir, host_keys=["model"])
        settings.persist(allow=["Bash(npm test)"])
        settings.persist(allow=["Bash(npm test)", "Read"])
        assert settings.source("local").allow == ("Bash(npm test)", "Read")
        data = json.loads(local.read_text())
        assert data == {"model": "m", "permissions": {"deny": ["rm"], "allow": ["Bash(npm test)", "Read"]}}
        fresh = PermissionSettings.load(project_dir=project, user_dir=user_dir, host_keys=["model"])
        assert fresh.source("local").allow == ("Bash(npm test)", "Read")
        assert fresh.source("local").deny == ("rm",)

    def test_a_malformed_local_file_is_not_overwritten(self, project: Path) -> None:
        """persist refuses to touch a local file it cannot read, and says why."""
        local = _write(project / ".agent/settings.local.json", "[1, 2]")
        with pytest.raises(InvalidSnapshotError, match="a JSON object"):
            PermissionSettings(project_dir=project).persist(allow=["Read"])
        assert local.read_text() == "[1, 2]"

    def test_no_temporary_files_are_left(self, project: Path) -> None:
        """Only the settings file and its lock remain in the folder."""
        PermissionSettings(project_dir=project).persist(allow=["Read"])
        assert sorted(path.name for path in (project / ".agent").iterdir()) == [
            "settings.local.json",
            "settings.local.json.lock",
        ]


def _writer(project: str, count: int) -> None:
    settings = PermissionSettings(project_dir=project)
    for number in range(count):
        settings.persist(allow=[f"Bash(echo {number})"])


def _reader(project: str, stop: Any, torn: Any) -> None:
    path = os.path.join(project, ".agent", "settings.local.json")
    while not stop.is_set():
        try:
            with open(path, encoding="utf-8") as file:
                json.loads(file.read())
        except FileNotFoundError:
            continue
        except ValueError:
            with torn.get_lock():
                torn.value += 1


class TestAcrossProcesses:
    """Writers in other processes never lose each other's rules; readers never see half a file."""

    def test_two_writers_and_a_reader(self, project: Path) -> None:
        """Two processes persisting at once keep all their rules; a reader all along sees whole files."""
        context = multiprocessing.get_context("spawn")
        stop = context.Event()
        torn = context.Value("i", 0)
        reader = context.Process(target=_reader, args=(str(project), stop, torn))
        writers = [context.Process(target=_writer, args=(str(project), 15)) for _ in range(2)]
        reader.start()
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(JOIN_TIMEOUT)
            assert writer.exitcode == 0
        stop.set()
        reader.join(JOIN_TIMEOUT)
        assert reader.exitcode == 0
        assert torn.value == 0
        allow = (
            PermissionSettings.load(project_dir=project, user_dir=project / "nobody").source("local").allow
        )
        assert sorted(allow) == sorted({f"Bash(echo {number})" for number in range(15)})
