//! Writing events and tool-call records. With group commits, the rows of a session
//! this store holds the run lease of are queued and written by one writer task per
//! session, as one multi-row `INSERT` per table per round trip, instead of one round
//! trip and one commit per append; every other row is the same statement with one row
//! ([`write_now`]), committed before the call returns.
//!
//! - **When**: only while the lease is held (the holder is the session's only
//!   writer, so the queue decides the order) and [`PgStoreOptions::group_commits`]
//!   is on; every other append is written before it returns.
//! - **Order**: one writer per session drains the queue front first; rows of one
//!   statement keep their order (`WITH ORDINALITY … ORDER BY`), so `pos` follows
//!   the append order.
//! - **Acknowledgement**: `append`/`record` return once the row is queued; `flush`
//!   returns once every row queued before it is committed, and reports (once) rows
//!   lost since the last flush. `read`, `load`, `read_tool_calls`, `delete` and the
//!   lease's release wait for the queue first, so this store reads its own writes
//!   and the lease is never given back with rows still queued.
//! - **Failure**: a batch is retried like every statement ([`crate::db`]); when it
//!   fails for good (or the lease was lost), it and everything queued behind it are
//!   dropped and counted, the next `append`, `record` or `flush` of the session
//!   reports the loss, and later rows are written again.
//! - **Bounds**: at most [`MAX_QUEUED_ROWS`] rows or [`MAX_QUEUED_BYTES`] wait per
//!   session (an append beyond waits for the writer, bounded by the store's time
//!   limit); one statement carries at most [`MAX_BATCH_ROWS`] rows or
//!   [`MAX_BATCH_BYTES`] (a single larger row goes alone).
//! - **A crash** of this process loses the rows still queued: at most what the
//!   engine appended since the last round trip began (the turn's `flush` is the
//!   acknowledgement an audited run waits for).
//!
//! [`PgStoreOptions::group_commits`]: crate::PgStoreOptions::group_commits

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use engine_ports::{SessionId, StoreError};
use tokio::sync::watch;
use uuid::Uuid;

use crate::db::retrying;
use crate::store::{LEASE_LOST, Shared, fence, lost_lease, own_row_exists};

/// Most rows queued per session before an append waits for the writer.
pub const MAX_QUEUED_ROWS: usize = 8192;
/// Most bytes (JSON text) queued per session before an append waits for the writer.
pub const MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;
/// Most rows in one `INSERT`.
pub const MAX_BATCH_ROWS: usize = 1024;
/// Most bytes (JSON text) in one `INSERT`, unless one row alone is larger.
pub const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

/// Which table a queued row goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Table {
    /// `mecated_events`, with the event's `seq`.
    Events,
    /// `mecated_tool_calls`.
    ToolCalls,
}

impl Table {
    /// The port operation that writes this table's rows.
    fn op(self) -> &'static str {
        match self {
            Self::Events => "append",
            Self::ToolCalls => "record",
        }
    }

    fn noun(self, count: usize) -> &'static str {
        match (self, count) {
            (Self::Events, 1) => "event",
            (Self::Events, _) => "events",
            (Self::ToolCalls, 1) => "tool-call record",
            (Self::ToolCalls, _) => "tool-call records",
        }
    }
}

/// One queued row.
struct Row {
    table: Table,
    seq: i64,
    body: String,
}

/// The queues of every session with queued rows or an unreported loss.
#[derive(Default)]
pub(crate) struct Batches {
    queues: Mutex<HashMap<SessionId, Arc<Queue>>>,
}

/// One session's queue and its writer's progress.
struct Queue {
    state: Mutex<QueueState>,
    /// Rows settled (written or lost) so far: a row queued as the `n`-th is settled
    /// once this reaches `n`.
    settled: watch::Sender<u64>,
}

#[derive(Default)]
struct QueueState {
    rows: VecDeque<Row>,
    bytes: usize,
    /// Rows queued so far.
    queued: u64,
    writing: bool,
    lost: Lost,
}

/// Rows dropped since the last report, and why the first batch failed.
#[derive(Default)]
struct Lost {
    events: usize,
    records: usize,
    reason: Option<String>,
}

impl Lost {
    fn is_empty(&self) -> bool {
        self.events == 0 && self.records == 0
    }

    fn add(&mut self, table: Table, count: usize, reason: &str) {
        match table {
            Table::Events => self.events += count,
            Table::ToolCalls => self.records += count,
        }
        self.reason.get_or_insert_with(|| reason.to_owned());
    }

    /// `3 events and 1 tool-call record queued for a group commit could not be
    /// written: <reason>`.
    fn describe(&self) -> String {
        let parts: Vec<String> = [(Table::Events, self.events), (Table::ToolCalls, self.records)]
            .into_iter()
            .filter(|(_, count)| *count > 0)
            .map(|(table, count)| format!("{count} {}", table.noun(count)))
            .collect();
        format!(
            "{} queued for a group commit could not be written: {}",
            parts.join(" and "),
            self.reason.as_deref().unwrap_or("unknown failure")
        )
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Batches {
    fn queue(&self, session: &SessionId) -> Option<Arc<Queue>> {
        lock(&self.queues).get(session).cloned()
    }

    /// Forgets `session`'s queue once it is empty and has nothing to report (its
    /// lease is being given back: later appends are written directly).
    pub(crate) fn forget_idle(&self, session: &SessionId) {
        let mut queues = lock(&self.queues);
        if let Some(queue) = queues.get(session) {
            let state = lock(&queue.state);
            let idle = state.rows.is_empty() && !state.writing && state.lost.is_empty();
            drop(state);
            if idle {
                queues.remove(session);
            }
        }
    }
}

/// Queues `body` for `table` of `session` and starts the session's writer if it is
/// idle.
///
/// # Errors
/// Rows of the session queued earlier were lost (this row is then not queued
/// either), or the queue stayed full for the store's time limit.
pub(crate) async fn enqueue(
    shared: &Arc<Shared>,
    session: &SessionId,
    table: Table,
    seq: i64,
    body: String,
) -> Result<(), StoreError> {
    let queue = {
        let mut queues = lock(&shared.batches.queues);
        Arc::clone(queues.entry(session.clone()).or_insert_with(|| {
            Arc::new(Queue {
                state: Mutex::new(QueueState::default()),
                settled: watch::Sender::new(0),
            })
        }))
    };
    let deadline = tokio::time::Instant::now() + shared.options.timeout;
    let mut settled = queue.settled.subscribe();
    loop {
        {
            let mut state = lock(&queue.state);
            if !state.lost.is_empty() {
                let lost = std::mem::take(&mut state.lost);
                return Err(shared.db.error(
                    table.op(),
                    Some(session),
                    format!(
                        "{}; this {} was not written either",
                        lost.describe(),
                        table.noun(1)
                    ),
                ));
            }
            let fits = state.rows.is_empty()
                || (state.rows.len() < MAX_QUEUED_ROWS && state.bytes + body.len() <= MAX_QUEUED_BYTES);
            if fits {
                state.bytes += body.len();
                state.queued += 1;
                state.rows.push_back(Row { table, seq, body });
                if !state.writing {
                    state.writing = true;
                    shared.runtime.spawn(write_queue(
                        Arc::clone(shared),
                        session.clone(),
                        Arc::clone(&queue),
                    ));
                }
                return Ok(());
            }
            settled.mark_unchanged();
        }
        if tokio::time::timeout_at(deadline, settled.changed())
            .await
            .is_err()
        {
            return Err(shared.db.error(
                table.op(),
                Some(session),
                format!(
                    "the database did not keep up: {MAX_QUEUED_ROWS} rows or {MAX_QUEUED_BYTES} bytes \
                     of this session stayed queued for {:?}; this row was not written",
                    shared.options.timeout
                ),
            ));
        }
    }
}

/// Waits until every row of `session` queued before the call is settled. With
/// `report`, returns (and clears) the loss since the last report.
///
/// # Errors
/// With `report`: rows were lost. Always: the writer did not settle them within
/// twice the store's time limit (they may still be written).
pub(crate) async fn settle(
    shared: &Shared,
    session: &SessionId,
    op: &'static str,
    report: bool,
) -> Result<(), StoreError> {
    let Some(queue) = shared.batches.queue(session) else {
        return Ok(());
    };
    let target = lock(&queue.state).queued;
    let limit = shared.options.timeout.saturating_mul(2) + Duration::from_secs(2);
    let mut settled = queue.settled.subscribe();
    if tokio::time::timeout(limit, settled.wait_for(|done| *done >= target))
        .await
        .is_err()
    {
        return Err(shared.db.error(
            op,
            Some(session),
            format!("rows queued for a group commit were not written within {limit:?}"),
        ));
    }
    if report {
        let lost = std::mem::take(&mut lock(&queue.state).lost);
        if !lost.is_empty() {
            return Err(shared.db.error(op, Some(session), lost.describe()));
        }
    }
    Ok(())
}

/// The session's writer: takes batches off the front of the queue until it is
/// empty.
async fn write_queue(shared: Arc<Shared>, session: SessionId, queue: Arc<Queue>) {
    loop {
        let (table, rows) = {
            let mut state = lock(&queue.state);
            let Some(first) = state.rows.front() else {
                state.writing = false;
                return;
            };
            let table = first.table;
            let mut bytes = 0;
            let mut count = 0;
            for row in &state.rows {
                if row.table != table
                    || count == MAX_BATCH_ROWS
                    || (count > 0 && bytes + row.body.len() > MAX_BATCH_BYTES)
                {
                    break;
                }
                bytes += row.body.len();
                count += 1;
            }
            state.bytes -= bytes;
            let rows: Vec<Row> = state.rows.drain(..count).collect();
            (table, rows)
        };
        let count = rows.len();
        let outcome = write_batch(&shared, &session, table, &rows).await;
        drop(rows);
        let mut settled = count;
        if let Err(unwritten) = outcome {
            let reason = unwritten.reason();
            tracing::warn!(
                session_id = %session, rows = count, %reason,
                "a group commit failed; the rows queued behind it are dropped too"
            );
            let mut state = lock(&queue.state);
            state.lost.add(table, count, &reason);
            let behind = std::mem::take(&mut state.rows);
            state.bytes = 0;
            for row in &behind {
                state.lost.add(row.table, 1, &reason);
            }
            settled += behind.len();
        }
        queue.settled.send_modify(|done| *done += settled as u64);
    }
}

/// Writes one row of `table` before returning (no lease held, or group commits off):
/// a batch of one.
///
/// # Errors
/// The write failed, or the lease fencing it was lost (nothing was written).
pub(crate) async fn write_now(
    shared: &Shared,
    session: &SessionId,
    table: Table,
    seq: i64,
    body: String,
) -> Result<(), StoreError> {
    match write_batch(shared, session, table, &[Row { table, seq, body }]).await {
        Ok(()) => Ok(()),
        Err(Unwritten::Failed(error)) => Err(error),
        Err(Unwritten::LeaseLost) => Err(lost_lease(shared, table.op(), session)),
    }
}

/// Why a batch was not written.
enum Unwritten {
    /// The statement failed (after retries).
    Failed(StoreError),
    /// The fence found the lease gone: no row was written.
    LeaseLost,
}

impl Unwritten {
    fn reason(&self) -> String {
        match self {
            Self::Failed(error) => error.to_string(),
            Self::LeaseLost => LEASE_LOST.to_owned(),
        }
    }
}

/// One fenced multi-row `INSERT` of `rows` (all of `table`).
async fn write_batch(
    shared: &Shared,
    session: &SessionId,
    table: Table,
    rows: &[Row],
) -> Result<(), Unwritten> {
    let holder: Option<Uuid> = shared.leases.fence(session);
    let write_id = Uuid::new_v4();
    let bodies: Vec<&str> = rows.iter().map(|row| row.body.as_str()).collect();
    let seqs: Vec<i64> = rows.iter().map(|row| row.seq).collect();
    let (sql, check) = match table {
        Table::Events => (
            format!(
                "INSERT INTO mecated_events (session_id, seq, write_id, event)
                 SELECT $1, u.seq, $3, u.body::json
                   FROM unnest($2::text[], $4::bigint[]) WITH ORDINALITY AS u(body, seq, n)
                  WHERE {} ORDER BY u.n",
                fence(5)
            ),
            "SELECT EXISTS (SELECT 1 FROM mecated_events WHERE session_id = $1 AND write_id = $2)",
        ),
        Table::ToolCalls => (
            format!(
                "INSERT INTO mecated_tool_calls (session_id, write_id, record)
                 SELECT $1, $3, u.body::json
                   FROM unnest($2::text[]) WITH ORDINALITY AS u(body, n)
                  WHERE {} ORDER BY u.n",
                fence(4)
            ),
            "SELECT EXISTS (SELECT 1 FROM mecated_tool_calls WHERE session_id = $1 AND write_id = $2)",
        ),
    };
    let written = retrying!(shared.db, table.op(), Some(session), |client, attempt| {
        if attempt.after_lost_reply && own_row_exists(&client, check, session, write_id).await? {
            return Ok(rows.len() as u64);
        }
        let statement = client.prepare_cached(&sql).await?;
        match table {
            Table::Events => {
                client
                    .execute(
                        &statement,
                        &[&session.as_str(), &bodies, &write_id, &seqs, &holder],
                    )
                    .await
            }
            Table::ToolCalls => {
                client
                    .execute(&statement, &[&session.as_str(), &bodies, &write_id, &holder])
                    .await
            }
        }
    })
    .map_err(Unwritten::Failed)?;
    if written == 0 {
        return Err(Unwritten::LeaseLost);
    }
    Ok(())
}
