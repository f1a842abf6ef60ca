"""CommandPattern: shell command specifiers, matched word by word, every sub-command for an allow."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import InvalidSnapshotError
from ask_permissions.rules._command import CommandPattern, compound_allow
from ask_permissions.shell import READ_LIMIT, read_command
from ask_permissions.typing import Decision

from .shell_corpus import ALLOWED_SPECIFIERS, BENIGN, HOSTILE
from .shell_strategies import compositions, shell_noise
from .specifier_snapshots import restored_or_rejected
from .strategies import assert_snapshot_error, json_values
from .timing import cpu_bound

POLICY = tuple(CommandPattern(text) for text in ALLOWED_SPECIFIERS)


def policy_allows(command: str) -> bool:
    """The corpus policy's answer: one specifier matches the whole call, or each sub-command has one."""
    arguments = {"command": command}
    if any(pattern.matches(arguments, "allow") for pattern in POLICY):
        return True
    return compound_allow(arguments, [(pattern.text, pattern) for pattern in POLICY]) is not None


# (specifier, command, whether an allow matches)
ALLOW_MATCHES = [
    pytest.param("npm test", "npm test", True, id="exact"),
    pytest.param("npm test", "npm test --watch", False, id="exact-no-more-words"),
    pytest.param("npm test", "npm  test", True, id="blanks-do-not-matter"),
    pytest.param("npm test", "npm 'test'", True, id="quoting-does-not-matter"),
    pytest.param("npm test", "npm tes", False, id="exact-no-fewer-letters"),
    pytest.param("ls *", "ls", True, id="prefix-alone"),
    pytest.param("ls *", "ls -la /tmp", True, id="prefix-with-words"),
    pytest.param("ls *", "lsof", False, id="prefix-word-boundary"),
    pytest.param("ls*", "lsof -i", True, id="glob-over-the-rest"),
    pytest.param("ls*", "ls", True, id="glob-matches-empty"),
    pytest.param("git diff *", "git diff HEAD~1 -- src", True, id="prefix-two-words"),
    pytest.param("git diff *", "git diffx", False, id="prefix-two-words-boundary"),
    pytest.param("npm run test:*", "npm run test", True, id="legacy-prefix-alone"),
    pytest.param("npm run test:*", "npm run test -- --watch", True, id="legacy-prefix-words"),
    pytest.param("npm run test:*", "npm run test:unit", False, id="legacy-prefix-is-a-word-boundary"),
    pytest.param("npm run test*", "npm run test:unit", True, id="glob-for-script-names"),
    pytest.param("git * main", "git push origin main", True, id="middle-star"),
    pytest.param("git * main", "git main", True, id="middle-star-matches-no-words"),
    pytest.param("git * main", "git push origin main -f", False, id="middle-star-then-exact-end"),
    pytest.param("git * main", 'git "push main"', False, id="middle-star-does-not-split-words"),
    pytest.param("cat *.md", "cat README.md", True, id="star-inside-word"),
    pytest.param("cat *.md", "cat docs/a b.md", False, id="star-inside-word-one-word-only"),
    pytest.param("cat *.md", "cat 'docs/a b.md'", True, id="star-inside-quoted-word"),
    pytest.param("echo '*'", "echo '*'", True, id="quoted-star-literal"),
    pytest.param("echo '*'", "echo hello", False, id="quoted-star-not-wildcard"),
    pytest.param("git status", 'git "status; rm -rf ~"', False, id="argument-with-operators"),
    pytest.param("git status *", 'git "status; rm -rf ~"', False, id="prefix-argument-with-operators"),
    pytest.param("git status", "git status && git status", True, id="every-sub-command"),
    pytest.param("git status", "git status && ls", False, id="not-every-sub-command"),
    pytest.param("git status", "FOO=1 git status", False, id="assignment-never-allowed"),
    pytest.param("git status", "timeout 5 git status", True, id="wrapper-stripped"),
    pytest.param("git status", "bash -c 'git status'", True, id="script-read"),
    pytest.param("git status", "echo --short | xargs git status", False, id="xargs-appends-to-exact"),
    pytest.param("ls *", "find . | xargs ls", False, id="xargs-under-other-allow"),
    pytest.param("ls *", "xargs ls", True, id="xargs-open-ended"),
    pytest.param("git status", "/usr/bin/git status", False, id="allow-name-exact"),
    pytest.param("git status", "GIT status", False, id="allow-name-case"),
    pytest.param("git status", "git status $(x)", False, id="not-understood"),
    pytest.param("*", "anything at all", True, id="star-matches-all"),
    pytest.param("*", "a; $(b)", False, id="star-still-needs-understanding"),
    pytest.param("* --version", "node --version", True, id="leading-star"),
]

# (specifier, command, whether a deny matches)
DENY_MATCHES = [
    pytest.param("rm *", "rm -rf ~", True, id="plain"),
    pytest.param("rm *", "ls && rm -rf ~", True, id="any-sub-command"),
    pytest.param("rm *", "echo $(rm -rf ~)", True, id="substitution"),
    pytest.param("rm *", "echo `rm -rf ~`", True, id="backticks"),
    pytest.param("rm *", "(rm -rf ~)", True, id="subshell"),
    pytest.param("rm *", "bash -c 'rm -rf ~'", True, id="script"),
    pytest.param("rm *", "FOO=1 rm x", True, id="assignments-skipped"),
    pytest.param("rm *", "timeout 5 rm x", True, id="wrapper"),
    pytest.param("rm *", "/bin/rm x", True, id="by-path"),
    pytest.param("rm *", "RM x", True, id="case-insensitive-name"),
    pytest.param("rm *", "\\rm x", True, id="escaped-name"),
    pytest.param("rm *", "r'm' x", True, id="quoted-name"),
    pytest.param("rm *", "sudo -u root rm x", True, id="sudo"),
    pytest.param("rm *", "xargs -0 rm", True, id="xargs-options"),
    pytest.param("rm *", "find . -exec rm {} +", True, id="find-exec"),
    pytest.param("rm *", "/bin/r? x", True, id="glob-name-may-be-anything"),
    pytest.param("rm *", "$'\\x72m' x", True, id="ansi-c"),
    pytest.param("rm *", "ls\uff1brm x", True, id="look-alike-separator"),
    pytest.param("rm *", "ls " + "a" * READ_LIMIT, True, id="unreadable-length"),
    pytest.param("rm *", "ls " + "a" * 200_000, False, id="long-within-the-read-limit"),
    pytest.param("rm *", "cat <<'EOF' > x\nit's\nEOF\nrm -rf ~", True, id="line-after-heredoc-with-quote"),
    pytest.param("rm *", "$RM -rf x", True, id="name-is-a-variable"),
    pytest.param("rm *", "${RM} -rf x", True, id="name-is-a-braced-variable"),
    pytest.param("rm *", '"$RM" -rf x', True, id="name-is-a-quoted-variable"),
    pytest.param("rm *", "$(echo rm) -rf x", True, id="name-is-a-substitution"),
    pytest.param("rm *", "`echo rm` -rf x", True, id="name-is-a-backtick"),
    pytest.param("rm *", "x=rm; $x -rf x", True, id="name-set-before"),
    pytest.param("rm *", "sudo $RM -rf x", True, id="launched-variable"),
    pytest.param("rm *", "timeout 5 $RM x", True, id="wrapped-variable"),
    pytest.param("rm *", "nice -- rm -rf x", True, id="nice-end-of-options"),
    pytest.param("rm *", "nice -n 5 -- rm -rf x", True, id="nice-options-then-end"),
    pytest.param("rm *", "f() { rm -rf x; }; f", True, id="function-body"),
    pytest.param("rm *", "function f { rm -rf x; }; f", True, id="function-keyword-body"),
    pytest.param("rm *", "{rm,-rf,build}", True, id="name-is-a-brace-expansion"),
    pytest.param(
        "rm *", "env -u A -u B -u C -u D -u E -u F rm -rf build", True, id="options-before-the-command"
    ),
    pytest.param("rm *", "sudo " + "-u root " * 40 + "rm -rf x", True, id="more-options-than-readings"),
    pytest.param("rm *", "pkexec rm -rf x", True, id="pkexec"),
    pytest.param("rm *", "systemd-run rm -rf x", True, id="systemd-run"),
    pytest.param("rm *", "eatmydata rm -rf x", True, id="eatmydata"),
    pytest.param("rm *", "fakeroot rm -rf x", True, id="fakeroot"),
    pytest.param("rm *", "screen -dm rm -rf x", True, id="screen"),
    pytest.param("rm *", "tmux new 'rm -rf x'", True, id="tmux"),
    pytest.param("rm *", "sg staff -c 'rm -rf x'", True, id="sg"),
    pytest.param("rm *", "trap 'rm -rf build' EXIT", True, id="trap"),
    pytest.param("rm *", "bash <<< 'rm -rf build'", True, id="here-string"),
    pytest.param("rm *", "cat <<< hello", False, id="here-string-of-text"),
    pytest.param("rm *", "sudo apt install a b c d e f g", False, id="launcher-with-many-arguments"),
    pytest.param("rm *", "echo rm", False, id="argument-is-not-a-command"),
    pytest.param("rm *", "echo $RM", False, id="variable-as-argument"),
    pytest.param("rm *", "rmdir x", False, id="other-program"),
    pytest.param("rm -rf *", "rm x", False, id="arguments-compared"),
    pytest.param("git push *", "git push", True, id="prefix-alone"),
    pytest.param("git push", "git push --force", False, id="exact-stays-exact"),
]


class TestAllowMatching:
    """An allow specifier matches when it matches every sub-command of an understood command."""

    @pytest.mark.parametrize(("specifier", "command", "expected"), ALLOW_MATCHES)
    def test_allow(self, specifier: str, command: str, expected: bool) -> None:
        """Each specifier allows exactly the commands the rule language says."""
        assert CommandPattern(specifier).matches_command(command, "allow") is expected

    @pytest.mark.parametrize(("name", "command"), HOSTILE, ids=[name for name, _ in HOSTILE])
    def test_hostile_corpus_refused(self, name: str, command: str) -> None:
        """No hostile command is allowed by the corpus policy, by one rule or sub-command by sub-command."""
        assert not policy_allows(command), name

    @pytest.mark.parametrize(("name", "command"), BENIGN, ids=[name for name, _ in BENIGN])
    def test_benign_corpus_allowed(self, name: str, command: str) -> None:
        """Every benign command is allowed by the corpus policy."""
        assert policy_allows(command), name

    def test_corpus_sizes(self) -> None:
        """The corpus holds at least 150 hostile and 50 benign commands."""
        assert len(HOSTILE) >= 150
        assert len(BENIGN) >= 50

    @given(compositions())
    @settings(max_examples=300, deadline=None)
    def test_compositions(self, composition: tuple[str, bool]) -> None:
        """A composed command line is allowed exactly when every part of it is allowed."""
        line, every_part_allowed = composition
        assert policy_allows(line) is every_part_allowed


class TestDenyMatching:
    """A deny or ask specifier matches when it matches any command visible in the call."""

    @pytest.mark.parametrize("decision", ["deny", "ask"])
    @pytest.mark.parametrize(("specifier", "command", "expected"), DENY_MATCHES)
    def test_deny(self, specifier: str, command: str, expected: bool, decision: Decision) -> None:
        """Deny and ask read commands alike, generously."""
        assert CommandPattern(specifier).matches_command(command, decision) is expected

    def test_deny_does_not_need_understanding(self) -> None:
        """A deny fires on a command no allow may match."""
        parsed = read_command("ls; rm -rf $HOME")
        assert not parsed.understood
        assert CommandPattern("rm *").matches_command(parsed, "deny")


SUBJECTS = [
    pytest.param(None, {"command": "git status"}, "allow", True, id="command-key"),
    pytest.param(None, {"cmd": "git status"}, "allow", True, id="cmd-key"),
    pytest.param(None, "git status", "allow", True, id="plain-string"),
    pytest.param(None, {"script": "git status"}, "allow", False, id="other-key-ignored"),
    pytest.param(None, {"command": ["git", "status"]}, "allow", False, id="not-a-string"),
    pytest.param(None, None, "allow", False, id="no-arguments"),
    pytest.param(None, 42, "allow", False, id="not-a-mapping"),
    pytest.param(None, {"command": "git status", "cmd": "rm -rf ~"}, "allow", False, id="both-keys-allow"),
    pytest.param(None, {"command": "git status", "cmd": 1}, "allow", False, id="both-keys-one-odd"),
    pytest.param("script", {"script": "git status"}, "allow", True, id="declared-key"),
    pytest.param("script", {"command": "git status"}, "allow", False, id="declared-key-only"),
    pytest.param(None, {"command": "ls", "cmd": "git status"}, "deny", True, id="both-keys-deny"),
    pytest.param(None, {"command": 1, "cmd": "git status"}, "deny", True, id="deny-skips-odd-values"),
    pytest.param(None, {}, "deny", False, id="deny-no-subject"),
    pytest.param(None, {"command": ["git", "status"]}, "deny", True, id="deny-reads-an-argv"),
    pytest.param(
        None, {"command": ["bash", "-lc", "git status"]}, "deny", True, id="deny-reads-an-argv-script"
    ),
    pytest.param(None, {"command": ["ls", "; git status"]}, "deny", True, id="deny-reads-an-argv-joined"),
    pytest.param(None, {"command": ["ls", "-la"]}, "deny", False, id="deny-argv-of-another-program"),
    pytest.param(None, {"command": ["git", 1]}, "deny", False, id="deny-skips-a-mixed-list"),
    pytest.param(None, {"command": ["bash", "-lc", "git status"]}, "allow", False, id="allow-never-an-argv"),
]


class TestBoundedTime:
    """Matching a long command stays quick, for allow and deny alike."""

    @pytest.mark.parametrize(
        ("specifier", "command"),
        [
            pytest.param("* a * a * a * a * b", "a " * 4_999, id="stars-over-many-words"),
            pytest.param("a*a*a*a*a*b", "a" * 9_999, id="stars-in-one-long-word"),
            pytest.param("rm *", "ls; " * 2_500, id="many-sub-commands"),
            pytest.param("rm *", "sudo " * 2_000, id="many-launchers"),
        ],
    )
    def test_quick(self, specifier: str, command: str) -> None:
        """A 10,000-character command is matched in well under a second."""
        pattern = CommandPattern(specifier)
        with cpu_bound(1.0):
            for decision in ("allow", "deny"):
                pattern.matches_command(command, decision)


class TestSubject:
    """The command is the argument at the key, else ``command``/``cmd``, or a plain string argument."""

    @pytest.mark.parametrize(("key", "arguments", "decision", "expected"), SUBJECTS)
    def test_subject(self, key: str | None, arguments: object, decision: Decision, expected: bool) -> None:
        """The specifier reads the documented argument, and never matches a missing or odd one."""
        assert CommandPattern("git status", key=key).matches(arguments, decision) is expected


class TestCompoundAllow:
    """Each sub-command is given the first allow that matches it; all must have one."""

    CANDIDATES = (("rule-git", CommandPattern("git status")), ("rule-ls", CommandPattern("ls *")))

    def test_names_the_rule_of_each_subcommand(self) -> None:
        """The answer pairs every sub-command with the rule that allows it, in order."""
        covered = compound_allow({"command": "git status && ls -la; git status"}, self.CANDIDATES)
        assert covered is not None
        assert [(sub.text, rule) for sub, rule in covered] == [
            ("git status", "rule-git"),
            ("ls -la", "rule-ls"),
            ("git status", "rule-git"),
        ]

    def test_first_matching_rule_wins(self) -> None:
        """When two rules allow a sub-command, the earlier one is named."""
        candidates = (("broad", CommandPattern("ls*")), *self.CANDIDATES)
        covered = compound_allow({"command": "ls && git status"}, candidates)
        assert covered is not None
        assert [rule for _, rule in covered] == ["broad", "rule-git"]

    @pytest.mark.parametrize(
        "command",
        ["git status && rm -rf ~", "git status; ls $(x)", "FOO=1 ls && git status", ""],
        ids=["one-not-allowed", "not-understood", "assignment", "empty"],
    )
    def test_none_when_any_is_left(self, command: str) -> None:
        """No answer when a sub-command has no allow, or the command is not understood."""
        assert compound_allow({"command": command}, self.CANDIDATES) is None

    def test_patterns_reading_other_arguments_are_not_combined(self) -> None:
        """Sub-commands of one argument are never allowed by a specifier that reads another."""
        candidates = (("git", CommandPattern("git status")), ("ls", CommandPattern("ls *", key="script")))
        assert compound_allow({"command": "git status && ls"}, candidates) is None
        assert compound_allow({"script": "ls && ls"}, candidates) is not None

    def test_ambiguous_subject(self) -> None:
        """With both ``command`` and ``cmd`` present, the compound rule does not guess."""
        assert compound_allow({"command": "ls", "cmd": "ls"}, self.CANDIDATES) is None


class TestDescription:
    """What a pattern says about itself, for the dangerous-tool guard and for lint."""

    @pytest.mark.parametrize(
        ("specifier", "unrestricted", "open_ended", "leading_star"),
        [
            pytest.param("*", True, True, True, id="star"),
            pytest.param("* *", True, True, True, id="stars"),
            pytest.param("**", True, True, True, id="double-star"),
            pytest.param("git status", False, False, False, id="exact"),
            pytest.param("ls *", False, True, False, id="prefix"),
            pytest.param("npm run test:*", False, True, False, id="legacy-prefix"),
            pytest.param("ls*", False, True, False, id="glob-rest"),
            pytest.param("git * main", False, False, False, id="middle-star"),
            pytest.param("* --version", False, False, True, id="leading-star"),
            pytest.param("'*'", False, False, False, id="quoted-star"),
        ],
    )
    def test_description(
        self, specifier: str, unrestricted: bool, open_ended: bool, leading_star: bool
    ) -> None:
        """``*`` alone is no restriction; any real specifier is one."""
        pattern = CommandPattern(specifier)
        assert pattern.is_unrestricted is unrestricted
        assert pattern.is_open_ended is open_ended
        assert pattern.starts_with_wildcard is leading_star
        assert pattern.kind == "shell"

    def test_value_semantics(self) -> None:
        """Patterns are frozen values compared by text and key, changed with ``dataclasses.replace``."""
        pattern = CommandPattern("git status")
        assert pattern == CommandPattern("git status")
        assert hash(pattern) == hash(CommandPattern("git status"))
        assert pattern != CommandPattern("git status", key="script")
        changed = dataclasses.replace(pattern, key="script")
        assert changed.key == "script"
        assert changed.matches({"script": "git status"}, "allow")
        with pytest.raises(dataclasses.FrozenInstanceError):
            pattern.text = "ls"  # type: ignore[misc]
        assert repr(pattern) == "CommandPattern(text='git status', key=None)"


class TestConstruction:
    """A specifier that is not one plain command is refused at construction, naming the text."""

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            pytest.param("", "is empty", id="empty"),
            pytest.param("  ", "is empty", id="blank"),
            pytest.param("git status && npm test", "more than one command", id="compound"),
            pytest.param("git status; rm", "more than one command", id="semicolon"),
            pytest.param("FOO=1 make", "assignment 'FOO=1'", id="assignment"),
            pytest.param("ls > out", "redirection", id="redirection"),
            pytest.param("ls $(pwd)", "command substitution", id="substitution"),
            pytest.param("ls $HOME", "parameter expansion", id="parameter"),
            pytest.param("ls 'x", "unterminated", id="unterminated"),
            pytest.param("timeout 5 make", "wrapper 'timeout'", id="wrapper"),
            pytest.param("bash -c 'ls'", "bash -c script", id="script"),
            pytest.param("ls # all", "comment", id="comment"),
            pytest.param("ls\uff1bx", "look-alike", id="look-alike"),
        ],
    )
    def test_invalid(self, text: str, problem: str) -> None:
        """The ValueError names the specifier and what is wrong with it."""
        with pytest.raises(
            ValueError, match=f"command specifier {re.escape(repr(text))}: .*{re.escape(problem)}"
        ):
            CommandPattern(text)

    @pytest.mark.parametrize("text", [None, 1, b"ls", ["ls"]], ids=["none", "int", "bytes", "list"])
    def test_not_a_string(self, text: Any) -> None:
        """The text must be a string."""
        with pytest.raises(TypeError, match="text: expected a string"):
            CommandPattern(text)

    @pytest.mark.parametrize(
        ("key", "error"), [("", ValueError), (1, TypeError), (b"x", TypeError)], ids=["empty", "int", "bytes"]
    )
    def test_bad_key(self, key: Any, error: type[Exception]) -> None:
        """The key is an argument name or None."""
        with pytest.raises(error, match="key: expected"):
            CommandPattern("ls", key=key)

    @given(shell_noise | st.text(max_size=40))
    @settings(max_examples=300, deadline=None)
    def test_any_text_builds_or_raises_value_error(self, text: str) -> None:
        """Any text either makes a pattern that can match or is refused with ValueError."""
        try:
            pattern = CommandPattern(text)
        except ValueError as error:
            message = str(error)
        else:
            assert pattern.matches_command(text, "deny") in (True, False)
            assert pattern.matches_command(text, "allow") in (True, False)
            return
        assert message.startswith("command specifier ")


class TestSnapshots:
    """Patterns round-trip through snapshots; a bad snapshot names its path."""

    @pytest.mark.parametrize(
        "pattern",
        [CommandPattern("git status"), CommandPattern("npm run test:*", key="script"), CommandPattern("*")],
        ids=["plain", "keyed", "star"],
    )
    def test_round_trip(self, pattern: CommandPattern) -> None:
        """``from_snapshot(to_snapshot())`` is the same pattern."""
        snapshot = pattern.to_snapshot()
        assert snapshot["type"] == "command"
        assert CommandPattern.from_snapshot(snapshot) == pattern

    def test_format(self) -> None:
        """The snapshot holds the type, the text and, when set, the key."""
        assert CommandPattern("ls *").to_snapshot() == {"type": "command", "text": "ls *"}
        assert CommandPattern("ls *", key="k").to_snapshot() == {
            "type": "command",
            "text": "ls *",
            "key": "k",
        }

    @pytest.mark.parametrize(
        ("snapshot", "path", "match"),
        [
            pytest.param({"type": "command"}, "p.text", "required", id="missing-text"),
            pytest.param({"type": "path", "text": "x"}, "p.type", "'command'", id="wrong-type"),
            pytest.param({"type": "command", "text": 1}, "p.text", "a string", id="text-not-a-string"),
            pytest.param({"type": "command", "text": "a && b"}, "p.text", "more than one", id="invalid-text"),
            pytest.param({"type": "command", "text": "ls", "key": ""}, "p.key", "non-empty", id="empty-key"),
            pytest.param({"type": "command", "text": "ls", "x": 1}, "p.x", "no such key", id="unknown-key"),
            pytest.param([], "p", "an object", id="not-an-object"),
        ],
    )
    def test_invalid(self, snapshot: Any, path: str, match: str) -> None:
        """Every problem raises InvalidSnapshotError at the path of the bad field."""
        assert_snapshot_error(lambda data: CommandPattern.from_snapshot(data, "p"), snapshot, path, match)

    @given(json_values)
    @settings(max_examples=200, deadline=None)
    def test_fuzzed_snapshots(self, snapshot: Any) -> None:
        """Any JSON is restored or refused with InvalidSnapshotError, never another exception."""
        restored = restored_or_rejected(CommandPattern.from_snapshot, snapshot)
        assert restored is None or isinstance(restored, CommandPattern)

    def test_snapshot_error_is_a_value_error(self) -> None:
        """InvalidSnapshotError is also a ValueError, as the package documents."""
        with pytest.raises(InvalidSnapshotError) as caught:
            CommandPattern.from_snapshot({"type": "command", "text": ""})
        assert isinstance(caught.value, ValueError)
        assert caught.value.path == "text"
