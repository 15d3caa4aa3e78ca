//! The delegation families end to end on the real build: scripted parents and
//! children (the mock script's `children` entries), child sessions in the store,
//! events, asks and the child catalogs.

mod parallel;
mod subagent;
mod surfaces;
mod team;

use adapter_llm::MockScript;
use app::{AppConfig, Built, ModelConfig, build};
use engine_ports::{Event, EventKind, SessionId, SessionSnapshot, StopReason, Verdict};
use futures::StreamExt as _;

use crate::support::{Scratch, config};

/// A build over a scratch workspace with a mock script.
pub(crate) struct Harness {
    pub(crate) scratch: Scratch,
    pub(crate) built: Built,
}

impl Harness {
    pub(crate) async fn new(script: &str, tweak: impl FnOnce(&mut AppConfig, &Scratch)) -> Self {
        Self::with_script(MockScript::from_json(script, "test script").unwrap(), tweak).await
    }

    /// A build over a scratch workspace playing `script`; workspace copies go to the
    /// scratch's `forks/`.
    pub(crate) async fn with_script(
        script: MockScript,
        tweak: impl FnOnce(&mut AppConfig, &Scratch),
    ) -> Self {
        let scratch = Scratch::new();
        let mut cfg = config(&scratch);
        cfg.model = ModelConfig::MockScript(script);
        cfg.delegation.fork_dir = Some(scratch.path("forks"));
        tweak(&mut cfg, &scratch);
        let built = build(cfg).await.unwrap();
        Self { scratch, built }
    }

    /// The workspace copies left in `forks/` (not the lock files and markers beside
    /// them).
    pub(crate) fn copies_left(&self) -> Vec<std::path::PathBuf> {
        let mut left: Vec<std::path::PathBuf> = std::fs::read_dir(self.scratch.path("forks"))
            .map(|dir| {
                dir.flatten()
                    .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
                    .map(|entry| entry.path())
                    .collect()
            })
            .unwrap_or_default();
        left.sort();
        left
    }

    /// Runs `prompt` on `session`, answering asks with `verdict` (the engine must be
    /// interactive for asks to arrive); every event of the run.
    pub(crate) async fn run_answering(
        &self,
        session: &str,
        prompt: &str,
        mut verdict: impl FnMut(&EventKind) -> Verdict,
    ) -> Vec<Event> {
        let engine = self.built.shared_engine();
        let id = SessionId::from(session);
        let mut run = engine.run(&id, prompt).unwrap();
        let mut events = Vec::new();
        while let Some(event) = run.next().await {
            if let EventKind::PermissionAsk { ask_id, .. } = &event.kind {
                assert!(engine.approve(&id, ask_id, verdict(&event.kind)), "{ask_id}");
            }
            events.push(event);
        }
        events
    }

    pub(crate) async fn run(&self, session: &str, prompt: &str) -> Vec<Event> {
        self.run_answering(session, prompt, |kind| panic!("unexpected ask: {kind:?}"))
            .await
    }

    pub(crate) async fn snapshot(&self, id: &str) -> SessionSnapshot {
        self.built
            .store()
            .session_store()
            .load(&SessionId::from(id))
            .await
            .unwrap()
    }

    pub(crate) async fn events_of(&self, id: &str) -> Vec<Event> {
        self.built
            .store()
            .event_log()
            .read(&SessionId::from(id))
            .await
            .unwrap()
    }
}

/// The run's stop and final text.
pub(crate) fn outcome(events: &[Event]) -> (StopReason, String) {
    match &events.last().unwrap().kind {
        EventKind::Result { stop, text, .. } => (*stop, text.clone()),
        other => panic!("the last event is not a result: {other:?}"),
    }
}

/// The final result of call `call_id`: its content and whether it is an error.
pub(crate) fn tool_result(events: &[Event], call_id: &str) -> (String, bool) {
    events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::ToolResult {
                call_id: id,
                content,
                is_error,
                ..
            } if id.as_str() == call_id => Some((content.clone(), *is_error)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id}: {events:#?}"))
}

/// The `type` of every event, in order.
pub(crate) fn types(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|event| event.kind.type_name()).collect()
}

/// The tools advertised to a session's first turn, from its `session.init` event.
pub(crate) fn init_tools(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::SessionInit { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .unwrap()
}

/// Every user message of a conversation.
pub(crate) fn user_texts(snapshot: &SessionSnapshot) -> Vec<String> {
    snapshot
        .conversation
        .iter()
        .filter_map(|message| match message {
            engine_ports::Message::User { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}
