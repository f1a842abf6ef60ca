"""Benchmark of the sandbox's start-up cost: a sandboxed command against the same command unsandboxed.

Plain script. ``python benchmarks/sandbox.py`` runs ``/bin/sh -c true`` unsandboxed and through a
``Sandbox`` built from a layered policy over a temporary project (its protected names blocked by
placeholders, as in a fresh project), interleaved in one run, and prints the median milliseconds of each
and the added cost, for ``sandbox.run`` without a network, ``sandbox.run`` with an allowed domain (the
proxy's bridge starts inside), and a host starting ``sandbox.command()`` itself (the launcher). The target:
``sandbox.run`` adds at most 50 ms (``--check``: exit status 1 when it is missed). ``--quick`` runs in
seconds, only to prove the script still works (CI does that); its figures are rough. Without bubblewrap it
says so and exits 0 (1 when ``ASK_PERMISSIONS_REQUIRE_BWRAP`` is set).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from run import machine, print_targets  # this script's directory: benchmarks/run.py

from ask_permissions import ApprovalQueue, LayeredPolicy, PermissionSettings, SandboxUnavailableError
from ask_permissions.sandbox import Sandbox

COMMAND = ["/bin/sh", "-c", "true"]
TARGET_MS = 50.0


def _plain() -> None:
    subprocess.run(COMMAND, check=True)


def _policy(project: Path, allow: list[str]) -> LayeredPolicy:
    agent = project / ".agent"
    agent.mkdir(exist_ok=True)
    (agent / "settings.json").write_text(json.dumps({"permissions": {"allow": allow}}), encoding="utf-8")
    settings = PermissionSettings.load(project_dir=project, user_dir=project.parent / "user")
    return LayeredPolicy(queue=ApprovalQueue(), settings=settings)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(runs: int) -> dict[str, tuple[float, float]]:
    """Per case: the median ms unsandboxed and sandboxed, measured alternately in this run."""
    base = Path(tempfile.mkdtemp(prefix="ask-permissions-bench-", dir="/var/tmp"))
    try:
        offline_project = base / "offline"
        online_project = base / "online"
        offline_project.mkdir()
        online_project.mkdir()
        offline = Sandbox.from_policy(_policy(offline_project, ["Bash(ls)"]))
        online = Sandbox.from_policy(_policy(online_project, ["WebFetch(domain:pypi.org)"]))
        launcher = offline.command(COMMAND)
        cases: dict[str, Callable[[], object]] = {
            "sandbox.run, no network": lambda: offline.run(COMMAND),
            "sandbox.run, an allowed domain (bridge)": lambda: online.run(COMMAND),
            "sandbox.command, started by the host": lambda: subprocess.run(launcher, check=True),
        }
        results: dict[str, tuple[float, float]] = {}
        with offline, online:
            for name, sandboxed in cases.items():
                sandboxed()  # warm: the probe, the proxy, the page cache
                plain: list[float] = []
                walled: list[float] = []
                for _ in range(runs):
                    began = time.perf_counter()
                    _plain()
                    plain.append(time.perf_counter() - began)
                    began = time.perf_counter()
                    sandboxed()
                    walled.append(time.perf_counter() - began)
                results[name] = (_median_ms(plain), _median_ms(walled))
        return results
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run (rough figures)")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when the target is missed")
    options = parser.parse_args(argv)
    runs = 5 if options.quick else 40
    started = time.perf_counter()
    try:
        results = measure(runs)
    except SandboxUnavailableError as error:
        print(f"skipped: {error}")
        return 1 if os.environ.get("ASK_PERMISSIONS_REQUIRE_BWRAP") else 0
    elapsed = time.perf_counter() - started

    print(f"Python {platform.python_version()} ({platform.python_implementation()}), {machine()}")
    kind = "quick run (rough figures)" if options.quick else "full run"
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())  # other work on the machine skews it
    print(f"{kind}, {runs} runs each, {elapsed:.0f} s, load average {load}")
    print()
    print("| command `/bin/sh -c true` | unsandboxed ms | sandboxed ms | added ms | x unsandboxed |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (plain, walled) in results.items():
        print(f"| {name} | {plain:.1f} | {walled:.1f} | {walled - plain:.1f} | {walled / plain:.1f} |")
    print()
    plain, walled = results["sandbox.run, no network"]
    missed = print_targets([("sandbox.run adds (ms, median)", walled - plain, TARGET_MS)], digits=1)
    return 1 if options.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
