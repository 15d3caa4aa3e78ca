//! D6: wire names match the providers' rule, calls to wire names reach
//! the real tool, history is re-encoded, collisions fail naming both names, and the
//! engine's events and audit records only ever show real names.

use std::sync::Arc;

use adapter_llm::{AnthropicProvider, OpenAiChatProvider, wire_name};
use async_trait::async_trait;
use engine_core::{Catalog, Deps, Engine, Environment, Tool, ToolError};
use engine_ports::testkit::MemoryRecorder;
use engine_ports::{
    CancellationToken, EventKind, LlmError, LlmProvider, LlmRequest, Message, SessionId, StopReason,
    ToolCall, ToolResult, ToolSpec,
};
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::support::fixture::{FixtureServer, Reply, data, event};
use crate::support::{FakeLlm, calls, collect, config};

const DOTTED: &str = "mcp__files__read.file/v2";

fn long_name() -> String {
    format!("mcp__longserver__{}", "x".repeat(83))
}

fn matches_wire_rule(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn d6_request() -> LlmRequest {
    let long = long_name();
    assert_eq!(long.len(), 100);
    LlmRequest {
        model: String::new(),
        system: String::new(),
        messages: vec![
            Message::User {
                text: "read the notes".to_owned(),
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::new("old", long.as_str(), "{}")],
            },
            Message::Tool {
                result: ToolResult::text("old", "earlier"),
            },
        ]
        .into(),
        tools: [DOTTED, long.as_str(), "Read"]
            .iter()
            .map(|name| ToolSpec::new(*name, "a tool"))
            .collect(),
        ..LlmRequest::default()
    }
}

fn openai_call(name: &str) -> Reply {
    Reply::sse([
        data(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}
        ]}, "finish_reason": null}]})),
        data(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 1, "id": "c2", "type": "function", "function": {"name": "not_a_tool", "arguments": "{}"}}
        ]}, "finish_reason": "tool_calls"}]})),
        "data: [DONE]\n\n".to_owned(),
    ])
}

fn anthropic_call(name: &str) -> Reply {
    Reply::sse([
        event(
            &json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ),
        event(&json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "c1", "name": name, "input": {}}})),
        event(&json!({"type": "content_block_stop", "index": 0})),
        event(&json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "c2", "name": "not_a_tool", "input": {}}})),
        event(&json!({"type": "content_block_stop", "index": 1})),
        event(
            &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 2}}),
        ),
        event(&json!({"type": "message_stop"})),
    ])
}

fn names_at(body: &Value, pointer_list: &[&str]) -> Vec<String> {
    pointer_list
        .iter()
        .map(|p| {
            body.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn assert_calls_decoded(calls: &[ToolCall]) {
    let names: Vec<&str> = calls.iter().map(ToolCall::name).collect();
    assert_eq!(names, [DOTTED, "not_a_tool"]);
}

#[tokio::test]
async fn openai_wire_names_and_decoding() {
    let dotted_wire = wire_name(DOTTED).into_owned();
    let server = FixtureServer::start(vec![openai_call(&dotted_wire)]).await;
    let provider = OpenAiChatProvider::new(config(format!("{}/v1", server.root()))).unwrap();
    let items = collect(&provider, d6_request()).await.unwrap();
    assert_calls_decoded(&calls(&items));

    let body = &server.requests()[0].body;
    let sent = names_at(
        body,
        &[
            "/tools/0/function/name",
            "/tools/1/function/name",
            "/tools/2/function/name",
            "/messages/1/tool_calls/0/function/name",
        ],
    );
    assert!(sent.iter().all(|n| matches_wire_rule(n)), "{sent:?}");
    assert_eq!(sent[0], dotted_wire);
    assert_eq!(sent[1], wire_name(&long_name()));
    assert_eq!(sent[2], "Read");
    assert_eq!(sent[3], sent[1], "history is re-encoded with the same function");
}

#[tokio::test]
async fn anthropic_wire_names_and_decoding() {
    let dotted_wire = wire_name(DOTTED).into_owned();
    let server = FixtureServer::start(vec![anthropic_call(&dotted_wire)]).await;
    let provider = AnthropicProvider::new(config(server.root())).unwrap();
    let items = collect(&provider, d6_request()).await.unwrap();
    assert_calls_decoded(&calls(&items));

    let body = &server.requests()[0].body;
    let sent = names_at(
        body,
        &[
            "/tools/0/name",
            "/tools/1/name",
            "/tools/2/name",
            "/messages/1/content/0/name",
        ],
    );
    assert!(sent.iter().all(|n| matches_wire_rule(n)), "{sent:?}");
    assert_eq!(sent[0], dotted_wire);
    assert_eq!(sent[3], sent[1]);
}

#[tokio::test]
async fn a_collision_fails_the_request_naming_both() {
    let dotted_wire = wire_name(DOTTED).into_owned();
    let server = FixtureServer::start(vec![]).await;
    let providers: Vec<Arc<dyn LlmProvider>> = vec![
        Arc::new(OpenAiChatProvider::new(config(format!("{}/v1", server.root()))).unwrap()),
        Arc::new(AnthropicProvider::new(config(server.root())).unwrap()),
    ];
    for provider in providers {
        let request = LlmRequest {
            tools: vec![
                ToolSpec::new(DOTTED, "real"),
                ToolSpec::new(dotted_wire.as_str(), "look-alike"),
            ],
            ..d6_request()
        };
        let error = provider
            .stream(request, CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert!(matches!(error, LlmError::Config { .. }), "{error}");
        let text = error.to_string();
        assert!(text.contains(DOTTED) && text.contains(&dotted_wire), "{text}");
    }
    assert!(server.requests().is_empty(), "nothing was sent");
}

/// A read-only tool that answers with its own name.
struct NamedTool(String);

#[async_trait]
impl Tool for NamedTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.0.as_str(), "reads a file").with_schema(json!({
            "type": "object", "properties": {"path": {"type": "string"}}
        }))
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
        Ok(ToolResult::text(
            call.id().clone(),
            format!("{} read {}", self.0, call.args()),
        ))
    }
}

#[tokio::test]
async fn the_engine_sees_only_real_names_against_fakellm() {
    let Some(fakellm) = FakeLlm::start("the_engine_sees_only_real_names_against_fakellm", "d6.yaml") else {
        return;
    };
    // The committed rule names the wire form; keep it in step with the function.
    assert_eq!(wire_name(DOTTED), "mcp__files__read_file_v2_e9a5033c");

    let mut catalog = Catalog::new();
    catalog.must_register(Arc::new(NamedTool(DOTTED.to_owned())));
    catalog.must_register(Arc::new(NamedTool(long_name())));
    let workspace = tempfile::tempdir().unwrap();
    let provider = Arc::new(OpenAiChatProvider::new(config(fakellm.v1())).unwrap());
    let recorder = Arc::new(MemoryRecorder::new());
    let mut deps = Deps::new(
        provider,
        Arc::new(catalog),
        Environment::new(workspace.path()).unwrap(),
    );
    deps.recorder = Some(recorder.clone());
    let engine = Engine::new(deps).unwrap();
    let session = SessionId::from("d6");
    let events: Vec<_> = engine.run(&session, "read the notes").unwrap().collect().await;

    let tool_events: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { name, .. } => Some(("call".to_owned(), name.clone())),
            EventKind::ToolResult {
                name,
                is_error,
                content,
                ..
            } => {
                assert!(!is_error, "{content}");
                Some(("result".to_owned(), name.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        tool_events,
        [
            ("call".to_owned(), DOTTED.to_owned()),
            ("result".to_owned(), DOTTED.to_owned())
        ],
        "{events:?}"
    );
    let Some(EventKind::Result { stop, text, .. }) = events.last().map(|e| &e.kind) else {
        panic!("no result: {events:?}");
    };
    assert_eq!((*stop, text.as_str()), (StopReason::EndTurn, "read it"));
    let records = recorder.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].tool, DOTTED);
    assert_eq!(records[0].args, json!({"path": "notes.txt"}));
    assert_eq!(
        fakellm.fired().await,
        [("d6-call".to_owned(), true), ("d6-result".to_owned(), true)]
    );
}
