"""PermissionRuleSet: default and project layers, where a deny in either layer wins."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import PermissionRules, PermissionRuleSet, RuleMatch
from ask_permissions.typing import Decision

from .hostile import (
    HUGE_INT,
    HostileDict,
    HostileObject,
    HostileStr,
    assert_reads_or_rejects,
    assert_refused,
    circular_dict,
    hostile_snapshots,
    nested,
)
from .reference import reference_classify, reference_compose
from .strategies import (
    RuleSpec,
    assert_snapshot_error,
    build_rules,
    calls,
    json_values,
    mutate,
    permission_rules,
    restored_or_rejected,
    rule_specs,
)


class TestSeedExample:
    """The gem README's PermissionRuleSet example, in Python."""

    def test_example(self) -> None:
        """The default deny on rm -rf wins; the project allow on read_file applies."""
        defaults = PermissionRules(lambda r: r.deny("bash", re.compile(r"rm\s+-rf")))
        project = PermissionRules(lambda r: r.allow("read_file"))
        rules = PermissionRuleSet(default_rules=defaults, project_rules=project)
        assert rules.classify("bash", {"command": "rm -rf /tmp"}) == "deny"
        assert rules.classify("read_file") == "allow"
        assert rules.classify("bash", {"command": "ls"}) is None


_ABSENT = "absent"
_NO_MATCH = "no-match"

# (default layer, project layer, expected): a layer is absent, has no matching rule, or decides.
COMPOSITION = [
    (default, project, expected)
    for default, project, expected in [
        (_ABSENT, _ABSENT, None),
        (_ABSENT, _NO_MATCH, None),
        (_NO_MATCH, _ABSENT, None),
        (_NO_MATCH, _NO_MATCH, None),
        (_ABSENT, "allow", "allow"),
        (_ABSENT, "ask", "ask"),
        (_ABSENT, "deny", "deny"),
        (_NO_MATCH, "allow", "allow"),
        (_NO_MATCH, "deny", "deny"),
        ("allow", _ABSENT, "allow"),
        ("ask", _ABSENT, "ask"),
        ("deny", _ABSENT, "deny"),
        ("allow", _NO_MATCH, "allow"),
        ("ask", _NO_MATCH, "ask"),
        ("deny", _NO_MATCH, "deny"),
        ("allow", "allow", "allow"),
        ("allow", "ask", "ask"),
        ("allow", "deny", "deny"),
        ("ask", "allow", "allow"),
        ("ask", "ask", "ask"),
        ("ask", "deny", "deny"),
        ("deny", "allow", "deny"),
        ("deny", "ask", "deny"),
        ("deny", "deny", "deny"),
    ]
]
COMPOSITION_IDS = [f"default-{d}/project-{p}" for d, p, _ in COMPOSITION]


def _layer(kind: str) -> PermissionRules | None:
    if kind == _ABSENT:
        return None
    rules = PermissionRules().deny("other_tool")
    if kind != _NO_MATCH:
        rules.add(kind, "tool")  # type: ignore[arg-type]
    return rules


class TestComposition:
    """A deny in either layer wins; else the project decision; else the default; else None."""

    @pytest.mark.parametrize(("default", "project", "expected"), COMPOSITION, ids=COMPOSITION_IDS)
    def test_case(self, default: str, project: str, expected: str | None) -> None:
        """The composed decision for each pair of layer outcomes."""
        rules = PermissionRuleSet(default_rules=_layer(default), project_rules=_layer(project))
        assert rules.classify("tool", {"x": 1}) == expected
        assert rules.allows("tool") is (expected == "allow")
        assert rules.asks("tool") is (expected == "ask")
        assert rules.denies("tool") is (expected == "deny")

    @pytest.mark.parametrize(("default", "project", "expected"), COMPOSITION, ids=COMPOSITION_IDS)
    def test_explain_layer(self, default: str, project: str, expected: str | None) -> None:
        """explain reports the layer whose rule decided, with the rule's index in that layer."""
        default_rules, project_rules = _layer(default), _layer(project)
        rules = PermissionRuleSet(default_rules=default_rules, project_rules=project_rules)
        match = rules.explain("tool")
        if expected is None:
            assert match is None
            return
        assert match is not None
        assert match.decision == expected
        # The default layer decides on its deny, or when the project layer has no opinion.
        layer = "default" if default == "deny" or project in (_ABSENT, _NO_MATCH) else "project"
        assert match.layer == layer
        source = default_rules if layer == "default" else project_rules
        assert source is not None
        assert match.index == 1
        assert match.rule is source.rules[1]

    def test_project_overrides_default_allow(self) -> None:
        """A project ask overrides a default allow for the same call (project decisions come first)."""
        defaults = PermissionRules().allow("fetch")
        project = PermissionRules().ask("fetch", "internal")
        rules = PermissionRuleSet(default_rules=defaults, project_rules=project)
        assert rules.classify("fetch", {"url": "http://internal/"}) == "ask"
        assert rules.classify("fetch", {"url": "http://example.com/"}) == "allow"

    def test_default_deny_not_overridden(self) -> None:
        """A project allow cannot lift a default deny."""
        defaults = PermissionRules().deny("delete_user")
        project = PermissionRules().allow("delete_user")
        assert PermissionRuleSet(default_rules=defaults, project_rules=project).denies("delete_user")

    def test_guard_applies_per_layer(self) -> None:
        """A project's unrestricted allow on bash is still downgraded to ask."""
        rules = PermissionRuleSet(project_rules=PermissionRules().allow("bash"))
        assert rules.classify("bash", {"command": "ls"}) == "ask"


class _Fixed:
    """A custom classifier layer: always the same decision, no explain."""

    def __init__(self, decision: Decision | None) -> None:
        self.decision = decision
        self.calls: list[tuple[str, object]] = []

    def classify(self, tool_name: str, arguments: object = None) -> Decision | None:
        self.calls.append((tool_name, arguments))
        return self.decision


class TestLayers:
    """Layers are anything with classify; absent layers are None."""

    def test_layers_readable(self) -> None:
        """default_rules and project_rules return the objects passed."""
        defaults, project = PermissionRules(), PermissionRules()
        rules = PermissionRuleSet(default_rules=defaults, project_rules=project)
        assert rules.default_rules is defaults
        assert rules.project_rules is project
        assert PermissionRuleSet().default_rules is None

    @pytest.mark.parametrize("field", ["default_rules", "project_rules"])
    @pytest.mark.parametrize("layer", [object(), "rules", {"classify": "x"}], ids=["object", "str", "dict"])
    def test_layer_without_classify(self, field: str, layer: object) -> None:
        """A layer without a classify method is a TypeError naming the field."""
        with pytest.raises(TypeError, match=f"{field}: expected an object with classify"):
            PermissionRuleSet(**{field: layer})  # type: ignore[arg-type]

    def test_custom_classifier(self) -> None:
        """A duck-typed layer is consulted with the call's name and arguments."""
        project = _Fixed("ask")
        rules = PermissionRuleSet(default_rules=_Fixed("allow"), project_rules=project)
        assert rules.classify("tool", {"a": 1}) == "ask"
        assert project.calls == [("tool", {"a": 1})]

    def test_default_deny_skips_project(self) -> None:
        """When the default layer denies, the project layer is not consulted."""
        project = _Fixed("allow")
        assert PermissionRuleSet(default_rules=_Fixed("deny"), project_rules=project).classify("x") == "deny"
        assert project.calls == []

    def test_custom_classifier_explain(self) -> None:
        """A layer that cannot explain itself is reported with its layer and decision but no rule."""
        rules = PermissionRuleSet(default_rules=PermissionRules(), project_rules=_Fixed("deny"))
        assert rules.explain("x") == RuleMatch(None, None, "project", "deny")
        assert PermissionRuleSet(project_rules=_Fixed(None)).explain("x") is None

    def test_nested_rule_set_keeps_its_layer(self) -> None:
        """A rule set used as a layer reports the inner layer the rule came from."""
        inner = PermissionRuleSet(project_rules=PermissionRules().deny("x"))
        outer = PermissionRuleSet(default_rules=inner)
        match = outer.explain("x")
        assert match is not None
        assert (match.layer, match.index, match.decision) == ("project", 0, "deny")

    def test_both_deny_reports_default(self) -> None:
        """When both layers deny, explain reports the default layer's rule (it is checked first)."""
        defaults = PermissionRules().deny("x")
        project = PermissionRules().allow("y").deny("x")
        match = PermissionRuleSet(default_rules=defaults, project_rules=project).explain("x")
        assert match == RuleMatch(defaults.rules[0], 0, "default", "deny")

    def test_repr(self) -> None:
        """repr shows both layers."""
        rules = PermissionRuleSet(default_rules=PermissionRules().allow("a"))
        assert repr(rules) == "<PermissionRuleSet default_rules=<PermissionRules rules=1> project_rules=None>"


class TestCustomLayers:
    """A custom layer must answer with a decision or None."""

    @pytest.mark.parametrize("field", ["default_rules", "project_rules"])
    def test_unknown_answer_is_refused(self, field: str) -> None:
        """A layer answering "DENY" (not "deny") is a ValueError naming the layer, in classify and explain."""

        class Shouting:
            def classify(self, tool_name: str, arguments: object = None) -> str:
                return "DENY"

        rule_set = PermissionRuleSet(**{field: Shouting()})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=rf"^{field}\.classify\('bash'\): expected .* got 'DENY'$"):
            rule_set.classify("bash")
        with pytest.raises(ValueError, match=rf"^{field}\.classify\('bash'\)"):
            rule_set.explain("bash")


class TestSnapshot:
    """snapshot() holds both layers' snapshots; from_snapshot restores them, strictly."""

    def test_format(self) -> None:
        """The snapshot is versioned and holds each layer's PermissionRules snapshot, or None."""
        defaults = PermissionRules().deny("bash", "rm")
        rules = PermissionRuleSet(default_rules=defaults)
        assert rules.snapshot() == {"version": 1, "default_rules": defaults.snapshot(), "project_rules": None}

    def test_json_round_trip(self) -> None:
        """Both layers survive a json round trip and classify the same."""
        defaults = PermissionRules().deny("bash", re.compile(r"rm\s+-rf", re.IGNORECASE))
        project = PermissionRules(auto_allow_dangerous=True).allow("bash").allow("read_file", "/docs/")
        rules = PermissionRuleSet(default_rules=defaults, project_rules=project)
        restored = PermissionRuleSet.from_snapshot(json.loads(json.dumps(rules.snapshot())))
        assert restored.snapshot() == rules.snapshot()
        assert restored.classify("bash", {"command": "RM  -RF /"}) == "deny"
        assert restored.classify("bash", {"command": "ls"}) == "allow"
        assert restored.classify("read_file", {"path": "/docs/a"}) == "allow"

    @pytest.mark.parametrize(
        "snapshot",
        [
            pytest.param({"version": 1}, id="keys-missing"),
            pytest.param({"version": 1, "default_rules": None, "project_rules": None}, id="keys-null"),
        ],
    )
    def test_absent_layers(self, snapshot: dict[str, Any]) -> None:
        """Missing or null layers restore as absent."""
        restored = PermissionRuleSet.from_snapshot(snapshot)
        assert restored.default_rules is None
        assert restored.project_rules is None
        assert restored.classify("anything") is None

    def test_custom_layer_cannot_be_snapshotted(self) -> None:
        """A layer that is not a PermissionRules makes snapshot() raise TypeError naming the field."""
        with pytest.raises(TypeError, match="project_rules: only PermissionRules layers can be snapshotted"):
            PermissionRuleSet(project_rules=_Fixed("allow")).snapshot()

    def test_unsnapshottable_regex_flag(self) -> None:
        """A layer regex compiled with MULTILINE makes snapshot() raise ValueError."""
        rules = PermissionRuleSet(default_rules=PermissionRules().deny(re.compile("^rm", re.MULTILINE)))
        with pytest.raises(ValueError, match="MULTILINE"):
            rules.snapshot()


_GOOD_LAYER = {"version": 1, "auto_allow_dangerous": False, "rules": []}

BAD_SNAPSHOTS = [
    # (snapshot, path, message)
    pytest.param([], "", r"snapshot: expected an object; got \[\]", id="not-an-object"),
    pytest.param({}, "version", "version: expected a value", id="no-version"),
    pytest.param({"version": 0}, "version", "version: expected 1; got 0", id="version-0"),
    pytest.param({"version": 1, "rules": []}, "rules", "rules: expected no such key", id="rules-at-top"),
    pytest.param(
        {"version": 1, "default_rules": []},
        "default_rules",
        r"default_rules: expected an object; got \[\]",
        id="layer-not-object",
    ),
    pytest.param(
        {"version": 1, "project_rules": {"rules": []}},
        "project_rules.version",
        "project_rules.version: expected a value",
        id="layer-no-version",
    ),
    pytest.param(
        {"version": 1, "project_rules": {**_GOOD_LAYER, "version": 2}},
        "project_rules.version",
        "expected 1; got 2",
        id="layer-version",
    ),
    pytest.param(
        {
            "version": 1,
            "default_rules": {
                **_GOOD_LAYER,
                "rules": [
                    {"decision": "deny", "tool_pattern": {"type": "all"}},
                    {
                        "decision": "deny",
                        "tool_pattern": {"type": "string", "value": "bash"},
                        "argument_pattern": {"type": "regexp", "source": "rm", "flags": "mq"},
                    },
                ],
            },
        },
        "default_rules.rules[1].argument_pattern.flags",
        r"^default_rules.rules\[1\].argument_pattern.flags: expected a string of i, m, x, each at most once; "
        r"got 'mq'$",
        id="nested-flag",
    ),
    pytest.param(
        {
            "version": 1,
            "project_rules": {**_GOOD_LAYER, "rules": [{"decision": "allow", "tool_pattern": {}}]},
        },
        "project_rules.rules[0].tool_pattern.type",
        "expected one of 'string', 'symbol', 'all', 'regexp'; got None",
        id="nested-type",
    ),
]


class TestSnapshotStrictness:
    """Invalid rule-set snapshots raise InvalidSnapshotError naming the full path."""

    @pytest.mark.parametrize(("snapshot", "path", "message"), BAD_SNAPSHOTS)
    def test_bad_snapshot(self, snapshot: Any, path: str, message: str) -> None:
        """The error carries the path through the layer, and its message starts with it."""
        assert_snapshot_error(PermissionRuleSet.from_snapshot, snapshot, path, message)


class TestProperties:
    """The rule set composes its layers as the reference model does, and snapshots preserve that."""

    @given(
        default=st.none() | st.lists(rule_specs, max_size=5),
        project=st.none() | st.lists(rule_specs, max_size=5),
        auto=st.booleans(),
        probes=st.lists(calls, min_size=1, max_size=6),
    )
    @settings(max_examples=150, deadline=None)
    def test_matches_reference(
        self, default: list[RuleSpec] | None, project: list[RuleSpec] | None, auto: bool, probes: list[Any]
    ) -> None:
        """classify is the composition of the reference model on both layers; explain agrees."""
        rules = PermissionRuleSet(
            default_rules=None if default is None else build_rules(default, auto_allow_dangerous=auto),
            project_rules=None if project is None else build_rules(project),
        )
        for name, args in probes:
            expected = reference_compose(
                None
                if default is None
                else reference_classify(default, name, args, auto_allow_dangerous=auto),
                None if project is None else reference_classify(project, name, args),
            )
            assert rules.classify(name, args) == expected
            match = rules.explain(name, args)
            assert (None if match is None else match.decision) == expected
            if match is not None:
                layer = rules.default_rules if match.layer == "default" else rules.project_rules
                assert isinstance(layer, PermissionRules)
                assert match.index is not None
                assert match.rule is layer.rules[match.index]

    @given(
        default=st.none() | st.lists(rule_specs, max_size=5),
        project=st.none() | st.lists(rule_specs, max_size=5),
        probes=st.lists(calls, max_size=6),
    )
    @settings(max_examples=100, deadline=None)
    def test_snapshot_round_trip(
        self, default: list[RuleSpec] | None, project: list[RuleSpec] | None, probes: list[Any]
    ) -> None:
        """A snapshot through json restores a rule set that classifies every call the same way."""
        rules = PermissionRuleSet(
            default_rules=None if default is None else build_rules(default),
            project_rules=None if project is None else build_rules(project, auto_allow_dangerous=True),
        )
        restored = PermissionRuleSet.from_snapshot(json.loads(json.dumps(rules.snapshot())))
        assert restored.snapshot() == rules.snapshot()
        for name, args in probes:
            assert restored.classify(name, args) == rules.classify(name, args)

    @given(data=json_values)
    @settings(max_examples=200, deadline=None)
    def test_random_input(self, data: object) -> None:
        """from_snapshot on arbitrary JSON-like data succeeds or raises InvalidSnapshotError, nothing else."""
        restored_or_rejected(PermissionRuleSet.from_snapshot, data)

    @given(
        default=st.lists(rule_specs, max_size=3),
        project=st.lists(rule_specs, max_size=3),
        data=st.data(),
    )
    @settings(max_examples=200, deadline=None)
    def test_mutated_snapshot(
        self, default: list[RuleSpec], project: list[RuleSpec], data: st.DataObject
    ) -> None:
        """A valid snapshot with one node changed, dropped or added: restored, or InvalidSnapshotError."""
        rules = PermissionRuleSet(default_rules=build_rules(default), project_rules=build_rules(project))
        snapshot = mutate(rules.snapshot(), data)
        restored = restored_or_rejected(PermissionRuleSet.from_snapshot, snapshot)
        if restored is not None:
            name, args = data.draw(calls)
            assert restored.classify(name, args) in (None, "allow", "ask", "deny")


_LAYER = {"version": 1, "rules": []}

HOSTILE_SNAPSHOTS = [
    pytest.param({"version": HUGE_INT}, "version", id="huge-version"),
    pytest.param(
        {"version": 1, "default_rules": {"version": HUGE_INT, "rules": []}},
        "default_rules.version",
        id="huge-layer-version",
    ),
    pytest.param({"version": 1, "project_rules": nested(5000)}, "project_rules", id="deep-layer"),
    pytest.param(nested(5000), "", id="deep-root"),
    pytest.param(
        {"version": 1, "default_rules": HostileDict(_LAYER)}, "default_rules", id="hostile-dict-layer"
    ),
    pytest.param(HostileDict(version=1), "", id="hostile-dict-root"),
    pytest.param({"version": 1, HostileStr("default_rules"): _LAYER}, "", id="hostile-str-key"),
    pytest.param({"version": 1, "project_rules": HostileObject()}, "project_rules", id="hostile-object"),
    pytest.param({**circular_dict()}, "self", id="circular"),
]


class TestHostileSnapshots:
    """from_snapshot raises InvalidSnapshotError for any input, with a message that formats and is short."""

    @pytest.mark.parametrize(("snapshot", "path"), HOSTILE_SNAPSHOTS)
    def test_refused(self, snapshot: object, path: str) -> None:
        """The error is InvalidSnapshotError at the path, its message a bounded preview."""
        assert_refused(PermissionRuleSet.from_snapshot, snapshot, path)

    @given(
        snapshot=hostile_snapshots(
            st.builds(
                lambda default, project: PermissionRuleSet(
                    default_rules=default, project_rules=project
                ).snapshot(),
                permission_rules(),
                permission_rules(),
            )
        )
    )
    @settings(max_examples=150, deadline=None)
    def test_fuzz(self, snapshot: object) -> None:
        """A valid snapshot with one hostile node or key restores (and then classifies) or is refused."""
        restored = assert_reads_or_rejects(PermissionRuleSet.from_snapshot, snapshot)
        if restored is not None:
            assert restored.classify("bash", {"command": "ls"}) in (None, "allow", "ask", "deny")
            json.dumps(restored.snapshot())
