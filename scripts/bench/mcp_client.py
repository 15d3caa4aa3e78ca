"""Per-call latency of the official MCP Python SDK client (`mcp`, pinned in
tests/peers/requirements.txt) against one streamable-HTTP server.

Run with the peers' venv:  .peers/venv/bin/python mcp_client.py URL [--warm-up N] [--calls N]
It connects with the plain `initialize` handshake (mode="legacy", as our client does)
and the response cache off, calls the tool sequentially and prints one JSON object:
{"client": "python-sdk", "sdk": VERSION, "samples_us": [...]} (warm-up excluded).

With `--paired URL2 --paired-tool TOOL2` it holds a second session on URL2 and
alternates, call by call, between `TOOL` on URL and `TOOL2` on URL2 (each gets the
warm-up and call counts); `paired_us` then holds URL2's samples. Both figures then
come from the same moments of the same process, so a shared host's drift is not
part of their ratio.
"""

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import time

from mcp import Client


async def timed_call(client: Client, tool: str, arguments: dict) -> float:
    """One call's latency in µs."""
    started = time.perf_counter_ns()
    result = await client.call_tool(tool, arguments)
    took = time.perf_counter_ns() - started
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result}")
    return took / 1000


async def measure(args: argparse.Namespace) -> dict:
    arguments = json.loads(args.args)
    samples, paired = [], []
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(Client(args.url, mode="legacy", cache=None))
        other = None
        if args.paired:
            other = await stack.enter_async_context(Client(args.paired, mode="legacy", cache=None))
        for i in range(args.warm_up + args.calls):
            took = await timed_call(client, args.tool, arguments)
            if i >= args.warm_up:
                samples.append(took)
            if other is not None:
                took = await timed_call(other, args.paired_tool, arguments)
                if i >= args.warm_up:
                    paired.append(took)
    out = {"samples_us": samples}
    if other is not None:
        out["paired_us"] = paired
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--tool", default="echo")
    parser.add_argument("--args", default='{"message": "hello"}')
    parser.add_argument("--warm-up", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--paired", help="a second server's URL, called alternately")
    parser.add_argument("--paired-tool", default="echo")
    args = parser.parse_args()
    measured = asyncio.run(measure(args))
    print(json.dumps({"client": "python-sdk", "sdk": importlib.metadata.version("mcp"), **measured}))


if __name__ == "__main__":
    main()
