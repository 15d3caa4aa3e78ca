// Per-call latency of the official MCP TypeScript SDK client
// (`@modelcontextprotocol/sdk`, pinned in tests/peers/package.json) against one
// streamable-HTTP server.
//
// Run with the pinned Node 22:
//   .peers/npm/node_modules/.bin/node mcp_client.mjs URL [--warm-up N] [--calls N]
// The SDK is imported from the installed peers (MECATED_PEERS_DIR, default .peers).
// Calls are sequential; prints one JSON object:
// {"client": "typescript-sdk", "sdk": VERSION, "samples_us": [...]} (warm-up excluded).
// With `--paired URL2 --paired-tool TOOL2` it holds a second session on URL2 and
// alternates, call by call, between the two (each gets the warm-up and call counts);
// `paired_us` then holds URL2's samples, measured at the same moments of the same
// process, so a shared host's drift is not part of their ratio.

import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const peers = process.env.MECATED_PEERS_DIR || join(root, ".peers");
const sdk = join(peers, "npm/node_modules/@modelcontextprotocol/sdk");
const load = (file) => import(pathToFileURL(join(sdk, "dist/esm", file)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    tool: { type: "string", default: "echo" },
    args: { type: "string", default: '{"message": "hello"}' },
    "warm-up": { type: "string", default: "200" },
    calls: { type: "string", default: "2000" },
    paired: { type: "string" },
    "paired-tool": { type: "string", default: "echo" },
  },
});
const url = positionals[0];
const warmUp = Number(values["warm-up"]);
const calls = Number(values.calls);
const args = JSON.parse(values.args);

async function connect(target) {
  const client = new Client({ name: "mecatl-bench", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(target)));
  return client;
}

// One call's latency in µs.
async function timedCall(client, tool) {
  const started = process.hrtime.bigint();
  const result = await client.callTool({ name: tool, arguments: args });
  const took = process.hrtime.bigint() - started;
  if (result.isError) throw new Error(`${tool} failed: ${JSON.stringify(result)}`);
  return Number(took) / 1000;
}

const client = await connect(url);
const other = values.paired ? await connect(values.paired) : null;
const samples = [];
const paired = [];
for (let i = 0; i < warmUp + calls; i++) {
  const took = await timedCall(client, values.tool);
  if (i >= warmUp) samples.push(took);
  if (other) {
    const tookPaired = await timedCall(other, values["paired-tool"]);
    if (i >= warmUp) paired.push(tookPaired);
  }
}
await client.close();
if (other) await other.close();
const version = JSON.parse(readFileSync(join(sdk, "package.json"), "utf8")).version;
const out = { client: "typescript-sdk", sdk: version, samples_us: samples };
if (other) out.paired_us = paired;
console.log(JSON.stringify(out));
