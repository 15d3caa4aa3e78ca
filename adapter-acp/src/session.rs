//! The sessions of one ACP connection: each with its engine, the handle that closes
//! a private engine, and whether a prompt is in flight; what the client said it can
//! do in `initialize`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use engine_core::Engine;
use engine_ports::{SessionId, SessionStore, Usage, Verdict};
use tokio::sync::Notify;
use tokio_util::task::TaskTracker;

use engine_core::host::{HostedSession, SessionHost};

/// How long `session/close` waits for a cancelled prompt to finish its bookkeeping
/// (last save, `result` logged) before it closes the engine anyway.
const CLOSE_DRAIN: Duration = Duration::from_secs(10);

/// One ACP session.
pub(crate) struct Session {
    /// The id the client uses (32 hex digits).
    pub(crate) id: SessionId,
    /// The engine it runs on (shared, or private with its client MCP servers).
    pub(crate) engine: Arc<Engine>,
    /// Closes a private engine; taken when the connection ends.
    handle: Mutex<Option<Box<dyn HostedSession>>>,
    /// A `session/prompt` is in flight (set before its run starts, cleared before its
    /// response goes out).
    prompting: AtomicBool,
    /// Woken when a prompt ends.
    idle: Notify,
    /// The session's tokens per model as this connection last knew them (read from
    /// the store when the session opened or a prompt ended, added to at each turn),
    /// for the cost in `usage_update`s.
    spent: Mutex<BTreeMap<String, Usage>>,
}

impl Session {
    /// Marks a prompt as started; `false` when one already is.
    pub(crate) fn begin_prompt(&self) -> bool {
        self.prompting
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Marks the prompt as finished.
    pub(crate) fn end_prompt(&self) {
        self.prompting.store(false, Ordering::SeqCst);
        self.idle.notify_waiters();
    }

    /// Waits (at most `limit`) until no prompt is in flight; `false` on expiry.
    async fn wait_idle(&self, limit: Duration) -> bool {
        let wait = async {
            loop {
                let woken = self.idle.notified();
                if !self.is_prompting() {
                    return;
                }
                woken.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }

    /// Whether a prompt is in flight.
    pub(crate) fn is_prompting(&self) -> bool {
        self.prompting.load(Ordering::SeqCst) || self.engine.is_running(&self.id)
    }

    /// Denies every pending ask, then cancels the run (if any).
    pub(crate) fn cancel(&self) {
        for ask in self.engine.pending_asks(&self.id) {
            self.engine.approve(&self.id, &ask, Verdict::Deny);
        }
        self.engine.cancel(&self.id);
    }

    /// Replaces the session's tokens per model (read from the store).
    pub(crate) fn set_spent(&self, spent: BTreeMap<String, Usage>) {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner) = spent;
    }

    /// Adds a turn's `usage` on `model`; the session's tokens per model after it.
    pub(crate) fn add_spent(&self, model: &str, usage: Usage) -> BTreeMap<String, Usage> {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if !model.is_empty() && usage != Usage::default() {
            *spent.entry(model.to_owned()).or_default() += usage;
        }
        spent.clone()
    }

    fn take_handle(&self) -> Option<Box<dyn HostedSession>> {
        self.handle.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// Every session of one connection, and what creating one needs.
pub(crate) struct Sessions {
    pub(crate) host: Arc<dyn SessionHost>,
    /// Where sessions are stored (`session/load`, `session/list`).
    pub(crate) store: Arc<dyn SessionStore>,
    workspace: PathBuf,
    open: Mutex<HashMap<String, Arc<Session>>>,
    /// The client advertised form elicitation in `initialize`.
    client_elicitation: AtomicBool,
    /// The tasks following prompts: they outlive the connection, so a prompt
    /// running when it ends can finish (within the drain bound).
    pub(crate) prompts: TaskTracker,
}

impl Sessions {
    pub(crate) fn new(host: Arc<dyn SessionHost>, store: Arc<dyn SessionStore>, workspace: PathBuf) -> Self {
        Self {
            host,
            store,
            workspace,
            open: Mutex::default(),
            client_elicitation: AtomicBool::new(false),
            prompts: TaskTracker::new(),
        }
    }

    /// The canonical workspace root.
    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Remembers whether the client can answer form elicitations
    /// (`clientCapabilities.elicitation.form` in `initialize`).
    pub(crate) fn set_client_elicitation(&self, form: bool) {
        self.client_elicitation.store(form, Ordering::SeqCst);
    }

    /// Whether the client can answer form elicitations.
    pub(crate) fn client_elicitation(&self) -> bool {
        self.client_elicitation.load(Ordering::SeqCst)
    }

    /// Registers a session created on `engine`; when `id` is open already (two loads
    /// racing), `engine` is handed back to be closed.
    pub(crate) fn insert(
        &self,
        id: &str,
        engine: Box<dyn HostedSession>,
    ) -> Result<Arc<Session>, Box<dyn HostedSession>> {
        let mut open = self.lock();
        if open.contains_key(id) {
            return Err(engine);
        }
        let session = Arc::new(Session {
            id: SessionId::from(id),
            engine: Arc::clone(engine.engine()),
            handle: Mutex::new(Some(engine)),
            prompting: AtomicBool::new(false),
            idle: Notify::new(),
            spent: Mutex::default(),
        });
        open.insert(id.to_owned(), Arc::clone(&session));
        Ok(session)
    }

    /// Whether `id` is open on this connection.
    pub(crate) fn is_open(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    /// `session/close`: takes the session out (no request reaches it any more),
    /// denies its asks and cancels its prompt, waits (bounded) for the prompt to
    /// finish, then closes its engine — a private engine with its client MCP servers
    /// and stdio children, giving its slot back. `false` for an unknown session.
    pub(crate) async fn close(&self, id: &str) -> bool {
        let Some(session) = self.lock().remove(id) else {
            return false;
        };
        session.cancel();
        if !session.wait_idle(CLOSE_DRAIN).await {
            tracing::warn!(session_id = %id, "the prompt did not finish within {CLOSE_DRAIN:?} of its cancellation; closing the session anyway");
        }
        if let Some(handle) = session.take_handle()
            && let Err(error) = handle.close().await
        {
            tracing::warn!(session_id = %id, %error, "closing an ACP session's engine failed");
        }
        true
    }

    /// The session `id`, if open.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// How many sessions are open.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// `session/cancel`: denies the session's pending asks and cancels its run; an
    /// unknown or idle session is ignored (a notification has no answer).
    pub(crate) fn cancel(&self, id: &str) {
        if let Some(session) = self.get(id) {
            session.cancel();
        }
    }

    /// Once the connection ended: waits (at most `limit`) for the running prompts to
    /// finish; `false` when some were still running then.
    pub(crate) async fn drain(&self, limit: Duration) -> bool {
        self.prompts.close();
        if self.prompts.is_empty() {
            return true;
        }
        if limit.is_zero() {
            return false;
        }
        let running = self.prompts.len();
        tracing::info!(
            running,
            "the connection ended: letting running prompts finish for {limit:?}"
        );
        let finished = tokio::time::timeout(limit, self.prompts.wait()).await.is_ok();
        if !finished {
            tracing::warn!(
                running = self.prompts.len(),
                "prompts still running after {limit:?}: cancelling them"
            );
        }
        finished
    }

    /// Closes every session: runs cancelled and asks denied, then each private engine
    /// closed (its client MCP servers and stdio children with it). Failures are
    /// WARNs; the rest still close.
    pub(crate) async fn close_all(&self) {
        let sessions: Vec<Arc<Session>> = self.lock().drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.cancel();
        }
        let closes = sessions
            .iter()
            .filter_map(|s| s.take_handle())
            .map(HostedSession::close);
        for outcome in futures::future::join_all(closes).await {
            if let Err(error) = outcome {
                tracing::warn!(%error, "closing an ACP session's engine failed");
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
