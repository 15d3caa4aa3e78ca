//! [`BackgroundThread`]: a named thread over state it shares with its owner, started
//! once and joined once (the writer thread and the flusher are two), and [`lock`],
//! the poison-tolerant lock of the store's in-memory state.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// Locks `mutex`; a panic elsewhere while it was held does not make it unusable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A thread running over `S`, which its owner also reads.
#[derive(Debug)]
pub(crate) struct BackgroundThread<S> {
    shared: Arc<S>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<S: Send + Sync + 'static> BackgroundThread<S> {
    /// Starts the thread `name`, running `run` over `shared`.
    pub(crate) fn start(name: &str, shared: S, run: fn(&S)) -> io::Result<Self> {
        let shared = Arc::new(shared);
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || run(&worker))?;
        Ok(Self {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The state shared with the thread.
    pub(crate) fn shared(&self) -> &S {
        &self.shared
    }

    /// Waits for the thread, once it was told to stop; idempotent. The threads only
    /// work through their queue and log, so a join error is moot.
    pub(crate) fn join(&self) {
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
    }
}
