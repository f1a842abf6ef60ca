"""unknown_tools and require_known_tools: what in a policy names no known tool, and the nearest name."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import (
    ALL,
    ApprovalPolicy,
    ApprovalQueue,
    CommandHook,
    LayeredPolicy,
    PermissionRules,
    PermissionSettings,
    SettingsSource,
    ToolReference,
    UnknownToolError,
    require_known_tools,
    unknown_tools,
)
from ask_permissions._names import fold_tool_name
from ask_permissions.policy._tool_names import pattern_reference

NAMES = st.text(alphabet="abAB_", min_size=1, max_size=4)
PREFIXES = st.text(alphabet="ab_", min_size=1, max_size=3)
REGEXES = st.one_of(
    PREFIXES.map(lambda prefix: re.compile("^" + re.escape(prefix))),
    PREFIXES.map(lambda prefix: re.compile("^" + re.escape(prefix) + ".*$")),
    st.sampled_from(["a$", "^b", "B", "a_?b", "^(a|b)$", "[ab]{3}"]).map(re.compile),
    st.sampled_from(["^a", "^A_"]).map(lambda source: re.compile(source, re.IGNORECASE)),
)


def _model_knows(pattern: object, folds: bool, known: list[str]) -> bool:
    """The reference: a name is known when a known name equals it (or, folding, folds alike); a regex when
    it finds a known name or, folding, a known name's folded form."""
    if isinstance(pattern, str):
        return pattern in known or (folds and fold_tool_name(pattern) in {fold_tool_name(n) for n in known})
    assert isinstance(pattern, re.Pattern)
    forms = known + ([fold_tool_name(name) for name in known] if folds else [])
    return any(pattern.search(form) for form in forms)


class TestUnknownTools:
    """unknown_tools agrees with the reference, gives the nearest name, and keeps the references' order."""

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(st.tuples(st.one_of(NAMES, REGEXES), st.booleans()), max_size=8),
        st.lists(NAMES, max_size=6),
    )
    def test_agrees_with_the_reference(self, patterns: list[tuple[object, bool]], known: list[str]) -> None:
        """Exactly the references the reference model calls unknown are reported, in order."""
        references = [
            pattern_reference(f"rules[{index}]", pattern, str(pattern), folds=folds)  # type: ignore[arg-type]
            for index, (pattern, folds) in enumerate(patterns)
        ]
        found = [found.reference.field for found in unknown_tools([r for r in references if r], known)]
        expected = [
            f"rules[{index}]"
            for index, (pattern, folds) in enumerate(patterns)
            if not _model_knows(pattern, folds, known)
        ]
        assert found == expected

    def test_the_nearest_name(self) -> None:
        """A close name is suggested (case aside first); a far one suggests nothing."""
        known = ["run_shell", "read_file", "Bash"]
        references = [
            ToolReference("a", "run_shel", "run_shel", False),
            ToolReference("b", "bash", "bash", False),
            ToolReference("c", "deploy", "deploy", False),
        ]
        assert [found.suggestion for found in unknown_tools(references, known)] == ["run_shell", "Bash", None]

    def test_all_is_always_known(self) -> None:
        """ALL names every tool: it has no reference at all."""
        assert pattern_reference("rules[0]", ALL, "every tool", folds=True) is None

    def test_an_mcp_server_prefix_needs_one_of_its_tools(self) -> None:
        """mcp__github (rule text) meets mcp__github__create_issue, not mcp__gitlab__x."""
        rules = PermissionRules.from_text(deny=["mcp__github"])
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=rules)
        assert unknown_tools(policy.tool_references(), ["mcp__github__create_issue"]) == []
        (found,) = unknown_tools(policy.tool_references(), ["mcp__gitlab__x"])
        assert str(found) == "permissions.deny[0] ('mcp__github'): matches no known tool"

    def test_junk_among_the_known_names_is_no_name(self) -> None:
        """A host's list may hold junk (None, "", numbers): it is not a name and breaks nothing."""
        references = [ToolReference("a", "x", "x", False)]
        assert unknown_tools(references, ["x", None, "", 3]) == []  # type: ignore[list-item]


class TestRequireKnownTools:
    """require_known_tools refuses with one message naming all that is wrong; policies list their names."""

    def test_one_sentence_per_unknown_name(self) -> None:
        """Several places naming one unknown tool are named together; the known tools and the hint follow."""
        rules = PermissionRules.from_text(
            deny=["bsah", "bsah(rm *)"], allow=["reed"], kinds={"bsah": "shell"}
        )
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=rules)
        with pytest.raises(UnknownToolError) as raised:
            require_known_tools(policy, ["bash", "read"], where="host", keep_hint="keep them with K")
        assert str(raised.value) == (
            "host: permissions.deny[0] ('bsah') and permissions.deny[1] ('bsah(rm *)') name the tool 'bsah', "
            "which is not known; did you mean 'bash'? permissions.allow[0] ('reed'): names the tool 'reed', "
            "which is not known; did you mean 'read'? The known tools: 'bash', 'read'; keep them with K."
        )
        assert [found.reference.field for found in raised.value.unknown] == [  # type: ignore[attr-defined]
            "permissions.deny[0]",
            "permissions.deny[1]",
            "permissions.allow[0]",
        ]

    def test_a_policy_without_references_names_nothing(self) -> None:
        """An object without tool_references() names nothing the check can see: it passes."""
        require_known_tools(object(), ["bash"], where="host")

    def test_every_kind_of_reference(self) -> None:
        """Rules, require_approval, auto_approve, hooks and registry names are all listed, with fields."""
        hook = CommandHook("guard", matcher="deploy")
        policy = ApprovalPolicy(
            queue=ApprovalQueue(auto_approve={"fetch": True}),
            rules=PermissionRules().allow("read").deny(re.compile("^db_")),
            require_approval=["bash"],
            tools={"read": {}, "bash": {}, "fetch": {}, "deploy": {}, "db_query": {}},
            hooks=[hook],
        )
        assert [(reference.field, reference.kind) for reference in policy.tool_references()] == [
            ("rules.rules[0]", "rule"),
            ("rules.rules[1]", "rule"),
            ("require_approval[0]", "require_approval"),
            ("auto_approve.fetch", "auto_approve"),
            ("hooks[0]", "hook"),
            ("tools.read", "tool"),
            ("tools.bash", "tool"),
            ("tools.fetch", "tool"),
            ("tools.deploy", "tool"),
            ("tools.db_query", "tool"),
        ]
        with pytest.raises(UnknownToolError, match=r"tools\.db_query \('db_query'\): names the tool"):
            require_known_tools(policy, ["read", "bash", "fetch", "deploy"], where="agent")

    def test_a_layered_policy_names_its_settings_rules_by_file(self) -> None:
        """A layered policy's rules are named by their source's file and list position."""
        source = SettingsSource("project", "/p", "/p/.agent/settings.json", deny=("Bsh(rm *)",))
        settings = PermissionSettings([source], project_dir="/p")
        policy = LayeredPolicy(queue=ApprovalQueue(), settings=settings, kinds={"Bsh": "shell"})
        with pytest.raises(UnknownToolError) as raised:
            require_known_tools(policy, ["Bash"], where="agent")
        assert raised.value.path == "/p/.agent/settings.json: permissions.deny[0]"
        assert "permissions.deny[0] ('Bsh(rm *)') and kinds.Bsh ('Bsh') name the tool 'Bsh'" in str(
            raised.value
        )
