"""Words as a POSIX shell quotes and splits them (hooks' commands, suggested rule text)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions.shell._quoting import join_words, quote_word, split_words

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


class TestQuote:
    """A quoted word reads back as itself, and quoting agrees with the standard library's."""

    @given(st.lists(_TEXT, max_size=6))
    @settings(max_examples=400)
    def test_round_trip(self, words: list[str]) -> None:
        """Splitting joined words gives the words back."""
        assert split_words(join_words(words)) == words

    @given(_TEXT)
    @settings(max_examples=400)
    def test_as_shlex_quotes(self, word: str) -> None:
        """``quote_word`` quotes as ``shlex.quote`` does (the oracle)."""
        assert quote_word(word) == shlex.quote(word)

    def test_plain_words_stay_plain(self) -> None:
        """Words of safe characters are not quoted; the empty word is ``''``."""
        assert join_words(["git", "log", "--oneline", "a/b.c"]) == "git log --oneline a/b.c"
        assert quote_word("") == "''"


_SHELL_TEXT = st.text(st.sampled_from(list("ab $'\"\\\n\t#;|&*")), max_size=24)


class TestSplit:
    """Splitting reads quotes and backslashes as a POSIX shell does, and treats nothing else specially."""

    @given(_SHELL_TEXT)
    @settings(max_examples=800)
    def test_as_shlex_splits(self, text: str) -> None:
        """Where ``shlex.split`` (POSIX mode, no comments) reads the text, ours reads it the same; but a
        backslash before a newline (a line continuation) or a ``$``, which shlex reads otherwise than a
        shell does."""
        if "\\\n" in text or "\\$" in text:
            return  # shlex also keeps the backslash of "\$", which a shell drops
        try:
            expected = shlex.split(text, comments=False, posix=True)
        except ValueError:
            with pytest.raises(ValueError, match=r"unterminated|backslash"):
                split_words(text)
            return
        assert split_words(text) == expected

    @pytest.mark.parametrize(
        ("text", "words"),
        [
            pytest.param("a 'b c' \"d e\" f\\ g", ["a", "b c", "d e", "f g"], id="quoting"),
            pytest.param('"a\\"b" "\\x"', ['a"b', "\\x"], id="double-quote-escapes"),
            pytest.param("a;b | c", ["a;b", "|", "c"], id="no-operators"),
            pytest.param("a \\\n b", ["a", "b"], id="line-continuation"),
            pytest.param("''", [""], id="empty-word"),
            pytest.param("$TOOL_INPUT", ["$TOOL_INPUT"], id="nothing-expanded"),
        ],
    )
    def test_split(self, text: str, words: list[str]) -> None:
        """Each text splits into the listed words."""
        assert split_words(text) == words

    @pytest.mark.parametrize(
        ("text", "match"), [("a 'b", "unterminated '"), ('a "b', 'unterminated "'), ("a\\", "backslash")]
    )
    def test_errors(self, text: str, match: str) -> None:
        """An unterminated quote or a final backslash is a ValueError saying which."""
        with pytest.raises(ValueError, match=match):
            split_words(text)
