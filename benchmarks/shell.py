"""Benchmarks of reading shell commands: long commands against tree-sitter-bash, and the hot path against
the commit this reader replaced.

``python benchmarks/shell.py`` prints two markdown tables, every figure also as a ratio to a baseline measured
in the same run:

- **long commands** (heredoc file writes of 1 KB to 1 MB, commit messages of 1 to 50 KB, ``&&``-chains of
  10 to 5,000 commands): the time to decide the call, with ``PermissionRules.classify`` and with a
  ``LayeredPolicy.before_tool_call`` (a realistic handful of rules, safety checks included), each read
  afresh (caches cleared), divided by tree-sitter-bash's time to parse the same text (its bytes encoded
  included); and, apart, what a decision record costs a host that keeps them (``on_decision``): its
  FNV-1a digest of the arguments;
- **the hot path** (``classify`` with 100 text rules, ``LayeredPolicy.before_tool_call`` on short commands):
  this checkout against ``BASELINE_COMMIT``, checked out side by side in a temporary git worktree and run in
  the same run, in subprocesses that alternate.

Times are the process's CPU time (``time.process_time``), not the wall clock, so that other jobs on a shared
machine disturb them less (tree-sitter runs in the same process, so its time is measured alike). Then the
targets and whether this run meets them (``--check``: exit status 1 when one is missed).
``--quick`` runs in seconds, only to prove the script works (CI does that); its figures are rough. Needs the
``test`` extra (tree-sitter-bash) and, for the hot path, ``git``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from itertools import repeat
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BASELINE_COMMIT = "7c4c71a515e4ea9162aa5eba26ca37d11c0e3798"
"""``git merge-base HEAD main`` when the shell grammar replaced the splitter (``rules/_shell.py``)."""

TARGET_RATIO = 10.0  # our decision time / tree-sitter's parse time, at every size
TARGET_1MB_MS = 200.0  # a 1 MB command decided in under this
TARGET_HOT_PATH = 1.1  # this checkout / the baseline, on the hot path
TARGETED_HOT_PATH = frozenset(
    {
        "classify, 100 text rules, match-last, same command",
        "classify, 100 text rules, no match",
        "classify, 100 text rules, match-last, distinct commands",
        "classify, 100 text rules, compound command",
        "LayeredPolicy before_tool_call, 100 rules over 4 sources, proceed",
    }
)
"""The hot-path rows the 1.1 target is for (the issue's: classify with 100 text rules, LayeredPolicy's
before_tool_call on short commands); others are shown for what they say."""

RULES = {
    "allow": ("Bash(git status)", "Bash(ls *)", "Bash(npm run test:*)", "Bash(git commit *)", "Bash(cat *)"),
    "ask": ("Bash(git push *)",),
    "deny": ("Bash(rm *)", "Bash(curl *)"),
}
"""A realistic handful of rules for the long commands."""


# -- timing ----------------------------------------------------------------------------------------------


def _once(operation: Callable[[], object], setup: Callable[[], object]) -> float:
    setup()
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        operation()
        return time.process_time() - start
    finally:
        gc.enable()


def median_seconds(operation: Callable[[], object], repeats: int, setup: Callable[[], object]) -> float:
    """The median time of ``operation`` over ``repeats`` runs, each after ``setup`` (a warm-up run first)."""
    _once(operation, setup)
    return statistics.median(_once(operation, setup) for _ in range(repeats))


def per_operation_ns(operation: Callable[[], object], batch_seconds: float, repeats: int) -> float:
    """The median ns per operation over batches of about ``batch_seconds``."""
    n = 1
    while True:
        start = time.process_time_ns()
        for _ in repeat(None, n):
            operation()
        elapsed = time.process_time_ns() - start
        if elapsed >= batch_seconds * 1e9 / 4 or n >= 1 << 22:
            break
        n *= 4
    n = max(1, int(batch_seconds * 1e9 * n / max(elapsed, 1)))
    samples = []
    for _ in range(repeats):
        gc.disable()
        try:
            start = time.process_time_ns()
            for _ in repeat(None, n):
                operation()
            samples.append((time.process_time_ns() - start) / n)
        finally:
            gc.enable()
    return statistics.median(samples)


# -- long commands ---------------------------------------------------------------------------------------

_CODE_LINES = (
    "def read_config(path: str) -> dict[str, str]:",
    '    """Read the settings file; it\'s small, so read it whole."""',
    "    with open(path, encoding='utf-8') as handle:",
    '        return {key: value for key, _, value in (line.partition("=") for line in handle)}',
    "",
    "# Costs $5 a month; see `docs/costs.md` (and don't forget the \\n at the end).",
    'PATTERN = r"^(?P<name>[a-z_]+)\\s*=\\s*(?P<value>.*)$"',
    "print(f\"{len(items)} items; total: {sum(item['price'] for item in items)}\")",
)
_MESSAGE_LINES = (
    "Read commands with a parser that builds a syntax tree",
    "",
    "The scanner interpreted while it scanned; now the readings are worked out over the tree, so a",
    "heredoc's body is data and a line after it is read as bash reads it (\"it's\" no longer hides it).",
    "- heredocs, here-strings and \\$-expansions are parts of words; `case` patterns take their '('",
)


def _lines(template: tuple[str, ...], size: int) -> str:
    out: list[str] = []
    total = 0
    index = 0
    while total < size:
        line = template[index % len(template)]
        out.append(line)
        total += len(line) + 1
        index += 1
    return "\n".join(out)[:size]


def heredoc_write(size: int, variant: int = 0) -> str:
    """An agent writing a file of ``size`` characters with a quoted heredoc (``variant`` names the file)."""
    return f"cat > src/app/config{variant}.py <<'EOF'\n{_lines(_CODE_LINES, size)}\nEOF"


def commit_message(size: int, variant: int = 0) -> str:
    """``git commit -m "…"`` with a message of ``size`` characters (its quotes, dollars and backticks
    escaped, as an agent escapes them; ``variant`` numbers the message)."""
    message = f"{variant}: " + _lines(_MESSAGE_LINES, size)
    for special in ("\\", '"', "$", "`"):
        message = message.replace(special, "\\" + special)
    return f'git add -A && git commit -m "{message}"'


def and_chain(count: int, variant: int = 0) -> str:
    """``count`` commands joined by ``&&`` (the issue's chain of ``ls -la src``; ``variant`` names the first
    command's folder)."""
    return " && ".join([f"ls -la src{variant}", *["ls -la src"] * (count - 1)])


def long_commands() -> Iterator[tuple[str, Callable[[int], str]]]:
    """Each long command by name, as a function of a variant number (distinct texts of the same shape)."""
    for size in (1_000, 10_000, 100_000, 1_000_000):
        yield f"heredoc file write, {size // 1000:,} KB", functools.partial(heredoc_write, size)
    for size in (1_000, 10_000, 50_000):
        yield f"commit message, {size // 1000:,} KB", functools.partial(commit_message, size)
    for count in (10, 100, 1_000, 5_000):
        yield f"&& chain of {count:,} commands", functools.partial(and_chain, count)


def fresh_seconds(
    operation: Callable[[int], object], variants: int, repeats: int, setup: Callable[[], object]
) -> float:
    """The median over ``repeats`` runs of the mean time of ``operation`` per variant, each variant's text
    seen once per run (``setup`` before each run), after a warm-up run."""
    samples = []
    for _ in range(repeats + 1):
        setup()
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            for variant in range(variants):
                operation(variant)
            samples.append((time.process_time() - start) / variants)
        finally:
            gc.enable()
    return statistics.median(samples[1:])


def _clear_caches() -> None:
    """Forget every reading of a command the package keeps, so each run reads the command afresh."""
    from ask_permissions.policy import _safety
    from ask_permissions.shell import _readings

    _readings._read_short.cache_clear()
    _readings._read_long.cache_clear()
    for name in ("_scanned", "_effects_of"):
        cache_clear = getattr(getattr(_safety, name, None), "cache_clear", None)
        if cache_clear is not None:
            cache_clear()
    try:
        from ask_permissions.shell import _effects  # type: ignore[attr-defined, unused-ignore]
    except ImportError:
        return
    for value in vars(_effects).values():
        cache_clear = getattr(value, "cache_clear", None)
        if callable(cache_clear):
            cache_clear()


def long_command_table(quick: bool) -> tuple[list[list[str]], dict[str, float]]:
    from tree_sitter import Language, Parser
    from tree_sitter_bash import language

    from ask_permissions import (
        ApprovalQueue,
        LayeredPolicy,
        PermissionRules,
        PermissionSettings,
        SettingsSource,
        ToolCall,
        args_digest,
    )

    parser = Parser(Language(language()))
    rules = PermissionRules.from_text(**{decision: list(texts) for decision, texts in RULES.items()})
    source = SettingsSource("project", "/srv/app", None, **RULES)
    settings = PermissionSettings([source], project_dir="/srv/app")
    queue = ApprovalQueue()
    policy = LayeredPolicy(queue=queue, settings=settings, cwd="/srv/app")
    repeats = 1 if quick else 5
    rows: list[list[str]] = []
    worst: dict[str, float] = {"ratio": 0.0, "1 MB ms": 0.0}
    for name, make in long_commands():
        size = len(make(0))
        if quick and size > 200_000:
            continue
        variants = 1 if quick else max(2, min(256, 4_000_000 // size))
        texts = [make(variant) for variant in range(variants)]
        calls = [
            ToolCall("Bash", {"command": texts[variant]}, f"call-{variant}") for variant in range(variants)
        ]

        def afresh() -> None:
            _clear_caches()
            queue.reject_all()  # an ask queues the call: keep the queue as it was

        def parse(variant: int, texts: list[str] = texts) -> object:
            return parser.parse(texts[variant].encode())

        def classify_one(variant: int, calls: list[ToolCall] = calls) -> object:
            return rules.classify("Bash", calls[variant].arguments)

        def decide(variant: int, calls: list[ToolCall] = calls) -> object:
            return policy.before_tool_call(calls[variant])

        def digest_one(variant: int, calls: list[ToolCall] = calls) -> object:
            return args_digest(calls[variant].arguments)

        tree_sitter = fresh_seconds(parse, variants, repeats, _nothing)
        classify = fresh_seconds(classify_one, variants, repeats, afresh)
        layered = fresh_seconds(decide, variants, repeats, afresh)
        digest = fresh_seconds(digest_one, variants, repeats, _nothing)
        decided = policy.evaluate(calls[0])
        ratio = max(classify, layered) / tree_sitter
        worst["ratio"] = max(worst["ratio"], ratio)
        if size >= 1_000_000:
            worst["1 MB ms"] = max(worst["1 MB ms"], layered * 1000, classify * 1000)
        rows.append(
            [
                name,
                f"{size:,}",
                f"{tree_sitter * 1000:.2f}",
                f"{classify * 1000:.2f}",
                f"{classify / tree_sitter:.1f}",
                f"{layered * 1000:.2f}",
                f"{layered / tree_sitter:.1f}",
                f"{digest * 1000:.2f}",
                f"{decided.verdict} ({decided.layer})",
            ]
        )
    return rows, worst


def _nothing() -> None:
    return None


# -- the hot path ----------------------------------------------------------------------------------------


def hot_path(quick: bool) -> dict[str, float]:
    """ns per call of the hot-path operations, with whichever ``ask_permissions`` is on ``sys.path``."""
    from ask_permissions import (
        ApprovalQueue,
        LayeredPolicy,
        PermissionRules,
        PermissionSettings,
        SettingsSource,
        ToolCall,
    )

    batch, repeats = (0.002, 3) if quick else (0.02, 15)
    programs = [f"tool{index} run" for index in range(99)]
    rules = PermissionRules.from_text(
        allow=[*(f"Bash({program} *)" for program in programs), "Bash(git status *)"]
    )
    classify = rules.classify
    same = {"command": "git status --short"}
    miss = {"command": "npm publish"}
    fresh = [{"command": f"git status --short{index}"} for index in range(1024)]
    compound = {"command": "git status --short && git status --porcelain | git status -b"}
    assert classify("Bash", same) == "allow"
    assert classify("Bash", miss) is None
    cursor = iter(range(1 << 62))
    results: dict[str, float] = {}
    results["classify, 100 text rules, match-last, same command"] = per_operation_ns(
        lambda: classify("Bash", same), batch, repeats
    )
    results["classify, 100 text rules, no match"] = per_operation_ns(
        lambda: classify("Bash", miss), batch, repeats
    )
    results["classify, 100 text rules, match-last, distinct commands"] = per_operation_ns(
        lambda: classify("Bash", fresh[next(cursor) & 1023]), batch, repeats
    )
    results["classify, 100 text rules, compound command"] = per_operation_ns(
        lambda: classify("Bash", compound), batch, repeats
    )
    sources = []
    for number, name in enumerate(("user", "project", "local", "session")):
        deny = tuple(f"Bash(rm -rf /{number}{index} *)" for index in range(8))
        ask = tuple(f"Bash(git push origin b{number}{index})" for index in range(8))
        allow = (*(f"Bash(npm run job{number}{index})" for index in range(8)), f"tool_{number}")
        if name == "session":
            allow = (*allow, "Bash(git status)")
        sources.append(SettingsSource(name, "/srv", None, allow=allow, ask=ask, deny=deny))
    policy = LayeredPolicy(
        queue=ApprovalQueue(), settings=PermissionSettings(sources, project_dir="/srv"), cwd="/srv"
    )
    call = ToolCall("Bash", {"command": "git status"}, "call_1")
    assert policy.evaluate(call).layer == "allow_rule"
    hook = policy.before_tool_call
    results["LayeredPolicy before_tool_call, 100 rules over 4 sources, proceed"] = per_operation_ns(
        lambda: hook(call), batch, repeats
    )
    fresh_calls = [ToolCall("Bash", {"command": f"git status -s{index}"}, "call_2") for index in range(1024)]
    results["LayeredPolicy evaluate, 100 rules over 4 sources, distinct commands"] = per_operation_ns(
        lambda: policy.evaluate(fresh_calls[next(cursor) & 1023]), batch, repeats
    )
    return results


def _run_hot_path(src: Path, quick: bool) -> dict[str, float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--hot-path-json", "--src", str(src)]
    if quick:
        command.append("--quick")
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=600)
    data: dict[str, float] = json.loads(done.stdout)
    return data


def _baseline_checkout(directory: Path) -> Path | None:
    """A worktree of ``BASELINE_COMMIT`` in ``directory``, or ``None`` when git cannot make one."""
    if shutil.which("git") is None:
        return None
    checkout = directory / "baseline"
    made = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(checkout), BASELINE_COMMIT],
        capture_output=True,
        text=True,
        check=False,
    )
    return checkout if made.returncode == 0 else None


def hot_path_table(quick: bool) -> tuple[list[list[str]], float | None]:
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="ask-permissions-baseline-") as scratch:
        baseline = _baseline_checkout(Path(scratch))
        try:
            ours: list[dict[str, float]] = []
            theirs: list[dict[str, float]] = []
            for _ in range(rounds):  # alternate, so that a change in the machine's load hits both
                ours.append(_run_hot_path(ROOT / "src", quick))
                if baseline is not None:
                    theirs.append(_run_hot_path(baseline / "src", quick))
        finally:
            if baseline is not None:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)],
                    capture_output=True,
                    check=False,
                )
    rows: list[list[str]] = []
    worst: float | None = None
    for name in ours[0]:
        mine = statistics.median(run[name] for run in ours)
        if theirs and name in theirs[0]:
            base = statistics.median(run[name] for run in theirs)
            ratio = mine / base
            shown = name
            if name in TARGETED_HOT_PATH:
                worst = ratio if worst is None else max(worst, ratio)
            else:
                shown = f"{name} (not a target)"
            rows.append([shown, f"{base:,.0f}", f"{mine:,.0f}", f"{ratio:.2f}"])
        else:
            rows.append([name, "-", f"{mine:,.0f}", "-"])
    return rows, worst


# -- output ----------------------------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> str:
    align = ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run (rough figures)")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when a target is missed")
    parser.add_argument("--hot-path-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    sys.path.insert(0, str(options.src))
    if options.hot_path_json:
        print(json.dumps(hot_path(options.quick)))
        return 0
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {os.cpu_count()} cores")
    print()
    rows, worst = long_command_table(options.quick)
    header = ["command", "characters", "tree-sitter ms", "classify ms", "x ts", "LayeredPolicy ms", "x ts"]
    print(_table([*header, "of which the record's digest ms", "decision"], rows))
    print()
    hot_rows, hot_worst = hot_path_table(options.quick)
    print(
        _table(["hot path", f"baseline ns ({BASELINE_COMMIT[:7]})", "this ns", "this / baseline"], hot_rows)
    )
    print()
    targets = [
        ("decision time / tree-sitter parse time, worst size", worst["ratio"], TARGET_RATIO),
        ("1 MB command decided, ms (worst of classify and LayeredPolicy)", worst["1 MB ms"], TARGET_1MB_MS),
    ]
    if hot_worst is not None:
        targets.append(("hot path, this / baseline, worst row", hot_worst, TARGET_HOT_PATH))
    target_rows = []
    missed = False
    for name, measured, limit in targets:
        met = measured <= limit or (name.startswith("1 MB") and options.quick)
        missed = missed or not met
        target_rows.append([name, f"{measured:.2f}", f"{limit:.2f}", "yes" if met else "no"])
    print(_table(["target", "measured", "limit", "met"], target_rows))
    return 1 if options.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
