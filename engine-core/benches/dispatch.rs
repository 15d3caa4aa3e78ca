//! Dispatcher and loop benchmarks: overhead per no-op call (read-only and mutating)
//! in turns of 1, 8 and 64 calls; 8 parallel 50 ms reads (target < 80 ms wall); 8
//! serial 5 ms mutations (never overlapping, ≥ 40 ms wall); one whole engine run with
//! the scripted model (one tool turn, one text turn); events per second through `run`
//! (one turn streaming 1,000 chunks).

// Bench setup fails loudly; the serial bench panics on overlap by design.
#![allow(clippy::unwrap_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use engine_core::{
    Approve, Catalog, DefaultPolicy, Deps, Dispatcher, Engine, EngineConfig, Environment, Tool, ToolError,
    TurnContext,
};
use engine_ports::testkit::{ScriptedLlm, ScriptedTurn};
use engine_ports::{CancellationToken, PermissionMode, SessionId, ToolCall, ToolResult, ToolSpec};
use futures::StreamExt as _;

struct Noop {
    name: &'static str,
    read_only: bool,
    sleep: Duration,
    active: AtomicUsize,
}

impl Noop {
    fn new(name: &'static str, read_only: bool, sleep: Duration) -> Arc<Self> {
        Arc::new(Self {
            name,
            read_only,
            sleep,
            active: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl Tool for Noop {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name, "does nothing")
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    async fn execute(
        &self,
        _: &CancellationToken,
        call: &ToolCall,
        _: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let before = self.active.fetch_add(1, Ordering::SeqCst);
        if !self.read_only && before > 0 {
            panic!("mutating calls overlapped");
        }
        if !self.sleep.is_zero() {
            tokio::time::sleep(self.sleep).await;
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolResult::text(call.id().clone(), "ok"))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn context(tools: Vec<Arc<dyn Tool>>) -> TurnContext {
    let mut catalog = Catalog::new();
    for tool in tools {
        catalog.must_register(tool);
    }
    TurnContext::new(
        SessionId::from("bench"),
        PermissionMode::Default,
        Arc::new(catalog),
        Environment::new("/").unwrap(),
        Arc::new(DefaultPolicy::new(false, Approve::All)),
    )
}

fn turn(name: &str, n: usize) -> Vec<ToolCall> {
    (0..n)
        .map(|i| ToolCall::new(format!("c{i}"), name, "{}"))
        .collect()
}

/// Measured where the engine runs the dispatcher: inside a task on the runtime (one
/// task runs all the iterations, so its own spawn is not counted). Dispatching from
/// `block_on` on a thread outside the runtime would add a cross-thread wake-up to
/// every spawned call, which no engine run pays.
fn dispatch_overhead(c: &mut Criterion) {
    let rt = runtime();
    let ctx = Arc::new(context(vec![
        Noop::new("Read", true, Duration::ZERO),
        Noop::new("Write", false, Duration::ZERO),
    ]));
    let dispatcher = Dispatcher::default();
    let mut group = c.benchmark_group("dispatch_overhead");
    for (label, tool) in [("read_only", "Read"), ("mutating", "Write")] {
        for n in [1usize, 8, 64] {
            let calls = Arc::new(turn(tool, n));
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(label, n), &n, |b, _| {
                b.iter_custom(|iters| {
                    let (ctx, calls) = (Arc::clone(&ctx), Arc::clone(&calls));
                    rt.block_on(rt.spawn(async move {
                        let start = Instant::now();
                        for _ in 0..iters {
                            black_box(dispatcher.dispatch(&ctx, black_box(&calls)).await.results.len());
                        }
                        start.elapsed()
                    }))
                    .unwrap()
                });
            });
        }
    }
    group.finish();
}

fn parallel_reads(c: &mut Criterion) {
    let rt = runtime();
    let ctx = context(vec![Noop::new("Sleep", true, Duration::from_millis(50))]);
    let calls = turn("Sleep", 8);
    let mut group = c.benchmark_group("parallel_reads");
    group.sample_size(10);
    group.bench_function("8_reads_of_50ms", |b| {
        b.iter(|| {
            rt.block_on(Dispatcher::default().dispatch(&ctx, &calls))
                .results
                .len()
        });
    });
    group.finish();
}

fn serial_mutations(c: &mut Criterion) {
    let rt = runtime();
    let ctx = context(vec![Noop::new("Mutate", false, Duration::from_millis(5))]);
    let calls = turn("Mutate", 8);
    let mut group = c.benchmark_group("serial_mutations");
    group.sample_size(10);
    group.bench_function("8_writes_of_5ms", |b| {
        b.iter(|| {
            rt.block_on(Dispatcher::default().dispatch(&ctx, &calls))
                .results
                .len()
        });
    });
    group.finish();
}

fn engine_run(c: &mut Criterion) {
    let rt = runtime();
    let mut catalog = Catalog::new();
    catalog.must_register(Noop::new("Read", true, Duration::ZERO));
    let llm = Arc::new(ScriptedLlm::new([]));
    let mut deps = Deps::new(llm.clone(), Arc::new(catalog), Environment::new("/").unwrap());
    deps.config = EngineConfig {
        model: "bench".to_owned(),
        approve: Approve::All,
        ..EngineConfig::default()
    };
    let engine = Engine::new(deps).unwrap();
    let mut i = 0u64;
    c.bench_function("engine_run/one_tool_turn_then_text", |b| {
        b.iter(|| {
            i += 1;
            llm.push(ScriptedTurn::call("c1", "Read", "{}"));
            llm.push(ScriptedTurn::text("done"));
            let session = SessionId::from(format!("s{i}"));
            rt.block_on(async { engine.run(&session, "go").unwrap().count().await })
        });
    });
}

/// Events per second through `run`: one text turn streaming 1,000 chunks, so a run
/// emits `session.init`, the turn events, 1,000 `message.delta` and `result`.
fn engine_events(c: &mut Criterion) {
    const CHUNKS: usize = 1_000;
    let rt = runtime();
    let llm = Arc::new(ScriptedLlm::new([]));
    let mut deps = Deps::new(
        llm.clone(),
        Arc::new(Catalog::new()),
        Environment::new("/").unwrap(),
    );
    deps.config = EngineConfig {
        model: "bench".to_owned(),
        ..EngineConfig::default()
    };
    let engine = Engine::new(deps).unwrap();
    let streamed_turn = || (0..CHUNKS).fold(ScriptedTurn::new(), |turn, _| turn.with_text("token "));
    let mut i = 0u64;
    let mut run = move || {
        i += 1;
        llm.push(streamed_turn());
        let session = SessionId::from(format!("e{i}"));
        rt.block_on(async { engine.run(&session, "go").unwrap().count().await })
    };
    let events = run();
    assert!(
        events > CHUNKS,
        "a streamed run emits one event per chunk at least"
    );
    let mut group = c.benchmark_group("engine_events");
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function("run_streaming_1000_chunks", |b| b.iter(&mut run));
    group.finish();
}

criterion_group!(
    benches,
    dispatch_overhead,
    parallel_reads,
    serial_mutations,
    engine_run,
    engine_events
);
criterion_main!(benches);
