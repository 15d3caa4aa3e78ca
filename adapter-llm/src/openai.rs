//! `openai-chat`: OpenAI-compatible chat completions (`POST <base>/chat/completions`).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    Capabilities, Chunk, ChunkStream, DEFAULT_MAX_TOKENS, LlmError, LlmProvider, LlmRequest, Message,
    ToolCall, ToolResult, Usage,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{HttpProviderConfig, ProviderKind};
use crate::names::NameMap;
use crate::sse::SseEvent;
use crate::transport::{Decoder, Failure, HttpCore, Step, parse_whole};

/// An OpenAI-compatible chat completions provider.
///
/// Sends `stream: true` with `stream_options.include_usage` (or `stream: false`),
/// the request's output limit as `max_tokens` (`max_completion_tokens` for the
/// OpenAI models that refuse `max_tokens`: see [`uses_max_completion_tokens`]),
/// advertises tools as function specs under D6 wire names, and assembles streamed
/// tool-call fragments by `index` into whole calls (D12), emitted in index order at
/// `finish_reason` or `[DONE]` with their argument text verbatim. A
/// `finish_reason` of `length` ends the answer with `Chunk::Truncated`.
#[derive(Debug, Clone)]
pub struct OpenAiChatProvider {
    core: Arc<HttpCore>,
}

impl OpenAiChatProvider {
    /// A provider with `config` (base URL ending in `/v1`, default
    /// `https://api.openai.com/v1`; model default `gpt-5`).
    ///
    /// # Errors
    /// [`LlmError::Config`] for a base URL that is not http(s), a key that cannot be
    /// a header value, or an HTTP client that cannot be built.
    pub fn new(config: HttpProviderConfig) -> Result<Self, LlmError> {
        let key = format!("Bearer {}", config.api_key.expose());
        let core = HttpCore::new(
            ProviderKind::OpenAiChat,
            config,
            "/chat/completions",
            vec![("authorization", key)],
        )?;
        Ok(Self { core: Arc::new(core) })
    }
}

#[async_trait]
impl LlmProvider for OpenAiChatProvider {
    /// Chat-completions `tool` messages carry text only.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn stream(&self, request: LlmRequest, cancel: CancellationToken) -> Result<ChunkStream, LlmError> {
        let who = self.core.who(&request.model);
        let names = NameMap::for_request(&request).map_err(|collision| who.config(collision.to_string()))?;
        let body = request_body(&request, &who.model, &names, self.core.streaming);
        let bytes = serde_json::to_vec(&body).map_err(|error| who.config(error.to_string()))?;
        let decoder = OpenAiDecoder::new(names);
        self.core.exchange(who, bytes, decoder, cancel).await
    }
}

/// The request JSON.
pub(crate) fn request_body(request: &LlmRequest, model: &str, names: &NameMap, streaming: bool) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        messages.push(match message {
            Message::User { text } | Message::Summary { text, .. } => {
                json!({"role": "user", "content": text})
            }
            Message::Assistant { text, tool_calls } => assistant_message(text, tool_calls, names),
            Message::Tool { result } => json!({
                "role": "tool",
                "tool_call_id": result.call_id().as_str(),
                "content": tool_text(result),
            }),
        });
    }
    let mut body = json!({"model": model, "messages": messages});
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|spec| {
                json!({
                    "type": "function",
                    "function": {
                        "name": names.encode(spec.name()),
                        "description": spec.description(),
                        "parameters": crate::wire_schema(spec),
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    let limit = if uses_max_completion_tokens(model) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit] = json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS));
    body["stream"] = json!(streaming);
    if streaming {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// Whether `model` is one of OpenAI's reasoning models (`o1`, `o3`, `o4-mini`,
/// `gpt-5`…), which refuse `max_tokens` and take the output limit as
/// `max_completion_tokens`; every other model, and every OpenAI-compatible server
/// (llama.cpp, vLLM, Ollama), gets `max_tokens`. Decided by name (after any
/// `vendor/` prefix), so no request is refused first.
pub fn uses_max_completion_tokens(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let reasoning_family = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    };
    ["o1", "o3", "o4"].into_iter().any(reasoning_family) || name.starts_with("gpt-5")
}

/// Whether an error body says the prompt does not fit the model's context window:
/// OpenAI's `context_length_exceeded` code, or the texts OpenAI-compatible servers
/// use for it (`maximum context length`, llama.cpp's `exceed_context_size_error`).
pub(crate) fn is_context_too_long(body: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let field = |pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    let code = field("/error/code");
    let kind = field("/error/type");
    let message = field("/error/message");
    code == "context_length_exceeded"
        || kind == "exceed_context_size_error"
        || message.contains("context_length_exceeded")
        || message.contains("maximum context length")
}

fn assistant_message(text: &str, calls: &[ToolCall], names: &NameMap) -> Value {
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id().as_str(),
                    "type": "function",
                    "function": {
                        "name": names.encode(call.name()),
                        "arguments": history_arguments(call),
                    }
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// A past call's arguments as sent back: its text when it is valid JSON, else `{}`
/// (servers such as llama.cpp refuse a history whose arguments do not parse; the
/// tool already answered invalid arguments with an error result).
fn history_arguments(call: &ToolCall) -> &str {
    if serde_json::from_str::<serde::de::IgnoredAny>(call.args()).is_ok() {
        call.args()
    } else {
        "{}"
    }
}

/// What a `tool` message says: the parts' text projection, else the summary.
fn tool_text(result: &ToolResult) -> String {
    let projection = result.text_projection();
    if projection.is_empty() {
        result.content().to_owned()
    } else {
        projection
    }
}

/// Assembles chat-completion chunks into [`Chunk`]s.
#[derive(Debug)]
pub(crate) struct OpenAiDecoder {
    names: NameMap,
    calls: BTreeMap<u64, PartialCall>,
    finished: bool,
    /// `finish_reason` was `length`: the output limit cut the answer off.
    truncated: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    args: String,
}

#[derive(Deserialize)]
struct StreamChunk {
    #[serde(default)]
    choices: Vec<StreamChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StreamChoice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<WireMessage<ToolCallDelta>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// A streamed delta (`C` = [`ToolCallDelta`], fragments of calls) or a whole answer's
/// message (`C` = [`WholeCall`]).
#[derive(Deserialize, Default)]
#[serde(bound(deserialize = "C: Deserialize<'de>"))]
struct WireMessage<C> {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<C>>,
}

impl<C> WireMessage<C> {
    /// Appends the reasoning, the text and the refusal, in that order, and gives back
    /// the tool calls.
    fn push_texts(self, out: &mut Vec<Chunk>) -> Vec<C> {
        push_text(out, self.reasoning_content.or(self.reasoning), true);
        push_text(out, self.content, false);
        push_text(out, self.refusal, false);
        self.tool_calls.unwrap_or_default()
    }
}

#[derive(Deserialize, Default)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

/// The prompt tokens' breakdown; `cached_tokens` are the prefix the endpoint's own
/// prompt cache served (OpenAI caches by prefix, with no request hints).
#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0);
        Usage::new(self.prompt_tokens, self.completion_tokens).with_cache(cached, 0)
    }
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<WholeChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WholeChoice {
    #[serde(default)]
    index: u64,
    message: WireMessage<WholeCall>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WholeCall {
    #[serde(default)]
    id: Option<String>,
    function: FunctionDelta,
}

/// Argument text as sent: a string verbatim, any other JSON as its text.
fn arguments_text(value: Option<Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    }
}

fn push_text(out: &mut Vec<Chunk>, text: Option<String>, reasoning: bool) {
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        out.push(if reasoning {
            Chunk::Reasoning(text)
        } else {
            Chunk::Text(text)
        });
    }
}

impl OpenAiDecoder {
    pub(crate) fn new(names: NameMap) -> Self {
        Self {
            names,
            calls: BTreeMap::new(),
            finished: false,
            truncated: false,
        }
    }

    /// Ends the answer: the assembled calls, then `Truncated` when the output limit
    /// cut it off.
    fn finish(&mut self, out: &mut Vec<Chunk>) {
        self.flush(out);
        if self.truncated {
            out.push(Chunk::Truncated);
        }
    }

    /// Emits the assembled calls in index order.
    fn flush(&mut self, out: &mut Vec<Chunk>) {
        for (_, call) in std::mem::take(&mut self.calls) {
            out.push(Chunk::ToolCall(ToolCall::new(
                call.id,
                self.names.decode(&call.name),
                call.args,
            )));
        }
    }

    fn absorb(&mut self, fragments: Vec<ToolCallDelta>) {
        for (position, fragment) in fragments.into_iter().enumerate() {
            let index = fragment.index.unwrap_or(position as u64);
            let call = self.calls.entry(index).or_default();
            if let Some(id) = fragment.id.filter(|id| !id.is_empty())
                && call.id.is_empty()
            {
                call.id = id;
            }
            if let Some(function) = fragment.function {
                if let Some(name) = function.name.filter(|n| !n.is_empty())
                    && call.name.is_empty()
                {
                    call.name = name;
                }
                call.args.push_str(&arguments_text(function.arguments));
            }
        }
    }
}

impl Decoder for OpenAiDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<Chunk>) -> Result<Step, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(Step::Complete);
        }
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        let chunk: StreamChunk = serde_json::from_str(data).map_err(|error| {
            Failure::Protocol(format!("a chunk is not valid JSON ({error}): {data:.200}"))
        })?;
        if let Some(error) = chunk.error {
            return Err(Failure::in_body(error, false));
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let fragments = choice.delta.unwrap_or_default().push_texts(out);
            self.absorb(fragments);
            if let Some(reason) = choice.finish_reason {
                self.finished = true;
                self.truncated |= reason == "length";
                self.flush(out);
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(Chunk::Usage(usage.usage()));
        }
        Ok(Step::Continue)
    }

    fn end(&mut self, out: &mut Vec<Chunk>) -> Result<(), Failure> {
        if self.finished {
            self.finish(out);
            return Ok(());
        }
        Err(Failure::Protocol(
            "the stream ended before finish_reason or [DONE]: the answer is incomplete".to_owned(),
        ))
    }

    fn whole(&mut self, body: &[u8], out: &mut Vec<Chunk>) -> Result<(), Failure> {
        let completion: Completion = parse_whole(body, "a chat completion")?;
        let Some(choice) = completion.choices.into_iter().find(|c| c.index == 0) else {
            return Err(Failure::Protocol("the answer has no choices".to_owned()));
        };
        let finish_reason = choice.finish_reason;
        for call in choice.message.push_texts(out) {
            out.push(Chunk::ToolCall(ToolCall::new(
                call.id.unwrap_or_default(),
                self.names
                    .decode(call.function.name.as_deref().unwrap_or_default()),
                arguments_text(call.function.arguments),
            )));
        }
        if let Some(usage) = completion.usage {
            out.push(Chunk::Usage(usage.usage()));
        }
        if finish_reason.as_deref() == Some("length") {
            out.push(Chunk::Truncated);
        }
        Ok(())
    }

    fn reset(&mut self) {
        self.calls.clear();
        self.finished = false;
        self.truncated = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(json: &str) -> SseEvent {
        SseEvent {
            event: String::new(),
            data: json.to_owned(),
        }
    }

    fn decode(events: &[&str]) -> (Vec<Chunk>, Result<Step, Failure>) {
        let names = NameMap::from_names(["add", "a.b"]).unwrap();
        let mut decoder = OpenAiDecoder::new(names);
        let mut out = Vec::new();
        let mut last = Ok(Step::Continue);
        for event in events {
            last = decoder.event(data(event), &mut out);
            if last.is_err() {
                break;
            }
        }
        (out, last)
    }

    #[test]
    fn context_too_long_bodies_are_recognised() {
        assert!(is_context_too_long(
            br#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
        ));
        assert!(is_context_too_long(
            br#"{"object":"error","message":"x","error":{"message":"This model's maximum context length is 8192 tokens."}}"#
        ));
        assert!(is_context_too_long(
            br#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#
        ));
        assert!(!is_context_too_long(
            br#"{"error":{"message":"Invalid 'messages[1].content'","type":"invalid_request_error","code":null}}"#
        ));
    }

    #[test]
    fn cached_prompt_tokens_are_reported() {
        let mut decoder = OpenAiDecoder::new(NameMap::default());
        let mut out = Vec::new();
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}"#;
        assert_eq!(decoder.event(data(usage), &mut out), Ok(Step::Continue));
        let null_details = r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":null}}"#;
        assert_eq!(decoder.event(data(null_details), &mut out), Ok(Step::Continue));
        assert_eq!(
            out,
            vec![
                Chunk::Usage(Usage::new(2006, 300).with_cache(1920, 0)),
                Chunk::Usage(Usage::new(5, 1)),
            ]
        );
    }

    #[test]
    fn fragments_assemble_by_index_in_order() {
        let (out, last) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"other","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"add","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": 2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#,
            "[DONE]",
        ]);
        assert_eq!(last, Ok(Step::Complete));
        assert_eq!(
            out,
            vec![
                Chunk::ToolCall(ToolCall::new("c1", "add", "{\"a\": 2}")),
                Chunk::ToolCall(ToolCall::new("c2", "other", "{}")),
                Chunk::Usage(Usage::new(7, 3)),
            ]
        );
    }

    #[test]
    fn a_stream_without_markers_is_incomplete() {
        let names = NameMap::default();
        let mut decoder = OpenAiDecoder::new(names);
        let mut out = Vec::new();
        decoder
            .event(
                data(r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#),
                &mut out,
            )
            .unwrap();
        assert!(matches!(decoder.end(&mut out), Err(Failure::Protocol(_))));
        decoder
            .event(
                data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
                &mut out,
            )
            .unwrap();
        assert_eq!(decoder.end(&mut out), Ok(()));
        assert_eq!(out, vec![Chunk::Text("hi".to_owned())]);
    }

    #[test]
    fn error_chunks_and_bad_json_fail() {
        let (_, last) = decode(&[r#"{"error":{"message":"boom","type":"server_error"}}"#]);
        assert!(
            matches!(&last, Err(Failure::Provider { message, .. }) if message.contains("boom")),
            "{last:?}"
        );
        let (_, last) = decode(&["{not json"]);
        assert!(matches!(last, Err(Failure::Protocol(_))));
    }

    #[test]
    fn the_output_limit_is_sent_under_the_name_the_model_takes() {
        let request = LlmRequest {
            max_tokens: Some(1234),
            ..LlmRequest::default()
        };
        let names = NameMap::default();
        for model in [
            "gpt-4o",
            "gpt-4.1-mini",
            "qwen2.5-coder-7b",
            "llama-3.1-8b",
            "o1x",
            "omni",
        ] {
            let body = request_body(&request, model, &names, true);
            assert_eq!(body["max_tokens"], json!(1234), "{model}");
            assert!(body.get("max_completion_tokens").is_none(), "{model}");
        }
        for model in ["gpt-5", "gpt-5-mini", "o1", "o3-mini", "o4-mini", "openai/o3"] {
            let body = request_body(&request, model, &names, true);
            assert_eq!(body["max_completion_tokens"], json!(1234), "{model}");
            assert!(body.get("max_tokens").is_none(), "{model}");
        }
        let unset = request_body(&LlmRequest::default(), "m", &names, true);
        assert_eq!(unset["max_tokens"], json!(DEFAULT_MAX_TOKENS));
    }

    #[test]
    fn history_arguments_that_do_not_parse_are_sent_as_an_empty_object() {
        let names = NameMap::default();
        let request = LlmRequest {
            messages: vec![Message::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCall::new("c1", "Write", r#"{"path":"a.txt","content":"hal"#),
                    ToolCall::new("c2", "Read", r#"{"path":"a.txt"}"#),
                ],
            }]
            .into(),
            ..LlmRequest::default()
        };
        let body = request_body(&request, "m", &names, true);
        let calls = &body["messages"][0]["tool_calls"];
        assert_eq!(calls[0]["function"]["arguments"], json!("{}"));
        assert_eq!(calls[1]["function"]["arguments"], json!(r#"{"path":"a.txt"}"#));
    }

    #[test]
    fn finish_reason_length_marks_the_answer_truncated() {
        let (out, last) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":"the list:"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#,
            "[DONE]",
        ]);
        assert_eq!(last, Ok(Step::Complete));
        assert_eq!(
            out,
            vec![
                Chunk::Text("the list:".to_owned()),
                Chunk::Usage(Usage::new(7, 3)),
                Chunk::Truncated,
            ]
        );
    }

    #[test]
    fn requests_map_history_and_encode_names() {
        let names = NameMap::from_names(["mcp__x__a.b"]).unwrap();
        let request = LlmRequest {
            model: String::new(),
            system: "be brief".to_owned(),
            messages: vec![
                Message::User {
                    text: "hi".to_owned(),
                },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall::new("c1", "mcp__x__a.b", "")],
                },
                Message::Tool {
                    result: ToolResult::error("c1", "nope"),
                },
            ]
            .into(),
            tools: vec![engine_ports::ToolSpec::new("mcp__x__a.b", "does a.b")],
            ..LlmRequest::default()
        };
        let body = request_body(&request, "m", &names, true);
        let wire = crate::names::wire_name("mcp__x__a.b");
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["name"],
            json!(wire)
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!("{}")
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "nope"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], json!(wire));
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["stream"], json!(true));
        let whole = request_body(&request, "m", &names, false);
        assert_eq!(whole["stream"], json!(false));
        assert!(whole.get("stream_options").is_none());
    }
}
