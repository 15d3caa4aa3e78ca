//! [`PgStoreOptions`]: time limits, the lease TTL, size caps, the pool size and
//! group commits.

use std::time::Duration;

/// How a [`PgStore`](crate::PgStore) talks to the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgStoreOptions {
    /// The longest one store operation may take, retries of a lost connection
    /// included (default 10 s). It is also each connection's `statement_timeout` and
    /// `lock_timeout`, so the server gives up first and says why; the client stops
    /// waiting one second later whatever happens on the wire.
    pub timeout: Duration,
    /// How long a run lease lasts without being renewed (default 15 s). The holder
    /// renews its leases every third of it; a holder that dies (or loses the
    /// database for longer) frees its sessions once it passes.
    pub lease_ttl: Duration,
    /// Most connections of the pool (default 16).
    pub max_connections: usize,
    /// Largest event or tool-call record, as JSON (default 64 MiB).
    pub max_record_bytes: usize,
    /// Largest snapshot, as JSON (default 256 MiB).
    pub max_snapshot_bytes: usize,
    /// Group commits (default on): while this store holds a session's run lease, its
    /// events and tool-call records are queued and written in multi-row batches by
    /// one writer per session; `flush` waits for them and reports losses. Off: every
    /// append is committed before it returns.
    pub group_commits: bool,
}

impl PgStoreOptions {
    /// Default [`PgStoreOptions::timeout`].
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default [`PgStoreOptions::lease_ttl`].
    pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);
    /// Shortest [`PgStoreOptions::lease_ttl`] (renewals every third of it must fit).
    pub const MIN_LEASE_TTL: Duration = Duration::from_millis(300);
    /// Default [`PgStoreOptions::max_connections`].
    pub const DEFAULT_MAX_CONNECTIONS: usize = 16;
    /// Default [`PgStoreOptions::max_record_bytes`].
    pub const DEFAULT_MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;
    /// Default [`PgStoreOptions::max_snapshot_bytes`].
    pub const DEFAULT_MAX_SNAPSHOT_BYTES: usize = 256 * 1024 * 1024;

    /// How often held leases are renewed: a third of the TTL.
    pub(crate) fn renew_every(&self) -> Duration {
        self.lease_ttl / 3
    }
}

impl Default for PgStoreOptions {
    fn default() -> Self {
        Self {
            timeout: Self::DEFAULT_TIMEOUT,
            lease_ttl: Self::DEFAULT_LEASE_TTL,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_record_bytes: Self::DEFAULT_MAX_RECORD_BYTES,
            max_snapshot_bytes: Self::DEFAULT_MAX_SNAPSHOT_BYTES,
            group_commits: true,
        }
    }
}
