"""The MCP proxy's elicitation text: the whole call as JSON, nothing that can hide or forge a line."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ask_permissions.integrations._mcp_prompt import approval_prompt, visible_json
from tests.strategies import nested, plain_json

LABELS = ("Warning: ", "Tool: ", "Arguments: ", "Reason: ", "Layer: ", "Rule: ", "Source: ", "Suggestions: ")

HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}

# Characters that break, hide or reorder a line when shown as they are.
HIDDEN_CHARACTERS = [
    pytest.param("\n", id="line-feed"),
    pytest.param("\r", id="carriage-return"),
    pytest.param("\x1b[2K\x1b[1A", id="ansi-erase-line"),
    pytest.param("\x7f", id="delete"),
    pytest.param("\x85", id="next-line"),
    pytest.param("\u2028", id="line-separator"),
    pytest.param("\u2029", id="paragraph-separator"),
    pytest.param("\u202e", id="right-to-left-override"),
    pytest.param("\u2066", id="left-to-right-isolate"),
    pytest.param("\u200b", id="zero-width-space"),
    pytest.param("\ufeff", id="byte-order-mark"),
    pytest.param("\u00a0", id="no-break-space"),
    pytest.param("\u3000", id="ideographic-space"),
    pytest.param("\ud800", id="lone-surrogate"),
    pytest.param("\ue000", id="private-use"),
    pytest.param("\U000e0041", id="tag-character"),
    pytest.param("\U0010fffd", id="astral-private-use"),
]


# Characters that show nothing at all though their category is a letter, a mark or a symbol: Unicode's
# default-ignorable code points outside the categories above, and the blank braille pattern.
INVISIBLE_CHARACTERS = [
    pytest.param("\u034f", id="combining-grapheme-joiner"),
    pytest.param("\u115f", id="hangul-choseong-filler"),
    pytest.param("\u1160", id="hangul-jungseong-filler"),
    pytest.param("\u17b4", id="khmer-vowel-inherent-aq"),
    pytest.param("\u180b", id="mongolian-free-variation-selector"),
    pytest.param("\u180f", id="mongolian-free-variation-selector-four"),
    pytest.param("\u2800", id="braille-pattern-blank"),
    pytest.param("\u3164", id="hangul-filler"),
    pytest.param("\ufe0f", id="variation-selector-16"),
    pytest.param("\uffa0", id="halfwidth-hangul-filler"),
    pytest.param("\U000e0100", id="variation-selector-17"),
]

# Two keys a tool tells apart that must not look alike to the person: the tool reads "path", the person
# must not be led to read the other one as "path".
LOOK_ALIKE_KEYS = [
    pytest.param("p\u0430th", id="cyrillic-a"),
    pytest.param("\uff50ath", id="fullwidth-p"),
    pytest.param("pa\u0074\u0335h", id="combining-stroke"),
    pytest.param("path\u3164", id="hangul-filler"),
    pytest.param("path ", id="trailing-space"),
]


def _shown(text: str) -> bool:
    """Whether every character of ``text`` shows as itself: none hides, moves or breaks the line."""
    return all(char == " " or unicodedata.category(char) not in HIDDEN_CATEGORIES for char in text)


class TestVisibleJson:
    """visible_json writes canonical JSON with every hiding character escaped, and reads back the same."""

    @given(plain_json)
    def test_round_trip(self, value: Any) -> None:
        """json.loads of the text is the value; the text shows every character as itself."""
        text = visible_json(value)
        assert text is not None
        assert json.loads(text) == value
        assert _shown(text)

    @pytest.mark.parametrize("char", HIDDEN_CHARACTERS)
    def test_hidden_characters_are_escaped(self, char: str) -> None:
        """Each character that could forge or hide text is written as its \\u escape, in keys and values."""
        value = {f"k{char}": f"a{char}b"}
        text = visible_json(value)
        assert text is not None
        assert char not in text
        assert _shown(text)
        assert json.loads(text) == value

    @pytest.mark.parametrize("char", INVISIBLE_CHARACTERS)
    def test_invisible_characters_are_escaped(self, char: str) -> None:
        """A character that shows nothing (a filler, a variation selector, a blank) is written as its
        escape in keys and values: nothing the tool gets is invisible to the person."""
        value = {f"k{char}": f"a{char}b"}
        text = visible_json(value)
        assert text is not None
        assert char not in text
        assert json.loads(text) == value

    @pytest.mark.parametrize("look_alike", LOOK_ALIKE_KEYS)
    def test_a_key_never_looks_like_another(self, look_alike: str) -> None:
        """A key's every character outside printable ASCII is escaped: a second key that looks like "path"
        shows as its escapes, so the person can tell which value the tool reads as "path"."""
        value = {"path": "/etc/shadow", look_alike: "notes.txt"}
        text = visible_json(value)
        assert text is not None
        assert json.loads(text) == value
        shown_keys = re.findall(r'"((?:[^"\\]|\\.)*)": ', text)
        assert len(set(shown_keys)) == 2
        assert "path" in shown_keys
        assert all(key.isascii() and " " not in key for key in shown_keys)
        assert "notes.txt" in text  # values keep their letters

    def test_keys_are_sorted(self) -> None:
        """The same object in any key order is the same text."""
        assert visible_json({"b": 1, "a": [2, {"d": 3, "c": 4}]}) == '{"a": [2, {"c": 4, "d": 3}], "b": 1}'

    def test_printable_non_ascii_is_kept(self) -> None:
        """Accented and other scripts' letters are shown as they are."""
        assert visible_json({"path": "café/日本"}) == '{"path": "café/日本"}'

    @pytest.mark.parametrize(
        "value",
        [nested(5000), nested(5000, "dict"), 10**5000, {1: "a", "b": 2}, object()],
        ids=["deep-list", "deep-dict", "huge-int", "mixed-keys", "object"],
    )
    def test_a_value_that_cannot_be_written_whole_is_none(self, value: object) -> None:
        """Nesting past the recursion limit, an integer past the digit limit, unsortable keys: None."""
        assert visible_json(value) is None


class TestApprovalPrompt:
    """approval_prompt: a fixed heading, then one label and one JSON value per line."""

    def test_every_fact_on_its_own_line(self) -> None:
        """Warning, tool, arguments, reason, layer, rule, source and suggestions, in that order."""
        prompt = approval_prompt(
            tool="bash",
            arguments={"command": "ls"},
            reason="Tool 'bash' requires approval",
            layer="ask_rule",
            rule="Bash(ls:*)",
            source="policy.toml",
            suggestions=["Bash(ls -l)"],
            warning="changed",
        )
        assert prompt is not None
        assert prompt.splitlines()[1:] == [
            'Warning: "changed"',
            'Tool: "bash"',
            'Arguments: {"command": "ls"}',
            "Reason: \"Tool 'bash' requires approval\"",
            'Layer: "ask_rule"',
            'Rule: "Bash(ls:*)"',
            'Source: "policy.toml"',
            'Suggestions: ["Bash(ls -l)"]',
        ]

    def test_nothing_is_cut(self) -> None:
        """A long command, a fifth key and a nested value are all in the prompt, with no ellipsis."""
        command = "echo start; " + "x" * 5000 + "; rm -rf ~"
        arguments = {"a": 1, "b": 2, "c": 3, "d": 4, "command": command, "deep": {"e": [{"f": "rm"}]}}
        prompt = approval_prompt(tool="bash", arguments=arguments, reason="r")
        assert prompt is not None
        (line,) = [line for line in prompt.splitlines() if line.startswith("Arguments: ")]
        assert json.loads(line.removeprefix("Arguments: ")) == arguments
        assert "..." not in prompt
        assert "…" not in prompt

    @given(
        st.text(min_size=1),
        plain_json,
        st.text(),
        st.one_of(st.none(), st.text()),
        st.lists(st.text(), max_size=3),
    )
    def test_no_value_can_forge_a_line(
        self, tool: str, arguments: Any, reason: str, rule: str | None, suggestions: list[str]
    ) -> None:
        """Whatever the tool name, arguments, reason, rule or suggestions hold, each line is one label and
        one JSON value that reads back as what was given."""
        prompt = approval_prompt(
            tool=tool, arguments=arguments, reason=reason, rule=rule, suggestions=suggestions
        )
        assert prompt is not None
        heading, *lines = prompt.split("\n")
        assert heading.startswith("A tool call waits for your approval.")
        assert _shown(prompt.replace("\n", ""))
        read = {}
        for line in lines:
            label = next(label for label in LABELS if line.startswith(label))
            read[label] = json.loads(line.removeprefix(label))
        assert read["Tool: "] == tool
        assert read["Arguments: "] == arguments
        assert read["Reason: "] == reason
        assert read.get("Rule: ") == rule
        assert read.get("Suggestions: ", []) == suggestions

    @given(plain_json, st.integers(0, 400))
    def test_a_limit_gives_the_whole_prompt_or_none(self, arguments: Any, limit: int) -> None:
        """With a limit, the prompt is the same as without one when it fits, and None when it does not."""
        whole = approval_prompt(tool="bash", arguments=arguments, reason="r")
        assert whole is not None
        limited = approval_prompt(tool="bash", arguments=arguments, reason="r", limit=limit)
        assert limited == (whole if len(whole) <= limit else None)

    def test_a_value_that_cannot_be_written_gives_no_prompt(self) -> None:
        """Arguments nested past the recursion limit: None (the proxy holds the call instead)."""
        assert approval_prompt(tool="bash", arguments=nested(5000), reason="r") is None
