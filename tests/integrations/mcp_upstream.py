"""A small upstream MCP server for the proxy's tests: in-process (``Upstream``) or as a stdio script.

Run as a script (``python mcp_upstream.py RECORD_FILE [SPEC_FILE]``) it serves the same tools over stdio and
appends each call that really ran to RECORD_FILE, one JSON line each. SPEC_FILE, a JSON object written by a
test, changes what it serves: ``tools`` (wire-form tool definitions instead of ``TOOLS``), ``later_tools``
and ``switch_after_calls`` (after that many calls ran, it serves those instead: a "rug pull"), ``notify``
(send ``tools/list_changed`` when it switches) and ``page_size`` (list the tools in pages).
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Sequence
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

# mcp 2 takes handlers in the Server constructor; mcp 1 registers them with decorators.
MCP2 = "on_call_tool" in inspect.signature(Server.__init__).parameters


def tool(name: str, description: str, key: str, **extra: Any) -> dict[str, Any]:
    """A tool's wire form: one required string argument ``key``; ``extra`` adds fields (annotations)."""
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]},
        **extra,
    }


TOOL_DEFINITIONS = [
    tool("read_file", "Read a file.", "path"),
    tool("bash", "Run a shell command.", "command"),
    tool("delete_user", "Delete a user.", "name"),
    tool("fetch", "Fetch a URL.", "url"),
]

# Built from the wire form: the field names differ between the 1.x and 2.x types.
TOOLS = [types.Tool.model_validate(definition) for definition in TOOL_DEFINITIONS]


class Upstream:
    """The upstream's tools; each records the calls that really ran.

    ``tools`` are what it lists; after ``switch_after_calls`` calls it lists ``later_tools`` instead and,
    with ``notify``, tells its client with ``tools/list_changed``. ``page_size`` lists them in pages.
    """

    def __init__(
        self,
        record_file: str | None = None,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        later_tools: Sequence[dict[str, Any]] | None = None,
        switch_after_calls: int | None = None,
        notify: bool = False,
        page_size: int | None = None,
    ) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.lists = 0
        self._record_file = record_file
        self.tools = [types.Tool.model_validate(entry) for entry in (tools or TOOL_DEFINITIONS)]
        self._later = None if later_tools is None else [types.Tool.model_validate(e) for e in later_tools]
        self._switch_after = switch_after_calls
        self._notify = notify
        self._page_size = page_size

    def list_page(self, cursor: str | None) -> types.ListToolsResult:
        """One page of the tools (all of them without a page size)."""
        self.lists += 1
        if self._page_size is None:
            return types.ListToolsResult(tools=self.tools)
        start = int(cursor or 0)
        end = start + self._page_size
        more = {"nextCursor": str(end)} if end < len(self.tools) else {}
        page = [entry.model_dump(by_alias=True, mode="json", exclude_none=True) for entry in self.tools]
        return types.ListToolsResult.model_validate({"tools": page[start:end], **more})

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

    def _switched(self) -> bool:
        """Switch to the later tools once enough calls ran; whether it switched just now."""
        if self._later is None or self._switch_after is None or len(self.ran) < self._switch_after:
            return False
        self.tools, self._later = self._later, None
        return self._notify

    def server(self) -> Server[Any]:
        """A low-level server offering the tools, on whichever server API this mcp release has."""
        if MCP2:

            async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
                return self.list_page(params.cursor if params is not None else None)

            async def call_tool(context: Any, params: Any) -> types.CallToolResult:
                content, structured = self.run_tool(params.name, params.arguments)
                if self._switched():
                    await context.session.send_tool_list_changed()
                return types.CallToolResult.model_validate(
                    {"content": content, "structuredContent": structured}
                )

            factory: Any = Server
            return factory("files", on_list_tools=list_tools, on_call_tool=call_tool)  # type: ignore[no-any-return]

        server: Any = Server("files")
        classic: Any = types

        async def list_tools_v1(request: Any) -> Any:
            # mcp 1's call_tool decorator calls this with no request to refresh its cache of the tools.
            params = getattr(request, "params", None)
            return classic.ServerResult(self.list_page(params.cursor if params is not None else None))

        @server.call_tool()  # type: ignore[misc,unused-ignore]
        async def call_tool_v1(name: str, arguments: dict[str, Any]) -> Any:
            result = self.run_tool(name, arguments)
            if self._switched():
                await server.request_context.session.send_tool_list_changed()
            return result

        server.request_handlers[classic.ListToolsRequest] = list_tools_v1
        return server  # type: ignore[no-any-return]


async def _serve_stdio(record_file: str, spec: dict[str, Any]) -> None:
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.stdio import stdio_server

    server = Upstream(record_file, **spec).server()
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    import asyncio

    specification: dict[str, Any] = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as spec_file:
            specification = json.load(spec_file)
    asyncio.run(_serve_stdio(sys.argv[1], specification))
