"""Reading a policy file's text: the size limit, values Python cannot represent, and hostile input."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ask_permissions import ApprovalPolicy, InvalidSnapshotError, load_policy
from ask_permissions.settings._policy_text import MAX_POLICY_FILE_BYTES

from .strategies import json_values
from .test_policy_file import toml_document
from .threads import join, start

LIMIT = sys.get_int_max_str_digits()
HUGE = "1" + "0" * LIMIT  # one digit past the limit
TOO_DEEP = "<a value nested too deeply to read>"


def huge(digits: int = LIMIT + 1) -> str:
    """How the error shows an integer of ``digits`` digits."""
    return f"<an integer of {digits} digits, past Python's limit of {LIMIT}>"


def refused(path: Path, field: str) -> InvalidSnapshotError:
    """load_policy(path) raises InvalidSnapshotError naming the file (with the field's line, when the file has
    several) and the field (also as ``path``)."""
    prefix = re.escape(str(path)) + r"(?::\d+)?: " + re.escape(f"{field or 'snapshot'}: expected ")
    with pytest.raises(InvalidSnapshotError, match=f"^{prefix}") as raised:
        load_policy(path)
    assert raised.value.path == field
    return raised.value


class TestSizeLimit:
    """Files past MAX_POLICY_FILE_BYTES (64 MiB) are refused before they are read whole."""

    def test_limit(self) -> None:
        """The documented limit: 64 MiB, enough for a 100,000-rule file (about 16 MB)."""
        assert MAX_POLICY_FILE_BYTES == 64 * 1024 * 1024

    @pytest.mark.parametrize("size", [MAX_POLICY_FILE_BYTES + 1, 2**40], ids=["one-byte-over", "a-tebibyte"])
    def test_regular_file_by_its_size(self, tmp_path: Path, size: int) -> None:
        """A regular file is measured before reading: even a sparse tebibyte is refused at once."""
        path = tmp_path / "big.json"
        with path.open("wb") as file:
            file.truncate(size)
        with pytest.raises(
            InvalidSnapshotError,
            match=rf"big\.json: the file is {size} bytes; a policy file may be at most "
            rf"{MAX_POLICY_FILE_BYTES} bytes \(64 MiB\)$",
        ) as raised:
            load_policy(path)
        assert (raised.value.path, raised.value.value) == ("", size)

    def test_exactly_the_limit_is_read(self, tmp_path: Path) -> None:
        """A file of exactly the limit is read (here, a valid policy padded with spaces)."""
        path = tmp_path / "padded.json"
        content = b'{"version": 1, "mode": "read_only"}'
        path.write_bytes(content + b" " * (MAX_POLICY_FILE_BYTES - len(content)))
        assert load_policy(path).mode == "read_only"

    def test_endless_fifo(self, tmp_path: Path) -> None:
        """A FIFO that never ends is read only up to the limit, then refused."""
        path = tmp_path / "policy.fifo"
        os.mkfifo(path)
        written: list[int] = []

        def write_forever() -> None:
            chunk = b" " * 2**20
            try:
                with path.open("wb") as fifo:
                    while True:
                        written.append(fifo.write(chunk))
            except BrokenPipeError:  # the reader closed its end
                pass

        writer = start(write_forever)
        with pytest.raises(
            InvalidSnapshotError, match=r"policy\.fifo: the file holds more than 67108864 bytes"
        ):
            load_policy(path)
        join(writer)
        assert MAX_POLICY_FILE_BYTES <= sum(written) < 2 * MAX_POLICY_FILE_BYTES

    def test_device(self) -> None:
        """An endless device is refused the same way."""
        with pytest.raises(InvalidSnapshotError, match=r"^/dev/zero: the file holds more than"):
            load_policy("/dev/zero")


HUGE_INTS = [
    pytest.param("p.json", f'{{"version": {HUGE}}}', "version", huge(), id="json-version"),
    pytest.param(
        "p.json",
        f'{{"version": 1, "tools": {{"bash": {{"risk_level": -{HUGE}}}}}}}',
        "tools.bash.risk_level",
        huge(),
        id="json-tool-entry",
    ),
    pytest.param(
        "p.json",
        f'{{"version": 1, "session_grants": {{"version": 1, "granted_tools": ["a", {HUGE}]}}}}',
        "session_grants.granted_tools[1]",
        huge(),
        id="json-grants",
    ),
    pytest.param(
        "p.json",
        '{"version": 1, "rules": {"version": 1, "rules": [{"tool_pattern": {"type": "all"}, "decision": '
        + HUGE
        + "}]}}",
        "rules.rules[0].decision",
        huge(),
        id="json-rule",
    ),
    pytest.param("p.toml", f"version = {HUGE}\n", "version", huge(), id="toml-version"),
    pytest.param(
        "p.toml",
        "version = 1\n[tools.bash]\nrisk_level = " + "1_" * LIMIT + "1\n",
        "tools.bash.risk_level",
        huge(),
        id="toml-underscores",
    ),
    pytest.param(
        "p.toml",
        f'version = 1\nrequire_approval = [\n  "a",\n  {HUGE},\n]\n',
        "require_approval[1]",
        huge(),
        id="toml-array",
    ),
]

DEEP = [
    pytest.param(
        "p.json",
        '{"version": 1, "tools": {"bash": {"risk_level": %s}}}' % ("[" * 5000 + "]" * 5000),
        "tools.bash.risk_level",
        id="json-deep-arrays",
    ),
    pytest.param("p.json", "[" * 3000 + "]" * 3000, "", id="json-deep-document"),
    pytest.param(
        "p.json",
        '{"version": 1, "rules": {"version": 1, "rules": [%s]}}' % ('{"a": ' * 3000 + "1" + "}" * 3000),
        "rules.rules[0].a",  # an unknown key: reported before its value is looked at
        id="json-deep-objects",
    ),
    pytest.param(
        "p.toml",
        "version = 1\n[tools.bash]\nrisk_level = " + "[" * 5000 + "]" * 5000 + "\n",
        "tools.bash.risk_level",
        id="toml-deep-arrays",
    ),
    pytest.param(
        "p.toml",
        "version = 1 # [tools]\n[tools.x]\nrisk_level = [" + "{a = [" * 2000 + "]}" * 2000 + f", {HUGE}]\n",
        "tools.x.risk_level",
        id="toml-deep-and-huge",
    ),
]


class TestUnrepresentableValues:
    """Integers past Python's digit limit and values nested too deeply are refused by their field."""

    @pytest.mark.parametrize(("name", "text", "field", "shown"), HUGE_INTS)
    def test_huge_integers(self, tmp_path: Path, name: str, text: str, field: str, shown: str) -> None:
        """The error names the file and the field, and shows the integer's size, not its digits."""
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        error = refused(path, field)
        assert str(error).endswith(f"; got {shown}")

    @pytest.mark.parametrize(("name", "text", "field"), DEEP)
    def test_deep_values(self, tmp_path: Path, name: str, text: str, field: str) -> None:
        """The error names the file and the field that holds the deep value."""
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        error = refused(path, field)
        assert len(str(error)) < 400

    def test_deep_array_shown_as_set_aside(self, tmp_path: Path) -> None:
        """The deep value itself is shown as set aside."""
        path = tmp_path / "p.json"
        path.write_text('{"version": 1, "mode": %s}' % ("[" * 5000 + "]" * 5000), encoding="utf-8")
        assert str(refused(path, "mode")).endswith(f"; got {TOO_DEEP}")

    def test_digits_in_a_string_stay(self, tmp_path: Path) -> None:
        """A long run of digits inside a TOML string is text, not an integer, even beside a huge one."""
        path = tmp_path / "p.toml"
        path.write_text(f'version = 1\nmode = "x = 1{"0" * LIMIT},"\nrequire_approval = {HUGE}\n', "utf-8")
        error = refused(path, "mode")
        assert isinstance(error.value, str)
        assert error.value == f"x = 1{'0' * LIMIT},"

    def test_unclosed_deep_document(self, tmp_path: Path) -> None:
        """Nesting that never closes stays a whole-file error."""
        path = tmp_path / "p.json"
        path.write_text("[" * 100_000, encoding="utf-8")
        with pytest.raises(InvalidSnapshotError, match=r"p\.json: nested too deeply to read$"):
            load_policy(path)


# -- fuzzing ------------------------------------------------------------------------------------------------

POLICY_KEYS = ("version", "mode", "rules", "require_approval", "tools", "auto_approve", "session_grants")
_words = st.sampled_from(
    ("read_only", "bash", "regexp", "string", "all", "deny", "allow", "high", "none", "[[a]", "(", "x+")
)
_HOSTILE = ("\x00huge\x00", "\x00deep\x00")
_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6), _words, st.sampled_from(_HOSTILE)
)
_keys = st.one_of(
    st.sampled_from(POLICY_KEYS),
    st.sampled_from(("type", "value", "source", "flags", "decision", "tool_pattern", "argument_pattern")),
    st.sampled_from(("risk_level", "side_effect_scope", "granted_tools", "project_rules", "bash")),
    st.text(max_size=4),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=15,
)
documents = st.one_of(
    st.fixed_dictionaries({"version": st.just(1)}, optional=dict.fromkeys(POLICY_KEYS[1:], _values)),
    st.dictionaries(_keys, _values, max_size=5),
    json_values,
)


def hostile(text: str, quoted: bool) -> str:
    """``text`` with each hostile marker replaced by an integer past the digit limit or deep arrays."""
    wrap = '"{}"' if quoted else "{}"
    return text.replace(wrap.format("\\u0000huge\\u0000"), HUGE).replace(
        wrap.format("\\u0000deep\\u0000"), "[" * 1500 + "]" * 1500
    )


def loads_or_refuses(path: Path) -> None:
    """load_policy(path) returns a policy or raises InvalidSnapshotError naming the file; nothing else."""
    try:
        policy = load_policy(path)
    except InvalidSnapshotError as error:
        message = str(error)
    else:
        assert isinstance(policy, ApprovalPolicy)
        return
    assert re.match(re.escape(str(path)) + r"(?::\d+)?: ", message), message


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class TestFuzz:
    """Random documents and random bytes: a policy or InvalidSnapshotError, never another exception.

    The suite turns warnings into errors, so a random regex Python warns about must be refused too.
    """

    @FUZZ
    @given(documents)
    def test_json_documents(self, document: Any) -> None:
        """Random JSON documents, with huge integers and deep values spliced in."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "p.json"
            path.write_text(hostile(json.dumps(document), quoted=True), encoding="utf-8")
            loads_or_refuses(path)

    @FUZZ
    @given(documents.filter(lambda document: isinstance(document, dict)))
    def test_toml_documents(self, document: dict[str, Any]) -> None:
        """Random TOML documents (inline tables), with huge integers and deep values spliced in."""
        try:
            text = toml_document(document)
        except TypeError:  # a float: the tiny writer has none
            return
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "p.toml"
            toml_text = text.replace('"\\u0000huge\\u0000"', HUGE)
            toml_text = toml_text.replace('"\\u0000deep\\u0000"', "[" * 1500 + "]" * 1500)
            path.write_text(toml_text, encoding="utf-8")
            loads_or_refuses(path)

    @FUZZ
    @given(st.binary(max_size=300), st.sampled_from(("p.json", "p.toml")))
    def test_random_bytes(self, content: bytes, name: str) -> None:
        """Random bytes, read as JSON or as TOML."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            path.write_bytes(content)
            loads_or_refuses(path)

    @FUZZ
    @given(documents.filter(lambda document: not isinstance(document, str)))  # a string is a path
    def test_mappings(self, document: Any) -> None:
        """Random parsed data: a policy, InvalidSnapshotError, or TypeError for what is not a mapping."""
        try:
            load_policy(document)
        except InvalidSnapshotError:
            return
        except TypeError as error:
            message = str(error)
        else:
            return
        assert not isinstance(document, dict)
        assert message.startswith("source: expected a path or a mapping; got ")
