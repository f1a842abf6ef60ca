"""Patterns: argument serialization, matching, the ALL sentinel and pattern snapshots."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import OrderedDict
from decimal import Decimal
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions import ALL, InvalidSnapshotError
from ask_permissions.rules._patterns import (
    AllType,
    argument_pattern_matches,
    decode_pattern,
    encode_pattern,
    is_unrestricted,
    normalize_argument_pattern,
    normalize_tool_pattern,
    serialize_arguments,
    tool_pattern_matches,
)

from .strategies import json_values

SERIALIZATION_CASES = [
    pytest.param({"command": "ls -la"}, '{"command":"ls -la"}', id="dict-compact"),
    pytest.param({"b": 1, "a": 2}, '{"b":1,"a":2}', id="key-order-kept"),
    pytest.param({"path": "/tmp/é"}, '{"path":"/tmp/é"}', id="non-ascii-kept"),
    pytest.param({"a": [1, {"b": None, "c": True}]}, '{"a":[1,{"b":null,"c":true}]}', id="nested"),
    pytest.param({"when": dt.date(2026, 1, 2)}, '{"when":"2026-01-02"}', id="leaf-default-str"),
    pytest.param({"n": Decimal("1.5")}, '{"n":"1.5"}', id="decimal-leaf-str"),
    pytest.param({"p": PurePosixPath("/a/b")}, '{"p":"/a/b"}', id="path-leaf-str"),
    pytest.param({1: "x"}, '{"1":"x"}', id="int-key-as-json"),
    pytest.param({}, "{}", id="empty-dict"),
    pytest.param(OrderedDict([("z", 1), ("a", 2)]), '{"z":1,"a":2}', id="ordered-dict"),
    pytest.param(MappingProxyType({"k": "v"}), '{"k":"v"}', id="non-dict-mapping"),
    pytest.param('{"command": "ls"}', '{"command": "ls"}', id="str-as-is"),
    pytest.param("", "", id="empty-str"),
    pytest.param(None, "", id="none-is-empty"),
    pytest.param(42, "42", id="int-str"),
    pytest.param(["ls", "-la"], "['ls', '-la']", id="list-str-not-json"),
    pytest.param(True, "True", id="bool-str"),
    # What json's C encoder cannot write: the same text for all the rest, a marker or a str() for the part.
    pytest.param(
        {"n": 10**5000, "k": "v"}, '{"n":"<int of about 5000 digits>","k":"v"}', id="int-past-digit-limit"
    ),
    pytest.param({(1, 2): "x", "k": "v"}, '{"(1, 2)":"x","k":"v"}', id="tuple-key-as-str"),
    pytest.param(
        {"nan": float("nan"), "inf": -float("inf"), (0,): 1},
        '{"nan":NaN,"inf":-Infinity,"(0,)":1}',
        id="floats-as-json",
    ),
]

# Nesting deeper than json's C encoder goes (it stops at the recursion limit, about 1000 levels).
_DEEP = 1500


class TestSerializeArguments:
    """Arguments become the text that argument patterns match, exactly as SPEC "Argument matching" says."""

    @pytest.mark.parametrize(("arguments", "expected"), SERIALIZATION_CASES)
    def test_case(self, arguments: object, expected: str) -> None:
        """Each kind of argument value serializes as documented."""
        assert serialize_arguments(arguments) == expected

    def test_str_subclass_kept(self) -> None:
        """A str subclass is used as is, not passed through str() of something else."""

        class Raw(str):
            __slots__ = ()

        assert serialize_arguments(Raw("x y")) == "x y"

    def test_object_uses_str(self) -> None:
        """Any other object is written as its str()."""

        class Args:
            def __str__(self) -> str:
                return "custom text"

        assert serialize_arguments(Args()) == "custom text"

    def test_circular_container_is_a_marker(self) -> None:
        """A dict or list met again inside itself is written as the string "<circular reference>"."""
        arguments: dict[str, Any] = {"command": "rm -rf /"}
        arguments["again"] = [arguments, {"self": arguments}]
        assert serialize_arguments(arguments) == (
            '{"command":"rm -rf /","again":["<circular reference>",{"self":"<circular reference>"}]}'
        )

    def test_shared_but_not_circular_is_written_twice(self) -> None:
        """The same list twice side by side is no cycle: both are written, as json would."""
        shared = ["ls"]
        assert serialize_arguments({"a": shared, "b": shared, "x": {(1,): 1}}) == (
            '{"a":["ls"],"b":["ls"],"x":{"(1,)":1}}'
        )

    def test_circular_list_is_its_repr(self) -> None:
        """A list that contains itself is written as repr writes it."""
        arguments: list[Any] = ["ls"]
        arguments.append(arguments)
        assert serialize_arguments(arguments) == "['ls', [...]]"

    @given(json_values)
    @settings(max_examples=30, deadline=None)
    def test_deep_mapping_writes_what_json_would(self, value: Any) -> None:
        """Any JSON value inside a mapping nested past the C encoder's limit is written as json writes it."""
        arguments: Any = {"v": value}
        for _ in range(_DEEP):
            arguments = {"k": arguments}
        expected = (
            '{"k":' * _DEEP
            + json.dumps({"v": value}, separators=(",", ":"), ensure_ascii=False)
            + "}" * _DEEP
        )
        assert serialize_arguments(arguments) == expected

    @given(json_values)
    @settings(max_examples=30, deadline=None)
    def test_deep_list_writes_what_repr_would(self, value: Any) -> None:
        """Any value inside lists nested past the recursion limit is written as repr writes it."""
        arguments: Any = [value, (value,), {"k": value}]
        for _ in range(_DEEP):
            arguments = [arguments, ()]
        expected = "[" * _DEEP + repr([value, (value,), {"k": value}]) + ", ()]" * _DEEP
        assert serialize_arguments(arguments) == expected

    @given(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
    @settings(max_examples=100, deadline=None)
    def test_dict_equals_json_dumps(self, arguments: dict[str, Any]) -> None:
        """A dict serializes exactly as json.dumps with compact separators and non-ASCII kept."""
        expected = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, default=str)
        assert serialize_arguments(arguments) == expected


TOOL_MATCH_CASES = [
    pytest.param("bash", "bash", True, id="exact"),
    pytest.param("bash", "bash2", False, id="exact-not-prefix"),
    pytest.param("bash", "Bash", False, id="exact-case-sensitive"),
    pytest.param("all", "bash", False, id="string-all-is-a-name"),
    pytest.param("all", "all", True, id="string-all-matches-all"),
    pytest.param(ALL, "bash", True, id="ALL-any-tool"),
    pytest.param(ALL, "all", True, id="ALL-tool-named-all"),
    pytest.param(re.compile("sh"), "bash", True, id="regex-searched"),
    pytest.param(re.compile("^sh"), "bash", False, id="regex-anchored"),
    pytest.param(re.compile("^write_"), "write_file", True, id="regex-prefix"),
    pytest.param(re.compile("BASH", re.IGNORECASE), "bash", True, id="regex-flags"),
    pytest.param(re.compile("^bash$"), "bash\n", True, id="regex-dollar-before-final-newline"),
]


class TestToolPatternMatches:
    """A tool pattern is an exact name, a regex searched in the name, or ALL."""

    @pytest.mark.parametrize(("pattern", "name", "expected"), TOOL_MATCH_CASES)
    def test_case(self, pattern: Any, name: str, expected: bool) -> None:
        """Each tool pattern matches exactly the names documented."""
        assert tool_pattern_matches(pattern, name) is expected


ARGUMENT_MATCH_CASES = [
    pytest.param(None, "", True, id="none-empty"),
    pytest.param(None, '{"a":1}', True, id="none-anything"),
    pytest.param("rm -rf", '{"command":"sudo rm -rf /"}', True, id="substring"),
    pytest.param("rm -rf", '{"command":"rm  -rf"}', False, id="substring-exact-spacing"),
    pytest.param("", "anything", True, id="empty-substring"),
    pytest.param(re.compile(r"rm\s+-rf"), '{"command":"rm  -rf"}', True, id="regex-searched"),
    pytest.param(re.compile("^ls"), '{"command":"ls"}', False, id="regex-anchored-at-json-start"),
    pytest.param(re.compile("^ls"), "ls -la", True, id="regex-anchored-str"),
]


class TestArgumentPatternMatches:
    """An argument pattern is a substring of, or a regex searched in, the serialized arguments."""

    @pytest.mark.parametrize(("pattern", "serialized", "expected"), ARGUMENT_MATCH_CASES)
    def test_case(self, pattern: Any, serialized: str, expected: bool) -> None:
        """Each argument pattern matches exactly the serializations documented."""
        assert argument_pattern_matches(pattern, serialized) is expected


UNRESTRICTED_CASES = [
    pytest.param(None, True, id="none"),
    pytest.param("", True, id="empty-string"),
    pytest.param("ls", False, id="substring"),
    pytest.param(re.compile(""), True, id="empty-regex"),
    pytest.param(re.compile("x*"), True, id="regex-matching-empty"),
    pytest.param(re.compile("^$"), True, id="regex-matching-only-empty"),
    pytest.param(re.compile("(?:)|ls"), True, id="alternation-with-empty"),
    pytest.param(re.compile("."), True, id="regex-any-character"),
    pytest.param(re.compile(r"\S"), True, id="regex-non-space"),
    pytest.param(re.compile("(?s).+"), True, id="regex-dotall-plus"),
    pytest.param(re.compile("^[{]"), True, id="regex-object-start"),
    pytest.param("{", True, id="brace"),
    pytest.param("}", True, id="closing-brace"),
    pytest.param("{}", True, id="empty-object"),
    pytest.param('"', True, id="quote"),
    pytest.param("command", True, id="key-name"),
    pytest.param('{"command":""}', True, id="empty-command"),
    pytest.param('"command":"ls', False, id="command-prefix"),
    pytest.param(re.compile("ls"), False, id="regex-literal"),
    pytest.param(re.compile("^.{15}"), False, id="regex-longer-than-every-probe"),
]


class TestIsUnrestricted:
    """An argument pattern is unrestricted when it matches "", "{}" or '{"command":""}'."""

    @pytest.mark.parametrize(("pattern", "expected"), UNRESTRICTED_CASES)
    def test_case(self, pattern: Any, expected: bool) -> None:
        """A pattern matching no arguments, {} or {"command": ""} is unrestricted; nothing else is."""
        assert is_unrestricted(pattern) is expected


class TestAllSentinel:
    """ALL is a singleton whose repr is ALL, distinct from the string "all"."""

    def test_repr_and_str(self) -> None:
        """repr() and str() of ALL are both ALL."""
        assert repr(ALL) == "ALL"
        assert str(ALL) == "ALL"

    def test_singleton(self) -> None:
        """ALL is the only member of its type."""
        assert ALL is AllType.ALL
        assert list(AllType) == [ALL]

    def test_not_the_string_all(self) -> None:
        """The sentinel never equals a string, so a tool named "all" stays a tool name."""
        sentinel: object = ALL
        assert sentinel != "all"
        assert sentinel != "ALL"


class TestNormalizeToolPattern:
    """Tool patterns given by callers are checked for type and emptiness."""

    def test_valid_patterns_kept(self) -> None:
        """A name, a str regex and ALL are stored as given."""
        regex = re.compile("x")
        assert normalize_tool_pattern("bash") == "bash"
        assert normalize_tool_pattern(regex) is regex
        assert normalize_tool_pattern(ALL) is ALL

    def test_empty_name_is_value_error(self) -> None:
        """No tool is named "", so an empty tool pattern is refused."""
        with pytest.raises(ValueError, match=r"tool_pattern: expected a tool name.*got ''"):
            normalize_tool_pattern("")

    @pytest.mark.parametrize(
        "pattern",
        [
            pytest.param(None, id="none"),
            pytest.param(b"bash", id="bytes"),
            pytest.param(re.compile(b"bash"), id="bytes-regex"),
            pytest.param(1, id="int"),
            pytest.param(["bash"], id="list"),
        ],
    )
    def test_wrong_type_is_type_error(self, pattern: object) -> None:
        """Anything but a str, a str regex or ALL is a TypeError naming the field."""
        with pytest.raises(TypeError, match="tool_pattern: expected"):
            normalize_tool_pattern(pattern)


class TestNormalizeArgumentPattern:
    """Argument patterns given by callers are checked for type; ALL is stored as None."""

    def test_all_and_none_are_none(self) -> None:
        """ALL and None both mean any arguments and are stored as None."""
        assert normalize_argument_pattern(ALL) is None
        assert normalize_argument_pattern(None) is None

    def test_string_and_regex_kept(self) -> None:
        """Strings (even "") and str regexes are stored as given."""
        regex = re.compile("x")
        assert normalize_argument_pattern("") == ""
        assert normalize_argument_pattern("rm") == "rm"
        assert normalize_argument_pattern(regex) is regex

    @pytest.mark.parametrize(
        "pattern",
        [
            pytest.param(b"rm", id="bytes"),
            pytest.param(re.compile(b"rm"), id="bytes-regex"),
            pytest.param(0, id="int"),
            pytest.param({"command": "ls"}, id="dict"),
        ],
    )
    def test_wrong_type_is_type_error(self, pattern: object) -> None:
        """Anything else is a TypeError naming the field."""
        with pytest.raises(TypeError, match="argument_pattern: expected"):
            normalize_argument_pattern(pattern)


ENCODE_CASES = [
    pytest.param(ALL, {"type": "all"}, id="ALL"),
    pytest.param(None, {"type": "all"}, id="none"),
    pytest.param("bash", {"type": "string", "value": "bash"}, id="string"),
    pytest.param("", {"type": "string", "value": ""}, id="empty-string"),
    pytest.param(re.compile("^ba"), {"type": "regexp", "source": "^ba", "flags": ""}, id="regex"),
    pytest.param(re.compile("a", re.IGNORECASE), {"type": "regexp", "source": "a", "flags": "i"}, id="i"),
    pytest.param(re.compile("a", re.DOTALL), {"type": "regexp", "source": "a", "flags": "m"}, id="m-dotall"),
    pytest.param(re.compile("a", re.VERBOSE), {"type": "regexp", "source": "a", "flags": "x"}, id="x"),
    pytest.param(
        re.compile("a", re.VERBOSE | re.IGNORECASE | re.DOTALL),
        {"type": "regexp", "source": "a", "flags": "imx"},
        id="imx",
    ),
    pytest.param(re.compile("a", re.UNICODE), {"type": "regexp", "source": "a", "flags": ""}, id="unicode"),
    pytest.param(re.compile("(?m)^a"), {"type": "regexp", "source": "(?m)^a", "flags": ""}, id="inline-m"),
    pytest.param(re.compile("(?a)\\w"), {"type": "regexp", "source": "(?a)\\w", "flags": ""}, id="inline-a"),
    pytest.param(
        re.compile("(?i)a", re.IGNORECASE),
        {"type": "regexp", "source": "(?i)a", "flags": ""},
        id="inline-dup",
    ),
    pytest.param(
        re.compile("a # (unbalanced", re.VERBOSE),
        {"type": "regexp", "source": "a # (unbalanced", "flags": "x"},
        id="verbose-only-source",
    ),
]


class TestEncodePattern:
    """Patterns encode to the snapshot form of SPEC "Snapshots"."""

    @pytest.mark.parametrize(("pattern", "expected"), ENCODE_CASES)
    def test_case(self, pattern: Any, expected: dict[str, object]) -> None:
        """Each pattern encodes as documented."""
        assert encode_pattern(pattern) == expected

    @pytest.mark.parametrize(
        ("flags", "name"),
        [
            pytest.param(re.MULTILINE, "MULTILINE", id="multiline"),
            pytest.param(re.ASCII, "ASCII", id="ascii"),
            pytest.param(re.MULTILINE | re.IGNORECASE, "MULTILINE", id="multiline-and-i"),
        ],
    )
    def test_flag_without_letter_is_value_error(self, flags: int, name: str) -> None:
        """A flag passed to re.compile that has no snapshot letter raises ValueError naming it."""
        with pytest.raises(ValueError, match=f"regex 'a': only the flags .* got .*{name}"):
            encode_pattern(re.compile("a", flags))

    @pytest.mark.parametrize(
        "letters", ["", "i", "m", "x", "im", "ix", "mx", "imx"], ids=lambda letters: letters or "no-flags"
    )
    def test_round_trip(self, letters: str) -> None:
        """Every combination of flags decodes back to an equal regex."""
        flags = {"i": re.IGNORECASE, "m": re.DOTALL, "x": re.VERBOSE}
        regex = re.compile("a b", sum((flags[letter] for letter in letters), 0))
        assert decode_pattern(encode_pattern(regex), "p") == regex


class TestDecodePattern:
    """Pattern snapshots decode strictly; the gem's symbol type reads as a string."""

    @pytest.mark.parametrize(
        ("data", "expected"),
        [
            pytest.param({"type": "string", "value": "bash"}, "bash", id="string"),
            pytest.param({"type": "symbol", "value": "bash"}, "bash", id="gem-symbol"),
            pytest.param({"type": "symbol", "value": "all"}, ALL, id="gem-symbol-all-is-the-sentinel"),
            pytest.param({"type": "string", "value": "all"}, "all", id="string-all-is-a-name"),
            pytest.param({"type": "all"}, ALL, id="all"),
            pytest.param({"type": "regexp", "source": "^a", "flags": ""}, re.compile("^a"), id="regexp"),
            pytest.param(
                {"type": "regexp", "source": "a", "flags": "xmi"},
                re.compile("a", re.IGNORECASE | re.DOTALL | re.VERBOSE),
                id="flags-any-order",
            ),
        ],
    )
    def test_valid(self, data: dict[str, object], expected: object) -> None:
        """Each valid form decodes to its pattern."""
        assert decode_pattern(data, "p") == expected

    @pytest.mark.parametrize(
        ("data", "path", "message"),
        [
            pytest.param([], "p", r"expected a pattern object; got \[\]", id="not-an-object"),
            pytest.param("bash", "p", "expected a pattern object; got 'bash'", id="bare-string"),
            pytest.param(
                {}, "p.type", "expected one of 'string', 'symbol', 'all', 'regexp'; got None", id="no-type"
            ),
            pytest.param({"type": "glob"}, "p.type", "got 'glob'", id="unknown-type"),
            pytest.param({"type": 1}, "p.type", "got 1", id="type-not-str"),
            pytest.param({"type": "string"}, "p.value", "the key is required", id="string-no-value"),
            pytest.param(
                {"type": "string", "value": 1}, "p.value", "expected a string; got 1", id="value-int"
            ),
            pytest.param({"type": "all", "value": "x"}, "p.value", "no such key", id="all-extra-key"),
            pytest.param({"type": "regexp", "source": "a"}, "p.flags", "the key is required", id="no-flags"),
            pytest.param(
                {"type": "regexp", "source": "a", "flags": None},
                "p.flags",
                "expected a string of i, m, x, each at most once; got None",
                id="flags-null",
            ),
            pytest.param(
                {"type": "regexp", "source": "a", "flags": "ii"}, "p.flags", "got 'ii'", id="dup-flag"
            ),
            pytest.param(
                {"type": "regexp", "source": "a", "flags": "s"}, "p.flags", "got 's'", id="unknown-flag"
            ),
            pytest.param(
                {"type": "regexp", "source": "a", "flags": ["i"]}, "p.flags", "got \\['i'\\]", id="list"
            ),
            pytest.param(
                {"type": "regexp", "source": 1, "flags": ""}, "p.source", "expected a string", id="src"
            ),
            pytest.param(
                {"type": "regexp", "source": "(", "flags": ""},
                "p.source",
                "expected a regex that compiles .*; got '\\('",
                id="re-error",
            ),
            pytest.param(
                {"type": "regexp", "source": "a{99999999999}", "flags": ""},
                "p.source",
                "expected a regex that compiles",
                id="overflow",
            ),
            pytest.param(
                {"type": "regexp", "source": "(" * 2000 + ")" * 2000, "flags": ""},
                "p.source",
                "expected a regex that compiles",
                id="recursion",
            ),
            pytest.param(
                {"type": "regexp", "source": "a", "flags": "", "options": 0},
                "p.options",
                "no such key",
                id="regexp-extra-key",
            ),
            pytest.param({"type": "string", "value": "a", 1: 2}, "p", "expected string keys", id="int-key"),
        ],
    )
    def test_invalid(self, data: object, path: str, message: str) -> None:
        """Each invalid form raises InvalidSnapshotError naming the path to the bad field."""
        with pytest.raises(InvalidSnapshotError, match=message) as caught:
            decode_pattern(data, "p")
        assert caught.value.path == path
        assert str(caught.value).startswith(f"{path}: ")


class TestDecodedTextIsPlain:
    """Strings read from a snapshot are plain str, whatever subclass the snapshot held."""

    def test_str_subclasses_become_str(self) -> None:
        """A tool name, a regex source and a pattern type given as str subclasses decode as plain text."""

        class Sneaky(str):
            __slots__ = ()

            def __eq__(self, other: object) -> bool:
                return True

            __hash__ = str.__hash__

        name = decode_pattern({"type": Sneaky("string"), "value": Sneaky("bash")}, "p")
        assert type(name) is str
        assert name == "bash"
        regex = decode_pattern({"type": "regexp", "source": Sneaky("rm"), "flags": Sneaky("i")}, "p")
        assert isinstance(regex, re.Pattern)
        assert type(regex.pattern) is str
        assert regex.flags & re.IGNORECASE
