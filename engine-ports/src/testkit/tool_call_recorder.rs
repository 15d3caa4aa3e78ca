//! Conformance suite for [`ToolCallRecorder`] implementations.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::call::ToolCall;
use crate::event::Verdict;
use crate::ids::SessionId;
use crate::permission::{Approval, ApprovalVerdict, Decider};
use crate::recorder::{Caller, ToolCallRecord, ToolCallRecorder};
use crate::result::ToolResult;

/// Reads every record of a session back, in the order written.
pub type ReadBack = Box<dyn Fn(&SessionId) -> Vec<ToolCallRecord> + Send + Sync>;

/// A recorder under test plus a way to read its records back.
pub struct RecorderUnderTest {
    /// The recorder.
    pub recorder: Arc<dyn ToolCallRecorder>,
    /// Every record of a session, in the order written.
    pub read_back: ReadBack,
}

/// Runs every recorder case, each against a fresh recorder from `make`.
///
/// # Panics
/// When a case fails; the message names the case.
pub async fn run(make: impl Fn() -> RecorderUnderTest) {
    fields_and_units(make()).await;
    error_results_keep_is_error(make()).await;
    args_follow_args_value(make()).await;
    order_is_kept(make()).await;
    sessions_never_mix(make()).await;
    results_keep_their_text(make()).await;
    long_and_path_like_session_ids(make()).await;
    approvals_are_kept(make()).await;
    records_are_written_as_given(make()).await;
}

/// The time every record of the suite was built at: 2026-01-02T03:04:05.123456Z.
fn record_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(1_767_323_045_123_456)
}

/// The record of one allowed `Read` call with an 800-byte result (about 1 KiB as a
/// line), built as the dispatcher builds each call's record: what the recorder
/// benches of every store write, so they measure the same work.
pub fn read_call_record(session: &SessionId) -> ToolCallRecord {
    let call = ToolCall::new("call-1", "Read", r#"{"path":"src/lib.rs"}"#);
    let result = ToolResult::text("call-1", "r".repeat(800));
    ToolCallRecord::new(
        session,
        &call,
        &result,
        Duration::ZERO,
        Duration::ZERO,
        SystemTime::now(),
    )
    .with_approval(Approval::POLICY_ALLOW)
}

/// The record the engine would build for `call` of `session`.
fn record_of(
    session: &SessionId,
    call: &ToolCall,
    result: &ToolResult,
    approval: Approval,
    (queued, took): (Duration, Duration),
) -> ToolCallRecord {
    ToolCallRecord::new(session, call, result, queued, took, record_time()).with_approval(approval)
}

/// Checks that a recorder whose backing write fails returns an error (naming the
/// session, call and tool) and does not panic.
///
/// # Panics
/// When the recorder reports success or the error lacks a name.
pub async fn run_failing(recorder: Arc<dyn ToolCallRecorder>) {
    let session = SessionId::from("sess-fail");
    let call = ToolCall::new("call-9", "Write", r#"{"path":"x"}"#);
    let result = ToolResult::text("call-9", "ok");
    let record = record_of(
        &session,
        &call,
        &result,
        Approval::POLICY_ALLOW,
        (Duration::ZERO, Duration::ZERO),
    );
    let outcome = recorder.record(&record).await;
    let Err(error) = outcome else {
        panic!("tool_call_recorder::failing_write_is_an_error: the record was accepted");
    };
    let text = error.to_string();
    for needle in ["sess-fail", "call-9", "Write"] {
        assert!(
            text.contains(needle),
            "tool_call_recorder::failing_write_is_an_error: {text:?} does not name {needle}"
        );
    }
}

async fn record(
    sut: &RecorderUnderTest,
    session: &str,
    call: &ToolCall,
    result: &ToolResult,
    queued_micros: u64,
    took_micros: u64,
) {
    let record = record_of(
        &SessionId::from(session),
        call,
        result,
        Approval::POLICY_ALLOW,
        (
            Duration::from_micros(queued_micros),
            Duration::from_micros(took_micros),
        ),
    );
    let outcome = sut.recorder.record(&record).await;
    assert!(outcome.is_ok(), "tool_call_recorder: record failed: {outcome:?}");
}

async fn fields_and_units(sut: RecorderUnderTest) {
    let call = ToolCall::new("call-7", "Shell", r#"{"command":"ls"}"#);
    record(
        &sut,
        "sess-1",
        &call,
        &ToolResult::text("call-7", "file.txt"),
        800,
        1500,
    )
    .await;
    let records = (sut.read_back)(&SessionId::from("sess-1"));
    assert_eq!(
        records.len(),
        1,
        "tool_call_recorder::fields_and_units: one record"
    );
    let r = &records[0];
    assert_eq!(
        r.record_type, "tool_call",
        "tool_call_recorder::fields_and_units: type"
    );
    assert_eq!(
        r.session_id, "sess-1",
        "tool_call_recorder::fields_and_units: session_id"
    );
    assert_eq!(
        r.call_id, "call-7",
        "tool_call_recorder::fields_and_units: call_id"
    );
    assert_eq!(r.tool, "Shell", "tool_call_recorder::fields_and_units: tool");
    assert_eq!(
        r.args,
        serde_json::json!({"command": "ls"}),
        "tool_call_recorder::fields_and_units: args is the object"
    );
    assert_eq!(
        r.result, "file.txt",
        "tool_call_recorder::fields_and_units: result"
    );
    assert!(!r.is_error, "tool_call_recorder::fields_and_units: is_error");
    assert_eq!(
        r.queued_micros, 800,
        "tool_call_recorder::fields_and_units: queued_micros"
    );
    assert_eq!(
        r.took_micros, 1500,
        "tool_call_recorder::fields_and_units: took_micros"
    );
    assert!(
        humantime::parse_rfc3339(&r.time).is_ok(),
        "tool_call_recorder::fields_and_units: time {:?} is RFC 3339",
        r.time
    );
}

async fn error_results_keep_is_error(sut: RecorderUnderTest) {
    let call = ToolCall::new("call-8", "Read", r#"{"path":"nope"}"#);
    record(&sut, "sess-1", &call, &ToolResult::error("call-8", "nope"), 0, 42).await;
    let records = (sut.read_back)(&SessionId::from("sess-1"));
    assert_eq!(
        records.len(),
        1,
        "tool_call_recorder::error_results_keep_is_error"
    );
    assert!(
        records[0].is_error,
        "tool_call_recorder::error_results_keep_is_error"
    );
    assert_eq!(
        records[0].result, "nope",
        "tool_call_recorder::error_results_keep_is_error"
    );
    assert_eq!(
        records[0].took_micros, 42,
        "tool_call_recorder::error_results_keep_is_error"
    );
}

async fn args_follow_args_value(sut: RecorderUnderTest) {
    let calls = [
        ToolCall::new("a", "Edit", "{\n  \"z\": 1,\n  \"a\": [true, null]\n}"),
        ToolCall::new("b", "Edit", "{not json"),
        ToolCall::new("c", "Edit", ""),
    ];
    for call in &calls {
        record(
            &sut,
            "sess-args",
            call,
            &ToolResult::text(call.id().clone(), "ok"),
            0,
            0,
        )
        .await;
    }
    let records = (sut.read_back)(&SessionId::from("sess-args"));
    assert_eq!(records.len(), 3, "tool_call_recorder::args_follow_args_value");
    for (record, call) in records.iter().zip(&calls) {
        assert_eq!(
            record.args,
            call.args_value(),
            "tool_call_recorder::args_follow_args_value: call {}",
            call.id()
        );
    }
    let keys: Vec<&String> = records[0]
        .args
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        ["z", "a"],
        "tool_call_recorder::args_follow_args_value: key order"
    );
}

async fn order_is_kept(sut: RecorderUnderTest) {
    for i in 0..20 {
        let id = format!("call-{i}");
        let call = ToolCall::new(id.as_str(), "Read", "{}");
        record(
            &sut,
            "sess-order",
            &call,
            &ToolResult::text(id.as_str(), "ok"),
            0,
            0,
        )
        .await;
    }
    let ids: Vec<String> = (sut.read_back)(&SessionId::from("sess-order"))
        .into_iter()
        .map(|r| r.call_id.to_string())
        .collect();
    let expected: Vec<String> = (0..20).map(|i| format!("call-{i}")).collect();
    assert_eq!(ids, expected, "tool_call_recorder::order_is_kept");
}

async fn sessions_never_mix(sut: RecorderUnderTest) {
    for i in 0..10 {
        let session = if i % 2 == 0 {
            "team-abc/lead"
        } else {
            "team-abc/other"
        };
        let id = format!("c{i}");
        let call = ToolCall::new(id.as_str(), "Grep", "{}");
        record(&sut, session, &call, &ToolResult::text(id.as_str(), "ok"), 0, 0).await;
    }
    let lead: Vec<String> = (sut.read_back)(&SessionId::from("team-abc/lead"))
        .into_iter()
        .map(|r| r.call_id.to_string())
        .collect();
    let other: Vec<String> = (sut.read_back)(&SessionId::from("team-abc/other"))
        .into_iter()
        .map(|r| r.call_id.to_string())
        .collect();
    assert_eq!(
        lead,
        ["c0", "c2", "c4", "c6", "c8"],
        "tool_call_recorder::sessions_never_mix"
    );
    assert_eq!(
        other,
        ["c1", "c3", "c5", "c7", "c9"],
        "tool_call_recorder::sessions_never_mix"
    );
    assert!(
        (sut.read_back)(&SessionId::from("team-abc")).is_empty(),
        "tool_call_recorder::sessions_never_mix: a prefix id has no records"
    );
}

async fn results_keep_their_text(sut: RecorderUnderTest) {
    let text = "line 1\nline 2\r\n\t\"quoted\" \\ ünïcode 🦀 \u{0}";
    let call = ToolCall::new("call-txt", "Read", r#"{"path":"a.txt"}"#);
    record(
        &sut,
        "sess-text",
        &call,
        &ToolResult::text("call-txt", text),
        1,
        2,
    )
    .await;
    let records = (sut.read_back)(&SessionId::from("sess-text"));
    assert_eq!(records.len(), 1, "tool_call_recorder::results_keep_their_text");
    assert_eq!(
        records[0].result, text,
        "tool_call_recorder::results_keep_their_text: result text"
    );
}

async fn long_and_path_like_session_ids(sut: RecorderUnderTest) {
    let ids = [
        "../escape/../x".to_owned(),
        "ééé".to_owned(),
        format!("long-{}", "x/".repeat(600)),
    ];
    for (i, id) in ids.iter().enumerate() {
        let call_id = format!("c{i}");
        let call = ToolCall::new(call_id.as_str(), "Grep", "{}");
        record(&sut, id, &call, &ToolResult::text(call_id.as_str(), "ok"), 0, 0).await;
    }
    for (i, id) in ids.iter().enumerate() {
        let records = (sut.read_back)(&SessionId::from(id.as_str()));
        let call_ids: Vec<String> = records.iter().map(|r| r.call_id.to_string()).collect();
        assert_eq!(
            call_ids,
            [format!("c{i}")],
            "tool_call_recorder::long_and_path_like_session_ids: {} bytes",
            id.len()
        );
        assert_eq!(
            records[0].session_id,
            id.as_str(),
            "tool_call_recorder::long_and_path_like_session_ids: session_id"
        );
    }
}

async fn approvals_are_kept(sut: RecorderUnderTest) {
    let session = SessionId::from("sess-approval");
    let cases = [
        ("p", Approval::POLICY_ALLOW, ToolResult::text("p", "ok")),
        (
            "u",
            Approval::user(Verdict::AllowOnce),
            ToolResult::text("u", "ok"),
        ),
        (
            "d",
            Approval::user(Verdict::Deny),
            ToolResult::error("d", "permission denied for Write: the operator denied it"),
        ),
        (
            "h",
            Approval::HOOK_DENY,
            ToolResult::error("h", "call to Write was blocked by a hook: no"),
        ),
    ];
    for (id, approval, result) in &cases {
        let call = ToolCall::new(*id, "Write", "{}");
        let record = record_of(
            &session,
            &call,
            result,
            *approval,
            (Duration::ZERO, Duration::ZERO),
        );
        let outcome = sut.recorder.record(&record).await;
        assert!(
            outcome.is_ok(),
            "tool_call_recorder::approvals_are_kept: {outcome:?}"
        );
    }
    // A rule's refusal keeps the rule and its file, verbatim.
    let ruled = ToolCall::new("r", "Shell", r#"{"command":"rm -rf build"}"#);
    let provenance = crate::Provenance {
        rule: Some("Bash(rm:*)".to_owned()),
        source: Some("/etc/mecatl/managed-settings.json".to_owned()),
        ..crate::Provenance::default()
    };
    let record = record_of(
        &session,
        &ruled,
        &ToolResult::error("r", "permission denied for Shell: denied by rule Bash(rm:*)"),
        Approval::RULE_DENY,
        (Duration::ZERO, Duration::ZERO),
    )
    .with_provenance(Some(provenance.clone()));
    let outcome = sut.recorder.record(&record).await;
    assert!(
        outcome.is_ok(),
        "tool_call_recorder::approvals_are_kept: {outcome:?}"
    );
    let records = (sut.read_back)(&session);
    assert_eq!(
        records.get(cases.len()).and_then(|r| r.provenance.clone()),
        Some(provenance),
        "tool_call_recorder::approvals_are_kept: a rule's provenance"
    );
    let records = &records[..cases.len()];
    let kept: Vec<Option<Approval>> = records.iter().map(|r| r.approval).collect();
    let expected: Vec<Option<Approval>> = cases.iter().map(|(_, a, _)| Some(*a)).collect();
    assert_eq!(kept, expected, "tool_call_recorder::approvals_are_kept");
    assert_eq!(
        records[2].approval.map(|a| (a.by, a.verdict)),
        Some((Decider::User, ApprovalVerdict::Deny)),
        "tool_call_recorder::approvals_are_kept: a user's denial"
    );
    assert!(
        records[2].is_error && records[3].is_error,
        "tool_call_recorder::approvals_are_kept: refusals are error results"
    );
}

async fn records_are_written_as_given(sut: RecorderUnderTest) {
    let session = SessionId::from("sess-given");
    let call = ToolCall::new("call-g", "Write", r#"{"path":"a","n":[1,2]}"#);
    let record = record_of(
        &session,
        &call,
        &ToolResult::text("call-g", "written"),
        Approval::user(Verdict::AllowAlways),
        (Duration::from_micros(3), Duration::from_micros(4)),
    )
    .with_caller(Some(Caller {
        surface: "mcp-http".to_owned(),
        client: Some("claude-code/2.1".to_owned()),
        subject: Some("token:sha256:0123456789abcdef".to_owned()),
    }));
    let outcome = sut.recorder.record(&record).await;
    assert!(
        outcome.is_ok(),
        "tool_call_recorder::records_are_written_as_given: {outcome:?}"
    );
    let records = (sut.read_back)(&session);
    assert_eq!(
        records.first().map(|r| r.time.as_str()),
        Some("2026-01-02T03:04:05.123456Z"),
        "tool_call_recorder::records_are_written_as_given: the time is the record's, not the recorder's"
    );
    assert_eq!(
        records,
        [record],
        "tool_call_recorder::records_are_written_as_given: every field"
    );
}
