//! Dispatcher scenarios: segmentation, barriers, ordering, ids, plan mode, errors,
//! panics, cancellation, timing and recording.

use std::sync::Arc;
use std::time::Duration;

use engine_core::{Approve, DispatchConfig, Dispatcher, EngineConfig, Tool, ToolError};
use engine_ports::testkit::{ManualClock, MemoryRecorder, ScriptedTurn};
use engine_ports::{Approval, Clock, EventKind, PermissionMode, SessionId, StopReason, ToolCall, ToolResult};
use futures::StreamExt as _;
use tokio::sync::{Barrier, Notify, mpsc};

use crate::support::{
    FakeTool, Probe, call_events, catalog_of, config, context, harness, kinds, results_of, run_to_end,
    stop_of,
};

fn calls(list: &[(&str, &str)]) -> Vec<ToolCall> {
    list.iter()
        .map(|(id, name)| ToolCall::new(*id, *name, "{}"))
        .collect()
}

fn ids(results: &[ToolResult]) -> Vec<String> {
    results.iter().map(|r| r.call_id().to_string()).collect()
}

const GUARD: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_batch_around_a_write_and_everything_stays_in_call_order() {
    let probe = Probe::new();
    let r2_done = Arc::new(Notify::new());
    let (wait, done) = (Arc::clone(&r2_done), Arc::clone(&r2_done));
    // R1 finishes only after R2 finished, so completion order is R2, R1.
    let slow = FakeTool::new("Slow", true, &probe).behaving(move |call, _| {
        let wait = Arc::clone(&wait);
        async move {
            wait.notified().await;
            Ok(ToolResult::text(call.id().clone(), "slow"))
        }
    });
    let fast = FakeTool::new("Fast", true, &probe).behaving(move |call, _| {
        let done = Arc::clone(&done);
        async move {
            done.notify_one();
            Ok(ToolResult::text(call.id().clone(), "fast"))
        }
    });
    let catalog = catalog_of(vec![
        slow.arc(),
        fast.arc(),
        FakeTool::new("Write", false, &probe).arc(),
        FakeTool::new("Read", true, &probe).arc(),
    ]);
    let (mut ctx, sink) = context(catalog, PermissionMode::Default);
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    let turn = calls(&[("R1", "Slow"), ("R2", "Fast"), ("W", "Write"), ("R3", "Read")]);
    let outcome = tokio::time::timeout(GUARD, Dispatcher::default().dispatch(&ctx, &turn))
        .await
        .expect("turn completes");

    assert!(
        probe.at("end:R2") < probe.at("end:R1"),
        "R2 finished first: {:?}",
        probe.journal()
    );
    assert!(probe.at("start:W") > probe.at("end:R1"));
    assert!(probe.at("start:W") > probe.at("end:R2"));
    assert!(probe.at("start:R3") > probe.at("end:W"));
    assert_eq!(ids(&outcome.results), ["R1", "R2", "W", "R3"]);
    let events = sink.events(&SessionId::from("s1"));
    let order: Vec<(String, String)> = call_events(&events);
    let expected: Vec<(String, String)> = ["R1", "R2", "W", "R3"]
        .iter()
        .map(|id| ("tool.call".to_owned(), (*id).to_owned()))
        .chain(
            ["R1", "R2", "W", "R3"]
                .iter()
                .map(|id| ("tool.result".to_owned(), (*id).to_owned())),
        )
        .collect();
    assert_eq!(order, expected);
    let recorded: Vec<String> = recorder.records().iter().map(|r| r.call_id.to_string()).collect();
    assert_eq!(recorded, ["R1", "R2", "W", "R3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_one_batch_overlap_and_writes_never_do() {
    let probe = Probe::new();
    let barrier = Arc::new(Barrier::new(2));
    let waiting = |name: &str| {
        let barrier = Arc::clone(&barrier);
        FakeTool::new(name, true, &probe).behaving(move |call, _| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok(ToolResult::text(call.id().clone(), "met"))
            }
        })
    };
    let catalog = catalog_of(vec![
        waiting("Read").arc(),
        waiting("Grep").arc(),
        FakeTool::new("Write", false, &probe)
            .behaving(|call, _| async move {
                tokio::task::yield_now().await;
                Ok(ToolResult::text(call.id().clone(), "w"))
            })
            .arc(),
        FakeTool::new("Edit", false, &probe)
            .behaving(|call, _| async move {
                tokio::task::yield_now().await;
                Ok(ToolResult::text(call.id().clone(), "e"))
            })
            .arc(),
    ]);
    let (ctx, _) = context(catalog, PermissionMode::Default);
    let reads = calls(&[("a", "Read"), ("b", "Grep")]);
    let outcome = tokio::time::timeout(GUARD, Dispatcher::default().dispatch(&ctx, &reads))
        .await
        .expect("both reads met at the barrier, so they overlapped");
    assert!(outcome.results.iter().all(|r| r.content() == "met"));

    let writes = calls(&[("w", "Write"), ("e", "Edit"), ("w2", "Write"), ("e2", "Edit")]);
    Dispatcher::default().dispatch(&ctx, &writes).await;
    assert_eq!(probe.overlaps(), 0, "{:?}", probe.journal());
    assert!(probe.at("end:w") < probe.at("start:e"));
    assert!(probe.at("end:e") < probe.at("start:w2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_serial_tools_stand_alone_between_batches() {
    let probe = Probe::new();
    let firsts = Arc::new(Barrier::new(2));
    let follows = Arc::new(Barrier::new(2));
    let meeting = |name: &str, barrier: &Arc<Barrier>| {
        let barrier = Arc::clone(barrier);
        FakeTool::new(name, true, &probe).behaving(move |call, _| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok(ToolResult::text(call.id().clone(), "met"))
            }
        })
    };
    let catalog = catalog_of(vec![
        meeting("First", &firsts).arc(),
        meeting("Following", &follows).arc(),
        FakeTool::new("Serial", true, &probe)
            .serial()
            .behaving(|call, _| async move {
                tokio::task::yield_now().await;
                Ok(ToolResult::text(call.id().clone(), "s"))
            })
            .arc(),
    ]);
    let (ctx, _) = context(catalog, PermissionMode::Default);
    let turn = calls(&[
        ("f1", "First"),
        ("f2", "First"),
        ("s", "Serial"),
        ("g1", "Following"),
        ("g2", "Following"),
    ]);
    tokio::time::timeout(GUARD, Dispatcher::default().dispatch(&ctx, &turn))
        .await
        .expect("the Firsts and the Followings each overlapped");
    assert!(probe.at("start:s") > probe.at("end:f1"));
    assert!(probe.at("start:s") > probe.at("end:f2"));
    assert!(probe.at("start:g1") > probe.at("end:s"));
    assert!(probe.at("start:g2") > probe.at("end:s"));

    let probe2 = Probe::new();
    let serial_only = catalog_of(vec![
        FakeTool::new("Serial", true, &probe2)
            .serial()
            .behaving(|call, _| async move {
                tokio::task::yield_now().await;
                Ok(ToolResult::text(call.id().clone(), "s"))
            })
            .arc(),
    ]);
    let (ctx, _) = context(serial_only, PermissionMode::Default);
    Dispatcher::default()
        .dispatch(&ctx, &calls(&[("a", "Serial"), ("b", "Serial"), ("c", "Serial")]))
        .await;
    assert_eq!(probe2.peak(), 1, "{:?}", probe2.journal());
}

async fn peak_with(limit: Option<usize>) -> usize {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Block", true, &probe)
            .behaving(|call, _| async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(ToolResult::text(call.id().clone(), "ok"))
            })
            .arc(),
    ]);
    let (ctx, _) = context(catalog, PermissionMode::Default);
    let turn: Vec<ToolCall> = (0..20)
        .map(|i| ToolCall::new(format!("c{i}"), "Block", "{}"))
        .collect();
    let dispatcher = match limit {
        Some(n) => Dispatcher::new(DispatchConfig {
            max_parallel_reads: std::num::NonZeroUsize::new(n).unwrap(),
            ..DispatchConfig::default()
        }),
        None => Dispatcher::default(),
    };
    let outcome = dispatcher.dispatch(&ctx, &turn).await;
    assert_eq!(outcome.results.len(), 20);
    probe.peak()
}

#[tokio::test(start_paused = true)]
async fn read_concurrency_is_bounded() {
    assert_eq!(peak_with(Some(4)).await, 4);
    assert_eq!(peak_with(None).await, 16);
}

#[tokio::test]
async fn unknown_tools_are_barriers_with_an_error_result_recorded_as_the_modes_refusal() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]);
    let turns = vec![
        ScriptedTurn::new()
            .with_call("r1", "Read", "{}")
            .with_call("x", "Nope", "{}")
            .with_call("r2", "Read", "{}"),
        ScriptedTurn::text("recovered"),
    ];
    let h = harness(catalog, turns, config());
    let events = run_to_end(&h.engine, "s", "go").await;
    assert!(probe.at("end:r1") < probe.at("start:r2"), "separate segments");
    let results = results_of(&events);
    assert_eq!(results.len(), 3);
    assert!(results[1].2, "Nope is an error");
    assert!(results[1].1.contains("Nope"), "{}", results[1].1);
    assert!(!results[0].2 && !results[2].2);
    let recorded: Vec<String> = h
        .recorder
        .records()
        .iter()
        .map(|r| r.call_id.to_string())
        .collect();
    assert_eq!(recorded, ["r1", "x", "r2"]);
    assert_eq!(
        h.recorder.records()[1].approval,
        Some(engine_ports::Approval::MODE_DENY)
    );
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "recovered".to_owned()));
}

#[tokio::test]
async fn duplicate_and_empty_ids_are_normalized_everywhere() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Grep", true, &probe).arc(),
        FakeTool::new("Glob", true, &probe).arc(),
    ]);
    let turns = vec![
        ScriptedTurn::call("c0", "Read", "{}"),
        ScriptedTurn::new()
            .with_call("c1", "Read", "{}")
            .with_call("c1", "Grep", "{}")
            .with_call("", "Glob", "{}"),
        ScriptedTurn::text("done"),
    ];
    let h = harness(catalog, turns, config());
    let events = run_to_end(&h.engine, "s", "go").await;
    let tool_calls: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { call_id, .. } => Some(call_id.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(tool_calls, ["c0", "c1", "c1#2", "call-2-3"]);
    let results = results_of(&events);
    let result_ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(result_ids, ["c0", "c1", "c1#2", "call-2-3"]);
    assert_eq!(results[2].1, "ok:c1#2", "the tool saw the normalized id");
    let recorded: Vec<String> = h
        .recorder
        .records()
        .iter()
        .map(|r| r.call_id.to_string())
        .collect();
    assert_eq!(recorded, ["c0", "c1", "c1#2", "call-2-3"]);
    // The conversation carries the normalized ids too.
    let snapshot = h.engine.store().load(&SessionId::from("s")).await.unwrap();
    let assistant_ids: Vec<String> = snapshot
        .conversation
        .iter()
        .filter_map(|m| match m {
            engine_ports::Message::Assistant { tool_calls, .. } => {
                Some(tool_calls.iter().map(|c| c.id().to_string()).collect::<Vec<_>>())
            }
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(assistant_ids, ["c0", "c1", "c1#2", "call-2-3"]);
}

#[tokio::test]
async fn plan_mode_refuses_mutating_tools_before_any_gate() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Write", false, &probe).arc(),
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("PresentPlan", true, &probe).plan_only().arc(),
    ]);
    let cfg = EngineConfig {
        mode: PermissionMode::Plan,
        interactive: true,
        approve: Approve::ReadOnly,
        ..config()
    };
    let turns = vec![
        ScriptedTurn::call("w", "Write", r#"{"path":"x"}"#),
        ScriptedTurn::call("r", "Read", "{}"),
        ScriptedTurn::text("planned"),
    ];
    let h = harness(Arc::clone(&catalog), turns, cfg);
    let events = run_to_end(&h.engine, "s", "plan it").await;
    let results = results_of(&events);
    assert!(results[0].2);
    assert!(results[0].1.contains("Write") && results[0].1.contains("not available in plan mode"));
    assert_eq!(probe.executions("Write"), 0);
    assert!(!kinds(&events).contains(&"permission.ask"));
    let recorded: Vec<(String, Option<engine_ports::Approval>)> = h
        .recorder
        .records()
        .iter()
        .map(|r| (r.tool.clone(), r.approval))
        .collect();
    assert_eq!(
        recorded,
        [
            ("Write".to_owned(), Some(engine_ports::Approval::MODE_DENY)),
            ("Read".to_owned(), Some(engine_ports::Approval::POLICY_ALLOW)),
        ]
    );
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "planned".to_owned()));

    let turns = vec![
        ScriptedTurn::call("p", "PresentPlan", "{}"),
        ScriptedTurn::text("ok"),
    ];
    let h = harness(catalog, turns, config());
    let events = run_to_end(&h.engine, "s", "go").await;
    let results = results_of(&events);
    assert!(results[0].2);
    assert!(results[0].1.contains("PresentPlan") && results[0].1.contains("only available in plan mode"));
    assert_eq!(probe.executions("PresentPlan"), 0);
}

#[tokio::test]
async fn tool_errors_become_results_and_ids_are_forced() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Disk", false, &probe)
            .behaving(|_, _| async { Err(ToolError::Failed("disk gone".to_owned())) })
            .arc(),
        FakeTool::new("Liar", true, &probe)
            .behaving(|_, _| async { Ok(ToolResult::text("zzz", "answer")) })
            .arc(),
    ]);
    let turns = vec![
        ScriptedTurn::call("d", "Disk", "{}"),
        ScriptedTurn::call("c1", "Liar", "{}"),
        ScriptedTurn::text("went on"),
    ];
    let h = harness(catalog, turns, config());
    let events = run_to_end(&h.engine, "s", "go").await;
    let results = results_of(&events);
    assert!(results[0].2);
    assert!(
        results[0].1.contains("Disk") && results[0].1.contains("disk gone"),
        "{}",
        results[0].1
    );
    assert_eq!(results[1].0, "c1");
    let records = h.recorder.records();
    assert_eq!(records.len(), 2);
    assert!(records[0].is_error && records[0].result.contains("disk gone"));
    assert_eq!(records[1].call_id, "c1");
    let snapshot = h.engine.store().load(&SessionId::from("s")).await.unwrap();
    let answered: Vec<String> = snapshot
        .conversation
        .iter()
        .filter_map(|m| match m {
            engine_ports::Message::Tool { result } => Some(result.call_id().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["d", "c1"]);
    assert_eq!(stop_of(&events).0, StopReason::EndTurn);
}

#[tokio::test]
async fn a_panicking_tool_gets_an_error_result_and_its_batch_goes_on() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Boom", true, &probe)
            .behaving(|_, _| async { panic!("exploded on purpose") })
            .arc(),
        FakeTool::new("Read", true, &probe).arc(),
    ]);
    let turns = vec![
        ScriptedTurn::new()
            .with_call("b", "Boom", "{}")
            .with_call("r", "Read", "{}"),
        ScriptedTurn::text("fine"),
    ];
    let h = harness(catalog, turns, config());
    let events = run_to_end(&h.engine, "s", "go").await;
    let results = results_of(&events);
    assert!(results[0].2);
    assert!(
        results[0].1.contains("Boom") && results[0].1.contains("panicked"),
        "{}",
        results[0].1
    );
    assert!(results[0].1.contains("exploded on purpose"));
    assert_eq!(results[1], ("r".to_owned(), "ok:r".to_owned(), false));
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "fine".to_owned()));
}

/// A segment of one call: its panic is contained too.
#[tokio::test]
async fn a_lone_panicking_call_gets_an_error_result_and_the_run_goes_on() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Boom", false, &probe)
            .behaving(|_, _| async { panic!("exploded alone") })
            .arc(),
    ]);
    let turns = vec![
        ScriptedTurn::call("b", "Boom", "{}"),
        ScriptedTurn::text("still here"),
    ];
    let h = harness(catalog, turns, config());
    let events = run_to_end(&h.engine, "s", "go").await;
    let results = results_of(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "an error result");
    assert!(
        results[0].1.contains("Boom") && results[0].1.contains("exploded alone"),
        "{}",
        results[0].1
    );
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "still here".to_owned()));
}

fn blocking_read(name: &str, probe: &Arc<Probe>, started: mpsc::UnboundedSender<String>) -> FakeTool {
    FakeTool::new(name, true, probe).behaving(move |call, cancel| {
        let started = started.clone();
        async move {
            let _ = started.send(call.id().to_string());
            cancel.cancelled().await;
            Err(ToolError::Cancelled)
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_batch_pairs_every_call_and_starts_nothing_more() {
    let probe = Probe::new();
    let (tx, mut started) = mpsc::unbounded_channel();
    let catalog = catalog_of(vec![
        blocking_read("Wait", &probe, tx).arc(),
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    let turns = vec![
        ScriptedTurn::new()
            .with_call("r1", "Wait", "{}")
            .with_call("r2", "Wait", "{}")
            .with_call("w", "Write", "{}"),
        ScriptedTurn::text("after"),
    ];
    let h = harness(catalog, turns, config());
    let session = SessionId::from("s");
    let run = h.engine.run(&session, "go").unwrap();
    for _ in 0..2 {
        tokio::time::timeout(GUARD, started.recv())
            .await
            .unwrap()
            .unwrap();
    }
    assert!(h.engine.cancel(&session));
    let events: Vec<_> = tokio::time::timeout(GUARD, run.collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(probe.executions("Write"), 0, "W never starts");
    let results = results_of(&events);
    assert_eq!(
        results.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["r1", "r2", "w"]
    );
    assert!(
        results.iter().all(|r| r.2 && r.1.contains("cancelled")),
        "{results:?}"
    );
    assert_eq!(call_events(&events).len(), 6);
    assert_eq!(stop_of(&events).0, StopReason::Cancelled);
    let recorded: Vec<String> = h
        .recorder
        .records()
        .iter()
        .map(|r| r.call_id.to_string())
        .collect();
    assert_eq!(
        recorded,
        ["r1", "r2"],
        "started calls are recorded, others are not"
    );

    let events = run_to_end(&h.engine, "s", "again").await;
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "after".to_owned()));
    let snapshot = h.engine.store().load(&session).await.unwrap();
    let asked: usize = snapshot
        .conversation
        .iter()
        .map(|m| match m {
            engine_ports::Message::Assistant { tool_calls, .. } => tool_calls.len(),
            _ => 0,
        })
        .sum();
    let answered = snapshot
        .conversation
        .iter()
        .filter(|m| matches!(m, engine_ports::Message::Tool { .. }))
        .count();
    assert_eq!(asked, answered, "every call is paired with a result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_ignoring_cancellation_is_abandoned_after_the_grace_period() {
    let probe = Probe::new();
    let (tx, mut started) = mpsc::unbounded_channel::<String>();
    let catalog = catalog_of(vec![
        FakeTool::new("Stubborn", true, &probe)
            .behaving(move |call, _ignored| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(call.id().to_string());
                    std::future::pending::<()>().await;
                    Ok(ToolResult::text(call.id().clone(), "never"))
                }
            })
            .arc(),
    ]);
    let cfg = EngineConfig {
        cancel_grace: Duration::from_millis(100),
        ..config()
    };
    let h = harness(catalog, vec![ScriptedTurn::call("s1", "Stubborn", "{}")], cfg);
    let session = SessionId::from("s");
    let run = h.engine.run(&session, "go").unwrap();
    tokio::time::timeout(GUARD, started.recv())
        .await
        .unwrap()
        .unwrap();
    let cancelled_at = std::time::Instant::now();
    run.cancel();
    let events: Vec<_> = tokio::time::timeout(GUARD, run.collect::<Vec<_>>())
        .await
        .unwrap();
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(5),
        "abandoned well before the guard"
    );
    let results = results_of(&events);
    assert!(results[0].2 && results[0].1.contains("cancelled"));
    assert_eq!(stop_of(&events).0, StopReason::Cancelled);
    tokio::time::timeout(GUARD, probe.wait_for("end:s1"))
        .await
        .expect("the abandoned execution is dropped");
    assert_eq!(probe.journal(), ["start:s1", "end:s1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_during_an_ask_never_runs_the_tool() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![FakeTool::new("Write", false, &probe).arc()]);
    let cfg = EngineConfig {
        interactive: true,
        approve: Approve::ReadOnly,
        ..config()
    };
    let h = harness(catalog, vec![ScriptedTurn::call("w", "Write", "{}")], cfg);
    let session = SessionId::from("s");
    let mut run = h.engine.run(&session, "go").unwrap();
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(GUARD, run.next()).await.unwrap() {
        let is_ask = matches!(event.kind, EventKind::PermissionAsk { .. });
        events.push(event);
        if is_ask {
            h.engine.cancel(&session);
        }
    }
    assert!(kinds(&events).contains(&"permission.ask"));
    assert_eq!(probe.executions("Write"), 0);
    let results = results_of(&events);
    assert!(results[0].2 && results[0].1.contains("cancelled"));
    assert_eq!(stop_of(&events).0, StopReason::Cancelled);
    assert!(h.recorder.records().is_empty());
}

#[tokio::test]
async fn queued_and_took_come_from_the_injected_clock() {
    let probe = Probe::new();
    let clock = Arc::new(ManualClock::at_epoch_2026());
    let advancing = |name: &str, by: u64| {
        let clock = Arc::clone(&clock);
        FakeTool::new(name, false, &probe).behaving(move |call, _| {
            let clock = Arc::clone(&clock);
            async move {
                clock.advance(Duration::from_millis(by));
                Ok(ToolResult::text(call.id().clone(), "ok"))
            }
        })
    };
    let catalog = catalog_of(vec![advancing("W1", 10).arc(), advancing("W2", 5).arc()]);
    let (mut ctx, _) = context(Arc::clone(&catalog), PermissionMode::Default);
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    ctx.clock = Some(clock.clone() as Arc<dyn Clock>);
    Dispatcher::default()
        .dispatch(&ctx, &calls(&[("a", "W1"), ("b", "W2")]))
        .await;
    let timings: Vec<(u64, u64)> = recorder
        .records()
        .iter()
        .map(|r| (r.queued_micros, r.took_micros))
        .collect();
    assert_eq!(timings, [(0, 10_000), (10_000, 5_000)]);

    let (mut ctx, _) = context(catalog, PermissionMode::Default);
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    Dispatcher::default()
        .dispatch(&ctx, &calls(&[("a", "W1"), ("b", "W2")]))
        .await;
    assert!(
        recorder
            .records()
            .iter()
            .all(|r| r.queued_micros == 0 && r.took_micros == 0)
    );
}

#[tokio::test]
async fn the_record_time_is_read_from_the_engine_clock() {
    let probe = Probe::new();
    let clock = Arc::new(ManualClock::at_epoch_2026());
    let tool_clock = Arc::clone(&clock);
    let write = FakeTool::new("Write", false, &probe).behaving(move |call, _| {
        let clock = Arc::clone(&tool_clock);
        async move {
            clock.advance(Duration::from_millis(10));
            Ok(ToolResult::text(call.id().clone(), "ok"))
        }
    });
    let catalog = catalog_of(vec![write.arc()]);
    let (mut ctx, sink) = context(Arc::clone(&catalog), PermissionMode::Default);
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    ctx.clock = Some(clock.clone() as Arc<dyn Clock>);
    let turn = [ToolCall::new("w", "Write", r#"{"path": "a", "n": [1, 2]}"#)];
    Dispatcher::default().dispatch(&ctx, &turn).await;
    let records = recorder.records();
    let times: Vec<&str> = records.iter().map(|r| r.time.as_str()).collect();
    assert_eq!(
        times,
        ["2026-01-01T00:00:00.010000Z"],
        "the fixed clock's time after the call, not the wall clock's"
    );
    // The arguments parsed once: the event and the record carry the same value.
    let event_args: Vec<serde_json::Value> = sink
        .events(&SessionId::from("s1"))
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ToolCall { args, .. } => Some(args),
            _ => None,
        })
        .collect();
    assert_eq!(event_args, [serde_json::json!({"path": "a", "n": [1, 2]})]);
    assert_eq!(records[0].args, event_args[0]);

    // An engine without a clock reads no time at all: its records carry the epoch.
    let (mut ctx, _) = context(catalog, PermissionMode::Default);
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    Dispatcher::default().dispatch(&ctx, &turn).await;
    let times: Vec<String> = recorder.records().into_iter().map(|r| r.time).collect();
    assert_eq!(times, ["1970-01-01T00:00:00.000000Z"]);
}

#[tokio::test]
async fn the_recorder_sees_executed_and_refused_calls_with_who_decided() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    let (mut ctx, _) = context(Arc::clone(&catalog), PermissionMode::Plan);
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    ctx.hooks = Some(Arc::new(crate::engine_loop::RedactingHooks));
    let outcome = Dispatcher::default()
        .dispatch(&ctx, &calls(&[("r", "Read"), ("u", "Unknown"), ("w", "Write")]))
        .await;
    assert_eq!(outcome.results.len(), 3);
    let records = recorder.records();
    let decided: Vec<(String, Option<Approval>, Option<String>)> = records
        .iter()
        .map(|r| {
            let reason = r.provenance.as_ref().and_then(|p| p.reason.clone());
            (r.call_id.to_string(), r.approval, reason)
        })
        .collect();
    assert_eq!(
        decided,
        [
            ("r".to_owned(), Some(Approval::POLICY_ALLOW), None),
            (
                "u".to_owned(),
                Some(Approval::MODE_DENY),
                Some("unknown tool".to_owned())
            ),
            (
                "w".to_owned(),
                Some(Approval::MODE_DENY),
                Some("plan mode runs only read-only calls".to_owned())
            ),
        ],
        "the mode's refusals are recorded, saying why"
    );
    assert_eq!(
        records[0].result, "[redacted]",
        "the post-hook result is recorded"
    );
    assert_eq!(records[2].result, outcome.results[2].content());

    // A call the policy refused is recorded as refused, with the text the model saw.
    let (mut ctx, _) = context(catalog, PermissionMode::Default);
    ctx.policy = Arc::new(engine_core::DefaultPolicy::new(
        false,
        engine_core::Approve::ReadOnly,
    ));
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    let outcome = Dispatcher::default()
        .dispatch(&ctx, &calls(&[("w", "Write"), ("r", "Read")]))
        .await;
    assert!(outcome.results[0].is_error() && outcome.results[0].content().contains("permission denied"));
    let records = recorder.records();
    let seen: Vec<(String, Option<Approval>, bool, u64)> = records
        .iter()
        .map(|r| (r.call_id.to_string(), r.approval, r.is_error, r.took_micros))
        .collect();
    assert_eq!(
        seen,
        [
            ("w".to_owned(), Some(Approval::POLICY_DENY), true, 0),
            ("r".to_owned(), Some(Approval::POLICY_ALLOW), false, 0),
        ]
    );
    assert_eq!(records[0].result, outcome.results[0].content());
    assert_eq!(probe.executions("Write"), 0);
}

#[tokio::test]
async fn a_hook_that_blocks_a_call_is_recorded_as_the_decider() {
    struct Blocking;
    #[async_trait::async_trait]
    impl engine_ports::ToolHooks for Blocking {
        async fn pre_tool_use(
            &self,
            _: &engine_ports::SessionId,
            call: &engine_ports::ToolCall,
        ) -> Result<engine_ports::Pre, engine_ports::HookError> {
            Ok(if call.name() == "Write" {
                engine_ports::Pre::Deny {
                    message: "writes are frozen".to_owned(),
                }
            } else {
                engine_ports::Pre::Allow
            })
        }
        async fn post_tool_use(
            &self,
            _: &engine_ports::SessionId,
            _: &engine_ports::ToolCall,
            _: &engine_ports::ToolResult,
        ) -> Result<engine_ports::Post, engine_ports::HookError> {
            Ok(engine_ports::Post::Keep)
        }
    }
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    let (mut ctx, _) = context(catalog, PermissionMode::Default);
    ctx.policy = Arc::new(engine_core::DefaultPolicy::new(false, engine_core::Approve::All));
    ctx.hooks = Some(Arc::new(Blocking));
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    let outcome = Dispatcher::default()
        .dispatch(&ctx, &calls(&[("w", "Write"), ("r", "Read")]))
        .await;
    assert_eq!(
        outcome.results[0].content(),
        "call to Write was blocked by a hook: writes are frozen"
    );
    let approvals: Vec<(String, Option<Approval>)> = recorder
        .records()
        .iter()
        .map(|r| (r.call_id.to_string(), r.approval))
        .collect();
    assert_eq!(
        approvals,
        [
            ("w".to_owned(), Some(Approval::HOOK_DENY)),
            ("r".to_owned(), Some(Approval::POLICY_ALLOW)),
        ]
    );
    assert_eq!(probe.executions("Write"), 0);
}

#[test]
fn tools_and_the_dispatcher_future_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let probe = Probe::new();
    let catalog = catalog_of(vec![FakeTool::new("Read", true, &probe).arc() as Arc<dyn Tool>]);
    let (ctx, _) = context(catalog, PermissionMode::Default);
    let turn = calls(&[("r", "Read")]);
    let dispatcher = Dispatcher::default();
    let future = dispatcher.dispatch(&ctx, &turn);
    assert_send(&future);
}

/// A read-only tool whose call turns mutating when its arguments say `{"write": true}`.
struct Switch;

#[async_trait::async_trait]
impl Tool for Switch {
    fn spec(&self) -> engine_ports::ToolSpec {
        engine_ports::ToolSpec::new("Switch", "Reads, or writes when asked.")
    }
    fn read_only(&self) -> bool {
        true
    }
    fn call_read_only(&self, call: &ToolCall) -> bool {
        !call.args().contains("\"write\":true")
    }
    async fn execute(
        &self,
        _: &engine_ports::CancellationToken,
        call: &ToolCall,
        _: &engine_core::Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(call.id().clone(), "ran"))
    }
}

#[tokio::test]
async fn a_read_only_tools_mutating_call_is_refused_in_plan_mode_and_denied_like_a_mutating_call() {
    let turn = vec![
        ToolCall::new("r", "Switch", r#"{"write":false}"#),
        ToolCall::new("w", "Switch", r#"{"write":true}"#),
    ];
    let (ctx, _) = context(catalog_of(vec![Arc::new(Switch)]), PermissionMode::Plan);
    let outcome = Dispatcher::default().dispatch(&ctx, &turn).await;
    assert_eq!(outcome.results[0].content(), "ran");
    assert_eq!(
        outcome.results[1].content(),
        "tool Switch is not available in plan mode: only read-only tools run while planning"
    );
    // Headless read-only approval: the mutating call is denied by the policy.
    let (mut ctx, _) = context(catalog_of(vec![Arc::new(Switch)]), PermissionMode::Default);
    ctx.policy = Arc::new(engine_core::DefaultPolicy::new(
        false,
        engine_core::Approve::ReadOnly,
    ));
    let outcome = Dispatcher::default().dispatch(&ctx, &turn).await;
    assert_eq!(outcome.results[0].content(), "ran");
    assert!(outcome.results[1].is_error());
    assert!(
        outcome.results[1]
            .content()
            .starts_with("permission denied for Switch"),
        "{}",
        outcome.results[1].content()
    );
}
