"""A policy file's text as data: read within a size limit, parsed as JSON or TOML, never raising raw.

Python's parsers fail on two kinds of valid-looking input without saying where: an integer past Python's
digit limit (``sys.get_int_max_str_digits()``) and values nested deeper than the recursion limit. Here such
a value becomes an ``Unreadable`` marker in its place, which validation then refuses with the path to it,
like any other value of the wrong type.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tomllib
from collections.abc import Callable
from typing import Final, final

from ask_permissions._errors import InvalidSnapshotError

__all__ = ["MAX_POLICY_FILE_BYTES", "Unreadable", "parse_policy_bytes", "read_policy_bytes"]

MAX_POLICY_FILE_BYTES: Final = 64 * 1024 * 1024
"""The largest policy file ``load_policy`` reads: 64 MiB (a 100,000-rule file is about 15 MiB).

A larger file is refused before it is read: its size is checked first, and at most one byte more than this
is ever read, so a FIFO, a device or a file that keeps growing cannot make it read without end.
"""


@final
class Unreadable:
    """Stands where a file holds a value Python cannot represent; no field accepts it."""

    __slots__ = ("description",)

    def __init__(self, description: str) -> None:
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}>"


def read_policy_bytes(where: str) -> bytes:
    """The content of the file at ``where``, refused when it holds more than ``MAX_POLICY_FILE_BYTES``.

    Raises:
        OSError: the file cannot be read.
        InvalidSnapshotError: the file is too large.
    """
    limit = f"{MAX_POLICY_FILE_BYTES} bytes ({MAX_POLICY_FILE_BYTES // 2**20} MiB)"
    with open(where, "rb") as file:
        status = os.fstat(file.fileno())
        if stat.S_ISREG(status.st_mode) and status.st_size > MAX_POLICY_FILE_BYTES:
            raise InvalidSnapshotError(
                f"{where}: the file is {status.st_size} bytes; a policy file may be at most {limit}",
                path="",
                value=status.st_size,
            )
        raw = file.read(MAX_POLICY_FILE_BYTES + 1)
    if len(raw) > MAX_POLICY_FILE_BYTES:  # it grew while read, or is a FIFO or a device
        raise InvalidSnapshotError(
            f"{where}: the file holds more than {limit}, the most a policy file may hold", path=""
        )
    return raw


def parse_policy_bytes(raw: bytes, where: str, *, toml: bool) -> object:
    """A policy file's content parsed as TOML or JSON (not yet validated).

    An integer past Python's digit limit, or a value nested too deeply for the parser, is kept as an
    ``Unreadable`` marker, so that validation names its path.

    Raises:
        InvalidSnapshotError: not UTF-8, or a syntax error; the message starts with ``where``.
    """
    try:
        text = raw.decode("utf-8")
        return _parse_toml(text) if toml else _parse_json(text)
    except _DuplicateKeyError as error:
        problem = f"invalid JSON: the key {error.key!r} appears twice in one object"
    except UnicodeDecodeError as error:
        problem = f"not UTF-8 text ({error.reason} at byte {error.start})"
    except tomllib.TOMLDecodeError as error:
        problem = f"invalid TOML: {error}"
    except json.JSONDecodeError as error:
        problem = f"invalid JSON: {error}"
    except (RecursionError, _TooDeepError):
        problem = "nested too deeply to read"
    except ValueError as error:  # an integer past the digit limit that could not be located
        problem = f"cannot read a value ({error})"
    raise InvalidSnapshotError(f"{where}: {problem}", path="", value=None)


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _TooDeepError(Exception):
    """Still too deep after the deep values were set aside."""


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # json keeps the last of two equal keys; TOML refuses them. A policy must not depend on which
    # of two "mode" entries a parser happens to keep, so JSON refuses them too.
    data: dict[str, object] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKeyError(key)
        data[key] = value
    return data


def _json_int(text: str) -> int | Unreadable:
    try:
        return int(text)
    except ValueError:  # past sys.get_int_max_str_digits()
        return _huge_int(len(text.lstrip("-")))


def _huge_int(digits: int) -> Unreadable:
    limit = sys.get_int_max_str_digits()
    return Unreadable(f"an integer of {digits} digits, past Python's limit of {limit}")


def _load_json(text: str) -> object:
    return json.loads(text, object_pairs_hook=_object_without_duplicates, parse_int=_json_int)


def _parse_json(text: str) -> object:
    try:
        return _load_json(text)
    except RecursionError:
        pass
    shallow, markers = _set_aside_deep_values(text, _JSON_TOKENS, toml=False)
    return _parse_again(lambda: _load_json(shallow), markers)


def _parse_toml(text: str) -> object:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except (RecursionError, ValueError) as error:
        # tomllib takes no parse_int, so an integer past the digit limit fails the whole document, as
        # deep nesting does: set both kinds of value aside and parse again.
        shallow, deep = _set_aside_deep_values(text, _TOML_TOKENS, toml=True)
        shallow, huge = _set_aside_huge_ints(shallow)
        if not deep and not huge:
            raise error from None
    return _parse_again(lambda: tomllib.loads(shallow), deep | huge)


# -- setting values aside -------------------------------------------------------------------------------
# The text is rewritten with a unique literal in place of each value Python cannot read, parsed again, and
# each literal in the result is then replaced by its Unreadable marker. Only an unusual file takes this path.

_Markers = dict[object, Unreadable]

# A literal no real policy file holds: a string starting with NUL, or a 36-digit integer.
_STRING_MARKER: Final = "\x00ask-permissions:set-aside:"
_INT_MARKER_BASE: Final = 738_291_046_518_273_645_091_827_364_500_000_000_000


def _parse_again(parse: Callable[[], object], markers: _Markers) -> object:
    try:
        data = parse()
    except RecursionError:
        raise _TooDeepError from None
    return _put_back(data, markers)


def _put_back(data: object, markers: _Markers) -> object:
    """``data`` with each marker literal replaced by its ``Unreadable`` (iteratively: it may be deep)."""

    def swap(value: object) -> object:
        if isinstance(value, str | int) and not isinstance(value, bool):
            return markers.get(value, value)
        return value

    root: list[object] = [data]
    stack: list[list[object] | dict[str, object]] = [root]
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            for key, value in container.items():
                if isinstance(value, list | dict):
                    stack.append(value)
                else:
                    container[key] = swap(value)  # replaces a value: the dict's size stays
        else:
            for index, value in enumerate(container):
                if isinstance(value, list | dict):
                    stack.append(value)
                else:
                    container[index] = swap(value)
    return root[0]


# TOML strings and comments, passed over whole, and a decimal integer where a value starts (TOML allows
# underscores between digits; the limit counts digits only). A float ("1000.5") is not one: Python reads
# floats of any length.
_TOML_STRINGS: Final = r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
_TOML_DECIMALS: Final = re.compile(
    rf"(?P<skip>{_TOML_STRINGS})"
    r"|(?<=[=\[,{])(?P<lead>\s*[+-]?)(?P<number>[0-9](?:_?[0-9])*)(?=\s*(?:[,\]}#]|$))",
    re.DOTALL | re.MULTILINE,
)


def _set_aside_huge_ints(text: str) -> tuple[str, _Markers]:
    limit = sys.get_int_max_str_digits()
    markers: _Markers = {}
    if not limit:
        return text, markers

    def replace(match: re.Match[str]) -> str:
        number = match["number"]
        if number is None:
            return match.group()  # a string or a comment
        digits = len(number) - number.count("_")
        if digits <= limit:
            return match.group()
        marker = _INT_MARKER_BASE + len(markers)
        markers[marker] = _huge_int(digits)
        return f"{match['lead']}{marker}"

    return _TOML_DECIMALS.sub(replace, text), markers


# Strings (whose brackets do not count), comments, brackets, and what tells a TOML table header from an
# inline array: an "=" or a line break seen at the top level.
_JSON_TOKENS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_TOML_TOKENS: Final = re.compile(rf"{_TOML_STRINGS}|[\[\]{{}}=\n]", re.DOTALL)

_TOO_DEEP: Final = 100  # far below where either parser fails, far above any real policy file's nesting
# The deepest container set aside: nothing valid nests deeper than this, so validation still meets the
# marker inside the field that holds it.
_SET_ASIDE_LEVEL: Final = 8


def _set_aside_deep_values(text: str, tokens: re.Pattern[str], *, toml: bool) -> tuple[str, _Markers]:
    """``text`` with each value that nests deeper than ``_TOO_DEEP`` replaced by a marker string.

    The container replaced is the value of the field that holds the deep arrays (the outermost of the
    trailing run of arrays), or the one at ``_SET_ASIDE_LEVEL`` for deep objects.
    """
    markers: _Markers = {}
    pieces: list[str] = []
    done = 0  # text[:done] is already in pieces
    stack: list[str] = []  # the open brackets
    starts: list[int] = []  # where each of them is
    cut: tuple[int, int] | None = None  # the stack level being set aside, and where it starts
    header = False  # inside a TOML table header
    assigned = False  # a TOML "=" was seen on this line at the top level
    for token in tokens.finditer(text):
        char = token.group()
        if toml and not stack:
            if char == "\n":
                header = assigned = False
                continue
            if char == "=":
                assigned = True
                continue
            if header or (char == "[" and not assigned):
                header = True  # "[table]" and "[[array]]" headers nest nothing
                continue
        if char in "[{":
            stack.append(char)
            starts.append(token.start())
            if cut is None and len(stack) > _TOO_DEEP:
                level = _level_to_set_aside(stack)
                cut = (level, starts[level])
        elif char in "]}" and stack:
            stack.pop()
            starts.pop()
            if cut is not None and len(stack) == cut[0]:
                marker = f"{_STRING_MARKER}{len(markers)}"
                markers[marker] = Unreadable("a value nested too deeply to read")
                pieces.append(text[done : cut[1]])
                pieces.append(json.dumps(marker))  # a valid string literal in TOML as in JSON
                done = token.end()
                cut = None
    pieces.append(text[done:])
    return "".join(pieces), markers


def _level_to_set_aside(stack: list[str]) -> int:
    """The stack index of the container to replace (see ``_set_aside_deep_values``)."""
    level = len(stack) - 1
    if stack[level] == "[":
        while level > 0 and stack[level - 1] == "[":
            level -= 1
    return min(level, _SET_ASIDE_LEVEL)
