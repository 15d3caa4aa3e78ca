"""Per-call latency of the official MCP Python SDK client (`mcp`, pinned in
tests/peers/requirements.txt) against one streamable-HTTP server.

Run with the peers' venv:  .peers/venv/bin/python mcp_client.py URL [--warm-up N] [--calls N]
It connects with the plain `initialize` handshake (mode="legacy", as our client does)
and the response cache off, calls the tool sequentially and prints one JSON object:
{"client": "python-sdk", "sdk": VERSION, "samples_us": [...]} (warm-up excluded).
"""

import argparse
import asyncio
import importlib.metadata
import json
import time

from mcp import Client


async def measure(args: argparse.Namespace) -> list[float]:
    arguments = json.loads(args.args)
    samples = []
    async with Client(args.url, mode="legacy", cache=None) as client:
        for i in range(args.warm_up + args.calls):
            started = time.perf_counter_ns()
            result = await client.call_tool(args.tool, arguments)
            took = time.perf_counter_ns() - started
            if result.is_error:
                raise SystemExit(f"{args.tool} failed: {result}")
            if i >= args.warm_up:
                samples.append(took / 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--tool", default="echo")
    parser.add_argument("--args", default='{"message": "hello"}')
    parser.add_argument("--warm-up", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    samples = asyncio.run(measure(args))
    print(json.dumps({"client": "python-sdk", "sdk": importlib.metadata.version("mcp"), "samples_us": samples}))


if __name__ == "__main__":
    main()
