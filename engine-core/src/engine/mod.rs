//! The agent loop: [`Engine`], built from [`Deps`], runs sessions turn by turn and
//! streams D11 events through a [`Run`].

mod compaction;
mod config;
mod hook_points;
mod live;
mod run;
mod served;
mod turn_loop;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use engine_ports::{
    Clock, CommandExpander, EventLog, EventSink, LlmProvider, PermissionMode, PermissionPolicy,
    PermissionRules, SessionId, SessionSnapshot, SessionStore, StoreError, ToolCallRecorder, ToolHooks,
};
use tokio::sync::{mpsc, oneshot};

pub use config::{DEFAULT_COMMAND_TIMEOUT, EngineConfig, Limits};
pub use hook_points::MAX_STOP_HOOK_CONTINUATIONS;
pub use run::Run;
pub use served::{OfferedTool, ServedAnswers, ServedCall, ServedOutcome, ServedRun};

use self::live::LiveRun;
use crate::catalog::{Catalog, CatalogUpdates};
use crate::context::ConversationSizes;
use crate::delegation::ChildEngines;
use crate::disclosure::{Disclosure, TurnTools};
use crate::dispatch::{AskAnswer, DispatchConfig, Dispatcher};
use crate::elicitation::{ElicitationAnswerError, ElicitationResponse};
use crate::environment::Environment;
use crate::memory::InMemoryStore;
use crate::permission::DefaultPolicy;
use crate::tool_search::TOOL_SEARCH_NAME;

/// What an [`Engine`] is built from. `llm`, `catalog` and `environment` are required;
/// the rest is optional.
#[derive(Clone)]
pub struct Deps {
    /// The model.
    pub llm: Arc<dyn LlmProvider>,
    /// The frozen catalog shared by every session of this engine (generation 0 of
    /// `catalog_updates`, when given).
    pub catalog: Arc<Catalog>,
    /// Newer catalogs, taken at run starts and turn boundaries (a `catalog.changed`
    /// event tells a run that switched); without it the catalog never changes.
    pub catalog_updates: Option<Arc<dyn CatalogUpdates>>,
    /// The execution context given to tools.
    pub environment: Environment,
    /// The permission policy (default: [`DefaultPolicy`] from `interactive` and
    /// `approve`).
    pub policy: Option<Arc<dyn PermissionPolicy>>,
    /// The operator's permission rules (settings files), checked before the hook and
    /// the policy.
    pub rules: Option<Arc<dyn PermissionRules>>,
    /// Operator hooks.
    pub hooks: Option<Arc<dyn ToolHooks>>,
    /// Session snapshots (default: an in-memory store owned by the engine).
    pub store: Option<Arc<dyn SessionStore>>,
    /// The audit recorder.
    pub recorder: Option<Arc<dyn ToolCallRecorder>>,
    /// The clock (events carry `time`, records carry timings).
    pub clock: Option<Arc<dyn Clock>>,
    /// Live event fan-out.
    pub sink: Option<Arc<dyn EventSink>>,
    /// Durable event log.
    pub event_log: Option<Arc<dyn EventLog>>,
    /// The slash-command expander chain applied to every prompt.
    pub commands: Option<Arc<dyn CommandExpander>>,
    /// Where delegation tools get child engines; without it they answer that
    /// delegation is not available (a child engine never has one).
    pub children: Option<Arc<dyn ChildEngines>>,
    /// Settings.
    pub config: EngineConfig,
}

impl Deps {
    /// The required dependencies, with every optional one absent and default settings.
    pub fn new(llm: Arc<dyn LlmProvider>, catalog: Arc<Catalog>, environment: Environment) -> Self {
        Self {
            llm,
            catalog,
            catalog_updates: None,
            environment,
            policy: None,
            rules: None,
            hooks: None,
            store: None,
            recorder: None,
            clock: None,
            sink: None,
            event_log: None,
            commands: None,
            children: None,
            config: EngineConfig::default(),
        }
    }
}

/// An engine that cannot be built or cannot do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// Progressive tools are on and the catalog holds a tool named `ToolSearch`.
    #[error(
        "the catalog holds a tool named {TOOL_SEARCH_NAME:?}, which the engine reserves for progressive tools"
    )]
    ReservedToolName,
    /// A setting is out of range.
    #[error("invalid engine configuration: {0}")]
    InvalidConfig(String),
    /// The session already has a run in progress: in this engine, or elsewhere
    /// (another engine or process) as the store's run lease says.
    #[error("session {:?} already has a run in progress", .0.as_str())]
    Busy(SessionId),
    /// The engine was closed.
    #[error("the engine is closed")]
    Closed,
    /// The session store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EngineError {
    /// A failed [`SessionStore::acquire_run`]: a held lease is [`EngineError::Busy`],
    /// the one answer hosts give for a session that is running anywhere.
    fn from_lease(error: StoreError) -> Self {
        match error {
            StoreError::Busy { id } => Self::Busy(id),
            other => Self::Store(other),
        }
    }
}

/// The agent loop over one catalog. Cheap to share (`Arc<Engine>`); runs of different
/// sessions proceed concurrently, one run per session at a time.
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    llm: Arc<dyn LlmProvider>,
    catalog: Arc<Catalog>,
    current: RwLock<(u64, Arc<Catalog>)>,
    catalog_updates: Option<Arc<dyn CatalogUpdates>>,
    environment: Environment,
    policy: Arc<dyn PermissionPolicy>,
    rules: Option<Arc<dyn PermissionRules>>,
    hooks: Option<Arc<dyn ToolHooks>>,
    store: Arc<dyn SessionStore>,
    recorder: Option<Arc<dyn ToolCallRecorder>>,
    clock: Option<Arc<dyn Clock>>,
    sink: Option<Arc<dyn EventSink>>,
    event_log: Option<Arc<dyn EventLog>>,
    commands: Option<Arc<dyn CommandExpander>>,
    children: Option<Arc<dyn ChildEngines>>,
    config: EngineConfig,
    /// The model's context window in tokens (the setting, else the table's).
    context_window: u64,
    /// The model's output limits (the setting, else the table's).
    output_limits: crate::context::OutputLimits,
    dispatcher: Dispatcher,
    live: Mutex<HashMap<SessionId, Arc<LiveRun>>>,
    /// The message sizes of sessions' conversations, kept between runs (a run takes
    /// its session's and puts it back), so a turn's estimate counts only new messages.
    sizes: Mutex<HashMap<SessionId, ConversationSizes>>,
    /// The sessions whose first run on this engine fired `SessionStart` (at most
    /// [`KEPT_STARTED`], then forgotten).
    started: Mutex<HashSet<SessionId>>,
    closed: std::sync::atomic::AtomicBool,
}

/// Sessions whose message sizes the engine keeps between runs; past it the kept
/// sizes are dropped (they only spare recounting a conversation).
const KEPT_SIZES: usize = 256;

/// Sessions the engine remembers having started; past it the set is forgotten and a
/// forgotten session's next run counts as a resume.
const KEPT_STARTED: usize = 16_384;

/// The model a session's run uses, with the limits that follow from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SessionModel {
    /// The name sent with every request.
    pub(super) name: String,
    /// Its context window in tokens: the configured one, else the table's.
    pub(super) context_window: u64,
    /// Its output limits: the configured limit, else the table's.
    pub(super) output_limits: crate::context::OutputLimits,
}

impl SessionModel {
    /// `model` under `config`'s `context_window` and `max_tokens` (both checked
    /// non-zero by [`Engine::new`]).
    fn of(config: &EngineConfig, model: &str) -> Self {
        let context_window = config
            .context_window
            .unwrap_or_else(|| crate::context::context_window_for(model));
        let known = crate::context::output_limits_for(model);
        let output_limits = match config.max_tokens {
            Some(given) => crate::context::OutputLimits {
                default: given,
                max: known.max.map(|max| max.max(given)),
            },
            None => known,
        };
        Self {
            name: model.to_owned(),
            context_window,
            output_limits,
        }
    }
}

impl Inner {
    /// The model `snapshot`'s session runs on: its own choice, else the engine's.
    fn session_model(&self, snapshot: &SessionSnapshot) -> SessionModel {
        match snapshot.model.as_deref() {
            Some(model) if model != self.config.model => SessionModel::of(&self.config, model),
            _ => SessionModel {
                name: self.config.model.clone(),
                context_window: self.context_window,
                output_limits: self.output_limits,
            },
        }
    }

    /// The specs a turn advertises without the tools a bare `deny` rule hides:
    /// the model never sees a tool it may never call.
    fn visible(&self, tools: Arc<TurnTools>) -> Arc<TurnTools> {
        let Some(rules) = &self.rules else {
            return tools;
        };
        let hidden = |spec: &engine_ports::ToolSpec| rules.hides(spec.name()).is_some();
        if !tools.specs.iter().any(hidden) {
            return tools;
        }
        let specs = tools.specs.iter().filter(|spec| !hidden(spec)).cloned().collect();
        Arc::new(TurnTools::new(specs))
    }

    /// Whether this is `session`'s first run on this engine (remembering that it
    /// ran).
    fn first_run_here(&self, session: &SessionId) -> bool {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        if started.contains(session) {
            return false;
        }
        if started.len() >= KEPT_STARTED {
            started.clear();
        }
        started.insert(session.clone());
        true
    }

    /// The kept message sizes of `session`'s conversation (empty when none are kept).
    fn take_sizes(&self, session: &SessionId) -> ConversationSizes {
        self.sizes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session)
            .unwrap_or_default()
    }

    /// Keeps `sizes` for `session`'s next run.
    fn keep_sizes(&self, session: &SessionId, sizes: ConversationSizes) {
        let mut kept = self.sizes.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= KEPT_SIZES {
            kept.clear();
        }
        kept.insert(session.clone(), sizes);
    }

    fn current_catalog(&self) -> (u64, Arc<Catalog>) {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The newest catalog: asks `catalog_updates` for one newer than the engine's
    /// current and remembers it.
    async fn latest_catalog(&self) -> (u64, Arc<Catalog>) {
        let current = self.current_catalog();
        let Some(updates) = &self.catalog_updates else {
            return current;
        };
        match updates.newer_than(current.0).await {
            Some(newer) => {
                let mut slot = self.current.write().unwrap_or_else(PoisonError::into_inner);
                if newer.0 > slot.0 {
                    *slot = newer.clone();
                }
                newer
            }
            None => current,
        }
    }
}

/// Bound of a run's event channel, in deliveries (one event, or up to 64 deltas the
/// model streamed at once); the run waits when the consumer lags.
const RUN_CHANNEL_BOUND: usize = 256;

impl Engine {
    /// Builds an engine.
    ///
    /// # Errors
    /// [`EngineError::ReservedToolName`] when progressive tools are on and the catalog
    /// holds `ToolSearch`; [`EngineError::InvalidConfig`] for `max_parallel_reads == 0`
    /// or a `context_window` or `max_tokens` of 0.
    pub fn new(deps: Deps) -> Result<Self, EngineError> {
        let config = deps.config;
        if config.context_window == Some(0) {
            return Err(EngineError::InvalidConfig(
                "context_window must be at least 1 token".to_owned(),
            ));
        }
        if config.max_tokens == Some(0) {
            return Err(EngineError::InvalidConfig(
                "max_tokens must be at least 1 token".to_owned(),
            ));
        }
        let SessionModel {
            context_window,
            output_limits,
            ..
        } = SessionModel::of(&config, &config.model);
        let Some(max_parallel_reads) = std::num::NonZeroUsize::new(config.max_parallel_reads) else {
            return Err(EngineError::InvalidConfig(
                "max_parallel_reads must be at least 1".to_owned(),
            ));
        };
        if config.disclosure.is_progressive() && deps.catalog.lookup(TOOL_SEARCH_NAME).is_some() {
            return Err(EngineError::ReservedToolName);
        }
        let policy = deps
            .policy
            .unwrap_or_else(|| Arc::new(DefaultPolicy::new(config.interactive, config.approve)));
        let store = deps.store.unwrap_or_else(|| Arc::new(InMemoryStore::new()));
        let dispatcher = Dispatcher::new(DispatchConfig {
            max_parallel_reads,
            cancel_grace: config.cancel_grace,
            elicitation_timeout: config.elicitation_timeout,
        });
        Ok(Self {
            inner: Arc::new(Inner {
                llm: deps.llm,
                current: RwLock::new((0, Arc::clone(&deps.catalog))),
                catalog: deps.catalog,
                catalog_updates: deps.catalog_updates,
                environment: deps.environment,
                policy,
                rules: deps.rules,
                hooks: deps.hooks,
                store,
                recorder: deps.recorder,
                clock: deps.clock,
                sink: deps.sink,
                event_log: deps.event_log,
                commands: deps.commands,
                children: deps.children,
                config,
                context_window,
                output_limits,
                dispatcher,
                live: Mutex::default(),
                sizes: Mutex::default(),
                started: Mutex::default(),
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The catalog the engine was built with.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.inner.catalog
    }

    /// The newest catalog a run of this engine has switched to (the built one until a
    /// `catalog_updates` source offered a newer one), without I/O.
    pub fn current_catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.inner.current_catalog().1)
    }

    /// The settings.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// The disclosure mode a turn over `catalog` uses: the configured one, with
    /// `Auto` resolved against this engine's context window ([`Disclosure::resolve`]).
    pub fn disclosure_for(&self, catalog: &Catalog) -> Disclosure {
        self.inner
            .config
            .disclosure
            .resolve(catalog, self.inner.context_window)
    }

    /// The model's context window in tokens: `config.context_window`, else the
    /// table's entry for `config.model`.
    pub fn context_window(&self) -> u64 {
        self.inner.context_window
    }

    /// The model's output limits: `config.max_tokens` as the limit, else the table's
    /// entry for `config.model`.
    pub fn output_limits(&self) -> crate::context::OutputLimits {
        self.inner.output_limits
    }

    /// The session store (the engine's own in-memory store when none was given).
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// The command expander chain, if any.
    pub fn commands(&self) -> Option<&Arc<dyn CommandExpander>> {
        self.inner.commands.as_ref()
    }

    /// Starts a run of `session` with `prompt`, creating the session (in
    /// `config.mode`) when the store does not hold it. Needs a tokio runtime.
    ///
    /// The run is a task on the runtime; read its events from a task too (as
    /// `mecated` and its faces do). A reader in `block_on`, on a thread outside the
    /// runtime, pays a cross-thread wake-up for each event it waits on.
    ///
    /// The run takes the session's run lease from the store before it loads the
    /// session and holds it until its last save and its `result` is logged (it is
    /// released before `result` is delivered); [`Run::started`] reports a refusal.
    ///
    /// # Errors
    /// [`EngineError::Busy`] when the session has a run in progress in this engine,
    /// [`EngineError::Closed`] after [`Engine::close`].
    pub fn run(&self, session: &SessionId, prompt: impl Into<String>) -> Result<Run, EngineError> {
        if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(EngineError::Closed);
        }
        let live = {
            let mut runs = self.inner.lock_live();
            if runs.contains_key(session) {
                return Err(EngineError::Busy(session.clone()));
            }
            let live = Arc::new(LiveRun::new(self.inner.children.is_some()));
            runs.insert(session.clone(), Arc::clone(&live));
            live
        };
        let (tx, rx) = mpsc::channel(RUN_CHANNEL_BOUND);
        let (started_tx, started_rx) = oneshot::channel();
        let cancel = live.cancel.clone();
        let task = turn_loop::RunTask {
            inner: Arc::clone(&self.inner),
            live,
            session: session.clone(),
            prompt: prompt.into(),
            channel: tx,
        };
        // Boxed: the run's future is several KB, and tokio moves an unboxed future
        // about ten times on its way into a task (a tenth of a short run's time
        // went to those copies).
        tokio::spawn(Box::pin(task.run(started_tx)));
        Ok(Run::new(session.clone(), rx, cancel, started_rx))
    }

    /// Creates a session before its first prompt.
    ///
    /// # Errors
    /// The store's error ([`StoreError::AlreadyExists`] for a known id).
    pub async fn create_session(&self, session: &SessionId, mode: PermissionMode) -> Result<(), EngineError> {
        let snapshot = SessionSnapshot::new(session.clone(), mode);
        self.inner.store.create(&snapshot).await?;
        Ok(())
    }

    /// Creates a session before its first prompt, remembering the directory it was
    /// opened for (kept in the snapshot for listings).
    ///
    /// # Errors
    /// The store's error ([`StoreError::AlreadyExists`] for a known id).
    pub async fn create_session_in(
        &self,
        session: &SessionId,
        mode: PermissionMode,
        cwd: &std::path::Path,
    ) -> Result<(), EngineError> {
        let mut snapshot = SessionSnapshot::new(session.clone(), mode);
        snapshot.cwd = Some(cwd.to_path_buf());
        self.inner.store.create(&snapshot).await?;
        Ok(())
    }

    /// Creates a session before its first prompt from a fresh snapshot its host
    /// filled in (mode, directory, chosen model).
    ///
    /// # Errors
    /// The store's error ([`StoreError::AlreadyExists`] for a known id).
    pub async fn create_session_from(&self, snapshot: &SessionSnapshot) -> Result<(), EngineError> {
        self.inner.store.create(snapshot).await?;
        Ok(())
    }

    /// Cancels the session's run; `false` when none is in progress.
    pub fn cancel(&self, session: &SessionId) -> bool {
        match self.inner.lock_live().get(session) {
            Some(live) => {
                live.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels a child of the session's run (a subagent, a `Parallel` branch or call,
    /// a team or a member, by id); `false` when no such child is running.
    pub fn cancel_child(&self, session: &SessionId, child_id: &str) -> bool {
        let live = self.inner.lock_live().get(session).cloned();
        live.and_then(|live| live.delegation.clone())
            .is_some_and(|delegation| delegation.cancel_child(child_id))
    }

    /// Answers a permission ask (a [`Verdict`](engine_ports::Verdict), or an [`AskAnswer`] that may save
    /// the ask's suggested rule); `false` for an unknown or already answered ask.
    pub fn approve(&self, session: &SessionId, ask_id: &str, answer: impl Into<AskAnswer>) -> bool {
        let live = self.inner.lock_live().get(session).cloned();
        live.is_some_and(|live| live.asks.answer(ask_id, answer))
    }

    /// The open asks of the session's run, sorted.
    pub fn pending_asks(&self, session: &SessionId) -> Vec<String> {
        let live = self.inner.lock_live().get(session).cloned();
        live.map(|live| live.asks.open_ids()).unwrap_or_default()
    }

    /// Answers an `elicitation.request` of the session's run: an accept's content
    /// must fit the requested form.
    ///
    /// # Errors
    /// [`ElicitationAnswerError::NotOpen`] when the session has no run or the
    /// elicitation is not open; [`ElicitationAnswerError::InvalidContent`] naming the
    /// field that does not fit (the elicitation stays open for a corrected answer).
    pub fn answer_elicitation(
        &self,
        session: &SessionId,
        elicitation_id: &str,
        response: ElicitationResponse,
    ) -> Result<(), ElicitationAnswerError> {
        let live = self.inner.lock_live().get(session).cloned();
        match live {
            Some(live) => live.asks.answer_elicitation(elicitation_id, response),
            None => Err(ElicitationAnswerError::NotOpen(elicitation_id.to_owned())),
        }
    }

    /// The open elicitations of the session's run, sorted.
    pub fn pending_elicitations(&self, session: &SessionId) -> Vec<String> {
        let live = self.inner.lock_live().get(session).cloned();
        live.map(|live| live.asks.open_elicitation_ids())
            .unwrap_or_default()
    }

    /// Whether the session has a run in progress.
    pub fn is_running(&self, session: &SessionId) -> bool {
        self.inner.lock_live().contains_key(session)
    }

    /// Changes the session's mode (creating the session when unknown), holding the
    /// session's run lease meanwhile.
    ///
    /// # Errors
    /// [`EngineError::Busy`] during a run (here or wherever the lease is held); the
    /// store's errors.
    pub async fn set_mode(&self, session: &SessionId, mode: PermissionMode) -> Result<(), EngineError> {
        self.update(session, mode, |snapshot| snapshot.mode = mode).await
    }

    /// Changes the model the session runs on from its next run on (`None`: the
    /// engine's model), creating the session in `config.mode` when unknown, holding
    /// the session's run lease meanwhile. The name is not checked here: which models
    /// a session may pick is its host's rule.
    ///
    /// # Errors
    /// [`EngineError::Busy`] during a run (here or wherever the lease is held); the
    /// store's errors.
    pub async fn set_model(&self, session: &SessionId, model: Option<String>) -> Result<(), EngineError> {
        let mode = self.inner.config.mode;
        self.update(session, mode, |snapshot| snapshot.model = model)
            .await
    }

    /// The model `session` runs on: the one chosen for it, else `config.model`.
    ///
    /// # Errors
    /// The store's errors (an unknown session runs on `config.model`).
    pub async fn session_model(&self, session: &SessionId) -> Result<String, EngineError> {
        match self.inner.store.load(session).await {
            Ok(snapshot) => Ok(self.inner.session_model(&snapshot).name),
            Err(error) if error.is_not_found() => Ok(self.inner.config.model.clone()),
            Err(error) => Err(error.into()),
        }
    }

    /// The context window of `model` in tokens: `config.context_window`, else the
    /// table's entry for it.
    pub fn context_window_of(&self, model: &str) -> u64 {
        if model == self.inner.config.model {
            return self.inner.context_window;
        }
        SessionModel::of(&self.inner.config, model).context_window
    }

    /// Applies `change` to the session's snapshot (a new one in `mode` when the
    /// store does not hold it) under its run lease.
    async fn update(
        &self,
        session: &SessionId,
        mode: PermissionMode,
        change: impl FnOnce(&mut SessionSnapshot),
    ) -> Result<(), EngineError> {
        if self.is_running(session) {
            return Err(EngineError::Busy(session.clone()));
        }
        let lease = self
            .inner
            .store
            .acquire_run(session)
            .await
            .map_err(EngineError::from_lease)?;
        let mut snapshot = match self.inner.store.load(session).await {
            Ok(snapshot) => snapshot,
            Err(error) if error.is_not_found() => SessionSnapshot::new(session.clone(), mode),
            Err(error) => return Err(error.into()),
        };
        change(&mut snapshot);
        self.inner.store.save(&snapshot).await?;
        lease.release().await;
        Ok(())
    }

    /// Cancels every run and refuses new ones. Idempotent.
    pub fn close(&self) {
        self.inner.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        for live in self.inner.lock_live().values() {
            live.cancel.cancel();
        }
    }
}

impl Inner {
    fn lock_live(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<LiveRun>>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
