//! The session lifecycle of [`JsonlStore`]: snapshot Save and Create (temp file,
//! fsync, rename or link), Load, List and Delete, and the run lease.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::PermissionMode;
use engine_ports::{RunLease, SessionId, SessionListing, SessionSnapshot, SessionStore, StoreError};
use serde::Deserialize;

use super::{Inner, JsonlStore, SNAPSHOT_SUFFIX, TEMP_SUFFIX, check_id};
use crate::appender::{Appender, AppenderConfig};
use crate::lock::{LockMode, SessionLock};
use crate::threads::lock;
use crate::{fsio, snapshot, token};

impl JsonlStore {
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

impl Inner {
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
        let envelope = snapshot::decode::<ListedFields>(buf)?;
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
            mode: envelope.snapshot.mode,
            turns: envelope.snapshot.turns,
            tool_calls: envelope.snapshot.tool_calls,
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
}

/// Puts a fully written temp file in place: `rename` over the target (Save), or
/// `hard_link` to it (Create), which fails with `AlreadyExists` if the target exists,
/// even when a writer that ignores the lock created it a moment ago.
pub(super) fn place(temp: &Path, target: &Path, create: bool) -> io::Result<()> {
    if create {
        std::fs::hard_link(temp, target)
    } else {
        std::fs::rename(temp, target)
    }
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
            let mut appenders = lock(&self.inner.appenders);
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
        lock(&inner.appenders).insert(id.clone(), Arc::clone(&appender));
        let guard = RunGuard {
            inner: Arc::clone(inner),
            appender,
            id: id.clone(),
            _run: run,
        };
        Ok(RunLease::new(id.clone(), guard))
    }

    /// The `sid-v1/` directory is still there and still a directory (a `stat`, off
    /// the async workers): a store whose directory was removed or unmounted fails.
    async fn probe(&self) -> Result<(), StoreError> {
        self.blocking(&SessionId::default(), |inner| {
            let failed = |reason: String, source: Option<std::io::Error>| StoreError::StoreDir {
                path: inner.dir.clone(),
                reason,
                source,
            };
            match std::fs::metadata(&inner.dir) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(failed("it is no longer a directory".to_owned(), None)),
                Err(error) => Err(failed("it cannot be read".to_owned(), Some(error))),
            }
        })
        .await
    }
}

/// What a listing reads of a snapshot (the conversation is skipped, not kept).
#[derive(Deserialize)]
struct ListedFields {
    #[serde(default)]
    mode: PermissionMode,
    #[serde(default)]
    turns: u64,
    #[serde(default)]
    tool_calls: u64,
}
