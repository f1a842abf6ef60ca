"""args_digest: FNV-1a-64 over canonical JSON, matching loopctl's digests."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
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
