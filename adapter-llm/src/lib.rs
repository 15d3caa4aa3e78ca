//! LLM providers for the Mecatl engine: implementations of the
//! [`LlmProvider`] port.
//!
//! Three providers: [`MockProvider`] (offline: `--mock` answers one canned text turn,
//! `--mock-script` replays a [`MockScript`] per session), [`OpenAiChatProvider`]
//! (OpenAI-compatible chat completions, `openai-chat`) and [`AnthropicProvider`]
//! (Anthropic Messages, `anthropic`). The HTTP providers stream server-sent events,
//! assemble tool-call fragments into whole calls (D12), retry only before anything
//! reached the caller, and encode tool names reversibly for the wire (D6:
//! [`wire_name`], [`NameMap`]) so the engine only ever sees real names. This crate is
//! not the agent loop (that is `engine-core`) and reads no environment: the
//! application passes the key in an [`HttpProviderConfig`].
//!
//! Start with [`build_http_provider`] or the provider constructors; the app parses
//! `--mock-script` with [`MockScript::from_file`].
//!
//! ```
//! use adapter_llm::{ApiKey, HttpProviderConfig, ProviderKind, build_http_provider};
//!
//! let kind: ProviderKind = "anthropic".parse().unwrap();
//! let config = HttpProviderConfig::new(ApiKey::new("sk-test")).with_model("claude-sonnet-4-6");
//! let provider = build_http_provider(kind, config).unwrap();
//! assert!(provider.capabilities().image);
//! ```

mod anthropic;
mod config;
mod mock;
mod mock_script;
mod names;
mod openai;
mod prices;
mod sse;
mod transport;

use std::sync::Arc;

use engine_ports::{LlmError, LlmProvider, ToolSpec};
use serde_json::{Value, json};

// The public surface, in one place.
pub use anthropic::{ANTHROPIC_VERSION, AnthropicProvider};
pub use config::{
    ApiKey, DEFAULT_RETRY_BUDGET, HttpProviderConfig, ProviderKind, RetryPolicy, Timeouts, UnknownProvider,
};
pub use mock::{MOCK_NOT_CONFIGURED_TEXT, MOCK_SCRIPT_EXHAUSTED_TEXT, MockProvider};
pub use mock_script::{MAX_DELAY_MS, MockChild, MockEnding, MockScript, MockTurn, ScriptError};
pub use names::{MAX_WIRE_NAME_LEN, NameCollision, NameMap, is_wire_safe, wire_name};
pub use openai::{OpenAiChatProvider, uses_max_completion_tokens};
pub use prices::{MAX_PRICES_FILE_BYTES, ModelPrices, Price, PricesError};
pub use transport::MAX_PROVIDER_MESSAGE_BYTES;

/// The HTTP provider of `kind` with `config`.
///
/// # Errors
/// [`LlmError::Config`] for a bad base URL or key, or an HTTP client that cannot be
/// built.
pub fn build_http_provider(
    kind: ProviderKind,
    config: HttpProviderConfig,
) -> Result<Arc<dyn LlmProvider>, LlmError> {
    Ok(match kind {
        ProviderKind::OpenAiChat => Arc::new(OpenAiChatProvider::new(config)?),
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(config)?),
    })
}

/// The argument schema `spec` is declared with on the wire: its own, or an empty
/// object schema when it has none (both wire formats require one).
pub(crate) fn wire_schema(spec: &ToolSpec) -> Value {
    spec.schema()
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}))
}
