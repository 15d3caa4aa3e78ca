//! [`PgMemoryStore`]: one memory scope as one row of `mecated_memory`.
//!
//! The row holds the scope's whole document (the `MemoryDocument` JSON every memory
//! store keeps) and a `version` the table's trigger bumps on every change.
//!
//! - **Writes** run in one transaction: the row is created empty when missing
//!   (`ON CONFLICT DO NOTHING`), locked (`SELECT … FOR UPDATE`), the change is applied
//!   through [`MemoryDocument`] (key grammar, caps, compare-and-set), the document is
//!   written back and the transaction commits. Writers on any replica queue on the
//!   row lock, so none loses another's write. A write whose reply was lost checks the
//!   row's `write_id` before trying again, so it is not applied twice.
//! - **Reads** ask the row's version on every call (one round trip that carries the
//!   document only when the version differs from the cached one) and reuse the parsed
//!   document and its search index while it is unchanged, so repeated searches cost a
//!   round trip, not a parse, and always see other replicas' writes.
//! - A stored document that does not decode or breaks a rule fails every operation
//!   with [`MemoryError::CorruptScope`] naming the scope; it is never replaced.
//! - Time limits and retries are the store's ([`PgStoreOptions::timeout`](crate::PgStoreOptions)).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine_ports::{
    Applied, CachedDocument, Clock, LoadedDocument, MemoryDocument, MemoryEntry, MemoryError, MemoryHit,
    MemoryIndexEntry, MemoryPrefix, MemoryRevision, MemoryStore, MemoryWrite, StoreError, SystemClock,
};
use uuid::Uuid;

use crate::db::{Db, retrying};
use crate::options::PgStoreOptions;
use crate::store::{OpenError, connect};
use crate::url::StoreUrl;

/// The longest scope name, in bytes.
pub const MAX_SCOPE_BYTES: usize = 1024;

/// One memory scope kept in PostgreSQL, shared by every process that names the same
/// scope on the same database. Cheap to clone.
#[derive(Clone)]
pub struct PgMemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<Db>,
    scope: String,
    clock: Arc<dyn Clock>,
    /// The last document read or written, with the row version it came from.
    cache: CachedDocument<Option<i64>>,
}

/// One version of the row, parsed; `None`: no row (an empty scope).
type Loaded = LoadedDocument<Option<i64>>;

impl std::fmt::Debug for PgMemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgMemoryStore")
            .field("target", &self.inner.db.target())
            .field("scope", &self.inner.scope)
            .finish_non_exhaustive()
    }
}

/// What one attempt of a write ended with.
enum Attempted<T> {
    /// Committed.
    Done(T, Arc<Loaded>),
    /// Refused by the memory rules (rolled back).
    Refused(MemoryError),
    /// The stored document cannot be used (rolled back).
    Corrupt(String),
}

impl PgMemoryStore {
    /// Connects to `url` with a pool of its own (as [`PgStore::open`](crate::PgStore::open)
    /// does: one bounded attempt, the encoding check, the schema migration) and serves
    /// the scope `scope`.
    ///
    /// # Errors
    /// [`OpenError`]: the scope name is unusable, or the database cannot be opened.
    pub async fn open(url: &StoreUrl, options: PgStoreOptions, scope: &str) -> Result<Self, OpenError> {
        check_scope(scope).map_err(|reason| OpenError {
            target: url.target(),
            reason,
        })?;
        let db = connect(url, &options).await?;
        Self::over(db, scope)
    }

    /// The scope `scope` over the connections of `db`.
    pub(crate) fn over(db: Arc<Db>, scope: &str) -> Result<Self, OpenError> {
        check_scope(scope).map_err(|reason| OpenError {
            target: db.target().to_owned(),
            reason,
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                db,
                scope: scope.to_owned(),
                clock: Arc::new(SystemClock),
                cache: CachedDocument::default(),
            }),
        })
    }

    /// Another scope over the same connections (its own cache).
    ///
    /// # Errors
    /// [`OpenError`] when the name is empty, too long or holds a NUL character.
    pub fn scope(&self, scope: &str) -> Result<Self, OpenError> {
        let other = Self::over(Arc::clone(&self.inner.db), scope)?;
        Ok(other.with_clock(Arc::clone(&self.inner.clock)))
    }

    /// The same scope stamping writes with `clock` (a fresh cache).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                db: Arc::clone(&self.inner.db),
                scope: self.inner.scope.clone(),
                clock,
                cache: CachedDocument::default(),
            }),
        }
    }

    /// The scope's name.
    pub fn scope_name(&self) -> &str {
        &self.inner.scope
    }

    /// `host:port/database` of the server.
    pub fn target(&self) -> &str {
        self.inner.db.target()
    }

    /// Closes the connections of this value's pool (shared with every value derived
    /// from it); later operations fail at once.
    pub fn close(&self) {
        self.inner.db.close();
    }
}

/// Empty names, names over [`MAX_SCOPE_BYTES`] and names with a NUL character (which
/// PostgreSQL text cannot hold) are refused.
fn check_scope(scope: &str) -> Result<(), String> {
    if scope.is_empty() {
        return Err("the memory scope name is empty".to_owned());
    }
    if scope.len() > MAX_SCOPE_BYTES {
        return Err(format!(
            "the memory scope name is {} bytes long; a scope name has at most {MAX_SCOPE_BYTES} bytes",
            scope.len()
        ));
    }
    if scope.contains('\0') {
        return Err(format!("memory scope name {scope:?} contains a NUL character"));
    }
    Ok(())
}

/// The row's version and, unless it equals `$2` (the cached version), its document.
const READ: &str =
    "SELECT version, CASE WHEN version IS NOT DISTINCT FROM $2 THEN NULL ELSE document::text END
       FROM mecated_memory WHERE scope = $1";
const CREATE_ROW: &str = "INSERT INTO mecated_memory (scope, document) VALUES ($1, $2::text::json)
     ON CONFLICT (scope) DO NOTHING";
const LOCK_ROW: &str =
    "SELECT version, CASE WHEN version IS NOT DISTINCT FROM $2 THEN NULL ELSE document::text END,
            write_id
       FROM mecated_memory WHERE scope = $1 FOR UPDATE";
const WRITE_ROW: &str = "UPDATE mecated_memory SET document = $2::text::json, write_id = $3
      WHERE scope = $1 RETURNING version";

impl Inner {
    /// Caches `loaded` unless a racing call already cached a newer version.
    fn remember(&self, loaded: &Arc<Loaded>) {
        self.cache.set_unless(
            loaded,
            |held| matches!((held.version, loaded.version), (Some(held), Some(new)) if new < held),
        );
    }

    fn backend(&self, op: &'static str, error: StoreError) -> MemoryError {
        let reason = match error {
            StoreError::Backend { reason, .. } => reason,
            other => other.to_string(),
        };
        MemoryError::Backend {
            scope: self.scope.clone(),
            op,
            reason,
        }
    }

    fn corrupt(&self, reason: String) -> MemoryError {
        MemoryError::CorruptScope {
            scope: self.scope.clone(),
            store: format!("PostgreSQL at {}", self.db.target()),
            reason,
        }
    }

    /// The parsed row at `version`: the cached one when `text` is `None` (the
    /// server saw the cached version), else `text` decoded and checked.
    fn parse(
        &self,
        cached: Option<&Arc<Loaded>>,
        version: Option<i64>,
        text: Option<&str>,
    ) -> Result<Arc<Loaded>, String> {
        match (text, cached) {
            (None, Some(cached)) if cached.version == version => Ok(Arc::clone(cached)),
            (None, _) if version.is_none() => Ok(Arc::new(Loaded::new(None, MemoryDocument::new()))),
            (None, _) => Err("the row changed while it was read".to_owned()),
            (Some(text), _) => {
                let document = MemoryDocument::from_json(text.as_bytes())?;
                Ok(Arc::new(Loaded::new(version, document)))
            }
        }
    }

    /// The current document: one round trip that carries the document only when the
    /// row's version is not the cached one.
    async fn load(&self) -> Result<Arc<Loaded>, MemoryError> {
        let cached = self.cache.get();
        let known = cached.as_ref().and_then(|c| c.version);
        let row = retrying!(self.db, "memory read", None, |client, attempt| {
            let statement = client.prepare_cached(READ).await?;
            client
                .query_opt(&statement, &[&self.scope.as_str(), &known])
                .await
        })
        .map_err(|e| self.backend("read", e))?;
        let (version, text) = match &row {
            Some(row) => (Some(row.get::<_, i64>(0)), row.get::<_, Option<&str>>(1)),
            None => (None, None),
        };
        if version.is_none()
            && let Some(cached) = cached.as_ref().filter(|c| c.version.is_none())
        {
            return Ok(Arc::clone(cached));
        }
        let loaded = self
            .parse(cached.as_ref(), version, text)
            .map_err(|reason| self.corrupt(reason))?;
        self.remember(&loaded);
        Ok(loaded)
    }

    /// Runs one change in a transaction holding the scope's row lock: create the row
    /// when missing, lock it, apply `change` to its document, write it back, commit.
    async fn write<T: Clone + Send + Sync>(
        &self,
        change: impl Fn(&mut MemoryDocument) -> Result<Applied<T>, MemoryError> + Send + Sync,
    ) -> Result<T, MemoryError> {
        let write_id = Uuid::new_v4();
        let empty = String::from_utf8(MemoryDocument::new().to_json()).unwrap_or_default();
        // The outcome of the last attempt that sent its commit, in case its reply is lost.
        let sent: Mutex<Option<(T, Arc<Loaded>)>> = Mutex::new(None);
        let attempted = retrying!(self.db, "memory write", None, |client, attempt| {
            let cached = self.cache.get();
            let known = cached.as_ref().and_then(|c| c.version);
            let transaction = client.transaction().await?;
            let create = transaction.prepare_cached(CREATE_ROW).await?;
            transaction
                .execute(&create, &[&self.scope.as_str(), &empty])
                .await?;
            let lock = transaction.prepare_cached(LOCK_ROW).await?;
            let row = transaction
                .query_one(&lock, &[&self.scope.as_str(), &known])
                .await?;
            let version: i64 = row.get(0);
            let text: Option<&str> = row.get(1);
            let last_write: Option<Uuid> = row.get(2);
            let committed = (attempt.after_lost_reply && last_write == Some(write_id))
                .then(|| {
                    sent.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .clone()
                })
                .flatten();
            if let Some((outcome, loaded)) = committed {
                // An earlier attempt committed and lost its reply; its outcome stands.
                transaction.rollback().await?;
                return Ok(Attempted::Done(outcome, loaded));
            }
            let current = match self.parse(cached.as_ref(), Some(version), text) {
                Ok(current) => current,
                Err(reason) => {
                    transaction.rollback().await?;
                    return Ok(Attempted::Corrupt(reason));
                }
            };
            let mut document = current.document.clone();
            let applied = match change(&mut document) {
                Ok(applied) => applied,
                Err(refused) => {
                    transaction.rollback().await?;
                    return Ok(Attempted::Refused(refused));
                }
            };
            let json = String::from_utf8(applied.json).unwrap_or_default();
            let update = transaction.prepare_cached(WRITE_ROW).await?;
            let written = transaction
                .query_one(&update, &[&self.scope.as_str(), &json, &write_id])
                .await?;
            let loaded = Arc::new(Loaded::new(Some(written.get(0)), document));
            *sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some((applied.outcome.clone(), Arc::clone(&loaded)));
            transaction.commit().await?;
            Ok(Attempted::Done(applied.outcome, loaded))
        })
        .map_err(|e| self.backend("write", e))?;
        match attempted {
            Attempted::Done(outcome, loaded) => {
                self.remember(&loaded);
                Ok(outcome)
            }
            Attempted::Refused(error) => Err(error),
            Attempted::Corrupt(reason) => Err(self.corrupt(reason)),
        }
    }
}

#[async_trait]
impl MemoryStore for PgMemoryStore {
    async fn get(&self, key: &str) -> Result<Option<MemoryEntry>, MemoryError> {
        Ok(self.inner.load().await?.document.get(key))
    }

    async fn put_many(&self, writes: Vec<MemoryWrite>) -> Result<Vec<MemoryEntry>, MemoryError> {
        let now = self.inner.clock.now();
        self.inner
            .write(|document| document.put_many(writes.clone(), now))
            .await
    }

    async fn forget(&self, key: &str, expected_version: u64, writer: &str) -> Result<u64, MemoryError> {
        let now = self.inner.clock.now();
        self.inner
            .write(|document| document.forget(key, expected_version, writer, now))
            .await
    }

    async fn prefix(&self, prefix: &str, limit: usize) -> Result<MemoryPrefix, MemoryError> {
        Ok(self.inner.load().await?.document.prefix(prefix, limit))
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<MemoryHit>, MemoryError> {
        let loaded = self.inner.load().await?;
        // Building the index of a large document is CPU work: off the async threads.
        let search = match loaded.built_search() {
            Some(search) => search,
            None => {
                let building = Arc::clone(&loaded);
                tokio::task::spawn_blocking(move || building.search())
                    .await
                    .map_err(|e| MemoryError::Backend {
                        scope: self.inner.scope.clone(),
                        op: "search",
                        reason: format!("building the search index failed: {e}"),
                    })?
            }
        };
        Ok(search.search(query, limit))
    }

    async fn index(&self) -> Result<Vec<MemoryIndexEntry>, MemoryError> {
        Ok(self.inner.load().await?.document.index())
    }

    async fn history(&self, key: &str) -> Result<Vec<MemoryRevision>, MemoryError> {
        Ok(self.inner.load().await?.document.history(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_names_are_checked() {
        assert!(check_scope("project:ws-0123").is_ok());
        assert!(check_scope("../é/ x").is_ok());
        assert_eq!(check_scope("").unwrap_err(), "the memory scope name is empty");
        assert!(check_scope("a\0b").unwrap_err().contains("NUL"));
        assert!(
            check_scope(&"x".repeat(MAX_SCOPE_BYTES + 1))
                .unwrap_err()
                .contains("at most 1024 bytes")
        );
    }
}
