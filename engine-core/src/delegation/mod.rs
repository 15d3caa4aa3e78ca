//! Delegation: domain tools that run child engines — `Subagent` (with
//! `InspectSubagent` and `SubagentStatus`), `Parallel` (branches on private
//! workspace copies from the [`WorkspaceForker`](engine_ports::WorkspaceForker)
//! port) and `Team` (with `InspectMember`: members coordinating in rounds through a
//! shared board of messages, tasks and findings).
//!
//! Child engines come through [`ChildEngines`], which the composition root implements
//! (it assembles each child's catalog through the one registration path, with a child
//! profile: never a delegation tool, `ToolSearch` or `SkillDraft`, so there is no
//! recursion). A child is an ordinary session in the parent's store, created
//! create-only; its transcript never enters the parent's conversation, only the
//! delegating call's result does. Its calls are decided by the parent's policy
//! ([`ChildPolicy`]): asks are relayed to the parent's operator, labelled with the
//! requester, and a headless parent's children are denied what would need one. Plan
//! mode is inherited. The per-run state (the gate of
//! [`MAX_RUNNING_SUBAGENTS`], background results and their notices, every running
//! child's cancel token) lives in the engine's run and reaches the tools through the
//! [`Environment`](crate::Environment).

mod child_run;
mod children;
mod inspect;
mod parallel;
mod policy;
mod render;
mod scope;
mod subagent;
mod submit;
mod team;
mod team_board;

use std::sync::Arc;

use engine_ports::{ToolCall, ToolResult};

pub use children::{
    AgentDefinition, CHILD_MAX_TOOL_CALLS, CHILD_MAX_TURNS, ChildAccess, ChildEngines, ChildError, ChildSpec,
    DelegationSettings,
};
pub use inspect::{InspectSubagentTool, MAX_STATUS_WAIT_MS, SubagentStatusTool};
pub use parallel::{JUDGE_INSTRUCTIONS, MAX_PARALLEL_TASKS, MAX_RUNNING_BRANCHES, ParallelTool};
pub use policy::ChildPolicy;
pub use render::{
    FORK_INTRO, INSPECT_MESSAGE_CHARS, INSPECT_MESSAGES, INSPECT_TOTAL_CHARS, MARKERS, PREVIEW_CHARS,
    SALVAGE_INSTRUCTIONS, inspect_transcript, neutralise, preview,
};
pub use scope::MAX_RUNNING_SUBAGENTS;
pub(crate) use scope::{DelegationScope, RunDelegation};
pub use subagent::{MAX_SUBAGENT_TIMEOUT_MS, SubagentTool};
pub use submit::{MAX_OUTPUT_SCHEMA_BYTES, SUBMIT_ATTEMPTS, SUBMIT_RESULT_TOOL_NAME};
pub use team::{InspectMemberTool, MAX_MEMBER_TURNS_AT_ONCE, MAX_TEAM_MEMBERS, MAX_TEAM_ROUNDS, TeamTool};
pub use team_board::{MAX_QUEUED_MESSAGES, MAX_TEAM_FINDINGS, MAX_TEAM_TASKS};

use crate::tool::Tool;

/// The name of the `Subagent` tool.
pub const SUBAGENT_TOOL_NAME: &str = "Subagent";
/// The name of the `InspectSubagent` tool.
pub const INSPECT_SUBAGENT_TOOL_NAME: &str = "InspectSubagent";
/// The name of the `SubagentStatus` tool.
pub const SUBAGENT_STATUS_TOOL_NAME: &str = "SubagentStatus";
/// The name of the `Parallel` tool.
pub const PARALLEL_TOOL_NAME: &str = "Parallel";
/// The name of the `Team` tool.
pub const TEAM_TOOL_NAME: &str = "Team";
/// The name of the `InspectMember` tool.
pub const INSPECT_MEMBER_TOOL_NAME: &str = "InspectMember";

/// The system prompt paragraph every child without a named agent gets after the
/// parent's system prompt.
pub const CHILD_PROMPT_NOTE: &str = "You are running as a subagent: another agent delegated the task in the \
first message to you. Work on it with the tools you have, then answer with a concise, self-contained report: \
that answer is returned to the delegating agent as your result, and nothing else you write reaches it.";

/// `Subagent`, `InspectSubagent` and `SubagentStatus`, in that order; `Subagent`
/// lists `agents` in its description.
pub fn subagent_tools(agents: &[AgentDefinition]) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(SubagentTool::new(agents)),
        Arc::new(InspectSubagentTool),
        Arc::new(SubagentStatusTool),
    ]
}

/// `Team` and `InspectMember`.
pub fn team_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(TeamTool), Arc::new(InspectMemberTool)]
}

/// What every delegation tool's `execute` starts with: the calling run's delegation
/// scope (or the not-available result in an engine that cannot start children) and
/// the call's arguments as `A` (or the uniform invalid-arguments result).
fn scope_and_args<'e, A: serde::de::DeserializeOwned>(
    call: &ToolCall,
    env: &'e crate::Environment,
) -> Result<(&'e Arc<DelegationScope>, A), ToolResult> {
    let Some(scope) = env.delegation() else {
        return Err(not_available(call));
    };
    let args = call.parse_args().map_err(|error| error.into_result(call))?;
    Ok((scope, args))
}

/// A delegation tool's refusal the model can act on, answering `call`: `<tool>: <message>`.
fn refusal(call: &ToolCall, tool: &str, message: impl std::fmt::Display) -> ToolResult {
    ToolResult::error(call.id().clone(), format!("{tool}: {message}"))
}

/// The result of a delegation tool called by an engine that cannot start children.
fn not_available(call: &ToolCall) -> ToolResult {
    ToolResult::error(
        call.id().clone(),
        format!(
            "{} is not available here: this engine cannot start child engines (a child cannot delegate)",
            call.name()
        ),
    )
}
