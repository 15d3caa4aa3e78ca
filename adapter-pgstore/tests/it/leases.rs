//! Run leases between store values standing for replicas: exclusive until released,
//! kept alive by renewals, freed by expiry when the holder stops renewing, and a
//! holder that lost its lease writes nothing.

use std::time::{Duration, Instant};

use adapter_pgstore::PgStoreOptions;
use engine_ports::{EventLog, PermissionMode, SessionSnapshot, SessionStore, StoreError, ToolCallRecorder};
use futures::future::join_all;

use crate::support::{TestDb, delta, fast, logs, record, sid};

fn short_ttl() -> PgStoreOptions {
    PgStoreOptions {
        lease_ttl: Duration::from_millis(600),
        ..fast()
    }
}

fn assert_busy<T: std::fmt::Debug>(outcome: Result<T, StoreError>, id: &str) {
    match outcome {
        Err(StoreError::Busy { id: busy }) => assert_eq!(busy, id),
        other => panic!("expected Busy for {id:?}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_is_exclusive_across_replicas_until_released() {
    let Some(db) = TestDb::new("a_lease_is_exclusive_across_replicas_until_released") else {
        return;
    };
    let (a, b) = (db.open().await, db.open().await);
    a.save(&SessionSnapshot::new("shared", PermissionMode::Default))
        .await
        .unwrap();
    for _ in 0..3 {
        let lease = a.acquire_run(&sid("shared")).await.unwrap();
        assert_busy(b.acquire_run(&sid("shared")).await, "shared");
        assert_busy(b.delete(&sid("shared")).await, "shared");
        assert!(
            b.load(&sid("shared")).await.is_ok(),
            "a leased session is still readable"
        );
        lease.release().await;
        // Released means released for the other replica too, at once.
        let lease = b.acquire_run(&sid("shared")).await.unwrap();
        assert_busy(a.acquire_run(&sid("shared")).await, "shared");
        lease.release().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_acquires_from_two_replicas_have_one_winner() {
    let Some(db) = TestDb::new("racing_acquires_from_two_replicas_have_one_winner") else {
        return;
    };
    let (a, b) = (db.open().await, db.open().await);
    for round in 0..10 {
        let id = sid(&format!("race-{round}"));
        let attempts = (0..8).map(|i| {
            if i % 2 == 0 {
                a.acquire_run(&id)
            } else {
                b.acquire_run(&id)
            }
        });
        let outcomes = join_all(attempts).await;
        let winners = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {outcomes:?}");
        for outcome in outcomes {
            if outcome.is_err() {
                assert_busy(outcome, id.as_str());
            } else if let Ok(lease) = outcome {
                lease.release().await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_keep_a_lease_past_its_ttl() {
    let Some(db) = TestDb::new("renewals_keep_a_lease_past_its_ttl") else {
        return;
    };
    let (a, b) = (db.open_with(short_ttl()).await, db.open_with(short_ttl()).await);
    let lease = a.acquire_run(&sid("kept")).await.unwrap();
    let until = Instant::now() + Duration::from_millis(2_000);
    let mut checks = 0;
    while Instant::now() < until {
        assert_busy(b.acquire_run(&sid("kept")).await, "kept");
        checks += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(checks > 10);
    lease.release().await;
    b.acquire_run(&sid("kept")).await.unwrap().release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_stops_renewing_frees_the_session_after_the_ttl() {
    let Some(db) = TestDb::new("a_holder_that_stops_renewing_frees_the_session_after_the_ttl") else {
        return;
    };
    let (a, b) = (db.open_with(short_ttl()).await, db.open_with(short_ttl()).await);
    let lease = a.acquire_run(&sid("orphan")).await.unwrap();
    // The holder goes silent as a dead process would: no renewal, no release.
    a.close();
    std::mem::forget(lease);
    let started = Instant::now();
    assert_busy(b.acquire_run(&sid("orphan")).await, "orphan");
    let deadline = started + Duration::from_secs(10);
    let lease = loop {
        match b.acquire_run(&sid("orphan")).await {
            Ok(lease) => break lease,
            Err(StoreError::Busy { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("the lease never expired: {error}"),
        }
    };
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "freed too early: {waited:?}"
    );
    lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_lease_was_taken_over_writes_nothing_and_each_write_says_so() {
    let Some(db) = TestDb::new("a_holder_whose_lease_was_taken_over_writes_nothing_and_each_write_says_so")
    else {
        return;
    };
    let one_by_one = PgStoreOptions {
        group_commits: false,
        ..short_ttl()
    };
    let (a, b) = (db.open_with(one_by_one).await, db.open().await);
    let id = sid("taken");
    let lease = a.acquire_run(&id).await.unwrap();
    let first = SessionSnapshot::new("taken", PermissionMode::Default);
    a.save(&first).await.unwrap();
    a.append(&id, &delta(1, "before")).await.unwrap();
    // Another replica took the session over (as after an expiry).
    db.cluster.psql(
        &db.name,
        "UPDATE mecated_run_leases SET holder = '00000000-0000-0000-0000-000000000001' WHERE session_id = 'taken'",
    );
    let mut second = first.clone();
    second.turns = 9;
    let lost = "this process's run lease of the session was lost";
    let saved = a.save(&second).await.unwrap_err().to_string();
    assert!(saved.contains(lost), "{saved}");
    let appended = a.append(&id, &delta(2, "after")).await.unwrap_err().to_string();
    assert!(appended.contains(lost), "{appended}");
    let recorded = a.record(&record(&id, "c1")).await.unwrap_err().to_string();
    assert!(recorded.contains(lost) && recorded.contains("c1"), "{recorded}");
    // (Load continues the numbering after the logged event.)
    let mut expected = first.clone();
    expected.next_seq = 2;
    assert_eq!(b.load(&id).await.unwrap(), expected, "nothing was overwritten");
    assert_eq!(b.read(&id).await.unwrap(), [delta(1, "before")]);
    // The renewer notices and says so.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !logs::warnings_mentioning("session_id=taken")
        .iter()
        .any(|l| l.contains("was lost"))
    {
        assert!(Instant::now() < deadline, "no lost-lease error was logged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(lease);
}
