//! The serialized forms other programs rely on: D11 events and audit records.

use std::time::{Duration, SystemTime};

use engine_ports::{
    Approval, ContentPart, ElicitationAction, Event, EventKind, HookAction, HookEvent, HookPhase,
    PermissionMode, SessionHookAction, SessionId, StopReason, ToolCall, ToolCallRecord, ToolResult, Usage,
    Verdict,
};

fn json(event: &Event) -> String {
    serde_json::to_string(event).unwrap()
}

#[test]
fn events_are_flat_json_tagged_by_type() {
    let call = Event {
        seq: 3,
        time: None,
        kind: EventKind::ToolCall {
            call_id: "c1".into(),
            name: "Read".to_owned(),
            args: serde_json::json!({"path": "README.md"}),
        },
    };
    assert_eq!(
        json(&call),
        r#"{"seq":3,"type":"tool.call","call_id":"c1","name":"Read","args":{"path":"README.md"}}"#
    );
    let result = Event {
        seq: 9,
        time: Some("2026-11-30T09:55:35.123456Z".to_owned()),
        kind: EventKind::Result {
            stop: StopReason::EndTurn,
            text: "done".to_owned(),
            usage: Usage::new(15, 5),
            turns: 2,
            tool_calls: 1,
            error: None,
        },
    };
    assert_eq!(
        json(&result),
        r#"{"seq":9,"time":"2026-11-30T09:55:35.123456Z","type":"result","stop":"end_turn","text":"done","usage":{"input_tokens":15,"output_tokens":5},"turns":2,"tool_calls":1}"#
    );
    let verdict = Event {
        seq: 4,
        time: None,
        kind: EventKind::PermissionVerdict {
            ask_id: "ask-1-1".to_owned(),
            call_id: "c1".into(),
            verdict: Verdict::AllowAlways,
            saved_rule: None,
            reason: None,
        },
    };
    assert_eq!(
        json(&verdict),
        r#"{"seq":4,"type":"permission.verdict","ask_id":"ask-1-1","call_id":"c1","verdict":"allow_always"}"#
    );
}

#[test]
fn every_event_kind_round_trips_and_unknown_types_fail() {
    let kinds = vec![
        EventKind::SessionInit {
            session_id: SessionId::from("team/lead"),
            mode: PermissionMode::Plan,
            model: "m".to_owned(),
            tools: vec!["Read".to_owned()],
            mcp_servers: Vec::new(),
            sandbox: None,
        },
        EventKind::TurnStart { turn: 1 },
        EventKind::MessageDelta {
            text: "hi".to_owned(),
        },
        EventKind::ReasoningDelta {
            text: "hm".to_owned(),
        },
        EventKind::TurnEnd {
            turn: 1,
            usage: Usage::new(1, 2),
        },
        EventKind::ToolCall {
            call_id: "c".into(),
            name: "Read".to_owned(),
            args: serde_json::json!({"n": 1.5, "big": 12345678901234_u64}),
        },
        EventKind::PermissionAsk {
            ask_id: "a".to_owned(),
            call_id: "c".into(),
            name: "Write".to_owned(),
            args: serde_json::json!("{raw"),
            reason: "mutates".to_owned(),
            suggested_rule: Some("Write".to_owned()),
        },
        EventKind::PermissionVerdict {
            ask_id: "a".to_owned(),
            call_id: "c".into(),
            verdict: Verdict::Deny,
            saved_rule: None,
            reason: None,
        },
        EventKind::ElicitationRequest {
            elicitation_id: "elicit-1-1-1".to_owned(),
            call_id: "c".into(),
            name: "mcp__py__ask_name".to_owned(),
            message: "What is your name?".to_owned(),
            requested_schema: serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        },
        EventKind::ElicitationResult {
            elicitation_id: "elicit-1-1-1".to_owned(),
            call_id: "c".into(),
            action: ElicitationAction::Decline,
            reason: Some("this run is headless".to_owned()),
        },
        EventKind::Hook {
            phase: HookPhase::PreToolUse,
            call_id: "c".into(),
            name: "Write".to_owned(),
            action: HookAction::RewriteArgs,
            message: "rewrote".to_owned(),
        },
        EventKind::SessionHook {
            event: HookEvent::UserPromptSubmit,
            hook: "./check-prompt.sh".to_owned(),
            action: SessionHookAction::Block,
            message: "no secrets in prompts".to_owned(),
        },
        EventKind::ToolResult {
            call_id: "c".into(),
            name: "Read".to_owned(),
            content: "text".to_owned(),
            is_error: false,
            parts: vec![ContentPart::Image {
                mime: "image/png".to_owned(),
                data: vec![137, 80, 78, 71],
            }],
        },
        EventKind::Result {
            stop: StopReason::Error,
            text: String::new(),
            usage: Usage::default(),
            turns: 0,
            tool_calls: 0,
            error: Some("boom".to_owned()),
        },
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        let event = Event {
            seq: i as u64 + 1,
            time: None,
            kind,
        };
        let text = json(&event);
        let back: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back, event, "{text}");
    }
    assert!(serde_json::from_str::<Event>(r#"{"seq":1,"type":"tool.invented"}"#).is_err());
}

#[test]
fn audit_records_keep_the_line_field_order() {
    let call = ToolCall::new("call-7", "Shell", "{\n \"command\": \"ls\"\n}");
    let result = ToolResult::text("call-7", "file.txt");
    let record = ToolCallRecord::new(
        &SessionId::from("sess-1"),
        &call,
        &result,
        Duration::from_micros(800),
        Duration::from_micros(1500),
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_032_535),
    );
    assert_eq!(
        serde_json::to_string(&record).unwrap(),
        r#"{"type":"tool_call","time":"2026-11-30T09:55:35.000000Z","session_id":"sess-1","call_id":"call-7","tool":"Shell","args":{"command":"ls"},"result":"file.txt","is_error":false,"queued_micros":800,"took_micros":1500}"#
    );
    let decided = record.clone().with_approval(Approval::user(Verdict::AllowAlways));
    let text = serde_json::to_string(&decided).unwrap();
    assert!(
        text.ends_with(r#""took_micros":1500,"approval":{"by":"user","verdict":"allow_always"}}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<ToolCallRecord>(&text).unwrap(), decided);
}

#[test]
fn audit_records_without_an_approval_still_read() {
    let old = r#"{"type":"tool_call","time":"2026-11-30T09:55:35.000000Z","session_id":"s","call_id":"c","tool":"Read","args":{},"result":"ok","is_error":false,"queued_micros":0,"took_micros":3}"#;
    let record: ToolCallRecord = serde_json::from_str(old).unwrap();
    assert_eq!(record.approval, None);
    for (by, verdict) in [("policy", "allow"), ("user", "allow_once"), ("hook", "deny")] {
        let line = old.replace(
            r#""took_micros":3}"#,
            &format!(r#""took_micros":3,"approval":{{"by":"{by}","verdict":"{verdict}"}}}}"#),
        );
        let record: ToolCallRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(serde_json::to_value(record.approval.unwrap()).unwrap()["by"], by);
    }
}

#[test]
fn delegation_events_carry_the_child_id_and_round_trip() {
    let start = Event {
        seq: 6,
        time: None,
        kind: EventKind::SubagentStart {
            call_id: "c1".into(),
            child_id: SessionId::from("subagent-s-c1"),
            description: "find todos".to_owned(),
            background: false,
            preview: "FIND-TODOS".to_owned(),
        },
    };
    assert_eq!(
        json(&start),
        r#"{"seq":6,"type":"subagent.start","call_id":"c1","child_id":"subagent-s-c1","description":"find todos","background":false,"preview":"FIND-TODOS"}"#
    );
    let branch = Event {
        seq: 7,
        time: None,
        kind: EventKind::ParallelBranch {
            call_id: "c2".into(),
            child_id: SessionId::from("parallel-s-c2-1"),
            index: 1,
            activity: engine_ports::ChildActivity::tool("Read".to_owned(), "{}".to_owned()),
        },
    };
    assert_eq!(
        json(&branch),
        r#"{"seq":7,"type":"parallel.branch","call_id":"c2","child_id":"parallel-s-c2-1","index":1,"phase":"tool","name":"Read","preview":"{}"}"#
    );
    let member = Event {
        seq: 8,
        time: None,
        kind: EventKind::TeamMember {
            call_id: "c3".into(),
            child_id: SessionId::from("team-s-c3-scout"),
            member: "scout".to_owned(),
            round: 2,
            activity: engine_ports::ChildActivity::started_or_ended(
                engine_ports::ChildPhase::End,
                Some("end_turn".to_owned()),
                "found it".to_owned(),
            ),
        },
    };
    assert_eq!(
        json(&member),
        r#"{"seq":8,"type":"team.member","call_id":"c3","child_id":"team-s-c3-scout","member":"scout","round":2,"phase":"end","stop":"end_turn","preview":"found it"}"#
    );
    for event in [start, branch, member] {
        let back: Event = serde_json::from_str(&json(&event)).unwrap();
        assert_eq!(back, event);
    }
}

#[test]
fn a_rules_decision_keeps_the_rule_and_its_file_beside_the_approval() {
    let call = ToolCall::new("c", "Shell", r#"{"command":"rm -rf build"}"#);
    let record = ToolCallRecord::new(
        &SessionId::from("s"),
        &call,
        &ToolResult::error("c", "permission denied"),
        Duration::ZERO,
        Duration::ZERO,
        SystemTime::UNIX_EPOCH,
    )
    .with_approval(Approval::RULE_DENY)
    .with_provenance(Some(engine_ports::Provenance {
        rule: Some("Bash(rm:*)".to_owned()),
        source: Some("/etc/mecatl/managed-settings.json".to_owned()),
        ..engine_ports::Provenance::default()
    }));
    let text = serde_json::to_string(&record).unwrap();
    assert!(
        text.ends_with(
            r#""approval":{"by":"rule","verdict":"deny"},"provenance":{"rule":"Bash(rm:*)","source":"/etc/mecatl/managed-settings.json"}}"#
        ),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<ToolCallRecord>(&text).unwrap(), record);
    let mode = serde_json::to_value(Approval::MODE_DENY).unwrap();
    assert_eq!(mode, serde_json::json!({"by": "mode", "verdict": "deny"}));
}
