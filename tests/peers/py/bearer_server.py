"""A bearer-token MCP server on the Python SDK (mcp 2.x): `bearer_server.py PORT TOKEN`.

Serves streamable HTTP at http://127.0.0.1:PORT/mcp and accepts only
`Authorization: Bearer TOKEN`. Tools: add(a, b), read-only and idempotent;
slow(seconds), destructive, sleeping in 0.5 s steps with progress after each.
"""

import asyncio
import sys

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

PORT = int(sys.argv[1])
TOKEN = sys.argv[2]
BASE = f"http://127.0.0.1:{PORT}"


class OneTokenVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        if token == TOKEN:
            return AccessToken(token=token, client_id="mecatl-tests", scopes=[])
        return None


server = MCPServer(
    "bearer-server",
    token_verifier=OneTokenVerifier(),
    auth=AuthSettings(issuer_url=BASE, resource_server_url=BASE + "/mcp", validate_token_resource=False),
)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True))
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(destructiveHint=True, readOnlyHint=False))
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps for the given number of seconds, reporting progress every 0.5 s."""
    steps = max(1, int(seconds / 0.5))
    for step in range(steps):
        await asyncio.sleep(0.5)
        await ctx.report_progress(step + 1, steps)
    return f"slept {seconds}s"


server.run("streamable-http", host="127.0.0.1", port=PORT)
