//! [`JsonlStore`]: construction, paths, locks and the run leases' appenders. The
//! session lifecycle (snapshots, the run lease, `SessionStore`) lives in `sessions`;
//! the sidecars (appends, reads, `EventLog`, `ToolCallRecorder`) in `appends`.

mod appends;
mod sessions;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use engine_ports::{SessionId, StoreError};

use crate::appender::{Appender, Writer};
use crate::flusher::{Flusher, SyncFailure};
use crate::lock::{LockError, LockMode, SessionLock};
use crate::options::{StoreOptions, SyncPolicy};
use crate::threads::lock;
use crate::{fsio, token};

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
}

impl Inner {
    /// The appender of a session a run lease of this store holds.
    fn appender(&self, id: &SessionId) -> Option<Arc<Appender>> {
        lock(&self.appenders).get(id).cloned()
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
        let appenders: Vec<Arc<Appender>> = lock(&self.appenders).values().cloned().collect();
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

#[cfg(test)]
mod tests {
    use engine_ports::EventLog as _;
    use engine_ports::testkit::event_log::delta;

    use super::sessions::place;
    use super::*;
    use crate::sidecar::seam;

    /// A write that fails after half the buffer leaves the events file
    /// at its old length and returns an error naming the id.
    #[tokio::test]
    async fn a_short_write_leaves_the_file_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonlStore::open(dir.path(), StoreOptions::default()).unwrap();
        let id = SessionId::from("sess-short");
        store.append(&id, &delta(1, "x")).await.unwrap();
        let path = store.paths(&id).events;
        let before = std::fs::metadata(&path).unwrap().len();
        for fault in [seam::Fault::FailAfterHalf, seam::Fault::SilentlyShort] {
            seam::inject(&path, fault);
            let error = store.append(&id, &delta(2, "x")).await.unwrap_err();
            assert!(error.to_string().contains("\"sess-short\""), "{error}");
            assert_eq!(std::fs::metadata(&path).unwrap().len(), before, "{fault:?}");
        }
        store.append(&id, &delta(3, "x")).await.unwrap();
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
