//! The background flusher of [`SyncPolicy::Batched`](crate::SyncPolicy::Batched):
//! one thread that syncs every sidecar written since its last pass, at most
//! `max_delay` after the first unsynced write.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use engine_ports::SessionId;

use crate::threads::{BackgroundThread, lock};

/// A sidecar with unsynced writes, keyed by `(dev, ino)` so a file replaced after
/// Delete is tracked separately from the one it replaced.
#[derive(Debug)]
struct Pending {
    session: SessionId,
    path: PathBuf,
    file: File,
}

/// A sync that failed.
#[derive(Debug)]
pub(crate) struct SyncFailure {
    /// The session.
    pub(crate) session: SessionId,
    /// The sidecar.
    pub(crate) path: PathBuf,
    /// The OS error.
    pub(crate) source: io::Error,
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<(u64, u64), Pending>,
    /// When the oldest pending write happened.
    oldest: Option<Instant>,
    stopped: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Held while syncing, so `flush` returns only after an in-flight pass ended.
    syncing: Mutex<()>,
    max_delay: Duration,
}

/// Owns the flusher thread; `stop` (or drop) syncs what is pending and joins it.
#[derive(Debug)]
pub(crate) struct Flusher {
    thread: BackgroundThread<Shared>,
}

impl Flusher {
    /// Starts the flusher thread.
    pub(crate) fn start(max_delay: Duration) -> io::Result<Self> {
        let shared = Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            syncing: Mutex::new(()),
            max_delay,
        };
        let thread = BackgroundThread::start("jsonlstore-flusher", shared, run)?;
        Ok(Self { thread })
    }

    /// Registers an unsynced write. Returns `false` once the flusher is stopped; the
    /// caller then syncs the file itself.
    pub(crate) fn register(
        &self,
        session: &SessionId,
        path: &Path,
        key: (u64, u64),
        file: &File,
    ) -> io::Result<bool> {
        let shared = self.thread.shared();
        let mut state = lock(&shared.state);
        if state.stopped {
            return Ok(false);
        }
        if let std::collections::hash_map::Entry::Vacant(slot) = state.pending.entry(key) {
            slot.insert(Pending {
                session: session.clone(),
                path: path.to_owned(),
                file: file.try_clone()?,
            });
        }
        if state.oldest.is_none() {
            state.oldest = Some(Instant::now());
            shared.wake.notify_one();
        }
        Ok(true)
    }

    /// Syncs every pending write now (of one session, or all with `None`).
    pub(crate) fn sync_pending(&self, session: Option<&SessionId>) -> Result<(), SyncFailure> {
        sync_now(self.thread.shared(), session)
    }

    /// Syncs everything pending and stops the thread; idempotent.
    pub(crate) fn stop(&self) -> Result<(), SyncFailure> {
        let shared = self.thread.shared();
        lock(&shared.state).stopped = true;
        shared.wake.notify_one();
        self.thread.join();
        sync_now(shared, None)
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        if let Err(failure) = self.stop() {
            tracing::warn!(
                session_id = %failure.session,
                path = %failure.path.display(),
                error = %failure.source,
                "jsonlstore: syncing a sidecar failed while closing the store"
            );
        }
    }
}

fn run(shared: &Shared) {
    let mut state = lock(&shared.state);
    loop {
        if state.stopped {
            return;
        }
        let Some(oldest) = state.oldest else {
            state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
            continue;
        };
        let due = oldest + shared.max_delay;
        let now = Instant::now();
        if now < due {
            state = shared
                .wake
                .wait_timeout(state, due - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            continue;
        }
        drop(state);
        let syncing = lock(&shared.syncing);
        let batch = take(&mut lock(&shared.state), None);
        for pending in batch {
            if let Err(error) = pending.file.sync_data() {
                tracing::warn!(
                    session_id = %pending.session,
                    path = %pending.path.display(),
                    error = %error,
                    "jsonlstore: background sync of a sidecar failed; records written since the last sync may not survive a power loss"
                );
            }
        }
        drop(syncing);
        state = lock(&shared.state);
    }
}

/// Removes the pending entries (of `session`, or all) from the state.
fn take(state: &mut State, session: Option<&SessionId>) -> Vec<Pending> {
    let keys: Vec<(u64, u64)> = state
        .pending
        .iter()
        .filter(|(_, p)| session.is_none_or(|s| &p.session == s))
        .map(|(k, _)| *k)
        .collect();
    let batch = keys.iter().filter_map(|k| state.pending.remove(k)).collect();
    if state.pending.is_empty() {
        state.oldest = None;
    }
    batch
}

fn sync_now(shared: &Shared, session: Option<&SessionId>) -> Result<(), SyncFailure> {
    let _syncing = lock(&shared.syncing);
    let batch = take(&mut lock(&shared.state), session);
    let mut first_failure = None;
    for pending in batch {
        if let Err(source) = pending.file.sync_data() {
            first_failure.get_or_insert(SyncFailure {
                session: pending.session,
                path: pending.path,
                source,
            });
        }
    }
    first_failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(flusher: &Flusher) -> usize {
        lock(&flusher.thread.shared().state).pending.len()
    }

    #[test]
    fn a_pass_syncs_what_was_registered_and_stop_is_final() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        let file = File::create(&path).unwrap();
        let flusher = Flusher::start(Duration::from_millis(5)).unwrap();
        let session = SessionId::from("s");
        assert!(flusher.register(&session, &path, (1, 1), &file).unwrap());
        assert!(flusher.register(&session, &path, (1, 1), &file).unwrap());
        assert!(pending(&flusher) <= 1, "one entry per file");
        // The background pass empties the queue on its own (bounded wait).
        let deadline = Instant::now() + Duration::from_secs(10);
        while pending(&flusher) > 0 {
            assert!(Instant::now() < deadline, "no background pass happened");
            std::thread::yield_now();
        }
        flusher.sync_pending(None).unwrap();
        flusher.stop().unwrap();
        flusher.stop().unwrap();
        assert!(!flusher.register(&session, &path, (1, 1), &file).unwrap());
    }

    #[test]
    fn session_syncs_take_only_that_session() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("x")).unwrap();
        let flusher = Flusher::start(Duration::from_secs(3600)).unwrap();
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        flusher.register(&a, dir.path(), (1, 1), &file).unwrap();
        flusher.register(&b, dir.path(), (1, 2), &file).unwrap();
        flusher.sync_pending(Some(&a)).unwrap();
        assert_eq!(pending(&flusher), 1);
        flusher.sync_pending(None).unwrap();
        assert_eq!(pending(&flusher), 0);
    }
}
