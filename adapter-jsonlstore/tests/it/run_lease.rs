//! The run lease across processes: a lease held by another process refuses this
//! one, a killed holder gives the session back, Delete respects the lease and
//! leaves no lease file behind.

use engine_ports::{EventLog, PermissionMode, SessionSnapshot, SessionStore, StoreError};

use crate::support::{self, child, delta, entries, good_seqs, open, sid};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_held_by_another_process_refuses_until_that_process_is_killed() {
    let dir = support::tempdir();
    let root = dir.path().to_string_lossy().into_owned();
    let store = open(dir.path());
    let id = sid("sess-run/held");
    let mut holder = child::spawn("hold-run", &[&root, "sess-run/held"]);
    holder.wait_ready();

    match store.acquire_run(&id).await {
        Err(error @ StoreError::Busy { .. }) => assert_eq!(
            error.to_string(),
            "session \"sess-run/held\" already has a run in progress"
        ),
        other => panic!("expected Busy, got {other:?}"),
    }
    assert!(matches!(store.delete(&id).await, Err(StoreError::Busy { .. })));
    // Other sessions, and the session's own files, are not blocked by the lease.
    drop(store.acquire_run(&sid("sess-run/free")).await.unwrap());
    store.append(&id, &delta(1, "x")).await.unwrap();

    // SIGKILL: the kernel releases the lock with the process.
    holder.kill();
    let lease = store.acquire_run(&id).await.unwrap();
    store
        .save(&SessionSnapshot::new("sess-run/held", PermissionMode::Default))
        .await
        .unwrap();
    drop(lease);
    assert_eq!(good_seqs(&store, "sess-run/held"), [1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_after_a_run_leaves_no_lease_file() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-run/deleted");
    let lease = store.acquire_run(&id).await.unwrap();
    assert!(store.paths(&id).run.exists());
    store
        .save(&SessionSnapshot::new("sess-run/deleted", PermissionMode::Default))
        .await
        .unwrap();
    store.append(&id, &delta(1, "x")).await.unwrap();
    drop(lease);
    store.delete(&id).await.unwrap();
    assert!(entries(&dir.path().join("sid-v1")).is_empty());
    // A fresh lease after Delete works on a fresh file.
    drop(store.acquire_run(&id).await.unwrap());
}
