"""PermissionRuleSet: application default rules composed with host-selected project rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast, final

from ask_permissions._errors import preview
from ask_permissions._strict import SNAPSHOT_VERSION, child, guard_reading, read_mapping, read_version
from ask_permissions.typing import Classifier, Decision, RuleSetLayer

from ._rules import (
    DecisionPredicates,
    PermissionRules,
    RuleMatch,
    checked_decision,
    checked_match_decision,
)

__all__ = ["PermissionRuleSet"]


def _require_classifier(layer: object, field: str) -> Classifier | None:
    if layer is not None and not callable(getattr(layer, "classify", None)):
        raise TypeError(
            f"{field}: expected an object with classify(tool_name, arguments); got {preview(layer)}"
        )
    return layer  # type: ignore[return-value]  # checked structurally above


@final
class PermissionRuleSet(DecisionPredicates):
    """Default rules and project rules, composed.

    A ``deny`` from either layer wins; otherwise a matching project decision overrides the default; a
    call no project rule matches falls back to the default layer; ``None`` when neither matches. Either
    layer may be absent. Holds no state of its own: it is as thread-safe as its layers.

    Args:
        default_rules: the application's defaults (anything with ``classify``), or ``None``.
        project_rules: the host-selected project's rules (anything with ``classify``), or ``None``.

    Raises:
        TypeError: a layer without a ``classify`` method.
    """

    __slots__ = ("_default_rules", "_project_rules")

    def __init__(
        self, *, default_rules: Classifier | None = None, project_rules: Classifier | None = None
    ) -> None:
        self._default_rules: Final = _require_classifier(default_rules, "default_rules")
        self._project_rules: Final = _require_classifier(project_rules, "project_rules")

    @property
    def default_rules(self) -> Classifier | None:
        """The default layer."""
        return self._default_rules

    @property
    def project_rules(self) -> Classifier | None:
        """The project layer."""
        return self._project_rules

    def __repr__(self) -> str:
        return (
            f"<PermissionRuleSet default_rules={self._default_rules!r} project_rules={self._project_rules!r}>"
        )

    def classify(self, tool_name: str, arguments: object = None) -> Decision | None:
        """The composed decision for the call, or ``None`` when no layer has a matching rule."""
        default = _classify(self._default_rules, "default_rules", tool_name, arguments)
        if default == "deny":
            return "deny"
        project = _classify(self._project_rules, "project_rules", tool_name, arguments)
        if project is not None:
            return project
        return default

    def explain(self, tool_name: str, arguments: object = None) -> RuleMatch | None:
        """The rule that decides ``classify`` for the call, with its index and layer, or ``None``.

        When both layers deny, the default layer's rule is reported: defaults are checked first.
        """
        default = _explain(self._default_rules, "default", tool_name, arguments)
        if default is not None and default.decision == "deny":
            return default
        project = _explain(self._project_rules, "project", tool_name, arguments)
        if project is not None:
            return project
        return default

    def snapshot(self) -> dict[str, Any]:
        """Both layers as versioned, JSON-safe data.

        Raises:
            TypeError: a layer is not a ``PermissionRules`` (a custom classifier cannot be snapshotted).
            ValueError: a regex flag that cannot be recorded.
        """
        return {
            "version": SNAPSHOT_VERSION,
            "default_rules": _layer_snapshot(self._default_rules, "default_rules"),
            "project_rules": _layer_snapshot(self._project_rules, "project_rules"),
        }

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any], *, path: str = "") -> PermissionRuleSet:
        """Build a rule set from ``snapshot()`` data; strict.

        Raises:
            InvalidSnapshotError: anything unknown, missing, mistyped or uncompilable, naming its path; and
                for any other input (an object that fails when read), never another exception.
        """
        return guard_reading(lambda: cls._read_snapshot(snapshot, path), snapshot, path)

    @classmethod
    def _read_snapshot(cls, snapshot: object, path: str) -> PermissionRuleSet:
        data = read_mapping(
            snapshot, path, required=("version",), optional=("default_rules", "project_rules")
        )
        read_version(data, path)
        layers: dict[str, PermissionRules | None] = {}
        for key in ("default_rules", "project_rules"):
            value = data.get(key)
            layers[key] = (
                None
                if value is None
                else PermissionRules.from_snapshot(cast(Any, value), path=child(path, key))
            )
        return cls(default_rules=layers["default_rules"], project_rules=layers["project_rules"])


def _classify(layer: Classifier | None, field: str, tool_name: str, arguments: object) -> Decision | None:
    if layer is None:
        return None
    if isinstance(layer, PermissionRules):
        return layer.classify(tool_name, arguments)
    return checked_decision(layer.classify(tool_name, arguments), f"{field}.classify({preview(tool_name)})")


def _explain(
    layer: Classifier | None, name: RuleSetLayer, tool_name: str, arguments: object
) -> RuleMatch | None:
    if layer is None:
        return None
    explain = getattr(layer, "explain", None)
    if explain is None:
        decision = _classify(layer, f"{name}_rules", tool_name, arguments)
        return None if decision is None else RuleMatch(None, None, name, decision)
    match: RuleMatch | None = explain(tool_name, arguments)
    if match is None:
        return None
    decision = match.decision
    if not isinstance(layer, PermissionRules | PermissionRuleSet):
        decision = checked_match_decision(decision, f"{name}_rules.explain({preview(tool_name)})")
    # A nested rule set keeps its own layer name; a plain ruleset gets this one.
    parts = match.parts if isinstance(layer, PermissionRules | PermissionRuleSet) else ()
    return RuleMatch(match.rule, match.index, match.layer or name, decision, parts, match.unread)


def _layer_snapshot(layer: Classifier | None, field: str) -> dict[str, Any] | None:
    if layer is None:
        return None
    if not isinstance(layer, PermissionRules):
        raise TypeError(f"{field}: only PermissionRules layers can be snapshotted; got {preview(layer)}")
    return layer.snapshot()
