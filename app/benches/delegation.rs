//! Cost of delegating: a `Subagent` round trip on the engine `mecated run` builds
//! (`app::build`, the product's scripted mock model, the in-memory store), one fresh
//! parent session per iteration, the run's event stream drained.
//!
//! - `subagent/mock/baseline`: a parent turn calling `SubagentStatus` (a delegation
//!   tool that starts no child), then a text turn.
//! - `subagent/mock/round_trip`: a parent turn calling `Subagent` whose child answers
//!   with one text turn, then a text turn. The difference from `baseline` is the
//!   overhead of one subagent: its catalog and engine, its session (created in the
//!   store), its run and its events.

// A benchmark program: a broken setup is fatal.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use adapter_llm::{MockScript, MockTurn};
use adapter_skillfs::HostEnv;
use app::{AppConfig, Built, ModelConfig, build};
use criterion::Criterion;
use engine_ports::{SessionId, ToolCall};
use futures::StreamExt as _;

/// The allocator `mecated` runs with.
#[global_allocator]
static ALLOCATOR: app::Allocator = app::Allocator;

async fn built_with(ws: &std::path::Path, script: MockScript) -> Built {
    let mut cfg = AppConfig::new(ws);
    cfg.skills.host = Some(HostEnv {
        cwd: ws.to_path_buf(),
        home: None,
        xdg_config_home: None,
    });
    cfg.model = ModelConfig::MockScript(script);
    build(cfg).await.unwrap()
}

/// `iters` runs on fresh sessions; the store is cleaned outside the timed part.
async fn runs(built: &Built, counter: &AtomicU64, iters: u64) -> Duration {
    let store = built.store().session_store();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let session = SessionId::from(format!("bench-{n}"));
        let started = Instant::now();
        let run = built.shared_engine().run(&session, "go").unwrap();
        black_box(run.count().await);
        total += started.elapsed();
        store.delete(&session).await.unwrap();
        let _ = store
            .delete(&SessionId::from(format!("subagent-bench-{n}-c1")))
            .await;
    }
    total
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README.md"), "# bench\n").unwrap();
    let (baseline, round_trip) = runtime.block_on(async {
        let baseline = built_with(
            ws.path(),
            MockScript::new([
                MockTurn::text("checking").with_call(ToolCall::new("c1", "SubagentStatus", "{}")),
                MockTurn::text("done"),
            ]),
        )
        .await;
        let round_trip = built_with(
            ws.path(),
            MockScript::new([
                MockTurn::text("delegating").with_call(ToolCall::new(
                    "c1",
                    "Subagent",
                    r#"{"prompt":"BENCH-CHILD answer"}"#,
                )),
                MockTurn::text("done"),
            ])
            .with_child("BENCH-CHILD", [MockTurn::text("child answer")]),
        )
        .await;
        (baseline, round_trip)
    });
    let counter = AtomicU64::new(0);
    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("subagent/mock/baseline", |b| {
        b.to_async(&runtime)
            .iter_custom(|iters| runs(&baseline, &counter, iters));
    });
    criterion.bench_function("subagent/mock/round_trip", |b| {
        b.to_async(&runtime)
            .iter_custom(|iters| runs(&round_trip, &counter, iters));
    });
    criterion.final_summary();
    runtime.block_on(async {
        baseline.close().await.unwrap();
        round_trip.close().await.unwrap();
    });
}
