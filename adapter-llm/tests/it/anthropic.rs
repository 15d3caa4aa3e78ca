//! `anthropic` against recorded SSE fixtures: request shape and assembly.

use adapter_llm::{ANTHROPIC_MAX_TOKENS, AnthropicProvider, ProviderKind};
use engine_ports::{Chunk, LlmError, LlmProvider, LlmRequest, Message, ToolCall, ToolResult, Usage};
use serde_json::{Value, json};

use crate::support::fixture::{FixtureServer, Piece, Reply, event};
use crate::support::{TEST_KEY, calls, collect, config, final_error, request};

fn start(input_tokens: u64) -> String {
    event(&json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude",
        "stop_reason": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}))
}

fn text_block(index: u64, pieces: &[&str]) -> Vec<String> {
    let mut events = vec![event(
        &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    )];
    for piece in pieces {
        events.push(event(&json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "text_delta", "text": piece}})));
    }
    events.push(event(&json!({"type": "content_block_stop", "index": index})));
    events
}

fn tool_block(index: u64, id: &str, name: &str, input: Value, fragments: &[&str]) -> Vec<String> {
    let mut events = vec![event(&json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": name, "input": input}}))];
    for fragment in fragments {
        events.push(event(&json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "input_json_delta", "partial_json": fragment}})));
    }
    events.push(event(&json!({"type": "content_block_stop", "index": index})));
    events
}

fn stop(reason: &str, output_tokens: u64) -> Vec<String> {
    vec![
        event(
            &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}}),
        ),
        event(&json!({"type": "message_stop"})),
    ]
}

fn provider_for(server: &FixtureServer) -> AnthropicProvider {
    AnthropicProvider::new(config(server.root())).unwrap()
}

#[tokio::test]
async fn fragments_form_one_call_and_blocks_keep_their_order() {
    let mut events = vec![start(21), event(&json!({"type": "ping"}))];
    events.extend(text_block(0, &["Let me ", "add."]));
    events.extend(tool_block(
        1,
        "toolu_1",
        "add",
        json!({}),
        &["{\"a\"", ": 2,", " \"b\"", ": 3}"],
    ));
    events.extend(text_block(2, &["And the time:"]));
    events.extend(tool_block(3, "toolu_2", "now", json!({}), &[]));
    events.extend(stop("tool_use", 30));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let provider = provider_for(&server);
    let items = collect(&provider, request(&["add", "now"])).await.unwrap();
    let order: Vec<String> = items
        .iter()
        .map(|i| match i {
            Ok(Chunk::Text(t)) => format!("text:{t}"),
            Ok(Chunk::ToolCall(c)) => format!("call:{}:{}", c.name(), c.args()),
            Ok(Chunk::Usage(u)) => format!("usage:{}:{}", u.input_tokens, u.output_tokens),
            Ok(Chunk::Done) => "done".to_owned(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        order,
        [
            "text:Let me ",
            "text:add.",
            r#"call:add:{"a": 2, "b": 3}"#,
            "text:And the time:",
            "call:now:{}",
            "usage:21:30",
            "done",
        ]
    );
    assert_eq!(calls(&items)[0].id(), "toolu_1");

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(TEST_KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert!(sent.header("authorization").is_none());
    assert_eq!(sent.body["model"], json!("claude-sonnet-4-6"));
    assert_eq!(sent.body["max_tokens"], json!(ANTHROPIC_MAX_TOKENS));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["tools"][0]["name"], json!("add"));
    assert_eq!(sent.body["tools"][0]["input_schema"]["type"], json!("object"));
}

#[tokio::test]
async fn no_fragments_gives_the_initial_input() {
    let mut events = vec![start(1)];
    events.extend(tool_block(0, "toolu_1", "now", json!({}), &[]));
    events.extend(tool_block(1, "toolu_2", "where", json!({"city": "Paris"}), &[]));
    events.extend(stop("tool_use", 2));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let provider = provider_for(&server);
    let items = collect(&provider, request(&["now", "where"])).await.unwrap();
    assert_eq!(
        calls(&items),
        vec![
            ToolCall::new("toolu_1", "now", "{}"),
            ToolCall::new("toolu_2", "where", r#"{"city":"Paris"}"#),
        ]
    );
}

#[tokio::test]
async fn error_events_and_cut_streams_are_errors() {
    let mut events = vec![start(1)];
    events.extend(text_block(0, &["partial"]));
    events.push(event(
        &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad thing"}}),
    ));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let items = collect(&provider_for(&server), request(&[])).await.unwrap();
    let error = final_error(&items).unwrap();
    assert!(error.to_string().contains("bad thing"), "{error}");
    assert!(error.to_string().contains("anthropic"), "{error}");

    let mut events = vec![start(1)];
    events.extend(tool_block(0, "toolu_1", "add", json!({}), &["{\"a\""]));
    events.truncate(2);
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let items = collect(&provider_for(&server), request(&["add"])).await.unwrap();
    assert!(calls(&items).is_empty());
    let error = final_error(&items).unwrap();
    assert!(
        matches!(error, LlmError::Protocol { .. }) && error.to_string().contains("message_stop"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_overload_event_before_any_chunk_is_retried() {
    let overload = vec![
        start(1),
        event(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    ];
    let mut fine = vec![start(1)];
    fine.extend(text_block(0, &["ok"]));
    fine.extend(stop("end_turn", 1));
    let server = FixtureServer::start(vec![Reply::sse(overload), Reply::sse(fine)]).await;
    let items = collect(&provider_for(&server), request(&[])).await.unwrap();
    assert_eq!(crate::support::text(&items), "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn tool_results_are_grouped_per_user_message() {
    let mut events = vec![start(1)];
    events.extend(text_block(0, &["done"]));
    events.extend(stop("end_turn", 1));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let request = LlmRequest {
        model: String::new(),
        system: "be brief".to_owned(),
        messages: vec![
            Message::User {
                text: "two things".to_owned(),
            },
            Message::Assistant {
                text: "on it".to_owned(),
                tool_calls: vec![
                    ToolCall::new("t1", "add", r#"{"a":1}"#),
                    ToolCall::new("t2", "now", ""),
                ],
            },
            Message::Tool {
                result: ToolResult::text("t1", "1"),
            },
            Message::Tool {
                result: ToolResult::error("t2", "clock broken"),
            },
        ],
        tools: request(&["add", "now"]).tools,
    };
    let items = collect(&provider_for(&server), request).await.unwrap();
    assert_eq!(items.last(), Some(&Ok(Chunk::Done)));
    let body = &server.requests()[0].body;
    assert_eq!(body["system"], json!("be brief"));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "two things"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "on it"},
                {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}},
                {"type": "tool_use", "id": "t2", "name": "now", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "clock broken", "is_error": true},
            ]},
        ])
    );
}

#[tokio::test]
async fn a_non_streamed_message_is_delivered_as_chunks() {
    let answer = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "text", "text": "adding"},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 4, "output_tokens": 6}
    });
    let server = FixtureServer::start(vec![Reply::json(200, &answer)]).await;
    let provider = AnthropicProvider::new(config(server.root()).with_streaming(false)).unwrap();
    let items = collect(&provider, request(&["add"])).await.unwrap();
    assert_eq!(
        items,
        vec![
            Ok(Chunk::Text("adding".to_owned())),
            Ok(Chunk::ToolCall(ToolCall::new(
                "toolu_1",
                "add",
                r#"{"a":2,"b":3}"#
            ))),
            Ok(Chunk::Usage(Usage::new(4, 6))),
            Ok(Chunk::Done),
        ]
    );
}

#[tokio::test]
async fn a_dropped_connection_after_text_is_an_error_after_one_request() {
    let mut pieces: Vec<Piece> = vec![Piece::Data(start(1).into_bytes())];
    pieces.extend(
        text_block(0, &["partial"])
            .into_iter()
            .take(2)
            .map(|e| Piece::Data(e.into_bytes())),
    );
    pieces.push(Piece::Cut);
    let server = FixtureServer::start(vec![Reply::sse_pieces(pieces)]).await;
    let items = collect(&provider_for(&server), request(&[])).await.unwrap();
    assert_eq!(crate::support::text(&items), "partial");
    assert!(
        matches!(final_error(&items), Some(LlmError::Transport { .. })),
        "{items:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn capabilities_and_defaults() {
    let provider = AnthropicProvider::new(config("http://127.0.0.1:9".to_owned())).unwrap();
    let shown = format!("{provider:?}");
    assert!(!shown.contains(crate::support::TEST_KEY), "{shown}");
    assert!(provider.capabilities().image);
    assert_eq!(ProviderKind::Anthropic.default_model(), "claude-sonnet-4-6");
    assert_eq!(
        ProviderKind::Anthropic.default_base_url(),
        "https://api.anthropic.com"
    );
    assert_eq!(ProviderKind::Anthropic.api_key_env(), "ANTHROPIC_API_KEY");
}
