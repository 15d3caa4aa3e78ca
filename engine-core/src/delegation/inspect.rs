//! The read-only companions of `Subagent`: `InspectSubagent` (a stored child's
//! transcript) and `SubagentStatus` (this run's children, a background result).

use std::time::Duration;

use async_trait::async_trait;
use engine_ports::{SessionId, ToolCall, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::json;

use super::render::{inspect_transcript, preview};
use super::scope::{ChildState, DelegationScope, Status};
use super::{INSPECT_SUBAGENT_TOOL_NAME, SUBAGENT_STATUS_TOOL_NAME, Scoped, ScopedTool, refusal};
use crate::tool::ToolError;

/// Longest `wait_ms` of `SubagentStatus` (2 minutes).
pub const MAX_STATUS_WAIT_MS: u64 = 120_000;

/// `InspectSubagent`: the transcript of a subagent or a `Parallel` branch of this
/// session, read back from the store.
#[derive(Debug, Default)]
pub struct InspectSubagentTool;

#[derive(Deserialize)]
pub(super) struct InspectArgs {
    agent_id: String,
}

#[async_trait]
impl ScopedTool for InspectSubagentTool {
    const READ_ONLY: bool = true;
    type Args = InspectArgs;

    fn spec(&self) -> ToolSpec {
        // Built once: the catalog asks for it on every turn.
        static SPEC: std::sync::LazyLock<ToolSpec> = std::sync::LazyLock::new(|| {
            ToolSpec::new(
                INSPECT_SUBAGENT_TOOL_NAME,
                "Shows the stored transcript of a subagent or a Parallel branch of this session: its last 40 \
                 messages (user, assistant with the tools it called, tool results), each cut at 1,000 characters. \
                 Give the agentId a Subagent or Parallel result named. Read-only.",
            )
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string", "description": "A subagent-… or parallel-… id of this session."}
                },
                "required": ["agent_id"]
            }))
        });
        SPEC.clone()
    }

    async fn run(&self, at: Scoped<'_>, args: InspectArgs) -> Result<ToolResult, ToolError> {
        let Scoped(_, call, _, scope) = at;
        let id = args.agent_id.trim();
        if !scope.started_child(id, true) {
            return Ok(refusal(
                call,
                INSPECT_SUBAGENT_TOOL_NAME,
                format!(
                    "unknown agent id {:?}: no subagent or Parallel branch of this session has exactly that id",
                    preview(id)
                ),
            ));
        }
        Ok(read_transcript(scope, call, INSPECT_SUBAGENT_TOOL_NAME, id).await)
    }
}

/// The stored transcript of child `id`, or an error result naming `tool`.
pub(crate) async fn read_transcript(
    scope: &DelegationScope,
    call: &ToolCall,
    tool: &str,
    id: &str,
) -> ToolResult {
    match scope.store.load(&SessionId::from(id)).await {
        Ok(snapshot) => ToolResult::text(
            call.id().clone(),
            inspect_transcript(id, &snapshot.conversation.to_vec()),
        ),
        Err(error) if error.is_not_found() => refusal(
            call,
            tool,
            format!("no stored session {id:?}: it never started, or the store lost it"),
        ),
        Err(error) => refusal(call, tool, format!("the session could not be read: {error}")),
    }
}

/// `SubagentStatus`: this run's subagents, or one of them (a background child's
/// result is handed over once).
#[derive(Debug, Default)]
pub struct SubagentStatusTool;

#[derive(Deserialize, Default)]
pub(super) struct StatusArgs {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    wait_ms: Option<u64>,
}

#[async_trait]
impl ScopedTool for SubagentStatusTool {
    const READ_ONLY: bool = true;
    type Args = StatusArgs;

    fn spec(&self) -> ToolSpec {
        // Built once: the catalog asks for it on every turn.
        static SPEC: std::sync::LazyLock<ToolSpec> = std::sync::LazyLock::new(|| {
            ToolSpec::new(
                SUBAGENT_STATUS_TOOL_NAME,
                "Without agent_id: lists the subagents of this run (id, foreground or background, running or \
                 finished, how it stopped, whether its result was delivered). With agent_id: whether it is running \
                 or finished, and a background subagent's result the first time it is asked for; wait_ms (at most \
                 120000) waits that long for it to finish first. Read-only.",
            )
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string", "description": "A subagent of this run."},
                    "wait_ms": {"type": "integer", "minimum": 0, "maximum": MAX_STATUS_WAIT_MS, "description": "Wait up to this long for it to finish."}
                }
            }))
        });
        SPEC.clone()
    }

    async fn run(&self, at: Scoped<'_>, args: StatusArgs) -> Result<ToolResult, ToolError> {
        let Scoped(cancel, call, _, scope) = at;
        let fail = |message: String| Ok(refusal(call, SUBAGENT_STATUS_TOOL_NAME, message));
        let wait = match args.wait_ms {
            None => Duration::ZERO,
            Some(ms) if ms <= MAX_STATUS_WAIT_MS => Duration::from_millis(ms),
            Some(ms) => {
                return fail(format!(
                    "`wait_ms` {ms} is over the limit of {MAX_STATUS_WAIT_MS}"
                ));
            }
        };
        let Some(id) = args
            .agent_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty())
        else {
            return Ok(ToolResult::text(call.id().clone(), roster_text(scope)));
        };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let changed = scope.run.change_listener();
            let status = scope.run.status(id);
            let waiting = matches!(status, Status::Running { .. }) && tokio::time::Instant::now() < deadline;
            if !waiting {
                return Ok(status_result(scope, call, id, status).await);
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(ToolError::Cancelled),
                () = changed => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
        }
    }
}

async fn status_result(scope: &DelegationScope, call: &ToolCall, id: &str, status: Status) -> ToolResult {
    let text = match status {
        Status::Running { background } => format!(
            "{id} is still running ({}).",
            if background { "background" } else { "foreground" }
        ),
        Status::Result { text, .. } => text,
        Status::Delivered { stop } => format!(
            "{id} finished ({stop}); its result was already delivered. {INSPECT_SUBAGENT_TOOL_NAME} shows its \
             transcript."
        ),
        Status::Unknown => {
            let message = if scope.started_child(id, false)
                && scope.store.load(&SessionId::from(id)).await.is_ok()
            {
                format!(
                    "{id} is not a subagent of this run (an earlier run started it); {INSPECT_SUBAGENT_TOOL_NAME} \
                     shows its transcript"
                )
            } else {
                format!(
                    "unknown agent id {:?}: this run started no such subagent",
                    preview(id)
                )
            };
            return refusal(call, SUBAGENT_STATUS_TOOL_NAME, message);
        }
    };
    ToolResult::text(call.id().clone(), text)
}

fn roster_text(scope: &DelegationScope) -> String {
    let roster = scope.run.roster();
    if roster.is_empty() {
        return "No subagent was started in this run.".to_owned();
    }
    let mut text = format!("Subagents of this run: {}", roster.len());
    for entry in roster {
        let place = if entry.background {
            "background"
        } else {
            "foreground"
        };
        let state = match &entry.state {
            ChildState::Running => "running".to_owned(),
            ChildState::Finished(stop) => {
                let delivered = if entry.delivered {
                    "result delivered"
                } else {
                    "result not delivered yet"
                };
                format!("finished ({stop}), {delivered}")
            }
        };
        text.push_str(&format!("\n- {}: subagent, {place}, {state}", entry.id));
    }
    text
}
