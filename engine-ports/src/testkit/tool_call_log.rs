//! Conformance suite for [`ToolCallLog`] implementations: the read side of the audit,
//! checked against what the same store's [`ToolCallRecorder`] was given.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use crate::call::ToolCall;
use crate::event::Verdict;
use crate::ids::SessionId;
use crate::permission::Approval;
use crate::recorder::{ToolCallLog, ToolCallRecord, ToolCallRecorder};
use crate::result::ToolResult;

/// Runs every case, each against a fresh, empty store from `make` that both records
/// calls and reads them back.
///
/// Run it from a multi-threaded tokio runtime.
///
/// # Panics
/// When a case fails; the message names the case (`tool_call_log::<case>`).
pub async fn run<S>(make: impl Fn() -> Arc<S>)
where
    S: ToolCallRecorder + ToolCallLog + 'static,
{
    unknown_session_reads_empty(make()).await;
    reads_what_was_recorded_in_order(make()).await;
    acknowledged_records_are_read_without_a_flush(make()).await;
    sessions_never_mix(make()).await;
    reads_see_later_records(make()).await;
}

/// A record of call `id` of `session`: `tool`, decided by `approval`, at a fixed time.
fn record(session: &SessionId, id: &str, tool: &str, approval: Approval, took_micros: u64) -> ToolCallRecord {
    let call = ToolCall::new(id, tool, r#"{"path":"src/lib.rs","n":[1,2]}"#);
    let result = if approval.verdict == crate::ApprovalVerdict::Deny {
        ToolResult::error(id, format!("permission denied for {tool}"))
    } else {
        ToolResult::text(id, format!("result of {id}\nline 2 ü 🦀"))
    };
    ToolCallRecord::new(
        session,
        &call,
        &result,
        Duration::from_micros(7),
        Duration::from_micros(took_micros),
        UNIX_EPOCH + Duration::from_micros(1_767_323_045_123_456),
    )
    .with_approval(approval)
}

async fn write(store: &dyn ToolCallRecorder, records: &[ToolCallRecord], case: &str) {
    for record in records {
        let outcome = store.record(record).await;
        assert!(
            outcome.is_ok(),
            "tool_call_log::{case}: record failed: {outcome:?}"
        );
    }
}

async fn read<S: ToolCallLog + ?Sized>(store: &S, session: &SessionId, case: &str) -> Vec<ToolCallRecord> {
    match store.read(session).await {
        Ok(records) => records,
        Err(error) => panic!("tool_call_log::{case}: read of {session:?} failed: {error}"),
    }
}

async fn unknown_session_reads_empty<S: ToolCallRecorder + ToolCallLog>(store: Arc<S>) {
    let records = read(
        &*store,
        &SessionId::from("never-recorded"),
        "unknown_session_reads_empty",
    )
    .await;
    assert!(
        records.is_empty(),
        "tool_call_log::unknown_session_reads_empty: {records:?}"
    );
}

async fn reads_what_was_recorded_in_order<S: ToolCallRecorder + ToolCallLog>(store: Arc<S>) {
    const CASE: &str = "reads_what_was_recorded_in_order";
    let session = SessionId::from("sess-read");
    let approvals = [
        Approval::POLICY_ALLOW,
        Approval::user(Verdict::AllowOnce),
        Approval::user(Verdict::Deny),
        Approval::HOOK_DENY,
        Approval::user(Verdict::AllowAlways),
    ];
    let records: Vec<ToolCallRecord> = (0..25u64)
        .zip(approvals.iter().cycle())
        .map(|(i, approval)| {
            let tool = if i % 2 == 0 { "Read" } else { "Write" };
            record(&session, &format!("call-{i}"), tool, *approval, i * 100)
        })
        .collect();
    write(&*store, &records, CASE).await;
    assert_eq!(
        read(&*store, &session, CASE).await,
        records,
        "tool_call_log::{CASE}: every field, in order"
    );
}

async fn acknowledged_records_are_read_without_a_flush<S: ToolCallRecorder + ToolCallLog>(store: Arc<S>) {
    const CASE: &str = "acknowledged_records_are_read_without_a_flush";
    let session = SessionId::from("sess-buffered");
    let one = record(&session, "only", "Grep", Approval::POLICY_ALLOW, 3);
    write(&*store, std::slice::from_ref(&one), CASE).await;
    // No `flush`: a buffering recorder writes its buffer before the read.
    assert_eq!(
        read(&*store, &session, CASE).await,
        [one],
        "tool_call_log::{CASE}"
    );
}

async fn sessions_never_mix<S: ToolCallRecorder + ToolCallLog>(store: Arc<S>) {
    const CASE: &str = "sessions_never_mix";
    let lead = SessionId::from("team-abc/lead");
    let other = SessionId::from("team-abc/other");
    let mut expected_lead = Vec::new();
    let mut expected_other = Vec::new();
    for i in 0..10 {
        let (session, expected) = if i % 2 == 0 {
            (&lead, &mut expected_lead)
        } else {
            (&other, &mut expected_other)
        };
        let one = record(session, &format!("c{i}"), "Grep", Approval::POLICY_ALLOW, 1);
        write(&*store, std::slice::from_ref(&one), CASE).await;
        expected.push(one);
    }
    assert_eq!(
        read(&*store, &lead, CASE).await,
        expected_lead,
        "tool_call_log::{CASE}: lead"
    );
    assert_eq!(
        read(&*store, &other, CASE).await,
        expected_other,
        "tool_call_log::{CASE}: other"
    );
    assert!(
        read(&*store, &SessionId::from("team-abc"), CASE).await.is_empty(),
        "tool_call_log::{CASE}: a prefix id has no records"
    );
}

async fn reads_see_later_records<S: ToolCallRecorder + ToolCallLog>(store: Arc<S>) {
    const CASE: &str = "reads_see_later_records";
    let session = SessionId::from("sess-later");
    let first = record(&session, "first", "Read", Approval::POLICY_ALLOW, 1);
    write(&*store, std::slice::from_ref(&first), CASE).await;
    assert_eq!(
        read(&*store, &session, CASE).await,
        std::slice::from_ref(&first),
        "tool_call_log::{CASE}: the first read"
    );
    let second = record(&session, "second", "Write", Approval::user(Verdict::AllowOnce), 2);
    write(&*store, std::slice::from_ref(&second), CASE).await;
    assert_eq!(
        read(&*store, &session, CASE).await,
        [first, second],
        "tool_call_log::{CASE}: the second read"
    );
}
