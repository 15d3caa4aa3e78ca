//! The model port: [`LlmProvider`] and its provider-neutral request and stream types.

use std::pin::Pin;

use async_trait::async_trait;
use futures_core::Stream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
pub use crate::conversation::Conversation;
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
    /// A summary standing for earlier messages: those compaction replaced (always the
    /// first message of a compacted conversation), or the parent conversation a
    /// forked child starts from. Providers send `text` as user input.
    Summary {
        /// The model-visible text: what it is, then the summary.
        text: String,
        /// How many model turns (assistant messages) it stands for, those of an
        /// earlier summary it replaced included.
        replaced_turns: u64,
    },
}

impl Message {
    /// How many model turns this message is or stands for: 1 for an assistant
    /// message, `replaced_turns` for a summary, else 0.
    pub fn model_turns(&self) -> u64 {
        match self {
            Self::Assistant { .. } => 1,
            Self::Summary { replaced_turns, .. } => *replaced_turns,
            Self::User { .. } | Self::Tool { .. } => 0,
        }
    }
}

/// Which conversation a request belongs to. A request's purpose never changes how a
/// provider sends it; it tells a scripted or routing model which conversation it is
/// answering. Every request the harness makes besides a session's own turns is
/// marked as such, so new kinds of side requests are told apart the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RequestPurpose {
    /// A turn of the session's own conversation.
    #[default]
    Conversation,
    /// The one tool-less request that summarizes older turns when the conversation
    /// nears the model's context window.
    Compaction,
    /// A turn of a subagent's conversation (a child session run for a `Subagent`
    /// call).
    Subagent,
    /// A turn of one branch of a `Parallel` call.
    ParallelBranch,
    /// A turn of one member of a `Team`.
    TeamMember,
    /// The tool-less request that picks the winner among `Parallel` branches.
    Judge,
    /// The tool-less request that asks a child which ended without text for a
    /// summary of what it found.
    Salvage,
}

impl RequestPurpose {
    /// Whether this is a turn of the session's own conversation.
    pub fn is_conversation(self) -> bool {
        matches!(self, Self::Conversation)
    }

    /// Whether requests of this purpose are turns of a growing conversation (the
    /// session's own, or a child's: a subagent, a branch, a team member), so each one
    /// repeats the previous one's prefix; side requests (a compaction summary, a
    /// judge, a salvage turn) are sent once.
    pub fn is_turn(self) -> bool {
        matches!(
            self,
            Self::Conversation | Self::Subagent | Self::ParallelBranch | Self::TeamMember
        )
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Conversation => "conversation",
            Self::Compaction => "compaction",
            Self::Subagent => "subagent",
            Self::ParallelBranch => "parallel_branch",
            Self::TeamMember => "team_member",
            Self::Judge => "judge",
            Self::Salvage => "salvage",
        }
    }
}

/// One request to a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmRequest {
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: String,
    /// The conversation so far (shared with the session: building a request copies
    /// no message).
    pub messages: Conversation,
    /// Tools advertised for this turn, sorted by name.
    pub tools: Vec<ToolSpec>,
    /// Which conversation the request belongs to (default: the session's own).
    pub purpose: RequestPurpose,
    /// The most tokens the answer may take (the output limit); `None` sends
    /// [`DEFAULT_MAX_TOKENS`].
    pub max_tokens: Option<u32>,
}

/// The output limit of a request that sets none, in tokens.
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// One wait before another attempt of a request whose previous attempt failed
/// before any of its answer arrived ([`Chunk::Retry`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRetry {
    /// The failed attempt (1-based).
    pub attempt: u32,
    /// Its HTTP status, when it had one.
    pub status: Option<u16>,
    /// The wait before the next attempt.
    pub wait: std::time::Duration,
    /// What went wrong.
    pub error: String,
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
    /// The output limit cut the answer off (OpenAI `finish_reason: "length"`,
    /// Anthropic `stop_reason: "max_tokens"`): its text is incomplete and its tool
    /// calls may be too, so none of them may run. Sent once, before [`Chunk::Done`].
    Truncated,
    /// Nothing of the answer arrived yet and the provider waits before another
    /// attempt: a notice, not part of the answer.
    Retry(ModelRetry),
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
    /// The provider refused the request because the prompt does not fit the model's
    /// context window (Anthropic `prompt is too long`, OpenAI
    /// `context_length_exceeded`). The engine compacts the conversation once and
    /// retries.
    #[error("{provider} request for model {model} does not fit the model's context window: {message}")]
    ContextTooLong {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// The provider's message (bounded).
        message: String,
    },
    /// The request was cancelled.
    #[error("model request cancelled")]
    Cancelled,
}

impl LlmError {
    /// Whether the provider refused the request as longer than the context window.
    pub fn is_context_too_long(&self) -> bool {
        matches!(self, Self::ContextTooLong { .. })
    }
}

/// A language model.
///
/// # Contract
/// - Every [`Chunk::ToolCall`] is a whole call (D12): emitted once, in the model's
///   order, with the argument text verbatim even when it is invalid JSON.
/// - The outer `Err` means the request never started; an `Err` item ends the turn and
///   nothing follows it. A failure after a [`Chunk::Retry`] notice is an `Err` item.
/// - Retries of a failed attempt happen only while nothing of the answer reached the
///   caller; each wait is announced first with a [`Chunk::Retry`].
/// - An answer the output limit cut off ends with [`Chunk::Truncated`] before
///   [`Chunk::Done`]; the provider never repairs or drops its calls (the caller must
///   not run them). [`LlmRequest::max_tokens`] is the limit sent.
/// - Once `cancel` fires the stream ends promptly (with [`LlmError::Cancelled`] or by
///   ending).
/// - Tool names in requests and in emitted calls are the real catalog names; a
///   provider with wire limits encodes and decodes them itself (D6).
/// - A request the provider refuses as longer than the model's context window fails
///   with [`LlmError::ContextTooLong`], never a generic status error.
/// - [`Message::Summary`] is sent as user input. [`LlmRequest::purpose`] never
///   changes the conversation sent; a provider may leave prompt-cache hints off a
///   request that is not a turn of a conversation ([`RequestPurpose::is_turn`]: it is
///   not repeated).
#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// Part kinds this provider can deliver to its model.
    fn capabilities(&self) -> Capabilities;

    /// Starts one model turn.
    async fn stream(&self, request: LlmRequest, cancel: CancellationToken) -> Result<ChunkStream, LlmError>;
}
