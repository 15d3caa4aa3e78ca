//! Conformance suite for [`EventLog`] implementations.

use std::sync::Arc;

use futures::future::join_all;

use crate::content::ContentPart;
use crate::event::{Event, EventKind, HookAction, HookPhase, StopReason, Verdict};
use crate::ids::SessionId;
use crate::mode::PermissionMode;
use crate::store::EventLog;
use crate::usage::Usage;

/// Runs every event-log case, each against a fresh, empty log from `make`.
///
/// Run it from a multi-threaded tokio runtime.
///
/// # Panics
/// When a case fails; the message names the case (`event_log::<case>`).
pub async fn run(make: impl Fn() -> Arc<dyn EventLog>) {
    unknown_id_reads_empty(make()).await;
    order_is_append_order(make()).await;
    every_event_kind_round_trips(make()).await;
    large_events_round_trip(make()).await;
    read_stop_append_read(make()).await;
    concurrent_appends_keep_per_id_order(make()).await;
    interleaved_ids_stay_separate(make()).await;
}

/// A `message.delta` event with `seq` and `text`.
pub fn delta(seq: u64, text: impl Into<String>) -> Event {
    Event {
        seq,
        time: None,
        kind: EventKind::MessageDelta { text: text.into() },
    }
}

/// One event of every kind, `seq` 1.. in order, as one run would log them.
pub fn one_of_each_kind() -> Vec<Event> {
    let kinds = vec![
        EventKind::SessionInit {
            session_id: SessionId::from("team-abc/lead"),
            mode: PermissionMode::AcceptEdits,
            model: "mock".into(),
            tools: vec!["Grep".into(), "mcp__a__b".into()],
            mcp_servers: vec![crate::ServerOrigin {
                name: "a".into(),
                source: "toolhive(default)".into(),
            }],
            sandbox: Some(crate::SandboxStatus {
                mode: crate::SandboxMode::WorkspaceWrite,
                network: false,
                refused: false,
            }),
        },
        EventKind::TurnStart { turn: 1 },
        EventKind::ReasoningDelta {
            text: "thinking…".into(),
        },
        EventKind::MessageDelta {
            text: "line 1\nline 2 \"quoted\" ü".into(),
        },
        EventKind::ToolCall {
            call_id: "call-1".into(),
            name: "Shell".into(),
            args: serde_json::json!({"z": 1, "a": [true, null, 1.5], "command": "ls"}),
        },
        EventKind::PermissionAsk {
            ask_id: "ask-1".into(),
            call_id: "call-1".into(),
            name: "Shell".into(),
            args: serde_json::json!({"command": "ls"}),
            reason: "Shell mutates".into(),
            suggested_rule: None,
        },
        EventKind::PermissionVerdict {
            ask_id: "ask-1".into(),
            call_id: "call-1".into(),
            verdict: Verdict::AllowAlways,
            saved_rule: None,
            reason: None,
        },
        EventKind::Hook {
            phase: HookPhase::PostToolUse,
            call_id: "call-1".into(),
            name: "Shell".into(),
            action: HookAction::RewriteResult,
            message: "redacted".into(),
        },
        EventKind::SessionHook {
            event: crate::HookEvent::Stop,
            hook: "./more-tests.sh".into(),
            action: crate::SessionHookAction::Continue,
            message: "the tests did not run".into(),
        },
        EventKind::ToolResult {
            call_id: "call-1".into(),
            name: "Shell".into(),
            content: "file.txt".into(),
            is_error: false,
            parts: vec![ContentPart::text("file.txt")],
        },
        EventKind::TurnEnd {
            turn: 1,
            usage: Usage::new(10, 20),
        },
        EventKind::Result {
            stop: StopReason::EndTurn,
            text: "done".into(),
            usage: Usage::new(10, 20),
            turns: 1,
            tool_calls: 1,
            error: None,
        },
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Event {
            seq: i as u64 + 1,
            time: (i % 2 == 0).then(|| "2026-11-30T09:55:35.123456Z".to_owned()),
            kind,
        })
        .collect()
}

async fn append_ok(log: &dyn EventLog, id: &str, event: &Event, case: &str) {
    if let Err(error) = log.append(&SessionId::from(id), event).await {
        panic!("event_log::{case}: append to {id:?} failed: {error}");
    }
}

async fn read_ok(log: &dyn EventLog, id: &str, case: &str) -> Vec<Event> {
    match log.read(&SessionId::from(id)).await {
        Ok(events) => events,
        Err(error) => panic!("event_log::{case}: read of {id:?} failed: {error}"),
    }
}

fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

async fn unknown_id_reads_empty(log: Arc<dyn EventLog>) {
    let case = "unknown_id_reads_empty";
    assert!(
        read_ok(log.as_ref(), "ghost", case).await.is_empty(),
        "event_log::{case}"
    );
}

async fn order_is_append_order(log: Arc<dyn EventLog>) {
    let case = "order_is_append_order";
    for seq in [30, 10, 20] {
        append_ok(
            log.as_ref(),
            "sess-order",
            &delta(seq, format!("seq {seq}")),
            case,
        )
        .await;
    }
    assert_eq!(
        seqs(&read_ok(log.as_ref(), "sess-order", case).await),
        [30, 10, 20],
        "event_log::{case}: append order, not seq order"
    );
}

async fn every_event_kind_round_trips(log: Arc<dyn EventLog>) {
    let case = "every_event_kind_round_trips";
    let events = one_of_each_kind();
    for event in &events {
        append_ok(log.as_ref(), "team-abc/lead", event, case).await;
    }
    assert_eq!(
        read_ok(log.as_ref(), "team-abc/lead", case).await,
        events,
        "event_log::{case}"
    );
}

async fn large_events_round_trip(log: Arc<dyn EventLog>) {
    let case = "large_events_round_trip";
    let big = delta(1, "b".repeat(160 * 1024));
    append_ok(log.as_ref(), "sess-big", &big, case).await;
    let back = read_ok(log.as_ref(), "sess-big", case).await;
    assert!(back == [big], "event_log::{case}: the 160 KiB event differs");
    let many: Vec<Event> = (0..80u64)
        .map(|i| {
            let fill = char::from(b'a' + (i % 26) as u8);
            delta(i, fill.to_string().repeat(64 * 1024))
        })
        .collect();
    for event in &many {
        append_ok(log.as_ref(), "sess-many", event, case).await;
    }
    let back = read_ok(log.as_ref(), "sess-many", case).await;
    assert_eq!(back.len(), 80, "event_log::{case}: 80 events of 64 KiB");
    assert!(back == many, "event_log::{case}: the 64 KiB events differ");
}

async fn read_stop_append_read(log: Arc<dyn EventLog>) {
    let case = "read_stop_append_read";
    for seq in 1..=5 {
        append_ok(log.as_ref(), "sess-rsar", &delta(seq, "x"), case).await;
    }
    let first = read_ok(log.as_ref(), "sess-rsar", case).await;
    assert_eq!(seqs(&first), [1, 2, 3, 4, 5], "event_log::{case}: first read");
    append_ok(log.as_ref(), "sess-rsar", &delta(6, "y"), case).await;
    let second = read_ok(log.as_ref(), "sess-rsar", case).await;
    assert_eq!(
        seqs(&second),
        [1, 2, 3, 4, 5, 6],
        "event_log::{case}: second read"
    );
    assert_eq!(
        second[..5],
        first[..],
        "event_log::{case}: the prefix is unchanged"
    );
}

async fn concurrent_appends_keep_per_id_order(log: Arc<dyn EventLog>) {
    let case = "concurrent_appends_keep_per_id_order";
    let writers = (0..8u64).map(|writer| {
        let log = Arc::clone(&log);
        async move {
            let id = format!("conc/{writer}");
            for seq in 1..=25u64 {
                append_ok(log.as_ref(), &id, &delta(seq, format!("{writer}:{seq}")), case).await;
                if seq % 5 == 0 {
                    // Interleaved reads see a consistent prefix of what this writer wrote.
                    let seen = seqs(&read_ok(log.as_ref(), &id, case).await);
                    let expected: Vec<u64> = (1..=seq).collect();
                    assert_eq!(seen, expected, "event_log::{case}: {id} after {seq} appends");
                }
            }
        }
    });
    join_all(writers).await;
    for writer in 0..8u64 {
        let id = format!("conc/{writer}");
        let events = read_ok(log.as_ref(), &id, case).await;
        let expected: Vec<Event> = (1..=25u64)
            .map(|seq| delta(seq, format!("{writer}:{seq}")))
            .collect();
        assert_eq!(
            events, expected,
            "event_log::{case}: {id} lost or reordered events"
        );
    }
}

async fn interleaved_ids_stay_separate(log: Arc<dyn EventLog>) {
    let case = "interleaved_ids_stay_separate";
    for seq in 1..=10u64 {
        let id = if seq % 2 == 0 {
            "team-abc/lead"
        } else {
            "team-abc_lead"
        };
        append_ok(log.as_ref(), id, &delta(seq, id), case).await;
    }
    assert_eq!(
        seqs(&read_ok(log.as_ref(), "team-abc/lead", case).await),
        [2, 4, 6, 8, 10],
        "event_log::{case}: team-abc/lead"
    );
    assert_eq!(
        seqs(&read_ok(log.as_ref(), "team-abc_lead", case).await),
        [1, 3, 5, 7, 9],
        "event_log::{case}: team-abc_lead"
    );
    assert!(
        read_ok(log.as_ref(), "team-abc", case).await.is_empty(),
        "event_log::{case}: a prefix id has no events"
    );
}
