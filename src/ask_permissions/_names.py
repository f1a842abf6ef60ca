"""Tool names: checking the names a caller gives, and folding them for the rules that only ever block."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from ._errors import preview

__all__ = ["fold_tool_name", "require_tool_name", "require_tool_names"]


def fold_tool_name(name: str) -> str:
    """The form in which deny-side matching compares tool names.

    NFKC normalization (fullwidth letters become ``bash``), every invisible format character removed
    (zero-width spaces and joiners, the byte-order mark, soft hyphens: Unicode category Cf), surrounding
    whitespace stripped, then case folded. Only rules that can make a call ask or block compare folded
    names, so a model that writes ``Bash``, ``bash `` or ``bash\u200b`` still meets a deny for ``bash``;
    allow rules and grants keep comparing names exactly.
    """
    text = unicodedata.normalize("NFKC", name)
    if not text.isascii():
        text = "".join(char for char in text if unicodedata.category(char) != "Cf")
    # Case folding can produce text NFKC would change again (e.g. the Kelvin sign's fold is already k,
    # but some folds are not NFKC-stable): normalize once more.
    return unicodedata.normalize("NFKC", text.strip().casefold())


def require_tool_name(name: object, field: str = "tool_name") -> str:
    """Return ``name`` as a plain ``str``, refusing anything that is not a non-empty string."""
    if not isinstance(name, str):
        raise TypeError(f"{field}: expected a non-empty string; got {preview(name)}")
    if not name:
        raise ValueError(f"{field}: expected a non-empty string; got {preview(name)}")
    # A str subclass becomes its plain text. Not str(name): a str-mixin Enum member's str() is
    # "Tools.BASH", which no rule, grant or gate entry for "bash" would match.
    return str.__str__(name)


def require_tool_names(names: Iterable[str], field: str) -> tuple[str, ...]:
    """The names of an iterable of tool names, in order, each checked by ``require_tool_name``.

    Raises:
        TypeError: ``names`` is a bare string (iterating it would yield single letters: ``"bash"`` would
            name ``"b"``, ``"a"``, ``"s"`` and ``"h"``), is not iterable, or holds a non-string.
        ValueError: a name is empty.
    """
    if isinstance(names, str):
        raise TypeError(f"{field}: expected an iterable of tool names, not a string; got {preview(names)}")
    try:
        iterator = iter(names)
    except TypeError:
        raise TypeError(f"{field}: expected an iterable of tool names; got {preview(names)}") from None
    return tuple(require_tool_name(name, f"{field}[{index}]") for index, name in enumerate(iterator))
