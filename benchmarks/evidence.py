"""Replay and suggest at scale: replaying recorded calls against deciding them live, and suggest's time.

- replay: N recorded calls (audit lines with their arguments) re-decided under a 100-rule policy, parsing
  included, against the same policy deciding the same calls live with an audit line written for each
  (target: at most 2x).
- suggest: N answers (approved and rejected) through the rule search and its proof, with no policy and with a
  policy file of deny rules read as ``suggest --policy`` reads it (target: under 30 s for 100,000 on two
  cores).

Wall and CPU seconds are both printed: the machine may be shared, and the CPU time is this process's own.
Run ``python benchmarks/evidence.py`` (``--quick`` for a smaller, faster run; ``--check``: exit status 1
when a target is missed).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from run import machine, print_targets  # this script's directory: benchmarks/run.py

from ask_permissions import ApprovalPolicy, ApprovalQueue, DecisionRecord, PermissionRules, ToolCall
from ask_permissions.cli._suggest import suggestion_context
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


def _answers(count: int) -> list[Answer]:
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
    return answers


# The deny rules suggest proves its rules against, in a policy file read as the command reads --policy.
_DENY_POLICY = """\
version = 1
require_approval = ["Bash", "Edit"]

[permissions]
cwd = "/work/p"
deny = [{deny}]
"""


def _policy_context(directory: str) -> SuggestionContext:
    deny = [f"Bash({program} apply *)" for program in PROGRAMS]
    deny += ["Bash(docker push *)", "Bash(git push --force *)", "Edit(//etc/**)", "Edit(./secrets/**)"]
    path = os.path.join(directory, "policy.toml")
    with open(path, "w", encoding="utf-8") as file:
        file.write(_DENY_POLICY.format(deny=", ".join(json.dumps(rule) for rule in deny)))
    return suggestion_context(path)


def bench_suggest(count: int, *, with_policy: bool) -> tuple[float, float, int, int]:
    """Wall and CPU seconds of one suggest run, the rules it found and the prompts they save."""
    answers = _answers(count)
    with tempfile.TemporaryDirectory() as directory:
        context = (
            _policy_context(directory)
            if with_policy
            else SuggestionContext(root="/work/p", home="/root", policy=None)
        )
        started, cpu = time.perf_counter(), time.process_time()
        found = suggest(answers, context, min_count=3)
        elapsed, used = time.perf_counter() - started, time.process_time() - cpu
    assert found.rules
    assert found.proven
    return elapsed, used, len(found.rules), found.saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller counts (a smoke test)")
    parser.add_argument("--check", action="store_true", help="exit status 1 when a target is missed")
    options = parser.parse_args()
    count = 5_000 if options.quick else 100_000
    print(f"{machine()}; load average {os.getloadavg()[0]:.1f} at the start\n")
    live, replayed = bench_replay(count)
    print(f"replay of {count:,} recorded calls under a 100-rule policy")
    print("| what | seconds | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| deciding them live (before_tool_call, an audit line each) | {live:.2f} | 1.00x |")
    ratio = replayed / live
    print(f"| replaying the audit lines (parse + evaluate + compare) | {replayed:.2f} | {ratio:.2f}x |")
    answers = count + count // 10
    print(f"\nsuggest over {answers:,} answers (min count 3)")
    print("| what | wall seconds | CPU seconds | rules | prompts saved |")
    print("| --- | ---: | ---: | ---: | ---: |")
    slowest = 0.0
    for title, with_policy in (
        ("no policy (the rules proven against the rejections)", False),
        ("a policy file of 14 deny rules (deny-covered calls, witnesses, re-decided)", True),
    ):
        elapsed, used, rules, saved = bench_suggest(count, with_policy=with_policy)
        slowest = max(slowest, elapsed)
        print(f"| {title} | {elapsed:.2f} | {used:.2f} | {rules:,} | {saved:,} |")
    print()
    missed = print_targets([("replay / live (x)", ratio, 2.0), ("suggest, slowest (s)", slowest, 30.0)])
    return 1 if options.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
