"""Tool metadata is read from the registry once per call, whatever the layers consult."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from ask_permissions import ApprovalPolicy, ApprovalQueue, PermissionRules, ToolCall, ToolMetadata
from ask_permissions.policy._tool_metadata import NO_METADATA, read_metadata

DECLARATIONS = ("approval_required", "auto_approvable", "always_ask", "risk_level", "side_effect_scope")


class CountingTool:
    """Declares every field as a zero-argument method and counts the calls."""

    def __init__(self, **values: Any) -> None:
        self.values = values
        self.calls: Counter[str] = Counter()

    def __getattr__(self, key: str) -> Any:
        if key not in DECLARATIONS:
            raise AttributeError(key)

        def declared() -> Any:
            self.calls[key] += 1
            return self.values.get(key)

        return declared


# (id, rules, mode, values, expected layer)
CASES = [
    ("allow rule", PermissionRules().allow("t"), None, {}, "allow_rule"),
    ("deny rule", PermissionRules().deny("t"), None, {}, "deny_rule"),
    ("read_only", None, "read_only", {"side_effect_scope": "workspace"}, "read_only"),
    ("elevated risk", None, None, {"risk_level": "high"}, "elevated_risk"),
    (
        "approval required",
        None,
        None,
        {"approval_required": True, "auto_approvable": True},
        "approval_required",
    ),
    ("default", None, "ask_before_changes", {"side_effect_scope": "none"}, "default"),
]


class TestReadOncePerCall:
    """Each declaration is read exactly once per before_tool_call, on every path."""

    @pytest.mark.parametrize(
        ("rules", "mode", "values", "layer"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
    )
    def test_each_declaration_once(self, rules: Any, mode: Any, values: dict[str, Any], layer: str) -> None:
        """Two calls, two reads of each declaration, and the layer the declarations call for."""
        tool = CountingTool(**values)
        policy = ApprovalPolicy(queue=ApprovalQueue(), rules=rules, mode=mode, tools={"t": tool})
        policy.before_tool_call(ToolCall("t"))
        assert policy.evaluate(ToolCall("t")).layer == layer
        assert tool.calls == Counter(dict.fromkeys(DECLARATIONS, 2))


class TestReadMetadata:
    """read_metadata reads attributes, methods and mapping keys alike, fail-closed."""

    def test_mapping_and_object_agree(self) -> None:
        """A mapping entry and an object with the same declarations give the same metadata."""
        values = {
            "approval_required": 1,
            "auto_approvable": 1,
            "risk_level": "critical",
            "side_effect_scope": "x",
        }
        expected = ToolMetadata(
            approval_required=True, auto_approvable=False, risk_level="critical", side_effect_scope="unknown"
        )
        assert read_metadata(values) == expected
        assert read_metadata(CountingTool(**values)) == expected

    def test_nothing_declared(self) -> None:
        """No entry is NO_METADATA; an entry that declares nothing reads as the same values."""
        assert read_metadata(None) is NO_METADATA
        assert read_metadata({}) == NO_METADATA
        assert read_metadata(object()) == NO_METADATA
