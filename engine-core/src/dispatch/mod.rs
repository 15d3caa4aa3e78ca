//! The dispatcher: runs the tool calls of one assistant turn, read-parallel and
//! mutate-serial, and returns exactly one result per call in the model's order.
//!
//! Per turn (`pipeline.rs`): normalize ids; emit `tool.call` for every call; resolve
//! every call in the mode view and split the calls into segments (each maximal run
//! of read-batchable calls is one batch, anything else a barrier alone); then per
//! segment pass each call through the **gate** serially in call order (`gate.rs`:
//! mode, deny rules, PreToolUse, ask/allow rules, the approval level, the person's
//! answer to an ask — one decision per call, saying what decided), **execute** the calls it let through
//! (concurrently in a batch, bounded, slots granted in call order, each in its own
//! task so a panic stays contained), and **finish** every call in call order
//! (`finish.rs`: PostToolUse, id forcing, output cap, recorder, `tool.result`).

mod asks;
mod call_ids;
mod elicit;
mod execution;
mod finish;
mod gate;
mod pipeline;
mod segments;

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use engine_ports::{
    Caller, Clock, EventKind, HookAction, HookPhase, PermissionMode, PermissionPolicy, PermissionRules,
    SessionId, ToolCall, ToolCallRecorder, ToolHooks, ToolResult,
};
use tokio_util::sync::CancellationToken;

pub use asks::{AskAnswer, AskRegistry, MAX_DENY_REASON_CHARS};
pub use call_ids::normalize_call_ids;
pub(crate) use call_ids::normalize_owned_call_ids;

use crate::catalog::Catalog;
use crate::emitter::EventEmitter;
use crate::environment::Environment;

/// Dispatcher settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchConfig {
    /// Most read-only calls of one batch executing at once.
    pub max_parallel_reads: NonZeroUsize,
    /// How long in-flight calls get to return after cancellation before their task
    /// is aborted.
    pub cancel_grace: Duration,
    /// How long a tool's question to the user waits for its answer before it is
    /// declined.
    pub elicitation_timeout: Duration,
}

/// Default `max_parallel_reads`.
pub const DEFAULT_MAX_PARALLEL_READS: NonZeroUsize = match NonZeroUsize::new(16) {
    Some(n) => n,
    None => NonZeroUsize::MIN,
};

/// Default `cancel_grace`.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(2);

impl Default for DispatchConfig {
    fn default() -> Self {
        Self {
            max_parallel_reads: DEFAULT_MAX_PARALLEL_READS,
            cancel_grace: DEFAULT_CANCEL_GRACE,
            elicitation_timeout: crate::elicitation::DEFAULT_ELICITATION_TIMEOUT,
        }
    }
}

/// Everything one turn's dispatch needs. Cheap to build: every field is a handle.
pub struct TurnContext {
    /// The session.
    pub session_id: SessionId,
    /// Session-wide turn number (for generated call ids).
    pub turn: u64,
    /// The session's mode (D1: calls resolve through the mode-filtered view).
    pub mode: PermissionMode,
    /// The catalog.
    pub catalog: Arc<Catalog>,
    /// The execution context given to tools.
    pub environment: Environment,
    /// Whether `ToolSearch` resolves (progressive tools on).
    pub progressive_tools: bool,
    /// The permission policy.
    pub policy: Arc<dyn PermissionPolicy>,
    /// Where asks and elicitations wait for an operator; `None` = headless (asks
    /// become denials, elicitations declines).
    pub asks: Option<Arc<AskRegistry>>,
    /// Why no person can answer an ask, said in a headless refusal instead of "this
    /// run is headless" (a client that cannot be asked); `None`: the default words.
    pub headless_reason: Option<Arc<str>>,
    /// The client that made the calls directly (kept in each call's record); `None`
    /// for a run's model.
    pub caller: Option<Arc<Caller>>,
    /// The operator's permission rules (checked before the hook and the policy).
    pub rules: Option<Arc<dyn PermissionRules>>,
    /// Operator hooks.
    pub hooks: Option<Arc<dyn ToolHooks>>,
    /// The audit recorder.
    pub recorder: Option<Arc<dyn ToolCallRecorder>>,
    /// The clock for queued/took (none: both zero, no reads).
    pub clock: Option<Arc<dyn Clock>>,
    /// Where events go.
    pub events: Arc<EventEmitter>,
    /// Cancels the turn.
    pub cancel: CancellationToken,
}

impl TurnContext {
    /// A context with no asks, hooks, recorder, clock or event output, turn 1 and a
    /// fresh token.
    pub fn new(
        session_id: SessionId,
        mode: PermissionMode,
        catalog: Arc<Catalog>,
        environment: Environment,
        policy: Arc<dyn PermissionPolicy>,
    ) -> Self {
        let events = Arc::new(EventEmitter::new(session_id.clone(), 1));
        Self {
            session_id,
            turn: 1,
            mode,
            catalog,
            environment,
            progressive_tools: false,
            policy,
            asks: None,
            headless_reason: None,
            caller: None,
            rules: None,
            hooks: None,
            recorder: None,
            clock: None,
            events,
            cancel: CancellationToken::new(),
        }
    }
}

/// What one turn's dispatch produced.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    /// One final result per call, in call order, keyed by the normalized ids.
    pub results: Vec<ToolResult>,
    /// Disclosable tools a successful `ToolSearch` returned in full (D3), sorted, each
    /// once: the session's hydrated set grows by them, and
    /// [`turn_specs`](crate::turn_specs) advertises them in full from the next turn on.
    pub hydrated: Vec<String>,
    /// Whether the turn was cancelled.
    pub cancelled: bool,
}

/// Runs the tool calls of one turn.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dispatcher {
    config: DispatchConfig,
}

impl Dispatcher {
    /// A dispatcher with these settings.
    pub fn new(config: DispatchConfig) -> Self {
        Self { config }
    }

    /// The settings.
    pub fn config(&self) -> DispatchConfig {
        self.config
    }

    /// Dispatches one turn's calls. Never fails: every call gets exactly one result,
    /// in call order, cancelled or not.
    pub async fn dispatch(&self, ctx: &TurnContext, calls: &[ToolCall]) -> TurnOutcome {
        pipeline::run_turn(self.config, ctx, calls).await
    }
}

/// The result of a call cancelled before it finished (or before it started).
fn cancelled_result(call: &ToolCall) -> ToolResult {
    ToolResult::error(
        call.id().clone(),
        format!("call to {} was cancelled before it finished", call.name()),
    )
}

/// Emits a `hook` event: what a PreToolUse or PostToolUse hook did to a call.
///
/// Boxed: a hook acting is rare, and an emit's state would otherwise be carried,
/// and moved, in the future of every call the gate and the finish handle.
fn hook_event<'a>(
    ctx: &'a TurnContext,
    phase: HookPhase,
    call: &ToolCall,
    action: HookAction,
    message: &str,
) -> futures::future::BoxFuture<'a, ()> {
    let kind = EventKind::Hook {
        phase,
        call_id: call.id().clone(),
        name: call.name().to_owned(),
        action,
        message: message.to_owned(),
    };
    Box::pin(async move {
        ctx.events.emit(kind).await;
    })
}
