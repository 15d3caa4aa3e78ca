//! The sessions the server has live: each bound to its engine (the shared one, or a
//! private one with the session's client MCP servers), at most the factory's cap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use engine_core::{Engine, Run};
use engine_ports::{PermissionMode, SessionId};
use tokio_util::task::TaskTracker;

use super::error::ApiError;
use engine_core::host::{HostedSession, ToolEntry};

/// How long closing a session waits for its run to finish its bookkeeping.
const RUN_DRAIN: Duration = Duration::from_secs(10);

/// One live session.
pub(crate) struct HttpSession {
    id: SessionId,
    engine: Arc<Engine>,
    session_engine: Mutex<Option<Box<dyn HostedSession>>>,
    /// Held while a run starts or the session is deleted; `true` once deleted.
    gate: tokio::sync::Mutex<bool>,
    /// The task forwarding the current run's events (at most one at a time).
    runs: TaskTracker,
}

impl HttpSession {
    fn new(id: SessionId, session_engine: Box<dyn HostedSession>) -> Self {
        Self {
            id,
            engine: Arc::clone(session_engine.engine()),
            session_engine: Mutex::new(Some(session_engine)),
            gate: tokio::sync::Mutex::new(false),
            runs: TaskTracker::new(),
        }
    }

    /// The session id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// The engine it runs on.
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// `running`, `awaiting_approval` (a run waits for an ask's verdict),
    /// `awaiting_input` (a run waits for the answer to a server's question) or `idle`.
    pub(crate) fn state(&self) -> &'static str {
        if !self.engine.pending_asks(&self.id).is_empty() {
            "awaiting_approval"
        } else if !self.engine.pending_elicitations(&self.id).is_empty() {
            "awaiting_input"
        } else if self.engine.is_running(&self.id) {
            "running"
        } else {
            "idle"
        }
    }

    /// The tools of its engine in `mode` (empty once closed).
    pub(crate) fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry> {
        lock(&self.session_engine)
            .as_ref()
            .map(|engine| engine.tools(mode))
            .unwrap_or_default()
    }

    /// Starts a run of `text` and hands it to `forward` (spawned, tracked).
    ///
    /// # Errors
    /// 404 once deleted, 409 while a run is in progress (here or in another process
    /// sharing the store), 503 when closed.
    pub(crate) async fn start_run<F, Fut>(&self, text: String, forward: F) -> Result<(), ApiError>
    where
        F: FnOnce(Run) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let deleted = self.gate.lock().await;
        if *deleted {
            return Err(ApiError::unknown_session(self.id.as_str()));
        }
        let run = self.engine.run(&self.id, text)?.started().await?;
        self.runs.spawn(forward(run));
        Ok(())
    }

    /// Cancels the run, waits (bounded) until its events are all out, then closes the
    /// session's engine: a private engine closes its client MCP servers, the shared
    /// engine is left alone. No run starts afterwards.
    pub(crate) async fn close(&self) {
        *self.gate.lock().await = true;
        self.engine.cancel(&self.id);
        self.runs.close();
        if tokio::time::timeout(RUN_DRAIN, self.runs.wait()).await.is_err() {
            tracing::warn!(session_id = %self.id, "the run did not finish within {RUN_DRAIN:?} of its cancellation");
        }
        let session_engine = lock(&self.session_engine).take();
        if let Some(session_engine) = session_engine
            && let Err(error) = session_engine.close().await
        {
            tracing::warn!(session_id = %self.id, %error, "closing the session's engine failed");
        }
    }
}

/// The live sessions and the cap on them.
pub(crate) struct Sessions {
    registry: Mutex<Registry>,
    limit: usize,
}

#[derive(Default)]
struct Registry {
    live: HashMap<SessionId, Arc<HttpSession>>,
    reserved: usize,
    /// Sessions whose deletion is under way (with the number of deletions): no
    /// request may revive them.
    deleting: HashMap<SessionId, usize>,
}

/// A reserved place under the cap; given back on drop unless filled.
pub(crate) struct Slot<'a> {
    sessions: &'a Sessions,
    armed: bool,
}

impl Slot<'_> {
    /// Registers `session_engine` as the live session `id`; when `id` became live
    /// meanwhile (two requests adopting one stored session), that one wins.
    ///
    /// # Errors
    /// 404 while `id` is being deleted; `session_engine` is handed back to be closed.
    pub(crate) fn fill(
        mut self,
        id: SessionId,
        session_engine: Box<dyn HostedSession>,
    ) -> Result<Arc<HttpSession>, (ApiError, Box<dyn HostedSession>)> {
        let mut registry = self.sessions.registry();
        registry.reserved = registry.reserved.saturating_sub(1);
        self.armed = false;
        if registry.deleting.contains_key(&id) {
            return Err((ApiError::unknown_session(id.as_str()), session_engine));
        }
        let session = registry
            .live
            .entry(id.clone())
            .or_insert_with(|| Arc::new(HttpSession::new(id, session_engine)));
        Ok(Arc::clone(session))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut registry = self.sessions.registry();
            registry.reserved = registry.reserved.saturating_sub(1);
        }
    }
}

impl Sessions {
    /// At most `limit` live sessions.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            registry: Mutex::default(),
            limit,
        }
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        lock(&self.registry)
    }

    /// A place for one more session.
    ///
    /// # Errors
    /// 429 when `limit` sessions are live (or being created).
    pub(crate) fn reserve(&self) -> Result<Slot<'_>, ApiError> {
        let mut registry = self.registry();
        if registry.live.len() + registry.reserved >= self.limit {
            return Err(ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many sessions: {} are live; delete one (DELETE /v1/sessions/{{id}}) first",
                    self.limit
                ),
            ));
        }
        registry.reserved += 1;
        Ok(Slot {
            sessions: self,
            armed: true,
        })
    }

    /// The live session `id`.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<HttpSession>> {
        self.registry().live.get(id).cloned()
    }

    /// Starts deleting `id`: takes the live session out (it gets no new requests)
    /// and keeps `id` from being revived until the [`Deletion`] is dropped.
    pub(crate) fn begin_delete(&self, id: &SessionId) -> (Option<Arc<HttpSession>>, Deletion<'_>) {
        let mut registry = self.registry();
        *registry.deleting.entry(id.clone()).or_default() += 1;
        let live = registry.live.remove(id);
        let deletion = Deletion {
            sessions: self,
            id: id.clone(),
        };
        (live, deletion)
    }

    /// Whether `id` is being deleted.
    pub(crate) fn is_deleting(&self, id: &SessionId) -> bool {
        self.registry().deleting.contains_key(id)
    }

    /// Takes every live session out.
    pub(crate) fn drain(&self) -> Vec<Arc<HttpSession>> {
        self.registry().live.drain().map(|(_, session)| session).collect()
    }

    /// Every live session.
    pub(crate) fn all(&self) -> Vec<Arc<HttpSession>> {
        self.registry().live.values().cloned().collect()
    }
}

/// A deletion under way; dropping it lets the id be used again.
pub(crate) struct Deletion<'a> {
    sessions: &'a Sessions,
    id: SessionId,
}

impl Drop for Deletion<'_> {
    fn drop(&mut self) {
        let mut registry = self.sessions.registry();
        if let Some(count) = registry.deleting.get_mut(&self.id) {
            *count -= 1;
            if *count == 0 {
                registry.deleting.remove(&self.id);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
