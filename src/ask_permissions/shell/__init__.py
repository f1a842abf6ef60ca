"""The one place that knows bash: how a command is read, and what the programs it runs do.

On the ground floor: it imports nothing of ``ask_permissions`` outside this package. Three stages read a
command (``_tokens``, ``_parser`` into the tree of ``_tree``; ``_words`` and ``_readings`` over the tree),
and ``_programs`` says what a simple command starts besides itself.
"""

from ._parser import MAX_DEPTH, parse
from ._programs import Launch, ScriptRef, launch
from ._readings import (
    READ_LIMIT,
    ParsedCommand,
    Reading,
    Redirect,
    ShellWord,
    SubCommand,
    command_words,
    read_command,
)

__all__ = [
    "MAX_DEPTH",
    "READ_LIMIT",
    "Launch",
    "ParsedCommand",
    "Reading",
    "Redirect",
    "ScriptRef",
    "ShellWord",
    "SubCommand",
    "command_words",
    "launch",
    "parse",
    "read_command",
]
