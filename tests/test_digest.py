"""args_digest: FNV-1a-64 over canonical JSON, matching loopctl's digests."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import args_digest
from ask_permissions.policy._digest import canonical_json, fnv1a_64

from .strategies import plain_json

FNV_VECTORS = [(b"", "cbf29ce484222325"), (b"a", "af63dc4c8601ec8c"), (b"foobar", "85944171f73967e8")]

DIGEST_VECTORS = [
    ({"b": 1, "a": {"d": [1, "x"], "c": None}}, "10030d4b7031ee7c"),
    ({"path": "/tmp/x", "limit": 10}, "f1ed61cd8ca5e26b"),
]


class TestVectors:
    """FNV-1a-64 and args_digest give the published and loopctl vectors."""

    @pytest.mark.parametrize(("data", "expected"), FNV_VECTORS, ids=["empty", "a", "foobar"])
    def test_fnv1a_64(self, data: bytes, expected: str) -> None:
        """FNV-1a-64 gives the published test vectors."""
        assert fnv1a_64(data) == expected

    @pytest.mark.parametrize(("arguments", "expected"), DIGEST_VECTORS, ids=["nested", "loopctl"])
    def test_args_digest(self, arguments: dict[str, Any], expected: str) -> None:
        """The digest of known arguments is the one loopctl gives."""
        assert args_digest(arguments) == expected

    def test_canonical_form(self) -> None:
        """Canonical JSON sorts keys recursively, is compact, keeps non-ASCII and writes None as null."""
        assert canonical_json({"é": None, "a": {"z": 1, "b": [True]}}) == '{"a":{"b":[true],"z":1},"é":null}'

    def test_mixed_key_types_still_digest(self) -> None:
        """Keys of mixed types are written as json writes them, then sorted."""
        assert canonical_json({1: "x", "a": 2}) == '{"1":"x","a":2}'


# Nesting deeper than json's C encoder goes (it stops at the recursion limit, about 1000 levels).
_DEEP = 1500


class TestAnyArguments:
    """Every argument value has a canonical text that encodes as UTF-8, and so a digest."""

    def test_lone_surrogate_is_escaped(self) -> None:
        """A lone surrogate is written as its \\u escape: UTF-8 text that parses back to the same string."""
        arguments = {"note": "\ud800 half", "b": ["\udfff"], "é": "ok"}
        text = canonical_json(arguments)
        assert text == '{"b":["\\udfff"],"note":"\\ud800 half","é":"ok"}'
        assert json.loads(text) == arguments
        assert args_digest(arguments) == fnv1a_64(text.encode("utf-8"))

    def test_surrogate_in_a_key(self) -> None:
        """A surrogate in a key is escaped too."""
        assert canonical_json({"\ud83d": 1}) == '{"\\ud83d":1}'

    def test_escaped_backslash_before_a_surrogate(self) -> None:
        """A backslash just before a surrogate stays an escaped backslash: the text still parses back."""
        arguments = {"path": "C:\\\ud800"}
        assert json.loads(canonical_json(arguments)) == arguments

    def test_circular_container_is_a_marker(self) -> None:
        """A container met again inside itself is written as the string "<circular reference>"."""
        arguments: dict[str, Any] = {"z": 1}
        arguments["a"] = [arguments]
        assert canonical_json(arguments) == '{"a":["<circular reference>"],"z":1}'
        assert args_digest(arguments) == fnv1a_64(b'{"a":["<circular reference>"],"z":1}')

    def test_circular_with_mixed_keys(self) -> None:
        """Keys of mixed types in a circular value: converted, sorted, and the cycle marked."""
        arguments: dict[Any, Any] = {1: "x", "a": 2}
        arguments["self"] = arguments
        assert canonical_json(arguments) == '{"1":"x","a":2,"self":"<circular reference>"}'

    @given(plain_json)
    @settings(max_examples=30, deadline=None)
    def test_deep_values_digest_as_json_would(self, value: Any) -> None:
        """A value nested past the C encoder's limit has the canonical text json would write, were it able."""
        arguments: Any = value
        for _ in range(_DEEP):
            arguments = {"k": [arguments]}
        inner = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        expected = '{"k":[' * _DEEP + inner + "]}" * _DEEP
        assert canonical_json(arguments) == expected

    def test_int_past_the_digit_limit(self) -> None:
        """An int too long to write in decimal is written as a string saying how long it is."""
        assert canonical_json({"n": 10**5000}) == '{"n":"<int of about 5000 digits>"}'


class TestProperties:
    """The digest depends on the arguments' canonical JSON only, and always has the same shape."""

    @given(st.dictionaries(st.text(max_size=6), plain_json, max_size=6), st.randoms())
    def test_key_order_never_changes_the_digest(self, arguments: dict[str, Any], random: Any) -> None:
        """Reordering keys leaves the digest as it is."""
        items = list(arguments.items())
        random.shuffle(items)
        assert args_digest(dict(items)) == args_digest(arguments)

    @given(st.dictionaries(st.text(max_size=6), plain_json, min_size=1, max_size=6), plain_json)
    def test_a_changed_value_changes_the_digest(self, arguments: dict[str, Any], value: Any) -> None:
        """Changing a value changes the digest (unless the canonical JSON is the same)."""
        key = next(iter(arguments))
        changed = {**arguments, key: value}
        if canonical_json(changed) != canonical_json(arguments):
            assert args_digest(changed) != args_digest(arguments)

    @given(plain_json)
    def test_digest_shape(self, arguments: Any) -> None:
        """A digest is 16 lowercase hex characters."""
        digest = args_digest(arguments)
        assert len(digest) == 16
        assert digest == digest.lower()
        int(digest, 16)
