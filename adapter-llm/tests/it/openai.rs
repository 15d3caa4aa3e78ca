//! `openai-chat` against recorded SSE fixtures: request shape, assembly of streamed
//! call fragments, verbatim arguments, incomplete streams, non-streamed answers,
//! context-window refusals and cached-token counts.

use adapter_llm::{OpenAiChatProvider, ProviderKind};
use engine_ports::{Chunk, LlmError, LlmProvider, LlmRequest, Message, ToolCall, ToolResult, Usage};
use serde_json::{Value, json};

use crate::support::fixture::{FixtureServer, Piece, Reply, data};
use crate::support::{TEST_KEY, calls, collect, config, final_error, request, text};

fn chunk(delta: Value) -> String {
    data(
        &json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
    )
}

fn finish(reason: &str) -> String {
    data(&json!({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

fn fragment(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut function = json!({"arguments": args});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    chunk(json!({"tool_calls": [call]}))
}

const DONE: &str = "data: [DONE]\n\n";

async fn provider_for(server: &FixtureServer) -> OpenAiChatProvider {
    OpenAiChatProvider::new(config(format!("{}/v1", server.root()))).unwrap()
}

#[tokio::test]
async fn fragments_assemble_into_one_call() {
    let server = FixtureServer::start(vec![Reply::sse([
        chunk(json!({"role": "assistant"})),
        fragment(0, Some("call_1"), Some("add"), ""),
        fragment(0, None, None, "{\"a\""),
        fragment(0, None, None, ": 2,"),
        fragment(0, None, None, " \"b\""),
        fragment(0, None, None, ": 3}"),
        finish("tool_calls"),
        data(&json!({"id": "x", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}})),
        DONE.to_owned(),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&["add"])).await.unwrap();
    assert_eq!(
        calls(&items),
        vec![ToolCall::new("call_1", "add", r#"{"a": 2, "b": 3}"#)]
    );
    let parsed: Value = serde_json::from_str(calls(&items)[0].args()).unwrap();
    assert_eq!(parsed, json!({"a": 2, "b": 3}));
    assert!(items.contains(&Ok(Chunk::Usage(Usage::new(12, 5)))));
    assert_eq!(items.last(), Some(&Ok(Chunk::Done)));

    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    assert_eq!(sent.body["model"], json!("gpt-5"));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.body["tools"][0]["type"], json!("function"));
    assert_eq!(sent.body["tools"][0]["function"]["name"], json!("add"));
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": "add 2 and 3"}])
    );
}

#[tokio::test]
async fn interleaved_indices_come_out_in_index_order() {
    let server = FixtureServer::start(vec![Reply::sse([
        chunk(json!({"role": "assistant", "content": "two calls"})),
        fragment(1, Some("c_b"), Some("sub"), "{\"x\":"),
        fragment(0, Some("c_a"), Some("add"), "{\"a\":"),
        fragment(1, None, None, " 9}"),
        fragment(0, None, None, " 1}"),
        finish("tool_calls"),
        DONE.to_owned(),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&["add", "sub"])).await.unwrap();
    assert_eq!(text(&items), "two calls");
    assert_eq!(
        calls(&items),
        vec![
            ToolCall::new("c_a", "add", r#"{"a": 1}"#),
            ToolCall::new("c_b", "sub", r#"{"x": 9}"#),
        ]
    );
}

#[tokio::test]
async fn empty_and_invalid_arguments_pass_verbatim() {
    let server = FixtureServer::start(vec![Reply::sse([
        fragment(0, Some("c1"), Some("now"), ""),
        fragment(1, Some("c2"), Some("add"), "{\"a\": 2,"),
        finish("tool_calls"),
        DONE.to_owned(),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&["now", "add"])).await.unwrap();
    assert_eq!(
        calls(&items),
        vec![
            ToolCall::new("c1", "now", ""),
            ToolCall::new("c2", "add", "{\"a\": 2,")
        ]
    );
}

#[tokio::test]
async fn calls_are_emitted_at_done_without_finish_reason() {
    let server = FixtureServer::start(vec![Reply::sse([
        fragment(0, Some("c1"), Some("add"), "{}"),
        DONE.to_owned(),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&["add"])).await.unwrap();
    assert_eq!(calls(&items), vec![ToolCall::new("c1", "add", "{}")]);
}

#[tokio::test]
async fn a_stream_ending_after_finish_reason_without_done_completes() {
    let server = FixtureServer::start(vec![Reply::sse([
        chunk(json!({"content": "hello"})),
        finish("stop"),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&[])).await.unwrap();
    assert_eq!(text(&items), "hello");
    assert_eq!(items.last(), Some(&Ok(Chunk::Done)));
}

#[tokio::test]
async fn a_stream_cut_mid_call_is_an_error() {
    // The body ends cleanly but before finish_reason or [DONE]: an incomplete answer,
    // never retried (the server did answer) and no half call is emitted.
    let server = FixtureServer::start(vec![Reply::sse([
        chunk(json!({"content": "adding"})),
        fragment(0, Some("c1"), Some("add"), "{\"a\": 2,"),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&["add"])).await.unwrap();
    assert!(calls(&items).is_empty(), "{items:?}");
    let error = final_error(&items).unwrap();
    assert!(matches!(error, LlmError::Protocol { .. }), "{error}");
    assert!(error.to_string().contains("finish_reason or [DONE]"), "{error}");
    assert_eq!(server.requests().len(), 1);

    // The connection drops mid-call after text reached the caller: an error, no retry.
    let server = FixtureServer::start(vec![Reply::sse_pieces([
        Piece::Data(chunk(json!({"content": "adding"})).into_bytes()),
        Piece::Data(fragment(0, Some("c1"), Some("add"), "{\"a\"").into_bytes()),
        Piece::Cut,
    ])])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&["add"])).await.unwrap();
    assert_eq!(text(&items), "adding");
    assert!(calls(&items).is_empty(), "{items:?}");
    assert!(
        matches!(final_error(&items), Some(LlmError::Transport { .. })),
        "{items:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn history_maps_both_ways() {
    let server = FixtureServer::start(vec![Reply::sse([
        chunk(json!({"content": "5"})),
        finish("stop"),
        DONE.to_owned(),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let request = LlmRequest {
        model: "gpt-test".to_owned(),
        system: "You add numbers.".to_owned(),
        messages: vec![
            Message::User {
                text: "add 2 and 3".to_owned(),
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::new("call_1", "add", r#"{"a":2,"b":3}"#)],
            },
            Message::Tool {
                result: ToolResult::text("call_1", "5"),
            },
        ]
        .into(),
        tools: request(&["add"]).tools,
        ..LlmRequest::default()
    };
    let items = collect(&provider, request).await.unwrap();
    assert_eq!(text(&items), "5");
    let body = &server.requests()[0].body;
    assert_eq!(body["model"], json!("gpt-test"));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You add numbers."},
            {"role": "user", "content": "add 2 and 3"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        ])
    );
}

#[tokio::test]
async fn a_non_streamed_answer_is_delivered_as_chunks() {
    let answer = json!({
        "id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "adding",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2}"}}]
        }}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4}
    });
    let server = FixtureServer::start(vec![Reply::json(200, &answer)]).await;
    let provider =
        OpenAiChatProvider::new(config(format!("{}/v1", server.root())).with_streaming(false)).unwrap();
    let items = collect(&provider, request(&["add"])).await.unwrap();
    assert_eq!(
        items,
        vec![
            Ok(Chunk::Text("adding".to_owned())),
            Ok(Chunk::ToolCall(ToolCall::new("c1", "add", "{\"a\":2}"))),
            Ok(Chunk::Usage(Usage::new(3, 4))),
            Ok(Chunk::Done),
        ]
    );
    assert_eq!(server.requests()[0].body["stream"], json!(false));
}

#[tokio::test]
async fn capabilities_and_defaults() {
    let provider = OpenAiChatProvider::new(config("http://127.0.0.1:9/v1".to_owned())).unwrap();
    let shown = format!("{provider:?}");
    assert!(!shown.contains(crate::support::TEST_KEY), "{shown}");
    assert_eq!(provider.capabilities(), engine_ports::Capabilities::default());
    assert_eq!(ProviderKind::OpenAiChat.default_model(), "gpt-5");
    assert_eq!(
        ProviderKind::OpenAiChat.default_base_url(),
        "https://api.openai.com/v1"
    );
    let error = OpenAiChatProvider::new(config("ftp://example.invalid".to_owned())).unwrap_err();
    assert!(
        matches!(error, LlmError::Config { .. }) && error.to_string().contains("ftp://"),
        "{error}"
    );
}

#[tokio::test]
async fn a_json_error_with_a_success_status_is_quoted() {
    let server = FixtureServer::start(vec![Reply::json(
        200,
        &json!({"error": {"message": "model overloaded, try later", "type": "server_error"}}),
    )])
    .await;
    let provider = provider_for(&server).await;
    let items = collect(&provider, request(&[])).await.unwrap();
    let error = final_error(&items).unwrap();
    assert!(
        error.to_string().contains("model overloaded, try later"),
        "{error}"
    );
}

#[tokio::test]
async fn context_length_exceeded_is_a_typed_error_and_not_retried() {
    let refusal = json!({"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let server = FixtureServer::start(vec![Reply::json(400, &refusal), Reply::json(400, &refusal)]).await;
    let provider = provider_for(&server).await;
    let error = collect(&provider, request(&[])).await.unwrap_err();
    assert!(error.is_context_too_long(), "{error:?}");
    assert!(
        error.to_string().starts_with(
            "openai-chat request for model gpt-5 does not fit the model's context window: invalid_request_error: \
             This model's maximum context length is 128000 tokens."
        ),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cached_prompt_tokens_reach_the_usage_chunk_and_summaries_go_as_user_text() {
    let server = FixtureServer::start(vec![Reply::sse([
        chunk(json!({"content": "ok"})),
        finish("stop"),
        data(
            &json!({"id": "x", "choices": [], "usage": {"prompt_tokens": 3000, "completion_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": 2816}}}),
        ),
        DONE.to_owned(),
    ])])
    .await;
    let provider = provider_for(&server).await;
    let request = LlmRequest {
        system: "sys".to_owned(),
        messages: vec![
            Message::Summary {
                text: "what happened before".to_owned(),
                replaced_turns: 2,
            },
            Message::User {
                text: "go on".to_owned(),
            },
        ]
        .into(),
        ..LlmRequest::default()
    };
    let items = collect(&provider, request).await.unwrap();
    assert!(
        items.contains(&Ok(Chunk::Usage(Usage::new(3000, 2).with_cache(2816, 0)))),
        "{items:?}"
    );
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "what happened before"},
            {"role": "user", "content": "go on"},
        ])
    );
    assert!(!body.to_string().contains("cache_control"), "{body}");
}
