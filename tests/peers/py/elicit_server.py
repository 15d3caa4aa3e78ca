"""An MCP server on the Python SDK (mcp 2.x) that elicits and returns structured output:
`elicit_server.py PORT` serves streamable HTTP at http://127.0.0.1:PORT/mcp;
`elicit_server.py stdio` serves on stdin/stdout. It speaks protocol 2026-07-28 (no
`initialize`; a question is an `input_required` result and the call comes again with
the answer) as well as the revisions up to 2025-11-25 (a question is a request sent
during the call). With `--legacy` after the first argument it is a server from before
2026-07-28: it answers `server/discover` with "method not found" (over stdio it runs
the SDK's handshake-only loop, which does so itself), so a client falls back to
`initialize`.

Tools:
- ask_name() asks the user (form elicitation: `name` string required, `age` integer
  optional) and answers "hello <name>" (", age <age>" when given), or "declined" /
  "cancelled" with the user's action. It asks through a resolver
  (`Resolve(Elicit(...))`), the SDK's form for every revision: a request during the
  call up to 2025-11-25, an `input_required` result under 2026-07-28;
- measure(mode) declares an output schema {answer: integer, label: string} and
  returns, by mode, matching structured content ("good"), content that does not
  match it ("bad": answer is a string, label a number) or none at all ("missing");
- loose() declares an output schema that is not valid JSON Schema (its property
  `anything` has type "no-such-type") and returns {"anything": true}.
"""

import sys
from typing import Annotated

import anyio

from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND, CallToolResult, RequestParams, TextContent
from pydantic import BaseModel, Field

server = MCPServer("elicit-server")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int | None = Field(default=None, description="Your age")


class Answer(BaseModel):
    answer: int
    label: str


def ask_person() -> Elicit[Person]:
    return Elicit("What is your name?", Person)


@server.tool()
async def ask_name(person: Annotated[ElicitationResult[Person], Resolve(ask_person)]) -> str:
    """Asks the user for their name."""
    if isinstance(person, AcceptedElicitation):
        text = f"hello {person.data.name}"
        if person.data.age is not None:
            text += f", age {person.data.age}"
        return text
    return "declined" if person.action == "decline" else "cancelled"


@server.tool()
def measure(mode: str) -> Answer:
    """Returns a measurement: good, bad or missing structured content."""
    if mode == "good":
        structured = {"answer": 42, "label": "ok"}
    elif mode == "bad":
        structured = {"answer": "forty-two", "label": 7}
    else:
        structured = None
    return CallToolResult(content=[TextContent(text=f"measured {mode}")], structured_content=structured)


@server.tool()
def loose() -> dict:
    """Returns a value under an output schema that is not valid JSON Schema."""
    return CallToolResult(content=[TextContent(text="loose")], structured_content={"anything": True})


# Publish the schemas without having the SDK check the results: this server must be
# able to break its own schema on demand.
server._tool_manager.get_tool("measure").fn_metadata.output_model = None
loose_meta = server._tool_manager.get_tool("loose").fn_metadata
loose_meta.output_model = None
loose_meta.output_schema = {"type": "object", "properties": {"anything": {"type": "no-such-type"}}}

legacy = "--legacy" in sys.argv[2:]
if legacy:
    # Over HTTP the SDK serves a 2026-07-28 request on its own entry: refuse the
    # probe there. Over stdio, serve the handshake-era loop only.

    async def no_discover(ctx, params):
        raise MCPError(METHOD_NOT_FOUND, "Method not found")

    server._lowlevel_server.add_request_handler("server/discover", RequestParams, no_discover)


async def serve_stdio_legacy():
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        async with lowlevel.lifespan(lowlevel) as state:
            await serve_loop(
                lowlevel,
                read_stream,
                write_stream,
                lifespan_state=state,
                init_options=lowlevel.create_initialization_options(),
            )


if sys.argv[1] == "stdio" and legacy:
    anyio.run(serve_stdio_legacy)
elif sys.argv[1] == "stdio":
    server.run("stdio")
else:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
