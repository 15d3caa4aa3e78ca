//! [`ToolResult`]: the one result every tool call gets.

use serde::{Deserialize, Serialize};

use crate::content::{ContentError, ContentPart, validate_parts};
use crate::ids::ToolCallId;

/// The result of one tool call.
///
/// `content` is always a self-contained plain-text summary (used by text output,
/// hooks and audit). With non-empty `parts`, provider adapters send the parts and
/// replace a kind the provider cannot carry by its text projection. Serde omits empty
/// `parts`; deserialization runs the [`ToolResult::with_parts`] validation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ToolResultWire")]
pub struct ToolResult {
    call_id: ToolCallId,
    content: String,
    is_error: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parts: Vec<ContentPart>,
}

#[derive(Deserialize)]
struct ToolResultWire {
    call_id: ToolCallId,
    content: String,
    is_error: bool,
    #[serde(default)]
    parts: Vec<ContentPart>,
}

impl TryFrom<ToolResultWire> for ToolResult {
    type Error = ContentError;

    fn try_from(wire: ToolResultWire) -> Result<Self, Self::Error> {
        validate_parts(&wire.parts)?;
        Ok(Self {
            call_id: wire.call_id,
            content: wire.content,
            is_error: wire.is_error,
            parts: wire.parts,
        })
    }
}

impl ToolResult {
    /// A successful text result.
    pub fn text(call_id: impl Into<ToolCallId>, content: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            content: content.into(),
            is_error: false,
            parts: Vec::new(),
        }
    }

    /// An error result the model can act on.
    pub fn error(call_id: impl Into<ToolCallId>, message: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            content: message.into(),
            is_error: true,
            parts: Vec::new(),
        }
    }

    /// A successful result with typed parts and a plain-text `summary`.
    ///
    /// # Errors
    /// [`ContentError`] naming the cap a part breaks.
    pub fn with_parts(
        call_id: impl Into<ToolCallId>,
        summary: impl Into<String>,
        parts: Vec<ContentPart>,
    ) -> Result<Self, ContentError> {
        validate_parts(&parts)?;
        Ok(Self {
            call_id: call_id.into(),
            content: summary.into(),
            is_error: false,
            parts,
        })
    }

    /// The call this result answers.
    pub fn call_id(&self) -> &ToolCallId {
        &self.call_id
    }

    /// The plain-text summary.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Whether the call failed in a way the model should see.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The typed parts (empty for plain results).
    pub fn parts(&self) -> &[ContentPart] {
        &self.parts
    }

    /// The same result answering another call id (parts kept).
    pub fn with_call_id(mut self, call_id: impl Into<ToolCallId>) -> Self {
        self.call_id = call_id.into();
        self
    }

    /// The same result with other summary text (parts kept).
    pub fn with_content(mut self, content: impl Into<String>) -> Self {
        self.content = content.into();
        self
    }

    /// The model-facing text: the non-empty part projections joined with `\n`, or
    /// `content` when there are no parts.
    pub fn text_projection(&self) -> String {
        if self.parts.is_empty() {
            return self.content.clone();
        }
        let pieces: Vec<String> = self
            .parts
            .iter()
            .map(ContentPart::text_projection)
            .filter(|s| !s.is_empty())
            .collect();
        pieces.join("\n")
    }
}
