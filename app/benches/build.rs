//! Performance targets of `build`: the mock provider with 0 MCP servers
//! (≤ 50 ms), and 16 loopback streamable-HTTP servers × 10 tools (≤ 500 ms and ≤ 2×
//! the larger of one connect and the CPU floor below: connects run concurrently).
//! Each build is closed
//! again inside the measurement. Prints a summary (median of 20 builds each) before
//! the criterion runs: in-process servers answering at once (each connect is then
//! CPU-bound, so 2 cores bound the overlap) and answering every request 25 ms late
//! (a network round trip, where overlapping connects pay off).
//!
//! Concurrent connects can overlap only as far as the cores allow, so each summary
//! also prints the CPU time (the whole process's, user and system: the client and the
//! in-process servers share the cores) of a build with 0 servers and with 1, and the
//! floor they imply for 16 on this machine: the 0-server build's CPU plus 16 connects'
//! CPU, spread over the cores. 16 concurrent connects cannot finish sooner than that.

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

use std::time::{Duration, Instant};

use adapter_mcp::ServerConfig;
use adapter_skillfs::HostEnv;
use app::{AppConfig, build};
use criterion::Criterion;
use mcp_fixture::{FixtureSpec, McpFixture};

/// The allocator `mecated` runs with.
#[global_allocator]
static ALLOCATOR: app::Allocator = app::Allocator;

fn config(ws: &std::path::Path, servers: Vec<ServerConfig>) -> AppConfig {
    let mut cfg = AppConfig::new(ws);
    cfg.skills.host = Some(HostEnv {
        cwd: ws.to_path_buf(),
        home: None,
        xdg_config_home: None,
    });
    cfg.mcp.servers = servers;
    cfg
}

/// The process's CPU time so far (user and system, every thread).
fn cpu_time() -> Duration {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).unwrap();
    let micros = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().try_into().unwrap())
            + Duration::from_micros(t.tv_usec().try_into().unwrap())
    };
    micros(usage.user_time()) + micros(usage.system_time())
}

/// The CPU time per build of `builds` builds of `cfg`.
async fn cpu_per_build(cfg: &AppConfig, builds: u32) -> Duration {
    let before = cpu_time();
    for _ in 0..builds {
        build_and_close(cfg.clone()).await;
    }
    (cpu_time() - before) / builds
}

async fn build_and_close(cfg: AppConfig) -> Duration {
    let started = Instant::now();
    let built = build(cfg).await.unwrap();
    let elapsed = started.elapsed();
    built.close().await.unwrap();
    elapsed
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// 16 servers × 10 tools answering `latency` late, and their configs.
fn servers(runtime: &tokio::runtime::Runtime, latency: Duration) -> (Vec<McpFixture>, Vec<ServerConfig>) {
    let servers: Vec<McpFixture> = runtime.block_on(async {
        let mut servers = Vec::new();
        for i in 0..16 {
            let names: Vec<String> = (0..10).map(|t| format!("tool{t}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let spec = FixtureSpec::tools(&format!("s{i}:"), &names);
            servers.push(McpFixture::start_with_latency(spec, latency).await);
        }
        servers
    });
    let configs = servers
        .iter()
        .enumerate()
        .map(|(i, s)| ServerConfig::http(format!("s{i}"), &s.url, None))
        .collect();
    (servers, configs)
}

/// Prints the medians of 20 builds with 16 servers and with one.
fn summary(runtime: &tokio::runtime::Runtime, ws: &std::path::Path, configs: &[ServerConfig], label: &str) {
    let (sixteen, single) = runtime.block_on(async {
        let mut sixteen = Vec::new();
        let mut single = Vec::new();
        for _ in 0..20 {
            sixteen.push(build_and_close(config(ws, configs.to_vec())).await);
            single.push(build_and_close(config(ws, vec![configs[0].clone()])).await);
        }
        (median(sixteen), median(single))
    });
    let (cpu_none, cpu_one) = runtime.block_on(async {
        (
            cpu_per_build(&config(ws, Vec::new()), 20).await,
            cpu_per_build(&config(ws, vec![configs[0].clone()]), 20).await,
        )
    });
    let cores = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(16);
    let per_connect = cpu_one.saturating_sub(cpu_none);
    let floor = (cpu_none + per_connect * 16) / u32::try_from(cores).unwrap();
    println!(
        "build, 16 servers x 10 tools ({label}): median {sixteen:?} (target <= 500 ms); \
         1 server: {single:?}; ratio {:.2} (target <= 2); \
         cpu per build: 0 servers {cpu_none:?}, 1 server {cpu_one:?}; cpu floor of 16 on {cores} cores {floor:?}",
        sixteen.as_secs_f64() / single.as_secs_f64()
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let none = runtime.block_on(async {
        let mut none = Vec::new();
        for _ in 0..20 {
            none.push(build_and_close(config(ws.path(), Vec::new())).await);
        }
        median(none)
    });
    println!("build, mock provider, 0 MCP servers: median {none:?} (target <= 50 ms)");
    let (slow_servers, slow_configs) = servers(&runtime, Duration::from_millis(25));
    summary(&runtime, ws.path(), &slow_configs, "25 ms per request");
    drop(slow_servers);
    let (servers, configs) = servers(&runtime, Duration::ZERO);
    summary(&runtime, ws.path(), &configs, "answering at once");

    let mut criterion = Criterion::default().sample_size(20).configure_from_args();
    criterion.bench_function("build/mock/0-mcp-servers", |b| {
        b.to_async(&runtime)
            .iter(|| async { build_and_close(config(ws.path(), Vec::new())).await })
    });
    criterion.bench_function("build/16-servers-x-10-tools", |b| {
        b.to_async(&runtime)
            .iter(|| async { build_and_close(config(ws.path(), configs.clone())).await })
    });
    criterion.final_summary();
    drop(servers);
}
