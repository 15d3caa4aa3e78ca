//! Shared fixtures: a configurable fake tool, a probe that journals starts and ends
//! and measures overlap, and builders for catalogs, contexts and engines.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine_core::{
    Approve, Catalog, DefaultPolicy, Deps, Engine, EngineConfig, Environment, EventEmitter, Tool, ToolError,
    TurnContext,
};
use engine_ports::testkit::{CollectingSink, MemoryRecorder, ScriptedLlm, ScriptedTurn};
use engine_ports::{
    CancellationToken, Event, EventKind, PermissionMode, SessionId, ToolCall, ToolResult, ToolSpec,
};
use futures::StreamExt as _;

type Behaviour = Arc<
    dyn Fn(ToolCall, CancellationToken) -> Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send>>
        + Send
        + Sync,
>;

/// Journal of executions shared by the tools of one test.
#[derive(Default)]
pub(crate) struct Probe {
    journal: Mutex<Vec<String>>,
    active: AtomicUsize,
    peak: AtomicUsize,
    mutating_active: AtomicUsize,
    overlaps: AtomicUsize,
    executions: Mutex<HashMap<String, usize>>,
    seen_args: Mutex<Vec<(String, String)>>,
    ended: tokio::sync::Notify,
}

impl Probe {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// `start:<call id>` / `end:<call id>` in the order they happened.
    pub(crate) fn journal(&self) -> Vec<String> {
        self.journal.lock().unwrap().clone()
    }

    /// Position of an entry in the journal.
    pub(crate) fn at(&self, entry: &str) -> usize {
        self.journal()
            .iter()
            .position(|e| e == entry)
            .unwrap_or_else(|| panic!("{entry} not in journal {:?}", self.journal()))
    }

    /// Most executions in flight at once.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// How often a mutating execution overlapped any other execution.
    pub(crate) fn overlaps(&self) -> usize {
        self.overlaps.load(Ordering::SeqCst)
    }

    /// How often the tool `name` executed.
    pub(crate) fn executions(&self, name: &str) -> usize {
        self.executions.lock().unwrap().get(name).copied().unwrap_or(0)
    }

    /// Argument text each execution saw, with its tool name.
    pub(crate) fn seen_args(&self) -> Vec<(String, String)> {
        self.seen_args.lock().unwrap().clone()
    }

    fn start(&self, call: &ToolCall, mutating: bool) {
        self.journal.lock().unwrap().push(format!("start:{}", call.id()));
        *self
            .executions
            .lock()
            .unwrap()
            .entry(call.name().to_owned())
            .or_default() += 1;
        self.seen_args
            .lock()
            .unwrap()
            .push((call.name().to_owned(), call.args().to_owned()));
        let before = self.active.fetch_add(1, Ordering::SeqCst);
        self.peak.fetch_max(before + 1, Ordering::SeqCst);
        let mutating_before = if mutating {
            self.mutating_active.fetch_add(1, Ordering::SeqCst)
        } else {
            self.mutating_active.load(Ordering::SeqCst)
        };
        // A mutating call overlaps when anything else runs; a read overlaps when a
        // mutating call runs.
        if (mutating && before > 0) || (!mutating && mutating_before > 0) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn end(&self, call: &ToolCall, mutating: bool) {
        if mutating {
            self.mutating_active.fetch_sub(1, Ordering::SeqCst);
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
        self.journal.lock().unwrap().push(format!("end:{}", call.id()));
        self.ended.notify_waiters();
    }

    /// Waits until the journal holds `entry` (executions end asynchronously when an
    /// abandoned task is dropped).
    pub(crate) async fn wait_for(&self, entry: &str) {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.journal().iter().any(|e| e == entry) {
                return;
            }
            notified.await;
        }
    }
}

/// A tool whose behaviour is a closure; it journals into a [`Probe`].
pub(crate) struct FakeTool {
    name: String,
    description: Mutex<String>,
    reported_name: Mutex<Option<String>>,
    schema: Option<serde_json::Value>,
    light: Option<ToolSpec>,
    read_only: bool,
    plan_only: bool,
    serial: bool,
    probe: Arc<Probe>,
    behaviour: Behaviour,
    spec_calls: AtomicUsize,
}

impl FakeTool {
    /// A tool answering `ok:<call id>`.
    pub(crate) fn new(name: &str, read_only: bool, probe: &Arc<Probe>) -> Self {
        Self {
            name: name.to_owned(),
            description: Mutex::new(format!("the {name} tool")),
            reported_name: Mutex::new(None),
            schema: Some(serde_json::json!({"type": "object", "properties": {}})),
            light: None,
            read_only,
            plan_only: false,
            serial: false,
            probe: Arc::clone(probe),
            behaviour: Arc::new(|call, _| {
                Box::pin(async move { Ok(ToolResult::text(call.id().clone(), format!("ok:{}", call.id()))) })
            }),
            spec_calls: AtomicUsize::new(0),
        }
    }

    pub(crate) fn described(self, description: &str) -> Self {
        *self.description.lock().unwrap() = description.to_owned();
        self
    }

    pub(crate) fn with_schema(mut self, schema: serde_json::Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// Makes the tool Disclosable with this light spec (no schema).
    pub(crate) fn disclosable(mut self, light_description: &str) -> Self {
        self.light = Some(ToolSpec::new(self.name.as_str(), light_description));
        self
    }

    pub(crate) fn plan_only(mut self) -> Self {
        self.plan_only = true;
        self
    }

    pub(crate) fn serial(mut self) -> Self {
        self.serial = true;
        self
    }

    pub(crate) fn behaving<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ToolCall, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        self.behaviour = Arc::new(move |call, cancel| Box::pin(f(call, cancel)));
        self
    }

    /// Changes what `spec()` reports from now on.
    pub(crate) fn report(&self, name: Option<&str>, description: Option<&str>) {
        if let Some(name) = name {
            *self.reported_name.lock().unwrap() = Some(name.to_owned());
        }
        if let Some(description) = description {
            *self.description.lock().unwrap() = description.to_owned();
        }
    }

    pub(crate) fn spec_calls(&self) -> usize {
        self.spec_calls.load(Ordering::SeqCst)
    }

    pub(crate) fn arc(self) -> Arc<Self> {
        Arc::new(self)
    }
}

#[async_trait]
impl Tool for FakeTool {
    fn spec(&self) -> ToolSpec {
        self.spec_calls.fetch_add(1, Ordering::SeqCst);
        let name = self
            .reported_name
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| self.name.clone());
        let spec = ToolSpec::new(name, self.description.lock().unwrap().as_str());
        match &self.schema {
            Some(schema) => spec.with_schema(schema.clone()),
            None => spec,
        }
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn advertised_spec(&self) -> Option<ToolSpec> {
        self.light.clone()
    }

    fn plan_only(&self) -> bool {
        self.plan_only
    }

    fn dispatch_serial(&self) -> bool {
        self.serial
    }

    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let mutating = !self.read_only;
        self.probe.start(call, mutating);
        // End is journaled even when the future is dropped (aborted task).
        struct EndGuard<'a>(&'a Probe, &'a ToolCall, bool);
        impl Drop for EndGuard<'_> {
            fn drop(&mut self) {
                self.0.end(self.1, self.2);
            }
        }
        let _guard = EndGuard(&self.probe, call, mutating);
        (self.behaviour)(call.clone(), cancel.clone()).await
    }
}

/// A catalog of the given tools.
pub(crate) fn catalog_of(tools: Vec<Arc<dyn Tool>>) -> Arc<Catalog> {
    let mut catalog = Catalog::new();
    for tool in tools {
        catalog.must_register(tool);
    }
    Arc::new(catalog)
}

pub(crate) fn env() -> Environment {
    Environment::new(std::env::temp_dir()).unwrap()
}

/// A headless context approving every call, with a collecting sink.
pub(crate) fn context(catalog: Arc<Catalog>, mode: PermissionMode) -> (TurnContext, Arc<CollectingSink>) {
    let session = SessionId::from("s1");
    let sink = Arc::new(CollectingSink::new());
    let mut ctx = TurnContext::new(
        session.clone(),
        mode,
        catalog,
        env(),
        Arc::new(DefaultPolicy::new(false, Approve::All)),
    );
    ctx.events = Arc::new(EventEmitter::new(session, 1).with_sink(Some(sink.clone() as _)));
    (ctx, sink)
}

pub(crate) fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.type_name()).collect()
}

/// `(type, call_id)` of the call-related events.
pub(crate) fn call_events(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { call_id, .. } => Some(("tool.call".to_owned(), call_id.to_string())),
            EventKind::ToolResult { call_id, .. } => Some(("tool.result".to_owned(), call_id.to_string())),
            _ => None,
        })
        .collect()
}

/// Everything an engine test inspects.
pub(crate) struct Harness {
    pub(crate) engine: Arc<Engine>,
    pub(crate) llm: Arc<ScriptedLlm>,
    pub(crate) recorder: Arc<MemoryRecorder>,
}

pub(crate) fn harness(catalog: Arc<Catalog>, turns: Vec<ScriptedTurn>, config: EngineConfig) -> Harness {
    harness_with(catalog, turns, config, |deps| deps)
}

pub(crate) fn harness_with(
    catalog: Arc<Catalog>,
    turns: Vec<ScriptedTurn>,
    config: EngineConfig,
    adjust: impl FnOnce(Deps) -> Deps,
) -> Harness {
    let llm = Arc::new(ScriptedLlm::new(turns));
    let recorder = Arc::new(MemoryRecorder::new());
    let mut deps = Deps::new(llm.clone(), catalog, env());
    deps.recorder = Some(recorder.clone());
    deps.config = config;
    let engine = Arc::new(Engine::new(adjust(deps)).unwrap());
    Harness {
        engine,
        llm,
        recorder,
    }
}

/// Runs a prompt to the end and returns its events.
pub(crate) async fn run_to_end(engine: &Engine, session: &str, prompt: &str) -> Vec<Event> {
    let run = engine.run(&SessionId::from(session), prompt).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(20), run.collect::<Vec<_>>())
        .await
        .expect("the run finished within 20 s")
}

/// The `result` event's stop reason and text.
pub(crate) fn stop_of(events: &[Event]) -> (engine_ports::StopReason, String) {
    match &events.last().expect("events").kind {
        EventKind::Result { stop, text, .. } => (*stop, text.clone()),
        other => panic!("last event is {other:?}, not result"),
    }
}

/// The tool results of the run's events, as `(call_id, content, is_error)`.
pub(crate) fn results_of(events: &[Event]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.to_string(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

pub(crate) fn config() -> EngineConfig {
    EngineConfig {
        model: "scripted".to_owned(),
        approve: Approve::All,
        ..EngineConfig::default()
    }
}
