//! Per-call latency of one MCP tool through our `McpTool` (catalog lookup +
//! `Tool::execute`) and through a bare rmcp client, side by side on the same server.
//!
//! ```text
//! echo_latency (--url URL | --stdio PROGRAM [ARG…] --) [--tool echo] [--args '{"message":"hello"}']
//!              [--warm-up 200] [--calls 2000]
//! ```
//!
//! `--url` dials one streamable-HTTP server with both clients: ours as `mecated`
//! builds it, the bare one with rmcp's default client settings (its own pooled
//! reqwest client, default transport config and response cache). `--stdio` starts the program twice, one child per client. Calls are
//! sequential and interleaved (ours and bare in each round, alternating which goes
//! first) so both see the same machine state. Prints one JSON object on stdout:
//! `{"transport","tool","warm_up","ours_us":[…],"bare_us":[…]}` (microseconds per call,
//! warm-up excluded). `scripts/benchmarks.sh` runs it; the statistics are computed
//! there.

// A measuring program: it reports on stdout, and a broken setup is fatal.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs
)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use adapter_mcp::{ConnectOptions, McpManager, MountOptions, ServerConfig};
use engine_core::{Catalog, Environment};
use engine_ports::{CancellationToken, ToolCall};
use rmcp::ClientHandler;
use rmcp::model::{CallToolRequestParams, ClientConfig, JsonObject};
use rmcp::service::{RoleClient, RunningService, ServiceExt as _};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

/// The server name our catalog mounts it under (`mcp__bench__<tool>`).
const SERVER: &str = "bench";

enum Target {
    Http(String),
    Stdio(Vec<String>),
}

struct Options {
    target: Target,
    tool: String,
    args: JsonObject,
    warm_up: usize,
    calls: usize,
}

fn usage() -> ! {
    eprintln!(
        "usage: echo_latency (--url URL | --stdio PROGRAM [ARG...] --) [--tool NAME] [--args JSON] \
         [--warm-up N] [--calls N]"
    );
    std::process::exit(2)
}

fn options() -> Options {
    let mut args = std::env::args().skip(1);
    let (mut target, mut tool, mut call_args) = (None, "echo".to_owned(), json!({"message": "hello"}));
    let (mut warm_up, mut calls) = (200, 2_000);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--url" => target = Some(Target::Http(value())),
            "--stdio" => {
                let command: Vec<String> = args.by_ref().take_while(|a| a != "--").collect();
                if command.is_empty() {
                    usage();
                }
                target = Some(Target::Stdio(command));
            }
            "--tool" => tool = value(),
            "--args" => call_args = serde_json::from_str(&value()).unwrap_or_else(|_| usage()),
            "--warm-up" => warm_up = value().parse().unwrap_or_else(|_| usage()),
            "--calls" => calls = value().parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    let Value::Object(call_args) = call_args else {
        usage()
    };
    Options {
        target: target.unwrap_or_else(|| usage()),
        tool,
        args: call_args,
        warm_up,
        calls,
    }
}

/// The bare client: rmcp with the adapter's protocol version and nothing else.
struct Bare;

impl ClientHandler for Bare {
    fn get_info(&self) -> ClientConfig {
        // The adapter's protocol version, no capabilities: the handshake it does.
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new("bare", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

async fn bare_client(target: &Target) -> RunningService<RoleClient, Bare> {
    match target {
        Target::Http(url) => {
            // rmcp's default client settings: its own pooled reqwest client and
            // default transport config (the baseline a user of rmcp gets).
            Bare.serve(StreamableHttpClientTransport::from_uri(url.as_str()))
                .await
                .unwrap()
        }
        Target::Stdio(command) => {
            let mut child = tokio::process::Command::new(&command[0])
                .args(&command[1..])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let stdin = child.stdin.take().unwrap();
            // The child lives as long as the runtime; kill_on_drop ends it.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
            Bare.serve((stdout, stdin)).await.unwrap()
        }
    }
}

async fn our_catalog(target: &Target) -> (McpManager, Catalog) {
    let config = match target {
        Target::Http(url) => ServerConfig::http(SERVER, url.as_str(), None),
        Target::Stdio(command) => {
            ServerConfig::stdio(SERVER, &command[0], command[1..].to_vec(), std::env::temp_dir())
        }
    };
    let connected = McpManager::connect(
        vec![config.with_connect_timeout(Duration::from_secs(30))],
        ConnectOptions::default(),
    )
    .await;
    assert!(connected.failures.is_empty(), "{:?}", connected.failures);
    let mut catalog = Catalog::new();
    let snapshot = connected.manager.tool_snapshot(MountOptions::default());
    for tool in snapshot.catalog_tools() {
        catalog.must_register(tool);
    }
    (connected.manager, catalog)
}

/// (a) ours: the lookup is part of the path, as in the dispatcher.
async fn call_ours(
    catalog: &Catalog,
    name: &str,
    args_text: &str,
    cancel: &CancellationToken,
    env: &Environment,
) -> Duration {
    let started = Instant::now();
    let tool = catalog.lookup(name).expect("the tool is mounted");
    let call = ToolCall::new("c", name, args_text);
    let result = tool.execute(cancel, &call, env).await.unwrap();
    let took = started.elapsed();
    assert!(!result.is_error(), "{name}: {}", result.content());
    took
}

/// (b) bare rmcp `call_tool`.
async fn call_bare(bare: &RunningService<RoleClient, Bare>, options: &Options) -> Duration {
    let started = Instant::now();
    let mut params = CallToolRequestParams::new(options.tool.clone());
    params.arguments = Some(options.args.clone());
    let result = bare.call_tool(params).await.unwrap();
    let took = started.elapsed();
    assert_ne!(result.is_error, Some(true), "bare {}: {result:?}", options.tool);
    took
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let options = options();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let env = Environment::new(std::env::temp_dir()).unwrap();
    let cancel = CancellationToken::new();
    let name = format!("mcp__{SERVER}__{}", options.tool);
    let args_text = Value::Object(options.args.clone()).to_string();
    let (ours_us, bare_us) = runtime.block_on(async {
        let (manager, catalog) = our_catalog(&options.target).await;
        let bare = bare_client(&options.target).await;
        let (mut ours_us, mut bare_us) = (Vec::new(), Vec::new());
        for round in 0..options.warm_up + options.calls {
            // Alternate who goes first, so neither pays for what the other left behind.
            let (ours, bare_took) = if round % 2 == 0 {
                let ours = call_ours(&catalog, &name, &args_text, &cancel, &env).await;
                (ours, call_bare(&bare, &options).await)
            } else {
                let bare_took = call_bare(&bare, &options).await;
                (
                    call_ours(&catalog, &name, &args_text, &cancel, &env).await,
                    bare_took,
                )
            };
            if round >= options.warm_up {
                ours_us.push(micros(ours));
                bare_us.push(micros(bare_took));
            }
        }
        let _ = bare.cancel().await;
        let _ = manager.close().await;
        (ours_us, bare_us)
    });
    let transport = match options.target {
        Target::Http(_) => "http",
        Target::Stdio(_) => "stdio",
    };
    let report = json!({
        "transport": transport,
        "tool": options.tool,
        "warm_up": options.warm_up,
        "ours_us": ours_us,
        "bare_us": bare_us,
    });
    println!("{report}");
}
