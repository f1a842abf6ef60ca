"""A small upstream MCP server for the proxy's tests: in-process (``Upstream``) or as a stdio script.

Run as a script (``python mcp_upstream.py RECORD_FILE``) it serves the same tools over stdio and appends
each call that really ran to RECORD_FILE, one JSON line each.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

# mcp 2 takes handlers in the Server constructor; mcp 1 registers them with decorators.
MCP2 = "on_call_tool" in inspect.signature(Server.__init__).parameters

# Built from the wire form: the field names differ between the 1.x and 2.x types.
TOOLS = [
    types.Tool.model_validate(
        {
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]},
        }
    )
    for name, description, key in [
        ("read_file", "Read a file.", "path"),
        ("bash", "Run a shell command.", "command"),
        ("delete_user", "Delete a user.", "name"),
        ("fetch", "Fetch a URL.", "url"),
    ]
]


class Upstream:
    """The upstream's tools; each records the calls that really ran."""

    def __init__(self, record_file: str | None = None) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self._record_file = record_file

    def run_tool(
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[list[types.TextContent], dict[str, Any]]:
        """Run a tool: its text content and its structured content."""
        arguments = arguments or {}
        self.ran.append((name, arguments))
        if self._record_file is not None:
            with open(self._record_file, "a", encoding="utf-8") as file:
                file.write(json.dumps([name, arguments]) + "\n")
        text = f"{name} ran with {json.dumps(arguments, sort_keys=True)}"
        return [types.TextContent(type="text", text=text)], {"ok": 1}

    def server(self) -> Server[Any]:
        """A low-level server offering TOOLS, on whichever server API this mcp release has."""
        if MCP2:

            async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
                return types.ListToolsResult(tools=TOOLS)

            async def call_tool(context: Any, params: Any) -> types.CallToolResult:
                content, structured = self.run_tool(params.name, params.arguments)
                return types.CallToolResult.model_validate(
                    {"content": content, "structuredContent": structured}
                )

            factory: Any = Server
            return factory("files", on_list_tools=list_tools, on_call_tool=call_tool)  # type: ignore[no-any-return]

        server: Any = Server("files")

        @server.list_tools()  # type: ignore[misc,unused-ignore]
        async def list_tools_v1() -> list[types.Tool]:
            return TOOLS

        @server.call_tool()  # type: ignore[misc,unused-ignore]
        async def call_tool_v1(name: str, arguments: dict[str, Any]) -> Any:
            return self.run_tool(name, arguments)

        return server  # type: ignore[no-any-return]


async def _serve_stdio(record_file: str) -> None:
    from mcp.server.stdio import stdio_server

    server = Upstream(record_file).server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import asyncio

    asyncio.run(_serve_stdio(sys.argv[1]))
