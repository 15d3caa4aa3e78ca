//! The permission port: [`PermissionPolicy`] decides whether a call may run.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::call::ToolCall;
use crate::event::Verdict;
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

/// Who made a call's permission decision, as the audit record keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// The permission policy, by one of its rules (read-only tools, `acceptEdits`, a
    /// tool learned through `allow_always`, `--approve`, a headless run's refusal of
    /// an ask).
    Policy,
    /// The person answering the session's asks (an ACP client's
    /// `session/request_permission`, HTTP `/approve`).
    User,
    /// A PreToolUse hook that blocked the call (or failed, which blocks it), allowed
    /// it, or asked in a headless run; `provenance` names its command and reason.
    Hook,
    /// An operator permission rule: an `allow` or a `deny`, or an `ask` refused in a
    /// headless run (an answered ask is the user's); the record's `provenance` names
    /// the rule and its file.
    Rule,
    /// The session's mode: the tool is unknown, or not available in the mode (plan
    /// mode refusing a mutating call). The verdict is always `deny`.
    Mode,
}

/// What the decider decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalVerdict {
    /// The policy let the call run.
    Allow,
    /// The user allowed this call.
    AllowOnce,
    /// The user allowed this call and every later call of the tool in the session.
    AllowAlways,
    /// The call did not run.
    Deny,
}

/// Who decided whether a call runs, and what: the `approval` of a `.tools.jsonl`
/// record (`{"by":"policy"|"user"|"hook","verdict":…}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Approval {
    /// Who decided.
    pub by: Decider,
    /// What was decided.
    pub verdict: ApprovalVerdict,
}

impl Approval {
    /// The policy let the call run.
    pub const POLICY_ALLOW: Self = Self {
        by: Decider::Policy,
        verdict: ApprovalVerdict::Allow,
    };

    /// The policy refused the call.
    pub const POLICY_DENY: Self = Self {
        by: Decider::Policy,
        verdict: ApprovalVerdict::Deny,
    };

    /// A hook blocked the call.
    pub const HOOK_DENY: Self = Self {
        by: Decider::Hook,
        verdict: ApprovalVerdict::Deny,
    };

    /// A rule let the call run.
    pub const RULE_ALLOW: Self = Self {
        by: Decider::Rule,
        verdict: ApprovalVerdict::Allow,
    };

    /// A rule refused the call.
    pub const RULE_DENY: Self = Self {
        by: Decider::Rule,
        verdict: ApprovalVerdict::Deny,
    };

    /// A hook allowed the call.
    pub const HOOK_ALLOW: Self = Self {
        by: Decider::Hook,
        verdict: ApprovalVerdict::Allow,
    };

    /// The mode refused the call.
    pub const MODE_DENY: Self = Self {
        by: Decider::Mode,
        verdict: ApprovalVerdict::Deny,
    };

    /// The user's answer to an ask.
    pub fn user(verdict: Verdict) -> Self {
        Self {
            by: Decider::User,
            verdict: match verdict {
                Verdict::AllowOnce => ApprovalVerdict::AllowOnce,
                Verdict::AllowAlways => ApprovalVerdict::AllowAlways,
                Verdict::Deny => ApprovalVerdict::Deny,
            },
        }
    }

    /// Whether the call may run.
    pub fn allows(self) -> bool {
        self.verdict != ApprovalVerdict::Deny
    }
}
