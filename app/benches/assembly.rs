//! Performance targets of per-session catalog assembly: `assemble_catalog`
//! over a 1,000-tool shared catalog (< 1 ms p50, < 2 ms p99 over 1,000 runs; tools
//! shared by `Arc`, no I/O), and with 2 client servers × 50 tools (< 1.5 ms p50).
//! Prints p50/p99 of 1,000 runs each, then runs criterion. The same measurement over a
//! 10,000-tool shared catalog shows how assembly scales (it has no target).

// A benchmark program: it reports on stdout, and a broken setup is fatal.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub,
    dead_code
)]

#[path = "../tests/it/support/mcp_fixture.rs"]
mod mcp_fixture;

use std::hint::black_box;
use std::time::{Duration, Instant};

use adapter_mcp::{ConnectOptions, McpManager, ServerConfig, ServerSource};
use adapter_skillfs::HostEnv;
use app::{AppConfig, CatalogAssets, CatalogInputs, assemble_catalog, build};
use criterion::Criterion;
use mcp_fixture::{FixtureSpec, McpFixture};

/// The allocator `mecated` runs with.
#[global_allocator]
static ALLOCATOR: app::Allocator = app::Allocator;

fn tool_names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i:04}")).collect()
}

fn spec(prefix: &str, count: usize) -> FixtureSpec {
    let names = tool_names(prefix, count);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    FixtureSpec::tools("x:", &names)
}

fn percentiles(assets: &CatalogAssets, client: Option<&McpManager>) -> (Duration, Duration, usize) {
    let mut samples = Vec::with_capacity(1_000);
    let mut size = 0;
    for _ in 0..1_000 {
        let started = Instant::now();
        let assembled = assemble_catalog(
            assets,
            CatalogInputs {
                client_mcp: client,
                narrate: false,
                child: None,
            },
        );
        samples.push(started.elapsed());
        size = assembled.catalog.len();
        drop(black_box(assembled));
    }
    samples.sort_unstable();
    (samples[499], samples[989], size)
}

/// A build whose shared catalog holds 7 core tools and `mcp_tools` tools of one
/// loopback server (kept alive by the returned fixture).
async fn build_with(ws: &std::path::Path, mcp_tools: usize) -> (app::Built, McpFixture) {
    let global = McpFixture::start(spec("g", mcp_tools)).await;
    let mut cfg = AppConfig::new(ws);
    cfg.skills.host = Some(HostEnv {
        cwd: ws.to_path_buf(),
        home: None,
        xdg_config_home: None,
    });
    cfg.mcp.servers = vec![ServerConfig::http("global", &global.url, None)];
    (build(cfg).await.unwrap(), global)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (built_10k, _server_10k) = runtime.block_on(build_with(ws.path(), 9_993));
    let (built, client, _servers) = runtime.block_on(async {
        // 993 MCP tools + 7 core tools = a 1,000-tool shared catalog.
        let global = McpFixture::start(spec("g", 993)).await;
        let clients = [
            McpFixture::start(spec("a", 50)).await,
            McpFixture::start(spec("b", 50)).await,
        ];
        let mut cfg = AppConfig::new(ws.path());
        cfg.skills.host = Some(HostEnv {
            cwd: ws.path().to_path_buf(),
            home: None,
            xdg_config_home: None,
        });
        cfg.mcp.servers = vec![ServerConfig::http("global", &global.url, None)];
        let built = build(cfg).await.unwrap();
        let configs = clients
            .iter()
            .enumerate()
            .map(|(i, s)| {
                ServerConfig::http(format!("client{i}"), &s.url, None).with_source(ServerSource::Client)
            })
            .collect();
        let connected = McpManager::connect(configs, ConnectOptions::default()).await;
        assert!(connected.failures.is_empty(), "{:?}", connected.failures);
        (built, connected.manager, (global, clients))
    });
    let assets = built.assets();

    let (p50, p99, size) = percentiles(assets, None);
    println!(
        "assemble_catalog, {size}-tool shared catalog: p50 {p50:?}, p99 {p99:?} (targets < 1 ms, < 2 ms)"
    );
    let (p50, p99, size) = percentiles(assets, Some(&client));
    println!(
        "assemble_catalog, + 2 client servers × 50 tools ({size} tools): p50 {p50:?}, p99 {p99:?} (target p50 < 1.5 ms)"
    );
    let (p50, p99, size) = percentiles(built_10k.assets(), None);
    println!("assemble_catalog, {size}-tool shared catalog: p50 {p50:?}, p99 {p99:?} (no target)");

    let mut criterion = Criterion::default().sample_size(50).configure_from_args();
    criterion.bench_function("assemble_catalog/1000-shared", |b| {
        b.iter(|| {
            assemble_catalog(
                assets,
                CatalogInputs {
                    client_mcp: None,
                    narrate: false,
                    child: None,
                },
            )
        })
    });
    criterion.bench_function("assemble_catalog/1000-shared+2x50-client", |b| {
        b.iter(|| {
            assemble_catalog(
                assets,
                CatalogInputs {
                    client_mcp: Some(&client),
                    narrate: false,
                    child: None,
                },
            )
        })
    });
    criterion.bench_function("assemble_catalog/10000-shared", |b| {
        b.iter(|| {
            assemble_catalog(
                built_10k.assets(),
                CatalogInputs {
                    client_mcp: None,
                    narrate: false,
                    child: None,
                },
            )
        })
    });
    criterion.final_summary();
    runtime.block_on(async {
        client.close().await.unwrap();
        built.close().await.unwrap();
        built_10k.close().await.unwrap();
    });
}
