//! [`AppStore`]: the store of one process — the JSONL store under `--store-dir`, or
//! the in-memory store — seen through the three ports the engines use.

use std::path::PathBuf;
use std::sync::Arc;

use adapter_jsonlstore::{JsonlStore, SessionPaths, StoreOptions};
use engine_core::InMemoryStore;
use engine_ports::{EventLog, SessionId, SessionStore, StoreError, ToolCallRecorder};

use crate::config::StoreConfig;

/// The session store, event log and tool-call recorder of one process (one value
/// implementing all three ports). Cheap to clone.
#[derive(Clone, Debug)]
pub enum AppStore {
    /// `--store-dir`: the JSONL store.
    Jsonl(Arc<JsonlStore>),
    /// No `--store-dir`: sessions live in memory.
    Memory(Arc<InMemoryStore>),
}

impl AppStore {
    /// Opens the store `config` describes.
    ///
    /// # Errors
    /// [`StoreError`] when the directory cannot be opened (it names the path).
    pub(crate) fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        match config {
            StoreConfig::Memory => Ok(Self::Memory(Arc::new(InMemoryStore::new()))),
            StoreConfig::Dir { path, sync } => {
                let options = StoreOptions {
                    sync: *sync,
                    ..StoreOptions::default()
                };
                JsonlStore::open(path, options).map(|store| Self::Jsonl(Arc::new(store)))
            }
        }
    }

    /// As the engines' `store`.
    pub fn session_store(&self) -> Arc<dyn SessionStore> {
        match self {
            Self::Jsonl(store) => Arc::clone(store) as Arc<dyn SessionStore>,
            Self::Memory(store) => Arc::clone(store) as Arc<dyn SessionStore>,
        }
    }

    /// As the engines' `event_log`.
    pub fn event_log(&self) -> Arc<dyn EventLog> {
        match self {
            Self::Jsonl(store) => Arc::clone(store) as Arc<dyn EventLog>,
            Self::Memory(store) => Arc::clone(store) as Arc<dyn EventLog>,
        }
    }

    /// As the engines' `recorder`.
    pub fn recorder(&self) -> Arc<dyn ToolCallRecorder> {
        match self {
            Self::Jsonl(store) => Arc::clone(store) as Arc<dyn ToolCallRecorder>,
            Self::Memory(store) => Arc::clone(store) as Arc<dyn ToolCallRecorder>,
        }
    }

    /// The store directory (`None` in memory).
    pub fn root(&self) -> Option<PathBuf> {
        match self {
            Self::Jsonl(store) => Some(store.root().to_path_buf()),
            Self::Memory(_) => None,
        }
    }

    /// The files of a session in the JSONL store (`None` in memory).
    pub fn paths(&self, session: &SessionId) -> Option<SessionPaths> {
        match self {
            Self::Jsonl(store) => Some(store.paths(session)),
            Self::Memory(_) => None,
        }
    }

    /// Flushes pending sidecar writes and stops the flusher (JSONL); idempotent.
    pub(crate) fn close(&self) -> Result<(), StoreError> {
        match self {
            Self::Jsonl(store) => store.close(),
            Self::Memory(_) => Ok(()),
        }
    }
}
