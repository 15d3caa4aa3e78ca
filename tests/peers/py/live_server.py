"""An MCP server on the Python SDK (mcp 2.x) for resilience tests: `live_server.py PORT`.

Serves streamable HTTP at http://127.0.0.1:PORT/mcp. Tools:
- echo(text) -> "echo:<text>", read-only;
- hang() never answers (the request stays open until the client gives up);
- tick(seconds) reports progress every second and answers "ticked <seconds>";
- grow(name) adds a tool `name` (answering "<name>:<text>") at run time and sends
  notifications/tools/list_changed to the caller's session (up to 2025-11-25) and to
  the `subscriptions/listen` streams (2026-07-28).
"""

import asyncio
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

PORT = int(sys.argv[1])

server = MCPServer("live-server")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Echoes the text back."""
    return f"echo:{text}"


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.Event().wait()
    return "unreachable"


@server.tool()
async def tick(seconds: int, ctx: Context) -> str:
    """Reports progress every second for the given number of seconds."""
    for step in range(seconds):
        await asyncio.sleep(1)
        await ctx.report_progress(step + 1, seconds)
    return f"ticked {seconds}"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool named `name` and tells the client its tool list changed."""

    def added(text: str) -> str:
        return f"{name}:{text}"

    server.add_tool(added, name=name, description=f"Added at run time as {name}.")
    # Up to 2025-11-25 the notification goes to the caller's session; under
    # 2026-07-28 to the clients' `subscriptions/listen` streams.
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return f"added {name}"


server.run("streamable-http", host="127.0.0.1", port=PORT)
