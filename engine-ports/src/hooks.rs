//! The hooks port: [`ToolHooks`] can veto or rewrite a call and rewrite its result,
//! and is told the session's other events ([`SessionEvent`]): a session starting, a
//! prompt submitted, the model stopping, a child finishing, a compaction coming.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::call::ToolCall;
use crate::event::StopReason;
use crate::ids::SessionId;
use crate::result::ToolResult;

/// The events operator hooks listen to, by their settings names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    /// Before a tool call is decided by the rules' `ask`/`allow` and the approval level.
    PreToolUse,
    /// After a tool call ran, before its result is recorded.
    PostToolUse,
    /// A prompt was submitted, before the model sees it.
    UserPromptSubmit,
    /// The model answered without tool calls (a session's own conversation).
    Stop,
    /// A session starts: its first run in this process.
    SessionStart,
    /// A child (a subagent, a `Parallel` branch, a team member) finished its run.
    SubagentStop,
    /// Before the conversation is compacted.
    PreCompact,
}

crate::keyword_words! {
    HookEvent {
        PreToolUse => "PreToolUse",
        PostToolUse => "PostToolUse",
        UserPromptSubmit => "UserPromptSubmit",
        Stop => "Stop",
        SessionStart => "SessionStart",
        SubagentStop => "SubagentStop",
        PreCompact => "PreCompact",
    }
    parse_error: ParseHookEventError { value }
}

/// A hook event name this harness does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event {value:?}: expected one of {}", <HookEvent as crate::Keyword>::expected())]
pub struct ParseHookEventError {
    /// The rejected name.
    pub value: String,
}

/// Why a session starts (`SessionStart`'s `source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSource {
    /// A new session's first run.
    Startup,
    /// The first run in this process of a session that already has a conversation.
    Resume,
    /// The conversation was cleared.
    Clear,
    /// The conversation was just compacted.
    Compact,
}

crate::keyword_words! {
    SessionSource {
        Startup => "startup",
        Resume => "resume",
        Clear => "clear",
        Compact => "compact",
    }
}

/// What asked for a compaction (`PreCompact`'s `trigger`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The user asked for it.
    Manual,
    /// The engine did (the context window was nearly full, or the provider refused a
    /// request as too long).
    Auto,
}

crate::keyword_words! {
    CompactTrigger {
        Manual => "manual",
        Auto => "auto",
    }
}

/// A session event other than a tool call, told to the hooks with what it carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEvent {
    /// A session starts.
    SessionStart {
        /// Why.
        source: SessionSource,
    },
    /// A prompt was submitted (before slash-command expansion).
    UserPromptSubmit {
        /// The prompt as the user wrote it.
        prompt: String,
    },
    /// A session's run ends (the model answered, or a limit or an error stopped it).
    Stop {
        /// Whether a Stop hook already made the model go on in this run.
        stop_hook_active: bool,
        /// How the run ends.
        stop_reason: StopReason,
    },
    /// A child's run ends.
    SubagentStop {
        /// Whether a SubagentStop hook already made the child go on in this run.
        stop_hook_active: bool,
        /// How the child's run ends.
        stop_reason: StopReason,
    },
    /// The conversation is about to be compacted.
    PreCompact {
        /// What asked for it.
        trigger: CompactTrigger,
        /// The user's instructions for the summary (empty for an automatic one).
        custom_instructions: String,
    },
}

impl SessionEvent {
    /// The event's name.
    pub fn name(&self) -> HookEvent {
        match self {
            Self::SessionStart { .. } => HookEvent::SessionStart,
            Self::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            Self::Stop { .. } => HookEvent::Stop,
            Self::SubagentStop { .. } => HookEvent::SubagentStop,
            Self::PreCompact { .. } => HookEvent::PreCompact,
        }
    }
}

/// Text one hook gave, with the hook (its command) for the audit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookText {
    /// The hook's command.
    pub hook: String,
    /// What it said.
    pub text: String,
}

/// What the hooks of a [`SessionEvent`] answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAnswer {
    /// Text to add to the model's context (`UserPromptSubmit`, `SessionStart`), in
    /// the hooks' order.
    pub context: Vec<HookText>,
    /// The hook that blocked, with its reason: a `UserPromptSubmit` block refuses the
    /// prompt (the reason is shown to the user, never to the model); a `Stop` or
    /// `SubagentStop` block makes the model go on with the reason as its next input.
    /// Other events cannot block.
    pub block: Option<HookText>,
}

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

/// Operator hooks around tool execution and at the session's other events.
///
/// # Contract
/// `pre_tool_use` runs after the mode and the `deny` rules, before the other rules,
/// the approval level and the person; a rewrite keeps id and name and goes through
/// the rules (a `deny` included), the approval level and the person again. `post_tool_use` runs
/// after execution and before recording, seeing the result's text projection.
/// `session_event` is called by the engine's run, once per occurrence of each
/// [`SessionEvent`]; a hook that fails is the implementation's to report, never an
/// error of the run. The default hears nothing and answers nothing.
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

    /// A session event other than a tool call.
    async fn session_event(&self, session: &SessionId, event: &SessionEvent) -> EventAnswer {
        let _ = (session, event);
        EventAnswer::default()
    }
}
