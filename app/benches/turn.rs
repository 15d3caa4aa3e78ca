//! Cost of a whole turn on the engine `mecated run` builds: `app::build` with the
//! product's scripted mock model (`--mock-script`), the in-memory store and the core
//! tools, one fresh session per iteration, the run's event stream drained (the session
//! is deleted again outside the timed part).
//!
//! - `turn/mock/text`: one run of one text turn (the per-turn floor).
//! - `turn/mock/read_then_text`: one tool turn (a `Read` of a small file, allowed by
//!   the default `--approve read-only`) and one text turn; the difference from
//!   `text` is the cost of a turn with a real tool call.
//! - `turn/otel/read_then_text`: the same runs with OpenTelemetry on, spans and metrics
//!   exported over OTLP/HTTP to a receiver in the same process (answering every export
//!   at once); the difference from `mock/read_then_text` is the telemetry's cost on a
//!   whole turn (target ≤ 5 %).
//!
//! No target in the spec; the figures go into BENCHMARKS.md next to the dispatcher's
//! per-call overhead.

// A benchmark program: a broken setup is fatal.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use adapter_llm::{MockScript, MockTurn};
use adapter_skillfs::HostEnv;
use adapter_telemetry::{OtlpConfig, Protocol};
use app::{AppConfig, Built, ModelConfig, build};
use criterion::Criterion;
use engine_ports::{SessionId, ToolCall};
use futures::StreamExt as _;

async fn built_with(ws: &std::path::Path, turns: Vec<MockTurn>) -> Built {
    built_observed(ws, turns, None).await
}

async fn built_observed(ws: &std::path::Path, turns: Vec<MockTurn>, otlp: Option<SocketAddr>) -> Built {
    let mut cfg = AppConfig::new(ws);
    if let Some(addr) = otlp {
        cfg.telemetry.env.otlp = Some(OtlpConfig {
            protocol: Protocol::HttpProtobuf,
            traces_endpoint: Some(format!("http://{addr}/v1/traces")),
            metrics_endpoint: Some(format!("http://{addr}/v1/metrics")),
            timeout: Duration::from_secs(10),
        });
    }
    cfg.skills.host = Some(HostEnv {
        cwd: ws.to_path_buf(),
        home: None,
        xdg_config_home: None,
    });
    cfg.model = ModelConfig::MockScript(MockScript::new(turns));
    build(cfg).await.unwrap()
}

/// `iters` runs, each on a fresh session whose events are drained; only the runs are
/// timed. Each session is deleted afterwards so the in-memory store stays small.
async fn runs(built: &Built, counter: &AtomicU64, iters: u64) -> Duration {
    let store = built.store().session_store();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let session = SessionId::from(format!("bench-{}", counter.fetch_add(1, Ordering::Relaxed)));
        let started = Instant::now();
        let run = built.shared_engine().run(&session, "go").unwrap();
        black_box(run.count().await);
        total += started.elapsed();
        store.delete(&session).await.unwrap();
    }
    total
}

/// An OTLP/HTTP receiver answering every export with an empty success at once.
async fn receiver() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|| async { ([("content-type", "application/x-protobuf")], "") });
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn read_then_text() -> Vec<MockTurn> {
    vec![
        MockTurn::text("let me look").with_call(ToolCall::new("c1", "Read", r#"{"path":"README.md"}"#)),
        MockTurn::text("done"),
    ]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README.md"), "# bench\nA small file.\n").unwrap();
    let (text, read, observed) = runtime.block_on(async {
        let text = built_with(ws.path(), vec![MockTurn::text("done")]).await;
        let read = built_with(ws.path(), read_then_text()).await;
        let observed = built_observed(ws.path(), read_then_text(), Some(receiver().await)).await;
        assert!(observed.telemetry().is_some_and(|t| t.exports_traces()));
        (text, read, observed)
    });
    let counter = AtomicU64::new(0);
    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("turn/mock/text", |b| {
        b.to_async(&runtime)
            .iter_custom(|iters| runs(&text, &counter, iters));
    });
    criterion.bench_function("turn/mock/read_then_text", |b| {
        b.to_async(&runtime)
            .iter_custom(|iters| runs(&read, &counter, iters));
    });
    criterion.bench_function("turn/otel/read_then_text", |b| {
        b.to_async(&runtime)
            .iter_custom(|iters| runs(&observed, &counter, iters));
    });
    criterion.final_summary();
    runtime.block_on(async {
        text.close().await.unwrap();
        read.close().await.unwrap();
        observed.close().await.unwrap();
    });
}
