//! The `.tools.jsonl` audit lines.

use std::time::Duration;

use adapter_jsonlstore::StoreOptions;
use engine_ports::{EventKind, EventLog, ToolCall, ToolCallRecorder, ToolResult};

use crate::support::{self, allowed_record, open, open_with, sid, tool_call_event};

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_records_give_two_lines_with_every_field() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-1");
    let shell = ToolCall::new("call-7", "Shell", r#"{"command":"ls"}"#);
    store
        .record(
            &engine_ports::ToolCallRecord::new(
                &id,
                &shell,
                &ToolResult::text("call-7", "file.txt"),
                Duration::from_micros(800),
                Duration::from_micros(1500),
                std::time::SystemTime::now(),
            )
            .with_approval(engine_ports::Approval::POLICY_ALLOW),
        )
        .await
        .unwrap();
    let read = ToolCall::new("call-8", "Read", r#"{"path":"x"}"#);
    store
        .record(
            &engine_ports::ToolCallRecord::new(
                &id,
                &read,
                &ToolResult::error("call-8", "nope"),
                Duration::ZERO,
                Duration::from_micros(42),
                std::time::SystemTime::now(),
            )
            .with_approval(engine_ports::Approval::user(engine_ports::Verdict::Deny)),
        )
        .await
        .unwrap();
    let path = store.paths(&id).tools;
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with(r#"{"type":"tool_call","time":""#), "{first}");
    let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(first)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "type",
            "time",
            "session_id",
            "call_id",
            "tool",
            "args",
            "result",
            "is_error",
            "queued_micros",
            "took_micros",
            "approval"
        ]
    );
    let records = lines(&path);
    let line1 = &records[0];
    assert_eq!(line1["type"], "tool_call");
    assert_eq!(line1["session_id"], "sess-1");
    assert_eq!(line1["tool"], "Shell");
    assert_eq!(line1["call_id"], "call-7");
    assert_eq!(line1["result"], "file.txt");
    assert_eq!(line1["is_error"], false);
    assert_eq!(line1["queued_micros"], 800);
    assert_eq!(line1["took_micros"], 1500);
    assert_eq!(line1["args"], serde_json::json!({"command": "ls"}));
    assert!(humantime::parse_rfc3339(line1["time"].as_str().unwrap()).is_ok());
    assert_eq!(records[1]["is_error"], true);
    assert_eq!(records[1]["result"], "nope");
    assert_eq!(records[1]["took_micros"], 42);
    assert_eq!(
        line1["approval"],
        serde_json::json!({"by": "policy", "verdict": "allow"})
    );
    assert_eq!(
        records[1]["approval"],
        serde_json::json!({"by": "user", "verdict": "deny"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn args_are_embedded_compactly_and_equal_the_tool_call_event() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-args");
    let calls = [
        ToolCall::new("a", "Edit", "{\n  \"z\": 1,\n  \"a\": [true, null, 1.50]\n}"),
        ToolCall::new("b", "Edit", "{not json"),
        ToolCall::new("c", "Edit", ""),
    ];
    for (i, call) in calls.iter().enumerate() {
        store
            .record(
                &engine_ports::ToolCallRecord::new(
                    &id,
                    call,
                    &ToolResult::text(call.id().clone(), "ok"),
                    Duration::ZERO,
                    Duration::ZERO,
                    std::time::SystemTime::now(),
                )
                .with_approval(engine_ports::Approval::POLICY_ALLOW),
            )
            .await
            .unwrap();
        store
            .append(&id, &tool_call_event(i as u64 + 1, call))
            .await
            .unwrap();
    }
    let text = std::fs::read_to_string(store.paths(&id).tools).unwrap();
    let raw: Vec<&str> = text.lines().collect();
    assert_eq!(raw.len(), 3, "pretty-printed args still give one line each");
    assert!(
        raw[0].contains(r#""args":{"z":1,"a":[true,null,1.5]}"#),
        "{}",
        raw[0]
    );
    assert!(raw[1].contains(r#""args":"{not json""#), "{}", raw[1]);
    assert!(raw[2].contains(r#""args":{}"#), "{}", raw[2]);
    let records: Vec<_> = store
        .read_tool_calls(&id)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let events = store.read(&id).await.unwrap();
    for ((record, call), event) in records.iter().zip(&calls).zip(&events) {
        assert_eq!(record.args, call.args_value(), "{}", call.id());
        let EventKind::ToolCall { args, .. } = &event.kind else {
            panic!("not a tool.call event");
        };
        assert_eq!(&record.args, args, "{}", call.id());
    }
    let keys: Vec<&String> = records[0].args.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["z", "a"], "key order preserved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_record_is_dropped_and_counted() {
    let dir = support::tempdir();
    let store = open_with(
        dir.path(),
        StoreOptions {
            max_record_bytes: 512,
            ..StoreOptions::default()
        },
    );
    let id = sid("sess-huge-record");
    let call = ToolCall::new("c1", "Read", "{}");
    let error = store
        .record(&allowed_record(&id, &call, "x".repeat(1000)))
        .await
        .unwrap_err();
    let text = error.to_string();
    for needle in ["sess-huge-record", "c1", "Read", "512"] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
    assert_eq!(store.dropped_records(), 1);
    assert!(!store.paths(&id).tools.exists(), "refused before any I/O");
    store.record(&allowed_record(&id, &call, "ok")).await.unwrap();
    assert_eq!(store.dropped_records(), 1);
}
