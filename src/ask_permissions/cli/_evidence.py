"""``test``, ``audit``, ``replay`` and ``suggest``: decisions as evidence, registered in one place.

Each sub-command's parser names its runner (``set_defaults(run=...)``), which the command's main calls.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import _audit, _replay, _suggest, _test_cases

__all__ = ["add_evidence_parsers"]


def add_evidence_parsers(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``test``, ``audit``, ``replay`` and ``suggest``."""
    _test_cases.add_parser(commands)
    _replay.add_parser(commands)
    _suggest.add_parser(commands)
    _audit.add_parser(commands)
