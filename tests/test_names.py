"""Tool-name folding and the bounded previews in error messages."""

from __future__ import annotations

import sys

import pytest

from ask_permissions._errors import PREVIEW_LIMIT, preview
from ask_permissions._names import fold_tool_name

FOLDED_TO_BASH = [
    "bash",
    "Bash",
    "BASH",
    " bash",
    "bash ",
    "\tbash\n",
    "\uff42\uff41\uff53\uff48",
    "bash\u200b",
    "\ufeffbash",
    "ba\u00adsh",
    "b\u200dash",
    "\u00a0bash",
]


class TestFoldToolName:
    """Names that mean the same tool to a person fold to one form."""

    @pytest.mark.parametrize("name", FOLDED_TO_BASH, ids=ascii)
    def test_look_alikes_fold_to_the_plain_name(self, name: str) -> None:
        """Case, width, surrounding whitespace and invisible characters do not make another name."""
        assert fold_tool_name(name) == "bash"

    @pytest.mark.parametrize("name", ["bash2", "b ash", "bsh", "fish"])
    def test_other_names_stay_other(self, name: str) -> None:
        """Folding does not merge names that differ in visible characters."""
        assert fold_tool_name(name) != "bash"

    def test_folding_is_idempotent(self) -> None:
        """A folded name folds to itself."""
        for name in [*FOLDED_TO_BASH, "\u212a", "\u00df", "\ufb01le"]:
            assert fold_tool_name(fold_tool_name(name)) == fold_tool_name(name)


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


class TestPreview:
    """Error messages show any value briefly, and never fail while doing so."""

    @pytest.mark.parametrize(
        "value",
        [
            10 ** (sys.get_int_max_str_digits() + 10),
            _nested(10_000),
            "x" * 10_000_000,
            _BadRepr(),
            {"k" * 1000: ["v"] * 1000},
            b"\xff" * 1000,
            "\ud800",
        ],
        ids=["huge-int", "deep-list", "long-string", "raising-repr", "wide-dict", "bytes", "lone-surrogate"],
    )
    def test_any_value_gives_a_short_text(self, value: object) -> None:
        """The preview is at most PREVIEW_LIMIT characters, whatever the value."""
        text = preview(value)
        assert 0 < len(text) <= PREVIEW_LIMIT

    @pytest.mark.parametrize("value", ["q", 3, None, True, [1, 2], {"a": 1}, 2.5])
    def test_small_values_read_as_their_repr(self, value: object) -> None:
        """A short value is shown exactly as repr shows it."""
        assert preview(value) == repr(value)
