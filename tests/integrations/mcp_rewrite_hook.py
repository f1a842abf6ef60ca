"""A PreToolUse command hook for the proxy's tests: it rewrites calls and allows them.

It reads the call from standard input; a command with ``--force`` loses it, and ``deploy prod`` becomes
``deploy staging``. Anything else passes (no output). The commands are data the test upstream records: nothing
here runs them.
"""

from __future__ import annotations

import json
import sys

REWRITES = ((" --force", ""), ("deploy prod", "deploy staging"))


def rewrite(command: str) -> str:
    """The command as this hook rewrites it."""
    for old, new in REWRITES:
        command = command.replace(old, new)
    return command


if __name__ == "__main__":
    call = json.loads(sys.stdin.readline())
    arguments = call["arguments"]
    command = arguments.get("command", "")
    rewritten = rewrite(command)
    if rewritten != command:
        print(json.dumps({"action": "allow", "arguments": {**arguments, "command": rewritten}}))
