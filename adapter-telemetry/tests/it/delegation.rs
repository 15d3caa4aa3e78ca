//! A delegation call's children join the parent's trace under the call's span.

use std::time::Duration;

use adapter_telemetry::{Protocol, Telemetry};
use engine_ports::{
    ChildActivity, ChildPhase, Event, EventKind, PermissionMode, SessionId, StopReason, ToolCallId, Usage,
};

use crate::receiver::http_receiver;
use crate::support::options;

fn event(kind: EventKind) -> Event {
    Event {
        seq: 0,
        time: None,
        kind,
    }
}

fn init(session: &str) -> EventKind {
    EventKind::SessionInit {
        session_id: SessionId::from(session),
        mode: PermissionMode::Default,
        model: "mock".to_owned(),
        tools: Vec::new(),
        mcp_servers: Vec::new(),
        sandbox: None,
    }
}

fn result() -> EventKind {
    EventKind::Result {
        stop: StopReason::EndTurn,
        text: String::new(),
        usage: Usage::default(),
        turns: 1,
        tool_calls: 0,
        error: None,
    }
}

fn call(id: &str, name: &str) -> EventKind {
    EventKind::ToolCall {
        call_id: ToolCallId::from(id),
        name: name.to_owned(),
        args: serde_json::json!({}),
    }
}

fn answer(id: &str, name: &str) -> EventKind {
    EventKind::ToolResult {
        call_id: ToolCallId::from(id),
        name: name.to_owned(),
        content: "done".to_owned(),
        is_error: false,
        parts: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_of_delegation_calls_join_the_parents_trace_under_the_call() {
    let (addr, received) = http_receiver().await;
    let telemetry = Telemetry::start(options(addr, Protocol::HttpProtobuf, false))
        .unwrap()
        .unwrap();
    let sink = telemetry.sink();
    let parent = SessionId::from("parent");
    let emit = |session: &SessionId, kind: EventKind| sink.emit(session, &event(kind));
    emit(&parent, init("parent"));
    // A subagent.
    emit(&parent, call("c1", "Subagent"));
    emit(
        &parent,
        EventKind::SubagentStart {
            call_id: ToolCallId::from("c1"),
            child_id: SessionId::from("kid"),
            description: "look".to_owned(),
            background: false,
            preview: "a secret task".to_owned(),
        },
    );
    let kid = SessionId::from("kid");
    emit(&kid, init("kid"));
    emit(&kid, call("k1", "Read"));
    emit(&kid, answer("k1", "Read"));
    emit(&kid, result());
    emit(&parent, answer("c1", "Subagent"));
    // A Parallel branch.
    emit(&parent, call("c2", "Parallel"));
    emit(
        &parent,
        EventKind::ParallelBranch {
            call_id: ToolCallId::from("c2"),
            child_id: SessionId::from("c2-0"),
            index: 0,
            activity: ChildActivity::started_or_ended(ChildPhase::Start, None, "branch".to_owned()),
        },
    );
    let branch = SessionId::from("c2-0");
    emit(&branch, init("c2-0"));
    emit(&branch, result());
    emit(&parent, answer("c2", "Parallel"));
    // A background subagent: its call returns before the child's run starts.
    emit(&parent, call("c3", "Subagent"));
    emit(
        &parent,
        EventKind::SubagentStart {
            call_id: ToolCallId::from("c3"),
            child_id: SessionId::from("bg"),
            description: "later".to_owned(),
            background: true,
            preview: String::new(),
        },
    );
    emit(&parent, answer("c3", "Subagent"));
    let background = SessionId::from("bg");
    emit(&background, init("bg"));
    emit(&background, result());
    emit(&parent, result());
    telemetry.shutdown(Duration::from_secs(10)).await;
    received.wait_for("eight spans", |r| r.spans().len() >= 8).await;

    let spans = received.spans();
    let find = |name: &str, session: &str| {
        spans
            .iter()
            .find(|s| {
                s.name == name
                    && s.attributes.get("gen_ai.conversation.id").map(String::as_str) == Some(session)
            })
            .unwrap_or_else(|| panic!("no {name} of {session}"))
    };
    let by_name = |name: &str| spans.iter().find(|s| s.name == name).unwrap();
    let root = find("invoke_agent mecatl", "parent");
    let subagent = spans
        .iter()
        .find(|s| {
            s.name == "execute_tool Subagent"
                && s.attributes.get("gen_ai.tool.call.id").map(String::as_str) == Some("c1")
        })
        .unwrap();
    let background_call = spans
        .iter()
        .find(|s| s.attributes.get("gen_ai.tool.call.id").map(String::as_str) == Some("c3"))
        .unwrap();
    let parallel = by_name("execute_tool Parallel");
    let kid_run = find("invoke_agent mecatl-child", "kid");
    let branch_run = find("invoke_agent mecatl-child", "c2-0");
    assert_eq!(kid_run.parent_span_id, subagent.span_id);
    assert_eq!(branch_run.parent_span_id, parallel.span_id);
    assert_eq!(
        find("invoke_agent mecatl-child", "bg").parent_span_id,
        background_call.span_id,
        "a background child joins its call's span after the call returned"
    );
    assert_eq!(by_name("execute_tool Read").parent_span_id, kid_run.span_id);
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id), "one trace");
    assert!(subagent.events.contains(&"subagent.start".to_owned()));
    assert!(
        !received.all_span_text().contains("a secret task"),
        "previews are content"
    );
}
