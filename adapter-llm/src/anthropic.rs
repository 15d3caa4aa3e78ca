//! `anthropic`: Anthropic Messages (`POST <base>/v1/messages`).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    Capabilities, Chunk, ChunkStream, ContentPart, DEFAULT_MAX_TOKENS, LlmError, LlmProvider, LlmRequest,
    Message, ToolCall, ToolResult, Usage, encode_base64,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{HttpProviderConfig, ProviderKind};
use crate::names::NameMap;
use crate::sse::SseEvent;
use crate::transport::{Decoder, Failure, HttpCore, Step, parse_whole};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Image types a `tool_result` can carry.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// An Anthropic Messages provider.
///
/// Sends `stream: true` (or `false`) and the request's output limit as `max_tokens`,
/// advertises tools under D6 wire names, returns tool results as `tool_result` blocks
/// grouped per user message, and emits each `tool_use` block as one whole call at its
/// `content_block_stop` (D12). A `stop_reason` of `max_tokens` ends the answer with
/// `Chunk::Truncated`.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    core: Arc<HttpCore>,
}

impl AnthropicProvider {
    /// A provider with `config` (base URL = the server root, default
    /// `https://api.anthropic.com`; model default `claude-sonnet-4-6`).
    ///
    /// # Errors
    /// [`LlmError::Config`] for a base URL that is not http(s), a key that cannot be
    /// a header value, or an HTTP client that cannot be built.
    pub fn new(config: HttpProviderConfig) -> Result<Self, LlmError> {
        let key = config.api_key.expose().to_owned();
        let core = HttpCore::new(
            ProviderKind::Anthropic,
            config,
            "/v1/messages",
            vec![
                ("x-api-key", key),
                ("anthropic-version", ANTHROPIC_VERSION.to_owned()),
            ],
        )?;
        Ok(Self { core: Arc::new(core) })
    }
}

#[async_trait]
impl LlmProvider for AnthropicProvider {
    /// Images travel inside `tool_result` blocks; audio and PDF become text.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            image: true,
            audio: false,
            pdf: false,
        }
    }

    async fn stream(&self, request: LlmRequest, cancel: CancellationToken) -> Result<ChunkStream, LlmError> {
        let who = self.core.who(&request.model);
        let names = NameMap::for_request(&request).map_err(|collision| who.config(collision.to_string()))?;
        let body = request_body(&request, &who.model, &names, self.core.streaming);
        let bytes = serde_json::to_vec(&body).map_err(|error| who.config(error.to_string()))?;
        self.core
            .exchange(who, bytes, AnthropicDecoder::new(names), cancel)
            .await
    }
}

/// The prompt-cache breakpoint Anthropic caches a prefix up to.
fn cache_breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// The request JSON. Consecutive messages of one role merge into one message, so
/// tool results of a turn form one user message (results first, then any user text);
/// a summary is user text.
///
/// Prompt caching: the system prompt and the tool list are byte-stable across a
/// session's turns, so a conversation request marks the last tool, the system block,
/// the last block of the latest message and the last block of the message that was
/// latest one turn earlier with `cache_control` breakpoints (at most 4, the API's
/// limit): each turn reads the prefix the previous one wrote. Other requests (a
/// compaction summary) are sent once and carry none.
pub(crate) fn request_body(request: &LlmRequest, model: &str, names: &NameMap, streaming: bool) -> Value {
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } | Message::Summary { text, .. } => {
                ("user", text_block(text).into_iter().collect())
            }
            Message::Assistant { text, tool_calls } => {
                let mut blocks: Vec<Value> = text_block(text).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({
                        "type": "tool_use",
                        "id": call.id().as_str(),
                        "name": names.encode(call.name()),
                        "input": input_object(call),
                    })
                }));
                ("assistant", blocks)
            }
            Message::Tool { result } => ("user", vec![tool_result_block(result)]),
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let cache = request.purpose.is_turn();
    if cache {
        let count = messages.len();
        for index in [count.checked_sub(1), count.checked_sub(3)].into_iter().flatten() {
            if let Some(block) = messages[index].1.last_mut() {
                block["cache_control"] = cache_breakpoint();
            }
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if !request.system.is_empty() {
        let mut block = json!({"type": "text", "text": request.system});
        if cache {
            block["cache_control"] = cache_breakpoint();
        }
        body["system"] = json!([block]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|spec| {
                json!({
                    "name": names.encode(spec.name()),
                    "description": spec.description(),
                    "input_schema": crate::wire_schema(spec),
                })
            })
            .collect();
        if cache && let Some(last) = tools.last_mut() {
            last["cache_control"] = cache_breakpoint();
        }
        body["tools"] = Value::Array(tools);
    }
    body["stream"] = json!(streaming);
    body
}

/// Whether an error body says the prompt does not fit the model's context window
/// (`prompt is too long: N tokens > M maximum`, or input plus `max_tokens` over the
/// limit).
pub(crate) fn is_context_too_long(body: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let message = value
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    message.contains("prompt is too long") || message.contains("exceed context limit")
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// A `tool_use` input must be an object: the parsed arguments when they are one, else
/// `{}` (the tool already answered invalid arguments with an error result).
fn input_object(call: &ToolCall) -> Value {
    match serde_json::from_str::<Value>(call.args()) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    }
}

fn tool_result_block(result: &ToolResult) -> Value {
    let mut block = json!({"type": "tool_result", "tool_use_id": result.call_id().as_str()});
    if result.parts().is_empty() {
        if !result.content().is_empty() {
            block["content"] = json!(result.content());
        }
    } else {
        let mut content: Vec<Value> = Vec::new();
        for part in result.parts() {
            match part {
                ContentPart::Image { mime, data } if supported_image(mime).is_some() => content.push(json!({
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": supported_image(mime),
                        "data": encode_base64(data),
                    }
                })),
                other => {
                    let text = other.text_projection();
                    if !text.is_empty() {
                        content.push(json!({"type": "text", "text": text}));
                    }
                }
            }
        }
        if content.is_empty() && !result.content().is_empty() {
            content.push(json!({"type": "text", "text": result.content()}));
        }
        if !content.is_empty() {
            block["content"] = Value::Array(content);
        }
    }
    if result.is_error() {
        block["is_error"] = json!(true);
    }
    block
}

/// The bare media type of an image Anthropic accepts.
fn supported_image(mime: &str) -> Option<&'static str> {
    let bare = mime
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    IMAGE_TYPES.into_iter().find(|t| *t == bare)
}

/// Assembles Messages stream events into [`Chunk`]s.
#[derive(Debug)]
pub(crate) struct AnthropicDecoder {
    names: NameMap,
    blocks: HashMap<u64, Block>,
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
    saw_usage: bool,
    /// `stop_reason` was `max_tokens`: the output limit cut the answer off.
    truncated: bool,
}

#[derive(Debug)]
enum Block {
    ToolUse {
        id: String,
        name: String,
        initial: Value,
        json: String,
    },
    Other,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// All prompt tokens, cached ones included.
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        #[serde(default)]
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        #[serde(default)]
        index: u64,
        delta: Value,
    },
    ContentBlockStop {
        #[serde(default)]
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<Value>,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WholeMessage {
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    stop_reason: Option<String>,
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn push_non_empty(out: &mut Vec<Chunk>, text: &str, reasoning: bool) {
    if !text.is_empty() {
        out.push(if reasoning {
            Chunk::Reasoning(text.to_owned())
        } else {
            Chunk::Text(text.to_owned())
        });
    }
}

impl AnthropicDecoder {
    pub(crate) fn new(names: NameMap) -> Self {
        Self {
            names,
            blocks: HashMap::new(),
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            saw_usage: false,
            truncated: false,
        }
    }

    /// Takes the counts an event reports (later events repeat or update them).
    fn take_usage(&mut self, usage: Option<WireUsage>) {
        let Some(usage) = usage else { return };
        if let Some(input) = usage.input() {
            self.input_tokens = input;
            self.cache_read_tokens = usage.cache_read_input_tokens.unwrap_or(0);
            self.cache_write_tokens = usage.cache_creation_input_tokens.unwrap_or(0);
            self.saw_usage = true;
        }
        if let Some(output) = usage.output_tokens {
            self.output_tokens = output;
            self.saw_usage = true;
        }
    }

    /// The usage chunk of the answer.
    fn usage(&self) -> Chunk {
        Chunk::Usage(
            Usage::new(self.input_tokens, self.output_tokens)
                .with_cache(self.cache_read_tokens, self.cache_write_tokens),
        )
    }

    fn call(&self, id: String, name: &str, args: String) -> Chunk {
        Chunk::ToolCall(ToolCall::new(id, self.names.decode(name), args))
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<Chunk>) -> Result<Step, Failure> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        let parsed: StreamEvent = serde_json::from_str(data).map_err(|error| {
            Failure::Protocol(format!(
                "event {:?} is not valid ({error}): {data:.200}",
                event.event
            ))
        })?;
        match parsed {
            StreamEvent::MessageStart { message } => self.take_usage(message.usage),
            StreamEvent::ContentBlockStart { index, content_block } => {
                let block = match str_field(&content_block, "type") {
                    "text" => {
                        push_non_empty(out, str_field(&content_block, "text"), false);
                        Block::Other
                    }
                    "thinking" => {
                        push_non_empty(out, str_field(&content_block, "thinking"), true);
                        Block::Other
                    }
                    "tool_use" => Block::ToolUse {
                        id: str_field(&content_block, "id").to_owned(),
                        name: str_field(&content_block, "name").to_owned(),
                        initial: content_block.get("input").cloned().unwrap_or_else(|| json!({})),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            StreamEvent::ContentBlockDelta { index, delta } => match str_field(&delta, "type") {
                "text_delta" => push_non_empty(out, str_field(&delta, "text"), false),
                "thinking_delta" => push_non_empty(out, str_field(&delta, "thinking"), true),
                "input_json_delta" => match self.blocks.get_mut(&index) {
                    Some(Block::ToolUse { json, .. }) => json.push_str(str_field(&delta, "partial_json")),
                    _ => {
                        return Err(Failure::Protocol(format!(
                            "input_json_delta for block {index}, which is not an open tool_use block"
                        )));
                    }
                },
                _ => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if let Some(Block::ToolUse {
                    id,
                    name,
                    initial,
                    json,
                }) = self.blocks.remove(&index)
                {
                    let args = if json.is_empty() {
                        initial.to_string()
                    } else {
                        json
                    };
                    out.push(self.call(id, &name, args));
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                self.truncated |= delta
                    .as_ref()
                    .is_some_and(|delta| str_field(delta, "stop_reason") == "max_tokens");
                self.take_usage(usage);
            }
            StreamEvent::MessageStop => {
                let mut open: Vec<u64> = self
                    .blocks
                    .iter()
                    .filter_map(|(index, block)| matches!(block, Block::ToolUse { .. }).then_some(*index))
                    .collect();
                open.sort_unstable();
                if let Some(index) = open.first().filter(|_| !self.truncated) {
                    return Err(Failure::Protocol(format!(
                        "message_stop arrived while tool_use block {index} was still open"
                    )));
                }
                // A call the output limit cut off is passed on as it stands (the
                // answer is marked truncated, so it never runs).
                for index in open {
                    if let Some(Block::ToolUse { id, name, json, .. }) = self.blocks.remove(&index) {
                        out.push(self.call(id, &name, json));
                    }
                }
                if self.saw_usage {
                    out.push(self.usage());
                }
                if self.truncated {
                    out.push(Chunk::Truncated);
                }
                return Ok(Step::Complete);
            }
            StreamEvent::Ping | StreamEvent::Unknown => {}
            StreamEvent::Error { error } => {
                let retryable = matches!(str_field(&error, "type"), "overloaded_error" | "api_error");
                return Err(Failure::in_body(error, retryable));
            }
        }
        Ok(Step::Continue)
    }

    fn end(&mut self, _out: &mut Vec<Chunk>) -> Result<(), Failure> {
        Err(Failure::Protocol(
            "the stream ended before message_stop: the answer is incomplete".to_owned(),
        ))
    }

    fn whole(&mut self, body: &[u8], out: &mut Vec<Chunk>) -> Result<(), Failure> {
        let message: WholeMessage = parse_whole(body, "a message")?;
        for block in &message.content {
            match str_field(block, "type") {
                "text" => push_non_empty(out, str_field(block, "text"), false),
                "thinking" => push_non_empty(out, str_field(block, "thinking"), true),
                "tool_use" => {
                    let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                    out.push(self.call(
                        str_field(block, "id").to_owned(),
                        str_field(block, "name"),
                        input.to_string(),
                    ));
                }
                _ => {}
            }
        }
        self.take_usage(message.usage);
        if self.saw_usage {
            out.push(self.usage());
        }
        if message.stop_reason.as_deref() == Some("max_tokens") {
            out.push(Chunk::Truncated);
        }
        Ok(())
    }

    fn reset(&mut self) {
        self.blocks.clear();
        self.input_tokens = 0;
        self.output_tokens = 0;
        self.cache_read_tokens = 0;
        self.cache_write_tokens = 0;
        self.saw_usage = false;
        self.truncated = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: Value) -> SseEvent {
        SseEvent {
            event: str_field(&data, "type").to_owned(),
            data: data.to_string(),
        }
    }

    #[test]
    fn blocks_assemble_in_order_with_usage() {
        let mut decoder = AnthropicDecoder::new(NameMap::default());
        let mut out = Vec::new();
        let events = [
            json!({"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"ping"}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"let me "}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"add"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"add","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":": 2}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t2","name":"now","input":{}}}),
            json!({"type":"content_block_stop","index":2}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}),
        ];
        for e in events {
            assert_eq!(decoder.event(event(e), &mut out), Ok(Step::Continue));
        }
        assert_eq!(
            decoder.event(event(json!({"type":"message_stop"})), &mut out),
            Ok(Step::Complete)
        );
        assert_eq!(
            out,
            vec![
                Chunk::Text("let me ".to_owned()),
                Chunk::Text("add".to_owned()),
                Chunk::ToolCall(ToolCall::new("t1", "add", "{\"a\": 2}")),
                Chunk::ToolCall(ToolCall::new("t2", "now", "{}")),
                Chunk::Usage(Usage::new(15, 9).with_cache(5, 0)),
            ]
        );
    }

    #[test]
    fn a_tool_use_left_open_by_max_tokens_is_passed_on_truncated() {
        let mut decoder = AnthropicDecoder::new(NameMap::default());
        let mut out = Vec::new();
        let events = [
            json!({"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"add","input":{}}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 2, \"b"}}),
            json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":8}}),
        ];
        for e in events {
            assert_eq!(decoder.event(event(e), &mut out), Ok(Step::Continue));
        }
        assert_eq!(
            decoder.event(event(json!({"type":"message_stop"})), &mut out),
            Ok(Step::Complete)
        );
        assert_eq!(
            out,
            vec![
                Chunk::ToolCall(ToolCall::new("t1", "add", "{\"a\": 2, \"b")),
                Chunk::Usage(Usage::new(10, 8)),
                Chunk::Truncated,
            ]
        );
    }

    #[test]
    fn error_events_fail_and_cut_streams_are_errors() {
        let mut decoder = AnthropicDecoder::new(NameMap::default());
        let mut out = Vec::new();
        let failure = decoder
            .event(
                event(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
                &mut out,
            )
            .unwrap_err();
        assert_eq!(
            failure,
            Failure::Provider {
                message: "overloaded_error: Overloaded".to_owned(),
                retryable: true
            }
        );
        assert!(matches!(decoder.end(&mut out), Err(Failure::Protocol(_))));
    }

    #[test]
    fn results_group_per_user_message() {
        let names = NameMap::from_names(["Read", "mcp__x__a.b"]).unwrap();
        let request = LlmRequest {
            model: String::new(),
            system: "sys".to_owned(),
            messages: vec![
                Message::User {
                    text: "hi".to_owned(),
                },
                Message::Assistant {
                    text: "looking".to_owned(),
                    tool_calls: vec![
                        ToolCall::new("c1", "Read", r#"{"path":"a"}"#),
                        ToolCall::new("c2", "mcp__x__a.b", "{bad"),
                    ],
                },
                Message::Tool {
                    result: ToolResult::text("c1", "text of a"),
                },
                Message::Tool {
                    result: ToolResult::error("c2", "invalid arguments"),
                },
                Message::User {
                    text: "go on".to_owned(),
                },
            ]
            .into(),
            tools: Vec::new(),
            ..LlmRequest::default()
        };
        let body = request_body(&request, "claude", &names, true);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["max_tokens"], json!(8192));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][1]["input"], json!({"path": "a"}));
        assert_eq!(messages[1]["content"][2]["input"], json!({}));
        assert_eq!(
            messages[1]["content"][2]["name"],
            json!(crate::names::wire_name("mcp__x__a.b"))
        );
        assert_eq!(
            messages[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "c1", "content": "text of a"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "invalid arguments", "is_error": true},
                {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}},
            ])
        );
    }

    #[test]
    fn context_too_long_bodies_are_recognised() {
        assert!(is_context_too_long(
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212345 tokens > 200000 maximum"}}"#
        ));
        assert!(is_context_too_long(
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000"}}"#
        ));
        assert!(!is_context_too_long(
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}"#
        ));
        assert!(!is_context_too_long(b"prompt is too long"));
    }

    #[test]
    fn images_travel_when_supported() {
        let result = ToolResult::with_parts(
            "c1",
            "an image",
            vec![
                ContentPart::text("see"),
                ContentPart::Image {
                    mime: "image/png".to_owned(),
                    data: vec![1, 2, 3],
                },
                ContentPart::Image {
                    mime: "image/tiff".to_owned(),
                    data: vec![1],
                },
            ],
        )
        .unwrap();
        let block = tool_result_block(&result);
        assert_eq!(
            block["content"],
            json!([
                {"type": "text", "text": "see"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AQID"}},
            ])
        );
    }
}
