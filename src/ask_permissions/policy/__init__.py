"""Policies and their engine: what decides a tool call, and the decision as data.

Owns the policies (``ApprovalPolicy``, the mode gate, plan mode), tool metadata, hook results and decision
records. May import ``rules`` and ``queue`` and the package's leaf modules; never ``settings``, ``cli`` or
``integrations``.
"""
