//! The per-session lock file: advisory `flock`-style locks with a deadline and
//! the `(dev, ino)` re-check that lets Delete unlink the lock file safely.

use std::fs::{File, TryLockError};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::fsio;

/// First pause between two lock attempts.
const FIRST_BACKOFF: Duration = Duration::from_millis(1);
/// Longest pause between two lock attempts.
const MAX_BACKOFF: Duration = Duration::from_millis(50);

/// Exclusive (writers) or shared (the read probe).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockMode {
    /// Save, Create, Delete, Append, record; the run lease (on its own file).
    Exclusive,
    /// The committed-length probe of a read.
    Shared,
}

/// Why a lock was not acquired.
#[derive(Debug)]
pub(crate) enum LockError {
    /// The deadline passed; how long we waited.
    Timeout(Duration),
    /// Opening or locking the file failed.
    Io(&'static str, io::Error),
}

/// A held session lock; released when dropped (closing the handle releases it).
#[derive(Debug)]
pub(crate) struct SessionLock {
    file: File,
}

impl SessionLock {
    /// Acquires the lock at `path` within `timeout`.
    ///
    /// Exclusive lockers create the lock file (mode `0600`). A shared locker that
    /// finds no lock file gets `Ok(None)`: the session was never written (or was
    /// deleted), so there is nothing to exclude.
    ///
    /// After acquiring, the handle's `(dev, ino)` is compared with a fresh `stat` of
    /// the path; when Delete unlinked or replaced the file in between, the handle is
    /// dropped and the attempt starts over, so two processes never hold locks on
    /// different inodes of one session.
    pub(crate) fn acquire(path: &Path, mode: LockMode, timeout: Duration) -> Result<Option<Self>, LockError> {
        let start = Instant::now();
        let deadline = start.checked_add(timeout);
        loop {
            let opened = fsio::open_lock(path, mode == LockMode::Exclusive)
                .map_err(|e| LockError::Io("open lock file", e))?;
            let Some((file, meta)) = opened else {
                return Ok(None);
            };
            try_until(&file, mode, start, deadline)?;
            match std::fs::symlink_metadata(path) {
                Ok(current) if fsio::identity(&current) == fsio::identity(&meta) => {
                    return Ok(Some(Self { file }));
                }
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    if mode == LockMode::Shared {
                        return Ok(None);
                    }
                }
                Err(error) => return Err(LockError::Io("stat lock file", error)),
            }
            // The lock file was removed or replaced while we waited: start over.
            drop(file);
        }
    }
}

/// Locks `file` in `mode`, retrying with backoff until `deadline`.
fn try_until(
    file: &File,
    mode: LockMode,
    start: Instant,
    deadline: Option<Instant>,
) -> Result<(), LockError> {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let attempt = match mode {
            LockMode::Exclusive => file.try_lock(),
            LockMode::Shared => file.try_lock_shared(),
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) => {
                let now = Instant::now();
                let remaining = deadline.map_or(backoff, |d| d.saturating_duration_since(now));
                if remaining.is_zero() {
                    return Err(LockError::Timeout(now.duration_since(start)));
                }
                std::thread::sleep(backoff.min(remaining));
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(TryLockError::Error(error)) => return Err(LockError::Io("lock", error)),
        }
    }
}

/// An exclusive lock on a lock file whose descriptor someone keeps open (a leased
/// session's appender); unlocked, not closed, when dropped.
#[derive(Debug)]
pub(crate) struct HeldLock<'a> {
    file: &'a File,
}

impl<'a> HeldLock<'a> {
    /// Locks `file` exclusively within `timeout`. The caller guarantees the file is
    /// still the session's lock file (nobody unlinks it while a run lease is held).
    pub(crate) fn acquire(file: &'a File, timeout: Duration) -> Result<Self, LockError> {
        let start = Instant::now();
        try_until(file, LockMode::Exclusive, start, start.checked_add(timeout))?;
        Ok(Self { file })
    }
}

impl Drop for HeldLock<'_> {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        // Closing the handle releases the lock anyway; unlocking first makes the
        // release independent of when the descriptor is closed.
        let _ = self.file.unlock();
    }
}
