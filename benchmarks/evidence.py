"""Replay and suggest at scale: replaying recorded calls against deciding them live, and suggest's time.

- replay: N recorded calls (audit lines with their arguments) re-decided under a 100-rule policy, parsing
  included, against the same policy deciding the same calls live with an audit line written for each
  (target: at most 2x).
- suggest: N answers (approved and rejected) through the rule search and its proof (target: under 30 s for
  100,000 on two cores).

Run ``python benchmarks/evidence.py`` (``--quick`` for a smaller, faster run).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import time
from collections.abc import Callable

from ask_permissions import ApprovalPolicy, ApprovalQueue, DecisionRecord, PermissionRules, ToolCall
from ask_permissions.evidence._audit import read_audit_line
from ask_permissions.evidence._replay import calls_from_audit, replay
from ask_permissions.evidence._suggest import Answer, SuggestionContext, suggest

PROGRAMS = ["git", "npm", "make", "cargo", "pytest", "docker", "kubectl", "ls", "cat", "grep"]
ARGUMENTS = ["a", "b", "--force x"]
VERBS = ["status", "diff", "log", "test", "build", "run", "push", "show", "apply", "get"]


def _policy(on_decision: Callable[[DecisionRecord], object] | None = None) -> ApprovalPolicy:
    allow = [f"Bash({program} {verb} *)" for program in PROGRAMS for verb in VERBS[:8]]
    deny = [f"Bash({program} {verb} --force *)" for program in PROGRAMS for verb in VERBS[8:]]
    rules = PermissionRules.from_text(allow=allow, deny=deny)
    assert len(rules) == 100
    return ApprovalPolicy(
        queue=ApprovalQueue(),
        rules=rules,
        require_approval="Bash",
        on_decision=on_decision,
        record_arguments=on_decision is not None,
    )


def _calls(count: int, seed: int = 7) -> list[ToolCall]:
    chance = random.Random(seed)
    return [
        ToolCall(
            "Bash",
            {"command": f"{chance.choice(PROGRAMS)} {chance.choice(VERBS)} {chance.choice(ARGUMENTS)}"},
            f"call-{number}",
        )
        for number in range(count)
    ]


def bench_replay(count: int) -> tuple[float, float]:
    calls = _calls(count)
    lines: list[str] = []
    writer = io.StringIO()

    def write(record: DecisionRecord) -> None:
        writer.write(json.dumps(record.to_dict()) + "\n")

    live_policy = _policy(write)
    started = time.perf_counter()
    for call in calls:
        live_policy.before_tool_call(call)
    live = time.perf_counter() - started
    lines = writer.getvalue().splitlines()
    new_policy = _policy()
    started = time.perf_counter()
    parsed = (read_audit_line(line, "audit.jsonl", number) for number, line in enumerate(lines, 1))
    found = replay(new_policy, calls_from_audit(parsed))
    replayed = time.perf_counter() - started
    assert found.replayed == count
    return live, replayed


def bench_suggest(count: int) -> float:
    chance = random.Random(11)
    answers = []
    for number in range(count):
        program, verb = chance.choice(PROGRAMS), chance.choice(VERBS)
        command = f"{program} {verb} {chance.choice(['a', 'b', 'c', 'src/x'])} {number % 50}"
        approved = not (program == "docker" and verb == "push") and chance.random() > 0.05
        answers.append(Answer("Bash", {"command": command}, approved))
    answers.extend(
        Answer("Edit", {"file_path": f"/work/p/src/m{number % 40}/f{number}.py"}, True)
        for number in range(count // 10)
    )
    context = SuggestionContext(root="/work/p", home="/root", policy=None)
    started = time.perf_counter()
    found = suggest(answers, context, min_count=3)
    elapsed = time.perf_counter() - started
    assert found.rules
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller counts (a smoke test)")
    options = parser.parse_args()
    count = 5_000 if options.quick else 100_000
    live, replayed = bench_replay(count)
    print(f"replay of {count:,} recorded calls under a 100-rule policy")
    print("| what | seconds | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| deciding them live (before_tool_call, an audit line each) | {live:.2f} | 1.00x |")
    ratio = replayed / live
    print(f"| replaying the audit lines (parse + evaluate + compare) | {replayed:.2f} | {ratio:.2f}x |")
    elapsed = bench_suggest(count)
    print(f"\nsuggest over {count + count // 10:,} answers: {elapsed:.2f} s (target: under 30 s)")


if __name__ == "__main__":
    main()
