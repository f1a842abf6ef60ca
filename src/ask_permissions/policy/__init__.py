"""Policies and their pipeline: what decides a tool call, and the decision as data.

Owns the policies (``ApprovalPolicy``, ``LayeredPolicy``, the mode gate, plan mode), the pipeline they are
built of, tool metadata, hooks, hook results and decision records. May import ``settings`` (the sources a
layered policy reads), ``rules``, ``queue``, ``shell`` and the ground floor; never what is built on it
(``loading``, ``sandbox``, ``evidence``, ``cli``, ``integrations``).
"""
