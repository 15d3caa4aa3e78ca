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
pub use policy::{ChildLearning, ChildPolicy};
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

/// A delegation tool that acts through the calling run's delegation scope: what
/// differs between them. [`scoped_tools!`] gives each its [`Tool`] implementation,
/// whose `execute` starts the same way for all of them: the scope (or the
/// not-available result in an engine that cannot start children), then the
/// arguments (or the uniform invalid-arguments result), then [`ScopedTool::run`].
#[async_trait::async_trait]
trait ScopedTool: Send + Sync {
    /// [`Tool::read_only`].
    const READ_ONLY: bool;
    /// The call's arguments.
    type Args: serde::de::DeserializeOwned + Send;

    /// [`Tool::spec`].
    fn spec(&self) -> engine_ports::ToolSpec;

    /// [`Tool::call_read_only`]: by default [`ScopedTool::READ_ONLY`].
    fn call_read_only(&self, call: &ToolCall) -> bool {
        let _ = call;
        Self::READ_ONLY
    }

    /// The call's work, given its scope and its parsed arguments.
    async fn run(&self, at: Scoped<'_>, args: Self::Args) -> Result<ToolResult, crate::tool::ToolError>;
}

/// What a [`ScopedTool`]'s work is given besides its arguments, in `execute`'s order:
/// the cancellation token, the call, the environment, and the calling run's
/// delegation scope.
struct Scoped<'a>(
    &'a tokio_util::sync::CancellationToken,
    &'a ToolCall,
    &'a crate::Environment,
    &'a Arc<DelegationScope>,
);

/// The `execute` of every [`ScopedTool`].
async fn execute_scoped<T: ScopedTool>(
    tool: &T,
    cancel: &tokio_util::sync::CancellationToken,
    call: &ToolCall,
    env: &crate::Environment,
) -> Result<ToolResult, crate::tool::ToolError> {
    let Some(scope) = env.delegation() else {
        return Ok(not_available(call));
    };
    let args = match call.parse_args() {
        Ok(args) => args,
        Err(error) => return Ok(error.into_result(call)),
    };
    tool.run(Scoped(cancel, call, env, scope), args).await
}

/// Implements [`Tool`] for each [`ScopedTool`] named (a blanket implementation would
/// claim every type for `Tool`'s provided methods; listing them keeps `Tool` open to
/// the engine's other tools).
macro_rules! scoped_tools {
    ($($tool:ty),+ $(,)?) => {$(
        #[async_trait::async_trait]
        impl Tool for $tool {
            fn spec(&self) -> engine_ports::ToolSpec {
                ScopedTool::spec(self)
            }

            fn read_only(&self) -> bool {
                <$tool as ScopedTool>::READ_ONLY
            }

            fn call_read_only(&self, call: &ToolCall) -> bool {
                ScopedTool::call_read_only(self, call)
            }

            async fn execute(
                &self,
                cancel: &tokio_util::sync::CancellationToken,
                call: &ToolCall,
                env: &crate::Environment,
            ) -> Result<ToolResult, crate::tool::ToolError> {
                execute_scoped(self, cancel, call, env).await
            }
        }
    )+};
}

scoped_tools!(
    SubagentTool,
    InspectSubagentTool,
    SubagentStatusTool,
    ParallelTool,
    TeamTool,
    InspectMemberTool,
);

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
