//! The JSONL session store of Mecatl: one [`JsonlStore`] value implements the
//! `engine-ports` traits `SessionStore` (atomic snapshots), `EventLog` (the D11 event
//! stream) and `ToolCallRecorder` (the per-call audit) over one directory, with the
//! D8 durability rules: snapshots replaced atomically (temp file, fsync, rename,
//! directory fsync), append-only JSONL sidecars whose newline is the commit marker
//! (a torn last fragment is ignored on read and cut before the next append), files
//! `0600`, directories `0700`, and a cross-process lock per session. A run lease
//! (`SessionStore::acquire_run`) is a cross-process lock of its own; while one is
//! held, the session's records go through an appender that keeps its files open and
//! writes in batches.
//!
//! It is not a database: there is no index, no compaction and no store-wide lock;
//! sessions are independent files under `<root>/sid-v1/`, named by a hashed token
//! ([`JsonlStore::token`]) because session ids are never used as paths. It depends
//! on `engine-ports` only.
//!
//! Start with [`JsonlStore::open`] and [`StoreOptions`] (the [`SyncPolicy`] decides
//! when sidecar records reach the device); then read the port contracts in
//! `engine-ports`. [`JsonlStore::read_events`] streams a session's events lazily.
//!
//! ```
//! use adapter_jsonlstore::{JsonlStore, StoreOptions};
//! use engine_ports::{PermissionMode, SessionId, SessionSnapshot, SessionStore};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let store = JsonlStore::open(dir.path(), StoreOptions::default()).unwrap();
//! let snapshot = SessionSnapshot::new("team-abc/lead", PermissionMode::Plan);
//! store.save(&snapshot).await.unwrap();
//! assert_eq!(store.load(&SessionId::from("team-abc/lead")).await.unwrap(), snapshot);
//! store.close().unwrap();
//! # });
//! ```

mod appender;
mod flusher;
mod fsio;
mod lock;
mod options;
mod reader;
mod sidecar;
mod snapshot;
mod store;
mod threads;
mod token;

// The public surface, in one place.
pub use options::{StoreOptions, SyncPolicy};
pub use reader::{EventIter, RecordIter, ToolCallIter};
pub use store::{JsonlStore, SessionPaths};
