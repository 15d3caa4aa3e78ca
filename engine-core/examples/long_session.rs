//! Engine time per run over one long session.
//!
//! ```text
//! long_session [RUNS] [REPEATS]
//! ```
//!
//! Runs `RUNS` prompts (default 500) one after the other on one session, each a tool
//! turn (one no-op read-only call) and a text turn, on a model that answers from a
//! script and keeps no request (as the real providers keep none once the request is
//! sent) and on the in-memory store, so the conversation grows by four messages a run. Repeats the
//! whole session `REPEATS` times (default 5) and takes, for each run index, the median
//! over the repeats. Prints one JSON object: the per-run medians of the first ten and
//! the last ten runs, their medians, and the ratio last / first (the engine's cost of
//! a long conversation: 1.0 means a run costs the same at the end as at the start).
//! `scripts/benchmarks.sh` runs it.

// A measuring program: it reports on stdout, and a broken setup is fatal.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine_core::{Approve, Catalog, Deps, Engine, EngineConfig, Environment, Tool, ToolError};
use engine_ports::{
    CancellationToken, Capabilities, Chunk, ChunkStream, LlmError, LlmProvider, LlmRequest, SessionId,
    ToolCall, ToolResult, ToolSpec,
};
use futures::StreamExt as _;

/// Answers a request whose conversation ends with the user's prompt with one tool
/// call, and any other with text; holds nothing of the request.
struct Model;

#[async_trait]
impl LlmProvider for Model {
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn stream(&self, request: LlmRequest, _: CancellationToken) -> Result<ChunkStream, LlmError> {
        let after_prompt = matches!(request.messages.last(), Some(engine_ports::Message::User { .. }));
        let n = request.messages.len();
        drop(request);
        let first = if after_prompt {
            Chunk::ToolCall(ToolCall::new(format!("c{n}"), "Read", r#"{"path":"src/lib.rs"}"#))
        } else {
            Chunk::Text("I read the file; it has three lines.".to_owned())
        };
        Ok(Box::pin(futures::stream::iter([Ok(first), Ok(Chunk::Done)])))
    }
}

struct Noop;

#[async_trait]
impl Tool for Noop {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("Read", "does nothing")
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _: &CancellationToken,
        call: &ToolCall,
        _: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(call.id().clone(), "line 1\nline 2\nline 3"))
    }
}

/// One session of `runs` prompts; the duration of each run.
async fn session(runs: usize) -> Vec<Duration> {
    let mut catalog = Catalog::new();
    catalog.must_register(Arc::new(Noop));
    let mut deps = Deps::new(Arc::new(Model), Arc::new(catalog), Environment::new("/").unwrap());
    deps.config = EngineConfig {
        model: "bench".to_owned(),
        approve: Approve::All,
        system_prompt: "You are a benchmark.".to_owned(),
        ..EngineConfig::default()
    };
    let engine = Engine::new(deps).unwrap();
    let id = SessionId::from("long");
    let mut took = Vec::with_capacity(runs);
    for run in 0..runs {
        let started = Instant::now();
        let events = engine
            .run(&id, "read src/lib.rs and tell me")
            .unwrap()
            .count()
            .await;
        took.push(started.elapsed());
        assert!(events > 4, "run {run} emitted {events} events");
    }
    took
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(500, |a| a.parse().expect("RUNS is a number"));
    let repeats: usize = args.next().map_or(5, |a| a.parse().expect("REPEATS is a number"));
    assert!(runs >= 20, "RUNS must be at least 20");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sessions: Vec<Vec<Duration>> = (0..repeats).map(|_| rt.block_on(session(runs))).collect();
    let per_run: Vec<f64> = (0..runs)
        .map(|i| median(sessions.iter().map(|s| s[i].as_secs_f64() * 1e6).collect()))
        .collect();
    let first = per_run[..10].to_vec();
    let last = per_run[runs - 10..].to_vec();
    let (first_median, last_median) = (median(first.clone()), median(last.clone()));
    println!(
        "{}",
        serde_json::json!({
            "runs": runs,
            "repeats": repeats,
            "messages_at_end": runs * 4,
            "first_runs_us": first,
            "last_runs_us": last,
            "first_median_us": first_median,
            "last_median_us": last_median,
            "ratio": last_median / first_median,
        })
    );
}
