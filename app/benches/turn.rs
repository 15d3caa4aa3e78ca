//! Cost of a whole run on the engine `mecated run` builds: `app::build` with the
//! product's scripted mock model (`--mock-script`), the in-memory store and the core
//! tools, the run's event stream drained.
//!
//! - `turn/mock/text`: one run of one text turn on a fresh session (the per-run floor
//!   of a one-shot `mecated run`); the session is deleted outside the timed part.
//! - `turn/mock/read_then_text`: one tool turn (a `Read` of a small file, allowed by
//!   the default `--approve read-only`) and one text turn, on a fresh session.
//! - `turn/mock/session/text`, `turn/mock/session/read_then_text`: the same runs as
//!   runs 2..[`SESSION_RUNS`] of one session (a chat, an ACP or HTTP client): each
//!   session's first run and its deletion are not timed. The conversation grows by
//!   2 or 4 messages a run; nothing the engine does per turn grows with it (see the
//!   engine-core `long_session` example).
//! - `turn/otel/read_then_text`: the fresh-session read + text runs with OpenTelemetry
//!   on, spans and metrics exported over OTLP/HTTP to a receiver on a thread and
//!   runtime of its own, as a collector would be (answering every export at once);
//!   the difference from `mock/read_then_text` is
//!   the telemetry's cost on a whole turn (target ≤ 5 %).
//! - `turn/otel paired`: after criterion, the same two engines measured in
//!   alternating blocks (see [`paired`]) in [`PROCESSES`] fresh processes of this
//!   bench, printed as one JSON line: the figure the target is judged on, because
//!   the two criterion benches run seconds apart and a shared host's speed drifts
//!   between them by more than the target, and because one process settles into a
//!   speed of its own (the runs without telemetry took 22.6 to 26.6 µs in the
//!   medians of five processes of one build, each steady within itself).
//!
//! Targets: fresh session ≤ 60 µs (text) and ≤ 120 µs (read + text); in one session
//! ≤ 30 µs and ≤ 45 µs.
//!
//! The bench installs the allocator `mecated` installs ([`app::Allocator`],
//! mimalloc; why, with figures: `app/README.md`).
//!
//! The runs are driven from a task on the runtime, as `mecated` drives them (its
//! command is a task on the runtime's workers, and so are the ACP, HTTP and MCP
//! faces' handlers): a reader on a thread outside the runtime (`block_on`) pays a
//! cross-thread wake-up for each event it waits on, which measured 54 µs against
//! 17 µs for a text run in one session on the 2-core machine of BENCHMARKS.md.
//!
//! Where a run's instructions went before the turn listings were cached (callgrind,
//! release build; per run, runs 21–120 minus runs 1–20; 523k instructions a text run,
//! 956k a read + text run):
//!
//! | function (inclusive)                                   | text | read + text |
//! |--------------------------------------------------------|------|-------------|
//! | `turn_specs` (listing the catalog: `session.init` + each turn) | 47 % | 39 % |
//! | … of which the delegation tools' `spec()` (`json!` schemas)    | 45 % | 37 % |
//! | `context::fixed_bytes` (serialising every schema per turn)     | 18 % | 19 % |
//! | the event log (`InMemoryStore` append per event)               | 6 %  | 3 %  |
//! | the `Read` call (`FileTool::run`)                              | —    | 8 %  |
//!
//! Fresh and in-session runs cost the same: creating or loading a session is small.
//!
//! `TURN_BENCH_PROFILE=<bench id>:<runs>` runs one of the four loops `runs` times
//! without criterion and exits, for `valgrind --tool=callgrind` (instruction counts,
//! stable on a loaded machine): two runs with different counts give the
//! instructions of one run as their difference over the difference in runs.

// A benchmark program: a broken setup is fatal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_docs)]

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use adapter_llm::{MockScript, MockTurn};
use adapter_skillfs::HostEnv;
use adapter_telemetry::{OtlpConfig, Protocol};
use app::{AppConfig, Built, ModelConfig, build};
use criterion::Criterion;
use engine_ports::{SessionId, ToolCall};
use futures::StreamExt as _;
use test_peers::bench::alternating_blocks;

/// The allocator `mecated` runs with.
#[global_allocator]
static ALLOCATOR: app::Allocator = app::Allocator;

/// Runs per session in the `session/*` benches (the first one is not timed).
const SESSION_RUNS: u32 = 100;

async fn built_with(ws: &std::path::Path, turns: Vec<MockTurn>) -> Built {
    built_observed(ws, turns, None).await
}

/// As [`built_with`], exporting spans and metrics to `otlp` when given.
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
    // The script is replayed per session from its first turn: one session of
    // `SESSION_RUNS` runs plays it to its end.
    let script = (0..SESSION_RUNS).flat_map(|_| turns.clone());
    cfg.model = ModelConfig::MockScript(MockScript::new(script));
    build(cfg).await.unwrap()
}

/// One run of `session` with its events drained.
async fn one_run(built: &Built, session: &SessionId) {
    let run = built.shared_engine().run(session, "go").unwrap();
    black_box(run.count().await);
}

fn next_session(counter: &AtomicU64) -> SessionId {
    SessionId::from(format!("bench-{}", counter.fetch_add(1, Ordering::Relaxed)))
}

/// `iters` runs, each on a fresh session whose events are drained; only the runs are
/// timed. Each session is deleted afterwards so the in-memory store stays small.
async fn fresh_runs(built: &Built, counter: &AtomicU64, iters: u64) -> Duration {
    let store = built.store().session_store();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let session = next_session(counter);
        let started = Instant::now();
        one_run(built, &session).await;
        total += started.elapsed();
        store.delete(&session).await.unwrap();
    }
    total
}

/// The session the `session/*` benches are in, and how many runs it had.
type Cursor = Mutex<Option<(SessionId, u32)>>;

/// `iters` runs of later runs of one session: a session's first run is not timed,
/// and after [`SESSION_RUNS`] runs it is deleted (not timed) and a new one begins.
async fn session_runs(built: &Built, counter: &AtomicU64, cursor: &Cursor, iters: u64) -> Duration {
    let store = built.store().session_store();
    let mut current = cursor.lock().unwrap().take();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let (session, done) = match current.take() {
            Some((session, done)) if done < SESSION_RUNS => (session, done),
            ended => {
                if let Some((session, _)) = ended {
                    store.delete(&session).await.unwrap();
                }
                let session = next_session(counter);
                one_run(built, &session).await;
                (session, 1)
            }
        };
        let started = Instant::now();
        one_run(built, &session).await;
        total += started.elapsed();
        current = Some((session, done + 1));
    }
    *cursor.lock().unwrap() = current;
    total
}

/// An OTLP/HTTP receiver answering every export with an empty success at once, on
/// a thread and runtime of its own: a collector is another process, and its work
/// (reading and dropping each export's body) is not the telemetry's.
fn receiver() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app =
                axum::Router::new().fallback(|| async { ([("content-type", "application/x-protobuf")], "") });
            axum::serve(listener, app).await
        })
    });
    addr
}

fn read_then_text() -> Vec<MockTurn> {
    vec![
        MockTurn::text("let me look").with_call(ToolCall::new("c1", "Read", r#"{"path":"README.md"}"#)),
        MockTurn::text("done"),
    ]
}

/// Which engine a bench runs on.
#[derive(Clone, Copy)]
enum Engine {
    /// One text turn.
    Text,
    /// A `Read` turn and a text turn.
    Read,
    /// As `Read`, with OpenTelemetry exporting.
    Observed,
}

/// The benches: id, engine, in one session.
/// The OpenTelemetry bench runs right after the one it is compared with, so that
/// the shared host's speed moves as little as possible between the two.
const BENCHES: [(&str, Engine, bool); 5] = [
    ("turn/mock/text", Engine::Text, false),
    ("turn/mock/read_then_text", Engine::Read, false),
    ("turn/otel/read_then_text", Engine::Observed, false),
    ("turn/mock/session/text", Engine::Text, true),
    ("turn/mock/session/read_then_text", Engine::Read, true),
];

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Pairs of blocks [`paired`] measures in all, unless `TURN_BENCH_PAIRS` says (0:
/// none), spread over [`PROCESSES`] processes.
const PAIRS: usize = 40;
/// The processes the pairs are spread over, each a fresh run of this bench told
/// its share by `TURN_BENCH_PAIRED_CHILD`.
const PROCESSES: usize = 8;
/// The wall time a block aims at.
const BLOCK: Duration = Duration::from_millis(250);
/// The pause after each block, longer than the telemetry thread's delay before it
/// applies what waits (100 ms): the facts of an OpenTelemetry block are applied
/// before the next block begins, not during it.
const SETTLE: Duration = Duration::from_millis(150);

/// The OpenTelemetry overhead measured side by side: `pairs` pairs of blocks of
/// fresh-session read + text runs, one block on the engine without telemetry and one
/// on the engine exporting it, the order alternating from pair to pair (ABBA), each
/// block followed by the same pause. Each block's runs are timed as in
/// `fresh_runs`; a block's figure is its mean per run. The telemetry thread does its
/// work while the block's runs go on, as it does in a busy process; what it has not
/// applied when a block ends it applies during the pause.
fn paired(
    runtime: &tokio::runtime::Runtime,
    off: &'static Built,
    on: &'static Built,
    pairs: usize,
) -> serde_json::Value {
    let counter: &'static AtomicU64 = leak(AtomicU64::new(1 << 40));
    let cursor = leak(Cursor::default());
    // Warm both engines up, then size the blocks from a second probe.
    for built in [off, on, off] {
        on_a_task(runtime, built, counter, cursor, false, 1_000);
    }
    let probe = on_a_task(runtime, off, counter, cursor, false, 1_000);
    let runs = ((BLOCK.as_nanos() / (probe.as_nanos() / 1_000).max(1)) as u64).clamp(20, 50_000);
    let block = |built: &'static Built| {
        let took = on_a_task(runtime, built, counter, cursor, false, runs);
        std::thread::sleep(SETTLE);
        took.as_nanos() as f64 / runs as f64 / 1e3
    };
    let (off_us, on_us) = alternating_blocks(pairs, || block(off), || block(on));
    serde_json::json!({"runs_per_block": runs, "off_us": off_us, "on_us": on_us})
}

/// [`paired`] in [`PROCESSES`] fresh processes of this bench, `pairs` pairs in all:
/// every process's blocks together, with each process's block size.
fn paired_in_processes(pairs: usize) -> serde_json::Value {
    let exe = std::env::current_exe().unwrap();
    let share = pairs.div_ceil(PROCESSES);
    let (mut off_us, mut on_us, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PROCESSES {
        let out = std::process::Command::new(&exe)
            .env("TURN_BENCH_PAIRED_CHILD", share.to_string())
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "a paired process failed: {}", out.status);
        let line = String::from_utf8(out.stdout).unwrap();
        let one: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        off_us.extend(one["off_us"].as_array().unwrap().iter().cloned());
        on_us.extend(one["on_us"].as_array().unwrap().iter().cloned());
        runs.push(one["runs_per_block"].clone());
    }
    serde_json::json!({"processes": PROCESSES, "runs_per_block": runs, "off_us": off_us, "on_us": on_us})
}

/// `iters` runs driven from a task on `runtime` (see the module doc); their time.
fn on_a_task(
    runtime: &tokio::runtime::Runtime,
    built: &'static Built,
    counter: &'static AtomicU64,
    cursor: &'static Cursor,
    in_session: bool,
    iters: u64,
) -> Duration {
    let runs = runtime.spawn(async move {
        if in_session {
            session_runs(built, counter, cursor, iters).await
        } else {
            fresh_runs(built, counter, iters).await
        }
    });
    runtime.block_on(runs).unwrap()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README.md"), "# bench\nA small file.\n").unwrap();
    // Leaked: the runs are driven from tasks, which need `'static` engines.
    let (text, read, observed): (&'static Built, &'static Built, &'static Built) = runtime.block_on(async {
        let text = built_with(ws.path(), vec![MockTurn::text("done")]).await;
        let read = built_with(ws.path(), read_then_text()).await;
        let observed = built_observed(ws.path(), read_then_text(), Some(receiver())).await;
        assert!(observed.telemetry().is_some_and(|t| t.exports_traces()));
        (leak(text), leak(read), leak(observed))
    });
    let engine = |which: Engine| match which {
        Engine::Text => text,
        Engine::Read => read,
        Engine::Observed => observed,
    };
    let counter: &'static AtomicU64 = leak(AtomicU64::new(0));
    if let Ok(pairs) = std::env::var("TURN_BENCH_PAIRED_CHILD") {
        let pairs = pairs.parse().expect("TURN_BENCH_PAIRED_CHILD: a number");
        println!("{}", paired(&runtime, read, observed, pairs));
    } else if let Ok(profile) = std::env::var("TURN_BENCH_PROFILE") {
        let (id, runs) = profile
            .split_once(':')
            .expect("TURN_BENCH_PROFILE=<bench id>:<runs>");
        let runs: u64 = runs.parse().expect("TURN_BENCH_PROFILE: runs is a number");
        let (_, which, in_session) = BENCHES
            .into_iter()
            .find(|(name, _, _)| *name == id)
            .expect("TURN_BENCH_PROFILE: one of the bench ids");
        let built = engine(which);
        let cursor = leak(Cursor::default());
        on_a_task(&runtime, built, counter, cursor, in_session, runs);
    } else {
        let mut criterion = Criterion::default().configure_from_args();
        for (id, which, in_session) in BENCHES {
            let built = engine(which);
            let cursor = leak(Cursor::default());
            criterion.bench_function(id, |b| {
                b.iter_custom(|iters| on_a_task(&runtime, built, counter, cursor, in_session, iters));
            });
        }
        criterion.final_summary();
        let pairs = std::env::var("TURN_BENCH_PAIRS")
            .map_or(PAIRS, |v| v.parse().expect("TURN_BENCH_PAIRS: a number"));
        if pairs > 0 {
            println!("turn/otel paired: {}", paired_in_processes(pairs));
        }
    }
    runtime.block_on(async {
        text.close().await.unwrap();
        read.close().await.unwrap();
        observed.close().await.unwrap();
    });
}
