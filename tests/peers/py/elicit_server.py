"""An MCP server on the Python SDK (mcp 2.x) that elicits and returns structured output:
`elicit_server.py PORT` serves streamable HTTP at http://127.0.0.1:PORT/mcp;
`elicit_server.py stdio` serves on stdin/stdout.

Tools:
- ask_name() asks the user (form elicitation: `name` string required, `age` integer
  optional) and answers "hello <name>" (", age <age>" when given), or "declined" /
  "cancelled" with the user's action;
- measure(mode) declares an output schema {answer: integer, label: string} and
  returns, by mode, matching structured content ("good"), content that does not
  match it ("bad": answer is a string, label a number) or none at all ("missing");
- loose() declares an output schema that is not valid JSON Schema (its property
  `anything` has type "no-such-type") and returns {"anything": true}.
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

server = MCPServer("elicit-server")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int | None = Field(default=None, description="Your age")


class Answer(BaseModel):
    answer: int
    label: str


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the user for their name."""
    result = await ctx.elicit("What is your name?", Person)
    if result.action == "accept":
        text = f"hello {result.data.name}"
        if result.data.age is not None:
            text += f", age {result.data.age}"
        return text
    return "declined" if result.action == "decline" else "cancelled"


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

if sys.argv[1] == "stdio":
    server.run("stdio")
else:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
