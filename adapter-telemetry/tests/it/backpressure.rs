//! A receiver that never answers neither slows nor fails a run; a full queue drops
//! spans and counts them; shutdown keeps its time limit.

use std::time::{Duration, Instant};

use adapter_telemetry::{Protocol, QUEUE_CAPACITY, Telemetry};
use engine_ports::{Event, EventKind, PermissionMode, SessionId, StopReason, ToolCallId};

use crate::support::{observed_engine, options, run, stop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_answers_neither_slows_nor_fails_a_run() {
    let addr = crate::receiver::silent_receiver().await;
    // Each export may wait 30 s for an answer; a run that waited on one would take
    // at least that long.
    let telemetry = Telemetry::start(options(addr, Protocol::HttpProtobuf, false))
        .unwrap()
        .unwrap();
    let engine = observed_engine(&telemetry);
    let started = Instant::now();
    let events = run(&engine, "s-silent", "go").await;
    assert_eq!(stop(&events), StopReason::EndTurn);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run took {:?}",
        started.elapsed()
    );
    let closing = Instant::now();
    telemetry.shutdown(Duration::from_millis(500)).await;
    assert!(
        closing.elapsed() < Duration::from_secs(5),
        "shutdown took {:?} for a 500 ms limit",
        closing.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_drops_spans_and_counts_them() {
    let addr = crate::receiver::silent_receiver().await;
    let telemetry = Telemetry::start(options(addr, Protocol::HttpProtobuf, false))
        .unwrap()
        .unwrap();
    let sink = telemetry.sink();
    let session = SessionId::from("busy");
    let emit = |kind: EventKind| {
        sink.emit(
            &session,
            &Event {
                seq: 0,
                time: None,
                kind,
            },
        )
    };
    emit(EventKind::SessionInit {
        session_id: session.clone(),
        mode: PermissionMode::Default,
        model: "mock".to_owned(),
        tools: Vec::new(),
        mcp_servers: Vec::new(),
        sandbox: None,
    });
    let calls = 3 * QUEUE_CAPACITY;
    let started = Instant::now();
    for i in 0..calls {
        let call_id = ToolCallId::from(format!("c{i}").as_str());
        emit(EventKind::ToolCall {
            call_id: call_id.clone(),
            name: "Read".to_owned(),
            args: serde_json::json!({}),
        });
        emit(EventKind::ToolResult {
            call_id,
            name: "Read".to_owned(),
            content: String::new(),
            is_error: false,
            parts: Vec::new(),
        });
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "ending spans never waits"
    );
    let text = telemetry.prometheus_text().unwrap();
    let dropped = crate::prometheus::sample(
        &text,
        "mecatl_telemetry_dropped_spans_total",
        &[("reason", "queue_full")],
    );
    // The export task holds at most one batch and the queue its capacity.
    assert!(
        dropped >= (calls - QUEUE_CAPACITY - 512) as f64,
        "{dropped} spans counted as dropped of {calls}"
    );
    telemetry.shutdown(Duration::from_millis(200)).await;
}
