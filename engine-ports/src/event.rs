//! The one event schema (D11): [`Event`] and [`EventKind`].
//!
//! The same values feed the JSONL event log, `run --output jsonl`, ACP
//! `session/update` notifications and HTTP SSE. The JSON is flat:
//! `{"seq":3,"type":"tool.call","call_id":"c1","name":"Read","args":{…}}`.

use serde::{Deserialize, Serialize};

use crate::content::ContentPart;
use crate::hooks::HookEvent;
use crate::ids::{SessionId, ToolCallId};
use crate::mode::PermissionMode;
use crate::sandbox::SandboxStatus;
use crate::usage::Usage;

/// One event of a session.
///
/// `seq` strictly increases within a session (from 1, across runs); `time`
/// (RFC 3339) is present only when the engine has a clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the session's event sequence.
    pub seq: u64,
    /// Wall-clock time of the event (RFC 3339), when a clock is injected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What an [`Event`] reports, tagged by `"type"`. An unknown type fails to
/// deserialize; fields never change meaning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EventKind {
    /// First event of every run.
    #[serde(rename = "session.init")]
    SessionInit {
        /// The session.
        session_id: SessionId,
        /// Its mode at the start of the run.
        mode: PermissionMode,
        /// The model name.
        model: String,
        /// Names of the tools advertised for the run's first turn.
        tools: Vec<String>,
        /// The MCP servers whose tools the catalog holds, with where each came from;
        /// absent when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mcp_servers: Vec<ServerOrigin>,
        /// The sandbox in force for the session's `Shell`; absent when the host
        /// configured none (older logs, library hosts).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxStatus>,
    },
    /// The run switched to a newer catalog at a turn boundary (an MCP server changed
    /// its tool list): the tool names that appeared and disappeared, sorted.
    #[serde(rename = "catalog.changed")]
    CatalogChanged {
        /// Names in the new catalog only.
        added: Vec<String>,
        /// Names in the old catalog only.
        removed: Vec<String>,
    },
    /// The conversation was compacted: older messages were replaced by a summary the
    /// model wrote in one tool-less request. Token counts are estimates of the next
    /// request before and after.
    #[serde(rename = "context.compacted")]
    ContextCompacted {
        /// What made the engine compact.
        trigger: CompactionTrigger,
        /// Estimated tokens of the next request before compacting.
        tokens_before: u64,
        /// Estimated tokens of the next request after compacting.
        tokens_after: u64,
        /// The model's context window, in tokens.
        context_window: u64,
        /// Messages the summary replaced.
        messages_replaced: u64,
        /// Messages kept verbatim after the summary.
        messages_kept: u64,
        /// Usage of the summary request.
        usage: Usage,
    },
    /// A model turn starts.
    #[serde(rename = "turn.start")]
    TurnStart {
        /// 1-based within the run.
        turn: u64,
    },
    /// Assistant text.
    #[serde(rename = "message.delta")]
    MessageDelta {
        /// The text fragment.
        text: String,
    },
    /// Model reasoning text.
    #[serde(rename = "reasoning.delta")]
    ReasoningDelta {
        /// The text fragment.
        text: String,
    },
    /// A model request is attempted again: the previous attempt failed before any
    /// of its answer arrived (an overloaded or loading server, a dropped connection),
    /// or the output limit cut off a tool call and the request is repeated with a
    /// larger one (`max_tokens` set). Text streamed since `turn.start` is superseded
    /// by the new attempt's.
    #[serde(rename = "model.retry")]
    ModelRetry {
        /// The failed attempt (1-based within the request).
        attempt: u32,
        /// The HTTP status of the failed attempt, when it had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// How long the harness waits before the next attempt, in milliseconds.
        wait_ms: u64,
        /// The output limit of the next attempt, when a cut-off answer is repeated
        /// with a larger one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        /// What went wrong (the provider's error, bounded).
        error: String,
    },
    /// A model turn ended.
    #[serde(rename = "turn.end")]
    TurnEnd {
        /// 1-based within the run.
        turn: u64,
        /// Usage of this turn.
        usage: Usage,
    },
    /// The model called a tool (emitted for every call, before any gate).
    #[serde(rename = "tool.call")]
    ToolCall {
        /// Normalized call id.
        call_id: ToolCallId,
        /// Tool name (the real catalog name).
        name: String,
        /// `ToolCall::args_value()`.
        args: serde_json::Value,
    },
    /// The policy asks an operator to approve a call.
    #[serde(rename = "permission.ask")]
    PermissionAsk {
        /// Opaque, unique within the session.
        ask_id: String,
        /// The call.
        call_id: ToolCallId,
        /// Tool name.
        name: String,
        /// `ToolCall::args_value()`.
        args: serde_json::Value,
        /// Why approval is needed.
        reason: String,
        /// The `allow` rule an "allow always" would save for the project when the
        /// person chooses to save it (`Shell(git commit:*)`); absent when nothing can
        /// be saved (the project is not trusted, the command is compound).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        suggested_rule: Option<String>,
    },
    /// The operator answered an ask.
    #[serde(rename = "permission.verdict")]
    PermissionVerdict {
        /// The ask.
        ask_id: String,
        /// The call.
        call_id: ToolCallId,
        /// The answer.
        verdict: Verdict,
        /// The rule the answer saved in the project's settings, when the person chose
        /// to save one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        saved_rule: Option<String>,
        /// What the person told the model with a denial (the model reads it in the
        /// call's result).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A tool's server asks the user for input during a call (MCP elicitation, form
    /// mode): the host shows the form and answers with the elicitation id.
    #[serde(rename = "elicitation.request")]
    ElicitationRequest {
        /// Opaque, unique within the session.
        elicitation_id: String,
        /// The call during which the server asked.
        call_id: ToolCallId,
        /// Tool name.
        name: String,
        /// What the server asks, for the user.
        message: String,
        /// The form: a JSON Schema object of primitive properties.
        requested_schema: serde_json::Value,
    },
    /// How an elicitation ended.
    #[serde(rename = "elicitation.result")]
    ElicitationResult {
        /// The elicitation.
        elicitation_id: String,
        /// The call.
        call_id: ToolCallId,
        /// The answer the server got.
        action: ElicitationAction,
        /// Why the harness declined or cancelled it without the user (headless run,
        /// timeout, a request over the limits, …); absent for the user's answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A hook did something other than a plain allow/keep.
    #[serde(rename = "hook")]
    Hook {
        /// Which hook.
        phase: HookPhase,
        /// The call.
        call_id: ToolCallId,
        /// Tool name.
        name: String,
        /// What it did.
        action: HookAction,
        /// Human-readable detail.
        message: String,
    },
    /// An operator hook of a session event (not of a tool call) changed what
    /// happens: it blocked the prompt, added context for the model, made the model go
    /// on after it stopped, or asked for something its event cannot do (ignored).
    #[serde(rename = "hook.session")]
    SessionHook {
        /// The hook event.
        event: HookEvent,
        /// The hook's command.
        hook: String,
        /// What it did.
        action: SessionHookAction,
        /// Its text: the reason of a block, the context added.
        message: String,
    },
    /// The final result of a call.
    #[serde(rename = "tool.result")]
    ToolResult {
        /// The call.
        call_id: ToolCallId,
        /// Tool name.
        name: String,
        /// Plain-text summary.
        content: String,
        /// Whether it failed.
        is_error: bool,
        /// Typed parts, omitted when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        parts: Vec<ContentPart>,
    },
    /// A subagent started (a `Subagent` call, in the foreground or the background).
    #[serde(rename = "subagent.start")]
    SubagentStart {
        /// The delegating call.
        call_id: ToolCallId,
        /// The child's id (its session id).
        child_id: SessionId,
        /// The call's short label.
        description: String,
        /// Whether the call returned at once, leaving the child running.
        background: bool,
        /// The start of the child's prompt (bounded, control characters replaced).
        preview: String,
    },
    /// A subagent called a tool.
    #[serde(rename = "subagent.tool")]
    SubagentTool {
        /// The delegating call.
        call_id: ToolCallId,
        /// The child's id.
        child_id: SessionId,
        /// The tool the child called.
        name: String,
        /// Its arguments (bounded, control characters replaced).
        preview: String,
    },
    /// A subagent ended.
    #[serde(rename = "subagent.end")]
    SubagentEnd {
        /// The delegating call.
        call_id: ToolCallId,
        /// The child's id.
        child_id: SessionId,
        /// How it ended: a [`StopReason`] wire name, `timeout`, or `refused` when it
        /// could not start.
        stop: String,
        /// The start of its final text (bounded, control characters replaced).
        preview: String,
    },
    /// A `Parallel` call started its branches.
    #[serde(rename = "parallel.start")]
    ParallelStart {
        /// The delegating call.
        call_id: ToolCallId,
        /// The call's id; branch `i` is `<child_id>-<i>`.
        child_id: SessionId,
        /// `all`, `first` or `judge`.
        join: String,
        /// How many branches.
        branches: u64,
        /// The start of the shared instructions (bounded).
        preview: String,
    },
    /// A branch of a `Parallel` call started, called a tool or ended.
    #[serde(rename = "parallel.branch")]
    ParallelBranch {
        /// The delegating call.
        call_id: ToolCallId,
        /// The branch's id (its session id).
        child_id: SessionId,
        /// The branch's index, from 0.
        index: u64,
        /// What the branch did: started, called a tool or ended.
        #[serde(flatten)]
        activity: ChildActivity,
    },
    /// A `Parallel` call ended.
    #[serde(rename = "parallel.end")]
    ParallelEnd {
        /// The delegating call.
        call_id: ToolCallId,
        /// The call's id.
        child_id: SessionId,
        /// The winning branch, when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<u64>,
        /// How the winner was chosen, or why there is none (bounded).
        preview: String,
    },
    /// A `Team` started.
    #[serde(rename = "team.start")]
    TeamStart {
        /// The delegating call.
        call_id: ToolCallId,
        /// The team's id; member `m` is `<child_id>-<m>`.
        child_id: SessionId,
        /// The members' names, the lead first.
        members: Vec<String>,
        /// The start of the goal (bounded).
        preview: String,
    },
    /// A team member started a turn, called a tool or ended a turn.
    #[serde(rename = "team.member")]
    TeamMember {
        /// The delegating call.
        call_id: ToolCallId,
        /// The member's id (its session id).
        child_id: SessionId,
        /// The member's name.
        member: String,
        /// The round, from 0.
        round: u64,
        /// What the member did: started a turn, called a tool or ended a turn.
        #[serde(flatten)]
        activity: ChildActivity,
    },
    /// A team's task list changed.
    #[serde(rename = "team.tasks")]
    TeamTasks {
        /// The delegating call.
        call_id: ToolCallId,
        /// The team's id.
        child_id: SessionId,
        /// What changed (bounded).
        preview: String,
    },
    /// A `Team` ended.
    #[serde(rename = "team.end")]
    TeamEnd {
        /// The delegating call.
        call_id: ToolCallId,
        /// The team's id.
        child_id: SessionId,
        /// Why: `converged`, `max_rounds`, `budget`, `cancelled` or `error`.
        stop: String,
        /// The start of the report (bounded).
        preview: String,
    },
    /// Last event of every run.
    #[serde(rename = "result")]
    Result {
        /// Why the run stopped.
        stop: StopReason,
        /// The final assistant text.
        text: String,
        /// Usage summed over the run.
        usage: Usage,
        /// Turns in this run.
        turns: u64,
        /// Tool calls in this run.
        tool_calls: u64,
        /// What went wrong, when `stop` is `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// An MCP server named in `session.init`, and where it came from: `static` (the
/// operator's flags or config), `toolhive(<group>)` (found by discovery: any local
/// process answering on the discovery port), `client` (given by the session's client).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerOrigin {
    /// The server name.
    pub name: String,
    /// `static`, `toolhive(<group>)` or `client`.
    pub source: String,
}

impl EventKind {
    /// The `type` tag of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::SessionInit { .. } => "session.init",
            Self::CatalogChanged { .. } => "catalog.changed",
            Self::ContextCompacted { .. } => "context.compacted",
            Self::TurnStart { .. } => "turn.start",
            Self::MessageDelta { .. } => "message.delta",
            Self::ReasoningDelta { .. } => "reasoning.delta",
            Self::ModelRetry { .. } => "model.retry",
            Self::TurnEnd { .. } => "turn.end",
            Self::ToolCall { .. } => "tool.call",
            Self::PermissionAsk { .. } => "permission.ask",
            Self::PermissionVerdict { .. } => "permission.verdict",
            Self::ElicitationRequest { .. } => "elicitation.request",
            Self::ElicitationResult { .. } => "elicitation.result",
            Self::Hook { .. } => "hook",
            Self::SessionHook { .. } => "hook.session",
            Self::ToolResult { .. } => "tool.result",
            Self::SubagentStart { .. } => "subagent.start",
            Self::SubagentTool { .. } => "subagent.tool",
            Self::SubagentEnd { .. } => "subagent.end",
            Self::ParallelStart { .. } => "parallel.start",
            Self::ParallelBranch { .. } => "parallel.branch",
            Self::ParallelEnd { .. } => "parallel.end",
            Self::TeamStart { .. } => "team.start",
            Self::TeamMember { .. } => "team.member",
            Self::TeamTasks { .. } => "team.tasks",
            Self::TeamEnd { .. } => "team.end",
            Self::Result { .. } => "result",
        }
    }
}

/// One step of a child of a delegation call: a `Parallel` branch
/// ([`EventKind::ParallelBranch`]) or a `Team` member ([`EventKind::TeamMember`]).
/// On the wire its fields sit beside the event's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildActivity {
    /// What happened.
    pub phase: ChildPhase,
    /// The tool called (`tool` phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How the child, or the member's turn, ended (`end` phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// The task or prompt (`start`), the call's arguments (`tool`) or the final text
    /// (`end`), bounded.
    pub preview: String,
}

impl ChildActivity {
    /// The child called the tool `name` with arguments `preview`.
    pub fn tool(name: String, preview: String) -> Self {
        Self {
            phase: ChildPhase::Tool,
            name: Some(name),
            stop: None,
            preview,
        }
    }

    /// The child started (`stop` is `None`) or ended (`stop` says how).
    pub fn started_or_ended(phase: ChildPhase, stop: Option<String>, preview: String) -> Self {
        Self {
            phase,
            name: None,
            stop,
            preview,
        }
    }
}

/// What happened to a child of a delegation call (`parallel.branch`, `team.member`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildPhase {
    /// The child started (a branch) or started a turn (a member).
    Start,
    /// The child called a tool.
    Tool,
    /// The child ended (a branch) or ended a turn (a member).
    End,
}

/// What made the engine compact a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The next request would have passed the compaction threshold of the window.
    Threshold,
    /// The provider refused a request as longer than the context window.
    ContextTooLong,
}

impl CompactionTrigger {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Threshold => "threshold",
            Self::ContextTooLong => "context_too_long",
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without tool calls.
    EndTurn,
    /// The model's answer was cut off by the output limit (`max_tokens`); the text
    /// so far is the run's final text.
    MaxTokens,
    /// The run reached its turn limit.
    MaxTurns,
    /// The run reached its tool-call limit.
    MaxToolCalls,
    /// Too many tool calls failed in a row.
    MaxConsecutiveFailures,
    /// The run was cancelled.
    Cancelled,
    /// The model, the store or the command chain failed.
    Error,
}

impl StopReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::MaxTokens => "max_tokens",
            Self::MaxTurns => "max_turns",
            Self::MaxToolCalls => "max_tool_calls",
            Self::MaxConsecutiveFailures => "max_consecutive_failures",
            Self::Cancelled => "cancelled",
            Self::Error => "error",
        }
    }
}

/// An operator's answer to a permission ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run this call.
    AllowOnce,
    /// Run this call and every later call of the tool in this session.
    AllowAlways,
    /// Do not run it.
    Deny,
}

impl Verdict {
    /// Whether the call may run.
    pub fn allows(self) -> bool {
        !matches!(self, Self::Deny)
    }
}

crate::keyword_words! {
    Verdict {
        AllowOnce => "allow_once",
        AllowAlways => "allow_always",
        Deny => "deny",
    }
}

/// The answer to an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    /// The user filled in the form.
    Accept,
    /// The user (or the harness on their behalf) refused to answer.
    Decline,
    /// The question was dismissed (the user closed it, or the run was cancelled).
    Cancel,
}

crate::keyword_words! {
    ElicitationAction {
        Accept => "accept",
        Decline => "decline",
        Cancel => "cancel",
    }
}

/// Which hook produced a [`EventKind::Hook`] event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookPhase {
    /// Before execution.
    PreToolUse,
    /// After execution.
    PostToolUse,
}

/// What a hook did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookAction {
    /// The call was blocked.
    Deny,
    /// The arguments were replaced.
    RewriteArgs,
    /// The result was replaced.
    RewriteResult,
    /// A malformed rewrite was ignored.
    Ignored,
    /// The hook failed.
    Error,
}

/// What a hook of a session event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionHookAction {
    /// The prompt was refused (`UserPromptSubmit`).
    Block,
    /// Its text was added to the model's context.
    Context,
    /// The model (or the child) goes on with the hook's reason (`Stop`,
    /// `SubagentStop`).
    Continue,
    /// It asked to block where it cannot (a block of `SessionStart` or `PreCompact`,
    /// or a `Stop` block past the limit of continuations).
    Ignored,
}

/// Live fan-out of events (terminal, ACP, SSE).
///
/// # Contract
/// `emit` MUST NOT block: implementations buffer or drop; the engine calls it inline.
pub trait EventSink: Send + Sync {
    /// Delivers one event of `session`.
    fn emit(&self, session: &SessionId, event: &Event);
}
