"""Adapters that put an ``ApprovalPolicy`` in front of an agent framework's tool calls.

Each adapter lives in its own module and imports its framework only when that module is imported. Each
comes with an extra: from a checkout, ``pip install '.[langchain]'``; once the package is published,
``pip install 'ask-permissions[langchain]'``.

- ``ask_permissions.integrations.langchain``: ``PermissionMiddleware`` for LangChain v1 agents
  (``pip install 'ask-permissions[langchain]'``).
- ``ask_permissions.integrations.pydantic_ai``: ``PermissionToolset`` and ``deferred_tool_results`` for
  pydantic-ai agents (``pip install 'ask-permissions[pydantic-ai]'``).
- ``ask_permissions.integrations.openai_agents``: ``PermissionGuard`` for the function tools of OpenAI Agents
  SDK agents (``pip install 'ask-permissions[openai-agents]'``).
- ``ask_permissions.integrations.adk``: ``PermissionPlugin`` for every tool of a Google ADK runner
  (``pip install 'ask-permissions[adk]'``).
- ``ask_permissions.integrations.mcp_proxy``: ``PermissionProxy``, the MCP server behind
  ``ask-permissions mcp-proxy`` that gates an upstream MCP server's tool calls
  (``pip install 'ask-permissions[mcp]'``).

This package itself imports no framework, so ``import ask_permissions.integrations`` always works.
"""
