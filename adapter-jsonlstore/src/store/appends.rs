//! The sidecars of [`JsonlStore`]: appending events and audit records (through a
//! leased session's appender, or locked one by one), reading them back, and both
//! ports' `flush`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use engine_ports::{
    Event, EventLog, RecorderError, SessionId, StoreError, ToolCallLog, ToolCallRecord, ToolCallRecorder,
};

use super::{Inner, JsonlStore, SessionPaths, check_id};
use crate::appender::{Pushed, Sidecar};
use crate::lock::LockMode;
use crate::options::SyncPolicy;
use crate::reader::{EventIter, EventLine, LineReader, ToolCallIter};
use crate::{fsio, sidecar};

impl JsonlStore {
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
        let (lines, path) = self.open_sidecar(id, Sidecar::Events)?;
        Ok(EventIter::events(lines, id.clone(), path))
    }

    /// The tool-call audit records of a session in append order, read lazily, with
    /// the framing and error rules of [`JsonlStore::read_events`].
    ///
    /// # Errors
    /// As [`JsonlStore::read_events`].
    pub fn read_tool_calls(&self, id: &SessionId) -> Result<ToolCallIter, StoreError> {
        let (lines, path) = self.open_sidecar(id, Sidecar::Tools)?;
        Ok(ToolCallIter::tool_calls(lines, id.clone(), path))
    }

    /// The committed window of a session's `sidecar` (`None`: no file) and its path,
    /// once what a leased appender buffers for the session is written.
    fn open_sidecar(
        &self,
        id: &SessionId,
        sidecar: Sidecar,
    ) -> Result<(Option<LineReader>, PathBuf), StoreError> {
        check_id(id)?;
        self.inner.drain_appender(id)?;
        let paths = self.inner.paths(id);
        let path = paths.sidecar(sidecar);
        let lines = self.inner.open_window(id, &paths, path)?;
        Ok((lines, path.to_owned()))
    }

    /// Appends one record to the `sidecar` of `id`: through the session's appender
    /// when it is leased, else under the session's lock, waited for at most `timeout`.
    async fn append_record<T: serde::Serialize>(
        &self,
        id: &SessionId,
        sidecar: Sidecar,
        record: &T,
        timeout: Duration,
    ) -> Result<(), StoreError> {
        check_id(id)?;
        let buf = self.record_buffer(id, record)?;
        let Some(buf) = self.leased_append(id, sidecar, buf, timeout).await? else {
            return Ok(());
        };
        let owned = id.clone();
        self.blocking(id, move |inner| inner.append(&owned, sidecar, &buf, timeout))
            .await
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
}

impl SessionPaths {
    /// The path of `sidecar`.
    fn sidecar(&self, sidecar: Sidecar) -> &Path {
        match sidecar {
            Sidecar::Events => &self.events,
            Sidecar::Tools => &self.tools,
        }
    }
}

impl Inner {
    /// Append of one encoded record to a sidecar, under the exclusive lock.
    fn append(
        &self,
        id: &SessionId,
        sidecar: Sidecar,
        buf: &[u8],
        timeout: Duration,
    ) -> Result<(), StoreError> {
        let paths = self.paths(id);
        let sidecar = paths.sidecar(sidecar);
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
        for item in EventIter::events(lines, id.clone(), paths.events) {
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

#[async_trait]
impl EventLog for JsonlStore {
    async fn append(&self, session: &SessionId, event: &Event) -> Result<(), StoreError> {
        let timeout = self.inner.opts.lock_timeout;
        self.append_record(session, Sidecar::Events, &EventLine::new(event), timeout)
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
impl ToolCallLog for JsonlStore {
    async fn read(&self, session: &SessionId) -> Result<Vec<ToolCallRecord>, StoreError> {
        check_id(session)?;
        let id = session.clone();
        self.blocking(session, move |inner| {
            inner.drain_appender(&id)?;
            let paths = inner.paths(&id);
            let lines = inner.open_window(&id, &paths, &paths.tools)?;
            ToolCallIter::tool_calls(lines, id.clone(), paths.tools.clone()).collect()
        })
        .await
    }
}

#[async_trait]
impl ToolCallRecorder for JsonlStore {
    async fn record(&self, record: &ToolCallRecord) -> Result<(), RecorderError> {
        let session = &record.session_id;
        let timeout = self.inner.opts.recorder_lock_timeout;
        let written = self.append_record(session, Sidecar::Tools, record, timeout).await;
        written.map_err(|error| {
            self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                session_id = %session,
                call_id = %record.call_id,
                tool = %record.tool,
                error = %error,
                "jsonlstore: dropped a tool-call audit record"
            );
            RecorderError::failed(record, error.to_string())
        })
    }

    async fn flush(&self, session: &SessionId) -> Result<(), RecorderError> {
        self.flush_session(session)
            .await
            .map_err(|error| RecorderError::lost(session, error.to_string()))
    }
}
