//! The gate: everything that decides whether one call runs, before it runs — its
//! resolution in the session's mode view, the permission policy, the person when the
//! policy asks, and the PreToolUse hook — read top to bottom in [`decide`], which
//! gives one [`GateDecision`]: what decided (the mode, the policy, a hook or the
//! person), and either the call to run (the model's, or the one a hook rewrote, its
//! arguments parsed once) or the result the model sees instead. Every refusal's text
//! is built in one place, [`refuse`].

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use engine_ports::{
    Approval, ApprovalVerdict, Decider, Decision, EventKind, HookAction, HookPhase, PermissionMode,
    PermissionRequest, Pre, ToolCall, ToolResult, Verdict,
};

use super::{TurnContext, cancelled_result, hook_event};
use crate::catalog::Resolved;
use crate::tool::Tool;
use crate::tool_search::{TOOL_SEARCH_NAME, ToolSearch};

/// A call and its arguments as a JSON value ([`ToolCall::args_value`]), parsed on
/// first use and only once: the model's call by its `tool.call` event, its
/// `permission.ask` or its record, whichever comes first; a hook's rewrite by the
/// gate's validity check, whose value the record reuses.
pub(super) struct ParsedCall<'a> {
    call: Cow<'a, ToolCall>,
    value: OnceLock<serde_json::Value>,
}

impl<'a> ParsedCall<'a> {
    /// The call as the model made it (ids normalized), not parsed yet.
    pub(super) fn new(call: &'a ToolCall) -> Self {
        Self {
            call: Cow::Borrowed(call),
            value: OnceLock::new(),
        }
    }

    /// The call.
    pub(super) fn call(&self) -> &ToolCall {
        &self.call
    }

    /// Its arguments as a value (parsed on the first call, then cloned).
    pub(super) fn value(&self) -> serde_json::Value {
        self.value.get_or_init(|| self.call.args_value()).clone()
    }
}

impl ParsedCall<'static> {
    /// A hook's rewrite of a call, with the value its arguments parsed to.
    fn rewritten(call: ToolCall, value: serde_json::Value) -> Self {
        Self {
            call: Cow::Owned(call),
            value: OnceLock::from(value),
        }
    }
}

/// What a call resolved to in the session's mode view (`read_only`: whether this
/// call is, see [`Tool::call_read_only`]; `is_search`: the engine's `ToolSearch`).
pub(super) enum Target {
    Tool {
        tool: Arc<dyn Tool>,
        is_search: bool,
        read_only: bool,
    },
    NotInMode,
    Unknown,
}

impl Target {
    /// Whether the call may join a concurrent batch of reads.
    pub(super) fn batchable(&self) -> bool {
        matches!(self, Self::Tool { tool, read_only: true, .. } if !tool.dispatch_serial())
    }

    /// Whether the call is the engine's `ToolSearch` (its result hydrates, D3).
    pub(super) fn is_search(&self) -> bool {
        matches!(self, Self::Tool { is_search: true, .. })
    }
}

/// Resolves every call of a turn in the session's mode view, before any runs (the
/// segments of a turn follow from what each call resolved to). With progressive tools
/// `ToolSearch` resolves first, to the engine's search bound to this turn's catalog
/// and mode: it is never registered in the catalog.
pub(super) fn resolve_all(ctx: &TurnContext, calls: &[ToolCall]) -> Vec<Target> {
    let search: Option<Arc<dyn Tool>> = ctx
        .progressive_tools
        .then(|| Arc::new(ToolSearch::new(Arc::clone(&ctx.catalog), ctx.mode)) as Arc<dyn Tool>);
    calls
        .iter()
        .map(|call| resolve(ctx, call, search.as_ref()))
        .collect()
}

/// How one call resolves in the session's mode view.
///
/// Plan mode is checked in two places, and both are needed (D1: a mutating call
/// never executes in plan mode and never reaches the policy). The catalog's mode
/// view ([`crate::Catalog::resolve`], over [`crate::available_in`]) keeps a tool in
/// plan mode when the *tool* is read-only: that view is what a turn advertises, so
/// the model is never offered a mutating tool while planning. But a read-only tool
/// may make one *call* mutating through its arguments ([`Tool::call_read_only`]:
/// `Subagent` with `mode: read-write`), and the catalog sees tools, never calls. The
/// second check, here, refuses such a call in plan mode exactly as the view refuses a
/// mutating tool, with the same result. Without the view, plan mode would advertise
/// tools it then refuses; without this check, a read-only tool could mutate while
/// planning.
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
            // The second plan-mode check: this call, not its tool (see above).
            if !read_only && ctx.mode == PermissionMode::Plan {
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

/// What decided a call at the gate: its provenance, which the call's record keeps
/// (see [`GateDecision::approval`]).
///
/// Each authority has one source today (the one policy, the one hook port, the
/// person answering the session's asks). The variants are where a decision will
/// name its source once permission rules come from settings files and hooks from
/// commands: which rule, which hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DecidedBy {
    /// The session's mode view: the name is unknown, or not available in the mode
    /// (plan mode's refusal of a mutating call included). No permission decision was
    /// made: the call is not recorded.
    Mode,
    /// The permission policy: it allowed or refused the call, refused an ask in a
    /// headless run, or judged the arguments a hook rewrote.
    Policy,
    /// The PreToolUse hook: it blocked the call, or failed (which blocks it).
    Hook,
    /// The person who answered the policy's ask, with the answer.
    Person(Verdict),
    /// Nothing: the turn was cancelled before the call was decided (an open ask
    /// included). The call is not recorded.
    Cancellation,
}

/// What the gate decided for one call.
pub(super) struct GateDecision {
    /// What decided.
    pub(super) by: DecidedBy,
    /// Run the call, or stop it with a result.
    pub(super) outcome: Outcome,
}

/// The gate's outcome for one call.
pub(super) enum Outcome {
    /// Run `tool`: with `rewritten` when a hook rewrote the arguments (and the
    /// policy allowed the rewrite), else with the model's call.
    Run {
        tool: Arc<dyn Tool>,
        rewritten: Option<ParsedCall<'static>>,
    },
    /// Do not run the call: this is its final result, before the finish.
    Stop(ToolResult),
}

impl GateDecision {
    fn run(by: DecidedBy, tool: &Arc<dyn Tool>, rewritten: Option<ParsedCall<'static>>) -> Self {
        Self {
            by,
            outcome: Outcome::Run {
                tool: Arc::clone(tool),
                rewritten,
            },
        }
    }

    fn cancelled(call: &ToolCall) -> Self {
        Self {
            by: DecidedBy::Cancellation,
            outcome: Outcome::Stop(cancelled_result(call)),
        }
    }

    /// The approval the call's record keeps: who decided and what, when a
    /// permission decision was made (`None` for the mode and for a cancellation).
    pub(super) fn approval(&self) -> Option<Approval> {
        let runs = matches!(self.outcome, Outcome::Run { .. });
        let by = match self.by {
            DecidedBy::Mode | DecidedBy::Cancellation => return None,
            DecidedBy::Person(verdict) => return Some(Approval::user(verdict)),
            DecidedBy::Policy => Decider::Policy,
            DecidedBy::Hook => Decider::Hook,
        };
        let verdict = if runs {
            ApprovalVerdict::Allow
        } else {
            ApprovalVerdict::Deny
        };
        Some(Approval { by, verdict })
    }
}

/// Decides whether one call runs, in the order the decisions are made: the turn's
/// cancellation, the mode, the permission policy, the person when the policy asks,
/// then the PreToolUse hook (which may block the call, or rewrite its arguments for
/// the policy to judge again). The first that refuses decides; a call that passes
/// them all runs with the approval of whoever allowed it: the policy or the person
/// (the policy when it judged a hook's rewrite).
pub(super) async fn decide(
    ctx: &TurnContext,
    index: usize,
    parsed: &ParsedCall<'_>,
    target: &Target,
) -> GateDecision {
    let call = parsed.call();
    if ctx.cancel.is_cancelled() {
        return GateDecision::cancelled(call);
    }

    // The mode: the name must resolve in the session's mode view (see `resolve`).
    let (tool, read_only) = match target {
        Target::Unknown => {
            return refuse(
                call,
                Refusal::Unknown {
                    searchable: ctx.progressive_tools,
                },
            );
        }
        Target::NotInMode => {
            return refuse(
                call,
                Refusal::NotInMode {
                    plan: ctx.mode == PermissionMode::Plan,
                },
            );
        }
        Target::Tool { tool, read_only, .. } => (tool, *read_only),
    };

    // The permission policy, and the person when it asks.
    let allowed_by = match ctx.policy.evaluate(&request(ctx, call.clone(), read_only)).await {
        Decision::Allow => DecidedBy::Policy,
        Decision::Deny { reason } => return refuse(call, Refusal::Policy(reason)),
        Decision::Ask { reason } => {
            let Some(asks) = &ctx.asks else {
                return refuse(call, Refusal::Headless(reason));
            };
            match ask_person(ctx, asks, index, parsed, reason).await {
                None => return GateDecision::cancelled(call),
                Some(Verdict::Deny) => return refuse(call, Refusal::Person),
                Some(verdict) => {
                    if verdict == Verdict::AllowAlways {
                        ctx.policy.learn(&ctx.session_id, call);
                    }
                    DecidedBy::Person(verdict)
                }
            }
        }
    };

    // The PreToolUse hook.
    let Some(hooks) = &ctx.hooks else {
        return GateDecision::run(allowed_by, tool, None);
    };
    match hooks.pre_tool_use(&ctx.session_id, call).await {
        Ok(Pre::Allow) => GateDecision::run(allowed_by, tool, None),
        Ok(Pre::Deny { message }) => {
            hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Deny, &message).await;
            refuse(call, Refusal::Hook(message))
        }
        Ok(Pre::RewriteArgs { args }) => rewrite(ctx, call, tool, read_only, allowed_by, args).await,
        Err(error) => {
            let message = format!("the PreToolUse hook failed: {}", error.message);
            hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Error, &message).await;
            refuse(call, Refusal::HookFailed(message))
        }
    }
}

/// What the policy is asked about one call.
fn request(ctx: &TurnContext, call: ToolCall, read_only: bool) -> PermissionRequest {
    PermissionRequest {
        session_id: ctx.session_id.clone(),
        mode: ctx.mode,
        call,
        read_only,
    }
}

/// Asks the person answering the session's asks (`permission.ask`, then
/// `permission.verdict`); `None` when the turn was cancelled first.
async fn ask_person(
    ctx: &TurnContext,
    asks: &super::AskRegistry,
    index: usize,
    parsed: &ParsedCall<'_>,
    reason: String,
) -> Option<Verdict> {
    let call = parsed.call();
    let ask_id = format!("ask-{}-{}", ctx.turn, index + 1);
    let answer = asks.open(&ask_id);
    ctx.events
        .emit(EventKind::PermissionAsk {
            ask_id: ask_id.clone(),
            call_id: call.id().clone(),
            name: call.name().to_owned(),
            args: parsed.value(),
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
    let verdict = verdict?;
    ctx.events
        .emit(EventKind::PermissionVerdict {
            ask_id,
            call_id: call.id().clone(),
            verdict,
        })
        .await;
    Some(verdict)
}

/// A hook's rewrite of the arguments: ignored (the call runs as decided) unless the
/// text is valid JSON, which is parsed here once for the call's record; a rewritten
/// call runs only when the policy allows it as it is now (an ask is not asked
/// again: it refuses).
async fn rewrite(
    ctx: &TurnContext,
    call: &ToolCall,
    tool: &Arc<dyn Tool>,
    read_only: bool,
    allowed_by: DecidedBy,
    args: String,
) -> GateDecision {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&args) else {
        hook_event(
            ctx,
            HookPhase::PreToolUse,
            call,
            HookAction::Ignored,
            "the hook's rewritten arguments are not valid JSON; the original arguments are kept",
        )
        .await;
        return GateDecision::run(allowed_by, tool, None);
    };
    let request = request(ctx, call.with_args(args), read_only);
    hook_event(
        ctx,
        HookPhase::PreToolUse,
        call,
        HookAction::RewriteArgs,
        "the hook rewrote the arguments",
    )
    .await;
    match ctx.policy.evaluate(&request).await {
        Decision::Allow => {
            let rewritten = ParsedCall::rewritten(request.call, value);
            GateDecision::run(DecidedBy::Policy, tool, Some(rewritten))
        }
        Decision::Ask { reason } | Decision::Deny { reason } => refuse(call, Refusal::Rewrite(reason)),
    }
}

/// Why the gate stops a call.
enum Refusal {
    /// The name is not registered (`searchable`: `ToolSearch` can find tools).
    Unknown { searchable: bool },
    /// Registered, but not available in the session's mode (`plan`: plan mode).
    NotInMode { plan: bool },
    /// The policy refused, for this reason.
    Policy(String),
    /// The policy asked (for this reason) and the run is headless.
    Headless(String),
    /// The policy did not allow the arguments a hook rewrote (its reason).
    Rewrite(String),
    /// The person denied it.
    Person,
    /// The PreToolUse hook blocked it, with this message.
    Hook(String),
    /// The PreToolUse hook failed (this message says how).
    HookFailed(String),
}

/// The one place a stopped call's decision and the error the model sees are built.
fn refuse(call: &ToolCall, refusal: Refusal) -> GateDecision {
    let name = call.name();
    let permission_denied = |reason: &str| format!("permission denied for {name}: {reason}");
    let (by, text) = match refusal {
        Refusal::Unknown { searchable } => {
            let hint = if searchable {
                " Check the name against the tool list, or call ToolSearch to find a tool."
            } else {
                " Check the name against the tool list."
            };
            (
                DecidedBy::Mode,
                format!("no such tool: {name:?} does not exist.{hint}"),
            )
        }
        Refusal::NotInMode { plan: true } => (
            DecidedBy::Mode,
            format!("tool {name} is not available in plan mode: only read-only tools run while planning"),
        ),
        Refusal::NotInMode { plan: false } => (
            DecidedBy::Mode,
            format!("tool {name} is only available in plan mode"),
        ),
        Refusal::Policy(reason) => (DecidedBy::Policy, permission_denied(&reason)),
        Refusal::Headless(reason) => (
            DecidedBy::Policy,
            permission_denied(&format!(
                "approval needs an interactive operator and this run is headless ({reason})"
            )),
        ),
        Refusal::Rewrite(reason) => (
            DecidedBy::Policy,
            permission_denied(&format!("the rewritten arguments were not approved ({reason})")),
        ),
        Refusal::Person => (
            DecidedBy::Person(Verdict::Deny),
            permission_denied("the operator denied it"),
        ),
        Refusal::Hook(message) => (
            DecidedBy::Hook,
            format!("call to {name} was blocked by a hook: {message}"),
        ),
        Refusal::HookFailed(message) => (DecidedBy::Hook, format!("call to {name} was blocked: {message}")),
    };
    GateDecision {
        by,
        outcome: Outcome::Stop(ToolResult::error(call.id().clone(), text)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use engine_ports::{Approval, PermissionMode, ToolCall, Verdict};

    use super::{DecidedBy, GateDecision, Refusal, refuse};
    use crate::catalog::Catalog;
    use crate::tool::Tool;
    use crate::tool_search::ToolSearch;

    #[test]
    fn the_record_keeps_who_decided_and_only_permission_decisions() {
        let call = ToolCall::new("c1", "Write", "{}");
        let refused = |refusal| refuse(&call, refusal).approval();
        assert_eq!(refused(Refusal::Unknown { searchable: true }), None);
        assert_eq!(refused(Refusal::NotInMode { plan: true }), None);
        assert_eq!(GateDecision::cancelled(&call).approval(), None);
        assert_eq!(refused(Refusal::Policy("no".into())), Some(Approval::POLICY_DENY));
        assert_eq!(
            refused(Refusal::Headless("ask".into())),
            Some(Approval::POLICY_DENY)
        );
        assert_eq!(
            refused(Refusal::Rewrite("ask".into())),
            Some(Approval::POLICY_DENY)
        );
        assert_eq!(refused(Refusal::Person), Some(Approval::user(Verdict::Deny)));
        assert_eq!(refused(Refusal::Hook("frozen".into())), Some(Approval::HOOK_DENY));
        assert_eq!(
            refused(Refusal::HookFailed("down".into())),
            Some(Approval::HOOK_DENY)
        );

        let tool: Arc<dyn Tool> =
            Arc::new(ToolSearch::new(Arc::new(Catalog::new()), PermissionMode::Default));
        let ran = |by| GateDecision::run(by, &tool, None).approval();
        assert_eq!(ran(DecidedBy::Policy), Some(Approval::POLICY_ALLOW));
        assert_eq!(
            ran(DecidedBy::Person(Verdict::AllowAlways)),
            Some(Approval::user(Verdict::AllowAlways))
        );
    }
}
