//! [`AskRegistry`]: pending permission asks of one session, answered by the host.

use std::collections::HashMap;
use std::sync::Mutex;

use engine_ports::Verdict;
use tokio::sync::oneshot;

/// The open asks of a session. The dispatcher registers an ask before emitting its
/// `permission.ask` event (so an answer that arrives right away is kept), then waits;
/// the host answers with [`AskRegistry::answer`].
#[derive(Debug, Default)]
pub struct AskRegistry {
    open: Mutex<HashMap<String, oneshot::Sender<Verdict>>>,
}

impl AskRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens an ask and returns where its verdict arrives.
    pub fn open(&self, ask_id: &str) -> oneshot::Receiver<Verdict> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(ask_id.to_owned(), tx);
        rx
    }

    /// Answers an open ask; `false` for an unknown or already answered ask.
    pub fn answer(&self, ask_id: &str, verdict: Verdict) -> bool {
        match self.lock().remove(ask_id) {
            Some(tx) => tx.send(verdict).is_ok(),
            None => false,
        }
    }

    /// Forgets an ask that will not be waited for any more.
    pub fn close(&self, ask_id: &str) {
        self.lock().remove(ask_id);
    }

    /// The ids of the open asks, sorted.
    pub fn open_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Verdict>>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
