"""PermissionRules from rule text: ordering, specifiers in the gem's API, compound allows, snapshots."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import InvalidSnapshotError, PermissionRules, PermissionRuleSet
from ask_permissions.rules._command import CommandPattern
from ask_permissions.rules._domains import DomainPattern
from ask_permissions.rules._paths import PathPattern
from ask_permissions.rules._text import RuleTextError

from .shell_corpus import ALLOWED_SPECIFIERS, BENIGN, HOSTILE
from .shell_strategies import compositions

CORPUS_RULES = PermissionRules.from_text(allow=[f"Bash({text})" for text in ALLOWED_SPECIFIERS])


class TestCorpus:
    """The shell corpus, run through PermissionRules built from rule text."""

    @pytest.mark.parametrize(("name", "command"), HOSTILE, ids=[name for name, _ in HOSTILE])
    def test_hostile_never_allowed(self, name: str, command: str) -> None:
        """No hostile command classifies as allow."""
        assert CORPUS_RULES.classify("Bash", {"command": command}) != "allow", name

    @pytest.mark.parametrize(("name", "command"), BENIGN, ids=[name for name, _ in BENIGN])
    def test_benign_allowed(self, name: str, command: str) -> None:
        """Every benign command classifies as allow, and explain names an allow rule for it."""
        match = CORPUS_RULES.explain("Bash", {"command": command})
        assert match is not None, name
        assert match.decision == "allow"
        assert match.rule is not None
        assert match.rule.text in {f"Bash({text})" for text in ALLOWED_SPECIFIERS}

    @given(compositions())
    @settings(max_examples=200, deadline=None)
    def test_compositions(self, composition: tuple[str, bool]) -> None:
        """A composed command is allowed exactly when every part is; otherwise nothing matches it."""
        line, every_part_allowed = composition
        decision = CORPUS_RULES.classify("Bash", {"command": line})
        assert decision == ("allow" if every_part_allowed else None)


class TestOrdering:
    """Deny beats ask beats allow, whatever the order of the lists."""

    def test_deny_ask_allow(self) -> None:
        """The rules are laid out deny first, then ask, then allow, each list in order."""
        rules = PermissionRules.from_text(
            allow=["Bash(git *)", "Read"], ask=["Bash(git push *)"], deny=["Bash(git push --force *)"]
        )
        assert [rule.text for rule in rules.rules] == [
            "Bash(git push --force *)",
            "Bash(git push *)",
            "Bash(git *)",
            "Read",
        ]
        assert rules.classify("Bash", {"command": "git status"}) == "allow"
        assert rules.classify("Bash", {"command": "git push origin"}) == "ask"
        assert rules.classify("Bash", {"command": "git push --force origin"}) == "deny"
        assert rules.classify("Bash", {"command": "git status; git push --force x"}) == "deny"

    def test_compound_allow_names_each_rule(self) -> None:
        """A call no single rule matches is allowed when each sub-command is, naming each rule."""
        rules = PermissionRules.from_text(allow=["Bash(git status)", "Bash(npm test)"])
        match = rules.explain("Bash", {"command": "git status && npm test"})
        assert match is not None
        assert match.decision == "allow"
        assert [(part.subcommand, part.rule.text, part.index) for part in match.parts] == [
            ("git status", "Bash(git status)", 0),
            ("npm test", "Bash(npm test)", 1),
        ]
        assert match.rule is rules.rules[0]
        assert rules.classify("Bash", {"command": "git status; rm -rf ~"}) is None

    def test_compound_allow_in_a_rule_set(self) -> None:
        """A rule set's explain keeps the parts of a compound allow."""
        rule_set = PermissionRuleSet(
            project_rules=PermissionRules.from_text(allow=["Bash(git status)", "Bash(ls *)"])
        )
        match = rule_set.explain("Bash", {"command": "ls && git status"})
        assert match is not None
        assert match.layer == "project"
        assert [part.rule.text for part in match.parts] == ["Bash(ls *)", "Bash(git status)"]

    def test_downgraded_allow_is_no_part_of_a_compound(self) -> None:
        """An allow the dangerous-tool guard downgraded never allows a sub-command."""
        rules = PermissionRules.from_text(allow=["Bash(*)", "Bash(ls *)"])
        assert rules.classify("Bash", {"command": "ls"}) == "ask"


class TestGemApi:
    """The specifier patterns are argument patterns of the gem's API too."""

    def test_add_with_patterns(self) -> None:
        """``allow("bash", CommandPattern(...))`` and the path and domain patterns classify calls."""
        rules = (
            PermissionRules()
            .deny("bash", CommandPattern("rm *"))
            .allow("bash", CommandPattern("git status"))
            .allow("read_file", PathPattern("src/**", root="/w", home="/h"))
            .allow("fetch", DomainPattern("example.com"))
        )
        assert rules.classify("bash", {"command": "git status"}) == "allow"
        assert rules.classify("bash", {"command": "git status; rm -rf ~"}) == "deny"
        assert rules.classify("read_file", {"path": "/w/src/a.py"}) == "allow"
        assert rules.classify("read_file", {"path": "/w/../etc/passwd"}) is None
        assert rules.classify("fetch", {"url": "https://example.com@evil.test/"}) is None
        assert rules.rules[0].argument_matches({"command": "echo $(rm x)"})

    def test_unrestricted_command_pattern_is_dangerous(self) -> None:
        """``CommandPattern("*")`` on a code-executing tool restricts nothing: the guard downgrades it."""
        rules = PermissionRules().allow("bash", CommandPattern("*")).allow("bash", CommandPattern("ls *"))
        assert [rule.dangerous for rule in rules.rules] == [True, False]
        assert rules.classify("bash", {"command": "ls"}) == "ask"

    @pytest.mark.parametrize(
        ("texts", "dangerous"),
        [
            pytest.param(["Bash"], [True], id="bare"),
            pytest.param(["Bash(*)"], [True], id="star"),
            pytest.param(["sh(* *)"], [True], id="stars-on-sh"),
            pytest.param(["Bash(ls *)"], [False], id="specifier"),
            pytest.param(["run"], [True], id="declared-shell-tool"),
            pytest.param(["Read"], [False], id="not-a-shell-tool"),
        ],
    )
    def test_guard(self, texts: list[str], dangerous: list[bool]) -> None:
        """Unrestricted allows of shell tools (built-in or declared) are downgraded; specifiers are not."""
        rules = PermissionRules.from_text(allow=texts, kinds={"run": "shell"})
        assert [rule.dangerous for rule in rules.rules] == dangerous
        assert [rule.effective_decision for rule in rules.rules] == [
            "ask" if d else "allow" for d in dangerous
        ]


class TestSnapshots:
    """Rules from text snapshot and restore to rules that classify alike; gem rules are unchanged."""

    RULES = PermissionRules.from_text(
        allow=["Bash(git status)", "Bash(ls *)", "Read(src/**)", "WebFetch(domain:*.example.com)", "mcp__gh"],
        ask=["Bash(git push *)"],
        deny=["Bash(rm *)", "Read(*.env)", "mcp__*"],
        cwd="/work",
        home="/home/u",
    )

    _calls: st.SearchStrategy[tuple[str, object]] = st.one_of(
        st.tuples(
            st.just("Bash"),
            st.sampled_from([c for _, c in HOSTILE[:60] + BENIGN]).map(lambda c: {"command": c}),
        ),
        st.tuples(
            st.just("Read"),
            st.sampled_from(["src/a", "src/.env", "/etc/x", "../x"]).map(lambda p: {"file_path": p}),
        ),
        st.tuples(
            st.just("WebFetch"),
            st.sampled_from(["https://a.example.com", "https://example.com"]).map(lambda u: {"url": u}),
        ),
        st.tuples(st.sampled_from(["mcp__gh__x", "mcp__other__y"]), st.just({})),
    )

    @given(_calls)
    @settings(max_examples=200, deadline=None)
    def test_round_trip_classifies_alike(self, call: tuple[str, object]) -> None:
        """A restored snapshot gives every call the same decision and the same rule text."""
        restored = PermissionRules.from_snapshot(self.RULES.snapshot())
        assert restored.classify(*call) == self.RULES.classify(*call)
        ours, theirs = self.RULES.explain(*call), restored.explain(*call)
        assert (ours is None) == (theirs is None)
        if ours is not None and theirs is not None:
            assert ours.rule is not None
            assert theirs.rule is not None
            assert ours.rule.text == theirs.rule.text

    def test_snapshot_form(self) -> None:
        """A text rule's snapshot carries its text and its specifier pattern; a gem rule has neither."""
        data = self.RULES.snapshot()
        assert data["rules"][0] == {
            "decision": "deny",
            "tool_pattern": {"type": "string", "value": "Bash"},
            "argument_pattern": {"type": "command", "text": "rm *"},
            "text": "Bash(rm *)",
        }
        gem = PermissionRules().allow("bash", "ls").snapshot()
        assert gem["rules"] == [
            {
                "decision": "allow",
                "tool_pattern": {"type": "string", "value": "bash"},
                "argument_pattern": {"type": "string", "value": "ls"},
            }
        ]

    @pytest.mark.parametrize(
        ("argument_pattern", "path"),
        [
            pytest.param({"type": "glob", "value": "x"}, "rules[0].argument_pattern.type", id="unknown-type"),
            pytest.param(
                {"type": "command", "text": "a && b"}, "rules[0].argument_pattern.text", id="bad-command"
            ),
            pytest.param(
                {"type": "path", "text": "x"}, "rules[0].argument_pattern.root", id="path-without-root"
            ),
        ],
    )
    def test_bad_argument_pattern(self, argument_pattern: object, path: str) -> None:
        """An unknown or invalid argument pattern still raises InvalidSnapshotError at its path."""
        snapshot = {
            "version": 1,
            "rules": [
                {"decision": "allow", "tool_pattern": {"type": "all"}, "argument_pattern": argument_pattern}
            ],
        }
        with pytest.raises(InvalidSnapshotError) as caught:
            PermissionRules.from_snapshot(snapshot)
        assert caught.value.path == path

    def test_specifier_as_tool_pattern_refused(self) -> None:
        """A specifier pattern is no tool pattern."""
        snapshot = {
            "version": 1,
            "rules": [{"decision": "allow", "tool_pattern": {"type": "command", "text": "x"}}],
        }
        with pytest.raises(InvalidSnapshotError) as caught:
            PermissionRules.from_snapshot(snapshot)
        assert caught.value.path == "rules[0].tool_pattern.type"


class TestErrors:
    """Malformed input to ``from_text`` is refused with the text and its place."""

    def test_rule_text_error_names_the_place(self) -> None:
        """The error names the rule text, and a note names its list and position."""
        with pytest.raises(RuleTextError, match=r"rule 'Bash\(a && b\)': command specifier") as caught:
            PermissionRules.from_text(allow=["Bash(ls)"], deny=["Read", "Bash(a && b)"])
        assert caught.value.text == "Bash(a && b)"
        assert "in deny[1]" in caught.value.__notes__

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            pytest.param(
                {"allow": "Bash"}, "allow: expected a list of rule texts, not a string", id="bare-string"
            ),
            pytest.param({"deny": ["Bash", 1]}, r"deny\[1\]: expected a rule text", id="non-string"),
            pytest.param({"ask": 5}, "ask: expected a list of rule texts", id="not-iterable"),
            pytest.param({"kinds": ["run"]}, "kinds: expected a mapping", id="kinds"),
        ],
    )
    def test_type_errors(self, arguments: dict[str, object], message: str) -> None:
        """Lists of rule texts are lists of strings; kinds is a mapping."""
        with pytest.raises(TypeError, match=message):
            PermissionRules.from_text(**arguments)  # type: ignore[arg-type]

    def test_default_cwd(self, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without cwd, path specifiers are rooted at the working directory when from_text is called."""
        monkeypatch.chdir(str(tmp_path))
        rules = PermissionRules.from_text(allow=["Read(src/*)"])
        pattern = rules.rules[0].argument_pattern
        assert isinstance(pattern, PathPattern)
        assert pattern.root == str(tmp_path)


class TestPolicyRecords:
    """An ApprovalPolicy with text rules records the rule's text, and each part of a compound allow."""

    def test_records(self) -> None:
        """Decision records show the rule text; a compound allow lists each sub-command's rule."""
        from ask_permissions import ApprovalPolicy, ApprovalQueue, ToolCall

        rules = PermissionRules.from_text(allow=["Bash(git status)", "Bash(npm test)"], deny=["Bash(rm *)"])
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=rules, mode="ask_before_changes")
        compound = policy.evaluate(ToolCall("Bash", {"command": "git status && npm test"}, "1"))
        assert compound.outcome == "proceed"
        assert compound.rule is not None
        assert compound.rule.to_dict()["text"] == "Bash(git status)"
        assert compound.rule.to_dict()["parts"] == [
            {"subcommand": "git status", "index": 1, "text": "Bash(git status)"},
            {"subcommand": "npm test", "index": 2, "text": "Bash(npm test)"},
        ]
        blocked = policy.evaluate(ToolCall("Bash", {"command": "git status; rm -rf ~"}, "2"))
        assert blocked.outcome == "block"
        assert blocked.rule is not None
        assert blocked.rule.text == "Bash(rm *)"
        assert "parts" not in blocked.rule.to_dict()

    def test_gem_rule_record_unchanged(self) -> None:
        """A gem-style rule's record has no text and no parts keys."""
        from ask_permissions import ApprovalPolicy, ApprovalQueue, ToolCall

        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=PermissionRules().allow("bash", "ls"))
        record = policy.evaluate(ToolCall("bash", {"command": "ls"}, "1"))
        assert record.rule is not None
        assert set(record.rule.to_dict()) == {
            "index",
            "layer",
            "declared_decision",
            "effective_decision",
            "tool_pattern",
            "argument_pattern",
        }
