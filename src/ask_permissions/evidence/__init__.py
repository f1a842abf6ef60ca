"""Decisions as evidence: policy cases, audit lines, replays of a policy change, rules learned from answers.

The command's ``test``, ``audit``, ``replay`` and ``suggest`` read and compute here; ``cli/`` only prints.
"""
