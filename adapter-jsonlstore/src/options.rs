//! [`StoreOptions`] and [`SyncPolicy`]: how durable and how patient the store is.

use std::time::Duration;

/// When sidecar appends (`.tools.jsonl`, `.events.jsonl`) reach the device.
///
/// Snapshots are always fsynced whatever the policy (D8). Once a record is written it
/// is in the kernel, so a crash of the process loses nothing written under any
/// policy; the policy bounds what a kernel crash or power loss can lose, and, for a
/// session a run lease holds (its appender buffers records), when an append returns:
/// after the write and sync under `Always`, as soon as the record is buffered under
/// `Batched` and `Never` (a process crash can then lose the few records not written
/// yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// `sync_data` before each append returns: nothing acknowledged is ever lost, at
    /// the cost of one device flush per record.
    Always,
    /// One background flusher thread syncs every sidecar written since its last pass,
    /// at most `max_delay` after the first unsynced write. `flush`, `close` and `Drop`
    /// sync everything pending; Save, Create and Delete sync the session's own
    /// pending writes.
    Batched {
        /// Longest time a write stays unsynced.
        max_delay: Duration,
    },
    /// No explicit sync (benchmarks, tests, throwaway runs).
    Never,
}

impl SyncPolicy {
    /// The default `max_delay` of [`SyncPolicy::Batched`]: 100 ms.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_millis(100);
}

impl Default for SyncPolicy {
    /// `Batched` with a 100 ms delay: streaming sessions are not bound to the
    /// device's flush rate, and power loss can cost at most the last ~100 ms of
    /// sidecar records.
    fn default() -> Self {
        Self::Batched {
            max_delay: Self::DEFAULT_MAX_DELAY,
        }
    }
}

/// Options of a [`JsonlStore`](crate::JsonlStore); `Default` gives the documented
/// defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Sidecar sync policy (default [`SyncPolicy::Batched`], 100 ms).
    pub sync: SyncPolicy,
    /// Longest wait for a session lock in Save, Create, Delete, Append and the read
    /// probe (default 30 s).
    pub lock_timeout: Duration,
    /// Longest wait for a session lock in `ToolCallRecorder::record` (default 5 s).
    pub recorder_lock_timeout: Duration,
    /// Largest JSONL line, newline included (default 64 MiB).
    pub max_record_bytes: usize,
    /// Largest snapshot file (default 256 MiB).
    pub max_snapshot_bytes: u64,
}

impl StoreOptions {
    /// Default [`StoreOptions::lock_timeout`].
    pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`StoreOptions::recorder_lock_timeout`].
    pub const DEFAULT_RECORDER_LOCK_TIMEOUT: Duration = Duration::from_secs(5);
    /// Default [`StoreOptions::max_record_bytes`].
    pub const DEFAULT_MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;
    /// Default [`StoreOptions::max_snapshot_bytes`].
    pub const DEFAULT_MAX_SNAPSHOT_BYTES: u64 = 256 * 1024 * 1024;
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            sync: SyncPolicy::default(),
            lock_timeout: Self::DEFAULT_LOCK_TIMEOUT,
            recorder_lock_timeout: Self::DEFAULT_RECORDER_LOCK_TIMEOUT,
            max_record_bytes: Self::DEFAULT_MAX_RECORD_BYTES,
            max_snapshot_bytes: Self::DEFAULT_MAX_SNAPSHOT_BYTES,
        }
    }
}
