//! Cost of a whole turn on the engine `mecated run` builds: `app::build` with the
//! product's scripted mock model (`--mock-script`), the in-memory store and the core
//! tools, one fresh session per iteration, the run's event stream drained (the session
//! is deleted again outside the timed part).
//!
//! - `turn/mock/text`: one run of one text turn (the per-turn floor).
//! - `turn/mock/read_then_text`: one tool turn (a `Read` of a small file, allowed by
//!   the default `--approve read-only`) and one text turn; the difference from
//!   `text` is the cost of a turn with a real tool call.
//!
//! No target in the spec; the figures go into BENCHMARKS.md next to the dispatcher's
//! per-call overhead.

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

async fn built_with(ws: &std::path::Path, turns: Vec<MockTurn>) -> Built {
    let mut cfg = AppConfig::new(ws);
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

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README.md"), "# bench\nA small file.\n").unwrap();
    let (text, read) = runtime.block_on(async {
        let text = built_with(ws.path(), vec![MockTurn::text("done")]).await;
        let read = built_with(
            ws.path(),
            vec![
                MockTurn::text("let me look").with_call(ToolCall::new(
                    "c1",
                    "Read",
                    r#"{"path":"README.md"}"#,
                )),
                MockTurn::text("done"),
            ],
        )
        .await;
        (text, read)
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
    criterion.final_summary();
    runtime.block_on(async {
        text.close().await.unwrap();
        read.close().await.unwrap();
    });
}
