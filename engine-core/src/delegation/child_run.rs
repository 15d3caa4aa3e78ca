//! Driving one child engine's run for a delegation call: its activity becomes the
//! parent's family events, its permission asks are relayed to the parent's operator,
//! a timeout or a cancellation stops it, and its `result` becomes a [`ChildOutcome`].
//! Also the tool-less side requests children need (salvage, judge).

use std::time::Duration;

use engine_ports::{
    ChildActivity, EventKind, LlmError, LlmRequest, Message, RequestPurpose, SessionId, StopReason,
    ToolCallId, Usage,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::render::{ChildStop, preview, salvage_request_text};
use super::scope::DelegationScope;
use crate::engine::{Engine, EngineError};
use crate::text_reply::{ReplyError, read_text_reply};

/// How long a cancelled child gets to finish its bookkeeping (pair its calls, save)
/// before its call stops waiting for it.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// The prompt recorded in a child's session for its salvage turn.
pub(crate) const SALVAGE_PROMPT: &str = "[The harness asked for a summary of what you found, without tools.]";

/// Who a child is, for its activity events and the label of its relayed asks.
#[derive(Clone, Debug)]
pub(crate) enum Reporter {
    /// A `Subagent` call's child.
    Subagent {
        /// The call's label.
        description: String,
    },
    /// Branch `index` of a `Parallel` call.
    Branch {
        /// From 0.
        index: u64,
    },
    /// A team member in a round.
    Member {
        /// Its name.
        name: String,
        /// The round, from 0.
        round: u64,
    },
}

impl Reporter {
    /// How an ask of this child is labelled for the operator: `subagent "<label>"`,
    /// `parallel branch 2`, `team member "<name>"`.
    pub(crate) fn requester(&self) -> String {
        match self {
            Self::Subagent { description } => format!("subagent {description:?}"),
            Self::Branch { index } => format!("parallel branch {index}"),
            Self::Member { name, .. } => format!("team member {name:?}"),
        }
    }

    /// The event saying the child called `name` with `args`.
    fn tool_event(&self, call_id: &ToolCallId, child_id: &SessionId, name: &str, args: &str) -> EventKind {
        let call_id = call_id.clone();
        let child_id = child_id.clone();
        let preview = preview(args);
        let name = name.to_owned();
        match self {
            Self::Subagent { .. } => EventKind::SubagentTool {
                call_id,
                child_id,
                name,
                preview,
            },
            Self::Branch { index } => EventKind::ParallelBranch {
                call_id,
                child_id,
                index: *index,
                activity: ChildActivity::tool(name, preview),
            },
            Self::Member { name: member, round } => EventKind::TeamMember {
                call_id,
                child_id,
                member: member.clone(),
                round: *round,
                activity: ChildActivity::tool(name, preview),
            },
        }
    }
}

/// How a child's run ended.
#[derive(Clone, Debug)]
pub(crate) struct ChildOutcome {
    /// Why it stopped.
    pub(crate) stop: ChildStop,
    /// Its final text.
    pub(crate) text: String,
    /// Its usage.
    pub(crate) usage: Usage,
}

/// One child run to drive.
pub(crate) struct ChildRun<'a> {
    /// The calling run.
    pub(crate) scope: &'a DelegationScope,
    /// The delegating call.
    pub(crate) call_id: &'a ToolCallId,
    /// The child's session.
    pub(crate) child_id: &'a SessionId,
    /// Who it is.
    pub(crate) reporter: &'a Reporter,
    /// Its engine.
    pub(crate) engine: &'a Engine,
    /// The prompt of this run.
    pub(crate) prompt: String,
    /// When to stop it.
    pub(crate) timeout: Option<Duration>,
}

/// Why a child run did not start.
#[derive(Debug)]
pub(crate) enum StartError {
    /// Its session has a run in progress (here or in another process).
    Busy,
    /// Anything else.
    Failed(String),
}

impl ChildRun<'_> {
    /// Runs the child to its `result`. `cancel` (the call's token) cancels it; so does
    /// the timeout, and a host cancelling the child by id.
    ///
    /// # Errors
    /// [`StartError`] when the run did not start; a run that never delivered its
    /// `result` (it did not stop within [`DRAIN_LIMIT`] of being cancelled) is
    /// `Failed` too.
    pub(crate) async fn drive(self, cancel: &CancellationToken) -> Result<ChildOutcome, StartError> {
        let started = match self.engine.run(self.child_id, self.prompt.clone()) {
            Ok(run) => run.started().await,
            Err(error) => Err(error),
        };
        let mut run = started.map_err(|error| match error {
            EngineError::Busy(_) => StartError::Busy,
            other => StartError::Failed(other.to_string()),
        })?;
        let token = cancel.child_token();
        let _live = self
            .scope
            .run
            .register_live(self.child_id.as_str(), token.clone());
        let deadline = self.timeout.map(|limit| Instant::now() + limit);
        let mut timed_out = false;
        let mut drain_until: Option<Instant> = None;
        loop {
            let event = tokio::select! {
                biased;
                () = token.cancelled(), if drain_until.is_none() => {
                    run.cancel();
                    drain_until = Some(Instant::now() + DRAIN_LIMIT);
                    continue;
                }
                () = sleep_until(deadline), if drain_until.is_none() => {
                    timed_out = true;
                    run.cancel();
                    drain_until = Some(Instant::now() + DRAIN_LIMIT);
                    continue;
                }
                () = sleep_until(drain_until) => {
                    return Err(StartError::Failed(format!(
                        "the child did not stop within {} s of being cancelled",
                        DRAIN_LIMIT.as_secs()
                    )));
                }
                event = futures::StreamExt::next(&mut run) => event,
            };
            let Some(event) = event else {
                return Err(StartError::Failed(
                    "the child's run ended without a result".to_owned(),
                ));
            };
            match event.kind {
                EventKind::ToolCall { name, args, .. } => {
                    let args = args.to_string();
                    let kind = self
                        .reporter
                        .tool_event(self.call_id, self.child_id, &name, &args);
                    self.scope.events.emit(kind).await;
                }
                EventKind::PermissionAsk {
                    ask_id,
                    name,
                    args,
                    reason,
                    suggested_rule,
                    ..
                } if drain_until.is_none() => {
                    let ask = RelayedAsk {
                        ask_id,
                        name,
                        args,
                        reason,
                        suggested_rule,
                    };
                    self.relay(ask, &token, deadline).await;
                }
                EventKind::Result {
                    stop,
                    text,
                    error,
                    usage,
                    ..
                } => {
                    let stop = match (timed_out, self.timeout) {
                        (true, Some(limit)) if stop == StopReason::Cancelled => ChildStop::Timeout(limit),
                        _ => ChildStop::Run { stop, error },
                    };
                    return Ok(ChildOutcome { stop, text, usage });
                }
                _ => {}
            }
        }
    }

    /// Relays a child's ask to the parent's operator: a `permission.ask` on the
    /// delegating call, labelled with the requester, under the id
    /// `<child id>/<child ask id>`; the verdict goes back to the child. Returns early
    /// (leaving the child's ask open) when the child is cancelled or times out.
    async fn relay(&self, ask: RelayedAsk, token: &CancellationToken, deadline: Option<Instant>) {
        let scope = self.scope;
        let parent_ask = format!("{}/{}", self.child_id, ask.ask_id);
        let answer = scope.asks.open(&parent_ask);
        scope
            .events
            .emit(EventKind::PermissionAsk {
                ask_id: parent_ask.clone(),
                call_id: self.call_id.clone(),
                name: ask.name,
                args: ask.args,
                reason: format!("{}: {}", self.reporter.requester(), ask.reason),
                suggested_rule: ask.suggested_rule,
            })
            .await;
        let answer = tokio::select! {
            () = token.cancelled() => None,
            () = sleep_until(deadline) => None,
            answer = answer => answer.ok(),
        };
        scope.asks.close(&parent_ask);
        let Some(answer) = answer else {
            return;
        };
        // The child's own `permission.verdict` names a saved rule; the parent's tells
        // the verdict that was relayed.
        scope
            .events
            .emit(EventKind::PermissionVerdict {
                ask_id: parent_ask,
                call_id: self.call_id.clone(),
                verdict: answer.verdict,
                saved_rule: None,
                reason: answer.reason.clone(),
            })
            .await;
        self.engine.approve(self.child_id, &ask.ask_id, answer);
    }
}

struct RelayedAsk {
    ask_id: String,
    name: String,
    args: serde_json::Value,
    reason: String,
    suggested_rule: Option<String>,
}

/// Sleeps until `deadline`; forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// One tool-less side request on `model`: a single user message, no system prompt.
/// Returns its text (possibly empty) and usage.
///
/// # Errors
/// The provider's error, or `cancelled`.
pub(crate) async fn side_request(
    scope: &DelegationScope,
    model: &str,
    purpose: RequestPurpose,
    text: String,
    cancel: &CancellationToken,
) -> Result<(String, Usage), String> {
    let request = LlmRequest {
        model: model.to_owned(),
        system: String::new(),
        messages: vec![Message::User { text }].into(),
        tools: Vec::new(),
        purpose,
        max_tokens: None,
    };
    let failed = |error: LlmError| error.to_string();
    let stream = tokio::select! {
        () = cancel.cancelled() => return Err("cancelled".to_owned()),
        stream = scope.llm.stream(request, cancel.child_token()) => stream.map_err(failed)?,
    };
    read_text_reply(stream, cancel)
        .await
        .map_err(|error| match error {
            ReplyError::Cancelled => "cancelled".to_owned(),
            ReplyError::Failed(error) => failed(error),
        })
}

/// The salvage turn of a child that ended without text: one tool-less request on
/// the child's model with its transcript, asking what it found. A non-empty answer is
/// appended to the child's session (so a resume goes on after it) and returned.
pub(crate) async fn salvage(
    scope: &DelegationScope,
    child_id: &SessionId,
    model: &str,
    cancel: &CancellationToken,
) -> Option<String> {
    let snapshot = scope.store.load(child_id).await.ok()?;
    let text = salvage_request_text(&snapshot.conversation.to_vec(), scope.context_window);
    let answer = match side_request(scope, model, RequestPurpose::Salvage, text, cancel).await {
        Ok((answer, _)) => answer,
        Err(error) => {
            tracing::info!(child_id = %child_id, %error, "the salvage request of a child failed");
            return None;
        }
    };
    let answer = answer.trim().to_owned();
    if answer.is_empty() {
        return None;
    }
    let saved = async {
        let _lease = scope.store.acquire_run(child_id).await?;
        let mut snapshot = scope.store.load(child_id).await?;
        snapshot.conversation.push(Message::User {
            text: SALVAGE_PROMPT.to_owned(),
        });
        snapshot.conversation.push(Message::Assistant {
            text: answer.clone(),
            tool_calls: Vec::new(),
        });
        scope.store.save(&snapshot).await
    };
    if let Err(error) = saved.await {
        tracing::warn!(child_id = %child_id, %error, "the salvage answer could not be saved in the child's session");
    }
    Some(answer)
}
