//! [`InMemoryMemory`]: the `MemoryStore` used without a memory directory (and by
//! tests); nothing survives the process.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine_ports::{
    Clock, MemoryDocument, MemoryEntry, MemoryError, MemoryHit, MemoryIndexEntry, MemoryPrefix,
    MemoryRevision, MemorySearch, MemoryStore, MemoryWrite, SystemClock,
};

/// One memory scope held in memory, with the same rules as every store (it applies
/// writes through [`MemoryDocument`]).
pub struct InMemoryMemory {
    state: Mutex<State>,
    clock: Arc<dyn Clock>,
}

#[derive(Default)]
struct State {
    document: MemoryDocument,
    /// The keyword index of the current document, built by the first search after a
    /// change.
    search: Option<Arc<MemorySearch>>,
}

impl std::fmt::Debug for InMemoryMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryMemory")
            .field("live_keys", &self.lock().document.live_keys())
            .finish_non_exhaustive()
    }
}

impl Default for InMemoryMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryMemory {
    /// An empty scope on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty scope stamping writes with `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            state: Mutex::default(),
            clock,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl MemoryStore for InMemoryMemory {
    async fn get(&self, key: &str) -> Result<Option<MemoryEntry>, MemoryError> {
        Ok(self.lock().document.get(key))
    }

    async fn put_many(&self, writes: Vec<MemoryWrite>) -> Result<Vec<MemoryEntry>, MemoryError> {
        let now = self.clock.now();
        let mut state = self.lock();
        let applied = state.document.put_many(writes, now)?;
        state.search = None;
        Ok(applied.outcome)
    }

    async fn forget(&self, key: &str, expected_version: u64, writer: &str) -> Result<u64, MemoryError> {
        let now = self.clock.now();
        let mut state = self.lock();
        let applied = state.document.forget(key, expected_version, writer, now)?;
        state.search = None;
        Ok(applied.outcome)
    }

    async fn prefix(&self, prefix: &str, limit: usize) -> Result<MemoryPrefix, MemoryError> {
        Ok(self.lock().document.prefix(prefix, limit))
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<MemoryHit>, MemoryError> {
        let search = {
            let mut state = self.lock();
            let state = &mut *state;
            Arc::clone(
                state
                    .search
                    .get_or_insert_with(|| Arc::new(MemorySearch::build(state.document.live_entries()))),
            )
        };
        Ok(search.search(query, limit))
    }

    async fn index(&self) -> Result<Vec<MemoryIndexEntry>, MemoryError> {
        Ok(self.lock().document.index())
    }

    async fn history(&self, key: &str) -> Result<Vec<MemoryRevision>, MemoryError> {
        Ok(self.lock().document.history(key))
    }
}
