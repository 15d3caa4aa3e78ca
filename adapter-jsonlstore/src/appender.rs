//! The appender of a leased session: while a run lease of this store holds a
//! session, its sidecar records go through one [`Appender`] that keeps the lock file
//! and both sidecars open (the tail checked once after opening, then only when the
//! file's length is not what this appender left), buffers records in memory and
//! writes them in batches under the session's lock: by the writer thread under
//! `Never` and `Batched`, by the caller (write, then sync) under `Always`.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use engine_ports::{SessionId, StoreError};

use crate::flusher::Flusher;
use crate::lock::{HeldLock, LockError};
use crate::options::SyncPolicy;
use crate::threads::{BackgroundThread, lock};
use crate::{fsio, sidecar};

/// Buffered bytes of one appender above which the appending caller writes them
/// itself (back-pressure when the writer thread falls behind).
const MAX_PENDING_BYTES: usize = 4 * 1024 * 1024;

/// Which sidecar a record belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sidecar {
    /// `.events.jsonl`.
    Events = 0,
    /// `.tools.jsonl`.
    Tools = 1,
}

impl Sidecar {
    const ALL: [Self; 2] = [Self::Events, Self::Tools];

    fn index(self) -> usize {
        self as usize
    }
}

/// What [`Appender::push`] did with a record.
#[derive(Debug)]
pub(crate) enum Pushed {
    /// Buffered; a write is already due.
    Buffered,
    /// Buffered; the caller hands the appender to the writer thread.
    Enqueue,
    /// Buffered; the caller writes now ([`SyncPolicy::Always`], or back-pressure).
    DrainNow,
    /// The lease is being released: the record is given back for the ordinary path.
    Closed(Vec<u8>),
}

/// Where an appender writes and how.
#[derive(Debug)]
pub(crate) struct AppenderConfig {
    /// The session.
    pub(crate) id: SessionId,
    /// `<token>.lock`, `.events.jsonl`, `.tools.jsonl`.
    pub(crate) lock: PathBuf,
    pub(crate) events: PathBuf,
    pub(crate) tools: PathBuf,
    /// `sid-v1/`, synced when a sidecar is created (unless `Never`).
    pub(crate) dir: PathBuf,
    pub(crate) sync: SyncPolicy,
    pub(crate) flusher: Option<Arc<Flusher>>,
    /// The store's count of dropped audit records.
    pub(crate) dropped: Arc<AtomicU64>,
}

/// The open files and buffered records of one leased session.
#[derive(Debug)]
pub(crate) struct Appender {
    cfg: AppenderConfig,
    pending: Mutex<Pending>,
    /// Held for a whole batch (lock, write, sync): batches never interleave.
    io: Mutex<Io>,
    /// The first batch lost since the last [`Appender::take_loss`] (what, why).
    loss: Mutex<Option<String>>,
}

#[derive(Debug, Default)]
struct Pending {
    bufs: [Vec<u8>; 2],
    records: [u64; 2],
    /// A write is due (the appender is queued or a caller drains).
    queued: bool,
    closed: bool,
}

#[derive(Debug, Default)]
struct Io {
    lock: Option<File>,
    files: [Option<Open>; 2],
}

#[derive(Debug)]
struct Open {
    file: File,
    /// The length this appender left the file at.
    len: u64,
    key: (u64, u64),
}

impl Appender {
    pub(crate) fn new(cfg: AppenderConfig) -> Self {
        Self {
            cfg,
            pending: Mutex::default(),
            io: Mutex::default(),
            loss: Mutex::default(),
        }
    }

    fn path(&self, sidecar: Sidecar) -> &Path {
        match sidecar {
            Sidecar::Events => &self.cfg.events,
            Sidecar::Tools => &self.cfg.tools,
        }
    }

    /// Buffers one record (ending in `\n`).
    pub(crate) fn push(&self, sidecar: Sidecar, buf: Vec<u8>) -> Pushed {
        let mut pending = lock(&self.pending);
        if pending.closed {
            return Pushed::Closed(buf);
        }
        let slot = &mut pending.bufs[sidecar.index()];
        if slot.is_empty() {
            *slot = buf;
        } else {
            slot.extend_from_slice(&buf);
        }
        pending.records[sidecar.index()] += 1;
        let bytes = pending.bufs[0].len() + pending.bufs[1].len();
        if self.cfg.sync == SyncPolicy::Always || bytes > MAX_PENDING_BYTES {
            pending.queued = true;
            return Pushed::DrainNow;
        }
        if pending.queued {
            Pushed::Buffered
        } else {
            pending.queued = true;
            Pushed::Enqueue
        }
    }

    /// Writes every buffered record under the session's lock (waiting at most
    /// `timeout` for it), then applies the sync policy. With `close`, records pushed
    /// afterwards are given back ([`Pushed::Closed`]).
    ///
    /// A batch that cannot be written is lost: the sidecar is left as it was, a WARN
    /// names the session, the file and the number of records, and lost audit records
    /// count as dropped. The first such error is returned.
    pub(crate) fn drain(&self, close: bool, timeout: Duration) -> Result<(), StoreError> {
        let mut io = lock(&self.io);
        if !close && lock(&self.pending).records == [0, 0] {
            return Ok(());
        }
        let Io {
            lock: lock_file,
            files,
        } = &mut *io;
        let held = self.lock_file(lock_file).and_then(|file| {
            HeldLock::acquire(file, timeout).map_err(|error| match error {
                LockError::Timeout(waited) => StoreError::LockTimeout {
                    id: self.cfg.id.clone(),
                    waited,
                },
                LockError::Io(op, source) => self.io_error(op, &self.cfg.lock, source),
            })
        });
        let (bufs, records) = {
            let mut pending = lock(&self.pending);
            pending.queued = false;
            pending.closed |= close;
            if held.is_err() && !close {
                // Kept for the next drain.
                return held.map(drop);
            }
            (
                std::mem::take(&mut pending.bufs),
                std::mem::take(&mut pending.records),
            )
        };
        let mut first_error = None;
        for sidecar in Sidecar::ALL {
            let i = sidecar.index();
            if records[i] == 0 {
                continue;
            }
            let written = match &held {
                Ok(_) => self.write(&mut files[i], sidecar, &bufs[i]),
                Err(error) => Err(copy_error(error)),
            };
            if let Err(error) = written {
                self.lost(sidecar, records[i], &error);
                first_error.get_or_insert(error);
            }
        }
        drop(held);
        first_error.map_or(Ok(()), Err)
    }

    fn lock_file<'a>(&self, slot: &'a mut Option<File>) -> Result<&'a File, StoreError> {
        if slot.is_none() {
            let opened = fsio::open_lock(&self.cfg.lock, true)
                .map_err(|source| self.io_error("open lock file", &self.cfg.lock, source))?;
            *slot = opened.map(|(file, _)| file);
        }
        slot.as_ref().ok_or_else(|| {
            self.io_error(
                "open lock file",
                &self.cfg.lock,
                io::Error::from(io::ErrorKind::NotFound),
            )
        })
    }

    /// One batch of whole records to one sidecar; the caller holds the lock.
    fn write(&self, slot: &mut Option<Open>, sidecar: Sidecar, buf: &[u8]) -> Result<(), StoreError> {
        let path = self.path(sidecar);
        let step = |error: sidecar::AppendError| self.io_error(error.op, path, error.source);
        if slot.is_none() {
            let (file, meta, created) =
                fsio::open_append(path).map_err(|source| self.io_error("open", path, source))?;
            if created && self.cfg.sync != SyncPolicy::Never {
                fsio::sync_dir(&self.cfg.dir)
                    .map_err(|source| self.io_error("sync directory", &self.cfg.dir, source))?;
            }
            *slot = Some(Open {
                file,
                // Unknown: the tail is checked before the first write.
                len: u64::MAX,
                key: fsio::identity(&meta),
            });
        }
        let Some(open) = slot.as_mut() else {
            return Ok(());
        };
        let len = open
            .file
            .metadata()
            .map_err(|source| self.io_error("stat", path, source))?
            .len();
        if len != open.len {
            // First write, or another writer appended meanwhile: check the tail.
            let (committed, cut) = sidecar::repair_tail(&open.file, len).map_err(step)?;
            if cut > 0 {
                tracing::warn!(
                    session_id = %self.cfg.id,
                    path = %path.display(),
                    bytes_cut = cut,
                    "jsonlstore: cut a torn write (an unterminated last fragment) before appending"
                );
            }
            open.len = committed;
        }
        let meta = sidecar::write_checked(&open.file, path, buf, open.len).map_err(step)?;
        open.len = meta.len();
        let sync_data = |file: &File| {
            file.sync_data()
                .map_err(|source| self.io_error("sync", path, source))
        };
        match (&self.cfg.sync, &self.cfg.flusher) {
            (SyncPolicy::Never, _) => Ok(()),
            (SyncPolicy::Batched { .. }, Some(flusher)) => {
                let queued = flusher
                    .register(&self.cfg.id, path, open.key, &open.file)
                    .map_err(|source| self.io_error("queue the sync of", path, source))?;
                if queued { Ok(()) } else { sync_data(&open.file) }
            }
            (SyncPolicy::Always | SyncPolicy::Batched { .. }, _) => sync_data(&open.file),
        }
    }

    /// The first batch lost since the last call, if any (the flush ports report it).
    pub(crate) fn take_loss(&self) -> Option<String> {
        lock(&self.loss).take()
    }

    fn lost(&self, sidecar: Sidecar, records: u64, error: &StoreError) {
        if sidecar == Sidecar::Tools {
            self.cfg.dropped.fetch_add(records, Ordering::Relaxed);
        }
        lock(&self.loss).get_or_insert_with(|| {
            format!(
                "{records} record(s) for {} could not be written: {error}",
                self.path(sidecar).display()
            )
        });
        tracing::warn!(
            session_id = %self.cfg.id,
            path = %self.path(sidecar).display(),
            records,
            error = %error,
            "jsonlstore: a batch of sidecar records could not be written and was dropped"
        );
    }

    fn io_error(&self, op: &'static str, path: &Path, source: io::Error) -> StoreError {
        StoreError::Io {
            id: self.cfg.id.clone(),
            op,
            path: path.to_owned(),
            source,
        }
    }
}

/// The same error again (for the second sidecar of a batch that failed to lock).
fn copy_error(error: &StoreError) -> StoreError {
    match error {
        StoreError::LockTimeout { id, waited } => StoreError::LockTimeout {
            id: id.clone(),
            waited: *waited,
        },
        StoreError::Io { id, op, path, source } => StoreError::Io {
            id: id.clone(),
            op,
            path: path.clone(),
            source: io::Error::new(source.kind(), source.to_string()),
        },
        other => StoreError::StoreDir {
            path: PathBuf::new(),
            reason: other.to_string(),
            source: None,
        },
    }
}

/// The writer thread of a store: drains the appenders handed to it, in order.
#[derive(Debug)]
pub(crate) struct Writer {
    thread: BackgroundThread<WriterShared>,
}

#[derive(Debug)]
struct WriterShared {
    state: Mutex<WriterState>,
    wake: Condvar,
    lock_timeout: Duration,
}

#[derive(Debug, Default)]
struct WriterState {
    queue: VecDeque<Arc<Appender>>,
    sleeping: bool,
    stopped: bool,
}

impl Writer {
    /// Starts the thread.
    pub(crate) fn start(lock_timeout: Duration) -> io::Result<Self> {
        let shared = WriterShared {
            state: Mutex::default(),
            wake: Condvar::new(),
            lock_timeout,
        };
        let thread = BackgroundThread::start("jsonlstore-writer", shared, run)?;
        Ok(Self { thread })
    }

    /// Hands `appender` to the thread; `false` once stopped (the caller drains).
    pub(crate) fn enqueue(&self, appender: Arc<Appender>) -> bool {
        let shared = self.thread.shared();
        let mut state = lock(&shared.state);
        if state.stopped {
            return false;
        }
        state.queue.push_back(appender);
        if state.sleeping {
            shared.wake.notify_one();
        }
        true
    }

    /// Drains what is queued and stops the thread; idempotent.
    pub(crate) fn stop(&self) {
        let shared = self.thread.shared();
        lock(&shared.state).stopped = true;
        shared.wake.notify_one();
        self.thread.join();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(shared: &WriterShared) {
    loop {
        let next = {
            let mut state = lock(&shared.state);
            loop {
                if let Some(appender) = state.queue.pop_front() {
                    break Some(appender);
                }
                if state.stopped {
                    break None;
                }
                state.sleeping = true;
                state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
                state.sleeping = false;
            }
        };
        let Some(appender) = next else {
            return;
        };
        // Failures are logged and counted by the appender.
        let _ = appender.drain(false, shared.lock_timeout);
    }
}
