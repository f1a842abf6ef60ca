"""Glob: ``*`` and ``?`` matching in linear time, equal to the regex it replaces."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions.rules._glob import Glob

from .timing import cpu_bound

_texts = st.text(alphabet="ab*?", max_size=8)


def _reference(pattern: str, subject: str) -> bool:
    """The backtracking regex a glob stands for: ``*`` any run of characters, ``?`` any one."""
    translated = "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.fullmatch(translated, subject, re.DOTALL) is not None


class TestGlob:
    """A glob matches exactly what its regex would, without the regex's backtracking."""

    @given(_texts, st.text(alphabet="ab?*\n", max_size=10))
    @settings(max_examples=400, deadline=None)
    def test_same_as_regex(self, pattern: str, subject: str) -> None:
        """For every pattern and subject, the glob and the regex agree."""
        assert Glob(pattern.split("*"), any_character="?").matches(subject) is _reference(pattern, subject)

    @given(_texts, st.text(alphabet="ab?*", max_size=10))
    @settings(max_examples=500, deadline=None)
    def test_question_mark_literal_without_any_character(self, pattern: str, subject: str) -> None:
        """Without ``any_character``, a ``?`` is an ordinary character."""
        expected = _reference(pattern.replace("?", "\x00"), subject.replace("?", "\x00"))
        assert Glob(pattern.split("*")).matches(subject) is expected

    @pytest.mark.parametrize(
        ("pieces", "subject"),
        [
            pytest.param(["a", "a", "a", "a", "b"], "a" * 10_000, id="many-stars-no-match"),
            pytest.param(["", "a?a", "a?b"], "a" * 10_000, id="fixed-pieces-no-match"),
            pytest.param(["x", "", "", "", "y"], "x" + "z" * 10_000, id="empty-pieces"),
        ],
    )
    def test_linear_time(self, pieces: list[str], subject: str) -> None:
        """Subjects that make a regex backtrack for hours are decided in milliseconds."""
        with cpu_bound(0.5):
            assert not Glob(pieces, any_character="?").matches(subject)

    def test_needs_a_piece(self) -> None:
        """A glob without pieces is refused."""
        with pytest.raises(ValueError, match="at least one piece"):
            Glob([])

    def test_repr(self) -> None:
        """The repr shows the glob."""
        assert repr(Glob(["a", "b"])) == "<Glob 'a*b'>"
