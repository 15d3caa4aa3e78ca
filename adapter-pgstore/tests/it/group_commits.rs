//! Group commits of a leased session's events and tool-call records: written in
//! append order by few multi-row statements, read back by the writer without a
//! flush, written before the lease is given back, and a batch that cannot be
//! written is reported by the next flush (never waited on forever).

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_pgstore::{PgStore, PgStoreOptions};
use engine_ports::{EventLog, SessionStore, StoreError, ToolCallRecorder};

use crate::support::{TestDb, delta, fast, lock_table, record, sid};

fn seqs(events: &[engine_ports::Event]) -> Vec<u64> {
    events.iter().map(|event| event.seq).collect()
}

/// How many statements wrote the rows of `session` in `table` (one write id each).
async fn statements(db: &TestDb, table: &str, session: &str) -> i64 {
    db.client()
        .await
        .query_one(
            &format!("SELECT count(DISTINCT write_id) FROM {table} WHERE session_id = $1"),
            &[&session],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_sessions_appends_are_written_in_few_statements_in_append_order() {
    let Some(db) = TestDb::new("a_leased_sessions_appends_are_written_in_few_statements_in_append_order")
    else {
        return;
    };
    let store = db.open().await;
    let id = sid("grouped");
    let lease = store.acquire_run(&id).await.unwrap();
    const EVENTS: u64 = 3000;
    for seq in 1..=EVENTS {
        store
            .append(&id, &delta(seq, format!("event {seq}")))
            .await
            .unwrap();
        if seq % 100 == 0 {
            store.record(&record(&id, &format!("c{seq}"))).await.unwrap();
        }
    }
    EventLog::flush(&store, &id).await.unwrap();
    ToolCallRecorder::flush(&store, &id).await.unwrap();

    // Another replica reads everything, in order.
    let other = db.open().await;
    assert_eq!(
        seqs(&other.read(&id).await.unwrap()),
        (1..=EVENTS).collect::<Vec<_>>()
    );
    let calls: Vec<String> = other
        .read_tool_calls(&id)
        .await
        .unwrap()
        .iter()
        .map(|r| r.call_id.to_string())
        .collect();
    assert_eq!(
        calls,
        (1..=30).map(|n| format!("c{}", n * 100)).collect::<Vec<_>>()
    );
    let event_statements = statements(&db, "mecated_events", "grouped").await;
    assert!(
        event_statements < i64::try_from(EVENTS / 4).unwrap(),
        "{EVENTS} appends took {event_statements} statements"
    );
    lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_reads_its_queued_appends_without_a_flush() {
    let Some(db) = TestDb::new("the_writer_reads_its_queued_appends_without_a_flush") else {
        return;
    };
    let store = db.open().await;
    let id = sid("read-own");
    store
        .create(&engine_ports::SessionSnapshot::new(
            id.clone(),
            engine_ports::PermissionMode::Default,
        ))
        .await
        .unwrap();
    let lease = store.acquire_run(&id).await.unwrap();
    for seq in 1..=200 {
        store.append(&id, &delta(seq, "x")).await.unwrap();
    }
    store.record(&record(&id, "c1")).await.unwrap();
    assert_eq!(
        seqs(&store.read(&id).await.unwrap()),
        (1..=200).collect::<Vec<_>>()
    );
    assert_eq!(store.read_tool_calls(&id).await.unwrap().len(), 1);
    assert_eq!(
        store.load(&id).await.unwrap().next_seq,
        201,
        "load continues after the queued events"
    );
    lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn giving_the_lease_back_writes_the_queued_rows_first() {
    let Some(db) = TestDb::new("giving_the_lease_back_writes_the_queued_rows_first") else {
        return;
    };
    let (a, b) = (Arc::new(db.open().await), db.open().await);

    // Released by `release`.
    let id = sid("released");
    let lease = a.acquire_run(&id).await.unwrap();
    for seq in 1..=500 {
        a.append(&id, &delta(seq, "x")).await.unwrap();
    }
    lease.release().await;
    let taken = b.acquire_run(&id).await.unwrap();
    assert_eq!(seqs(&b.read(&id).await.unwrap()), (1..=500).collect::<Vec<_>>());
    taken.release().await;

    // Released by a plain drop (in the background).
    let id = sid("dropped");
    let lease = a.acquire_run(&id).await.unwrap();
    for seq in 1..=500 {
        a.append(&id, &delta(seq, "x")).await.unwrap();
    }
    drop(lease);
    let deadline = Instant::now() + Duration::from_secs(10);
    let taken = loop {
        match b.acquire_run(&id).await {
            Ok(lease) => break lease,
            Err(StoreError::Busy { .. }) => {
                assert!(
                    Instant::now() < deadline,
                    "the dropped lease was never given back"
                );
                tokio::task::yield_now().await;
            }
            Err(other) => panic!("{other}"),
        }
    };
    assert_eq!(seqs(&b.read(&id).await.unwrap()), (1..=500).collect::<Vec<_>>());
    taken.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_group_commits_off_an_append_is_committed_before_it_returns() {
    let Some(db) = TestDb::new("with_group_commits_off_an_append_is_committed_before_it_returns") else {
        return;
    };
    let a = db
        .open_with(PgStoreOptions {
            group_commits: false,
            ..fast()
        })
        .await;
    let b = db.open().await;
    let id = sid("one-by-one");
    let lease = a.acquire_run(&id).await.unwrap();
    for seq in 1..=20 {
        a.append(&id, &delta(seq, "x")).await.unwrap();
        // No flush, and `b` has nothing queued: the row is already committed.
        assert_eq!(b.read(&id).await.unwrap().len(), usize::try_from(seq).unwrap());
    }
    assert_eq!(statements(&db, "mecated_events", "one-by-one").await, 20);
    lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_cannot_be_written_is_reported_by_the_next_flush_within_the_time_limit() {
    let Some(db) =
        TestDb::new("a_batch_that_cannot_be_written_is_reported_by_the_next_flush_within_the_time_limit")
    else {
        return;
    };
    let store: PgStore = db
        .open_with(PgStoreOptions {
            timeout: Duration::from_millis(500),
            ..fast()
        })
        .await;
    let id = sid("stalled");
    let lease = store.acquire_run(&id).await.unwrap();
    let mut client = db.client().await;
    let locker = lock_table(&mut client, "mecated_events").await;
    for seq in 1..=10 {
        store.append(&id, &delta(seq, "x")).await.unwrap();
    }
    let started = Instant::now();
    let error = EventLog::flush(&store, &id).await.unwrap_err().to_string();
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(
        error.contains("session \"stalled\": flush failed: PostgreSQL at")
            && error.contains("10 events queued for a group commit could not be written"),
        "{error}"
    );
    assert!(
        error.contains("lock timeout") || error.contains("SQLSTATE"),
        "the server's reason: {error}"
    );
    // Reported once; later appends are written again.
    locker.rollback().await.unwrap();
    EventLog::flush(&store, &id).await.unwrap();
    store.append(&id, &delta(11, "after")).await.unwrap();
    EventLog::flush(&store, &id).await.unwrap();
    assert_eq!(seqs(&store.read(&id).await.unwrap()), [11]);
    lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_lease_was_taken_over_is_told_at_the_next_flush_that_its_queued_rows_were_lost() {
    let Some(db) = TestDb::new("a_holder_whose_lease_was_taken_over_is_told_at_the_next_flush") else {
        return;
    };
    let (a, b) = (db.open().await, db.open().await);
    let id = sid("taken");
    let lease = a.acquire_run(&id).await.unwrap();
    a.append(&id, &delta(1, "before")).await.unwrap();
    EventLog::flush(&a, &id).await.unwrap();
    db.cluster.psql(
        &db.name,
        "UPDATE mecated_run_leases SET holder = '00000000-0000-0000-0000-000000000001' WHERE session_id = 'taken'",
    );
    a.append(&id, &delta(2, "after")).await.unwrap();
    let error = EventLog::flush(&a, &id).await.unwrap_err().to_string();
    assert!(
        error.contains(
            "1 event queued for a group commit could not be written: \
             this process's run lease of the session was lost"
        ),
        "{error}"
    );
    a.record(&record(&id, "c1")).await.unwrap();
    let error = ToolCallRecorder::flush(&a, &id).await.unwrap_err().to_string();
    assert!(
        error.starts_with("dropped buffered audit records of session")
            && error.contains("1 tool-call record queued for a group commit could not be written"),
        "{error}"
    );
    assert_eq!(
        seqs(&b.read(&id).await.unwrap()),
        [1],
        "nothing after the takeover"
    );
    assert!(b.read_tool_calls(&id).await.unwrap().is_empty());
    drop(lease);
}
