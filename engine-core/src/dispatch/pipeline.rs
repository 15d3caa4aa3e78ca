//! The per-call pipeline: prepare (serial, call order), execute (a batch of reads on
//! their own tasks, bounded; a lone call inline), finish (call order).

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use engine_ports::{
    Decision, EventKind, HookAction, HookPhase, PermissionRequest, Post, Pre, ToolCall, ToolResult, Verdict,
    elapsed_between,
};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::execution::{Execution, Failed};
use super::segments::segments;
use super::{DispatchConfig, TurnContext, TurnOutcome, normalize_call_ids};
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

/// A prepared call: stopped with a final result, or ready to execute.
enum Step {
    Stopped(ToolResult),
    Ready { tool: Arc<dyn Tool>, call: ToolCall },
}

/// What execution of one call gave back (`None`: cancelled before it started).
struct Executed {
    outcome: Option<Result<ToolResult, ToolError>>,
    end: Option<SystemTime>,
}

/// A call of the current segment after the execute phase started.
enum Running {
    Stopped(ToolResult),
    Started {
        call: ToolCall,
        tool_name: String,
        start: Option<SystemTime>,
        handle: Execution<Executed>,
    },
}

/// Timing of an executed call.
struct Timing {
    queued: Duration,
    took: Duration,
}

pub(super) async fn run_turn(config: DispatchConfig, ctx: &TurnContext, calls: &[ToolCall]) -> TurnOutcome {
    let calls = normalize_call_ids(calls, ctx.turn);
    let enqueue = ctx.clock.as_ref().map(|clock| clock.now());
    if ctx.events.is_active() {
        for call in &calls {
            ctx.events
                .emit(EventKind::ToolCall {
                    call_id: call.id().clone(),
                    name: call.name().to_owned(),
                    args: call.args_value(),
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
                Step::Stopped(cancelled_result(&calls[index]))
            } else {
                prepare(ctx, index, &calls[index], &targets[index]).await
            };
            prepared.push(step);
        }

        let slots = Arc::new(Semaphore::new(config.max_parallel_reads.get()));
        // A lone call has nothing to run beside: it runs inline, without a task.
        let inline = segment.len() == 1;
        let mut running = Vec::with_capacity(prepared.len());
        for (step, index) in prepared.into_iter().zip(segment.clone()) {
            running.push(match step {
                Step::Stopped(result) => Running::Stopped(result),
                Step::Ready { tool, call } => launch(ctx, &slots, tool, call, &calls[index], inline).await,
            });
        }

        for (run, index) in running.into_iter().zip(segment) {
            let (effective, result, timing) = match run {
                Running::Stopped(result) => (calls[index].clone(), result, None),
                Running::Started {
                    call,
                    tool_name,
                    start,
                    handle,
                } => {
                    let (result, end) = collect(
                        ctx,
                        config.cancel_grace,
                        &mut grace_deadline,
                        &call,
                        &tool_name,
                        handle,
                    )
                    .await;
                    let timing = end.map(|end| Timing {
                        queued: span(enqueue, start),
                        took: span(start, end),
                    });
                    (call, result, timing)
                }
            };
            let result = finish(ctx, &effective, result, timing).await;
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
        .zip(&calls)
        .map(|(result, call)| result.unwrap_or_else(|| cancelled_result(call)))
        .collect();
    hydrated.sort();
    hydrated.dedup();
    TurnOutcome {
        calls,
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

async fn prepare(ctx: &TurnContext, index: usize, call: &ToolCall, target: &Target) -> Step {
    let (tool, read_only) = match target {
        Target::Unknown => {
            let hint = if ctx.progressive_tools {
                " Check the name against the tool list, or call ToolSearch to find a tool."
            } else {
                " Check the name against the tool list."
            };
            return Step::Stopped(ToolResult::error(
                call.id().clone(),
                format!("no such tool: {:?} does not exist.{hint}", call.name()),
            ));
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
            return Step::Stopped(ToolResult::error(call.id().clone(), message));
        }
        Target::Tool { tool, read_only, .. } => (tool, *read_only),
    };

    match decide(ctx, index, call, read_only).await {
        Gate::Pass => {}
        Gate::Stop(result) => return Step::Stopped(result),
    }

    let Some(hooks) = &ctx.hooks else {
        return Step::Ready {
            tool: Arc::clone(tool),
            call: call.clone(),
        };
    };
    match hooks.pre_tool_use(&ctx.session_id, call).await {
        Ok(Pre::Allow) => Step::Ready {
            tool: Arc::clone(tool),
            call: call.clone(),
        },
        Ok(Pre::Deny { message }) => {
            hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Deny, &message).await;
            Step::Stopped(ToolResult::error(
                call.id().clone(),
                format!("call to {} was blocked by a hook: {message}", call.name()),
            ))
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
                    call: call.clone(),
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
                    call: rewritten,
                },
                Decision::Ask { reason } | Decision::Deny { reason } => Step::Stopped(denied(
                    call,
                    &format!("the rewritten arguments were not approved ({reason})"),
                )),
            }
        }
        Err(error) => {
            let message = format!("the PreToolUse hook failed: {}", error.message);
            hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Error, &message).await;
            Step::Stopped(ToolResult::error(
                call.id().clone(),
                format!("call to {} was blocked: {message}", call.name()),
            ))
        }
    }
}

enum Gate {
    Pass,
    Stop(ToolResult),
}

async fn decide(ctx: &TurnContext, index: usize, call: &ToolCall, read_only: bool) -> Gate {
    let request = PermissionRequest {
        session_id: ctx.session_id.clone(),
        mode: ctx.mode,
        call: call.clone(),
        read_only,
    };
    let reason = match ctx.policy.evaluate(&request).await {
        Decision::Allow => return Gate::Pass,
        Decision::Deny { reason } => return Gate::Stop(denied(call, &reason)),
        Decision::Ask { reason } => reason,
    };
    let Some(asks) = &ctx.asks else {
        return Gate::Stop(denied(
            call,
            &format!("approval needs an interactive operator and this run is headless ({reason})"),
        ));
    };
    let ask_id = format!("ask-{}-{}", ctx.turn, index + 1);
    let answer = asks.open(&ask_id);
    ctx.events
        .emit(EventKind::PermissionAsk {
            ask_id: ask_id.clone(),
            call_id: call.id().clone(),
            name: call.name().to_owned(),
            args: call.args_value(),
            reason,
        })
        .await;
    let verdict = tokio::select! {
        () = ctx.cancel.cancelled() => None,
        verdict = answer => verdict.ok(),
    };
    asks.close(&ask_id);
    let Some(verdict) = verdict else {
        return Gate::Stop(cancelled_result(call));
    };
    ctx.events
        .emit(EventKind::PermissionVerdict {
            ask_id,
            call_id: call.id().clone(),
            verdict,
        })
        .await;
    match verdict {
        Verdict::AllowOnce => Gate::Pass,
        Verdict::AllowAlways => {
            ctx.policy.learn(&ctx.session_id, call);
            Gate::Pass
        }
        Verdict::Deny => Gate::Stop(denied(call, "the operator denied it")),
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

async fn launch(
    ctx: &TurnContext,
    slots: &Arc<Semaphore>,
    tool: Arc<dyn Tool>,
    call: ToolCall,
    original: &ToolCall,
    inline: bool,
) -> Running {
    if ctx.cancel.is_cancelled() {
        return Running::Stopped(cancelled_result(original));
    }
    let permit = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => None,
        permit = Arc::clone(slots).acquire_owned() => permit.ok(),
    };
    let Some(permit) = permit else {
        return Running::Stopped(cancelled_result(original));
    };
    let clock = ctx.clock.clone();
    let start = clock.as_ref().map(|c| c.now());
    let token = ctx.cancel.child_token();
    let env = ctx.environment.clone();
    let task_call = call.clone();
    let tool_name = call.name().to_owned();
    let work = async move {
        // The work may first run after the turn was cancelled: then the call never
        // starts.
        if token.is_cancelled() {
            return Executed {
                outcome: None,
                end: None,
            };
        }
        let outcome = tool.execute(&token, &task_call, &env).await;
        let end = clock.as_ref().map(|c| c.now());
        drop(permit);
        Executed {
            outcome: Some(outcome),
            end,
        }
    };
    let handle = Execution::start(work, inline);
    Running::Started {
        call,
        tool_name,
        start,
        handle,
    }
}

/// Waits for one execution; once the turn is cancelled, waits at most until the
/// shared grace deadline, then aborts the work. The second value is `None` when the
/// call never started, else the end time (`Some(None)` without a clock).
async fn collect(
    ctx: &TurnContext,
    grace: Duration,
    deadline: &mut Option<Instant>,
    call: &ToolCall,
    tool_name: &str,
    mut handle: Execution<Executed>,
) -> (ToolResult, Option<Option<SystemTime>>) {
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

async fn finish(
    ctx: &TurnContext,
    call: &ToolCall,
    mut result: ToolResult,
    timing: Option<Timing>,
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
    if let (Some(timing), Some(recorder)) = (&timing, &ctx.recorder)
        && let Err(error) = recorder
            .record(&ctx.session_id, call, &result, timing.queued, timing.took)
            .await
    {
        tracing::warn!(session_id = %ctx.session_id, call_id = %call.id(), %error, "tool call record dropped");
        ctx.events.note_audit_failure(format!(
            "the record of call {} was not written: {error}",
            call.id()
        ));
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
