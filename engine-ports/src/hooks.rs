//! The hooks port: [`ToolHooks`] can veto or rewrite a call and rewrite its result.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::call::ToolCall;
use crate::ids::SessionId;
use crate::result::ToolResult;

/// Answer of the PreToolUse hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Pre {
    /// Go on (the rules and the approval level decide).
    Allow,
    /// Block the call; the model sees `message`.
    Deny {
        /// Why.
        message: String,
    },
    /// Allow the call without asking (an operator hook's `permissionDecision:
    /// allow`); `deny` rules were already applied.
    Approve {
        /// The hook (its command), for the audit.
        hook: String,
        /// Why.
        reason: String,
    },
    /// Ask the person (a headless run refuses).
    Ask {
        /// The hook (its command), for the audit.
        hook: String,
        /// Shown to the person.
        reason: String,
    },
    /// Block the call, naming the hook for the audit; the model sees `reason`.
    Block {
        /// The hook (its command).
        hook: String,
        /// Why.
        reason: String,
    },
    /// Replace the argument text (must be valid JSON, else it is ignored).
    RewriteArgs {
        /// The new argument text.
        args: String,
    },
}

/// Answer of the PostToolUse hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Post {
    /// Keep the result.
    Keep,
    /// Replace it (same call id, no parts).
    Rewrite {
        /// New content.
        content: String,
        /// New error flag.
        is_error: bool,
    },
}

/// A hook that failed. PreToolUse failures deny the call (fail closed);
/// PostToolUse failures keep the result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("hook failed: {message}")]
pub struct HookError {
    /// What went wrong.
    pub message: String,
}

impl HookError {
    /// A failure with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Operator hooks around tool execution.
///
/// # Contract
/// `pre_tool_use` runs after the mode and the `deny` rules, before the other rules,
/// the approval level and the person; a rewrite keeps id and name and goes through
/// the rules (a `deny` included), the approval level and the person again. `post_tool_use` runs
/// after execution and before recording, seeing the result's text projection.
#[async_trait]
pub trait ToolHooks: Send + Sync {
    /// Before execution.
    async fn pre_tool_use(&self, session: &SessionId, call: &ToolCall) -> Result<Pre, HookError>;
    /// After execution.
    async fn post_tool_use(
        &self,
        session: &SessionId,
        call: &ToolCall,
        result: &ToolResult,
    ) -> Result<Post, HookError>;
}
