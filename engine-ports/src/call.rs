//! [`ToolCall`]: one call the model made, with its argument text kept verbatim.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ids::ToolCallId;
use crate::result::ToolResult;

/// One tool call as the model produced it.
///
/// `args` is the exact text the model produced: it may be empty or invalid JSON, and
/// nothing in the core validates it against the tool's schema. The serde form is
/// `{"id","name","args"}` with `args` as a JSON string, so the text round-trips byte
/// for byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    id: ToolCallId,
    /// Shared, like the id: a call is cloned into its task, its events and the
    /// permission request, and the clone copies no text.
    name: Arc<str>,
    args: Arc<str>,
}

impl ToolCall {
    /// A call of tool `name` with raw argument text `args`.
    pub fn new(id: impl Into<ToolCallId>, name: impl Into<String>, args: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: Arc::from(name.into()),
            args: Arc::from(args.into()),
        }
    }

    /// The call id.
    pub fn id(&self) -> &ToolCallId {
        &self.id
    }

    /// The tool name as the catalog knows it (never a wire-encoded name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw argument text.
    pub fn args(&self) -> &str {
        &self.args
    }

    /// The same call under another id (used by id normalization).
    pub fn with_id(&self, id: impl Into<ToolCallId>) -> Self {
        Self {
            id: id.into(),
            name: self.name.clone(),
            args: self.args.clone(),
        }
    }

    /// The same call with other argument text (used by argument-rewriting hooks).
    pub fn with_args(&self, args: impl Into<String>) -> Self {
        Self {
            id: self.id.clone(),
            name: self.name.clone(),
            args: Arc::from(args.into()),
        }
    }

    /// The arguments as a JSON value, for events and audit records: the parsed value
    /// when the text is valid JSON, `{}` when it is empty or whitespace, else a JSON
    /// string holding the raw text.
    pub fn args_value(&self) -> serde_json::Value {
        if self.args.trim().is_empty() {
            return serde_json::Value::Object(serde_json::Map::new());
        }
        serde_json::from_str(&self.args).unwrap_or_else(|_| serde_json::Value::String(self.args.to_string()))
    }

    /// Parses the arguments into `T`.
    ///
    /// Empty or whitespace text and `null` parse as `{}`, so an all-optional argument
    /// struct needs no arguments (required fields still fail).
    ///
    /// # Errors
    /// [`ArgsError`] with the parser's message (line and column); turn it into the
    /// uniform model-facing result with [`ArgsError::into_result`].
    pub fn parse_args<T: DeserializeOwned>(&self) -> Result<T, ArgsError> {
        let text = self.args.trim();
        let parsed = if text.is_empty() || text == "null" {
            serde_json::from_str("{}")
        } else {
            serde_json::from_str(text)
        };
        parsed.map_err(|source| ArgsError {
            tool: self.name.to_string(),
            message: source.to_string(),
        })
    }
}

/// Arguments that did not parse into a tool's argument type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid arguments for tool {tool}: {message}")]
pub struct ArgsError {
    tool: String,
    message: String,
}

impl ArgsError {
    /// The tool whose arguments were invalid.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The parser's message (with line and column where the parser gives them).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The model-facing error result for `call`: names the tool, says the arguments
    /// were invalid, quotes the parser message and says what to do.
    pub fn into_result(self, call: &ToolCall) -> ToolResult {
        ToolResult::error(
            call.id().clone(),
            format!(
                "invalid arguments for tool {}: {}. Send a JSON object that matches the tool's schema.",
                call.name(),
                self.message
            ),
        )
    }
}
