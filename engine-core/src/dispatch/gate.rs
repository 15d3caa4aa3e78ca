//! The gate: everything that decides whether one call runs, before it runs — its
//! resolution in the session's mode view, the operator's rules, the PreToolUse hook,
//! the approval level (the permission policy) and the person when one of them asks —
//! read top to bottom in [`decide`], which gives one [`GateDecision`]: what decided
//! (the mode, a rule, a hook, the approval level or the person), and either the call to run (the model's, or the one a hook rewrote, its
//! arguments parsed once) or the result the model sees instead. Every refusal's text
//! is built in one place, [`refuse`].

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use engine_ports::{
    Approval, ApprovalVerdict, Decider, Decision, EventKind, HookAction, HookPhase, PermissionMode,
    PermissionRequest, Pre, Provenance, RuleEffect, RuleMatch, ToolCall, ToolResult, Verdict,
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DecidedBy {
    /// The session's mode view: the name is unknown, or not available in the mode
    /// (plan mode's refusal of a mutating call included), for this reason.
    Mode(&'static str),
    /// An operator rule (`allow` or `deny`; an `ask` rule hands the call to the
    /// person).
    Rule(RuleMatch),
    /// The approval level (the permission policy: `--approve`, the mode's edits, a
    /// tool learned through `allow_always`, a headless run's refusal of an ask).
    Policy,
    /// A PreToolUse hook (its command, when it has one, and its reason): it allowed
    /// or blocked the call, or failed (which blocks it).
    Hook { hook: Option<String>, reason: String },
    /// The person who answered the ask: the answer, the rule it saved in the
    /// project's settings (if the person chose to save one) and what the person
    /// told the model with a denial.
    Person {
        verdict: Verdict,
        saved: Option<RuleMatch>,
        reason: Option<String>,
    },
    /// Nothing: the turn was cancelled before the call was decided (an open ask
    /// included). The call is not recorded.
    Cancellation,
}

/// The approval a call's record keeps and the detail of who decided.
pub(super) type Decided = (Approval, Option<Provenance>);

/// What the gate decided for one call.
pub(super) struct GateDecision {
    /// What decided.
    pub(super) by: DecidedBy,
    /// Run the call, or stop it with a result.
    pub(super) outcome: Outcome,
}

/// The gate's outcome for one call.
pub(super) enum Outcome {
    /// Run `tool`: with `rewritten` when a hook rewrote the arguments, else with the
    /// model's call.
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

    /// The approval the call's record keeps (who decided and what) with its detail
    /// (the rule and its file, the hook, the mode's reason); `None` for a
    /// cancellation.
    pub(super) fn approval(&self) -> Option<Decided> {
        let runs = matches!(self.outcome, Outcome::Run { .. });
        let verdict = if runs {
            ApprovalVerdict::Allow
        } else {
            ApprovalVerdict::Deny
        };
        let (by, provenance) = match &self.by {
            DecidedBy::Cancellation => return None,
            DecidedBy::Person {
                verdict,
                saved,
                reason,
            } => {
                let mut provenance = saved.as_ref().map(Provenance::rule);
                if let Some(reason) = reason {
                    provenance.get_or_insert_with(Provenance::default).reason = Some(reason.clone());
                }
                return Some((Approval::user(*verdict), provenance));
            }
            DecidedBy::Mode(reason) => (Decider::Mode, Some(Provenance::reason(*reason))),
            DecidedBy::Rule(matched) => (Decider::Rule, Some(Provenance::rule(matched))),
            DecidedBy::Policy => (Decider::Policy, None),
            DecidedBy::Hook { hook, reason } => (
                Decider::Hook,
                Some(Provenance {
                    hook: hook.clone(),
                    reason: Some(reason.clone()),
                    ..Provenance::default()
                }),
            ),
        };
        Some((Approval { by, verdict }, provenance))
    }
}

/// What a PreToolUse hook decided, when it decided more than "go on".
enum HookSays {
    Allow { hook: String, reason: String },
    Ask { hook: String, reason: String },
}

/// Decides whether one call runs. This is the one owner of the decision order:
/// the turn's cancellation; the **mode** (the name must resolve in the session's
/// mode view; plan mode refuses mutating calls whatever a rule says); the operator's
/// **`deny` rules** (beating every allow and every approval level); the
/// **PreToolUse hook** (block, allow, ask, or rewrite the arguments, which go through
/// the rules again); the **`ask` and `allow` rules**; the **approval level** (the
/// permission policy); and the **person** when a rule, a hook or the level asks (a
/// headless run refuses). The first that decides, decides; the decision says who.
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

    // The deny rules.
    let mut rule = ctx.rules.as_ref().and_then(|rules| rules.check(call));
    if let Some(matched) = rule.as_ref().filter(|m| m.effect == RuleEffect::Deny) {
        return refuse(call, Refusal::Rule(matched.clone()));
    }

    // The PreToolUse hook.
    let mut rewritten: Option<ParsedCall<'static>> = None;
    let mut hook_says = None;
    if let Some(hooks) = &ctx.hooks {
        match hooks.pre_tool_use(&ctx.session_id, call).await {
            Ok(Pre::Allow) => {}
            Ok(Pre::Deny { message }) => {
                hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Deny, &message).await;
                return refuse(call, Refusal::Hook { hook: None, message });
            }
            Ok(Pre::Block { hook, reason }) => {
                hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Deny, &reason).await;
                return refuse(
                    call,
                    Refusal::Hook {
                        hook: Some(hook),
                        message: reason,
                    },
                );
            }
            Ok(Pre::Approve { hook, reason }) => hook_says = Some(HookSays::Allow { hook, reason }),
            Ok(Pre::Ask { hook, reason }) => hook_says = Some(HookSays::Ask { hook, reason }),
            Ok(Pre::RewriteArgs { args }) => {
                if let Some(new) = Box::pin(rewrite(ctx, call, args)).await {
                    rule = ctx.rules.as_ref().and_then(|rules| rules.check(new.call()));
                    if let Some(matched) = rule.as_ref().filter(|m| m.effect == RuleEffect::Deny) {
                        return refuse(call, Refusal::Rule(matched.clone()));
                    }
                    rewritten = Some(new);
                }
            }
            Err(error) => {
                let message = format!("the PreToolUse hook failed: {}", error.message);
                hook_event(ctx, HookPhase::PreToolUse, call, HookAction::Error, &message).await;
                return refuse(call, Refusal::HookFailed(message));
            }
        }
    }
    let effective: &ParsedCall<'_> = rewritten.as_ref().unwrap_or(parsed);

    // The hook's own decision, then the ask and allow rules, then the approval level;
    // an ask names who asked, which a headless run's refusal is recorded as.
    let (reason, asked_by) = match (hook_says, rule) {
        (Some(HookSays::Allow { hook, reason }), _) => {
            return GateDecision::run(
                DecidedBy::Hook {
                    hook: Some(hook),
                    reason,
                },
                tool,
                rewritten,
            );
        }
        (Some(HookSays::Ask { hook, reason }), _) => (
            format!("{reason} (the PreToolUse hook {hook})"),
            DecidedBy::Hook {
                hook: Some(hook),
                reason,
            },
        ),
        (None, Some(matched)) if matched.effect == RuleEffect::Allow => {
            return GateDecision::run(DecidedBy::Rule(matched), tool, rewritten);
        }
        (None, Some(matched)) => (
            format!("the rule {} ({}) asks for approval", matched.rule, matched.source),
            DecidedBy::Rule(matched),
        ),
        (None, None) => {
            let request = request(ctx, effective.call().clone(), read_only);
            match ctx.policy.evaluate(&request).await {
                Decision::Allow => return GateDecision::run(DecidedBy::Policy, tool, rewritten),
                Decision::Deny { reason } => return refuse(call, Refusal::Policy(reason)),
                Decision::Ask { reason } => (reason, DecidedBy::Policy),
            }
        }
    };

    // The person.
    let Some(asks) = &ctx.asks else {
        let headless = Refusal::Headless {
            reason,
            asked_by,
            why: ctx.headless_reason.clone(),
        };
        return refuse(call, headless);
    };
    // Boxed: asking a person is the rare way through, and its state (an event, a
    // wait on the answer or the cancellation) would otherwise weigh on every call.
    match Box::pin(ask_person(ctx, asks, index, effective, reason)).await {
        None => GateDecision::cancelled(call),
        Some(Answered {
            verdict: Verdict::Deny,
            reason,
            ..
        }) => refuse(call, Refusal::Person(reason)),
        Some(Answered { verdict, saved, .. }) => GateDecision::run(
            DecidedBy::Person {
                verdict,
                saved,
                reason: None,
            },
            tool,
            rewritten,
        ),
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

/// What the person answered, as the gate uses it.
struct Answered {
    verdict: Verdict,
    /// The rule an "allow always" saved.
    saved: Option<RuleMatch>,
    /// What a denial tells the model.
    reason: Option<String>,
}

/// Asks the person answering the session's asks (`permission.ask`, offering the
/// rule an "allow always" could save, then `permission.verdict`); `None` when the
/// turn was cancelled first. An "allow always" is learned for the session; the rule
/// is saved only when the person chose to save it, and returned.
async fn ask_person(
    ctx: &TurnContext,
    asks: &super::AskRegistry,
    index: usize,
    parsed: &ParsedCall<'_>,
    reason: String,
) -> Option<Answered> {
    let call = parsed.call();
    let ask_id = format!("ask-{}-{}", ctx.turn, index + 1);
    let answer = asks.open(&ask_id);
    let suggested_rule = ctx.rules.as_ref().and_then(|rules| rules.suggest(call));
    ctx.events
        .emit(EventKind::PermissionAsk {
            ask_id: ask_id.clone(),
            call_id: call.id().clone(),
            name: call.name().to_owned(),
            args: parsed.value(),
            reason,
            suggested_rule,
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
    let answer = verdict?;
    let verdict = answer.verdict;
    let denial = if verdict == Verdict::Deny {
        answer.reason
    } else {
        None
    };
    let mut saved = None;
    if verdict == Verdict::AllowAlways {
        ctx.policy.learn(&ctx.session_id, call);
        if answer.save_rule {
            saved = ctx.rules.as_ref().and_then(|rules| rules.learn(call));
            if saved.is_none() {
                tracing::warn!(
                    session_id = %ctx.session_id,
                    tool = call.name(),
                    "the answer asked to save a rule, but no rule can be saved for this call"
                );
            }
        }
    }
    ctx.events
        .emit(EventKind::PermissionVerdict {
            ask_id,
            call_id: call.id().clone(),
            verdict,
            saved_rule: saved.as_ref().map(|rule| rule.rule.clone()),
            reason: denial.clone(),
        })
        .await;
    Some(Answered {
        verdict,
        saved,
        reason: denial,
    })
}

/// A hook's rewrite of the arguments: ignored (`None`: the call goes on as the
/// model made it) unless the text is valid JSON, which is parsed here once for the
/// call's record. The rewritten call then goes through the rules, the approval level
/// and the person like any call.
async fn rewrite(ctx: &TurnContext, call: &ToolCall, args: String) -> Option<ParsedCall<'static>> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&args) else {
        hook_event(
            ctx,
            HookPhase::PreToolUse,
            call,
            HookAction::Ignored,
            "the hook's rewritten arguments are not valid JSON; the original arguments are kept",
        )
        .await;
        return None;
    };
    hook_event(
        ctx,
        HookPhase::PreToolUse,
        call,
        HookAction::RewriteArgs,
        "the hook rewrote the arguments",
    )
    .await;
    Some(ParsedCall::rewritten(call.with_args(args), value))
}

/// Why the gate stops a call.
enum Refusal {
    /// The name is not registered (`searchable`: `ToolSearch` can find tools).
    Unknown { searchable: bool },
    /// Registered, but not available in the session's mode (`plan`: plan mode).
    NotInMode { plan: bool },
    /// The policy refused, for this reason.
    Policy(String),
    /// A rule, a hook or the policy (`asked_by`) asked, for this reason, and no
    /// person can answer: the run is headless, or `why` says what else.
    Headless {
        reason: String,
        asked_by: DecidedBy,
        why: Option<Arc<str>>,
    },
    /// An operator `deny` rule matched.
    Rule(RuleMatch),
    /// The person denied it, saying this to the model.
    Person(Option<String>),
    /// The PreToolUse hook (its command, when it has one) blocked it, with this
    /// message.
    Hook { hook: Option<String>, message: String },
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
                DecidedBy::Mode("unknown tool"),
                format!("no such tool: {name:?} does not exist.{hint}"),
            )
        }
        Refusal::NotInMode { plan: true } => (
            DecidedBy::Mode("plan mode runs only read-only calls"),
            format!("tool {name} is not available in plan mode: only read-only tools run while planning"),
        ),
        Refusal::NotInMode { plan: false } => (
            DecidedBy::Mode("only available in plan mode"),
            format!("tool {name} is only available in plan mode"),
        ),
        Refusal::Policy(reason) => (DecidedBy::Policy, permission_denied(&reason)),
        Refusal::Headless {
            reason,
            asked_by,
            why: None,
        } => (
            asked_by,
            permission_denied(&format!(
                "approval needs an interactive operator and this run is headless ({reason})"
            )),
        ),
        Refusal::Headless {
            reason,
            asked_by,
            why: Some(why),
        } => (
            asked_by,
            permission_denied(&format!("approval needs a person, and {why} ({reason})")),
        ),
        Refusal::Rule(matched) => {
            let text = permission_denied(&format!(
                "denied by the rule {} in {}",
                matched.rule, matched.source
            ));
            (DecidedBy::Rule(matched), text)
        }
        Refusal::Person(reason) => {
            let text = match &reason {
                Some(said) => permission_denied(&format!("the operator denied it, saying: {said}")),
                None => permission_denied("the operator denied it"),
            };
            let by = DecidedBy::Person {
                verdict: Verdict::Deny,
                saved: None,
                reason,
            };
            (by, text)
        }
        Refusal::Hook { hook, message } => {
            let text = format!("call to {name} was blocked by a hook: {message}");
            (
                DecidedBy::Hook {
                    hook,
                    reason: message,
                },
                text,
            )
        }
        Refusal::HookFailed(message) => {
            let text = format!("call to {name} was blocked: {message}");
            (
                DecidedBy::Hook {
                    hook: None,
                    reason: message,
                },
                text,
            )
        }
    };
    GateDecision {
        by,
        outcome: Outcome::Stop(ToolResult::error(call.id().clone(), text)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use engine_ports::{Approval, PermissionMode, Provenance, RuleEffect, RuleMatch, ToolCall, Verdict};

    use super::{DecidedBy, GateDecision, Refusal, refuse};
    use crate::catalog::Catalog;
    use crate::tool::Tool;
    use crate::tool_search::ToolSearch;

    #[test]
    fn the_record_keeps_who_decided_with_the_rule_hook_or_mode_that_did() {
        let call = ToolCall::new("c1", "Write", "{}");
        let refused = |refusal| refuse(&call, refusal).approval();
        let by = |refusal| refused(refusal).map(|(approval, _)| approval);
        assert_eq!(
            refused(Refusal::Unknown { searchable: true }),
            Some((Approval::MODE_DENY, Some(Provenance::reason("unknown tool"))))
        );
        assert_eq!(by(Refusal::NotInMode { plan: true }), Some(Approval::MODE_DENY));
        assert_eq!(GateDecision::cancelled(&call).approval(), None);
        assert_eq!(by(Refusal::Policy("no".into())), Some(Approval::POLICY_DENY));
        assert_eq!(
            by(Refusal::Headless {
                reason: "ask".into(),
                asked_by: DecidedBy::Policy,
                why: None,
            }),
            Some(Approval::POLICY_DENY)
        );
        let rule = RuleMatch {
            effect: RuleEffect::Deny,
            rule: "Write(secrets/**)".into(),
            source: "/etc/mecatl/managed-settings.json".into(),
        };
        assert_eq!(
            refused(Refusal::Rule(rule.clone())),
            Some((Approval::RULE_DENY, Some(Provenance::rule(&rule))))
        );
        assert_eq!(by(Refusal::Person(None)), Some(Approval::user(Verdict::Deny)));
        assert_eq!(
            refused(Refusal::Person(Some("use the other file".into()))),
            Some((
                Approval::user(Verdict::Deny),
                Some(Provenance::reason("use the other file"))
            ))
        );
        let hooked = refused(Refusal::Hook {
            hook: Some("./lockfiles.sh".into()),
            message: "frozen".into(),
        });
        assert_eq!(
            hooked
                .as_ref()
                .map(|(a, p)| (*a, p.as_ref().and_then(|p| p.hook.clone()))),
            Some((Approval::HOOK_DENY, Some("./lockfiles.sh".to_owned())))
        );
        assert_eq!(by(Refusal::HookFailed("down".into())), Some(Approval::HOOK_DENY));

        let tool: Arc<dyn Tool> =
            Arc::new(ToolSearch::new(Arc::new(Catalog::new()), PermissionMode::Default));
        let ran = |by| GateDecision::run(by, &tool, None).approval().map(|(a, _)| a);
        assert_eq!(ran(DecidedBy::Policy), Some(Approval::POLICY_ALLOW));
        assert_eq!(ran(DecidedBy::Rule(rule)), Some(Approval::RULE_ALLOW));
        assert_eq!(
            ran(DecidedBy::Person {
                verdict: Verdict::AllowAlways,
                saved: None,
                reason: None
            }),
            Some(Approval::user(Verdict::AllowAlways))
        );
    }
}
