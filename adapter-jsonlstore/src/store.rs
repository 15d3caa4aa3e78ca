//! [`JsonlStore`]: construction, the session operations (Save, Create, Load, List,
//! Delete, Append, Read) and the three port implementations.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use engine_ports::{
    Approval, Event, EventLog, RecorderError, RunLease, SessionId, SessionListing, SessionSnapshot,
    SessionStore, StoreError, ToolCall, ToolCallRecord, ToolCallRecorder, ToolResult,
};
use serde::de::IgnoredAny;

use crate::appender::{Appender, AppenderConfig, Pushed, Sidecar, Writer};
use crate::flusher::{Flusher, SyncFailure};
use crate::lock::{LockError, LockMode, SessionLock};
use crate::options::{StoreOptions, SyncPolicy};
use crate::reader::{EventIter, EventLine, LineReader, ToolCallIter};
use crate::{fsio, sidecar, snapshot, token};

/// The only directory the store reads or writes, under the root.
const FAMILY_DIR: &str = "sid-v1";
const SNAPSHOT_SUFFIX: &str = ".session.json";
const TOOLS_SUFFIX: &str = ".tools.jsonl";
const EVENTS_SUFFIX: &str = ".events.jsonl";
const LOCK_SUFFIX: &str = ".lock";
const RUN_SUFFIX: &str = ".run";
const TEMP_SUFFIX: &str = ".tmp";
/// Temp files older than this are removed by `open`; younger ones may be in use.
const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

/// The files of one session inside `sid-v1/` (they need not exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionPaths {
    /// `<token>.session.json`, the current snapshot.
    pub snapshot: PathBuf,
    /// `<token>.tools.jsonl`, the tool-call audit.
    pub tools: PathBuf,
    /// `<token>.events.jsonl`, the event log.
    pub events: PathBuf,
    /// `<token>.lock`, the per-session lock file.
    pub lock: PathBuf,
    /// `<token>.run`, the lock file of the session's run lease.
    pub run: PathBuf,
}

/// The JSONL session store, event log and tool-call recorder over one directory.
///
/// `Send + Sync`; share it as an `Arc` (for example as `Arc<dyn SessionStore>`,
/// `Arc<dyn EventLog>` and `Arc<dyn ToolCallRecorder>` at once). Several handles, in
/// one process or several, may use one directory: every write runs under the
/// session's cross-process lock. The port methods run their file I/O on tokio's
/// blocking pool, so they need a tokio runtime; the inherent methods are blocking.
#[derive(Debug)]
pub struct JsonlStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    dir: PathBuf,
    opts: StoreOptions,
    flusher: Option<Arc<Flusher>>,
    dropped: Arc<AtomicU64>,
    /// The appenders of the sessions this store's run leases hold.
    appenders: Mutex<HashMap<SessionId, Arc<Appender>>>,
    /// Started with the first lease (`Never` and `Batched`); `None` inside when the
    /// thread could not start (callers then write themselves).
    writer: OnceLock<Option<Writer>>,
}

impl JsonlStore {
    /// Opens (creating when missing, mode `0700`) the store at `root` and its
    /// `sid-v1/` directory, removes temp files older than an hour and, for
    /// [`SyncPolicy::Batched`], starts the flusher thread.
    ///
    /// `root` may be a symlink; it is only cleaned lexically. Existing directories
    /// keep their mode; group or other bits on them cause a WARN.
    ///
    /// # Errors
    /// [`StoreError::StoreDir`] when `root` is empty, exists and is not a directory,
    /// or cannot be created.
    pub fn open(root: impl AsRef<Path>, opts: StoreOptions) -> Result<Self, StoreError> {
        let given = root.as_ref();
        if given.as_os_str().is_empty() {
            return Err(StoreError::StoreDir {
                path: PathBuf::new(),
                reason: "the store directory is empty; give the path of a directory".to_owned(),
                source: None,
            });
        }
        let root: PathBuf = given.components().collect();
        prepare_dir(&root)?;
        let dir = root.join(FAMILY_DIR);
        prepare_dir(&dir)?;
        remove_stale_temp_files(&dir);
        let flusher = match opts.sync {
            SyncPolicy::Batched { max_delay } => {
                Some(Arc::new(Flusher::start(max_delay).map_err(|source| {
                    StoreError::StoreDir {
                        path: root.clone(),
                        reason: "cannot start the flusher thread".to_owned(),
                        source: Some(source),
                    }
                })?))
            }
            SyncPolicy::Always | SyncPolicy::Never => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                root,
                dir,
                opts,
                flusher,
                dropped: Arc::new(AtomicU64::new(0)),
                appenders: Mutex::default(),
                writer: OnceLock::new(),
            }),
        })
    }

    /// The file-name token of a session id; pure, total, no I/O.
    pub fn token(id: &SessionId) -> String {
        token::token(id.as_str())
    }

    /// The store root, as given to [`JsonlStore::open`] (lexically cleaned).
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &StoreOptions {
        &self.inner.opts
    }

    /// The files of a session (whether or not they exist).
    pub fn paths(&self, id: &SessionId) -> SessionPaths {
        self.inner.paths(id)
    }

    /// Writes the records leased sessions still buffer, then syncs every pending
    /// sidecar write now (the sync is a no-op unless the policy is
    /// [`SyncPolicy::Batched`]).
    ///
    /// # Errors
    /// [`StoreError::Io`] naming the first sidecar whose write or sync failed.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.inner.drain_all()?;
        match &self.inner.flusher {
            Some(flusher) => flusher.sync_pending(None).map_err(sync_error),
            None => Ok(()),
        }
    }

    /// Syncs everything pending and stops the flusher; idempotent. Appends after
    /// `close` still work and are synced before they return.
    ///
    /// # Errors
    /// As [`JsonlStore::flush`].
    pub fn close(&self) -> Result<(), StoreError> {
        let drained = self.inner.drain_all();
        if let Some(Some(writer)) = self.inner.writer.get() {
            writer.stop();
        }
        drained?;
        match &self.inner.flusher {
            Some(flusher) => flusher.stop().map_err(sync_error),
            None => Ok(()),
        }
    }

    /// How many tool-call records were dropped because `record` failed.
    pub fn dropped_records(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// The events of a session in append order, read lazily (blocking I/O).
    ///
    /// A missing file is an empty sequence. Only records committed when this is
    /// called are read (a torn last fragment is ignored); the iterator holds no lock.
    ///
    /// # Errors
    /// [`StoreError::InvalidId`], [`StoreError::LockTimeout`] for the brief shared
    /// lock of the tail probe, or [`StoreError::Io`] (a symlink, FIFO or directory in
    /// place of the file included).
    pub fn read_events(&self, id: &SessionId) -> Result<EventIter, StoreError> {
        check_id(id)?;
        self.inner.drain_appender(id)?;
        let paths = self.inner.paths(id);
        let lines = self.inner.open_window(id, &paths, &paths.events)?;
        Ok(EventIter::new(lines, id.clone(), paths.events))
    }

    /// The tool-call audit records of a session in append order, read lazily, with
    /// the framing and error rules of [`JsonlStore::read_events`].
    ///
    /// # Errors
    /// As [`JsonlStore::read_events`].
    pub fn read_tool_calls(&self, id: &SessionId) -> Result<ToolCallIter, StoreError> {
        check_id(id)?;
        self.inner.drain_appender(id)?;
        let paths = self.inner.paths(id);
        let lines = self.inner.open_window(id, &paths, &paths.tools)?;
        Ok(ToolCallIter::new(lines, id.clone(), paths.tools))
    }

    /// Runs `work` on the blocking pool.
    async fn blocking<T, F>(&self, id: &SessionId, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        match tokio::task::spawn_blocking(move || work(&inner)).await {
            Ok(outcome) => outcome,
            Err(join) => Err(StoreError::Io {
                id: id.clone(),
                op: "run the store operation",
                path: self.inner.dir.clone(),
                source: io::Error::other(join.to_string()),
            }),
        }
    }

    /// Hands a record to the session's appender when a run lease of this store
    /// holds the session; gives it back (`Some`) for the ordinary path otherwise.
    async fn leased_append(
        &self,
        id: &SessionId,
        sidecar: Sidecar,
        buf: Vec<u8>,
        timeout: Duration,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(appender) = self.inner.appender(id) else {
            return Ok(Some(buf));
        };
        match appender.push(sidecar, buf) {
            Pushed::Closed(buf) => Ok(Some(buf)),
            Pushed::Buffered => Ok(None),
            Pushed::Enqueue => match self.inner.writer() {
                Some(writer) if writer.enqueue(Arc::clone(&appender)) => Ok(None),
                _ => self
                    .blocking(id, move |_| appender.drain(false, timeout))
                    .await
                    .map(|()| None),
            },
            Pushed::DrainNow => self
                .blocking(id, move |_| appender.drain(false, timeout))
                .await
                .map(|()| None),
        }
    }

    /// Writes what a leased session's appender buffers and reports a batch of it lost
    /// since the last flush (both ports' `flush`).
    async fn flush_session(&self, session: &SessionId) -> Result<(), StoreError> {
        let Some(appender) = self.inner.appender(session) else {
            return Ok(());
        };
        let timeout = self.inner.opts.lock_timeout;
        let drained = Arc::clone(&appender);
        self.blocking(session, move |_| drained.drain(false, timeout))
            .await?;
        match appender.take_loss() {
            None => Ok(()),
            Some(loss) => Err(StoreError::Io {
                id: session.clone(),
                op: "write buffered records of",
                path: self.inner.dir.clone(),
                source: io::Error::other(loss),
            }),
        }
    }

    /// Serializes one sidecar record plus `\n`, refusing it over the record limit.
    fn record_buffer<T: serde::Serialize>(&self, id: &SessionId, record: &T) -> Result<Vec<u8>, StoreError> {
        let mut buf = serde_json::to_vec(record).map_err(|e| StoreError::Io {
            id: id.clone(),
            op: "serialize a record for",
            path: self.inner.dir.clone(),
            source: io::Error::other(e.to_string()),
        })?;
        buf.push(b'\n');
        let limit = self.inner.opts.max_record_bytes;
        if buf.len() > limit {
            return Err(StoreError::TooLarge {
                id: id.clone(),
                bytes: buf.len() as u64,
                limit: limit as u64,
            });
        }
        Ok(buf)
    }

    /// Serializes a snapshot envelope, refusing it over the snapshot limit.
    fn snapshot_buffer(&self, snapshot: &SessionSnapshot) -> Result<Vec<u8>, StoreError> {
        check_id(&snapshot.id)?;
        let buf = snapshot::encode(snapshot).map_err(|e| StoreError::Io {
            id: snapshot.id.clone(),
            op: "serialize the snapshot for",
            path: self.inner.paths(&snapshot.id).snapshot,
            source: io::Error::other(e.to_string()),
        })?;
        let limit = self.inner.opts.max_snapshot_bytes;
        if buf.len() as u64 > limit {
            return Err(StoreError::TooLarge {
                id: snapshot.id.clone(),
                bytes: buf.len() as u64,
                limit,
            });
        }
        Ok(buf)
    }
}

fn lock_map<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a [`JsonlStore`] run lease holds: the `<token>.run` lock and the session's
/// appender. Dropping it writes what the appender buffers, then releases the lock.
struct RunGuard {
    inner: Arc<Inner>,
    appender: Arc<Appender>,
    id: SessionId,
    _run: SessionLock,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        {
            let mut appenders = lock_map(&self.inner.appenders);
            if appenders
                .get(&self.id)
                .is_some_and(|a| Arc::ptr_eq(a, &self.appender))
            {
                appenders.remove(&self.id);
            }
        }
        // Failures are logged and counted by the appender.
        let _ = self.appender.drain(true, self.inner.opts.lock_timeout);
    }
}

impl Inner {
    /// The appender of a session a run lease of this store holds.
    fn appender(&self, id: &SessionId) -> Option<Arc<Appender>> {
        lock_map(&self.appenders).get(id).cloned()
    }

    /// The writer thread (`None` under `Always`, or when it could not start).
    fn writer(&self) -> Option<&Writer> {
        if self.opts.sync == SyncPolicy::Always {
            return None;
        }
        self.writer
            .get_or_init(|| match Writer::start(self.opts.lock_timeout) {
                Ok(writer) => Some(writer),
                Err(error) => {
                    tracing::warn!(%error, "jsonlstore: cannot start the writer thread; appends write themselves");
                    None
                }
            })
            .as_ref()
    }

    /// Writes what the session's appender buffers (read-your-writes for reads and
    /// snapshots of a leased session).
    fn drain_appender(&self, id: &SessionId) -> Result<(), StoreError> {
        match self.appender(id) {
            Some(appender) => appender.drain(false, self.opts.lock_timeout),
            None => Ok(()),
        }
    }

    /// Writes what every appender buffers; the first error.
    fn drain_all(&self) -> Result<(), StoreError> {
        let appenders: Vec<Arc<Appender>> = lock_map(&self.appenders).values().cloned().collect();
        let mut first = Ok(());
        for appender in appenders {
            let drained = appender.drain(false, self.opts.lock_timeout);
            if first.is_ok() {
                first = drained;
            }
        }
        first
    }

    fn paths(&self, id: &SessionId) -> SessionPaths {
        let token = token::token(id.as_str());
        SessionPaths {
            snapshot: self.dir.join(format!("{token}{SNAPSHOT_SUFFIX}")),
            tools: self.dir.join(format!("{token}{TOOLS_SUFFIX}")),
            events: self.dir.join(format!("{token}{EVENTS_SUFFIX}")),
            lock: self.dir.join(format!("{token}{LOCK_SUFFIX}")),
            run: self.dir.join(format!("{token}{RUN_SUFFIX}")),
        }
    }

    fn lock(
        &self,
        id: &SessionId,
        paths: &SessionPaths,
        mode: LockMode,
        timeout: Duration,
    ) -> Result<Option<SessionLock>, StoreError> {
        SessionLock::acquire(&paths.lock, mode, timeout).map_err(|error| match error {
            LockError::Timeout(waited) => StoreError::LockTimeout {
                id: id.clone(),
                waited,
            },
            LockError::Io(op, source) => StoreError::Io {
                id: id.clone(),
                op,
                path: paths.lock.clone(),
                source,
            },
        })
    }

    /// The run lease (the exclusive lock of `<token>.run`), never waited for: a
    /// lease held elsewhere is [`StoreError::Busy`].
    fn run_lock(&self, id: &SessionId, paths: &SessionPaths) -> Result<SessionLock, StoreError> {
        match SessionLock::acquire(&paths.run, LockMode::Exclusive, Duration::ZERO) {
            Ok(Some(lock)) => Ok(lock),
            Err(LockError::Timeout(_)) => Err(StoreError::Busy { id: id.clone() }),
            Err(LockError::Io(op, source)) => Err(StoreError::Io {
                id: id.clone(),
                op,
                path: paths.run.clone(),
                source,
            }),
            Ok(None) => Err(StoreError::Io {
                id: id.clone(),
                op: "create",
                path: paths.run.clone(),
                source: io::Error::from(io::ErrorKind::NotFound),
            }),
        }
    }

    /// Syncs the session's own pending sidecar writes (Batched).
    fn sync_session(&self, id: &SessionId) -> Result<(), StoreError> {
        match &self.flusher {
            Some(flusher) => flusher.sync_pending(Some(id)).map_err(sync_error),
            None => Ok(()),
        }
    }

    fn sync_dir(&self, id: &SessionId) -> Result<(), StoreError> {
        fsio::sync_dir(&self.dir).map_err(|source| StoreError::Io {
            id: id.clone(),
            op: "sync directory",
            path: self.dir.clone(),
            source,
        })
    }

    /// Save (`create == false`) or Create (`true`) of an encoded envelope.
    fn write_snapshot(&self, id: &SessionId, buf: &[u8], create: bool) -> Result<(), StoreError> {
        // The session's buffered records go first (before the lock, which the
        // appender takes itself): a snapshot never gets ahead of its events. A batch
        // that cannot be written is already dropped, counted, logged and reported by
        // the next `flush`: it must not cost the snapshot too (a lock problem fails
        // the save's own lock below).
        if let Err(error) = self.drain_appender(id) {
            tracing::debug!(session_id = %id, %error, "buffered records not written before a save");
        }
        let paths = self.paths(id);
        let _lock = self.lock(id, &paths, LockMode::Exclusive, self.opts.lock_timeout)?;
        self.sync_session(id)?;
        let io_error = |op: &'static str, path: &Path| {
            let path = path.to_owned();
            let id = id.clone();
            move |source| StoreError::Io { id, op, path, source }
        };
        if create {
            match std::fs::symlink_metadata(&paths.snapshot) {
                Ok(_) => return Err(StoreError::AlreadyExists { id: id.clone() }),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(io_error("stat", &paths.snapshot)(error)),
            }
        }
        // 1. Leftover temp files are stale: we hold the lock.
        self.remove_temp_files(id)?;
        // 2. A fresh temp file, 0600, created exclusively.
        let token = token::token(id.as_str());
        let temp = self.dir.join(format!(
            ".{token}{SNAPSHOT_SUFFIX}.{}{TEMP_SUFFIX}",
            fsio::random_hex16()
        ));
        let mut file = fsio::create_new(&temp).map_err(io_error("create temp file", &temp))?;
        // 3. One buffer, written whole, then synced.
        let written = file
            .write_all(buf)
            .map_err(io_error("write temp file", &temp))
            .and_then(|()| file.sync_all().map_err(io_error("sync temp file", &temp)));
        drop(file);
        // 4. Into place: rename (Save) or hard link (Create).
        let placed = written.and_then(|()| {
            place(&temp, &paths.snapshot, create).map_err(|error| {
                if create && error.kind() == io::ErrorKind::AlreadyExists {
                    StoreError::AlreadyExists { id: id.clone() }
                } else {
                    let op = if create {
                        "link the temp file to"
                    } else {
                        "rename the temp file to"
                    };
                    io_error(op, &paths.snapshot)(error)
                }
            })
        });
        // 5. The temp name goes in every case (after a link it is a second name).
        let removed = std::fs::remove_file(&temp);
        placed?;
        if let Err(error) = removed
            && create
        {
            tracing::warn!(
                session_id = %id,
                path = %temp.display(),
                error = %error,
                "jsonlstore: could not remove the temp name after Create; the next Save removes it"
            );
        }
        self.sync_dir(id)
    }

    /// Removes `.<token>.session.json.*.tmp` files of a session.
    fn remove_temp_files(&self, id: &SessionId) -> Result<(), StoreError> {
        let prefix = format!(".{}{SNAPSHOT_SUFFIX}.", token::token(id.as_str()));
        let entries = std::fs::read_dir(&self.dir).map_err(|source| StoreError::Io {
            id: id.clone(),
            op: "read directory",
            path: self.dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(&prefix) && name.ends_with(TEMP_SUFFIX) {
                let path = entry.path();
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(source) => {
                        return Err(StoreError::Io {
                            id: id.clone(),
                            op: "remove stale temp file",
                            path,
                            source,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Load: a pure reader of the snapshot file.
    fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        let path = self.paths(id).snapshot;
        let (file, meta) = match fsio::open_read(&path) {
            Ok(opened) => opened,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound { id: id.clone() });
            }
            Err(source) => {
                return Err(StoreError::Io {
                    id: id.clone(),
                    op: "open",
                    path,
                    source,
                });
            }
        };
        let limit = self.opts.max_snapshot_bytes;
        if meta.len() > limit {
            return Err(StoreError::TooLarge {
                id: id.clone(),
                bytes: meta.len(),
                limit,
            });
        }
        let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
        file.take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|source| StoreError::Io {
                id: id.clone(),
                op: "read",
                path: path.clone(),
                source,
            })?;
        let corrupt = |reason: String| StoreError::Corrupt {
            id: id.clone(),
            file: path.display().to_string(),
            line: None,
            reason,
            prefix: Vec::new(),
        };
        let envelope = snapshot::decode::<SessionSnapshot>(&buf).map_err(corrupt)?;
        if envelope.id != *id {
            return Err(corrupt(format!(
                "the file holds session {:?}, not the requested one",
                envelope.id.as_str()
            )));
        }
        if envelope.snapshot.id != envelope.id {
            return Err(corrupt(
                "the envelope id and the snapshot's own id differ".to_owned(),
            ));
        }
        Ok(envelope.snapshot)
    }

    /// List: ids read from snapshot contents; bad files are skipped with a WARN.
    fn list(&self) -> Result<Vec<SessionListing>, StoreError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| StoreError::StoreDir {
            path: self.dir.clone(),
            reason: "cannot read the directory".to_owned(),
            source: Some(source),
        })?;
        let mut buf = Vec::new();
        let mut listings = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| StoreError::StoreDir {
                path: self.dir.clone(),
                reason: "cannot read the directory".to_owned(),
                source: Some(source),
            })?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(SNAPSHOT_SUFFIX)) else {
                continue;
            };
            let path = entry.path();
            match self.list_entry(&path, stem, &mut buf) {
                Ok(Some(listing)) => listings.push(listing),
                Ok(None) => {}
                Err(reason) => tracing::warn!(
                    path = %path.display(),
                    reason = %reason,
                    "jsonlstore: skipping a snapshot file in List"
                ),
            }
        }
        listings.sort_by(|a, b| a.id.as_str().as_bytes().cmp(b.id.as_str().as_bytes()));
        Ok(listings)
    }

    /// One List entry; `Ok(None)` when the file vanished (deleted meanwhile).
    fn list_entry(
        &self,
        path: &Path,
        stem: &str,
        buf: &mut Vec<u8>,
    ) -> Result<Option<SessionListing>, String> {
        let (file, meta) = match fsio::open_read(path) {
            Ok(opened) => opened,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error.to_string()),
        };
        let limit = self.opts.max_snapshot_bytes;
        if meta.len() > limit {
            return Err(format!(
                "{} bytes exceed the {limit}-byte snapshot limit",
                meta.len()
            ));
        }
        buf.clear();
        file.take(limit.saturating_add(1))
            .read_to_end(buf)
            .map_err(|e| format!("read failed: {e}"))?;
        let envelope = snapshot::decode::<IgnoredAny>(buf)?;
        if envelope.id.is_empty() {
            return Err("the stored session id is empty".to_owned());
        }
        if token::token(envelope.id.as_str()) != stem {
            return Err("the file name does not match the session id stored inside".to_owned());
        }
        let modified_at = meta
            .modified()
            .map_err(|e| format!("no modification time: {e}"))?;
        Ok(Some(SessionListing {
            id: envelope.id,
            modified_at,
        }))
    }

    /// Delete: refused while a run holds the session; sidecars, then the
    /// snapshot, then the run lease and lock files.
    fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let paths = self.paths(id);
        let lock = self.lock(id, &paths, LockMode::Exclusive, self.opts.lock_timeout)?;
        let run = self.run_lock(id, &paths)?;
        self.sync_session(id)?;
        let remove = |path: &Path| match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::Io {
                id: id.clone(),
                op: "remove",
                path: path.to_owned(),
                source,
            }),
        };
        remove(&paths.tools)?;
        remove(&paths.events)?;
        self.remove_temp_files(id)?;
        // The snapshot goes last: a partly deleted session stays listed and a later
        // Delete retries it.
        remove(&paths.snapshot)?;
        self.sync_dir(id)?;
        // Unlinked while held: lockers waiting on these inodes notice and start over.
        remove(&paths.run)?;
        drop(run);
        remove(&paths.lock)?;
        drop(lock);
        Ok(())
    }

    /// Append of one encoded record to a sidecar, under the exclusive lock.
    fn append(
        &self,
        id: &SessionId,
        sidecar: &Path,
        buf: &[u8],
        timeout: Duration,
    ) -> Result<(), StoreError> {
        let paths = self.paths(id);
        let _lock = self.lock(id, &paths, LockMode::Exclusive, timeout)?;
        let appended = sidecar::append_record(sidecar, buf).map_err(|error| StoreError::Io {
            id: id.clone(),
            op: error.op,
            path: sidecar.to_owned(),
            source: error.source,
        })?;
        if appended.cut > 0 {
            tracing::warn!(
                session_id = %id,
                path = %sidecar.display(),
                bytes_cut = appended.cut,
                "jsonlstore: cut a torn write (an unterminated last fragment) before appending"
            );
        }
        let sync_data = |file: &File| {
            file.sync_data().map_err(|source| StoreError::Io {
                id: id.clone(),
                op: "sync",
                path: sidecar.to_owned(),
                source,
            })
        };
        if appended.created && self.opts.sync != SyncPolicy::Never {
            self.sync_dir(id)?;
        }
        match (&self.opts.sync, &self.flusher) {
            (SyncPolicy::Never, _) => {}
            (SyncPolicy::Batched { .. }, Some(flusher)) => {
                let key = fsio::identity(&appended.meta);
                let queued = flusher
                    .register(id, sidecar, key, &appended.file)
                    .map_err(|source| StoreError::Io {
                        id: id.clone(),
                        op: "queue the sync of",
                        path: sidecar.to_owned(),
                        source,
                    })?;
                if !queued {
                    sync_data(&appended.file)?;
                }
            }
            (SyncPolicy::Always | SyncPolicy::Batched { .. }, _) => sync_data(&appended.file)?,
        }
        Ok(())
    }

    /// Opens a sidecar for reading and finds its committed window under a brief
    /// shared lock. `None` when the file does not exist.
    fn open_window(
        &self,
        id: &SessionId,
        paths: &SessionPaths,
        path: &Path,
    ) -> Result<Option<LineReader>, StoreError> {
        let io_error = |op: &'static str| {
            let id = id.clone();
            let path = path.to_owned();
            move |source| StoreError::Io { id, op, path, source }
        };
        let file = match fsio::open_read(path) {
            Ok((file, _)) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io_error("open")(error)),
        };
        let lock = self.lock(id, paths, LockMode::Shared, self.opts.lock_timeout)?;
        let len = fsio::regular_file(&file).map_err(io_error("stat"))?.len();
        let bound = (self.opts.max_record_bytes as u64).saturating_add(1);
        let window = sidecar::committed_len(&file, len, Some(bound)).map_err(io_error("read the tail of"))?;
        drop(lock);
        // The probe used positioned reads: the offset is still 0.
        Ok(Some(LineReader::new(file, window, self.opts.max_record_bytes)))
    }

    fn read_all_events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.drain_appender(id)?;
        let paths = self.paths(id);
        let lines = self.open_window(id, &paths, &paths.events)?;
        let mut events = Vec::new();
        for item in EventIter::new(lines, id.clone(), paths.events) {
            match item {
                Ok(event) => events.push(event),
                Err(StoreError::Corrupt {
                    id,
                    file,
                    line,
                    reason,
                    ..
                }) => {
                    return Err(StoreError::Corrupt {
                        id,
                        file,
                        line,
                        reason,
                        prefix: events,
                    });
                }
                Err(other) => return Err(other),
            }
        }
        Ok(events)
    }
}

/// Puts a fully written temp file in place: `rename` over the target (Save), or
/// `hard_link` to it (Create), which fails with `AlreadyExists` if the target exists,
/// even when a writer that ignores the lock created it a moment ago.
fn place(temp: &Path, target: &Path, create: bool) -> io::Result<()> {
    if create {
        std::fs::hard_link(temp, target)
    } else {
        std::fs::rename(temp, target)
    }
}

fn check_id(id: &SessionId) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::InvalidId {
            reason: "the session id is empty".to_owned(),
        });
    }
    Ok(())
}

fn sync_error(failure: SyncFailure) -> StoreError {
    StoreError::Io {
        id: failure.session,
        op: "sync",
        path: failure.path,
        source: failure.source,
    }
}

/// Creates a store directory (mode `0700`) or checks an existing one.
fn prepare_dir(dir: &Path) -> Result<(), StoreError> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            if let Some(mode) = fsio::loose_dir_mode(&meta) {
                tracing::warn!(
                    path = %dir.display(),
                    mode = %format!("{mode:04o}"),
                    "jsonlstore: the store directory is accessible to group or others (the store creates 0700)"
                );
            }
            Ok(())
        }
        Ok(meta) => Err(StoreError::StoreDir {
            path: dir.to_owned(),
            reason: format!("exists and is a {}, not a directory", fsio::file_kind(&meta)),
            source: None,
        }),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            fsio::create_dir(dir)
                .map(drop)
                .map_err(|source| StoreError::StoreDir {
                    path: dir.to_owned(),
                    reason: "cannot create the directory".to_owned(),
                    source: Some(source),
                })
        }
        Err(source) => Err(StoreError::StoreDir {
            path: dir.to_owned(),
            reason: "cannot inspect the directory".to_owned(),
            source: Some(source),
        }),
    }
}

/// Removes snapshot temp files older than [`STALE_TEMP_AGE`] (best effort).
fn remove_stale_temp_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let is_temp = name.starts_with('.') && name.ends_with(TEMP_SUFFIX) && name.contains(SNAPSHOT_SUFFIX);
        if !is_temp {
            continue;
        }
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|modified| now.duration_since(modified).unwrap_or_default() > STALE_TEMP_AGE);
        if stale {
            let path = entry.path();
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::warn!(
                    path = %path.display(),
                    error = %error,
                    "jsonlstore: could not remove a stale temp file"
                );
            }
        }
    }
}

#[async_trait]
impl SessionStore for JsonlStore {
    async fn create(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        let buf = self.snapshot_buffer(snapshot)?;
        let id = snapshot.id.clone();
        self.blocking(&snapshot.id, move |inner| inner.write_snapshot(&id, &buf, true))
            .await
    }

    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        check_id(id)?;
        let owned = id.clone();
        self.blocking(id, move |inner| inner.load(&owned)).await
    }

    async fn save(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        let buf = self.snapshot_buffer(snapshot)?;
        let id = snapshot.id.clone();
        self.blocking(&snapshot.id, move |inner| inner.write_snapshot(&id, &buf, false))
            .await
    }

    async fn list(&self) -> Result<Vec<SessionListing>, StoreError> {
        self.blocking(&SessionId::default(), Inner::list).await
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        check_id(id)?;
        let owned = id.clone();
        self.blocking(id, move |inner| inner.delete(&owned)).await
    }

    /// The exclusive lock of `<token>.run`, taken without waiting. The kernel drops
    /// it when the holder's process dies, so a crashed run never keeps its session.
    async fn acquire_run(&self, id: &SessionId) -> Result<RunLease, StoreError> {
        check_id(id)?;
        let owned = id.clone();
        let run = self
            .blocking(id, move |inner| inner.run_lock(&owned, &inner.paths(&owned)))
            .await?;
        let inner = &self.inner;
        let paths = inner.paths(id);
        let appender = Arc::new(Appender::new(AppenderConfig {
            id: id.clone(),
            lock: paths.lock,
            events: paths.events,
            tools: paths.tools,
            dir: inner.dir.clone(),
            sync: inner.opts.sync,
            flusher: inner.flusher.clone(),
            dropped: Arc::clone(&inner.dropped),
        }));
        lock_map(&inner.appenders).insert(id.clone(), Arc::clone(&appender));
        let guard = RunGuard {
            inner: Arc::clone(inner),
            appender,
            id: id.clone(),
            _run: run,
        };
        Ok(RunLease::new(id.clone(), guard))
    }
}

#[async_trait]
impl EventLog for JsonlStore {
    async fn append(&self, session: &SessionId, event: &Event) -> Result<(), StoreError> {
        check_id(session)?;
        let buf = self.record_buffer(session, &EventLine::new(event))?;
        let timeout = self.inner.opts.lock_timeout;
        let Some(buf) = self.leased_append(session, Sidecar::Events, buf, timeout).await? else {
            return Ok(());
        };
        let id = session.clone();
        self.blocking(session, move |inner| {
            let path = inner.paths(&id).events;
            inner.append(&id, &path, &buf, inner.opts.lock_timeout)
        })
        .await
    }

    async fn read(&self, session: &SessionId) -> Result<Vec<Event>, StoreError> {
        check_id(session)?;
        let id = session.clone();
        self.blocking(session, move |inner| inner.read_all_events(&id))
            .await
    }

    async fn flush(&self, session: &SessionId) -> Result<(), StoreError> {
        self.flush_session(session).await
    }
}

#[async_trait]
impl ToolCallRecorder for JsonlStore {
    async fn record(
        &self,
        session: &SessionId,
        call: &ToolCall,
        result: &ToolResult,
        approval: &Approval,
        queued: Duration,
        took: Duration,
    ) -> Result<(), RecorderError> {
        let written = async {
            check_id(session)?;
            let record = ToolCallRecord::new(session, call, result, queued, took, SystemTime::now())
                .with_approval(*approval);
            let buf = self.record_buffer(session, &record)?;
            let timeout = self.inner.opts.recorder_lock_timeout;
            let Some(buf) = self.leased_append(session, Sidecar::Tools, buf, timeout).await? else {
                return Ok(());
            };
            let id = session.clone();
            self.blocking(session, move |inner| {
                let path = inner.paths(&id).tools;
                inner.append(&id, &path, &buf, inner.opts.recorder_lock_timeout)
            })
            .await
        }
        .await;
        written.map_err(|error| {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                session_id = %session,
                call_id = %call.id(),
                tool = %call.name(),
                error = %error,
                "jsonlstore: dropped a tool-call audit record"
            );
            RecorderError::failed(session, call, error.to_string())
        })
    }

    async fn flush(&self, session: &SessionId) -> Result<(), RecorderError> {
        self.flush_session(session)
            .await
            .map_err(|error| RecorderError::lost(session, error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sidecar::seam;
    use engine_ports::EventKind;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            time: None,
            kind: EventKind::MessageDelta {
                text: format!("event {seq}"),
            },
        }
    }

    /// A write that fails after half the buffer leaves the events file
    /// at its old length and returns an error naming the id.
    #[tokio::test]
    async fn a_short_write_leaves_the_file_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::open(dir.path(), StoreOptions::default()).unwrap();
        let id = SessionId::from("sess-short");
        store.append(&id, &event(1)).await.unwrap();
        let path = store.paths(&id).events;
        let before = std::fs::metadata(&path).unwrap().len();
        for fault in [seam::Fault::FailAfterHalf, seam::Fault::SilentlyShort] {
            seam::inject(&path, fault);
            let error = store.append(&id, &event(2)).await.unwrap_err();
            assert!(error.to_string().contains("\"sess-short\""), "{error}");
            assert_eq!(std::fs::metadata(&path).unwrap().len(), before, "{fault:?}");
        }
        store.append(&id, &event(3)).await.unwrap();
        let seqs: Vec<u64> = store.read(&id).await.unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 3]);
    }

    #[test]
    fn create_placement_never_replaces_an_existing_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("temp");
        let target = dir.path().join("target");
        std::fs::write(&temp, b"new").unwrap();
        std::fs::write(&target, b"old").unwrap();
        let error = place(&temp, &target, true).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        place(&temp, &target, false).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }

    /// Created 0600 even under umask 000. The umask is set
    /// by re-running this test binary in a child under `sh -c 'umask 000; …'`.
    #[test]
    fn temp_files_are_0600_under_umask_000() {
        use std::os::unix::fs::PermissionsExt;
        const CHILD_ENV: &str = "JSONLSTORE_UNIT_UMASK_CHILD";
        if let Ok(dir) = std::env::var(CHILD_ENV) {
            let file = fsio::create_new(&Path::new(&dir).join(".t.session.json.0.tmp")).unwrap();
            drop(file);
            std::fs::write(Path::new(&dir).join("plain"), b"x").unwrap();
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("umask 000 && exec \"$0\" --exact store::tests::temp_files_are_0600_under_umask_000 --quiet")
            .arg(std::env::current_exe().unwrap())
            .env(CHILD_ENV, dir.path())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let mode = |name: &str| {
            std::fs::metadata(dir.path().join(name))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        // The control file proves the child really ran under umask 000.
        assert_eq!(mode("plain"), 0o666);
        assert_eq!(mode(".t.session.json.0.tmp"), 0o600);
    }
}
