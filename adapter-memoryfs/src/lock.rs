//! The directory's write lock: an exclusive `flock`-style lock of `memory.lock`,
//! taken with backoff until a deadline. The lock belongs to the open file, so the
//! kernel releases it when the holder exits, SIGKILL included.

use std::fs::{File, TryLockError};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::fsio;

const FIRST_BACKOFF: Duration = Duration::from_millis(1);
const MAX_BACKOFF: Duration = Duration::from_millis(50);

/// Why the lock was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// The deadline passed after this long.
    Timeout(Duration),
    /// Opening or locking the file failed.
    Io(io::Error),
}

/// A held write lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Takes the lock at `path` within `timeout`.
    pub(crate) fn acquire(path: &Path, timeout: Duration) -> Result<Self, LockError> {
        let file = fsio::open_lock(path).map_err(LockError::Io)?;
        let start = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Self { _file: file }),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(error)) => return Err(LockError::Io(error)),
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(LockError::Timeout(waited));
            }
            std::thread::sleep(backoff.min(timeout - waited));
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}
