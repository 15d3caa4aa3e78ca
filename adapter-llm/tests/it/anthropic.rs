//! `anthropic` against recorded SSE fixtures: request shape and assembly.

use adapter_llm::{AnthropicProvider, ProviderKind};
use engine_ports::{
    Chunk, LlmError, LlmProvider, LlmRequest, Message, RequestPurpose, ToolCall, ToolResult, Usage,
};
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
    assert_eq!(sent.body["max_tokens"], json!(engine_ports::DEFAULT_MAX_TOKENS));
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
        ]
        .into(),
        tools: request(&["add", "now"]).tools,
        ..LlmRequest::default()
    };
    let items = collect(&provider_for(&server), request).await.unwrap();
    assert_eq!(items.last(), Some(&Ok(Chunk::Done)));
    let body = &server.requests()[0].body;
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "two things", "cache_control": {"type": "ephemeral"}},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "on it"},
                {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}},
                {"type": "tool_use", "id": "t2", "name": "now", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "clock broken", "is_error": true,
                 "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

/// Every JSON pointer under `value` whose object carries `cache_control`.
fn breakpoints(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("cache_control") == Some(&json!({"type": "ephemeral"})) {
                found.push(at.to_owned());
            }
            for (key, inner) in map {
                breakpoints(inner, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                breakpoints(inner, &format!("{at}/{index}"), found);
            }
        }
        _ => {}
    }
}

/// A conversation of three user turns, the last two answered with a tool call.
fn long_conversation() -> Vec<Message> {
    let mut messages = vec![
        Message::User {
            text: "first".to_owned(),
        },
        Message::Assistant {
            text: "one".to_owned(),
            tool_calls: Vec::new(),
        },
    ];
    for (turn, id) in [(2, "t1"), (3, "t2")] {
        messages.push(Message::User {
            text: format!("turn {turn}"),
        });
        messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall::new(id, "add", r#"{"a":1}"#)],
        });
        messages.push(Message::Tool {
            result: ToolResult::text(id, "1"),
        });
    }
    messages
}

#[tokio::test]
async fn prompt_cache_breakpoints_mark_tools_system_and_the_last_two_turns() {
    let mut events = vec![start(1)];
    events.extend(text_block(0, &["done"]));
    events.extend(stop("end_turn", 1));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let request = LlmRequest {
        system: "stable system prompt".to_owned(),
        messages: long_conversation().into(),
        tools: request(&["add", "now", "zeta"]).tools,
        ..LlmRequest::default()
    };
    collect(&provider_for(&server), request).await.unwrap();
    let body = &server.requests()[0].body;
    let mut found = Vec::new();
    breakpoints(body, "", &mut found);
    // Messages: 0 user "first", 1 assistant, 2 user "turn 2", 3 assistant call t1,
    // 4 user (result t1 + "turn 3"), 5 assistant call t2, 6 user (result t2).
    assert_eq!(
        found,
        [
            "/messages/4/content/1",
            "/messages/6/content/0",
            "/system/0",
            "/tools/2",
        ],
        "{body:#}"
    );
    assert_eq!(body["tools"][2]["name"], json!("zeta"));
    assert_eq!(body["messages"][4]["content"][1]["text"], json!("turn 3"));
    assert_eq!(body["messages"][6]["content"][0]["tool_use_id"], json!("t2"));
}

#[tokio::test]
async fn a_compaction_request_carries_no_cache_breakpoints() {
    let mut events = vec![start(1)];
    events.extend(text_block(0, &["summary"]));
    events.extend(stop("end_turn", 1));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let request = LlmRequest {
        messages: vec![Message::User {
            text: "summarize this".to_owned(),
        }]
        .into(),
        purpose: RequestPurpose::Compaction,
        ..LlmRequest::default()
    };
    collect(&provider_for(&server), request).await.unwrap();
    let body = &server.requests()[0].body;
    let mut found = Vec::new();
    breakpoints(body, "", &mut found);
    assert!(found.is_empty(), "{body:#}");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "summarize this"}]}])
    );
    assert!(
        body.get("tools").is_none() && body.get("system").is_none(),
        "{body:#}"
    );
}

#[tokio::test]
async fn a_summary_message_is_sent_as_user_text() {
    let mut events = vec![start(1)];
    events.extend(text_block(0, &["ok"]));
    events.extend(stop("end_turn", 1));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let request = LlmRequest {
        messages: vec![
            Message::Summary {
                text: "what happened before".to_owned(),
                replaced_turns: 4,
            },
            Message::User {
                text: "go on".to_owned(),
            },
        ]
        .into(),
        ..LlmRequest::default()
    };
    collect(&provider_for(&server), request).await.unwrap();
    assert_eq!(
        server.requests()[0].body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "what happened before"},
            {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}},
        ]}])
    );
}

#[tokio::test]
async fn cache_token_counts_reach_the_usage_chunk() {
    let mut events = vec![event(&json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude",
        "stop_reason": null, "usage": {"input_tokens": 12, "cache_creation_input_tokens": 2048,
        "cache_read_input_tokens": 30000, "output_tokens": 1}}}))];
    events.extend(text_block(0, &["hi"]));
    events.extend(stop("end_turn", 7));
    let server = FixtureServer::start(vec![Reply::sse(events)]).await;
    let items = collect(&provider_for(&server), request(&[])).await.unwrap();
    let usage: Vec<&Usage> = items
        .iter()
        .filter_map(|item| match item {
            Ok(Chunk::Usage(usage)) => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(usage, [&Usage::new(32_060, 7).with_cache(30_000, 2048)]);
}

#[tokio::test]
async fn a_prompt_too_long_refusal_is_a_typed_error_and_not_retried() {
    let refusal = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 212345 tokens > 200000 maximum"}});
    let server = FixtureServer::start(vec![Reply::json(400, &refusal), Reply::json(400, &refusal)]).await;
    let error = collect(&provider_for(&server), request(&[])).await.unwrap_err();
    assert!(error.is_context_too_long(), "{error:?}");
    assert_eq!(
        error.to_string(),
        "anthropic request for model claude-sonnet-4-6 does not fit the model's context window: \
         invalid_request_error: prompt is too long: 212345 tokens > 200000 maximum"
    );
    assert_eq!(server.requests().len(), 1);
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
