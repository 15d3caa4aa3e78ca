//! The PostgreSQL store of Mecatl: one [`PgStore`] value implements the
//! `engine-ports` traits `SessionStore`, `EventLog` and `ToolCallRecorder` on one
//! database, so several `mecated` replicas share their sessions: a session created on
//! one is listed, loaded and run on another, one run at a time across all of them.
//! [`PgMemoryStore`] implements `MemoryStore` for one named memory scope (project
//! memory, the user model) as one row, shared the same way.
//!
//! - **Schema**: created and migrated at [`PgStore::open`] from SQL embedded in the
//!   binary ([`migrations`]), versioned in `mecated_schema_version`; a database whose
//!   schema is newer than the binary is refused.
//! - **Run leases** are rows with a holder token and an expiry in database time,
//!   renewed in the background and released on drop; a dead holder's lease expires
//!   after [`PgStoreOptions::lease_ttl`]. While held, the holder's writes of the
//!   session are fenced by its token.
//! - **Time limits**: every call has one ([`PgStoreOptions::timeout`], the URL's
//!   `connect_timeout`); a lost connection is retried within it, never longer, and a
//!   write whose reply was lost recognises its own row instead of writing twice.
//! - **Ids and bodies**: session ids are `text COLLATE "C"` (any id without a NUL and
//!   of at most [`MAX_ID_BYTES`] round-trips, listed in byte order); snapshots, events
//!   and records are stored as their JSON text. Every value is a bound parameter; no
//!   SQL is built from data.
//! - **TLS** through rustls as the URL's `sslmode` asks ([`StoreUrl`], libpq's
//!   meanings); the URL is shown everywhere without its password.
//!
//! It depends on `engine-ports` only.
//!
//! ```no_run
//! use adapter_pgstore::{PgStore, PgStoreOptions, StoreUrl};
//! use engine_ports::{PermissionMode, SessionSnapshot, SessionStore};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let url = StoreUrl::parse("postgres://mecated@db.internal/mecated?sslmode=verify-full", None)?;
//! let store = PgStore::open(&url, PgStoreOptions::default()).await?;
//! store.save(&SessionSnapshot::new("team-abc/lead", PermissionMode::Plan)).await?;
//! # Ok(()) }
//! ```

mod batch;
mod db;
mod lease;
mod memory;
pub mod migrations;
mod options;
mod store;
mod tls;
mod url;

pub use batch::{MAX_BATCH_BYTES, MAX_BATCH_ROWS, MAX_QUEUED_BYTES, MAX_QUEUED_ROWS};
pub use memory::{MAX_SCOPE_BYTES, PgMemoryStore};
pub use options::PgStoreOptions;
pub use store::{MAX_ID_BYTES, OpenError, PgStore};
pub use url::{DEFAULT_CONNECT_TIMEOUT, RootCerts, SslMode, StoreUrl, UrlError, redact_raw};
