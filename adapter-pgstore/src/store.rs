//! [`PgStore`]: opening (connect, TLS, migrations, the lease renewer) and the three
//! port implementations over the tables of `migrations/`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use deadpool_postgres::Object;
use engine_ports::{
    Event, EventLog, RecorderError, RunLease, SessionId, SessionListing, SessionSnapshot, SessionStore,
    StoreError, ToolCallLog, ToolCallRecord, ToolCallRecorder,
};
use tokio::runtime::Handle;
use uuid::Uuid;

use crate::batch::{self, Batches, Table};
use crate::db::{Db, retrying};
use crate::lease::{self, Leases};
use crate::memory::PgMemoryStore;
use crate::migrations::{self, current_version};
use crate::options::PgStoreOptions;
use crate::url::StoreUrl;

/// The session store, event log and tool-call recorder on one PostgreSQL database,
/// shared by every replica that opens it. Cheap to share as an `Arc`; see the crate
/// docs.
pub struct PgStore {
    shared: Arc<Shared>,
}

/// What the store, its leases and their background tasks share.
pub(crate) struct Shared {
    pub(crate) db: Arc<Db>,
    pub(crate) leases: Leases,
    pub(crate) batches: Batches,
    pub(crate) options: PgStoreOptions,
    pub(crate) runtime: Handle,
    renewer: Mutex<Option<tokio::task::AbortHandle>>,
}

/// Why [`PgStore::open`] failed: the message names the server (never the password).
#[derive(Debug, thiserror::Error)]
#[error("PostgreSQL at {target}: {reason}")]
pub struct OpenError {
    /// `host:port/database`.
    pub target: String,
    /// What went wrong.
    pub reason: String,
}

impl PgStore {
    /// Connects to `url` (one attempt, bounded by its connect timeout: the TCP
    /// connection, TLS, the startup handshake and authentication), checks the
    /// server's encoding, brings the schema to this binary's version and starts the
    /// lease renewer on the current tokio runtime.
    ///
    /// # Errors
    /// [`OpenError`]: the server is unreachable or refuses the credentials, TLS
    /// cannot be set up, the database is not UTF-8, or its schema is newer than this
    /// binary knows.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub async fn open(url: &StoreUrl, options: PgStoreOptions) -> Result<Self, OpenError> {
        let mut options = options;
        options.lease_ttl = options.lease_ttl.max(PgStoreOptions::MIN_LEASE_TTL);
        let db = connect(url, &options).await?;
        let shared = Arc::new(Shared {
            db,
            leases: Leases::default(),
            batches: Batches::default(),
            options,
            runtime: Handle::current(),
            renewer: Mutex::new(None),
        });
        let renewer = tokio::spawn(lease::renew_forever(Arc::downgrade(&shared)));
        *shared
            .renewer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(renewer.abort_handle());
        Ok(Self { shared })
    }

    /// The memory scope named `scope` in this database, over this store's connections
    /// (see [`PgMemoryStore`]).
    ///
    /// # Errors
    /// [`OpenError`] when the name is empty, too long or holds a NUL character.
    pub fn memory(&self, scope: &str) -> Result<PgMemoryStore, OpenError> {
        PgMemoryStore::over(Arc::clone(&self.shared.db), scope)
    }

    /// `host:port/database` of the server.
    pub fn target(&self) -> &str {
        self.shared.db.target()
    }

    /// The options in force (the lease TTL raised to its minimum).
    pub fn options(&self) -> PgStoreOptions {
        self.shared.options
    }

    /// Every tool-call record of `session`, in the order written.
    ///
    /// # Errors
    /// The database failed, or a stored record does not decode (naming its row).
    pub async fn read_tool_calls(&self, session: &SessionId) -> Result<Vec<ToolCallRecord>, StoreError> {
        check_id(session)?;
        batch::settle(&self.shared, session, "read_tool_calls", false).await?;
        let rows = retrying!(
            self.shared.db,
            "read_tool_calls",
            Some(session),
            |client, attempt| {
                let statement = client
                    .prepare_cached(
                        "SELECT pos, record::text FROM mecated_tool_calls WHERE session_id = $1 ORDER BY pos",
                    )
                    .await?;
                client.query(&statement, &[&session.as_str()]).await
            }
        )?;
        rows.iter()
            .map(|row| {
                let pos: i64 = row.get(0);
                let text: &str = row.get(1);
                serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
                    id: session.clone(),
                    file: format!("mecated_tool_calls row {pos}"),
                    line: None,
                    reason: e.to_string(),
                    prefix: Vec::new(),
                })
            })
            .collect()
    }

    /// Stops renewing leases and closes the pool; later operations fail at once.
    /// Idempotent.
    pub fn close(&self) {
        self.shared.stop_renewer();
        self.shared.db.close();
    }
}

/// Connects to `url` once (bounded by its connect timeout), checks the server's
/// encoding and brings the schema to this binary's version: what every handle on the
/// database does first.
pub(crate) async fn connect(url: &StoreUrl, options: &PgStoreOptions) -> Result<Arc<Db>, OpenError> {
    let failed = |reason: String| OpenError {
        target: url.target(),
        reason,
    };
    let db = Db::new(url, options).map_err(failed)?;
    let limit = url.connect_timeout();
    let mut client = db
        .connect_once(limit)
        .await
        .map_err(|reason| failed(format!("cannot connect: {reason}")))?;
    let encoding = tokio::time::timeout(options.timeout, client.query_one("SHOW server_encoding", &[]))
        .await
        .map_err(|_| failed(format!("no answer within {:?}", options.timeout)))?
        .map_err(|e| {
            failed(format!(
                "reading server_encoding failed: {}",
                crate::db::describe(&e)
            ))
        })?;
    let encoding: String = encoding.get(0);
    if encoding != "UTF8" {
        return Err(failed(format!(
            "the database's encoding is {encoding}; session ids and events need UTF8 (create the database with ENCODING 'UTF8')"
        )));
    }
    let before = tokio::time::timeout(options.timeout, migrations::migrate(&mut client))
        .await
        .map_err(|_| {
            failed(format!(
                "the schema migration did not finish within {:?}",
                options.timeout
            ))
        })?
        .map_err(failed)?;
    if before < current_version() {
        tracing::info!(
            target = %db.target(), from = before, to = current_version(),
            "migrated the store's schema"
        );
    }
    drop(client);
    Ok(Arc::new(db))
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.shared.stop_renewer();
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.shared.db.target())
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Stops the lease renewer, if it still runs (closing or dropping the store).
    fn stop_renewer(&self) {
        if let Some(renewer) = self
            .renewer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            renewer.abort();
        }
    }

    /// Writes what the session still has queued, then deletes the lease row of `id`
    /// if `token` still holds it.
    pub(crate) async fn release(&self, id: &SessionId, token: Uuid) -> Result<(), StoreError> {
        batch::settle(self, id, "release_run", false).await?;
        self.batches.forget_idle(id);
        retrying!(self.db, "release_run", Some(id), |client, attempt| {
            let statement = client
                .prepare_cached("DELETE FROM mecated_run_leases WHERE session_id = $1 AND holder = $2")
                .await?;
            client.execute(&statement, &[&id.as_str(), &token]).await
        })
        .map(drop)
    }

    /// Pushes the expiry of every lease in `held` one TTL ahead; returns the tokens
    /// still holding their rows.
    pub(crate) async fn renew(&self, held: &[(SessionId, Uuid)]) -> Result<Vec<Uuid>, StoreError> {
        let tokens: Vec<Uuid> = held.iter().map(|(_, token)| *token).collect();
        let ttl = millis(self.options.lease_ttl);
        retrying!(self.db, "renew_run_leases", None, |client, attempt| {
            let statement = client
                .prepare_cached(
                    "UPDATE mecated_run_leases
                            SET expires_at = clock_timestamp() + $2::bigint * interval '1 millisecond'
                          WHERE holder = ANY($1) RETURNING holder",
                )
                .await?;
            let rows = client.query(&statement, &[&tokens, &ttl]).await?;
            Ok(rows.iter().map(|row| row.get::<_, Uuid>(0)).collect())
        })
    }

    /// Takes (or, with `token` already holding it, re-takes) the lease row of `id`
    /// for `ttl`; `false` when another holder's row has not expired.
    async fn take_row(
        &self,
        op: &'static str,
        id: &SessionId,
        token: Uuid,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let ttl = millis(ttl);
        retrying!(self.db, op, Some(id), |client, attempt| {
            let statement = client.prepare_cached(TAKE_LEASE).await?;
            Ok(!client
                .query(&statement, &[&id.as_str(), &token, &ttl])
                .await?
                .is_empty())
        })
    }

    /// Whether `session`'s events and records go through its group-commit queue: the
    /// option is on and this store holds the session's lease.
    fn groups_commits_of(&self, session: &SessionId) -> bool {
        self.options.group_commits && self.leases.fence(session).is_some()
    }

    fn too_large(&self, id: &SessionId, bytes: usize, limit: usize) -> Result<(), StoreError> {
        if bytes > limit {
            return Err(StoreError::TooLarge {
                id: id.clone(),
                bytes: bytes as u64,
                limit: limit as u64,
            });
        }
        Ok(())
    }
}

const TAKE_LEASE: &str = "INSERT INTO mecated_run_leases AS l (session_id, holder, expires_at)
     VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 millisecond')
     ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE l.expires_at <= clock_timestamp() OR l.holder = excluded.holder
     RETURNING l.holder";

/// The fence of a leased session's writes, with the holder token as parameter `$n`
/// (the id is `$1`): true when no token is given, or the lease row still names it
/// (locked, so a takeover waits for this write to commit).
pub(crate) fn fence(n: usize) -> String {
    format!(
        "(${n}::uuid IS NULL OR EXISTS (
            SELECT 1 FROM mecated_run_leases WHERE session_id = $1 AND holder = ${n} FOR SHARE))"
    )
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The longest session id, in bytes (a btree index entry holds at most ~2.7 KB).
pub const MAX_ID_BYTES: usize = 2048;

/// Empty ids, ids over [`MAX_ID_BYTES`] and ids with a NUL character (which
/// PostgreSQL text cannot hold) are refused.
fn check_id(id: &SessionId) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::InvalidId {
            reason: "the session id is empty".to_owned(),
        });
    }
    if id.as_str().len() > MAX_ID_BYTES {
        return Err(StoreError::InvalidId {
            reason: format!(
                "the session id is {} bytes long; this store holds ids of at most {MAX_ID_BYTES} bytes",
                id.as_str().len()
            ),
        });
    }
    if id.as_str().contains('\0') {
        return Err(StoreError::InvalidId {
            reason: format!("session id {:?} contains a NUL character", id.as_str()),
        });
    }
    Ok(())
}

/// Why a fenced write wrote nothing.
pub(crate) const LEASE_LOST: &str =
    "this process's run lease of the session was lost (it expired and another process may hold it)";

pub(crate) fn lost_lease(shared: &Shared, op: &'static str, id: &SessionId) -> StoreError {
    shared
        .db
        .error(op, Some(id), format!("{LEASE_LOST}; nothing was written"))
}

fn encode<T: serde::Serialize>(value: &T, id: &SessionId, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        id: id.clone(),
        file: what.to_owned(),
        line: None,
        reason: format!("cannot be encoded: {e}"),
        prefix: Vec::new(),
    })
}

pub(crate) async fn own_row_exists(
    client: &Object,
    sql: &str,
    id: &SessionId,
    write_id: Uuid,
) -> Result<bool, tokio_postgres::Error> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client
        .query_one(&statement, &[&id.as_str(), &write_id])
        .await?
        .get(0))
}

#[async_trait]
impl SessionStore for PgStore {
    async fn create(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        let id = &snapshot.id;
        check_id(id)?;
        let body = encode(snapshot, id, "snapshot")?;
        self.shared
            .too_large(id, body.len(), self.shared.options.max_snapshot_bytes)?;
        let write_id = Uuid::new_v4();
        let created = retrying!(self.shared.db, "create", Some(id), |client, attempt| {
            let statement = client
                .prepare_cached(
                    "INSERT INTO mecated_sessions (id, snapshot, write_id, modified_at)
                         VALUES ($1, $2::text::json, $3, clock_timestamp()) ON CONFLICT (id) DO NOTHING",
                )
                .await?;
            if client
                .execute(&statement, &[&id.as_str(), &body, &write_id])
                .await?
                == 1
            {
                return Ok(true);
            }
            if attempt.after_lost_reply {
                return own_row_exists(
                    &client,
                    "SELECT EXISTS (SELECT 1 FROM mecated_sessions WHERE id = $1 AND write_id = $2)",
                    id,
                    write_id,
                )
                .await;
            }
            Ok(false)
        })?;
        if created {
            Ok(())
        } else {
            Err(StoreError::AlreadyExists { id: id.clone() })
        }
    }

    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        check_id(id)?;
        batch::settle(&self.shared, id, "load", false).await?;
        let row = retrying!(self.shared.db, "load", Some(id), |client, attempt| {
            let statement = client
                .prepare_cached(
                    "SELECT snapshot::text, (SELECT max(seq) FROM mecated_events WHERE session_id = $1)
                           FROM mecated_sessions WHERE id = $1",
                )
                .await?;
            client.query_opt(&statement, &[&id.as_str()]).await
        })?;
        let Some(row) = row else {
            return Err(StoreError::NotFound { id: id.clone() });
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            id: id.clone(),
            file: "mecated_sessions".to_owned(),
            line: None,
            reason,
            prefix: Vec::new(),
        };
        let text: &str = row.get(0);
        let mut snapshot: SessionSnapshot =
            serde_json::from_str(text).map_err(|e| corrupt(format!("the snapshot does not decode: {e}")))?;
        if snapshot.id != *id {
            return Err(corrupt(format!(
                "the stored snapshot is of session {:?}",
                snapshot.id.as_str()
            )));
        }
        // Events a run logged after its last save (a crashed replica's) keep their
        // numbers: the next run continues after them.
        let last_logged: Option<i64> = row.get(1);
        if let Some(after) = last_logged
            .and_then(|seq| u64::try_from(seq).ok())
            .map(|seq| seq.saturating_add(1))
            && after > snapshot.next_seq
        {
            snapshot.next_seq = after;
        }
        Ok(snapshot)
    }

    async fn save(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        let id = &snapshot.id;
        check_id(id)?;
        let body = encode(snapshot, id, "snapshot")?;
        self.shared
            .too_large(id, body.len(), self.shared.options.max_snapshot_bytes)?;
        let holder = self.shared.leases.fence(id);
        let write_id = Uuid::new_v4();
        let sql = format!(
            "INSERT INTO mecated_sessions AS s (id, snapshot, write_id, modified_at)
             SELECT $1, $2::text::json, $3, clock_timestamp() WHERE {}
             ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, write_id = excluded.write_id,
                 modified_at = greatest(excluded.modified_at, s.modified_at)",
            fence(4)
        );
        let written = retrying!(self.shared.db, "save", Some(id), |client, attempt| {
            let statement = client.prepare_cached(&sql).await?;
            client
                .execute(&statement, &[&id.as_str(), &body, &write_id, &holder])
                .await
        })?;
        if written == 0 {
            return Err(lost_lease(&self.shared, "save", id));
        }
        Ok(())
    }

    async fn list(&self) -> Result<Vec<SessionListing>, StoreError> {
        let rows = retrying!(self.shared.db, "list", None, |client, attempt| {
            let statement = client
                .prepare_cached(&format!("{LISTING_COLUMNS} ORDER BY id"))
                .await?;
            client.query(&statement, &[]).await
        })?;
        Ok(rows.iter().map(listing_of).collect())
    }

    async fn listing(&self, id: &SessionId) -> Result<SessionListing, StoreError> {
        check_id(id)?;
        let sql = format!("{LISTING_COLUMNS} WHERE id = $1");
        let rows = retrying!(self.shared.db, "list", Some(id), |client, attempt| {
            let statement = client.prepare_cached(&sql).await?;
            client.query(&statement, &[&id.as_str()]).await
        })?;
        rows.first()
            .map(listing_of)
            .ok_or_else(|| StoreError::NotFound { id: id.clone() })
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        check_id(id)?;
        let claim = lease::claim(&self.shared, id, "delete").await?;
        batch::settle(&self.shared, id, "delete", false).await?;
        self.shared.batches.forget_idle(id);
        let token = Uuid::new_v4();
        let ttl = millis(self.shared.options.timeout);
        let deleted = retrying!(self.shared.db, "delete", Some(id), |client, attempt| {
            let transaction = client.transaction().await?;
            let take = transaction.prepare_cached(TAKE_LEASE).await?;
            if transaction
                .query(&take, &[&id.as_str(), &token, &ttl])
                .await?
                .is_empty()
            {
                transaction.rollback().await?;
                return Ok(false);
            }
            for sql in [
                "DELETE FROM mecated_tool_calls WHERE session_id = $1",
                "DELETE FROM mecated_events WHERE session_id = $1",
                "DELETE FROM mecated_sessions WHERE id = $1",
                "DELETE FROM mecated_run_leases WHERE session_id = $1",
            ] {
                let statement = transaction.prepare_cached(sql).await?;
                transaction.execute(&statement, &[&id.as_str()]).await?;
            }
            transaction.commit().await?;
            Ok(true)
        })?;
        drop(claim);
        if deleted {
            Ok(())
        } else {
            Err(StoreError::Busy { id: id.clone() })
        }
    }

    /// A pooled connection answers `SELECT 1` within the store's time limit.
    async fn probe(&self) -> Result<(), StoreError> {
        self.shared.db.probe().await
    }

    async fn acquire_run(&self, id: &SessionId) -> Result<RunLease, StoreError> {
        check_id(id)?;
        let claim = lease::claim(&self.shared, id, "acquire_run").await?;
        let token = Uuid::new_v4();
        if self
            .shared
            .take_row("acquire_run", id, token, self.shared.options.lease_ttl)
            .await?
        {
            Ok(claim.hold(token))
        } else {
            Err(StoreError::Busy { id: id.clone() })
        }
    }
}

#[async_trait]
impl EventLog for PgStore {
    async fn append(&self, session: &SessionId, event: &Event) -> Result<(), StoreError> {
        check_id(session)?;
        let body = encode(event, session, "event")?;
        self.shared
            .too_large(session, body.len(), self.shared.options.max_record_bytes)?;
        let seq = i64::try_from(event.seq).unwrap_or(i64::MAX);
        if self.shared.groups_commits_of(session) {
            batch::enqueue(&self.shared, session, Table::Events, seq, body).await
        } else {
            batch::write_now(&self.shared, session, Table::Events, seq, body).await
        }
    }

    async fn read(&self, session: &SessionId) -> Result<Vec<Event>, StoreError> {
        check_id(session)?;
        batch::settle(&self.shared, session, "read", false).await?;
        let rows = retrying!(self.shared.db, "read", Some(session), |client, attempt| {
            let statement = client
                .prepare_cached(
                    "SELECT pos, event::text FROM mecated_events WHERE session_id = $1 ORDER BY pos",
                )
                .await?;
            client.query(&statement, &[&session.as_str()]).await
        })?;
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            let text: &str = row.get(1);
            match serde_json::from_str::<Event>(text) {
                Ok(event) => events.push(event),
                Err(error) => {
                    let pos: i64 = row.get(0);
                    return Err(StoreError::Corrupt {
                        id: session.clone(),
                        file: format!("mecated_events row {pos}"),
                        line: None,
                        reason: error.to_string(),
                        prefix: events,
                    });
                }
            }
        }
        Ok(events)
    }

    async fn flush(&self, session: &SessionId) -> Result<(), StoreError> {
        check_id(session)?;
        batch::settle(&self.shared, session, "flush", true).await
    }
}

#[async_trait]
impl ToolCallRecorder for PgStore {
    async fn record(&self, record: &ToolCallRecord) -> Result<(), RecorderError> {
        let session = &record.session_id;
        let failed = |error: StoreError| RecorderError::failed(record, error.to_string());
        check_id(session).map_err(failed)?;
        let body = encode(record, session, "tool-call record").map_err(failed)?;
        self.shared
            .too_large(session, body.len(), self.shared.options.max_record_bytes)
            .map_err(failed)?;
        if self.shared.groups_commits_of(session) {
            batch::enqueue(&self.shared, session, Table::ToolCalls, 0, body).await
        } else {
            batch::write_now(&self.shared, session, Table::ToolCalls, 0, body).await
        }
        .map_err(failed)
    }

    async fn flush(&self, session: &SessionId) -> Result<(), RecorderError> {
        batch::settle(&self.shared, session, "flush", true)
            .await
            .map_err(|error| RecorderError::lost(session, error.to_string()))
    }
}

#[async_trait]
impl ToolCallLog for PgStore {
    async fn read(&self, session: &SessionId) -> Result<Vec<ToolCallRecord>, StoreError> {
        check_id(session)?;
        batch::settle(&self.shared, session, "read", false).await?;
        let rows = retrying!(self.shared.db, "read", Some(session), |client, attempt| {
            let statement = client
                .prepare_cached(
                    "SELECT pos, record::text FROM mecated_tool_calls WHERE session_id = $1 ORDER BY pos",
                )
                .await?;
            client.query(&statement, &[&session.as_str()]).await
        })?;
        let mut records = Vec::with_capacity(rows.len());
        for row in &rows {
            let text: &str = row.get(1);
            match serde_json::from_str::<ToolCallRecord>(text) {
                Ok(record) => records.push(record),
                Err(error) => {
                    let pos: i64 = row.get(0);
                    return Err(StoreError::Corrupt {
                        id: session.clone(),
                        file: format!("mecated_tool_calls row {pos}"),
                        line: None,
                        reason: error.to_string(),
                        prefix: Vec::new(),
                    });
                }
            }
        }
        Ok(records)
    }
}

/// What a listing reads of a stored session: its id, when it was written, and the
/// counters of the snapshot (read by the server from the stored JSON).
const LISTING_COLUMNS: &str = "SELECT id, modified_at, snapshot->>'mode', \
     COALESCE((snapshot->>'turns')::bigint, 0), COALESCE((snapshot->>'tool_calls')::bigint, 0) \
     FROM mecated_sessions";

fn listing_of(row: &tokio_postgres::Row) -> SessionListing {
    let count = |index: usize| u64::try_from(row.get::<_, i64>(index)).unwrap_or(0);
    SessionListing {
        id: SessionId::from(row.get::<_, String>(0)),
        modified_at: row.get::<_, SystemTime>(1),
        mode: row
            .get::<_, Option<String>>(2)
            .and_then(|mode| mode.parse().ok())
            .unwrap_or_default(),
        turns: count(3),
        tool_calls: count(4),
    }
}
