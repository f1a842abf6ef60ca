"""Adapters that put an ``ApprovalPolicy`` in front of an agent framework's tool calls.

Each adapter lives in its own module and imports its framework only when that module is imported:

- ``ask_permissions.integrations.langchain``: ``PermissionMiddleware`` for LangChain v1 agents
  (``pip install 'ask-permissions[langchain]'``).
- ``ask_permissions.integrations.pydantic_ai``: ``PermissionToolset`` and ``deferred_tool_results`` for
  pydantic-ai agents (``pip install 'ask-permissions[pydantic-ai]'``).

This package itself imports no framework, so ``import ask_permissions.integrations`` always works.
"""
