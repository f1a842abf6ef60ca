"""Benchmarks of the hot paths: classify, before_tool_call, submit, rule snapshots, memory per action.

Plain script, standard library only. ``python benchmarks/run.py`` prints a markdown table of medians over
repeated batches, in ns per operation, each also as a ratio to the CPython floor measured in the same run
(one compact ``json.dumps`` of the arguments with a prebuilt encoder, one compiled ``re.search`` over it,
one dict lookup), then the performance targets and whether this run meets them (``--check``: exit status 1
when one is missed). ``--quick`` runs in a few seconds, only to prove the script still works (CI does that);
its figures are rough.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import re
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from ask_permissions import (
    ALL,
    ApprovalPolicy,
    ApprovalQueue,
    LayeredPolicy,
    PermissionRules,
    PermissionSettings,
    SessionPermissionGrants,
    SettingsSource,
    ToolCall,
    require_known_tools,
)
from ask_permissions.rules import _patterns

Runner = Callable[[int], object]
"""Runs the measured operation ``n`` times."""

TARGET_TOOL = "mcp__srv7__query"
OTHER_TOOL = "send_email"
ARGUMENTS: dict[str, Any] = {
    "path": "/srv/data/report.csv",
    "query": "select region, sum(total) from sales where year = 2024 group by region",
    "limit": 100,
}
MATCH_LAST_TOKEN = "group by region"  # only the last rule looks for it
GEM_MS_PER_1000_RULES = 3.0  # the Ruby gem, match-last with 1000 rules, on this kind of machine


# -- the rule sets ---------------------------------------------------------------------------------------


def build_rules(count: int) -> PermissionRules:
    """``count`` rules, about half of them for ``TARGET_TOOL``, none matching until the last.

    The mix cycles through exact names and regex tool patterns, for the target tool and for others, with
    substring and regex argument patterns. Two ``ALL`` rules (first and middle) carry argument patterns: an
    ``ALL`` rule applies to every tool, so no index can skip it, and a real rule set has few of them. The
    last rule is an ``allow`` of the target tool whose substring only the benchmark's arguments contain.
    """
    rules = PermissionRules()
    for index in range(count - 1):
        if index in (0, count // 2):
            rules.deny(ALL, re.compile(rf"rm\s+-rf\s+/{index}\b"))
            continue
        kind = index % 4
        if kind == 0:
            rules.ask(TARGET_TOOL, f'"path":"/secret/{index}/')
        elif kind == 1:
            rules.deny(re.compile(r"^mcp__srv7__.*$"), re.compile(rf"drop\s+table\s+t{index}\b"))
        elif kind == 2:
            rules.allow(f"tool_{index}", f"/tmp/{index}/")
        else:
            rules.ask(re.compile(rf"^mcp__srv{index + 100}__.*$"), re.compile(rf"/home/u{index}\b"))
    rules.allow(TARGET_TOOL, MATCH_LAST_TOKEN)
    return rules


NO_MATCH_ARGUMENTS: dict[str, Any] = {**ARGUMENTS, "query": "select 1"}


# -- timing ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    batch_seconds: float
    repeats: int
    submit_sizes: tuple[int, ...]
    memory_actions: int
    forgotten_actions: int


FULL = Settings(
    batch_seconds=0.02,
    repeats=21,
    submit_sizes=(100, 10_000, 100_000),
    memory_actions=20_000,
    forgotten_actions=1_000_000,
)
QUICK = Settings(
    batch_seconds=0.002,
    repeats=3,
    submit_sizes=(100, 1_000, 10_000),
    memory_actions=1_000,
    forgotten_actions=10_000,
)


def _time_batch(run: Runner, n: int) -> float:
    gc.disable()
    try:
        start = time.perf_counter_ns()
        run(n)
        return (time.perf_counter_ns() - start) / n
    finally:
        gc.enable()


def measure(run: Runner, settings: Settings, setup: Callable[[], object] | None = None) -> float:
    """The median ns per operation over ``settings.repeats`` batches sized to ``batch_seconds``."""
    if setup is not None:
        setup()
    n = 1
    while True:  # calibrate the batch size (this also warms caches up)
        per_op = _time_batch(run, n)
        if per_op * n >= settings.batch_seconds * 1e9 / 4 or n >= 1 << 22:
            break
        n *= 4
    n = max(1, int(settings.batch_seconds * 1e9 / max(per_op, 1.0)))
    samples = []
    for _ in range(settings.repeats):
        if setup is not None:
            setup()
        samples.append(_time_batch(run, n))
    return statistics.median(samples)


def loop(operation: Callable[[], object]) -> Runner:
    def run(n: int) -> None:
        for _ in repeat(None, n):
            operation()

    return run


# -- the benchmarks --------------------------------------------------------------------------------------


def floor_runner() -> Runner:
    encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode
    search = re.compile(r"rm\s+-rf\s+/\d+\b").search
    table = {f"tool_{index}": index for index in range(100)} | {TARGET_TOOL: -1}
    arguments, name = ARGUMENTS, TARGET_TOOL

    def run(n: int) -> None:
        for _ in repeat(None, n):
            search(encode(arguments))
            table.get(name)

    return run


def classify_runners(count: int) -> Iterator[tuple[str, Runner]]:
    classify = build_rules(count).classify
    assert classify(TARGET_TOOL, ARGUMENTS) == "allow"
    assert classify(TARGET_TOOL, NO_MATCH_ARGUMENTS) is None
    assert classify(OTHER_TOOL, ARGUMENTS) is None
    yield f"classify, {count} rules, match-last", loop(lambda: classify(TARGET_TOOL, ARGUMENTS))
    yield (
        f"classify, {count} rules, same tool, no match",
        loop(lambda: classify(TARGET_TOOL, NO_MATCH_ARGUMENTS)),
    )
    yield f"classify, {count} rules, other tool, no match", loop(lambda: classify(OTHER_TOOL, ARGUMENTS))


def text_and_regex_rules(count: int) -> tuple[PermissionRules, PermissionRules]:
    """The same ``count`` shell allow rules as rule text and as the gem's regexes over the arguments' JSON.

    All but the last name other programs, so a call that matches meets every rule first.
    """
    programs = [f"tool{index} run" for index in range(count - 1)]
    text = PermissionRules.from_text(
        allow=[*(f"Bash({program} *)" for program in programs), "Bash(git status *)"]
    )
    regex = PermissionRules()
    for program in [*programs, "git status"]:
        regex.allow("Bash", re.compile(r'"command":"' + re.escape(program) + r"\b"))
    return text, regex


def text_form_runners(count: int) -> Iterator[tuple[str, Runner]]:
    text, regex = text_and_regex_rules(count)
    # 1024 distinct commands, more than the splitter's cache holds: every call is split anew.
    fresh = [{"command": f"git status --short{index}"} for index in range(1024)]
    same = {"command": "git status --short"}
    miss = {"command": "npm publish"}
    for form, rules in (("text", text), ("regex", regex)):
        classify = rules.classify
        assert classify("Bash", same) == "allow"
        assert classify("Bash", miss) is None
        yield (
            f"classify, {count} {form} rules, match-last, same command",
            loop(lambda c=classify: c("Bash", same)),
        )
        yield f"classify, {count} {form} rules, no match", loop(lambda c=classify: c("Bash", miss))

        def distinct(n: int, classify: Callable[..., object] = classify) -> None:
            for index in range(n):
                classify("Bash", fresh[index & 1023])

        yield f"classify, {count} {form} rules, match-last, distinct commands", distinct


@dataclass(frozen=True)
class Tool:
    name: str
    side_effect_scope: str = "workspace"
    risk_level: str = "low"
    approval_required: bool = False


def policy_runners() -> Iterator[tuple[str, Runner, Callable[[], object]]]:
    queue = ApprovalQueue()
    policy = ApprovalPolicy(
        queue=queue,
        rules=build_rules(100),
        require_approval=ALL,
        tools=[Tool(TARGET_TOOL), Tool(OTHER_TOOL, side_effect_scope="external")],
        session_grants=SessionPermissionGrants([OTHER_TOOL]),
        unknown_tools="keep",  # the synthetic rules name tools the two-tool registry does not list
    )
    hook = policy.before_tool_call
    proceed_call = ToolCall(TARGET_TOOL, ARGUMENTS, "call_1")
    grant_call = ToolCall(OTHER_TOOL, ARGUMENTS, "call_2")
    submit_call = ToolCall(TARGET_TOOL, NO_MATCH_ARGUMENTS, "call_3")
    assert policy.evaluate(proceed_call).layer == "allow_rule"
    assert policy.evaluate(grant_call).layer == "session_grant"
    assert policy.evaluate(submit_call).layer == "approval_required"
    yield "before_tool_call, 100 rules, proceed (allow rule)", loop(lambda: hook(proceed_call)), _nothing
    yield "before_tool_call, 100 rules, session grant", loop(lambda: hook(grant_call)), _nothing
    # A fresh call id each time: a replayed id would find its pending action instead of submitting.
    call_ids = itertools.count()
    yield (
        "before_tool_call, 100 rules, submit",
        loop(lambda: hook(ToolCall(TARGET_TOOL, NO_MATCH_ARGUMENTS, next(call_ids)))),
        queue.reject_all,
    )


def _nothing() -> None:
    return None


def layered_runners() -> Iterator[tuple[str, Runner, Callable[[], object]]]:
    """LayeredPolicy with 100 text-form rules over four settings sources, deciding a call an allow rule of
    the last source lets through (the same work as the ApprovalPolicy proceed benchmark: every rule of the
    tool is looked at before the one that matches)."""
    sources = []
    for number, name in enumerate(("user", "project", "local", "session")):
        deny = [f"Bash(rm -rf /{number}{index} *)" for index in range(8)]
        ask = [f"Bash(git push origin b{number}{index})" for index in range(8)]
        allow = [f"Bash(npm run job{number}{index})" for index in range(8)] + [
            f"tool_{number}_{i}" for i in range(1)
        ]
        sources.append(
            SettingsSource(name, "/srv", None, allow=tuple(allow), ask=tuple(ask), deny=tuple(deny))
        )
    sources[-1] = SettingsSource(
        "session",
        "/srv",
        None,
        allow=(*sources[-1].allow, "Bash(git status)"),
        ask=sources[-1].ask,
        deny=sources[-1].deny,
    )
    settings = PermissionSettings(sources, project_dir="/srv")
    policy = LayeredPolicy(queue=ApprovalQueue(), settings=settings, cwd="/srv")
    total = sum(len(source.allow) + len(source.ask) + len(source.deny) for source in settings.sources)
    assert total == 101, total
    call = ToolCall("Bash", {"command": "git status"}, "call_1")
    assert policy.evaluate(call).layer == "allow_rule"
    hook = policy.before_tool_call
    yield (
        "LayeredPolicy before_tool_call, 100 rules over 4 sources, proceed",
        loop(lambda: hook(call)),
        _nothing,
    )


class SubmitBench:
    """A queue holding about ``size`` resolved actions, half approved by a person, half auto-approved."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.queue = ApprovalQueue(auto_approve={"read_file": True})
        self.resolved = 0
        self._fill()

    def _fill(self) -> None:
        self.queue = ApprovalQueue(auto_approve={"read_file": True})
        submit = self.queue.submit
        for number in range(self.size):
            if number % 2:
                submit(tool_call_id=f"c{number}", tool_name="read_file", args=ARGUMENTS, auto_approvable=True)
            else:
                submit(tool_call_id=f"c{number}", tool_name="write_file", args=ARGUMENTS)
                if number % 1000 == 998 or number >= self.size - 2:
                    self.queue.approve_all()
        self.queue.approve_all()
        self.resolved = self.size

    def reset(self) -> None:
        """Settle what the last batch left pending; rebuild once the history outgrew its size by 10 %."""
        self.queue.reject_all()
        self.resolved = self.queue.snapshot()["next_id"]  # nothing pending: the snapshot is just the last id
        if self.resolved - self.size > max(self.size // 10, 0):
            self._fill()

    def manual(self) -> Runner:
        def run(n: int) -> None:
            submit = self.queue.submit
            for _ in repeat(None, n):
                submit(tool_call_id="c", tool_name="write_file", args=ARGUMENTS)

        return run

    def auto(self) -> Runner:
        def run(n: int) -> None:
            submit = self.queue.submit
            for _ in repeat(None, n):
                submit(tool_call_id="c", tool_name="read_file", args=ARGUMENTS, auto_approvable=True)

        return run


def bytes_per_action(count: int) -> float:
    """tracemalloc: bytes the queue holds per resolved action, the copy of its args included."""
    queue = ApprovalQueue(auto_approve={"read_file": True})
    call_ids = [f"toolu_{number:020d}" for number in range(count)]  # the host's strings, made beforehand
    message = 'Calling "write_file" requires approval'
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for number, call_id in enumerate(call_ids):
        if number % 2:
            queue.submit(tool_call_id=call_id, tool_name="read_file", args=ARGUMENTS, auto_approvable=True)
        else:
            queue.submit(tool_call_id=call_id, tool_name="write_file", args=ARGUMENTS, message=message)
            queue.approve_all()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert not queue.any_pending()
    return held / count


def memory_after_forgetting(count: int) -> tuple[int, int, int]:
    """tracemalloc: bytes held by an empty queue, with ``count`` resolved actions, and after forgetting them.

    Each action's arguments are copied at submit, so the full queue holds ``count`` copies of them.
    """
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    queue = ApprovalQueue()
    empty = tracemalloc.get_traced_memory()[0] - base
    submit = queue.submit
    for number in range(count):
        submit(tool_call_id="c", tool_name="write_file", args=ARGUMENTS)
        if number % 1000 == 999:
            queue.approve_all()
    queue.approve_all()
    gc.collect()
    full = tracemalloc.get_traced_memory()[0] - base
    assert queue.forget_resolved() == count
    gc.collect()
    after = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return empty, full, after


def snapshot_runners() -> Iterator[tuple[str, Runner]]:
    rules = build_rules(1000)
    data = rules.snapshot()
    assert PermissionRules.from_snapshot(data).snapshot() == data

    def first_load() -> None:
        re.purge()  # nothing compiled yet: neither re's cache nor ours holds these regexes
        _patterns._compile_str.cache_clear()
        PermissionRules.from_snapshot(data)

    yield "PermissionRules.from_snapshot, 1000 rules, first load", loop(first_load)
    again = PermissionRules.from_snapshot
    yield "PermissionRules.from_snapshot, 1000 rules, again", loop(lambda: again(data))
    yield "PermissionRules.snapshot, 1000 rules", loop(rules.snapshot)


def tool_name_runners() -> Iterator[tuple[str, Runner]]:
    """The check of a policy's rules against the tools an agent has (once, at wiring), against reading
    the same rules from their snapshot: it should cost a fraction of it."""
    rules = build_rules(1000)
    data = rules.snapshot()
    policy = ApprovalPolicy(queue=ApprovalQueue(), rules=rules, require_approval=ALL)
    named = sorted({reference.name for reference in policy.tool_references() if reference.name is not None})
    # The regex rules each meet one MCP server's tools: give every server one tool.
    known = [*named, *(f"mcp__srv{server}__query" for server in range(2000)), TARGET_TOOL, OTHER_TOOL]
    require_known_tools(policy, known, where="benchmark")  # every rule names a known tool: no error
    yield "require_known_tools, 1000 rules", loop(lambda: require_known_tools(policy, known, where="b"))
    yield (
        "PermissionRules.from_snapshot, 1000 rules, for the check",
        loop(lambda: PermissionRules.from_snapshot(data)),
    )


# -- the report ------------------------------------------------------------------------------------------


def run_all(settings: Settings) -> tuple[dict[str, float], float]:
    results: dict[str, float] = {}
    floor = measure(floor_runner(), settings)
    for count in (10, 100, 1000):
        for name, runner in classify_runners(count):
            results[name] = measure(runner, settings)
    for name, runner in text_form_runners(100):
        results[name] = measure(runner, settings)
    for name, runner, setup in policy_runners():
        results[name] = measure(runner, settings, setup)
    for name, runner, setup in layered_runners():
        results[name] = measure(runner, settings, setup)
    for size in settings.submit_sizes:
        bench = SubmitBench(size)
        results[f"submit, manual item, {size:,} resolved"] = measure(bench.manual(), settings, bench.reset)
        results[f"submit, auto-approved item, {size:,} resolved"] = measure(
            bench.auto(), settings, bench.reset
        )
    for name, runner in snapshot_runners():
        results[name] = measure(runner, settings)
    for name, runner in tool_name_runners():
        results[name] = measure(runner, settings)
    memory = bytes_per_action(settings.memory_actions)
    results["memory per resolved Action, its args copy included (bytes, not ns)"] = memory
    count = settings.forgotten_actions
    empty, full, after = memory_after_forgetting(count)
    results["memory of an empty queue (bytes)"] = empty
    results[f"memory with {count:,} resolved actions, their args copies included (bytes)"] = full
    results[f"memory after forget_resolved() of those {count:,} (bytes)"] = after
    return results, floor


def targets(results: dict[str, float], floor: float, settings: Settings) -> list[tuple[str, float, float]]:
    """``(target, measured ratio, limit)`` for each performance target."""
    small, large = settings.submit_sizes[0], settings.submit_sizes[-1]
    gem_ratio = GEM_MS_PER_1000_RULES * 1e6 * 0.1 / floor
    return [
        ("classify, 10 rules, match-last / floor", results["classify, 10 rules, match-last"] / floor, 3.0),
        (
            "classify other tool: 1000 rules / 10 rules",
            results["classify, 1000 rules, other tool, no match"]
            / results["classify, 10 rules, other tool, no match"],
            2.0,
        ),
        (
            f"classify, 1000 rules, match-last / floor (0.1 x gem's 3 ms = {gem_ratio:.0f} x floor)",
            results["classify, 1000 rules, match-last"] / floor,
            min(80.0, gem_ratio),
        ),
        (
            "before_tool_call proceed / classify, 100 rules, match-last",
            results["before_tool_call, 100 rules, proceed (allow rule)"]
            / results["classify, 100 rules, match-last"],
            2.0,
        ),
        (
            "LayeredPolicy, 100 rules over 4 sources / ApprovalPolicy, 100 rules (proceed)",
            results["LayeredPolicy before_tool_call, 100 rules over 4 sources, proceed"]
            / results["before_tool_call, 100 rules, proceed (allow rule)"],
            2.0,
        ),
        (
            f"submit manual: {large:,} / {small:,} resolved",
            results[f"submit, manual item, {large:,} resolved"]
            / results[f"submit, manual item, {small:,} resolved"],
            1.5,
        ),
        (
            f"submit auto-approved: {large:,} / {small:,} resolved",
            results[f"submit, auto-approved item, {large:,} resolved"]
            / results[f"submit, auto-approved item, {small:,} resolved"],
            1.5,
        ),
        (
            "require_known_tools / PermissionRules.from_snapshot, 1000 rules",
            results["require_known_tools, 1000 rules"]
            / results["PermissionRules.from_snapshot, 1000 rules, for the check"],
            1.0,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run (rough figures)")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when a target is missed")
    options = parser.parse_args(argv)
    settings = QUICK if options.quick else FULL
    started = time.perf_counter()
    results, floor = run_all(settings)
    elapsed = time.perf_counter() - started

    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {machine()}")
    print(f"{'quick run (rough figures)' if options.quick else 'full run'}, {elapsed:.0f} s")
    print()
    print("| benchmark | ns/op | x floor |")
    print("| --- | ---: | ---: |")
    print(f"| floor: json encode + re.search + dict lookup | {floor:,.0f} | 1.0 |")
    for name, value in results.items():
        if name.startswith("memory"):
            print(f"| {name} | {value:,.0f} B | - |")
        else:
            print(f"| {name} | {value:,.0f} | {value / floor:,.1f} |")
    print()
    print("| rule text against the regex form, 100 rules, same calls | text / regex |")
    print("| --- | ---: |")
    for case in ("match-last, same command", "match-last, distinct commands", "no match"):
        ratio = results[f"classify, 100 text rules, {case}"] / results[f"classify, 100 regex rules, {case}"]
        print(f"| {case} | {ratio:.2f} |")
    print()
    missed = print_targets(targets(results, floor, settings))
    return 1 if options.check and missed else 0


def print_targets(rows: list[tuple[str, float, float]], digits: int = 2) -> int:
    """The targets as a markdown table of ``(target, measured, limit)``; how many were missed."""
    print("| target | measured | limit | met |")
    print("| --- | ---: | ---: | --- |")
    missed = 0
    for name, measured, limit in rows:
        missed += measured > limit
        met = "yes" if measured <= limit else "NO"
        print(f"| {name} | {measured:.{digits}f} | {limit:.{digits}f} | {met} |")
    return missed


def machine() -> str:
    """This machine, as a benchmark report names it."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor() or model
    return f"{os.cpu_count()} CPUs ({model}), {platform.system()} {platform.machine()}"


if __name__ == "__main__":
    raise SystemExit(main())
