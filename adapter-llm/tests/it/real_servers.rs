//! Both HTTP providers against bodies as real servers send them, byte for byte:
//! llama.cpp's `llama-server` (an answer cut off by the output limit inside a tool
//! call's argument fragments, `503 Loading model`), OpenAI's non-streamed
//! `chat.completion` object, Anthropic's `max_tokens` stop in the middle of a
//! `tool_use` input, and `Retry-After` as seconds and as an HTTP date. Waits run on
//! tokio's paused clock, so the retry tests are instant.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use adapter_llm::{AnthropicProvider, OpenAiChatProvider, RetryPolicy};
use async_trait::async_trait;
use engine_core::{Catalog, Deps, Engine, EngineConfig, Environment, Tool, ToolError};
use engine_ports::{
    CancellationToken, Chunk, EventKind, LlmRequest, SessionId, StopReason, ToolCall, ToolResult, ToolSpec,
    Usage,
};
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::support::fixture::{FixtureServer, Reply};
use crate::support::{calls, collect, config, retries, text};

/// A local model `llama-server` serves under its file name.
const LOCAL_MODEL: &str = "qwen2.5-coder-7b-instruct-q4_k_m.gguf";

/// llama-server's stream of a `write_notes` call the output limit cuts off in the
/// middle of its `content` argument (`finish_reason: "length"`, usage and timings in
/// the last chunk).
fn llama_cut_tool_call() -> Reply {
    Reply::raw(
        200,
        "text/event-stream",
        [
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}],\"created\":1764745200,\"id\":\"chatcmpl-Vt3o1wJgnQ8Dk4KqM2bYp6xHfZ9aLsEr\",\"model\":\"qwen2.5-coder-7b-instruct-q4_k_m.gguf\",\"system_fingerprint\":\"b6360-3976dfbe\",\"object\":\"chat.completion.chunk\"}\n\n",
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"Xq7pR2mK9vTzL4cWbN8sJ3dHfY6gAeU1\",\"type\":\"function\",\"function\":{\"name\":\"write_notes\",\"arguments\":\"{\\\"\"}}]}}],\"created\":1764745200,\"id\":\"chatcmpl-Vt3o1wJgnQ8Dk4KqM2bYp6xHfZ9aLsEr\",\"model\":\"qwen2.5-coder-7b-instruct-q4_k_m.gguf\",\"system_fingerprint\":\"b6360-3976dfbe\",\"object\":\"chat.completion.chunk\"}\n\n",
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"path\\\": \\\"notes.md\\\", \\\"content\\\": \\\"# Notes\\\\n\\\\nThe first\"}}]}}],\"created\":1764745200,\"id\":\"chatcmpl-Vt3o1wJgnQ8Dk4KqM2bYp6xHfZ9aLsEr\",\"model\":\"qwen2.5-coder-7b-instruct-q4_k_m.gguf\",\"system_fingerprint\":\"b6360-3976dfbe\",\"object\":\"chat.completion.chunk\"}\n\n",
            "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"created\":1764745200,\"id\":\"chatcmpl-Vt3o1wJgnQ8Dk4KqM2bYp6xHfZ9aLsEr\",\"model\":\"qwen2.5-coder-7b-instruct-q4_k_m.gguf\",\"system_fingerprint\":\"b6360-3976dfbe\",\"object\":\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":16,\"prompt_tokens\":212,\"total_tokens\":228},\"timings\":{\"prompt_n\":212,\"prompt_ms\":183.2,\"prompt_per_token_ms\":0.864,\"prompt_per_second\":1157.2,\"predicted_n\":16,\"predicted_ms\":402.7,\"predicted_per_token_ms\":25.17,\"predicted_per_second\":39.73}}\n\n",
            "data: [DONE]\n\n",
        ],
    )
}

/// llama-server's streamed text answer.
fn llama_text(answer: &str) -> Reply {
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"choices\":[{{\"finish_reason\":{finish},\"index\":0,\"delta\":{delta}}}],\"created\":1764745201,\"id\":\"chatcmpl-8hS2kTq0yVbW5nZcX1rLm4pJ7dGfQ3aE\",\"model\":\"{LOCAL_MODEL}\",\"system_fingerprint\":\"b6360-3976dfbe\",\"object\":\"chat.completion.chunk\"}}\n\n"
        )
    };
    Reply::raw(
        200,
        "text/event-stream",
        [
            chunk(&json!({"content": answer}).to_string(), "null"),
            chunk("{}", "\"stop\""),
            "data: [DONE]\n\n".to_owned(),
        ],
    )
}

/// llama-server while it loads the model.
fn llama_loading() -> Reply {
    Reply::raw(
        503,
        "application/json; charset=utf-8",
        [r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#],
    )
}

fn llama_provider(server: &FixtureServer, retry: RetryPolicy) -> OpenAiChatProvider {
    OpenAiChatProvider::new(
        config(format!("{}/v1", server.root()))
            .with_model(LOCAL_MODEL)
            .with_retry(retry),
    )
    .unwrap()
}

#[tokio::test]
async fn a_llama_server_call_cut_off_by_the_output_limit_is_marked_truncated() {
    let server = FixtureServer::start(vec![llama_cut_tool_call()]).await;
    let provider = llama_provider(&server, RetryPolicy::default());
    let items = collect(&provider, crate::support::request(&["write_notes"]))
        .await
        .unwrap();
    assert_eq!(
        items,
        vec![
            Ok(Chunk::ToolCall(ToolCall::new(
                "Xq7pR2mK9vTzL4cWbN8sJ3dHfY6gAeU1",
                "write_notes",
                "{\"path\": \"notes.md\", \"content\": \"# Notes\\n\\nThe first"
            ))),
            Ok(Chunk::Usage(Usage::new(212, 16))),
            Ok(Chunk::Truncated),
            Ok(Chunk::Done),
        ]
    );
    let sent = &server.requests()[0].body;
    assert_eq!(sent["max_tokens"], json!(engine_ports::DEFAULT_MAX_TOKENS));
    assert_eq!(sent["stream"], json!(true));
}

/// A tool that records its calls.
#[derive(Default)]
struct WriteNotes {
    ran: Mutex<Vec<String>>,
}

#[async_trait]
impl Tool for WriteNotes {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("write_notes", "writes a notes file").with_schema(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
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
        self.ran.lock().unwrap().push(call.args().to_owned());
        Ok(ToolResult::text(call.id().clone(), "written"))
    }
}

#[tokio::test]
async fn the_engine_never_runs_a_call_cut_off_by_the_output_limit() {
    // Cut off at 8192 tokens, again at 16384, then the model answers in text.
    let server = FixtureServer::start(vec![
        llama_cut_tool_call(),
        llama_cut_tool_call(),
        llama_text("I will write the notes in smaller parts."),
    ])
    .await;
    let provider = Arc::new(llama_provider(&server, RetryPolicy::default()));
    let tool = Arc::new(WriteNotes::default());
    let mut catalog = Catalog::new();
    catalog.must_register(tool.clone());
    let workspace = tempfile::tempdir().unwrap();
    let mut deps = Deps::new(
        provider,
        Arc::new(catalog),
        Environment::new(workspace.path()).unwrap(),
    );
    deps.config = EngineConfig {
        model: LOCAL_MODEL.to_owned(),
        ..EngineConfig::default()
    };
    let engine = Engine::new(deps).unwrap();
    let events: Vec<_> = engine
        .run(&SessionId::from("cut"), "write my notes")
        .unwrap()
        .collect()
        .await;

    assert!(tool.ran.lock().unwrap().is_empty(), "a cut-off call ran");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let limits: Vec<&Value> = requests.iter().map(|r| &r.body["max_tokens"]).collect();
    assert_eq!(limits, [&json!(8192), &json!(16384), &json!(8192)]);
    // The history the model sees next: the call with valid (empty) arguments and an
    // error result saying it was not run.
    let messages = requests[2].body["messages"].as_array().unwrap();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "write_notes");
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], "{}");
    let result = &messages[messages.len() - 1];
    assert_eq!(result["role"], "tool");
    let said = result["content"].as_str().unwrap();
    assert!(
        said.contains("not run") && said.contains("16384 tokens"),
        "{said}"
    );

    let retried: Vec<Option<u32>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelRetry { max_tokens, .. } => Some(*max_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(retried, [Some(16384)]);
    assert!(
        events.iter().any(|e| matches!(
            &e.kind,
            EventKind::ToolResult { is_error: true, name, .. } if name == "write_notes"
        )),
        "{events:?}"
    );
    let Some(EventKind::Result { stop, text, .. }) = events.last().map(|e| &e.kind) else {
        panic!("no result: {events:?}");
    };
    assert_eq!(
        (*stop, text.as_str()),
        (StopReason::EndTurn, "I will write the notes in smaller parts.")
    );
}

#[tokio::test(start_paused = true)]
async fn a_loading_llama_server_is_waited_for() {
    let server = FixtureServer::start(vec![
        llama_loading(),
        llama_loading(),
        llama_loading(),
        llama_text("ready"),
    ])
    .await;
    let provider = llama_provider(&server, RetryPolicy::default());
    let started = tokio::time::Instant::now();
    let items = collect(&provider, crate::support::request(&[])).await.unwrap();
    assert_eq!(text(&items), "ready");
    let notices = retries(&items);
    assert_eq!(
        notices.iter().map(|n| (n.attempt, n.status)).collect::<Vec<_>>(),
        [(1, Some(503)), (2, Some(503)), (3, Some(503))]
    );
    assert!(notices[0].error.contains("Loading model"), "{}", notices[0].error);
    // Full jitter: each wait is at most its doubling ceiling.
    let policy = RetryPolicy::default();
    for notice in &notices {
        assert!(notice.wait <= policy.base_backoff(notice.attempt), "{notice:?}");
    }
    let waited: Duration = notices.iter().map(|n| n.wait).sum();
    assert!(
        started.elapsed() >= waited,
        "{:?} < {waited:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_loading_model_that_outlasts_the_budget_fails_naming_it() {
    let replies = std::iter::repeat_with(llama_loading).take(200).collect();
    let server = FixtureServer::start(replies).await;
    let provider = llama_provider(
        &server,
        RetryPolicy {
            budget: Duration::from_secs(20),
            ..RetryPolicy::default()
        },
    );
    let started = tokio::time::Instant::now();
    let items = collect(&provider, crate::support::request(&[])).await.unwrap();
    let error = crate::support::final_error(&items).unwrap();
    let text = error.to_string();
    assert!(
        text.contains("503") && text.contains("Loading model") && text.contains("retry budget of 20 s"),
        "{text}"
    );
    assert!(
        started.elapsed() <= Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), retries(&items).len() + 1);
}

#[tokio::test(start_paused = true)]
async fn retry_after_in_seconds_and_as_a_date_sets_the_waits() {
    let in_thirty = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
    let server = FixtureServer::start(vec![
        Reply::raw(
            429,
            "application/json",
            [r#"{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#],
        )
        .with_header("retry-after", "7"),
        Reply::raw(
            503,
            "application/json",
            [r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#],
        )
        .with_header("retry-after", &in_thirty),
        llama_text("done"),
    ])
    .await;
    let provider = llama_provider(&server, RetryPolicy::default());
    let started = tokio::time::Instant::now();
    let items = collect(&provider, crate::support::request(&[])).await.unwrap();
    assert_eq!(text(&items), "done");
    let notices = retries(&items);
    assert_eq!(notices.len(), 2, "{items:?}");
    assert_eq!(
        (notices[0].status, notices[0].wait),
        (Some(429), Duration::from_secs(7))
    );
    // An HTTP date has whole seconds: the wait is the time until it.
    assert_eq!(notices[1].status, Some(503));
    assert!(
        notices[1].wait > Duration::from_secs(28) && notices[1].wait <= Duration::from_secs(30),
        "{:?}",
        notices[1].wait
    );
    assert!(
        started.elapsed() >= Duration::from_secs(35),
        "{:?}",
        started.elapsed()
    );
}

/// OpenAI's non-streamed `chat.completion` object.
fn openai_completion(finish_reason: &str, arguments: &str) -> Reply {
    let body = format!(
        r#"{{
  "id": "chatcmpl-CYs1n3dXy8uVb2kQwE7rTg4HjP0oL",
  "object": "chat.completion",
  "created": 1764745300,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {{
      "index": 0,
      "message": {{
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {{
            "id": "call_Qm3vT8xKp2LdR9sWz4NbY1cF",
            "type": "function",
            "function": {{
              "name": "add",
              "arguments": {arguments}
            }}
          }}
        ],
        "refusal": null,
        "annotations": []
      }},
      "logprobs": null,
      "finish_reason": "{finish_reason}"
    }}
  ],
  "usage": {{
    "prompt_tokens": 82,
    "completion_tokens": 18,
    "total_tokens": 100,
    "prompt_tokens_details": {{
      "cached_tokens": 0,
      "audio_tokens": 0
    }},
    "completion_tokens_details": {{
      "reasoning_tokens": 0,
      "audio_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }}
  }},
  "service_tier": "default",
  "system_fingerprint": "fp_cbf1785567"
}}
"#
    );
    Reply::raw(200, "application/json", [body])
}

#[tokio::test]
async fn openai_whole_answers_map_to_the_streamed_chunks() {
    let server = FixtureServer::start(vec![
        openai_completion("tool_calls", r#""{\"a\":2,\"b\":3}""#),
        openai_completion("length", r#""{\"a\":2,\"b\"""#),
    ])
    .await;
    let provider = OpenAiChatProvider::new(
        config(format!("{}/v1", server.root()))
            .with_model("gpt-4o")
            .with_streaming(false),
    )
    .unwrap();
    let whole = collect(&provider, crate::support::request(&["add"]))
        .await
        .unwrap();
    assert_eq!(
        whole,
        vec![
            Ok(Chunk::ToolCall(ToolCall::new(
                "call_Qm3vT8xKp2LdR9sWz4NbY1cF",
                "add",
                r#"{"a":2,"b":3}"#
            ))),
            Ok(Chunk::Usage(Usage::new(82, 18))),
            Ok(Chunk::Done),
        ]
    );
    let cut = collect(&provider, crate::support::request(&["add"]))
        .await
        .unwrap();
    assert_eq!(
        calls(&cut).first().map(ToolCall::args),
        Some(r#"{"a":2,"b""#),
        "{cut:?}"
    );
    assert!(
        matches!(cut.as_slice(), [.., Ok(Chunk::Truncated), Ok(Chunk::Done)]),
        "{cut:?}"
    );
    for sent in server.requests() {
        assert_eq!(sent.body["stream"], json!(false));
        assert!(sent.body.get("stream_options").is_none());
        assert_eq!(sent.header("accept"), Some("application/json"));
    }
}

/// Anthropic's stream of a `tool_use` block the output limit cuts off in the middle
/// of its `input_json_delta`s.
fn anthropic_cut_tool_use() -> Reply {
    Reply::raw(
        200,
        "text/event-stream; charset=utf-8",
        [
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":472,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":2,\"service_tier\":\"standard\"}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Writing the notes.\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"write_notes\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"notes.md\\\", \\\"con\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"tent\\\": \\\"# Notes\\\\n\\\\nThe fi\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":32}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ],
    )
}

#[tokio::test]
async fn an_anthropic_tool_use_cut_off_by_max_tokens_is_marked_truncated() {
    let server = FixtureServer::start(vec![anthropic_cut_tool_use()]).await;
    let provider = AnthropicProvider::new(config(server.root())).unwrap();
    let request = LlmRequest {
        max_tokens: Some(32),
        ..crate::support::request(&["write_notes"])
    };
    let items = collect(&provider, request).await.unwrap();
    assert_eq!(
        items,
        vec![
            Ok(Chunk::Text("Writing the notes.".to_owned())),
            Ok(Chunk::ToolCall(ToolCall::new(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "write_notes",
                "{\"path\": \"notes.md\", \"content\": \"# Notes\\n\\nThe fi"
            ))),
            Ok(Chunk::Usage(Usage::new(472, 32))),
            Ok(Chunk::Truncated),
            Ok(Chunk::Done),
        ]
    );
    assert_eq!(server.requests()[0].body["max_tokens"], json!(32));
}

#[tokio::test]
async fn an_anthropic_whole_answer_cut_off_by_max_tokens_is_marked_truncated() {
    let server = FixtureServer::start(vec![Reply::raw(
        200,
        "application/json",
        [r#"{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"The notes begin with"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":16,"service_tier":"standard"}}"#],
    )])
    .await;
    let provider = AnthropicProvider::new(config(server.root()).with_streaming(false)).unwrap();
    let items = collect(&provider, crate::support::request(&[])).await.unwrap();
    assert_eq!(
        items,
        vec![
            Ok(Chunk::Text("The notes begin with".to_owned())),
            Ok(Chunk::Usage(Usage::new(12, 16))),
            Ok(Chunk::Truncated),
            Ok(Chunk::Done),
        ]
    );
    assert_eq!(server.requests()[0].body["stream"], json!(false));
}
