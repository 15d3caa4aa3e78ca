//! Performance target: `mcp__bench__echo` through `Catalog` lookup +
//! `Tool::execute` (argument check, resilience wrapper, mapping, cap) against a bare
//! rmcp `call_tool` with rmcp's default client settings, on a standalone loopback
//! streamable-HTTP echo server running in its own process (this binary, started
//! again with `MECATL_BENCH_ECHO_SERVER=1`).
//!
//! Prints, per client, the median and p99 of 2,000 sequential calls after 200
//! warm-up calls, and the median ratio (target ≤ 1.10); then runs the same two
//! paths as criterion benchmarks.

// A benchmark program: it reports on stdout, and a broken setup is fatal.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs
)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_mcp::{ConnectOptions, McpManager, MountOptions, ServerConfig};
use criterion::Criterion;
use engine_core::{Catalog, Environment};
use engine_ports::{CancellationToken, ToolCall};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService, ServiceExt as _};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ClientHandler, ServerHandler};
use serde_json::{Value, json};

const SERVER_ENV: &str = "MECATL_BENCH_ECHO_SERVER";
const WARM_UP: usize = 200;
const MEASURED: usize = 2_000;

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> InitializeResult {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({"tools": {}})).unwrap();
        InitializeResult::new(capabilities)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Echoes the text.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("");
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("echo:{text}"))]).into())
    }
}

/// The server process: prints its port, then serves until killed.
fn serve() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap().port());
        // As a well-configured server does (Node's HTTP server does it by default):
        // without TCP_NODELAY, a response written in two parts on a kept-alive
        // connection waits for the client's delayed ACK, about 40 ms on Linux.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        let service = StreamableHttpService::new(
            || Ok(Echo),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let app = axum::Router::new().nest_service("/mcp", service);
        axum::serve(listener, app).await.unwrap();
    });
}

struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server() -> (ServerProcess, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(SERVER_ENV, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", line.trim());
    (ServerProcess(child), url)
}

/// The bare rmcp client with rmcp's default client settings.
struct Bare;

impl ClientHandler for Bare {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        // The adapter's protocol version, no capabilities: the handshake it does.
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::default(),
            rmcp::model::Implementation::new("bare", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

async fn bare_client(url: &str) -> RunningService<RoleClient, Bare> {
    Bare.serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .unwrap()
}

fn arguments() -> serde_json::Map<String, Value> {
    let Value::Object(map) = json!({"text": "hello"}) else {
        unreachable!()
    };
    map
}

async fn ours(catalog: &Catalog, env: &Environment, cancel: &CancellationToken) {
    let tool = catalog.lookup("mcp__bench__echo").unwrap();
    let call = ToolCall::new("c", "mcp__bench__echo", r#"{"text":"hello"}"#);
    let result = tool.execute(cancel, &call, env).await.unwrap();
    assert_eq!(result.content(), "echo:hello");
}

async fn bare(client: &RunningService<RoleClient, Bare>) {
    let mut params = CallToolRequestParams::new("echo");
    params.arguments = Some(arguments());
    let result = client.call_tool(params).await.unwrap();
    assert!(matches!(result.content.first(), Some(ContentBlock::Text(t)) if t.text == "echo:hello"));
}

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let median = samples[samples.len() / 2];
    let p99 = samples[(samples.len() * 99 / 100).min(samples.len() - 1)];
    (median, p99)
}

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        serve();
        return;
    }
    let (_server, url) = start_server();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (manager, catalog, client) = runtime.block_on(async {
        let config = ServerConfig::http("bench", url.clone(), None);
        let connected = McpManager::connect(vec![config], ConnectOptions::default()).await;
        assert!(connected.failures.is_empty(), "{:?}", connected.failures);
        let mut catalog = Catalog::new();
        let snapshot = connected.manager.tool_snapshot(MountOptions::default());
        for tool in snapshot.catalog_tools() {
            catalog.must_register(tool);
        }
        (connected.manager, catalog, bare_client(&url).await)
    });
    let dir = std::env::temp_dir();
    let env = Environment::new(&dir).unwrap();
    let cancel = CancellationToken::new();

    // The measurement: interleaved rounds so both clients see the same machine state.
    let (mut ours_samples, mut bare_samples) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        for round in 0..WARM_UP + MEASURED {
            let started = Instant::now();
            ours(&catalog, &env, &cancel).await;
            let ours_took = started.elapsed();
            let started = Instant::now();
            bare(&client).await;
            let bare_took = started.elapsed();
            if round >= WARM_UP {
                ours_samples.push(ours_took);
                bare_samples.push(bare_took);
            }
        }
    });
    let (ours_median, ours_p99) = stats(ours_samples);
    let (bare_median, bare_p99) = stats(bare_samples);
    let ratio = ours_median.as_secs_f64() / bare_median.as_secs_f64();
    println!("mcp__bench__echo via Catalog + execute: median {ours_median:?}, p99 {ours_p99:?}");
    println!("bare rmcp call_tool:                    median {bare_median:?}, p99 {bare_p99:?}");
    println!("median ratio (target <= 1.10): {ratio:.3}");

    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("mcp_tool_execute", |b| {
        b.to_async(&runtime).iter(|| ours(&catalog, &env, &cancel));
    });
    criterion.bench_function("bare_rmcp_call_tool", |b| {
        b.to_async(&runtime).iter(|| bare(&client));
    });
    criterion.final_summary();
    runtime.block_on(async {
        let _ = manager.close().await;
    });
}
