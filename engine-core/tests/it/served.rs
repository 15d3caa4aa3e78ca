//! Calls a client makes directly (`Engine::call_tool`, `Engine::offered_tools`):
//! the gate, the audit with the caller, asks answered on the handle or refused
//! with the host's words, plan mode, disclosure and hidden tools.

use std::collections::BTreeSet;
use std::sync::Arc;

use engine_core::{
    Approve, Disclosure, Engine, EngineConfig, OfferedTool, ServedCall, ServedOutcome, ServedRun, ToolError,
};
use engine_ports::{
    Approval, Caller, EventKind, PermissionMode, PermissionRules, RuleEffect, RuleMatch, SessionId, ToolCall,
    Verdict,
};
use futures::StreamExt as _;

use crate::support::{FakeTool, Probe, catalog_of, config, harness_with};

fn caller() -> Caller {
    Caller {
        surface: "mcp-stdio".to_owned(),
        client: Some("inspector/1.2".to_owned()),
        subject: None,
    }
}

fn served(name: &str, mode: PermissionMode, no_person: Option<&str>) -> ServedCall {
    ServedCall {
        session: SessionId::from("mcp-1"),
        mode,
        call: ToolCall::new("mcp-c1", name, "{}"),
        caller: Some(caller()),
        no_person: no_person.map(str::to_owned),
    }
}

/// Reads the events to the end (answering asks with `answer`), then the outcome.
async fn finish(mut run: ServedRun, answer: Option<Verdict>) -> (Vec<&'static str>, ServedOutcome) {
    let answers = run.answers();
    let mut kinds = Vec::new();
    while let Some(event) = run.next().await {
        kinds.push(event.kind.type_name());
        if let EventKind::PermissionAsk { ask_id, .. } = &event.kind {
            let verdict = answer.expect("no ask was expected");
            assert!(answers.approve(ask_id, verdict));
        }
    }
    (kinds, run.outcome().await)
}

struct Engines {
    engine: Arc<Engine>,
    probe: Arc<Probe>,
    recorder: Arc<engine_ports::testkit::MemoryRecorder>,
}

fn engine(config: EngineConfig) -> Engines {
    engine_with_rules(config, None)
}

fn engine_with_rules(config: EngineConfig, rules: Option<Arc<dyn PermissionRules>>) -> Engines {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
        FakeTool::new("mcp__far__lookup", true, &probe)
            .disclosable("light")
            .arc(),
    ]);
    let h = harness_with(catalog, Vec::new(), config, |mut deps| {
        deps.rules = rules;
        deps
    });
    Engines {
        engine: h.engine,
        probe,
        recorder: h.recorder,
    }
}

fn interactive(approve: Approve) -> EngineConfig {
    EngineConfig {
        interactive: true,
        approve,
        ..config()
    }
}

#[tokio::test]
async fn a_read_only_call_runs_through_the_gate_and_its_record_names_the_client() {
    let e = engine(interactive(Approve::ReadOnly));
    let run = e
        .engine
        .call_tool(served("Read", PermissionMode::Default, None))
        .unwrap();
    let (kinds, outcome) = finish(run, None).await;
    assert_eq!(kinds, ["tool.call", "tool.result"]);
    assert!(!outcome.result.is_error(), "{:?}", outcome.result);
    assert_eq!(e.probe.executions("Read"), 1);
    let records = e.recorder.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].session_id, SessionId::from("mcp-1"));
    assert_eq!(records[0].approval, Some(Approval::POLICY_ALLOW));
    assert_eq!(records[0].caller, Some(caller()));
}

#[tokio::test]
async fn an_ask_waits_for_the_answer_given_on_the_handle() {
    let e = engine(interactive(Approve::ReadOnly));
    let run = e
        .engine
        .call_tool(served("Write", PermissionMode::Default, None))
        .unwrap();
    let (kinds, outcome) = finish(run, Some(Verdict::AllowOnce)).await;
    assert_eq!(
        kinds,
        ["tool.call", "permission.ask", "permission.verdict", "tool.result"]
    );
    assert!(!outcome.result.is_error(), "{:?}", outcome.result);
    assert_eq!(e.probe.executions("Write"), 1);
    assert_eq!(
        e.recorder.records()[0].approval,
        Some(Approval::user(Verdict::AllowOnce))
    );
}

#[tokio::test]
async fn a_denied_ask_never_runs_the_tool() {
    let e = engine(interactive(Approve::ReadOnly));
    let run = e
        .engine
        .call_tool(served("Write", PermissionMode::Default, None))
        .unwrap();
    let (_, outcome) = finish(run, Some(Verdict::Deny)).await;
    assert!(outcome.result.is_error());
    assert_eq!(
        outcome.result.content(),
        "permission denied for Write: the operator denied it"
    );
    assert_eq!(e.probe.executions("Write"), 0);
}

#[tokio::test]
async fn without_a_person_an_ask_is_refused_in_the_hosts_words() {
    let e = engine(interactive(Approve::ReadOnly));
    let why = "the MCP client cannot be asked (it did not declare the elicitation capability)";
    let run = e
        .engine
        .call_tool(served("Write", PermissionMode::Default, Some(why)))
        .unwrap();
    let (kinds, outcome) = finish(run, None).await;
    assert_eq!(kinds, ["tool.call", "tool.result"]);
    assert_eq!(
        outcome.result.content(),
        format!(
            "permission denied for Write: approval needs a person, and {why} (Write can change the workspace)"
        )
    );
    assert_eq!(e.probe.executions("Write"), 0);
    let record = &e.recorder.records()[0];
    assert_eq!(record.approval, Some(Approval::POLICY_DENY));
    assert_eq!(record.caller, Some(caller()));
}

#[tokio::test]
async fn plan_mode_refuses_a_mutating_call_even_when_everything_is_approved() {
    let e = engine(interactive(Approve::All));
    let run = e
        .engine
        .call_tool(served("Write", PermissionMode::Plan, None))
        .unwrap();
    let (_, outcome) = finish(run, None).await;
    assert_eq!(
        outcome.result.content(),
        "tool Write is not available in plan mode: only read-only tools run while planning"
    );
    assert_eq!(e.probe.executions("Write"), 0);
    assert_eq!(e.recorder.records()[0].approval, Some(Approval::MODE_DENY));
}

#[tokio::test]
async fn a_deny_rule_holds_for_served_calls_and_hides_the_tool() {
    let rules: Arc<dyn PermissionRules> = Arc::new(DenyWrite);
    let e = engine_with_rules(interactive(Approve::All), Some(rules));
    let (_, offered) = e
        .engine
        .offered_tools(PermissionMode::Default, &BTreeSet::new())
        .await;
    assert_eq!(names(&offered), ["Read", "mcp__far__lookup"]);
    let run = e
        .engine
        .call_tool(served("Write", PermissionMode::Default, None))
        .unwrap();
    let (_, outcome) = finish(run, None).await;
    assert!(outcome.result.content().contains("denied by the rule Write"));
    assert_eq!(e.probe.executions("Write"), 0);
}

#[tokio::test]
async fn cancelling_a_waiting_ask_ends_the_call_unrun() {
    let e = engine(interactive(Approve::ReadOnly));
    let mut run = e
        .engine
        .call_tool(served("Write", PermissionMode::Default, None))
        .unwrap();
    while let Some(event) = run.next().await {
        if matches!(event.kind, EventKind::PermissionAsk { .. }) {
            run.cancel();
        }
    }
    let outcome = run.outcome().await;
    assert_eq!(
        outcome.result.content(),
        "call to Write was cancelled before it finished"
    );
    assert_eq!(e.probe.executions("Write"), 0);
}

#[tokio::test]
async fn a_call_dropped_while_its_tool_runs_is_cancelled_and_still_recorded() {
    let probe = Probe::new();
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let waits = FakeTool::new("Wait", true, &probe).behaving(move |_call, cancel| {
        let started = started_tx.lock().unwrap().take();
        async move {
            if let Some(started) = started {
                let _ = started.send(());
            }
            cancel.cancelled().await;
            Err(ToolError::Cancelled)
        }
    });
    let h = harness_with(
        catalog_of(vec![waits.arc()]),
        Vec::new(),
        interactive(Approve::ReadOnly),
        |deps| deps,
    );
    let mut run = h
        .engine
        .call_tool(served("Wait", PermissionMode::Default, None))
        .unwrap();
    // The call runs as its handle is polled: drive it until the tool has started.
    tokio::select! {
        () = async { while run.next().await.is_some() {} } => panic!("the call ended before it was dropped"),
        _ = started => {}
    }
    drop(run);
    // It is finished on a task of its own: wait (bounded) for its record.
    let records = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let records = h.recorder.records();
            if !records.is_empty() {
                return records;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the dropped call's record was never written");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].call_id.as_str(), "mcp-c1");
    assert!(records[0].is_error);
    assert!(records[0].result.contains("cancelled"), "{}", records[0].result);
}

#[tokio::test]
async fn offered_tools_carry_annotations_and_plan_mode_offers_only_reads() {
    let e = engine(interactive(Approve::ReadOnly));
    let (generation, offered) = e
        .engine
        .offered_tools(PermissionMode::Default, &BTreeSet::new())
        .await;
    assert_eq!(generation, 0);
    assert_eq!(names(&offered), ["Read", "Write", "mcp__far__lookup"]);
    let write = &offered[1];
    assert!(!write.read_only && write.destructive);
    let lookup = &offered[2];
    assert!(lookup.read_only && !lookup.destructive);
    assert_eq!(
        lookup.spec.description(),
        "the mcp__far__lookup tool",
        "a client gets the full spec, never the light one"
    );
    let (_, planning) = e
        .engine
        .offered_tools(PermissionMode::Plan, &BTreeSet::new())
        .await;
    assert_eq!(names(&planning), ["Read", "mcp__far__lookup"]);
}

#[tokio::test]
async fn deferred_tools_are_offered_through_tool_search_until_hydrated() {
    let e = engine(EngineConfig {
        disclosure: Disclosure::Deferred,
        ..interactive(Approve::ReadOnly)
    });
    let (_, offered) = e
        .engine
        .offered_tools(PermissionMode::Default, &BTreeSet::new())
        .await;
    assert_eq!(names(&offered), ["Read", "ToolSearch", "Write"]);
    let run = e
        .engine
        .call_tool(ServedCall {
            call: ToolCall::new("s1", "ToolSearch", r#"{"query":"select:mcp__far__lookup"}"#),
            ..served("ToolSearch", PermissionMode::Default, None)
        })
        .unwrap();
    let (_, outcome) = finish(run, None).await;
    assert_eq!(outcome.hydrated, ["mcp__far__lookup"]);
    let hydrated: BTreeSet<String> = outcome.hydrated.into_iter().collect();
    let (_, offered) = e.engine.offered_tools(PermissionMode::Default, &hydrated).await;
    assert_eq!(
        names(&offered),
        ["Read", "ToolSearch", "Write", "mcp__far__lookup"]
    );
}

fn names(offered: &[OfferedTool]) -> Vec<&str> {
    offered.iter().map(|tool| tool.spec.name()).collect()
}

struct DenyWrite;

impl PermissionRules for DenyWrite {
    fn check(&self, call: &ToolCall) -> Option<RuleMatch> {
        (call.name() == "Write").then(rule)
    }

    fn hides(&self, name: &str) -> Option<RuleMatch> {
        (name == "Write").then(rule)
    }
}

fn rule() -> RuleMatch {
    RuleMatch {
        effect: RuleEffect::Deny,
        rule: "Write".to_owned(),
        source: "managed-settings.json".to_owned(),
    }
}
