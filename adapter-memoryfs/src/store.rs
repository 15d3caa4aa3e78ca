//! [`MemoryFs`]: the store, its options, reads through the identity cache and the
//! locked, atomic write path.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine_ports::{
    Applied, CachedDocument, Clock, LoadedDocument, MAX_MEMORY_DOCUMENT_BYTES, MemoryDocument, MemoryEntry,
    MemoryError, MemoryHit, MemoryIndexEntry, MemoryPrefix, MemoryRevision, MemoryStore, MemoryWrite,
    SystemClock,
};
use serde::Deserialize;

use crate::fsio::{self, FileId};
use crate::lock::{LockError, WriteLock};

/// The document's file name inside the directory.
pub const DOCUMENT_FILE: &str = "memory.json";
/// The lock file's name.
pub const LOCK_FILE: &str = "memory.lock";
/// How temp files of a write in progress start (a crashed writer's are removed by the
/// next write).
pub const TEMP_PREFIX: &str = ".memory.json.tmp-";
/// The `format` of the document envelope.
pub const FORMAT: &str = "mecatl-memory/1";

/// The envelope around the document: `{"format":FORMAT,"document":` … `}`.
const ENVELOPE_HEAD: &str = "{\"format\":\"mecatl-memory/1\",\"document\":";
const ENVELOPE_TAIL: &str = "}\n";
/// How much of the file the cache check reads: the envelope's head and the `seq`.
const HEAD_BYTES: u64 = 64;
/// The largest file read: a full document and its envelope.
const MAX_FILE_BYTES: u64 = MAX_MEMORY_DOCUMENT_BYTES as u64 + 1024;

/// The document `seq` at the head of a file this store wrote
/// (`{"format":"mecatl-memory/1","document":{"seq":N,`); `None` for any other head.
fn head_seq(head: &[u8]) -> Option<u64> {
    let rest = head
        .strip_prefix(ENVELOPE_HEAD.as_bytes())?
        .strip_prefix(b"{\"seq\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits) != Some(&b',') {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// Options of [`MemoryFs::open`].
#[derive(Clone)]
pub struct MemoryFsOptions {
    /// The longest a write waits for another writer's lock (default 10 s).
    pub lock_timeout: Duration,
    /// Stamps writes (default: the system clock).
    pub clock: Arc<dyn Clock>,
}

impl Default for MemoryFsOptions {
    fn default() -> Self {
        Self {
            lock_timeout: Duration::from_secs(10),
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for MemoryFsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryFsOptions")
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

/// One memory scope in one directory. Cheap to share (`Arc`); any number of values
/// and processes may use one directory at once.
pub struct MemoryFs {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    file: PathBuf,
    lock: PathBuf,
    options: MemoryFsOptions,
    /// The last document read or written, with the identity of its file.
    cache: CachedDocument<Option<FileId>>,
}

/// One parsed version of the file; `None`: no file yet (an empty scope).
type Loaded = LoadedDocument<Option<FileId>>;

impl std::fmt::Debug for MemoryFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryFs")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Probe {
    format: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    #[allow(dead_code)] // checked by the probe
    format: String,
    document: MemoryDocument,
}

impl MemoryFs {
    /// A store over `dir`. Nothing is read or created until the first operation; a
    /// missing directory is an empty scope, created (`0700`) by the first write.
    pub fn open(dir: impl Into<PathBuf>, options: MemoryFsOptions) -> Self {
        let dir = dir.into();
        Self {
            inner: Arc::new(Inner {
                file: dir.join(DOCUMENT_FILE),
                lock: dir.join(LOCK_FILE),
                dir,
                options,
                cache: CachedDocument::default(),
            }),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The document file.
    pub fn file(&self) -> &Path {
        &self.inner.file
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Inner) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, MemoryError> {
        let inner = Arc::clone(&self.inner);
        match tokio::task::spawn_blocking(move || work(&inner)).await {
            Ok(result) => result,
            Err(error) => Err(MemoryError::Io {
                op: "task",
                path: self.inner.dir.clone(),
                source: std::io::Error::other(error.to_string()),
            }),
        }
    }
}

impl Inner {
    fn io(&self, op: &'static str, path: &Path, source: std::io::Error) -> MemoryError {
        MemoryError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    fn corrupt(&self, reason: String) -> MemoryError {
        MemoryError::Corrupt {
            path: self.file.clone(),
            reason,
        }
    }

    /// The current document: the cached one while the file is the same one (its
    /// identity and the `seq` at the head of the file both match), else read and
    /// decoded (and cached). The head check covers a new file that reuses the old
    /// one's inode number within the same timestamp tick.
    fn load(&self) -> Result<Arc<Loaded>, MemoryError> {
        let cached = self.cache.get();
        let Some((mut file, meta)) =
            fsio::open_read(&self.file).map_err(|e| self.io("open", &self.file, e))?
        else {
            if let Some(cached) = cached.filter(|c| c.version.is_none()) {
                return Ok(cached);
            }
            let loaded = Arc::new(Loaded::new(None, MemoryDocument::new()));
            self.cache.set(&loaded);
            return Ok(loaded);
        };
        let id = fsio::identity(&meta);
        if meta.len() > MAX_FILE_BYTES {
            return Err(self.corrupt(format!(
                "it is {} bytes, more than a memory document can be ({MAX_FILE_BYTES})",
                meta.len()
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or_default());
        (&mut file)
            .take(HEAD_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io("read", &self.file, e))?;
        if let Some(cached) = cached
            && cached.version == Some(id)
            && head_seq(&bytes) == Some(cached.document.seq())
        {
            return Ok(cached);
        }
        file.take(MAX_FILE_BYTES + 1 - HEAD_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io("read", &self.file, e))?;
        let document = self.decode(&bytes)?;
        let loaded = Arc::new(Loaded::new(Some(id), document));
        self.cache.set(&loaded);
        Ok(loaded)
    }

    fn decode(&self, bytes: &[u8]) -> Result<MemoryDocument, MemoryError> {
        let probe: Probe = serde_json::from_slice(bytes).map_err(|e| {
            self.corrupt(format!(
                "it is not valid JSON ({e}); a torn or hand-edited file is never replaced"
            ))
        })?;
        match probe.format {
            Some(serde_json::Value::String(format)) if format == FORMAT => {}
            Some(other) => {
                return Err(MemoryError::Foreign {
                    path: self.file.clone(),
                    reason: format!("its format is {other}, expected {FORMAT:?}"),
                });
            }
            None => {
                return Err(MemoryError::Foreign {
                    path: self.file.clone(),
                    reason: format!("it has no \"format\" field; expected {FORMAT:?}"),
                });
            }
        }
        let envelope: Envelope =
            serde_json::from_slice(bytes).map_err(|e| self.corrupt(format!("it does not decode: {e}")))?;
        envelope.document.check().map_err(|reason| self.corrupt(reason))?;
        Ok(envelope.document)
    }

    /// Runs one change under the lock: load, apply, write atomically, cache.
    fn write<T>(
        &self,
        change: impl FnOnce(&mut MemoryDocument) -> Result<Applied<T>, MemoryError>,
    ) -> Result<T, MemoryError> {
        fsio::create_dir(&self.dir).map_err(|e| self.io("create directory", &self.dir, e))?;
        let _lock =
            WriteLock::acquire(&self.lock, self.options.lock_timeout).map_err(|error| match error {
                LockError::Timeout(waited) => MemoryError::LockTimeout {
                    path: self.dir.clone(),
                    waited,
                },
                LockError::Io(source) => self.io("lock", &self.lock, source),
            })?;
        self.remove_stale_temps();
        let current = self.load()?;
        let mut document = current.document.clone();
        let applied = change(&mut document)?;
        let id = self.replace(&applied.json)?;
        self.cache.set(&Arc::new(Loaded::new(Some(id), document)));
        Ok(applied.outcome)
    }

    /// temp (`O_EXCL`, 0600) + write + `fsync` + rename + directory `fsync`.
    fn replace(&self, document: &[u8]) -> Result<FileId, MemoryError> {
        let temp = self.dir.join(format!("{TEMP_PREFIX}{:016x}", fastrand::u64(..)));
        let mut file = fsio::create_new(&temp).map_err(|e| self.io("create", &temp, e))?;
        let written = (|| {
            file.write_all(ENVELOPE_HEAD.as_bytes())?;
            file.write_all(document)?;
            file.write_all(ENVELOPE_TAIL.as_bytes())?;
            file.sync_all()?;
            file.metadata()
        })();
        let meta = match written {
            Ok(meta) => meta,
            Err(error) => {
                let _ = std::fs::remove_file(&temp);
                return Err(self.io("write", &temp, error));
            }
        };
        if let Err(error) = std::fs::rename(&temp, &self.file) {
            let _ = std::fs::remove_file(&temp);
            return Err(self.io("rename", &self.file, error));
        }
        fsio::sync_dir(&self.dir).map_err(|e| self.io("sync directory", &self.dir, e))?;
        Ok(fsio::identity(&meta))
    }

    /// Temp files left by a writer that died mid-write (only lock holders write them).
    fn remove_stale_temps(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                let path = entry.path();
                match std::fs::remove_file(&path) {
                    Ok(()) => {
                        tracing::info!(path = %path.display(), "removed a temp file of an interrupted memory write")
                    }
                    Err(error) => {
                        tracing::warn!(path = %path.display(), %error, "a stale memory temp file was not removed")
                    }
                }
            }
        }
    }
}

#[async_trait]
impl MemoryStore for MemoryFs {
    async fn get(&self, key: &str) -> Result<Option<MemoryEntry>, MemoryError> {
        let key = key.to_owned();
        self.blocking(move |inner| Ok(inner.load()?.document.get(&key)))
            .await
    }

    async fn put_many(&self, writes: Vec<MemoryWrite>) -> Result<Vec<MemoryEntry>, MemoryError> {
        self.blocking(move |inner| {
            let now = inner.options.clock.now();
            inner.write(|document| document.put_many(writes, now))
        })
        .await
    }

    async fn forget(&self, key: &str, expected_version: u64, writer: &str) -> Result<u64, MemoryError> {
        let key = key.to_owned();
        let writer = writer.to_owned();
        self.blocking(move |inner| {
            let now = inner.options.clock.now();
            inner.write(|document| document.forget(&key, expected_version, &writer, now))
        })
        .await
    }

    async fn prefix(&self, prefix: &str, limit: usize) -> Result<MemoryPrefix, MemoryError> {
        let prefix = prefix.to_owned();
        self.blocking(move |inner| Ok(inner.load()?.document.prefix(&prefix, limit)))
            .await
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<MemoryHit>, MemoryError> {
        let query = query.to_owned();
        self.blocking(move |inner| Ok(inner.load()?.search().search(&query, limit)))
            .await
    }

    async fn index(&self) -> Result<Vec<MemoryIndexEntry>, MemoryError> {
        self.blocking(|inner| Ok(inner.load()?.document.index())).await
    }

    async fn history(&self, key: &str) -> Result<Vec<MemoryRevision>, MemoryError> {
        let key = key.to_owned();
        self.blocking(move |inner| Ok(inner.load()?.document.history(&key)))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::head_seq;

    #[test]
    fn the_head_names_the_seq_of_documents_this_store_wrote() {
        assert_eq!(
            head_seq(br#"{"format":"mecatl-memory/1","document":{"seq":42,"keys":{}}}"#),
            Some(42)
        );
        assert_eq!(
            head_seq(br#"{"format":"mecatl-memory/1","document":{"keys":{},"seq":42}}"#),
            None
        );
        assert_eq!(
            head_seq(br#"{"format":"mecatl-memory/1","document":{"seq":42"#),
            None
        );
        assert_eq!(head_seq(b""), None);
    }
}
