//! Agent-loop scenarios: event order, limits, permissions, hooks, provider errors,
//! cancellation by dropping the run, resume, command expansion, store failures.

use std::sync::Arc;

use async_trait::async_trait;
use engine_core::{Approve, AskAnswer, Deps, Engine, EngineConfig, Limits};
use engine_ports::testkit::ScriptedTurn;
use engine_ports::{
    Approval, CommandError, CommandExpander, CommandInfo, Event, EventKind, EventLog, EventSink, Expansion,
    HookAction, HookError, LlmError, Message, PermissionMode, Post, Pre, RunLease, SessionId, SessionListing,
    SessionSnapshot, SessionStore, StopReason, StoreError, ToolCall, ToolHooks, ToolResult, Verdict,
};
use futures::StreamExt as _;
use tokio::sync::mpsc;

use crate::support::{
    FakeTool, Harness, Probe, catalog_of, config, harness, harness_with, kinds, results_of, run_to_end,
    stop_of,
};

/// PostToolUse rewrites every result to `[redacted]` as an error.
pub(crate) struct RedactingHooks;

#[async_trait]
impl ToolHooks for RedactingHooks {
    async fn pre_tool_use(&self, _: &SessionId, _: &ToolCall) -> Result<Pre, HookError> {
        Ok(Pre::Allow)
    }

    async fn post_tool_use(&self, _: &SessionId, _: &ToolCall, _: &ToolResult) -> Result<Post, HookError> {
        Ok(Post::Rewrite {
            content: "[redacted]".to_owned(),
            is_error: true,
        })
    }
}

/// PreToolUse answers with a fixed decision.
struct PreHook(Result<Pre, HookError>);

#[async_trait]
impl ToolHooks for PreHook {
    async fn pre_tool_use(&self, _: &SessionId, _: &ToolCall) -> Result<Pre, HookError> {
        self.0.clone()
    }

    async fn post_tool_use(&self, _: &SessionId, _: &ToolCall, _: &ToolResult) -> Result<Post, HookError> {
        Ok(Post::Keep)
    }
}

/// Forwards every event to a channel (to wait for a run nobody consumes).
struct ChannelSink(mpsc::UnboundedSender<Event>);

impl EventSink for ChannelSink {
    fn emit(&self, _: &SessionId, event: &Event) {
        let _ = self.0.send(event.clone());
    }
}

fn read_and_write(probe: &Arc<Probe>) -> Arc<engine_core::Catalog> {
    catalog_of(vec![
        FakeTool::new("Read", true, probe).arc(),
        FakeTool::new("Write", false, probe).arc(),
    ])
}

#[tokio::test]
async fn events_come_in_order_with_strictly_increasing_seq() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::text("let me look")
            .with_call("c1", "Read", r#"{"path":"README.md"}"#)
            .with_usage(10, 2),
        ScriptedTurn::text("all done").with_usage(5, 3),
    ];
    let h = harness(read_and_write(&probe), turns, config());
    let events = run_to_end(&h.engine, "s", "look").await;
    assert_eq!(
        kinds(&events),
        [
            "session.init",
            "turn.start",
            "message.delta",
            "turn.end",
            "tool.call",
            "tool.result",
            "turn.start",
            "message.delta",
            "turn.end",
            "result"
        ]
    );
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(events[0].seq, 1);
    match &events.last().unwrap().kind {
        EventKind::Result {
            stop,
            text,
            usage,
            turns,
            tool_calls,
            error,
        } => {
            assert_eq!(*stop, StopReason::EndTurn);
            assert_eq!(text, "all done");
            assert_eq!((usage.input_tokens, usage.output_tokens), (15, 5));
            assert_eq!((*turns, *tool_calls), (2, 1));
            assert!(error.is_none());
        }
        other => panic!("{other:?}"),
    }
    match &events[0].kind {
        EventKind::SessionInit {
            session_id,
            mode,
            model,
            tools,
            mcp_servers,
            sandbox,
        } => {
            assert!(mcp_servers.is_empty());
            assert!(sandbox.is_none());
            assert_eq!(session_id, "s");
            assert_eq!(*mode, PermissionMode::Default);
            assert_eq!(model, "scripted");
            assert_eq!(tools, &["Read", "Write"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.recorder.records().len(), 1);
    assert!(events.iter().all(|e| e.time.is_none()), "no clock, no time");
}

fn always_read(turns: usize) -> Vec<ScriptedTurn> {
    (0..turns)
        .map(|i| ScriptedTurn::call(&format!("c{i}"), "Read", "{}"))
        .collect()
}

async fn stop_with(
    limits: Limits,
    turns: Vec<ScriptedTurn>,
    catalog: Arc<engine_core::Catalog>,
) -> Vec<Event> {
    let cfg = EngineConfig { limits, ..config() };
    let h = harness(catalog, turns, cfg);
    run_to_end(&h.engine, "s", "go").await
}

fn result_counts(events: &[Event]) -> (StopReason, u64, u64) {
    match &events.last().unwrap().kind {
        EventKind::Result {
            stop,
            turns,
            tool_calls,
            ..
        } => (*stop, *turns, *tool_calls),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn limits_stop_the_run_at_turn_boundaries() {
    let probe = Probe::new();
    let catalog = read_and_write(&probe);
    let max_turns = Limits {
        max_turns: 3,
        ..Limits::default()
    };
    let events = stop_with(max_turns, always_read(10), Arc::clone(&catalog)).await;
    assert_eq!(result_counts(&events), (StopReason::MaxTurns, 3, 3));

    let max_calls = Limits {
        max_tool_calls: 2,
        ..Limits::default()
    };
    let events = stop_with(max_calls, always_read(10), Arc::clone(&catalog)).await;
    assert_eq!(result_counts(&events), (StopReason::MaxToolCalls, 2, 2));

    let three_in_one = vec![
        ScriptedTurn::new()
            .with_call("a", "Read", "{}")
            .with_call("b", "Read", "{}")
            .with_call("c", "Read", "{}"),
        ScriptedTurn::text("unreached"),
    ];
    let events = stop_with(max_calls, three_in_one, Arc::clone(&catalog)).await;
    assert_eq!(result_counts(&events), (StopReason::MaxToolCalls, 1, 3));
    assert_eq!(results_of(&events).len(), 3, "all calls of the turn ran");

    let failing = catalog_of(vec![
        FakeTool::new("Read", true, &probe)
            .behaving(|call, _| async move { Ok(ToolResult::error(call.id().clone(), "nope")) })
            .arc(),
    ]);
    let failures = Limits {
        max_consecutive_failures: 2,
        ..Limits::default()
    };
    let events = stop_with(failures, always_read(10), failing).await;
    assert_eq!(result_counts(&events), (StopReason::MaxConsecutiveFailures, 2, 2));
}

/// Runs `session` answering every ask with `verdict`; returns the events.
pub(crate) async fn run_answering(h: &Harness, session: &str, answer: impl Into<AskAnswer>) -> Vec<Event> {
    let answer = answer.into();
    let id = SessionId::from(session);
    let mut run = h.engine.run(&id, "go").unwrap();
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        if let EventKind::PermissionAsk { ask_id, .. } = &event.kind {
            assert!(h.engine.approve(&id, ask_id, answer.clone()));
            assert!(
                !h.engine.approve(&id, ask_id, answer.clone()),
                "an answered ask is gone"
            );
        }
        events.push(event);
    }
    events
}

pub(crate) fn interactive() -> EngineConfig {
    // Read-only level: the person answers for the mutating calls (`all` would run
    // them without asking).
    EngineConfig {
        interactive: true,
        approve: Approve::ReadOnly,
        ..config()
    }
}

#[tokio::test]
async fn interactive_asks_follow_the_operator() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call("w1", "Write", "{}"),
        ScriptedTurn::text("written"),
    ];
    let h = harness(read_and_write(&probe), turns, interactive());
    let events = run_answering(&h, "once", Verdict::AllowOnce).await;
    let order = kinds(&events);
    let ask = order.iter().position(|k| *k == "permission.ask").unwrap();
    assert_eq!(order[ask - 1], "tool.call");
    assert_eq!(order[ask + 1], "permission.verdict");
    assert_eq!(probe.executions("Write"), 1);
    assert_eq!(stop_of(&events), (StopReason::EndTurn, "written".to_owned()));
    let approvals: Vec<Option<Approval>> = h.recorder.records().iter().map(|r| r.approval).collect();
    assert_eq!(approvals, [Some(Approval::user(Verdict::AllowOnce))]);

    let turns = vec![
        ScriptedTurn::call("w1", "Write", "{}"),
        ScriptedTurn::text("gave up"),
    ];
    let h = harness(read_and_write(&probe), turns, interactive());
    let events = run_answering(&h, "deny", Verdict::Deny).await;
    assert_eq!(probe.executions("Write"), 1, "denied: not executed");
    let results = results_of(&events);
    assert!(
        results[0].2 && results[0].1.contains("permission denied"),
        "{results:?}"
    );
    let records = h.recorder.records();
    assert_eq!(records.len(), 1, "the denial is recorded, with who decided");
    assert_eq!(records[0].approval, Some(Approval::user(Verdict::Deny)));
    assert!(records[0].is_error && records[0].result.contains("the operator denied it"));

    let turns = vec![
        ScriptedTurn::call("w1", "Write", "{}"),
        ScriptedTurn::call("w2", "Write", "{}"),
        ScriptedTurn::text("done"),
    ];
    let h = harness(read_and_write(&probe), turns, interactive());
    let events = run_answering(&h, "always", Verdict::AllowAlways).await;
    assert_eq!(
        kinds(&events).iter().filter(|k| **k == "permission.ask").count(),
        1
    );
    assert_eq!(probe.executions("Write"), 3);
}

#[tokio::test]
async fn a_denial_with_a_reason_tells_the_model_the_log_and_the_audit_why() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call("w1", "Write", "{}"),
        ScriptedTurn::text("understood"),
    ];
    let h = harness(read_and_write(&probe), turns, interactive());
    let answer = AskAnswer::deny_because("  the notes go to notes.md  ");
    let events = run_answering(&h, "deny-why", answer).await;
    let results = results_of(&events);
    assert!(
        results[0].2
            && results[0]
                .1
                .ends_with("the operator denied it, saying: the notes go to notes.md"),
        "{results:?}"
    );
    let verdict = events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::PermissionVerdict { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .expect("a verdict event");
    assert_eq!(verdict.as_deref(), Some("the notes go to notes.md"));
    let records = h.recorder.records();
    assert_eq!(records[0].approval, Some(Approval::user(Verdict::Deny)));
    assert_eq!(
        records[0].provenance.as_ref().and_then(|p| p.reason.as_deref()),
        Some("the notes go to notes.md")
    );
    let long = "x".repeat(engine_core::MAX_DENY_REASON_CHARS + 500);
    let kept = AskAnswer::deny_because(&long).reason.unwrap();
    assert!(
        kept.chars().count() <= engine_core::MAX_DENY_REASON_CHARS + 1,
        "a long reason is cut"
    );
}

async fn headless(approve: Approve, mode: PermissionMode, interactive_run: bool) -> (Vec<Event>, Arc<Probe>) {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::new()
            .with_call("w", "Write", "{}")
            .with_call("r", "Read", "{}"),
        ScriptedTurn::text("end"),
    ];
    let cfg = EngineConfig {
        approve,
        mode,
        interactive: interactive_run,
        ..config()
    };
    let h = harness(read_and_write(&probe), turns, cfg);
    (run_to_end(&h.engine, "s", "go").await, probe)
}

#[tokio::test]
async fn headless_approval_levels() {
    let (events, probe) = headless(Approve::ReadOnly, PermissionMode::Default, false).await;
    assert!(!kinds(&events).contains(&"permission.ask"));
    let results = results_of(&events);
    assert!(results[0].2 && results[0].1.contains("read-only"), "{results:?}");
    assert_eq!((probe.executions("Write"), probe.executions("Read")), (0, 1));

    let (_, probe) = headless(Approve::All, PermissionMode::Default, false).await;
    assert_eq!((probe.executions("Write"), probe.executions("Read")), (1, 1));

    let (events, probe) = headless(Approve::None, PermissionMode::Default, false).await;
    assert_eq!((probe.executions("Write"), probe.executions("Read")), (0, 0));
    assert!(results_of(&events).iter().all(|r| r.2));

    let (events, probe) = headless(Approve::ReadOnly, PermissionMode::AcceptEdits, true).await;
    assert!(!kinds(&events).contains(&"permission.ask"));
    assert_eq!(probe.executions("Write"), 1);
}

async fn with_pre_hook(pre: Result<Pre, HookError>) -> (Vec<Event>, Arc<Probe>) {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call("w", "Write", r#"{"path":"original.txt"}"#),
        ScriptedTurn::text("end"),
    ];
    let h = harness_with(read_and_write(&probe), turns, config(), |mut deps| {
        deps.hooks = Some(Arc::new(PreHook(pre)));
        deps
    });
    (run_to_end(&h.engine, "s", "go").await, probe)
}

fn hook_actions(events: &[Event]) -> Vec<HookAction> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Hook { action, .. } => Some(*action),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn pre_tool_use_hooks_rewrite_ignore_or_deny() {
    let (events, probe) = with_pre_hook(Ok(Pre::RewriteArgs {
        args: r#"{"path":"mutated.txt"}"#.to_owned(),
    }))
    .await;
    assert_eq!(
        probe.seen_args(),
        [("Write".to_owned(), r#"{"path":"mutated.txt"}"#.to_owned())]
    );
    assert_eq!(hook_actions(&events), [HookAction::RewriteArgs]);

    let (events, probe) = with_pre_hook(Ok(Pre::RewriteArgs {
        args: "not-json".to_owned(),
    }))
    .await;
    assert_eq!(
        probe.seen_args(),
        [("Write".to_owned(), r#"{"path":"original.txt"}"#.to_owned())]
    );
    assert_eq!(hook_actions(&events), [HookAction::Ignored]);

    let (events, probe) = with_pre_hook(Ok(Pre::Deny {
        message: "not today".to_owned(),
    }))
    .await;
    assert_eq!(probe.executions("Write"), 0);
    assert_eq!(hook_actions(&events), [HookAction::Deny]);
    assert!(results_of(&events)[0].1.contains("not today"));

    let (events, probe) = with_pre_hook(Err(HookError::new("hook crashed"))).await;
    assert_eq!(
        probe.executions("Write"),
        0,
        "a failing hook denies (fail closed)"
    );
    assert_eq!(hook_actions(&events), [HookAction::Error]);
}

#[tokio::test]
async fn post_tool_use_rewrites_show_everywhere() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call("w", "Write", r#"{"path":"original.txt"}"#),
        ScriptedTurn::text("end"),
    ];
    let h = harness_with(read_and_write(&probe), turns, config(), |mut deps| {
        deps.hooks = Some(Arc::new(RedactingHooks));
        deps
    });
    let events = run_to_end(&h.engine, "s", "go").await;
    assert_eq!(
        results_of(&events),
        [("w".to_owned(), "[redacted]".to_owned(), true)]
    );
    assert_eq!(hook_actions(&events), [HookAction::RewriteResult]);
    let record = &h.recorder.records()[0];
    assert_eq!((record.result.as_str(), record.is_error), ("[redacted]", true));
    let snapshot = h.engine.store().load(&SessionId::from("s")).await.unwrap();
    let stored = snapshot
        .conversation
        .iter()
        .find_map(|m| match m {
            Message::Tool { result } => Some(result.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!((stored.content(), stored.is_error()), ("[redacted]", true));
}

#[tokio::test]
async fn a_provider_error_ends_the_run_with_error_last() {
    let probe = Probe::new();
    let failing = ScriptedTurn::text("partial").ending_with_error(LlmError::Transport {
        provider: "scripted".to_owned(),
        model: "m".to_owned(),
        message: "connection reset".to_owned(),
    });
    let h = harness(read_and_write(&probe), vec![failing], config());
    let events = run_to_end(&h.engine, "s", "go").await;
    match &events.last().unwrap().kind {
        EventKind::Result { stop, error, .. } => {
            assert_eq!(*stop, StopReason::Error);
            assert!(error.as_deref().unwrap_or_default().contains("connection reset"));
        }
        other => panic!("{other:?}"),
    }

    let h = harness(
        read_and_write(&probe),
        vec![ScriptedTurn::start_error(LlmError::Status {
            provider: "scripted".to_owned(),
            model: "m".to_owned(),
            status: 401,
            message: "bad key".to_owned(),
        })],
        config(),
    );
    let events = run_to_end(&h.engine, "s", "go").await;
    assert_eq!(stop_of(&events).0, StopReason::Error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_run_cancels_it() {
    let probe = Probe::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let h = harness_with(
        read_and_write(&probe),
        vec![ScriptedTurn::text("thinking").hanging()],
        config(),
        |mut deps| {
            deps.sink = Some(Arc::new(ChannelSink(tx)));
            deps
        },
    );
    let session = SessionId::from("s");
    let mut run = h.engine.run(&session, "go").unwrap();
    loop {
        let event = run.next().await.unwrap();
        if matches!(event.kind, EventKind::MessageDelta { .. }) {
            break;
        }
    }
    drop(run);
    let last = loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
            .await
            .expect("the dropped run finishes")
            .unwrap();
        if matches!(event.kind, EventKind::Result { .. }) {
            break event;
        }
    };
    assert!(matches!(
        last.kind,
        EventKind::Result {
            stop: StopReason::Cancelled,
            ..
        }
    ));
    assert!(!h.engine.is_running(&session));
}

#[tokio::test]
async fn a_stored_session_resumes_with_its_conversation_and_seq() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call("c1", "Read", "{}"),
        ScriptedTurn::text("first done"),
        ScriptedTurn::text("second done"),
    ];
    let h = harness(read_and_write(&probe), turns, config());
    let first = run_to_end(&h.engine, "s", "one").await;
    let second = run_to_end(&h.engine, "s", "two").await;
    assert_eq!(
        second[0].seq,
        first.last().unwrap().seq + 1,
        "seq continues across runs"
    );
    let requests = h.llm.requests();
    let last = requests.last().unwrap();
    let users: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["one", "two"]);
    let snapshot = h.engine.store().load(&SessionId::from("s")).await.unwrap();
    assert_eq!(snapshot.turns, 3);
    assert_eq!(snapshot.tool_calls, 1);
    assert_eq!(snapshot.next_seq, second.last().unwrap().seq + 1);
}

#[tokio::test]
async fn a_second_run_on_a_busy_session_is_refused() {
    let probe = Probe::new();
    let h = harness(
        read_and_write(&probe),
        vec![ScriptedTurn::text("x").hanging()],
        config(),
    );
    let session = SessionId::from("s");
    let run = h.engine.run(&session, "one").unwrap();
    assert!(matches!(
        h.engine.run(&session, "two"),
        Err(engine_core::EngineError::Busy(_))
    ));
    assert!(h.engine.set_mode(&session, PermissionMode::Plan).await.is_err());
    run.cancel();
    let events: Vec<Event> = run.collect().await;
    assert_eq!(stop_of(&events).0, StopReason::Cancelled);
    h.engine.set_mode(&session, PermissionMode::Plan).await.unwrap();
    assert_eq!(
        h.engine.store().load(&session).await.unwrap().mode,
        PermissionMode::Plan
    );
}

/// Two engines over one store stand for two processes sharing a store directory:
/// the session's run lease lives in the store, so the second engine refuses to run
/// it, and nothing it could have logged or saved mixes with the first run.
#[tokio::test]
async fn a_session_running_in_another_engine_over_the_same_store_is_refused() {
    let probe = Probe::new();
    let store = Arc::new(engine_core::InMemoryStore::new());
    let over_store = |deps: Deps| Deps {
        store: Some(store.clone()),
        event_log: Some(store.clone()),
        ..deps
    };
    let first = harness_with(
        read_and_write(&probe),
        vec![ScriptedTurn::text("first").hanging()],
        config(),
        over_store,
    );
    let second = harness_with(
        read_and_write(&probe),
        vec![ScriptedTurn::text("second")],
        config(),
        over_store,
    );
    let session = SessionId::from("s");
    let run = first
        .engine
        .run(&session, "one")
        .unwrap()
        .started()
        .await
        .unwrap();

    let refused = second.engine.run(&session, "two").unwrap().started().await;
    match refused {
        Err(error @ engine_core::EngineError::Busy(_)) => {
            assert_eq!(error.to_string(), "session \"s\" already has a run in progress");
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    assert!(
        !second.engine.is_running(&session),
        "a refused run leaves nothing behind"
    );
    assert!(matches!(
        second.engine.set_mode(&session, PermissionMode::Plan).await,
        Err(engine_core::EngineError::Busy(_))
    ));
    assert!(
        second.llm.requests().is_empty(),
        "the refused run never reached its model"
    );

    run.cancel();
    let events: Vec<Event> = run.collect().await;
    assert_eq!(stop_of(&events).0, StopReason::Cancelled);
    let logged = store.read(&session).await.unwrap();
    assert_eq!(logged, events, "the log holds the first run's events only");

    // Released with the first run's `result`: the second engine runs it now.
    let later = run_to_end(&second.engine, "s", "two").await;
    assert_eq!(stop_of(&later), (StopReason::EndTurn, "second".to_owned()));
    let seqs: Vec<u64> = store
        .read(&session)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

struct Slash;

#[async_trait]
impl CommandExpander for Slash {
    async fn expand(&self, input: &str) -> Result<Expansion, CommandError> {
        match input {
            "/greet" => Ok(Expansion::Expanded("Say hello.".to_owned())),
            "/broken" => Err(CommandError::Expand {
                command: "broken".to_owned(),
                reason: "backend unavailable".to_owned(),
            }),
            _ => Ok(Expansion::NotExpanded),
        }
    }

    async fn list(&self) -> Result<Vec<CommandInfo>, CommandError> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn prompts_go_through_the_command_chain() {
    let probe = Probe::new();
    let h = harness_with(
        read_and_write(&probe),
        vec![ScriptedTurn::text("hello"), ScriptedTurn::text("plain")],
        config(),
        |mut deps| {
            deps.commands = Some(Arc::new(Slash));
            deps
        },
    );
    run_to_end(&h.engine, "a", "/greet").await;
    run_to_end(&h.engine, "b", "just text").await;
    let requests = h.llm.requests();
    assert_eq!(
        requests[0].messages,
        [Message::User {
            text: "Say hello.".to_owned()
        }]
    );
    assert_eq!(
        requests[1].messages,
        [Message::User {
            text: "just text".to_owned()
        }]
    );

    let events = run_to_end(&h.engine, "c", "/broken").await;
    match &events.last().unwrap().kind {
        EventKind::Result { stop, error, .. } => {
            assert_eq!(*stop, StopReason::Error);
            assert!(error.as_deref().unwrap().contains("broken"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.llm.requests().len(), 2, "nothing reached the model");
}

/// A store whose saves fail.
struct ReadOnlyStore;

#[async_trait]
impl SessionStore for ReadOnlyStore {
    async fn create(&self, _: &SessionSnapshot) -> Result<(), StoreError> {
        Err(StoreError::InvalidId {
            reason: "read-only store".to_owned(),
        })
    }
    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        Err(StoreError::NotFound { id: id.clone() })
    }
    async fn save(&self, _: &SessionSnapshot) -> Result<(), StoreError> {
        Err(StoreError::InvalidId {
            reason: "read-only store".to_owned(),
        })
    }
    async fn list(&self) -> Result<Vec<SessionListing>, StoreError> {
        Ok(Vec::new())
    }
    async fn delete(&self, _: &SessionId) -> Result<(), StoreError> {
        Ok(())
    }
    async fn acquire_run(&self, id: &SessionId) -> Result<RunLease, StoreError> {
        Ok(RunLease::new(id.clone(), ()))
    }
    async fn probe(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[tokio::test]
async fn a_failed_save_ends_the_run_with_error() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call("c1", "Read", "{}"),
        ScriptedTurn::text("unreached"),
    ];
    let h = harness_with(read_and_write(&probe), turns, config(), |mut deps| {
        deps.store = Some(Arc::new(ReadOnlyStore));
        deps
    });
    let events = run_to_end(&h.engine, "s", "go").await;
    match &events.last().unwrap().kind {
        EventKind::Result { stop, error, .. } => {
            assert_eq!(*stop, StopReason::Error);
            assert!(error.as_deref().unwrap().contains("saving the session failed"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.llm.requests().len(),
        1,
        "the loop stopped after the failed save"
    );
}

#[tokio::test]
async fn events_carry_time_with_a_clock_and_reach_the_event_log() {
    let probe = Probe::new();
    let log = Arc::new(engine_core::InMemoryStore::new());
    let clock = Arc::new(engine_ports::testkit::ManualClock::at_epoch_2026());
    let h = harness_with(
        read_and_write(&probe),
        vec![ScriptedTurn::text("hi")],
        config(),
        |mut deps| {
            deps.event_log = Some(log.clone());
            deps.clock = Some(clock);
            deps
        },
    );
    let events = run_to_end(&h.engine, "s", "go").await;
    assert!(
        events
            .iter()
            .all(|e| e.time.as_deref() == Some("2026-01-01T00:00:00.000000Z"))
    );
    let logged = engine_ports::EventLog::read(log.as_ref(), &SessionId::from("s"))
        .await
        .unwrap();
    assert_eq!(logged, events);
}

#[test]
fn engine_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
    assert_send_sync::<Deps>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deltas_streamed_at_once_arrive_one_event_per_chunk_in_order() {
    let probe = Probe::new();
    // 150 chunks ready at once (more than one delivery holds), reasoning among them.
    let turn = (0..150).fold(ScriptedTurn::new(), |turn, i| {
        if i % 50 == 7 {
            turn.with_reasoning(format!("r{i}"))
        } else {
            turn.with_text(format!("t{i} "))
        }
    });
    let h = harness(read_and_write(&probe), vec![turn], config());
    let events = run_to_end(&h.engine, "s", "go").await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let deltas: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MessageDelta { text } => Some(text.clone()),
            EventKind::ReasoningDelta { text } => Some(format!("({text})")),
            _ => None,
        })
        .collect();
    let expected: Vec<String> = (0..150)
        .map(|i| {
            if i % 50 == 7 {
                format!("(r{i})")
            } else {
                format!("t{i} ")
            }
        })
        .collect();
    assert_eq!(deltas, expected);
    let EventKind::Result { text, .. } = &events.last().unwrap().kind else {
        panic!("{:?}", events.last());
    };
    let said: String = (0..150)
        .filter(|i| i % 50 != 7)
        .map(|i| format!("t{i} "))
        .collect();
    assert_eq!(text, &said);
}
