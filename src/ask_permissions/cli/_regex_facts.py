"""What lint learns about a regex's structure: Python's warnings, an example, catastrophic backtracking.

The structure comes from ``re``'s own parser (``re._parser``: private, but the module ``re`` itself has
used it under that name since Python 3.11). It is the only way to see a regex's parts, and, since parsing
caches nothing, to see every warning Python has about a source however often it was compiled before.
If a later Python changes the parser, the checks built on it find nothing rather than fail.
"""

from __future__ import annotations

import importlib
import re
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from statistics import median
from typing import Any, Final, final

from ask_permissions._errors import preview

__all__ = ["Backtracking", "RegexFacts", "RegexStudy"]

_parser: Any = importlib.import_module("re._parser")

_LITERAL: Final = _parser.LITERAL
_NOT_LITERAL: Final = _parser.NOT_LITERAL
_ANY: Final = _parser.ANY
_IN: Final = _parser.IN
_NEGATE: Final = _parser.NEGATE
_RANGE: Final = _parser.RANGE
_CATEGORY: Final = _parser.CATEGORY
_SUBPATTERN: Final = _parser.SUBPATTERN
_BRANCH: Final = _parser.BRANCH
_ATOMIC_GROUP: Final = _parser.ATOMIC_GROUP
_ASSERT: Final = _parser.ASSERT
_ASSERT_NOT: Final = _parser.ASSERT_NOT
_GROUPREF: Final = _parser.GROUPREF
_GROUPREF_EXISTS: Final = _parser.GROUPREF_EXISTS
# Repeats that backtrack; a possessive repeat (a++) never gives back what it took.
_BACKTRACKING_REPEATS: Final = frozenset({_parser.MAX_REPEAT, _parser.MIN_REPEAT})
_REPEATS: Final = _BACKTRACKING_REPEATS | {_parser.POSSESSIVE_REPEAT}

# A character each category holds, and a test for it (sets may negate a category).
_CATEGORY_EXAMPLES: Final = {
    _parser.CATEGORY_DIGIT: "0",
    _parser.CATEGORY_NOT_DIGIT: "a",
    _parser.CATEGORY_SPACE: " ",
    _parser.CATEGORY_NOT_SPACE: "a",
    _parser.CATEGORY_WORD: "a",
    _parser.CATEGORY_NOT_WORD: "!",
    _parser.CATEGORY_LINEBREAK: "\n",
    _parser.CATEGORY_NOT_LINEBREAK: "a",
}
_CATEGORY_TESTS: Final = {
    _parser.CATEGORY_DIGIT: re.compile(r"\d").fullmatch,
    _parser.CATEGORY_NOT_DIGIT: re.compile(r"\D").fullmatch,
    _parser.CATEGORY_SPACE: re.compile(r"\s").fullmatch,
    _parser.CATEGORY_NOT_SPACE: re.compile(r"\S").fullmatch,
    _parser.CATEGORY_WORD: re.compile(r"\w").fullmatch,
    _parser.CATEGORY_NOT_WORD: re.compile(r"\W").fullmatch,
    _parser.CATEGORY_LINEBREAK: re.compile(r"\n").fullmatch,
    _parser.CATEGORY_NOT_LINEBREAK: re.compile(r"[^\n]").fullmatch,
}
_FALLBACK_CHARACTERS: Final = "a0 _-!~x.A/"

_LONGEST_EXAMPLE: Final = 1000  # characters of a repeat's example (a{100000} is no example to show)

# Measuring backtracking. ``re`` cannot be interrupted, so the input starts one repetition long and grows
# by one while each match stays fast; the next step's time is predicted from the growth so far, and no
# step is run that would pass the budget.
_SLOW: Final = 0.1  # seconds: a match this slow is reported
_BUDGET_PER_REGEX: Final = 0.6  # seconds spent measuring one regex
MEASURING_BUDGET: Final = 3.0
"""Seconds one lint run spends measuring regexes at most; candidates past it are reported unmeasured."""
_MOST_REPETITIONS: Final = 64
_FAILING_ENDS: Final = ("!", "\x00", " ", "~", "\n", "a", "0")


@final
@dataclass(frozen=True, slots=True)
class Backtracking:
    """A measured slow match: the input, how long one ``search`` took, and how that time grows."""

    text: str
    seconds: float
    growth: float  # the factor one more repetition multiplies the time by

    def __str__(self) -> str:
        grows = "doubles it" if 1.7 <= self.growth < 2.4 else f"multiplies it by about {self.growth:.1f}"
        return (
            f"matching {preview(self.text)} ({len(self.text)} characters) took {self.seconds:.1f} s, "
            f"and each extra character {grows}"
        )


@final
@dataclass(frozen=True, slots=True)
class RegexFacts:
    """What lint knows about one regex.

    Attributes:
        warnings: Python's warnings about the source, as ``"FutureWarning: Possible nested set at ..."``.
        example: a text the regex finds a match in (checked with ``search``), or ``None``.
        nested_repeat: ``(prefix, pump)`` when a repeat holds a repeat: the text before it and the text
            its inner repeat takes each time (to build inputs that backtrack).
    """

    warnings: tuple[str, ...]
    example: str | None
    nested_repeat: tuple[str, str] | None


_NOTHING: Final = RegexFacts((), None, None)


@final
class RegexStudy:
    """Facts about regexes, worked out once per source and flags, within one lint run.

    Use it as a context manager: inside, warnings are recorded instead of shown (the warnings module's
    state is process-wide, so one lint run should not overlap with code that relies on warnings).
    """

    def __init__(self, measuring_budget: float = MEASURING_BUDGET) -> None:
        self._facts: dict[tuple[str, int], RegexFacts] = {}
        self._backtracking: dict[tuple[str, int], Backtracking | None] = {}
        self._log: list[warnings.WarningMessage] = []
        self.measuring_left = measuring_budget

    @contextmanager
    def recording(self) -> Iterator[RegexStudy]:
        """Record every warning while inside (each time it is raised, not only the first time)."""
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            self._log = log
            yield self

    def facts(self, pattern: re.Pattern[str]) -> RegexFacts:
        """The facts about a compiled regex."""
        key = (pattern.pattern, pattern.flags)
        facts = self._facts.get(key)
        if facts is None:
            facts = self._facts[key] = self._study(pattern)
        return facts

    def backtracking(self, pattern: re.Pattern[str]) -> Backtracking | None:
        """A measured catastrophic match of a regex with nested repeats, or ``None`` if none was seen.

        Call it only when ``facts(pattern).nested_repeat`` is set and ``measuring_left`` is positive.
        """
        key = (pattern.pattern, pattern.flags)
        if key not in self._backtracking:
            nested = self.facts(pattern).nested_repeat
            found = None
            if nested is not None:
                found, spent = _measure(pattern, *nested, min(_BUDGET_PER_REGEX, self.measuring_left))
                self.measuring_left -= spent
            self._backtracking[key] = found
        return self._backtracking[key]

    def _study(self, pattern: re.Pattern[str]) -> RegexFacts:
        start = len(self._log)
        try:
            tree = _parser.parse(pattern.pattern, pattern.flags)
        except Exception:  # a parser of another Python may differ: then nothing is known
            return _NOTHING
        found = tuple(f"{entry.category.__name__}: {entry.message}" for entry in self._log[start:])
        try:
            example = _Examples().sequence(tree)
            nested = _nested_repeat(tree, "")
        except Exception:  # the same: an unknown tree shape means no example
            example, nested = None, None
        if example is not None and pattern.search(example) is None:
            example = None
        return RegexFacts(found, example, nested)


class _Examples:
    """Builds a text for a parsed regex: one choice per branch, each repeat at its minimum."""

    def __init__(self) -> None:
        self.groups: dict[int, str] = {}

    def sequence(self, items: Any) -> str:
        return "".join(self.item(op, argument) for op, argument in items)

    def item(self, op: Any, argument: Any) -> str:
        if op is _LITERAL:
            return chr(argument)
        if op is _NOT_LITERAL:
            return "b" if argument == ord("a") else "a"
        if op is _ANY:
            return "a"
        if op is _IN:
            return _set_member(argument)
        if op in _REPEATS:
            low, _, body = argument
            text = self.sequence(body)
            return (text * max(low, 0))[:_LONGEST_EXAMPLE] if text else ""
        if op is _SUBPATTERN:
            group, _, _, body = argument
            text = self.sequence(body)
            if group is not None:
                self.groups[group] = text
            return text
        if op is _BRANCH:
            return self.sequence(argument[1][0])
        if op is _ATOMIC_GROUP:
            return self.sequence(argument)
        if op is _GROUPREF:
            return self.groups.get(argument, "")
        if op is _GROUPREF_EXISTS:
            return self.sequence(argument[1])
        return ""  # anchors and lookarounds take no text


def _set_member(items: Any) -> str:
    candidates: list[str] = []
    for op, argument in items:
        if op is _LITERAL:
            candidates.append(chr(argument))
        elif op is _RANGE:
            candidates.append(chr(argument[0]))
        elif op is _CATEGORY and argument in _CATEGORY_EXAMPLES:
            candidates.append(_CATEGORY_EXAMPLES[argument])
    pool: list[str] = [*candidates, *_FALLBACK_CHARACTERS]
    return next((char for char in pool if _in_set(items, char)), "")


def _in_set(items: Any, char: str) -> bool:
    code = ord(char)
    negated = False
    found = False
    for op, argument in items:
        if op is _NEGATE:
            negated = True
        elif op is _LITERAL:
            found = found or code == argument
        elif op is _RANGE:
            found = found or argument[0] <= code <= argument[1]
        elif op is _CATEGORY:
            test = _CATEGORY_TESTS.get(argument)
            found = found or (test is not None and test(char) is not None)
    return found != negated


def _nested_repeat(items: Any, before: str) -> tuple[str, str] | None:
    """The first backtracking repeat whose body holds another: the text before it, and the inner pump."""
    examples = _Examples()
    for op, argument in items:
        inside: list[Any] = []
        if op in _BACKTRACKING_REPEATS:
            _, high, body = argument
            if high > 1:
                pump = _inner_repeat(body)
                if pump:
                    return before, pump
            inside = [body]
        elif op is _SUBPATTERN:
            inside = [argument[3]]
        elif op is _BRANCH:
            inside = list(argument[1])
        elif op in (_ATOMIC_GROUP,):
            inside = [argument]
        for body in inside:
            found = _nested_repeat(body, before)
            if found is not None:
                return found
        before += examples.item(op, argument)
    return None


def _inner_repeat(items: Any) -> str | None:
    """The text one step of a repeat inside ``items`` takes (through groups and branches, not atomic)."""
    for op, argument in items:
        if op in _BACKTRACKING_REPEATS and argument[1] > 1:
            text = _Examples().sequence(argument[2])
            if text:
                return text
        bodies = [argument[3]] if op is _SUBPATTERN else list(argument[1]) if op is _BRANCH else []
        for body in bodies:
            found = _inner_repeat(body)
            if found:
                return found
    return None


def _measure(
    pattern: re.Pattern[str], prefix: str, pump: str, budget: float
) -> tuple[Backtracking | None, float]:
    """Time ``search`` on ``prefix + pump * n + end`` for growing ``n``; report a match slower than _SLOW."""
    # An end that makes the match at the start fail, so that re tries every way to split the pumped text
    # (search may still succeed further on: an empty match at the end, say, after the backtracking).
    end = next((end for end in _FAILING_ENDS if pattern.match(prefix + pump * 4 + end) is None), None)
    if end is None:
        return None, 0.0  # every input of this shape matches at once
    spent = 0.0
    times: list[float] = []
    for count in range(1, _MOST_REPETITIONS + 1):
        text = prefix + pump * count + end
        # This thread's CPU time, not the clock's: a busy machine must not make a quick match look slow.
        started = time.thread_time()
        pattern.search(text)
        took = time.thread_time() - started
        spent += took
        times.append(took)
        growth = _growth(times)
        if took >= _SLOW:
            return Backtracking(text, took, growth), spent
        if spent + took * max(growth, 2.0) > budget:
            break
    return None, spent


def _growth(times: list[float]) -> float:
    """The factor per step: the median ratio of the last steps long enough to time (about 1 if linear).

    A median, so that one step another process slowed down does not skew it.
    """
    ratios = sorted(
        later / earlier for earlier, later in zip(times[-7:], times[-6:], strict=False) if earlier > 2e-4
    )
    if not ratios:
        return 1.0
    return float(median(ratios))
