//! Property tests of the dispatcher over random turns of read-only, mutating,
//! unknown and dispatch-serial calls with random delays and random cancellation:
//! one result per call in call order; no mutating call overlaps anything; reads of
//! one maximal run overlap (they block on each other until all have started);
//! nothing starts after cancellation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine_core::{Approve, Catalog, DefaultPolicy, Dispatcher, Environment, Tool, ToolError, TurnContext};
use engine_ports::{CancellationToken, PermissionMode, SessionId, ToolCall, ToolResult, ToolSpec};
use proptest::prelude::*;
use tokio::sync::Barrier;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Read(u8),
    Write(u8),
    Serial(u8),
    Unknown,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => (0u8..5).prop_map(Kind::Read),
        2 => (0u8..5).prop_map(Kind::Write),
        1 => (0u8..5).prop_map(Kind::Serial),
        1 => Just(Kind::Unknown),
    ]
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Start(usize),
    End(usize),
    Cancel,
}

#[derive(Default)]
struct Shared {
    journal: Mutex<Vec<Entry>>,
    active: AtomicUsize,
    mutating: AtomicUsize,
    violations: Mutex<Vec<String>>,
    starts: AtomicUsize,
    cancel_after: Mutex<Option<(usize, CancellationToken)>>,
    barriers: Mutex<Vec<Arc<Barrier>>>,
}

struct PropTool {
    name: &'static str,
    read_only: bool,
    serial: bool,
    shared: Arc<Shared>,
}

#[derive(serde::Deserialize)]
struct Args {
    index: usize,
    delay: u64,
    barrier: Option<usize>,
}

#[async_trait]
impl Tool for PropTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name, "property-test tool")
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn dispatch_serial(&self) -> bool {
        self.serial
    }

    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let args: Args = call.parse_args().map_err(|e| ToolError::Failed(e.to_string()))?;
        let shared = &self.shared;
        shared.journal.lock().unwrap().push(Entry::Start(args.index));
        let before = shared.active.fetch_add(1, Ordering::SeqCst);
        let mutating_before = if self.read_only {
            shared.mutating.load(Ordering::SeqCst)
        } else {
            shared.mutating.fetch_add(1, Ordering::SeqCst)
        };
        if (!self.read_only && before > 0) || (self.read_only && mutating_before > 0) {
            shared
                .violations
                .lock()
                .unwrap()
                .push(format!("call {} overlapped a mutating call", args.index));
        }
        let started = shared.starts.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some((after, token)) = shared.cancel_after.lock().unwrap().as_ref()
            && started == *after
        {
            shared.journal.lock().unwrap().push(Entry::Cancel);
            token.cancel();
        }
        let barrier = args
            .barrier
            .map(|b| Arc::clone(&shared.barriers.lock().unwrap()[b]));
        let outcome = async {
            if let Some(barrier) = barrier {
                barrier.wait().await;
            }
            tokio::time::sleep(Duration::from_millis(args.delay)).await;
        };
        let result = tokio::select! {
            () = outcome => Ok(ToolResult::text(call.id().clone(), format!("done {}", args.index))),
            () = cancel.cancelled() => Err(ToolError::Cancelled),
        };
        if !self.read_only {
            shared.mutating.fetch_sub(1, Ordering::SeqCst);
        }
        shared.active.fetch_sub(1, Ordering::SeqCst);
        shared.journal.lock().unwrap().push(Entry::End(args.index));
        result
    }
}

/// Builds the calls, one barrier per maximal run of reads (sized to the run).
fn plan(kinds: &[Kind], shared: &Shared) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    let mut barriers = Vec::new();
    let mut i = 0;
    while i < kinds.len() {
        if let Kind::Read(_) = kinds[i] {
            let run = kinds[i..]
                .iter()
                .take_while(|k| matches!(k, Kind::Read(_)))
                .count();
            barriers.push(Arc::new(Barrier::new(run)));
            for (j, kind) in kinds.iter().enumerate().skip(i).take(run) {
                let Kind::Read(delay) = *kind else { unreachable!() };
                let args = serde_json::json!({"index": j, "delay": delay, "barrier": barriers.len() - 1});
                calls.push(ToolCall::new(format!("c{j}"), "Read", args.to_string()));
            }
            i += run;
            continue;
        }
        let (name, delay) = match kinds[i] {
            Kind::Write(d) => ("Write", d),
            Kind::Serial(d) => ("Serial", d),
            Kind::Unknown => ("Nope", 0),
            Kind::Read(_) => unreachable!(),
        };
        let args = serde_json::json!({"index": i, "delay": delay});
        calls.push(ToolCall::new(format!("c{i}"), name, args.to_string()));
        i += 1;
    }
    *shared.barriers.lock().unwrap() = barriers;
    calls
}

fn check(kinds: &[Kind], cancel_after: Option<usize>) -> Result<(), TestCaseError> {
    let shared = Arc::new(Shared::default());
    let mut catalog = Catalog::new();
    for (name, read_only, serial) in [
        ("Read", true, false),
        ("Write", false, false),
        ("Serial", true, true),
    ] {
        catalog.must_register(Arc::new(PropTool {
            name,
            read_only,
            serial,
            shared: Arc::clone(&shared),
        }));
    }
    let calls = plan(kinds, &shared);
    let ctx = TurnContext::new(
        SessionId::from("prop"),
        PermissionMode::Default,
        Arc::new(catalog),
        Environment::new("/").unwrap(),
        Arc::new(DefaultPolicy::new(false, Approve::All)),
    );
    if let Some(after) = cancel_after {
        *shared.cancel_after.lock().unwrap() = Some((after, ctx.cancel.clone()));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let outcome = runtime.block_on(async {
        // With paused time, a deadlock (reads not overlapping) makes the clock jump
        // to this timeout at once.
        tokio::time::timeout(
            Duration::from_secs(3600),
            Dispatcher::default().dispatch(&ctx, &calls),
        )
        .await
    });
    let Ok(outcome) = outcome else {
        return Err(TestCaseError::fail(format!(
            "the turn deadlocked: reads of one run did not overlap ({kinds:?})"
        )));
    };

    prop_assert_eq!(outcome.results.len(), calls.len(), "one result per call");
    for (result, call) in outcome.results.iter().zip(&calls) {
        prop_assert_eq!(result.call_id(), call.id(), "results in call order");
    }
    let violations = shared.violations.lock().unwrap().clone();
    prop_assert!(violations.is_empty(), "{:?}", violations);
    let journal = shared.journal.lock().unwrap().clone();
    if let Some(at) = journal.iter().position(|e| *e == Entry::Cancel) {
        prop_assert!(
            !journal[at..].iter().any(|e| matches!(e, Entry::Start(_))),
            "a call started after cancellation: {:?}",
            journal
        );
        prop_assert!(outcome.cancelled);
    } else {
        for (i, (result, kind)) in outcome.results.iter().zip(kinds).enumerate() {
            let expect_error = matches!(kind, Kind::Unknown);
            prop_assert_eq!(
                result.is_error(),
                expect_error,
                "call {} ({:?}): {}",
                i,
                kind,
                result.content()
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn random_turns_keep_the_dispatch_invariants(kinds in prop::collection::vec(kind(), 1..12)) {
        check(&kinds, None)?;
    }

    #[test]
    fn random_cancellation_starts_nothing_more(
        kinds in prop::collection::vec(kind(), 1..12),
        cancel_after in 1usize..6,
    ) {
        check(&kinds, Some(cancel_after))?;
    }
}
