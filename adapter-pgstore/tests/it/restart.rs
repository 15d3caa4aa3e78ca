//! The database restarting (killed, then started again on its port and data
//! directory) in the middle of a stream of appends, committed one by one or in
//! groups: every write is retried within the time limit, nothing acknowledged is
//! lost or doubled, and a lease survives. A
//! database that stays down makes an operation fail at the limit, naming the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use adapter_pgstore::{PgStore, PgStoreOptions, StoreUrl};
use engine_ports::{EventLog, PermissionMode, SessionSnapshot, SessionStore};
use test_peers::PgCluster;

use crate::support::{delta, fast, sid};

const EVENTS: u64 = 400;

/// Flushes every this many appends (a turn boundary).
const TURN: u64 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_committed_one_by_one_survive_a_database_restart_mid_stream() {
    appends_survive_a_database_restart_mid_stream("appends_committed_one_by_one_survive_a_restart", false)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_committed_appends_survive_a_database_restart_mid_stream() {
    appends_survive_a_database_restart_mid_stream("group_committed_appends_survive_a_restart", true).await;
}

/// A leased session's stream of appends, flushed every [`TURN`] appends; the
/// server restarts once a quarter of the stream is acknowledged (by `append` when
/// each append commits, by `flush` under group commits).
async fn appends_survive_a_database_restart_mid_stream(test: &str, group_commits: bool) {
    let Some(mut cluster) = PgCluster::start(test) else {
        return;
    };
    let url = StoreUrl::parse(&cluster.url("postgres"), None).unwrap();
    let options = PgStoreOptions {
        timeout: Duration::from_secs(10),
        group_commits,
        ..fast()
    };
    let store = Arc::new(PgStore::open(&url, options).await.unwrap());
    let id = sid("through-a-restart");
    store
        .save(&SessionSnapshot::new(id.clone(), PermissionMode::Default))
        .await
        .unwrap();
    let lease = store.acquire_run(&id).await.unwrap();
    let acknowledged = Arc::new(AtomicU64::new(0));
    let writer = {
        let store = Arc::clone(&store);
        let acknowledged = Arc::clone(&acknowledged);
        let id = id.clone();
        tokio::spawn(async move {
            for seq in 1..=EVENTS {
                store.append(&id, &delta(seq, format!("event {seq}"))).await?;
                if group_commits && seq % TURN != 0 {
                    continue;
                }
                store.flush(&id).await?;
                acknowledged.store(seq, Ordering::SeqCst);
            }
            Ok::<_, engine_ports::StoreError>(())
        })
    };
    // Kill the server once a quarter of the stream is in.
    let deadline = Instant::now() + Duration::from_secs(30);
    while acknowledged.load(Ordering::SeqCst) < EVENTS / 4 {
        assert!(Instant::now() < deadline, "the writer made no progress");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let before = acknowledged.load(Ordering::SeqCst);
    tokio::task::block_in_place(|| cluster.restart());
    writer.await.unwrap().unwrap();
    assert!(before < EVENTS, "the restart happened mid-stream");
    let events = store.read(&id).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=EVENTS).collect::<Vec<_>>(),
        "every acknowledged append, once, in order"
    );
    // The lease row survived the restart: the holder's fenced writes still land.
    store
        .save(&SessionSnapshot::new(id.clone(), PermissionMode::Plan))
        .await
        .unwrap();
    lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_while_the_database_is_down_fails_at_the_time_limit_naming_the_server() {
    let Some(mut cluster) =
        PgCluster::start("an_operation_while_the_database_is_down_fails_at_the_time_limit_naming_the_server")
    else {
        return;
    };
    let url = StoreUrl::parse(&cluster.url("postgres"), None).unwrap();
    let options = PgStoreOptions {
        timeout: Duration::from_secs(1),
        ..fast()
    };
    let store = PgStore::open(&url, options).await.unwrap();
    store.append(&sid("down"), &delta(1, "up")).await.unwrap();
    tokio::task::block_in_place(|| cluster.kill());
    let started = Instant::now();
    let error = store
        .append(&sid("down"), &delta(2, "down"))
        .await
        .unwrap_err()
        .to_string();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    assert!(
        error.contains(&format!(
            "session \"down\": append failed: PostgreSQL at 127.0.0.1:{}/postgres",
            cluster.port()
        )),
        "{error}"
    );
    assert!(error.contains("gave up after"), "{error}");
    assert!(!error.contains(cluster.password()), "{error}");
    tokio::task::block_in_place(|| cluster.restart());
    store.append(&sid("down"), &delta(3, "back")).await.unwrap();
    let seqs: Vec<u64> = store
        .read(&sid("down"))
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, [1, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_one_operation_finds_the_database_down_the_next_ones_fail_fast_until_it_is_back() {
    let Some(mut cluster) = PgCluster::start("after_one_operation_finds_the_database_down") else {
        return;
    };
    let url = StoreUrl::parse(&cluster.url("postgres"), None).unwrap();
    let options = PgStoreOptions {
        timeout: Duration::from_secs(4),
        ..fast()
    };
    let store = PgStore::open(&url, options).await.unwrap();
    store.append(&sid("outage"), &delta(1, "up")).await.unwrap();
    tokio::task::block_in_place(|| cluster.kill());
    let started = Instant::now();
    let first = store.append(&sid("outage"), &delta(2, "down")).await.unwrap_err();
    let first_waited = started.elapsed();
    assert!(
        first_waited >= Duration::from_secs(4),
        "the first one waits its whole time limit: {first_waited:?}"
    );
    // The operations a run makes after that (its save, its lease's release) only probe.
    let started = Instant::now();
    let second = store.load(&sid("outage")).await.unwrap_err().to_string();
    let second_waited = started.elapsed();
    assert!(
        second_waited < Duration::from_secs(2),
        "a later operation fails after a short probe: {second_waited:?} ({second})"
    );
    assert!(second.contains("unreachable for"), "{second}");
    assert!(
        second.contains(&format!("127.0.0.1:{}", cluster.port())),
        "{second}"
    );
    assert!(first.to_string().contains("unreachable for"), "{first}");
    // Back: the next operation connects and has its full time limit again.
    tokio::task::block_in_place(|| cluster.restart());
    store.append(&sid("outage"), &delta(3, "back")).await.unwrap();
    let seqs: Vec<u64> = store
        .read(&sid("outage"))
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, [1, 3]);
}
