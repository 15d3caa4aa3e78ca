//! [`AppStore`]: the store of one process — the JSONL store under `--store-dir`, the
//! PostgreSQL store under `--store-url`, or the in-memory store — seen through the
//! three ports the engines use.

use std::path::PathBuf;
use std::sync::Arc;

use adapter_jsonlstore::{JsonlStore, SessionPaths, StoreOptions};
use adapter_pgstore::PgStore;
use engine_core::InMemoryStore;
use engine_ports::{EventLog, SessionId, SessionStore, StoreError, ToolCallLog, ToolCallRecorder};

use crate::config::StoreConfig;
use crate::error::BuildError;

/// Audit records a process without a store keeps in memory, of all sessions
/// together; past it the oldest are dropped (with one warning), so a long-lived
/// process without `--store-dir` or `--store-url` (a gateway serving calls for days)
/// does not grow with every call.
pub const MEMORY_AUDIT_CAP: usize = 10_000;

/// The session store, event log and tool-call recorder of one process (one value
/// implementing all three ports). Cheap to clone.
#[derive(Clone, Debug)]
pub enum AppStore {
    /// `--store-dir`: the JSONL store.
    Jsonl(Arc<JsonlStore>),
    /// `--store-url`: the PostgreSQL store.
    Postgres(Arc<PgStore>),
    /// Neither: sessions live in memory.
    Memory(Arc<InMemoryStore>),
}

impl AppStore {
    /// Opens the store `config` describes (for PostgreSQL: connects, migrates the
    /// schema and starts renewing leases on the current runtime).
    ///
    /// # Errors
    /// [`BuildError::Store`] when the directory cannot be opened (it names the path),
    /// [`BuildError::Database`] when the database cannot (it names the server).
    pub(crate) async fn open(config: &StoreConfig) -> Result<Self, BuildError> {
        match config {
            StoreConfig::Memory => Ok(Self::Memory(Arc::new(InMemoryStore::with_record_cap(
                MEMORY_AUDIT_CAP,
            )))),
            StoreConfig::Dir { path, sync } => {
                let options = StoreOptions {
                    sync: *sync,
                    ..StoreOptions::default()
                };
                JsonlStore::open(path, options)
                    .map(|store| Self::Jsonl(Arc::new(store)))
                    .map_err(|source| BuildError::Store {
                        path: path.clone(),
                        source: Box::new(source),
                    })
            }
            StoreConfig::Postgres { url, options } => PgStore::open(url, *options)
                .await
                .map(|store| Self::Postgres(Arc::new(store)))
                .map_err(|error| BuildError::Database {
                    url: url.to_string(),
                    reason: error.to_string(),
                }),
        }
    }

    /// As the engines' `store`.
    pub fn session_store(&self) -> Arc<dyn SessionStore> {
        match self {
            Self::Jsonl(store) => Arc::clone(store) as Arc<dyn SessionStore>,
            Self::Postgres(store) => Arc::clone(store) as Arc<dyn SessionStore>,
            Self::Memory(store) => Arc::clone(store) as Arc<dyn SessionStore>,
        }
    }

    /// As the engines' `event_log`.
    pub fn event_log(&self) -> Arc<dyn EventLog> {
        match self {
            Self::Jsonl(store) => Arc::clone(store) as Arc<dyn EventLog>,
            Self::Postgres(store) => Arc::clone(store) as Arc<dyn EventLog>,
            Self::Memory(store) => Arc::clone(store) as Arc<dyn EventLog>,
        }
    }

    /// As the engines' `recorder`.
    pub fn recorder(&self) -> Arc<dyn ToolCallRecorder> {
        match self {
            Self::Jsonl(store) => Arc::clone(store) as Arc<dyn ToolCallRecorder>,
            Self::Postgres(store) => Arc::clone(store) as Arc<dyn ToolCallRecorder>,
            Self::Memory(store) => Arc::clone(store) as Arc<dyn ToolCallRecorder>,
        }
    }

    /// As the faces' audit reader.
    pub fn tool_call_log(&self) -> Arc<dyn ToolCallLog> {
        match self {
            Self::Jsonl(store) => Arc::clone(store) as Arc<dyn ToolCallLog>,
            Self::Postgres(store) => Arc::clone(store) as Arc<dyn ToolCallLog>,
            Self::Memory(store) => Arc::clone(store) as Arc<dyn ToolCallLog>,
        }
    }

    /// `jsonl`, `postgres` or `memory`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Jsonl(_) => "jsonl",
            Self::Postgres(_) => "postgres",
            Self::Memory(_) => "memory",
        }
    }

    /// Where sessions live, for people: the directory, the database's
    /// `host:port/db` (never a password), or `in memory`.
    pub fn place(&self) -> String {
        match self {
            Self::Jsonl(store) => store.root().display().to_string(),
            Self::Postgres(store) => store.target().to_owned(),
            Self::Memory(_) => "in memory".to_owned(),
        }
    }

    /// Whether sessions outlive the process (a directory or a database).
    pub fn is_persistent(&self) -> bool {
        !matches!(self, Self::Memory(_))
    }

    /// The store directory (`None` unless JSONL).
    pub fn root(&self) -> Option<PathBuf> {
        match self {
            Self::Jsonl(store) => Some(store.root().to_path_buf()),
            Self::Postgres(_) | Self::Memory(_) => None,
        }
    }

    /// The files of a session in the JSONL store (`None` unless JSONL).
    pub fn paths(&self, session: &SessionId) -> Option<SessionPaths> {
        match self {
            Self::Jsonl(store) => Some(store.paths(session)),
            Self::Postgres(_) | Self::Memory(_) => None,
        }
    }

    /// Flushes pending sidecar writes and stops the flusher (JSONL), stops renewing
    /// leases and closes the connections (PostgreSQL); idempotent.
    pub(crate) fn close(&self) -> Result<(), StoreError> {
        match self {
            Self::Jsonl(store) => store.close(),
            Self::Postgres(store) => {
                store.close();
                Ok(())
            }
            Self::Memory(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_process_without_a_store_keeps_only_the_newest_audit_records() {
        let store = AppStore::open(&StoreConfig::Memory).await.unwrap();
        let recorder = store.recorder();
        let session = SessionId::from("gateway-connection");
        for n in 0..=MEMORY_AUDIT_CAP {
            let id = format!("mcp-{n}");
            let call = engine_ports::ToolCall::new(id.as_str(), "Read", "{}");
            let result = engine_ports::ToolResult::text(id.as_str(), "ok");
            let record = engine_ports::ToolCallRecord::new(
                &session,
                &call,
                &result,
                std::time::Duration::ZERO,
                std::time::Duration::ZERO,
                std::time::SystemTime::now(),
            );
            recorder.record(&record).await.unwrap();
        }
        let kept = store.tool_call_log().read(&session).await.unwrap();
        assert_eq!(kept.len(), MEMORY_AUDIT_CAP);
        assert_eq!(kept[0].call_id.as_str(), "mcp-1", "the oldest record went first");
    }
}
