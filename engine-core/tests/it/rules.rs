//! The gate's decision order with operator rules and hooks: mode, deny rules, the
//! PreToolUse hook, ask/allow rules, the approval level, the person — and what each
//! call's record says decided it.

use std::sync::Arc;

use engine_core::{Approve, AskAnswer, DefaultPolicy, Dispatcher};
use engine_ports::testkit::MemoryRecorder;
use engine_ports::{
    Approval, EventKind, HookError, PermissionMode, PermissionRules, Post, Pre, Provenance, RuleEffect,
    RuleMatch, SessionId, ToolCall, ToolCallRecord, ToolHooks, ToolResult,
};

use crate::support::{FakeTool, Probe, catalog_of, config, context, harness_with, run_to_end};

/// Rules by tool name, with the effect each gives; a bare `deny` of a tool hides it.
struct Rules(Vec<(&'static str, RuleEffect)>);

impl PermissionRules for Rules {
    fn check(&self, call: &ToolCall) -> Option<RuleMatch> {
        self.0
            .iter()
            .filter(|(name, _)| *name == call.name() || call.args().contains(name))
            .map(|(name, effect)| RuleMatch {
                effect: *effect,
                rule: format!("{}({name})", call.name()),
                source: "/etc/mecatl/managed-settings.json".to_owned(),
            })
            .max_by_key(|m| match m.effect {
                RuleEffect::Allow => 0,
                RuleEffect::Ask => 1,
                RuleEffect::Deny => 2,
            })
    }

    fn hides(&self, name: &str) -> Option<RuleMatch> {
        self.0
            .iter()
            .find(|(tool, effect)| *tool == name && *effect == RuleEffect::Deny)
            .map(|(tool, effect)| RuleMatch {
                effect: *effect,
                rule: (*tool).to_owned(),
                source: "settings.json".to_owned(),
            })
    }
}

/// A PreToolUse hook answering the same for every call.
struct Hook(Pre);

#[async_trait::async_trait]
impl ToolHooks for Hook {
    async fn pre_tool_use(&self, _: &SessionId, _: &ToolCall) -> Result<Pre, HookError> {
        Ok(self.0.clone())
    }
    async fn post_tool_use(&self, _: &SessionId, _: &ToolCall, _: &ToolResult) -> Result<Post, HookError> {
        Ok(Post::Keep)
    }
}

/// Dispatches one `Write` call (args `args`) under `approve`, the rules and the
/// hook; gives its result, its record and how often Write ran.
async fn one_write(
    mode: PermissionMode,
    approve: Approve,
    rules: Vec<(&'static str, RuleEffect)>,
    hook: Option<Pre>,
    args: &str,
) -> (ToolResult, ToolCallRecord, usize) {
    let probe = Probe::new();
    let catalog = catalog_of(vec![FakeTool::new("Write", false, &probe).arc()]);
    let (mut ctx, _) = context(catalog, mode);
    ctx.policy = Arc::new(DefaultPolicy::new(false, approve));
    ctx.rules = Some(Arc::new(Rules(rules)));
    ctx.hooks = hook.map(|pre| Arc::new(Hook(pre)) as Arc<dyn ToolHooks>);
    let recorder = Arc::new(MemoryRecorder::new());
    ctx.recorder = Some(recorder.clone());
    let outcome = Dispatcher::default()
        .dispatch(&ctx, &[ToolCall::new("w", "Write", args)])
        .await;
    let records = recorder.records();
    assert_eq!(records.len(), 1, "exactly one record");
    (
        outcome.results[0].clone(),
        records[0].clone(),
        probe.executions("Write"),
    )
}

#[tokio::test]
async fn a_deny_rule_beats_approve_all_and_its_record_names_the_rule_and_file() {
    let (result, record, ran) = one_write(
        PermissionMode::Default,
        Approve::All,
        vec![("Write", RuleEffect::Deny)],
        None,
        "{}",
    )
    .await;
    assert_eq!(ran, 0);
    assert_eq!(
        result.content(),
        "permission denied for Write: denied by the rule Write(Write) in /etc/mecatl/managed-settings.json"
    );
    assert_eq!(record.approval, Some(Approval::RULE_DENY));
    let provenance = record.provenance.unwrap();
    assert_eq!(provenance.rule.as_deref(), Some("Write(Write)"));
    assert_eq!(
        provenance.source.as_deref(),
        Some("/etc/mecatl/managed-settings.json")
    );
}

#[tokio::test]
async fn an_allow_rule_beats_the_read_only_level() {
    let (result, record, ran) = one_write(
        PermissionMode::Default,
        Approve::ReadOnly,
        vec![("Write", RuleEffect::Allow)],
        None,
        "{}",
    )
    .await;
    assert!(!result.is_error(), "{}", result.content());
    assert_eq!(ran, 1);
    assert_eq!(record.approval, Some(Approval::RULE_ALLOW));
    // Without the rule, the level refuses.
    let (_, record, ran) = one_write(PermissionMode::Default, Approve::ReadOnly, vec![], None, "{}").await;
    assert_eq!((ran, record.approval), (0, Some(Approval::POLICY_DENY)));
}

#[tokio::test]
async fn an_ask_rule_beats_approve_all_and_a_headless_run_refuses_in_its_name() {
    let (result, record, ran) = one_write(
        PermissionMode::Default,
        Approve::All,
        vec![("Write", RuleEffect::Ask)],
        None,
        "{}",
    )
    .await;
    assert_eq!(ran, 0);
    assert!(result.content().contains("headless"), "{}", result.content());
    assert_eq!(record.approval, Some(Approval::RULE_DENY));
    assert_eq!(
        record.provenance.and_then(|p| p.rule).as_deref(),
        Some("Write(Write)")
    );
}

#[tokio::test]
async fn plan_mode_refuses_a_mutating_call_whatever_a_rule_says() {
    let (result, record, ran) = one_write(
        PermissionMode::Plan,
        Approve::All,
        vec![("Write", RuleEffect::Allow)],
        None,
        "{}",
    )
    .await;
    assert_eq!(ran, 0);
    assert!(result.content().contains("not available in plan mode"));
    assert_eq!(record.approval, Some(Approval::MODE_DENY));
}

#[tokio::test]
async fn a_hook_block_is_shown_to_the_model_and_recorded_with_its_command() {
    let hook = Pre::Block {
        hook: "./no-lockfiles.sh".to_owned(),
        reason: "Cargo.lock is generated".to_owned(),
    };
    let (result, record, ran) = one_write(
        PermissionMode::Default,
        Approve::All,
        vec![("Write", RuleEffect::Allow)],
        Some(hook),
        "{}",
    )
    .await;
    assert_eq!(ran, 0);
    assert_eq!(
        result.content(),
        "call to Write was blocked by a hook: Cargo.lock is generated"
    );
    assert_eq!(record.approval, Some(Approval::HOOK_DENY));
    assert_eq!(
        record.provenance,
        Some(Provenance {
            hook: Some("./no-lockfiles.sh".to_owned()),
            reason: Some("Cargo.lock is generated".to_owned()),
            ..Provenance::default()
        })
    );
}

#[tokio::test]
async fn a_hook_allow_beats_the_level_but_never_a_deny_rule() {
    let allow = Pre::Approve {
        hook: "./ok.sh".to_owned(),
        reason: "reviewed".to_owned(),
    };
    let (_, record, ran) = one_write(
        PermissionMode::Default,
        Approve::None,
        vec![],
        Some(allow.clone()),
        "{}",
    )
    .await;
    assert_eq!((ran, record.approval), (1, Some(Approval::HOOK_ALLOW)));
    let (_, record, ran) = one_write(
        PermissionMode::Default,
        Approve::All,
        vec![("Write", RuleEffect::Deny)],
        Some(allow),
        "{}",
    )
    .await;
    assert_eq!((ran, record.approval), (0, Some(Approval::RULE_DENY)));
}

#[tokio::test]
async fn a_hooks_rewrite_goes_through_the_deny_rules_again() {
    let rewrite = Pre::RewriteArgs {
        args: r#"{"path":"secrets"}"#.to_owned(),
    };
    let (_, record, ran) = one_write(
        PermissionMode::Default,
        Approve::All,
        vec![("secrets", RuleEffect::Deny)],
        Some(rewrite),
        r#"{"path":"a"}"#,
    )
    .await;
    assert_eq!((ran, record.approval), (0, Some(Approval::RULE_DENY)));
}

#[tokio::test]
async fn a_tool_a_bare_deny_hides_is_never_offered_to_the_model() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    let turns = vec![engine_ports::testkit::ScriptedTurn::text("nothing to do")];
    let h = harness_with(catalog, turns, config(), |mut deps| {
        deps.rules = Some(Arc::new(Rules(vec![("Write", RuleEffect::Deny)])));
        deps
    });
    let events = run_to_end(&h.engine, "s", "go").await;
    let init: Vec<String> = events
        .iter()
        .find_map(|e| match &e.kind {
            engine_ports::EventKind::SessionInit { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(init, ["Read"]);
    let offered: Vec<String> = h.llm.requests()[0]
        .tools
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(offered, ["Read"]);
}

/// An `ask` rule for every `Write` that keeps what "allow always" teaches it.
#[derive(Default)]
struct LearningRules {
    learned: std::sync::Mutex<Vec<String>>,
}

impl PermissionRules for LearningRules {
    fn check(&self, call: &ToolCall) -> Option<RuleMatch> {
        let learned = self.learned.lock().unwrap().contains(&call.name().to_owned());
        (call.name() == "Write").then(|| RuleMatch {
            effect: if learned {
                RuleEffect::Allow
            } else {
                RuleEffect::Ask
            },
            rule: "Write".to_owned(),
            source: "settings.json".to_owned(),
        })
    }

    fn hides(&self, _: &str) -> Option<RuleMatch> {
        None
    }

    fn suggest(&self, call: &ToolCall) -> Option<String> {
        Some(call.name().to_owned())
    }

    fn learn(&self, call: &ToolCall) -> Option<RuleMatch> {
        self.learned.lock().unwrap().push(call.name().to_owned());
        Some(RuleMatch {
            effect: RuleEffect::Allow,
            rule: call.name().to_owned(),
            source: ".mecatl/settings.local.json".to_owned(),
        })
    }
}

#[tokio::test]
async fn an_ask_rule_asks_the_person_and_allow_always_saved_is_kept_by_the_rules() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![FakeTool::new("Write", false, &probe).arc()]);
    let turns = vec![
        engine_ports::testkit::ScriptedTurn::call("w1", "Write", "{}"),
        engine_ports::testkit::ScriptedTurn::call("w2", "Write", "{}"),
        engine_ports::testkit::ScriptedTurn::text("done"),
    ];
    let rules = Arc::new(LearningRules::default());
    let kept = Arc::clone(&rules);
    let h = harness_with(
        catalog,
        turns,
        crate::engine_loop::interactive(),
        move |mut deps| {
            deps.rules = Some(kept);
            deps
        },
    );
    let events = crate::engine_loop::run_answering(&h, "s", AskAnswer::ALLOW_ALWAYS_AND_SAVE).await;
    let asks: Vec<&EventKind> = events
        .iter()
        .map(|e| &e.kind)
        .filter(|kind| matches!(kind, EventKind::PermissionAsk { .. }))
        .collect();
    assert_eq!(asks.len(), 1, "the second Write is allowed by the kept rule");
    let EventKind::PermissionAsk { suggested_rule, .. } = asks[0] else {
        unreachable!()
    };
    assert_eq!(
        suggested_rule.as_deref(),
        Some("Write"),
        "the ask offers the rule"
    );
    let saved: Vec<Option<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PermissionVerdict { saved_rule, .. } => Some(saved_rule.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(saved, [Some("Write".to_owned())]);
    assert_eq!(probe.executions("Write"), 2);
    assert_eq!(*rules.learned.lock().unwrap(), ["Write"]);
    let records = h.recorder.records();
    let approvals: Vec<Option<Approval>> = records.iter().map(|r| r.approval).collect();
    assert_eq!(
        approvals,
        [
            Some(Approval::user(engine_ports::Verdict::AllowAlways)),
            Some(Approval::RULE_ALLOW)
        ]
    );
    // The audit names the rule the answer saved, and its file.
    let provenance = records[0].provenance.clone().unwrap();
    assert_eq!(provenance.rule.as_deref(), Some("Write"));
    assert_eq!(provenance.source.as_deref(), Some(".mecatl/settings.local.json"));
}

#[tokio::test]
async fn allow_always_without_the_choice_to_save_keeps_no_rule() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![FakeTool::new("Write", false, &probe).arc()]);
    let turns = vec![
        engine_ports::testkit::ScriptedTurn::call("w1", "Write", "{}"),
        engine_ports::testkit::ScriptedTurn::call("w2", "Write", "{}"),
        engine_ports::testkit::ScriptedTurn::text("done"),
    ];
    let rules = Arc::new(LearningRules::default());
    let kept = Arc::clone(&rules);
    let h = harness_with(
        catalog,
        turns,
        crate::engine_loop::interactive(),
        move |mut deps| {
            deps.rules = Some(kept);
            deps
        },
    );
    let events = crate::engine_loop::run_answering(&h, "s", engine_ports::Verdict::AllowAlways).await;
    assert!(rules.learned.lock().unwrap().is_empty(), "nothing was saved");
    let saved: Vec<Option<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PermissionVerdict { saved_rule, .. } => Some(saved_rule.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        saved,
        [None, None],
        "the ask rule asked again, and nothing was saved"
    );
    assert_eq!(probe.executions("Write"), 2);
    assert!(h.recorder.records().iter().all(|r| r.provenance.is_none()));
}
