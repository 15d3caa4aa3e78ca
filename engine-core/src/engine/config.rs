//! [`EngineConfig`] and [`Limits`].

use std::time::Duration;

use engine_ports::{PermissionMode, RequestPurpose, SandboxStatus, ServerOrigin};

use crate::disclosure::Disclosure;
use crate::dispatch::{DEFAULT_CANCEL_GRACE, DEFAULT_MAX_PARALLEL_READS};
use crate::permission::Approve;

/// Limits checked at turn boundaries; 0 disables a limit (the default disables all).
/// Counters are per run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Most model turns per run.
    pub max_turns: u64,
    /// Most tool calls per run (all calls of one turn run even if they overshoot).
    pub max_tool_calls: u64,
    /// Most error results in a row.
    pub max_consecutive_failures: u64,
}

/// Engine settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Model name sent with every request.
    pub model: String,
    /// System prompt.
    pub system_prompt: String,
    /// Mode of new sessions.
    pub mode: PermissionMode,
    /// Run limits.
    pub limits: Limits,
    /// How Disclosable tools are advertised; any mode but `Off` offers `ToolSearch`
    /// (D3).
    pub disclosure: Disclosure,
    /// An operator answers permission asks (otherwise asks become denials).
    pub interactive: bool,
    /// What the default policy approves when headless.
    pub approve: Approve,
    /// Most read-only calls of one batch executing at once (≥ 1).
    pub max_parallel_reads: usize,
    /// Time in-flight calls get after cancellation.
    pub cancel_grace: Duration,
    /// The longest the slash-command chain may take to expand a run's input (it may
    /// ask remote sources and MCP servers); the run also stops waiting for it when
    /// cancelled.
    pub command_timeout: Duration,
    /// The MCP servers behind the catalog's tools, named in `session.init` with where
    /// each came from.
    pub mcp_servers: Vec<ServerOrigin>,
    /// The sandbox in force for the `Shell` of this engine's sessions, stated in
    /// `session.init`; `None` when the host configured none.
    pub sandbox: Option<SandboxStatus>,
    /// Whether a run fails when an audit record (a tool-call record or an event) cannot
    /// be written; by default it logs a WARN and goes on.
    pub audit_required: bool,
    /// The model's context window in tokens; `None` looks `model` up in the table of
    /// common models ([`context_window_for`](crate::context_window_for)). The engine
    /// compacts a conversation whose next request would pass 80 % of it.
    pub context_window: Option<u64>,
    /// The output limit of each request, in tokens; `None` looks `model` up in the
    /// table of common models ([`output_limits_for`](crate::output_limits_for)). A
    /// tool call the limit cuts off is never run: the request is repeated once with
    /// twice the limit (within the model's known maximum), and when that is cut off
    /// too the model is told so in the call's result.
    pub max_tokens: Option<u32>,
    /// How long a tool's question to the user (an MCP elicitation) waits for the
    /// host's answer before it is declined.
    pub elicitation_timeout: Duration,
    /// What the engine's turns are: a session's own conversation (the default) or a
    /// child's (a subagent, a branch, a team member). Sent with every request, so a
    /// scripted or routing model knows which conversation it answers.
    pub purpose: RequestPurpose,
}

/// Default of [`EngineConfig::command_timeout`]: 60 s.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            model: String::new(),
            system_prompt: String::new(),
            mode: PermissionMode::Default,
            limits: Limits::default(),
            disclosure: Disclosure::Off,
            interactive: false,
            approve: Approve::ReadOnly,
            max_parallel_reads: DEFAULT_MAX_PARALLEL_READS.get(),
            cancel_grace: DEFAULT_CANCEL_GRACE,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            mcp_servers: Vec::new(),
            sandbox: None,
            audit_required: false,
            context_window: None,
            max_tokens: None,
            elicitation_timeout: crate::elicitation::DEFAULT_ELICITATION_TIMEOUT,
            purpose: RequestPurpose::Conversation,
        }
    }
}
