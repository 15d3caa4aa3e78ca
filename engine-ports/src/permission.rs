//! The permission port: [`PermissionPolicy`] decides whether a call may run.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::call::ToolCall;
use crate::ids::SessionId;
use crate::mode::PermissionMode;

/// What a policy is asked about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PermissionRequest {
    /// The session.
    pub session_id: SessionId,
    /// Its mode (plan mode is enforced before the policy, D1).
    pub mode: PermissionMode,
    /// The call (after id normalization).
    pub call: ToolCall,
    /// Whether the resolved tool is read-only.
    pub read_only: bool,
}

/// A policy's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Ask an operator (a headless engine turns this into a deny).
    Ask {
        /// Shown to the operator.
        reason: String,
    },
    /// Do not run it; the model sees the reason.
    Deny {
        /// Shown to the model.
        reason: String,
    },
}

/// Decides whether a call may run.
///
/// # Contract
/// `evaluate` must not block for long (asks are handled by the engine, not the
/// policy); `learn` is called when an operator answers `allow_always` and must make
/// later identical-tool calls of that session `Allow`.
#[async_trait]
pub trait PermissionPolicy: Send + Sync {
    /// Decides for one call.
    async fn evaluate(&self, request: &PermissionRequest) -> Decision;
    /// Remembers an `allow_always` answer for the session.
    fn learn(&self, session: &SessionId, call: &ToolCall);
}
