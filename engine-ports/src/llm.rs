//! The model port: [`LlmProvider`] and its provider-neutral request and stream types.

use std::pin::Pin;

use async_trait::async_trait;
use futures_core::Stream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::result::ToolResult;
use crate::spec::ToolSpec;
use crate::usage::Usage;

/// What kinds of typed tool-result parts a provider can carry to its model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Capabilities {
    /// Images.
    pub image: bool,
    /// Audio.
    pub audio: bool,
    /// PDF documents.
    pub pdf: bool,
}

/// One message of a conversation, provider-neutral.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Operator or user input (after command expansion).
    User {
        /// The text.
        text: String,
    },
    /// A model turn.
    Assistant {
        /// Its text.
        text: String,
        /// Its tool calls, with normalized ids.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The result.
        result: ToolResult,
    },
}

/// One request to a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmRequest {
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools advertised for this turn, sorted by name.
    pub tools: Vec<ToolSpec>,
}

/// One item of a model's streamed answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Chunk {
    /// Assistant text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
    /// A whole tool call (D12).
    ToolCall(ToolCall),
    /// Token usage (summed by the loop).
    Usage(Usage),
    /// The answer is complete.
    Done,
}

/// The streamed answer of one request.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<Chunk, LlmError>> + Send>>;

/// A model request that failed. Messages name provider, model and status and never
/// contain a key or a header value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The provider answered with an HTTP error status.
    #[error("{provider} request for model {model} failed with HTTP {status}: {message}")]
    Status {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// HTTP status.
        status: u16,
        /// The provider's message (bounded) plus any hint.
        message: String,
    },
    /// The connection failed or broke.
    #[error("{provider} request for model {model} failed: {message}")]
    Transport {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// What happened.
        message: String,
    },
    /// The provider sent something that breaks its protocol.
    #[error("{provider} stream for model {model} was malformed: {message}")]
    Protocol {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// What was wrong.
        message: String,
    },
    /// The provider is misconfigured (missing key, bad name mapping, …).
    #[error("{provider} configuration error: {message}")]
    Config {
        /// Provider name.
        provider: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// The request was cancelled.
    #[error("model request cancelled")]
    Cancelled,
}

/// A language model.
///
/// # Contract
/// - Every [`Chunk::ToolCall`] is a whole call (D12): emitted once, in the model's
///   order, with the argument text verbatim even when it is invalid JSON.
/// - The outer `Err` means the request never started; an `Err` item ends the turn and
///   nothing follows it.
/// - Once `cancel` fires the stream ends promptly (with [`LlmError::Cancelled`] or by
///   ending).
/// - Tool names in requests and in emitted calls are the real catalog names; a
///   provider with wire limits encodes and decodes them itself (D6).
#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// Part kinds this provider can deliver to its model.
    fn capabilities(&self) -> Capabilities;

    /// Starts one model turn.
    async fn stream(&self, request: LlmRequest, cancel: CancellationToken) -> Result<ChunkStream, LlmError>;
}
