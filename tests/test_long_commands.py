"""Long commands: past the read limit a command asks a person, in every mode; within it, it is decided like a
short one (never blocked for its length)."""

from __future__ import annotations

from typing import Any

import pytest

from ask_permissions import (
    ApprovalPolicy,
    ApprovalQueue,
    LayeredPolicy,
    PermissionRules,
    PermissionSettings,
    SessionPermissionGrants,
    SettingsSource,
    ToolCall,
)
from ask_permissions.shell import READ_LIMIT, read_command
from ask_permissions.typing import LayeredMode

PROJECT = "/work/project"
LIMIT_TEXT = f"longer than the read limit of {READ_LIMIT:,} characters"

PAST_LIMIT = "ls " + "a" * READ_LIMIT
"""A command one character past the read limit (``ls`` and one long argument)."""


def file_write(size: int) -> str:
    """An agent writing a file of about ``size`` characters through a quoted heredoc."""
    line = "print('it''s a line with \"quotes\", $dollars and `ticks`')  # ok\n"
    body = line * (size // len(line) + 1)
    return f"cat > notes/report.py <<'EOF'\n{body}EOF"


def commit(size: int) -> str:
    """``git commit -m "…"`` with a message of about ``size`` characters."""
    line = 'Read the shell as bash reads it; escape \\"quotes\\" and \\$dollars.\n'
    return 'git commit -m "' + line * (size // len(line) + 1) + '"'


ALLOW = ("Bash(ls *)", "Bash(git commit *)", "Bash(cat *)")
ASK = ("Bash(git push *)",)
DENY = ("Bash(rm *)", "Bash(curl *)")


def rules() -> PermissionRules:
    return PermissionRules.from_text(allow=list(ALLOW), ask=list(ASK), deny=list(DENY))


def layered(mode: LayeredMode = "default", **kwargs: Any) -> LayeredPolicy:
    source = SettingsSource("project", PROJECT, None, allow=ALLOW, ask=ASK, deny=DENY)
    settings = PermissionSettings([source], project_dir=PROJECT)
    return LayeredPolicy(queue=ApprovalQueue(), settings=settings, mode=mode, cwd=PROJECT, **kwargs)


def bash(command: object) -> ToolCall:
    return ToolCall("Bash", {"command": command}, "call-1")


MODES: list[LayeredMode] = ["default", "acceptEdits", "plan", "bypassPermissions", "auto"]


class TestPastTheReadLimit:
    """A command past the read limit is never allowed and never blocked for its length: it asks."""

    def test_the_reading_says_so(self) -> None:
        """The reading is not fully read, too long, and its reason names the limit."""
        reading = read_command(PAST_LIMIT)
        assert reading.too_long
        assert not reading.fully_read
        assert not reading.understood
        assert reading.why is not None
        assert LIMIT_TEXT in reading.why

    @pytest.mark.parametrize("mode", MODES)
    def test_layered_policy_asks_in_every_mode(self, mode: LayeredMode) -> None:
        """LayeredPolicy asks a person in every mode, with a reason naming the limit (no allow, no deny)."""
        record = layered(mode).evaluate(bash(PAST_LIMIT))
        assert record.verdict == "ask"
        assert record.layer == "read_limit"
        assert record.reason is not None
        assert LIMIT_TEXT in record.reason

    def test_no_reviewer_answers_it(self) -> None:
        """In auto mode the reviewer is never asked: a person is."""
        asked: list[object] = []

        def reviewer(request: object) -> object:
            asked.append(request)
            return {"verdict": "allow"}

        record = layered("auto", reviewer=reviewer).evaluate(bash(PAST_LIMIT))
        assert record.verdict == "ask"
        assert asked == []

    def test_an_argument_vector_past_the_limit_asks(self) -> None:
        """An argument vector whose joined text is past the limit asks as a string does."""
        record = layered("bypassPermissions").evaluate(bash(["ls", "a" * READ_LIMIT]))
        assert (record.verdict, record.layer) == ("ask", "read_limit")

    def test_dont_ask_blocks_saying_so(self) -> None:
        """dontAsk turns the ask into a block by its own rule, and says so."""
        result = layered("dontAsk").before_tool_call(bash(PAST_LIMIT))
        assert result["action"] == "block"
        assert "dontAsk" in result["reason"]

    def test_without_a_person_it_blocks_saying_so(self) -> None:
        """interactive=False turns the ask into a block: no one can approve it."""
        result = layered("bypassPermissions", interactive=False).before_tool_call(bash(PAST_LIMIT))
        assert result["action"] == "block"
        assert "no one can approve it" in result["reason"]

    def test_permission_rules_ask_instead_of_deny(self) -> None:
        """A deny rule that cannot read the command makes it ask, naming the limit; an allow never matches."""
        assert rules().classify("Bash", {"command": PAST_LIMIT}) == "ask"
        match = rules().explain("Bash", {"command": PAST_LIMIT})
        assert match is not None
        assert match.unread is not None
        assert LIMIT_TEXT in match.unread
        only_allows = PermissionRules.from_text(allow=["Bash(ls *)"])
        assert only_allows.classify("Bash", {"command": PAST_LIMIT}) is None

    @pytest.mark.parametrize("mode", [None, "full_access", "ask_before_changes"])
    def test_approval_policy_asks_past_grants_and_modes(self, mode: Any) -> None:
        """ApprovalPolicy asks with the limit's reason, before allow rules, grants and full_access."""
        rules = PermissionRules.from_text(deny=["Bash(rm *)"], allow=["Bash(ls *)"])
        policy = ApprovalPolicy(
            queue=ApprovalQueue(), rules=rules, mode=mode, session_grants=SessionPermissionGrants(["Bash"])
        )
        record = policy.evaluate(bash(PAST_LIMIT))
        assert (record.verdict, record.layer) == ("ask", "read_limit")
        assert record.reason is not None
        assert LIMIT_TEXT in record.reason


class TestWithinTheReadLimit:
    """Within the read limit, a long benign command is decided exactly like a short one."""

    @pytest.mark.parametrize("size", [200_000, 1_000_000])
    def test_a_long_file_write_is_read(self, size: int) -> None:
        """A long heredoc file write is fully read, and its body is data: no deny sees a command in it."""
        reading = read_command(file_write(size))
        assert reading.fully_read
        assert not reading.too_long
        assert [sub.words for sub in reading.visible] == [("cat",)]

    @pytest.mark.parametrize(
        ("long_command", "short_command"),
        [
            pytest.param(file_write(200_000), file_write(100), id="heredoc-file-write-200KB"),
            pytest.param(file_write(1_000_000), file_write(100), id="heredoc-file-write-1MB"),
            pytest.param(commit(50_000), commit(50), id="commit-message-50KB"),
        ],
    )
    def test_rules_decide_it_like_a_short_one(self, long_command: str, short_command: str) -> None:
        """The rules' answer to a long benign command is the answer to its short form."""
        long_answer = rules().classify("Bash", {"command": long_command})
        assert long_answer == rules().classify("Bash", {"command": short_command})

    def test_a_long_commit_is_allowed_as_a_short_one_is(self) -> None:
        """An allow rule allows a 50 KB commit message as it allows a short one."""
        rules = PermissionRules.from_text(allow=["Bash(git commit *)"], deny=["Bash(rm *)"])
        assert rules.classify("Bash", {"command": commit(50_000)}) == "allow"
        assert rules.classify("Bash", {"command": commit(50)}) == "allow"

    @pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
    def test_a_long_file_write_is_not_blocked(self, mode: LayeredMode) -> None:
        """A benign 200 KB file write is not blocked as if a deny matched (as past 100,000 characters)."""
        record = layered(mode).evaluate(bash(file_write(200_000)))
        assert record.verdict != "deny"
        assert record.layer not in ("deny_rule", "read_limit")

    @pytest.mark.parametrize("mode", ["default", "bypassPermissions", "acceptEdits"])
    def test_layered_policy_decides_it_like_a_short_one(self, mode: LayeredMode) -> None:
        """LayeredPolicy's decision (verdict and layer) of a 200 KB file write is the 100-character one's."""
        policy = layered(mode)
        long_record = policy.evaluate(bash(file_write(200_000)))
        short_record = policy.evaluate(bash(file_write(100)))
        assert (long_record.verdict, long_record.layer) == (short_record.verdict, short_record.layer)

    def test_a_line_after_a_long_body_is_read(self) -> None:
        """A command after a long heredoc body is seen: the deny of rm fires on it."""
        rules = PermissionRules.from_text(deny=["Bash(rm *)"])
        command = file_write(200_000) + "\nrm -rf ~"
        assert rules.classify("Bash", {"command": command}) == "deny"
