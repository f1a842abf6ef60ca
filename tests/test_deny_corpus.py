"""Deny rules meet a denied program however the command spells it: the deny/ask hostile corpus."""

from __future__ import annotations

import pytest

from ask_permissions import (
    ApprovalQueue,
    LayeredPolicy,
    PermissionRules,
    PermissionSettings,
    SettingsSource,
    ToolCall,
)
from ask_permissions.shell import read_command
from ask_permissions.typing import LayeredMode

from .deny_corpus import BENIGN, DENIES, HOSTILE, UNREAD

PROJECT = "/work/project"


def _rules(decision: str) -> PermissionRules:
    return PermissionRules.from_text(**{decision: list(DENIES)})  # type: ignore[arg-type]


def _policy(mode: LayeredMode) -> LayeredPolicy:
    source = SettingsSource("project", PROJECT, None, deny=DENIES, allow=("Bash(ls *)", "Bash(cat *)"))
    settings = PermissionSettings([source], project_dir=PROJECT)
    return LayeredPolicy(queue=ApprovalQueue(), settings=settings, mode=mode, cwd=PROJECT)


HOSTILE_IDS = [name for name, _ in HOSTILE]
BENIGN_IDS = [name for name, _ in BENIGN]
SEEN = [(name, command) for name, command in HOSTILE if name not in UNREAD]
FAILS_CLOSED = [(name, command) for name, command in HOSTILE if name in UNREAD]


class TestHostile:
    """Every hostile command meets the deny rules, and is never allowed, in default or bypassPermissions."""

    @pytest.mark.parametrize(("name", "command"), HOSTILE, ids=HOSTILE_IDS)
    @pytest.mark.parametrize("decision", ["deny", "ask"])
    def test_rules_meet_it(self, name: str, command: str, decision: str) -> None:
        """A deny (or ask) rule of rm and curl matches the command."""
        assert _rules(decision).classify("Bash", {"command": command}) == decision, name

    @pytest.mark.parametrize(("name", "command"), SEEN, ids=[name for name, _ in SEEN])
    def test_the_full_reading_sees_it(self, name: str, command: str) -> None:
        """The rules meet it because the full reading sees the program, not because it left text unread."""
        reading = read_command(command)
        # A download piped into a shell (`curl … | sh`) also fails closed; the program is still seen.
        assert reading.fully_read or reading.piped_script, (name, reading.why)
        names = {
            sub.words[0].rsplit("/", 1)[-1].casefold() if not sub.name_is_glob else "*"
            for sub in reading.visible
            if sub.words
        }
        assert names & {"rm", "curl", "*"}, (name, names)

    @pytest.mark.parametrize(("name", "command"), FAILS_CLOSED, ids=[name for name, _ in FAILS_CLOSED])
    def test_what_no_check_reads_fails_closed(self, name: str, command: str) -> None:
        """A shell or an interpreter that runs what another command writes, unseen by the reading, leaves
        the command not fully read (a script it runs, or text outside the grammar)."""
        reading = read_command(command)
        assert not reading.fully_read, name
        assert reading.piped_script or reading.unparsed is not None, (name, reading.why)

    @pytest.mark.parametrize(("name", "command"), HOSTILE, ids=HOSTILE_IDS)
    @pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
    def test_never_proceeds(self, name: str, command: str, mode: LayeredMode) -> None:
        """The layered policy blocks it at the deny rule, in default and in bypassPermissions."""
        record = _policy(mode).evaluate(ToolCall("Bash", {"command": command}, "call-1"))
        assert record.verdict != "allow", name
        assert record.layer == "deny_rule", (name, record.layer, record.reason)

    @pytest.mark.parametrize(("name", "command"), HOSTILE, ids=HOSTILE_IDS)
    def test_as_an_argument_vector(self, name: str, command: str) -> None:
        """The same command given as ``bash -c`` in an argument vector meets the deny rules too."""
        arguments = {"command": ["bash", "-c", command]}
        assert _rules("deny").classify("Bash", arguments) == "deny", name


class TestBenign:
    """Commands that only mention rm or curl, or run look-alike programs, meet no deny rule."""

    @pytest.mark.parametrize(("name", "command"), BENIGN, ids=BENIGN_IDS)
    def test_rules_do_not_meet_it(self, name: str, command: str) -> None:
        """Neither deny rule matches: a heredoc's body and a quoted word are data."""
        assert _rules("deny").classify("Bash", {"command": command}) is None, name
