//! The per-call pipeline: prepare (serial, call order), execute (a batch of reads on
//! their own tasks, bounded; a lone call inline), finish (call order).

use std::any::Any;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine_ports::{
    Approval, Decision, EventKind, HookAction, HookPhase, PermissionRequest, Post, Pre, ToolCall,
    ToolCallRecord, ToolResult, Verdict, elapsed_between,
};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::call_ids::normalized;
use super::elicit::CallElicitor;
use super::execution::{Execution, Failed};
use super::segments::segments;
use super::{DispatchConfig, TurnContext, TurnOutcome};
use crate::catalog::Resolved;
use crate::tool::{Tool, ToolError};
use crate::tool_search::{TOOL_SEARCH_NAME, ToolSearch, returned_names};

/// What a call resolved to (`read_only`: whether this call is, see
/// [`Tool::call_read_only`]).
enum Target {
    Tool {
        tool: Arc<dyn Tool>,
        is_search: bool,
        read_only: bool,
    },
    NotInMode,
    Unknown,
}

impl Target {
    fn batchable(&self) -> bool {
        matches!(self, Self::Tool { tool, read_only: true, .. } if !tool.dispatch_serial())
    }
}

/// A prepared call: stopped with a final result (with the approval that refused it,
/// when a permission decision did), or ready to execute with the approval that let
/// it run (`rewritten`: the call with the arguments a hook gave it, else the call
/// runs as the model made it).
enum Step {
    Stopped(ToolResult, Option<Approval>),
    Ready {
        tool: Arc<dyn Tool>,
        rewritten: Option<ToolCall>,
        approval: Approval,
    },
}

/// What execution of one call gave back (`None`: cancelled before it started).
struct Executed {
    outcome: Option<Result<ToolResult, ToolError>>,
    end: Option<SystemTime>,
}

/// A call of the current segment after the execute phase started.
enum Running {
    Stopped(ToolResult, Option<Approval>),
    Started {
        rewritten: Option<ToolCall>,
        start: Option<SystemTime>,
        handle: Execution<Executed>,
        approval: Approval,
    },
}

/// A call's arguments as a JSON value (`ToolCall::args_value`), parsed once for its
/// `tool.call` event, its permission ask and its record.
struct ParsedArgs<'a> {
    /// The call as the model made it (ids normalized).
    call: &'a ToolCall,
    value: OnceLock<serde_json::Value>,
}

impl<'a> ParsedArgs<'a> {
    fn new(call: &'a ToolCall) -> Self {
        Self {
            call,
            value: OnceLock::new(),
        }
    }

    /// The arguments of `effective` (the call, or the call with arguments a hook
    /// rewrote) as a value: the model's arguments are parsed on first use only.
    fn value(&self, effective: &ToolCall) -> serde_json::Value {
        if effective.args() == self.call.args() {
            self.value.get_or_init(|| self.call.args_value()).clone()
        } else {
            effective.args_value()
        }
    }
}

/// Timing of an executed call.
struct Timing {
    queued: Duration,
    took: Duration,
}

pub(super) async fn run_turn(config: DispatchConfig, ctx: &TurnContext, calls: &[ToolCall]) -> TurnOutcome {
    let calls = normalized(calls, ctx.turn);
    let calls = &*calls;
    let args: Vec<ParsedArgs<'_>> = calls.iter().map(ParsedArgs::new).collect();
    let enqueue = ctx.clock.as_ref().map(|clock| clock.now());
    if ctx.events.is_active() {
        for (call, args) in calls.iter().zip(&args) {
            ctx.events
                .emit(EventKind::ToolCall {
                    call_id: call.id().clone(),
                    name: call.name().to_owned(),
                    args: args.value(call),
                })
                .await;
        }
    }

    let search: Option<Arc<dyn Tool>> = ctx
        .progressive_tools
        .then(|| Arc::new(ToolSearch::new(Arc::clone(&ctx.catalog), ctx.mode)) as Arc<dyn Tool>);
    let targets: Vec<Target> = calls
        .iter()
        .map(|call| resolve(ctx, call, search.as_ref()))
        .collect();
    let batchable: Vec<bool> = targets.iter().map(Target::batchable).collect();

    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    let mut hydrated = Vec::new();
    let mut grace_deadline: Option<Instant> = None;

    for segment in segments(&batchable) {
        let mut prepared = Vec::with_capacity(segment.len());
        for index in segment.clone() {
            let step = if ctx.cancel.is_cancelled() {
                Step::Stopped(cancelled_result(&calls[index]), None)
            } else {
                prepare(ctx, index, &args[index], &targets[index]).await
            };
            prepared.push(step);
        }

        let slots = Arc::new(Semaphore::new(config.max_parallel_reads.get()));
        // A lone call has nothing to run beside: it runs inline, without a task.
        let inline = segment.len() == 1;
        let mut running = Vec::with_capacity(prepared.len());
        for (step, index) in prepared.into_iter().zip(segment.clone()) {
            running.push(match step {
                Step::Stopped(result, approval) => Running::Stopped(result, approval),
                Step::Ready {
                    tool,
                    rewritten,
                    approval,
                } => {
                    let place = Place {
                        index,
                        inline,
                        approval,
                    };
                    launch(ctx, config, &slots, tool, rewritten, &calls[index], place).await
                }
            });
        }

        for (run, index) in running.into_iter().zip(segment) {
            let (rewritten, result, timing, approval) = match run {
                Running::Stopped(result, approval) => (None, result, None, approval),
                Running::Started {
                    rewritten,
                    start,
                    handle,
                    approval,
                } => {
                    let call = rewritten.as_ref().unwrap_or(&calls[index]);
                    let (result, end) =
                        collect(ctx, config.cancel_grace, &mut grace_deadline, call, handle).await;
                    let timing = end.map(|end| Timing {
                        queued: span(enqueue, start),
                        took: span(start, end),
                    });
                    (rewritten, result, timing, Some(approval))
                }
            };
            let effective = rewritten.as_ref().unwrap_or(&calls[index]);
            let result = finish(ctx, effective, &args[index], result, timing, approval).await;
            if matches!(targets[index], Target::Tool { is_search: true, .. }) {
                hydrated.extend(
                    returned_names(&result)
                        .into_iter()
                        .filter(|name| is_disclosable(ctx, name)),
                );
            }
            results[index] = Some(result);
        }
    }

    let results = results
        .into_iter()
        .zip(calls)
        .map(|(result, call)| result.unwrap_or_else(|| cancelled_result(call)))
        .collect();
    hydrated.sort();
    hydrated.dedup();
    TurnOutcome {
        results,
        hydrated,
        cancelled: ctx.cancel.is_cancelled(),
    }
}

fn resolve(ctx: &TurnContext, call: &ToolCall, search: Option<&Arc<dyn Tool>>) -> Target {
    if let Some(search) = search
        && call.name() == TOOL_SEARCH_NAME
    {
        return Target::Tool {
            tool: Arc::clone(search),
            is_search: true,
            read_only: true,
        };
    }
    match ctx.catalog.resolve(call.name(), ctx.mode) {
        Resolved::Available(tool) => {
            let read_only = tool.read_only() && tool.call_read_only(call);
            // D1 per call: a read-only tool's call that would change something is
            // refused in plan mode like a mutating tool.
            if !read_only && ctx.mode == engine_ports::PermissionMode::Plan {
                return Target::NotInMode;
            }
            Target::Tool {
                tool: Arc::clone(tool),
                is_search: false,
                read_only,
            }
        }
        Resolved::NotInMode(_) => Target::NotInMode,
        Resolved::Unknown => Target::Unknown,
    }
}

fn is_disclosable(ctx: &TurnContext, name: &str) -> bool {
    ctx.catalog
        .lookup(name)
        .is_some_and(|tool| tool.advertised_spec().is_some())
}

fn span(from: Option<SystemTime>, to: Option<SystemTime>) -> Duration {
    match (from, to) {
        (Some(from), Some(to)) => elapsed_between(from, to),
        _ => Duration::ZERO,
    }
}

fn cancelled_result(call: &ToolCall) -> ToolResult {
    ToolResult::error(
        call.id().clone(),
        format!("call to {} was cancelled before it finished", call.name()),
    )
}

fn denied(call: &ToolCall, reason: &str) -> ToolResult {
    ToolResult::error(
        call.id().clone(),
        format!("permission denied for {}: {reason}", call.name()),
    )
}

async fn prepare(ctx: &TurnContext, index: usize, args: &ParsedArgs<'_>, target: &Target) -> Step {
    let call = args.call;
    let (tool, read_only) = match target {
        Target::Unknown => {
            let hint = if ctx.progressive_tools {
                " Check the name against the tool list, or call ToolSearch to find a tool."
            } else {
                " Check the name against the tool list."
            };
            return Step::Stopped(
                ToolResult::error(
                    call.id().clone(),
                    format!("no such tool: {:?} does not exist.{hint}", call.name()),
                ),
                None,
            );
        }
        Target::NotInMode => {
            let message = if ctx.mode == engine_ports::PermissionMode::Plan {
                format!(
                    "tool {} is not available in plan mode: only read-only tools run while planning",
                    call.name()
                )
            } else {
                format!("tool {} is only available in plan mode", call.name())
            };
            return Step::Stopped(ToolResult::error(call.id().clone(), message), None);
        }
        Target::Tool { tool, read_only, .. } => (tool, *read_only),
    };

    let approval = match decide(ctx, index, args, read_only).await {
        Gate::Pass(approval) => approval,
        Gate::Stop(result, approval) => return Step::Stopped(result, approval),
    };

    let Some(hooks) = &ctx.hooks else {
        return Step::Ready {
            tool: Arc::clone(tool),
            rewritten: None,
            approval,
        };
    };
    match hooks.pre_tool_use(&ctx.session_id, call).await {
        Ok(Pre::Allow) => Step::Ready {
            tool: Arc::clone(tool),
            rewritten: None,
            approval,
        },
        Ok(Pre::Deny { message }) => {
            hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Deny, &message).await;
            blocked_by_hook(
                call,
                format!("call to {} was blocked by a hook: {message}", call.name()),
            )
        }
        Ok(Pre::RewriteArgs { args }) => {
            if serde_json::from_str::<serde_json::Value>(&args).is_err() {
                hook_event(
                    ctx,
                    HookPhase::PreToolUse,
                    call,
                    HookAction::Ignored,
                    "the hook's rewritten arguments are not valid JSON; the original arguments are kept",
                )
                .await;
                return Step::Ready {
                    tool: Arc::clone(tool),
                    rewritten: None,
                    approval,
                };
            }
            let rewritten = call.with_args(args);
            hook_event(
                ctx,
                HookPhase::PreToolUse,
                call,
                HookAction::RewriteArgs,
                "the hook rewrote the arguments",
            )
            .await;
            let request = PermissionRequest {
                session_id: ctx.session_id.clone(),
                mode: ctx.mode,
                call: rewritten.clone(),
                read_only,
            };
            match ctx.policy.evaluate(&request).await {
                Decision::Allow => Step::Ready {
                    tool: Arc::clone(tool),
                    rewritten: Some(rewritten),
                    approval: Approval::POLICY_ALLOW,
                },
                Decision::Ask { reason } | Decision::Deny { reason } => Step::Stopped(
                    denied(
                        call,
                        &format!("the rewritten arguments were not approved ({reason})"),
                    ),
                    Some(Approval::POLICY_DENY),
                ),
            }
        }
        Err(error) => {
            let message = format!("the PreToolUse hook failed: {}", error.message);
            hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Error, &message).await;
            blocked_by_hook(call, format!("call to {} was blocked: {message}", call.name()))
        }
    }
}

/// A call its PreToolUse hook stopped (it denied the call, or it failed), with the
/// error the model sees.
fn blocked_by_hook(call: &ToolCall, message: String) -> Step {
    Step::Stopped(
        ToolResult::error(call.id().clone(), message),
        Some(Approval::HOOK_DENY),
    )
}

/// The permission decision of one call: pass with who allowed it, or stop with the
/// result the model sees (and who refused it, unless the run was cancelled first).
enum Gate {
    Pass(Approval),
    Stop(ToolResult, Option<Approval>),
}

async fn decide(ctx: &TurnContext, index: usize, args: &ParsedArgs<'_>, read_only: bool) -> Gate {
    let call = args.call;
    let request = PermissionRequest {
        session_id: ctx.session_id.clone(),
        mode: ctx.mode,
        call: call.clone(),
        read_only,
    };
    let reason = match ctx.policy.evaluate(&request).await {
        Decision::Allow => return Gate::Pass(Approval::POLICY_ALLOW),
        Decision::Deny { reason } => return Gate::Stop(denied(call, &reason), Some(Approval::POLICY_DENY)),
        Decision::Ask { reason } => reason,
    };
    let Some(asks) = &ctx.asks else {
        return Gate::Stop(
            denied(
                call,
                &format!("approval needs an interactive operator and this run is headless ({reason})"),
            ),
            Some(Approval::POLICY_DENY),
        );
    };
    let ask_id = format!("ask-{}-{}", ctx.turn, index + 1);
    let answer = asks.open(&ask_id);
    ctx.events
        .emit(EventKind::PermissionAsk {
            ask_id: ask_id.clone(),
            call_id: call.id().clone(),
            name: call.name().to_owned(),
            args: args.value(call),
            reason,
        })
        .await;
    // An answer that arrived wins over a cancellation right behind it (a host that
    // cancels a run denies its asks first): it is a decision, and recorded as one.
    let verdict = tokio::select! {
        biased;
        verdict = answer => verdict.ok(),
        () = ctx.cancel.cancelled() => None,
    };
    asks.close(&ask_id);
    let Some(verdict) = verdict else {
        return Gate::Stop(cancelled_result(call), None);
    };
    ctx.events
        .emit(EventKind::PermissionVerdict {
            ask_id,
            call_id: call.id().clone(),
            verdict,
        })
        .await;
    let approval = Approval::user(verdict);
    match verdict {
        Verdict::AllowOnce => Gate::Pass(approval),
        Verdict::AllowAlways => {
            ctx.policy.learn(&ctx.session_id, call);
            Gate::Pass(approval)
        }
        Verdict::Deny => Gate::Stop(denied(call, "the operator denied it"), Some(approval)),
    }
}

async fn hook_event(ctx: &TurnContext, phase: HookPhase, call: &ToolCall, action: HookAction, message: &str) {
    ctx.events
        .emit(EventKind::Hook {
            phase,
            call_id: call.id().clone(),
            name: call.name().to_owned(),
            action,
            message: message.to_owned(),
        })
        .await;
}

/// Where a prepared call runs — its position in the turn, whether inline — and the
/// approval that let it run.
struct Place {
    index: usize,
    inline: bool,
    approval: Approval,
}

async fn launch(
    ctx: &TurnContext,
    config: DispatchConfig,
    slots: &Arc<Semaphore>,
    tool: Arc<dyn Tool>,
    rewritten: Option<ToolCall>,
    original: &ToolCall,
    place: Place,
) -> Running {
    let call = rewritten.as_ref().unwrap_or(original);
    if ctx.cancel.is_cancelled() {
        return Running::Stopped(cancelled_result(original), None);
    }
    let permit = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => None,
        permit = Arc::clone(slots).acquire_owned() => permit.ok(),
    };
    let Some(permit) = permit else {
        return Running::Stopped(cancelled_result(original), None);
    };
    let clock = ctx.clock.clone();
    let start = clock.as_ref().map(|c| c.now());
    let token = ctx.cancel.child_token();
    let elicitor = Arc::new(CallElicitor {
        session_id: ctx.session_id.clone(),
        call_id: call.id().clone(),
        tool: call.name().to_owned(),
        id_prefix: format!("elicit-{}-{}", ctx.turn, place.index + 1),
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
    let task_call = call.clone();
    let work = async move {
        // The work may first run after the turn was cancelled: then the call never
        // starts.
        if token.is_cancelled() {
            return Executed {
                outcome: None,
                end: None,
            };
        }
        let outcome = tool
            .execute(&token, &task_call, &env)
            .await
            .map(|result| with_notes(result, elicitor.notes()));
        let end = clock.as_ref().map(|c| c.now());
        drop(permit);
        Executed {
            outcome: Some(outcome),
            end,
        }
    };
    let handle = Execution::start(work, place.inline);
    Running::Started {
        rewritten,
        start,
        handle,
        approval: place.approval,
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
                        "tool ignored cancellation past the grace period; its task was aborted"
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

/// PostToolUse, id forcing, the output cap, the audit record, `tool.result`. A call
/// is recorded when it executed (`timing`) or when a permission decision refused it
/// (an `approval` that denies), never when it was cancelled before either.
async fn finish(
    ctx: &TurnContext,
    call: &ToolCall,
    args: &ParsedArgs<'_>,
    mut result: ToolResult,
    timing: Option<Timing>,
    approval: Option<Approval>,
) -> ToolResult {
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
        (None, Some(approval)) if !approval.allows() => Some((approval, Duration::ZERO, Duration::ZERO)),
        _ => None,
    };
    if let (Some((approval, queued, took)), Some(recorder)) = (recorded, &ctx.recorder) {
        // The record is built once, here, and timed by the engine's clock only.
        let time = ctx.clock.as_ref().map_or(UNIX_EPOCH, |clock| clock.now());
        let record = ToolCallRecord::with_args(
            &ctx.session_id,
            call,
            args.value(call),
            &result,
            (queued, took),
            time,
        )
        .with_approval(approval);
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
