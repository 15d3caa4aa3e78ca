//! The finish of a call the gate let through: it runs (beside the other reads of its
//! batch on the dispatcher's task, at most `max_parallel_reads` at once; a panic
//! contained), then, like every call, it is finished in call order — PostToolUse, id
//! forcing, the output cap, the audit record, `tool.result`.

use std::any::Any;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine_ports::{
    EventKind, HookAction, HookPhase, Post, ToolCall, ToolCallRecord, ToolResult, elapsed_between,
};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::elicit::CallElicitor;
use super::execution::{Batch, Execution, Failed};
use super::gate::{Decided, GateDecision, Outcome, ParsedCall};
use super::{DispatchConfig, TurnContext, cancelled_result, hook_event};
use crate::tool::ToolError;

/// What execution of one call gave back (`None`: cancelled before it started).
pub(super) struct Executed {
    outcome: Option<Result<ToolResult, ToolError>>,
    end: Option<SystemTime>,
}

/// A call of the current segment after the execute phase started.
pub(super) enum Running {
    /// Stopped by the gate, or cancelled before it started, with its final result
    /// and the approval its record keeps.
    Stopped(ToolResult, Option<Decided>),
    /// Running (`rewritten`: the call with the arguments a hook gave it, else the
    /// call runs as the model made it).
    Started {
        rewritten: Option<ParsedCall<'static>>,
        /// When the call got its slot and started (with a clock), set by the work.
        start: Arc<OnceLock<SystemTime>>,
        handle: Execution<Executed>,
        approval: Option<Decided>,
    },
}

/// Timing of an executed call.
pub(super) struct Timing {
    queued: Duration,
    took: Duration,
}

/// Starts a call the gate let through in `batch`: it runs once a slot is free (a
/// slot per concurrent read, granted in call order) unless the turn is cancelled
/// first; a call the gate stopped stays stopped. `index` is its position in the turn.
pub(super) fn launch(
    ctx: &TurnContext,
    config: DispatchConfig,
    batch: &Arc<Batch<Executed>>,
    slots: &Arc<Semaphore>,
    decision: GateDecision,
    model: &ParsedCall<'_>,
    index: usize,
) -> Running {
    let approval = decision.approval();
    let (tool, rewritten) = match decision.outcome {
        Outcome::Stop(result) => return Running::Stopped(result, approval),
        Outcome::Run { tool, rewritten } => (tool, rewritten),
    };
    let original = model.call();
    let call = rewritten.as_ref().map_or(original, ParsedCall::call);
    if ctx.cancel.is_cancelled() {
        return Running::Stopped(cancelled_result(original), None);
    }
    let clock = ctx.clock.clone();
    let token = ctx.cancel.child_token();
    let slots = Arc::clone(slots);
    let start = Arc::new(OnceLock::new());
    let started = Arc::clone(&start);
    let elicitor = Arc::new(CallElicitor {
        session_id: ctx.session_id.clone(),
        call: call.clone(),
        turn: ctx.turn,
        position: index + 1,
        events: Arc::clone(&ctx.events),
        asks: ctx.asks.clone(),
        cancel: ctx.cancel.clone(),
        timeout: config.elicitation_timeout,
        asked: std::sync::atomic::AtomicUsize::new(0),
        notes: std::sync::Mutex::default(),
    });
    let env = ctx
        .environment
        .with_elicitor(Arc::clone(&elicitor) as Arc<dyn crate::elicitation::Elicitor>);
    let work = async move {
        let not_started = Executed {
            outcome: None,
            end: None,
        };
        // The turn may be cancelled before the call gets a slot: then it never starts.
        let permit = tokio::select! {
            biased;
            () = token.cancelled() => return not_started,
            permit = slots.acquire_owned() => permit,
        };
        let Ok(permit) = permit else { return not_started };
        if let Some(clock) = &clock {
            let _ = started.set(clock.now());
        }
        let outcome = tool
            .execute(&token, &elicitor.call, &env)
            .await
            .map(|result| with_notes(result, elicitor.notes()));
        let end = clock.as_ref().map(|c| c.now());
        drop(permit);
        Executed {
            outcome: Some(outcome),
            end,
        }
    };
    Running::Started {
        rewritten,
        start,
        handle: batch.start(work),
        approval,
    }
}

/// A result with the notes of the questions the harness answered without the user
/// (each on its own line at the end, so the model knows why the server was refused).
fn with_notes(result: ToolResult, notes: Vec<String>) -> ToolResult {
    if notes.is_empty() {
        return result;
    }
    let mut content = result.content().to_owned();
    for note in notes {
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&note);
    }
    result.with_content(content)
}

/// Waits for one execution; once the turn is cancelled, waits at most until the
/// shared grace deadline, then aborts the work. The second value is `None` when the
/// call never started, else the end time (`Some(None)` without a clock).
async fn collect(
    ctx: &TurnContext,
    grace: Duration,
    deadline: &mut Option<Instant>,
    call: &ToolCall,
    mut handle: Execution<Executed>,
) -> (ToolResult, Option<Option<SystemTime>>) {
    let tool_name = call.name();
    let joined = loop {
        match *deadline {
            None => {
                tokio::select! {
                    biased;
                    joined = &mut handle => break Some(joined),
                    () = ctx.cancel.cancelled() => {
                        *deadline = Some(Instant::now() + grace);
                    }
                }
            }
            Some(at) => match tokio::time::timeout_at(at, &mut handle).await {
                Ok(joined) => break Some(joined),
                Err(_elapsed) => {
                    handle.abort();
                    tracing::warn!(
                        session_id = %ctx.session_id,
                        call_id = %call.id(),
                        tool = tool_name,
                        "tool ignored cancellation past the grace period; it was dropped"
                    );
                    break None;
                }
            },
        }
    };
    let now = || ctx.clock.as_ref().map(|c| c.now());
    match joined {
        None => (cancelled_result(call), Some(now())),
        Some(Ok(Executed { outcome: None, .. })) => (cancelled_result(call), None),
        Some(Ok(Executed {
            outcome: Some(outcome),
            end,
        })) => {
            let result = match outcome {
                Ok(result) => result,
                Err(ToolError::Cancelled) => cancelled_result(call),
                Err(error) => {
                    ToolResult::error(call.id().clone(), format!("tool {tool_name} failed: {error}"))
                }
            };
            (result, Some(end))
        }
        Some(Err(failed)) => (failed_result(ctx, call, tool_name, failed), Some(now())),
    }
}

fn failed_result(ctx: &TurnContext, call: &ToolCall, tool_name: &str, failed: Failed) -> ToolResult {
    let payload = match failed {
        Failed::Panicked(payload) => payload,
        Failed::Aborted => return cancelled_result(call),
    };
    let message = panic_message(payload);
    tracing::error!(
        session_id = %ctx.session_id,
        call_id = %call.id(),
        tool = tool_name,
        panic = message.as_deref().unwrap_or("<non-string payload>"),
        "tool panicked"
    );
    let text = match message {
        Some(message) => format!("tool {tool_name} panicked: {message}"),
        None => format!("tool {tool_name} panicked"),
    };
    ToolResult::error(call.id().clone(), text)
}

fn panic_message(payload: Box<dyn Any + Send>) -> Option<String> {
    match payload.downcast::<String>() {
        Ok(message) => Some(*message),
        Err(payload) => payload.downcast::<&'static str>().ok().map(|m| (*m).to_owned()),
    }
}

/// A call's final result after it ran or was stopped: waits for its execution (if
/// it started) and finishes it (see [`finish`]). Returns the call as it ran and its
/// result.
pub(super) async fn complete<'a>(
    ctx: &TurnContext,
    config: DispatchConfig,
    grace_deadline: &mut Option<Instant>,
    enqueue: Option<SystemTime>,
    model: &'a ParsedCall<'a>,
    run: Running,
) -> ToolResult {
    match run {
        Running::Stopped(result, approval) => finish(ctx, model, result, None, approval).await,
        Running::Started {
            rewritten,
            start,
            handle,
            approval,
        } => {
            let call = rewritten.as_ref().unwrap_or(model);
            let (result, end) = collect(ctx, config.cancel_grace, grace_deadline, call.call(), handle).await;
            let start = start.get().copied();
            let timing = end.map(|end| Timing {
                queued: span(enqueue, start),
                took: span(start, end),
            });
            finish(ctx, call, result, timing, approval).await
        }
    }
}

fn span(from: Option<SystemTime>, to: Option<SystemTime>) -> Duration {
    match (from, to) {
        (Some(from), Some(to)) => elapsed_between(from, to),
        _ => Duration::ZERO,
    }
}

/// PostToolUse, id forcing, the output cap, the audit record, `tool.result`. A call
/// is recorded when it executed (`timing`) or when a permission decision refused it
/// (an `approval` that denies), never when it was cancelled before either.
async fn finish(
    ctx: &TurnContext,
    parsed: &ParsedCall<'_>,
    mut result: ToolResult,
    timing: Option<Timing>,
    approval: Option<Decided>,
) -> ToolResult {
    let call = parsed.call();
    if timing.is_some()
        && let Some(hooks) = &ctx.hooks
    {
        match hooks.post_tool_use(&ctx.session_id, call, &result).await {
            Ok(Post::Keep) => {}
            Ok(Post::Rewrite { content, is_error }) => {
                result = if is_error {
                    ToolResult::error(call.id().clone(), content)
                } else {
                    ToolResult::text(call.id().clone(), content)
                };
                hook_event(
                    ctx,
                    HookPhase::PostToolUse,
                    call,
                    HookAction::RewriteResult,
                    "the hook rewrote the result",
                )
                .await;
            }
            Err(error) => {
                tracing::warn!(
                    session_id = %ctx.session_id,
                    call_id = %call.id(),
                    tool = call.name(),
                    error = %error.message,
                    "PostToolUse hook failed; the result is kept"
                );
                let message = format!(
                    "the PostToolUse hook failed and the result was kept: {}",
                    error.message
                );
                hook_event(ctx, HookPhase::PostToolUse, call, HookAction::Error, &message).await;
            }
        }
    }
    if result.call_id() != call.id() {
        tracing::warn!(
            session_id = %ctx.session_id,
            call_id = %call.id(),
            returned_id = %result.call_id(),
            tool = call.name(),
            "tool answered another call id; forced to the call's id"
        );
        result = result.with_call_id(call.id().clone());
    }
    let cap = ctx.environment.output_cap();
    if !cap.fits(result.content()) {
        let capped = cap.truncate(result.content()).into_owned();
        result = result.with_content(capped);
    }
    let recorded = match (&timing, approval) {
        (Some(timing), Some(approval)) => Some((approval, timing.queued, timing.took)),
        (None, Some(approval)) if !approval.0.allows() => Some((approval, Duration::ZERO, Duration::ZERO)),
        _ => None,
    };
    if let (Some(((approval, provenance), queued, took)), Some(recorder)) = (recorded, &ctx.recorder) {
        // The record is built once, here, and timed by the engine's clock only.
        let time = ctx.clock.as_ref().map_or(UNIX_EPOCH, |clock| clock.now());
        let record = ToolCallRecord::with_args(
            &ctx.session_id,
            call,
            parsed.value(),
            &result,
            (queued, took),
            time,
        )
        .with_approval(approval)
        .with_provenance(provenance)
        .with_caller(ctx.caller.as_deref().cloned());
        if let Err(error) = recorder.record(&record).await {
            tracing::warn!(session_id = %ctx.session_id, call_id = %call.id(), %error, "tool call record dropped");
            ctx.events.note_audit_failure(format!(
                "the record of call {} was not written: {error}",
                call.id()
            ));
        }
    }
    if ctx.events.is_active() {
        ctx.events
            .emit(EventKind::ToolResult {
                call_id: call.id().clone(),
                name: call.name().to_owned(),
                content: result.content().to_owned(),
                is_error: result.is_error(),
                parts: result.parts().to_vec(),
            })
            .await;
    }
    result
}
