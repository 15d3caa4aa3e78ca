//! The sessions of one ACP connection: each with its engine, the handle that closes
//! a private engine, and whether a prompt is in flight.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use engine_core::Engine;
use engine_ports::{SessionId, Verdict};

use crate::factory::{SessionEngine, SessionEngineFactory};

/// One ACP session.
pub(crate) struct Session {
    /// The id the client uses (32 hex digits).
    pub(crate) id: SessionId,
    /// The engine it runs on (shared, or private with its client MCP servers).
    pub(crate) engine: Arc<Engine>,
    /// Closes a private engine; taken when the connection ends.
    handle: Mutex<Option<SessionEngine>>,
    /// A `session/prompt` is in flight (set before its run starts, cleared before its
    /// response goes out).
    prompting: AtomicBool,
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

    fn take_handle(&self) -> Option<SessionEngine> {
        self.handle.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// Every session of one connection, and what creating one needs.
pub(crate) struct Sessions {
    pub(crate) factory: SessionEngineFactory,
    workspace: PathBuf,
    open: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    pub(crate) fn new(factory: SessionEngineFactory, workspace: PathBuf) -> Self {
        Self {
            factory,
            workspace,
            open: Mutex::default(),
        }
    }

    /// The canonical workspace root.
    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Registers a session created on `engine`.
    pub(crate) fn insert(&self, id: &str, engine: SessionEngine) -> Arc<Session> {
        let session = Arc::new(Session {
            id: SessionId::from(id),
            engine: Arc::clone(engine.engine()),
            handle: Mutex::new(Some(engine)),
            prompting: AtomicBool::new(false),
        });
        self.lock().insert(id.to_owned(), Arc::clone(&session));
        session
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
            .map(SessionEngine::close);
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
