"""Why an action waits: the ``AskExplanation`` a policy gives a submission, read strictly, kept read-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from ask_permissions._vocabulary import AskExplanation

from ._args import FrozenDict, FrozenList, NotJSONError
from ._store import check_scopes

__all__ = ["WHY_KEYS", "read_why", "why_data"]

WHY_KEYS: Final = ("layer", "rule", "source", "reason", "suggestions", "scopes")
_REQUIRED: Final = ("layer", "reason")
_TEXT_LIMIT: Final = 100_000  # characters of one text: a reason is a sentence, a rule one line


def read_why(value: object, path: str = "why") -> AskExplanation:
    """``value`` as a complete, read-only ``AskExplanation``.

    ``layer`` and ``reason`` are required strings (``layer`` non-empty); ``rule`` and ``source`` are
    strings or None, and ``suggestions`` a list of non-empty strings (both may be left out: None, ``[]``);
    ``scopes``, when there, maps scopes (``once`` among them) to descriptions.

    Raises:
        NotJSONError: anything else, naming the field (unknown keys included); a ``ValueError``.
    """
    if not isinstance(value, Mapping):
        raise NotJSONError(path, "an object with layer, rule, source, reason and suggestions", value)
    for key in value:
        if key not in WHY_KEYS:
            raise NotJSONError(f"{path}.{key}", "no such key (known: " + ", ".join(WHY_KEYS) + ")", key)
    for key in _REQUIRED:
        if key not in value:
            raise NotJSONError(f"{path}.{key}", "a string (the key is required)", None)
    layer = _text(value["layer"], f"{path}.layer", optional=False)
    if not layer:
        raise NotJSONError(f"{path}.layer", "a non-empty string", layer)
    suggestions = value.get("suggestions")
    listed: list[str] = []
    if suggestions is not None:
        if isinstance(suggestions, str) or not isinstance(suggestions, list | tuple):
            raise NotJSONError(f"{path}.suggestions", "a list of rule texts", suggestions)
        for index, text in enumerate(suggestions):
            rule = _text(text, f"{path}.suggestions[{index}]", optional=False)
            if not rule:
                raise NotJSONError(f"{path}.suggestions[{index}]", "a non-empty string", text)
            listed.append(rule)
    why = FrozenDict(
        layer=layer,
        rule=_text(value.get("rule"), f"{path}.rule", optional=True),
        source=_text(value.get("source"), f"{path}.source", optional=True),
        reason=_text(value["reason"], f"{path}.reason", optional=False),
        suggestions=FrozenList(listed),
    )
    scopes = value.get("scopes")
    if scopes is not None:
        try:
            checked = check_scopes(scopes)
        except (TypeError, ValueError) as error:
            raise NotJSONError(
                f"{path}.scopes", f"scope to description, with once ({error})", scopes
            ) from None
        dict.__setitem__(why, "scopes", FrozenDict({str(scope): text for scope, text in checked.items()}))
    return cast(AskExplanation, why)


def _text(value: object, path: str, *, optional: bool) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise NotJSONError(path, "a string or null" if optional else "a string", value)
    text = str.__str__(value)
    if len(text) > _TEXT_LIMIT:
        raise NotJSONError(path, f"at most {_TEXT_LIMIT} characters", f"<{len(text)} characters>")
    return text


def why_data(why: AskExplanation | None) -> dict[str, Any] | None:
    """A plain, JSON-safe copy of an explanation (for snapshots, stores and the inbox)."""
    if why is None:
        return None
    data: dict[str, Any] = {
        "layer": why["layer"],
        "rule": why["rule"],
        "source": why["source"],
        "reason": why["reason"],
        "suggestions": list(why["suggestions"]),
    }
    if "scopes" in why:
        data["scopes"] = dict(why["scopes"])
    return data
