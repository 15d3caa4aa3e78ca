//! Delete order, idempotence and retry.

use engine_ports::{
    EventLog, PermissionMode, SessionSnapshot, SessionStore, StoreError, ToolCall, ToolCallRecorder,
};

use crate::support::{self, allowed_record, delta, entries, open, sid};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_removes_every_file_and_is_idempotent() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-del");
    store
        .save(&SessionSnapshot::new("sess-del", PermissionMode::Default))
        .await
        .unwrap();
    let call = ToolCall::new("c1", "Read", "{}");
    store.record(&allowed_record(&id, &call, "ok")).await.unwrap();
    store.append(&id, &delta(1, "x")).await.unwrap();
    let paths = store.paths(&id);
    for path in [&paths.snapshot, &paths.tools, &paths.events, &paths.lock] {
        assert!(path.exists(), "{}", path.display());
    }
    store.delete(&id).await.unwrap();
    for path in [&paths.snapshot, &paths.tools, &paths.events, &paths.lock] {
        assert!(!path.exists(), "{}", path.display());
    }
    assert!(entries(&dir.path().join("sid-v1")).is_empty());
    assert!(matches!(store.load(&id).await, Err(StoreError::NotFound { .. })));
    store.delete(&id).await.unwrap();
    store.delete(&sid("never-saved")).await.unwrap();
    assert!(
        entries(&dir.path().join("sid-v1")).is_empty(),
        "nothing left behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_delete_keeps_the_snapshot_and_a_later_delete_finishes() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-stuck");
    store
        .save(&SessionSnapshot::new("sess-stuck", PermissionMode::Default))
        .await
        .unwrap();
    store.append(&id, &delta(1, "x")).await.unwrap();
    let paths = store.paths(&id);
    std::fs::create_dir(&paths.tools).unwrap();
    std::fs::write(paths.tools.join("obstacle"), b"x").unwrap();
    let error = store.delete(&id).await.unwrap_err();
    assert!(
        error.to_string().contains(&*paths.tools.to_string_lossy()),
        "{error}"
    );
    assert!(paths.snapshot.exists());
    assert!(paths.events.exists(), "Delete stops at the first failure");
    let ids: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.id.to_string())
        .collect();
    assert_eq!(ids, ["sess-stuck"]);
    std::fs::remove_dir_all(&paths.tools).unwrap();
    store.delete(&id).await.unwrap();
    assert!(entries(&dir.path().join("sid-v1")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_works_on_an_undecodable_snapshot() {
    let dir = support::tempdir();
    let store = open(dir.path());
    let id = sid("sess-junk");
    std::fs::write(store.paths(&id).snapshot, b"{torn").unwrap();
    assert!(store.load(&id).await.is_err());
    store.delete(&id).await.unwrap();
    assert!(entries(&dir.path().join("sid-v1")).is_empty());
}
