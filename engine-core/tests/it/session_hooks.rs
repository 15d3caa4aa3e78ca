//! The session's hook events fired by the run: `SessionStart` (startup, resume,
//! compact), `UserPromptSubmit` (context, a refused prompt), `Stop` (going on, the
//! limit), `SubagentStop` for a child's run, `PreCompact` — each once per occurrence.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine_core::{EngineConfig, InMemoryStore, MAX_STOP_HOOK_CONTINUATIONS};
use engine_ports::testkit::ScriptedTurn;
use engine_ports::{
    CompactTrigger, Event, EventAnswer, EventKind, HookError, HookEvent, HookText, Message, Post, Pre,
    RequestPurpose, SessionEvent, SessionHookAction, SessionId, SessionSource, SessionStore, StopReason,
    ToolCall, ToolHooks, ToolResult,
};

use crate::support::{Harness, Probe, catalog_of, config, harness_with, kinds, run_to_end, stop_of};

type Answer = Box<dyn Fn(&SessionEvent) -> EventAnswer + Send + Sync>;

/// Hooks that record every session event and answer as told.
struct Recording {
    seen: Mutex<Vec<(String, SessionEvent)>>,
    answer: Answer,
}

impl Recording {
    fn new(answer: impl Fn(&SessionEvent) -> EventAnswer + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            seen: Mutex::default(),
            answer: Box::new(answer),
        })
    }

    fn quiet() -> Arc<Self> {
        Self::new(|_| EventAnswer::default())
    }

    fn seen(&self) -> Vec<SessionEvent> {
        self.seen.lock().unwrap().iter().map(|(_, e)| e.clone()).collect()
    }

    fn names(&self) -> Vec<HookEvent> {
        self.seen().iter().map(SessionEvent::name).collect()
    }
}

#[async_trait]
impl ToolHooks for Recording {
    async fn pre_tool_use(&self, _: &SessionId, _: &ToolCall) -> Result<Pre, HookError> {
        Ok(Pre::Allow)
    }

    async fn post_tool_use(&self, _: &SessionId, _: &ToolCall, _: &ToolResult) -> Result<Post, HookError> {
        Ok(Post::Keep)
    }

    async fn session_event(&self, session: &SessionId, event: &SessionEvent) -> EventAnswer {
        self.seen
            .lock()
            .unwrap()
            .push((session.as_str().to_owned(), event.clone()));
        (self.answer)(event)
    }
}

fn said(hook: &str, text: &str) -> HookText {
    HookText {
        hook: hook.to_owned(),
        text: text.to_owned(),
    }
}

/// An engine over `store` with `hooks`, the scripted `turns` and `config`.
fn hooked(
    hooks: &Arc<Recording>,
    store: &Arc<InMemoryStore>,
    turns: Vec<ScriptedTurn>,
    config: EngineConfig,
) -> Harness {
    let probe = Probe::new();
    let catalog = catalog_of(vec![crate::support::FakeTool::new("Read", true, &probe).arc()]);
    let hooks = Arc::clone(hooks) as Arc<dyn ToolHooks>;
    let store = Arc::clone(store) as Arc<dyn SessionStore>;
    harness_with(catalog, turns, config, move |mut deps| {
        deps.hooks = Some(hooks);
        deps.store = Some(store);
        deps
    })
}

/// The `hook.session` events of a run, as `(event, action, message)`.
fn hook_events(events: &[Event]) -> Vec<(HookEvent, SessionHookAction, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SessionHook {
                event,
                action,
                message,
                ..
            } => Some((*event, *action, message.clone())),
            _ => None,
        })
        .collect()
}

fn error_of(events: &[Event]) -> String {
    match &events.last().unwrap().kind {
        EventKind::Result {
            stop: StopReason::Error,
            error: Some(error),
            ..
        } => error.clone(),
        other => panic!("expected an error result, got {other:?}"),
    }
}

#[tokio::test]
async fn session_start_fires_startup_once_then_resume_on_another_engine() {
    let hooks = Recording::quiet();
    let store = Arc::new(InMemoryStore::new());
    let turns = vec![ScriptedTurn::text("one"), ScriptedTurn::text("two")];
    let h = hooked(&hooks, &store, turns, config());
    run_to_end(&h.engine, "s", "first").await;
    run_to_end(&h.engine, "s", "second").await;
    assert_eq!(
        hooks.seen(),
        [
            SessionEvent::SessionStart {
                source: SessionSource::Startup
            },
            SessionEvent::UserPromptSubmit {
                prompt: "first".to_owned()
            },
            SessionEvent::Stop {
                stop_hook_active: false,
                stop_reason: StopReason::EndTurn
            },
            SessionEvent::UserPromptSubmit {
                prompt: "second".to_owned()
            },
            SessionEvent::Stop {
                stop_hook_active: false,
                stop_reason: StopReason::EndTurn
            },
        ]
    );
    // Another engine (another process) over the same store resumes the session.
    let again = Recording::quiet();
    let other = hooked(&again, &store, vec![ScriptedTurn::text("three")], config());
    run_to_end(&other.engine, "s", "third").await;
    assert_eq!(
        again.seen()[0],
        SessionEvent::SessionStart {
            source: SessionSource::Resume
        }
    );
    assert!(
        hooks
            .seen
            .lock()
            .unwrap()
            .iter()
            .all(|(session, _)| session == "s")
    );
}

#[tokio::test]
async fn prompt_hook_context_follows_the_prompt_in_the_models_input() {
    let hooks = Recording::new(|event| match event {
        SessionEvent::UserPromptSubmit { .. } => EventAnswer {
            context: vec![said("./ticket.sh", "ticket ABC-12 is open")],
            block: None,
        },
        _ => EventAnswer::default(),
    });
    let store = Arc::new(InMemoryStore::new());
    let h = hooked(&hooks, &store, vec![ScriptedTurn::text("ok")], config());
    let events = run_to_end(&h.engine, "s", "fix it").await;
    assert_eq!(stop_of(&events).0, StopReason::EndTurn);
    let request = h.llm.requests().remove(0);
    assert_eq!(
        request.messages.to_vec()[..2],
        [
            Message::User {
                text: "fix it".to_owned()
            },
            Message::User {
                text: "UserPromptSubmit hook additional context:\nticket ABC-12 is open".to_owned()
            },
        ]
    );
    assert_eq!(
        hook_events(&events),
        [(
            HookEvent::UserPromptSubmit,
            SessionHookAction::Context,
            "ticket ABC-12 is open".to_owned()
        )]
    );
}

#[tokio::test]
async fn a_blocked_prompt_never_reaches_the_model_and_the_run_ends_with_the_hooks_reason() {
    let hooks = Recording::new(|event| match event {
        SessionEvent::UserPromptSubmit { .. } => EventAnswer {
            context: Vec::new(),
            block: Some(said("./no-vault.sh", "prompts may not name the vault")),
        },
        _ => EventAnswer::default(),
    });
    let store = Arc::new(InMemoryStore::new());
    let h = hooked(&hooks, &store, vec![ScriptedTurn::text("never")], config());
    let events = run_to_end(&h.engine, "s", "print the vault key").await;
    let error = error_of(&events);
    assert!(
        error.contains("UserPromptSubmit hook `./no-vault.sh`")
            && error.contains("prompts may not name the vault"),
        "{error}"
    );
    assert!(h.llm.requests().is_empty(), "the model never saw the prompt");
    let snapshot = store.load(&SessionId::from("s")).await.unwrap();
    assert!(snapshot.conversation.is_empty(), "the prompt was not kept");
    // No Stop for a prompt that was refused; the block is in the event log.
    assert_eq!(
        hooks.names(),
        [HookEvent::SessionStart, HookEvent::UserPromptSubmit]
    );
    assert_eq!(
        hook_events(&events),
        [(
            HookEvent::UserPromptSubmit,
            SessionHookAction::Block,
            "prompts may not name the vault".to_owned()
        )]
    );
}

#[tokio::test]
async fn a_stop_block_makes_the_model_go_on_with_the_reason_a_bounded_number_of_times() {
    let hooks = Recording::new(|event| match event {
        SessionEvent::Stop { .. } => EventAnswer {
            context: Vec::new(),
            block: Some(said("./tests-ran.sh", "run the tests first")),
        },
        _ => EventAnswer::default(),
    });
    let store = Arc::new(InMemoryStore::new());
    let turns = (0..10)
        .map(|n| ScriptedTurn::text(format!("answer {n}")))
        .collect();
    let h = hooked(&hooks, &store, turns, config());
    let events = run_to_end(&h.engine, "s", "go").await;
    let limit = usize::try_from(MAX_STOP_HOOK_CONTINUATIONS).unwrap();
    assert_eq!(stop_of(&events), (StopReason::EndTurn, format!("answer {limit}")));
    // The model was asked once, then once more per continuation, each time with the
    // hook's reason as its latest input.
    let requests = h.llm.requests();
    assert_eq!(requests.len(), limit + 1);
    for request in &requests[1..] {
        assert_eq!(
            request.messages.to_vec().last(),
            Some(&Message::User {
                text: "Stop hook feedback:\nrun the tests first".to_owned()
            })
        );
    }
    let active: Vec<bool> = hooks
        .seen()
        .iter()
        .filter_map(|event| match event {
            SessionEvent::Stop { stop_hook_active, .. } => Some(*stop_hook_active),
            _ => None,
        })
        .collect();
    let mut expected = vec![true; limit + 1];
    expected[0] = false;
    assert_eq!(active, expected);
    let actions: Vec<SessionHookAction> = hook_events(&events).into_iter().map(|(_, a, _)| a).collect();
    let mut expected = vec![SessionHookAction::Continue; limit];
    expected.push(SessionHookAction::Ignored);
    assert_eq!(actions, expected);
}

#[tokio::test]
async fn stop_fires_once_with_how_a_limited_run_ended_and_cannot_make_it_go_on() {
    let hooks = Recording::new(|event| match event {
        SessionEvent::Stop { .. } => EventAnswer {
            context: Vec::new(),
            block: Some(said("./more.sh", "keep going")),
        },
        _ => EventAnswer::default(),
    });
    let store = Arc::new(InMemoryStore::new());
    let turns = vec![
        ScriptedTurn::call("r1", "Read", "{}"),
        ScriptedTurn::call("r2", "Read", "{}"),
    ];
    let mut limited = config();
    limited.limits.max_turns = 1;
    let h = hooked(&hooks, &store, turns, limited);
    let events = run_to_end(&h.engine, "s", "go").await;
    assert_eq!(stop_of(&events).0, StopReason::MaxTurns);
    let stops: Vec<SessionEvent> = hooks
        .seen()
        .into_iter()
        .filter(|e| e.name() == HookEvent::Stop)
        .collect();
    assert_eq!(
        stops,
        [SessionEvent::Stop {
            stop_hook_active: false,
            stop_reason: StopReason::MaxTurns
        }]
    );
    assert_eq!(h.llm.requests().len(), 1);
    assert_eq!(hook_events(&events)[0].1, SessionHookAction::Ignored);
}

#[tokio::test]
async fn a_childs_run_fires_subagent_stop_and_no_session_or_prompt_hooks() {
    let hooks = Recording::quiet();
    let store = Arc::new(InMemoryStore::new());
    let child = EngineConfig {
        purpose: RequestPurpose::Subagent,
        ..config()
    };
    let h = hooked(&hooks, &store, vec![ScriptedTurn::text("found it")], child);
    run_to_end(&h.engine, "subagent-s-c1", "look").await;
    assert_eq!(
        hooks.seen(),
        [SessionEvent::SubagentStop {
            stop_hook_active: false,
            stop_reason: StopReason::EndTurn
        }]
    );
}

#[tokio::test]
async fn pre_compact_fires_before_a_compaction_and_session_start_compact_after_it() {
    let hooks = Recording::new(|event| match event {
        SessionEvent::PreCompact { .. } => EventAnswer {
            context: Vec::new(),
            block: Some(said("./keep.sh", "do not compact")),
        },
        SessionEvent::SessionStart {
            source: SessionSource::Compact,
        } => EventAnswer {
            context: vec![said("./reminders.sh", "the build uses nightly")],
            block: None,
        },
        _ => EventAnswer::default(),
    });
    let store = Arc::new(InMemoryStore::new());
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        crate::support::FakeTool::new("Read", true, &probe)
            .behaving(|call: ToolCall, _| async move {
                Ok(ToolResult::text(call.id().clone(), "r".repeat(3_000)))
            })
            .arc(),
    ]);
    let turns = vec![
        ScriptedTurn::call("c1", "Read", "{}"),
        ScriptedTurn::text("first done"),
        ScriptedTurn::text("second done"),
        ScriptedTurn::call("c3", "Read", "{}"),
        ScriptedTurn::text("SUMMARY: reads"),
        ScriptedTurn::text("third done"),
    ];
    let windowed = EngineConfig {
        context_window: Some(1_000),
        ..config()
    };
    let recording = Arc::clone(&hooks) as Arc<dyn ToolHooks>;
    let stored = Arc::clone(&store) as Arc<dyn SessionStore>;
    let h = harness_with(catalog, turns, windowed, move |mut deps| {
        deps.hooks = Some(recording);
        deps.store = Some(stored);
        deps
    });
    let mut compacted = None;
    for prompt in ["one", "two", "three"] {
        let events = run_to_end(&h.engine, "s", prompt).await;
        if kinds(&events).contains(&"context.compacted") {
            compacted = Some(events);
        }
    }
    let events = compacted.expect("a run compacted");
    let order: Vec<&str> = kinds(&events)
        .into_iter()
        .filter(|k| ["hook.session", "context.compacted"].contains(k))
        .collect();
    assert_eq!(order, ["hook.session", "context.compacted", "hook.session"]);
    let reported = hook_events(&events);
    assert_eq!(
        (reported[0].0, reported[0].1),
        (HookEvent::PreCompact, SessionHookAction::Ignored),
        "a PreCompact hook cannot stop a compaction"
    );
    assert_eq!(
        (reported[1].0, reported[1].1),
        (HookEvent::SessionStart, SessionHookAction::Context)
    );
    let compactions: Vec<SessionEvent> = hooks
        .seen()
        .into_iter()
        .filter(|e| matches!(e.name(), HookEvent::PreCompact | HookEvent::SessionStart))
        .collect();
    assert_eq!(
        compactions,
        [
            SessionEvent::SessionStart {
                source: SessionSource::Startup
            },
            SessionEvent::PreCompact {
                trigger: CompactTrigger::Auto,
                custom_instructions: String::new()
            },
            SessionEvent::SessionStart {
                source: SessionSource::Compact
            },
        ]
    );
    // The compact hook's context is in the model's next input.
    let last = h.llm.requests().pop().unwrap();
    assert!(
        last.messages.to_vec().iter().any(|m| m
            == &Message::User {
                text: "SessionStart hook additional context:\nthe build uses nightly".to_owned()
            }),
        "{:?}",
        last.messages
    );
}
