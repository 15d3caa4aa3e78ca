//! A leased session's appender: records buffered while a run lease is held are
//! readable at once in this process, land in order under every sync policy, share
//! the files safely with writers that hold no lease (in this process or another),
//! repair a torn tail, and survive SIGKILL as a readable prefix.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use adapter_jsonlstore::{StoreOptions, SyncPolicy};
use engine_ports::{Event, EventLog, SessionStore, ToolCall, ToolCallRecorder};

use crate::support::child::{self, crash_event, writer_event, writer_session};
use crate::support::{self, allowed_record, delta, logs, open_with, sid};

fn policies() -> [(&'static str, SyncPolicy); 3] {
    [
        ("never", SyncPolicy::Never),
        ("batched", SyncPolicy::default()),
        ("always", SyncPolicy::Always),
    ]
}

fn with_sync(sync: SyncPolicy) -> StoreOptions {
    StoreOptions {
        sync,
        ..StoreOptions::default()
    }
}

fn line(event: &Event) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&serde_json::json!({"v": "mecated-events/1", "ev": event})).unwrap();
    bytes.push(b'\n');
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leased_appends_are_read_back_at_once_and_land_in_order_under_every_policy() {
    for (name, sync) in policies() {
        let dir = support::tempdir();
        let store = open_with(dir.path(), with_sync(sync));
        let id = sid("sess-leased");
        let lease = store.acquire_run(&id).await.unwrap();
        let events: Vec<Event> = (1..=300).map(|seq| delta(seq, format!("{name} {seq}"))).collect();
        for (i, event) in events.iter().enumerate() {
            store.append(&id, event).await.unwrap();
            if i % 100 == 0 {
                assert_eq!(
                    store.read(&id).await.unwrap(),
                    events[..=i],
                    "{name}: read after {i}"
                );
            }
        }
        let call = ToolCall::new("c1", "Read", "{}");
        store.record(&allowed_record(&id, &call, "ok")).await.unwrap();
        let records: Vec<_> = store
            .read_tool_calls(&id)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records.len(), 1, "{name}");
        drop(lease);
        let expected: Vec<u8> = events.iter().flat_map(line).collect();
        assert!(
            std::fs::read(store.paths(&id).events).unwrap() == expected,
            "{name}: the file holds exactly the records, in order"
        );
        store.close().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_of_a_leased_session_never_gets_ahead_of_its_events() {
    let dir = support::tempdir();
    let store = open_with(dir.path(), with_sync(SyncPolicy::Never));
    let id = sid("sess-save");
    let _lease = store.acquire_run(&id).await.unwrap();
    for seq in 1..=50 {
        store.append(&id, &delta(seq, "x")).await.unwrap();
    }
    let mut snapshot = engine_ports::SessionSnapshot::new("sess-save", engine_ports::PermissionMode::Default);
    snapshot.next_seq = 51;
    store.save(&snapshot).await.unwrap();
    // Another handle (as another process would) sees every event the snapshot counts.
    let other = open_with(dir.path(), with_sync(SyncPolicy::Never));
    assert_eq!(other.read(&id).await.unwrap().len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_tail_left_before_the_lease_is_cut_by_the_first_leased_append() {
    let dir = support::tempdir();
    let store = open_with(dir.path(), with_sync(SyncPolicy::Never));
    let id = sid("sess-torn");
    store.append(&id, &delta(1, "one")).await.unwrap();
    let torn = line(&delta(2, "torn"));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(store.paths(&id).events)
        .unwrap();
    file.write_all(&torn[..torn.len() / 2]).unwrap();
    let lease = store.acquire_run(&id).await.unwrap();
    store.append(&id, &delta(2, "two")).await.unwrap();
    drop(lease);
    let seqs: Vec<u64> = store.read(&id).await.unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2]);
    let expected: Vec<u8> = [delta(1, "one"), delta(2, "two")].iter().flat_map(line).collect();
    assert!(std::fs::read(store.paths(&id).events).unwrap() == expected);
}

/// A leased appender and 4 unleased writer threads of another process append to
/// the same sessions at once: nothing is lost and every writer's order is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_appender_and_another_process_writing_the_same_session_lose_nothing() {
    const PER_SESSION: u64 = 1_000;
    let dir = support::tempdir();
    let root = dir.path().to_string_lossy().into_owned();
    let store = Arc::new(open_with(dir.path(), with_sync(SyncPolicy::Never)));
    let id = sid(&writer_session(0));
    let lease = store.acquire_run(&id).await.unwrap();
    // Writers 0..4 in the child, one session; writer 9 is this process, leased.
    let other = child::spawn("writer", &[&root, "0", "4", &PER_SESSION.to_string(), "1"]);
    for k in 0..PER_SESSION * 4 {
        store.append(&id, &writer_event(9, 0, k)).await.unwrap();
    }
    other.wait_success();
    drop(lease);
    let events: Vec<Event> = store.read(&id).await.unwrap();
    assert_eq!(events.len() as u64, PER_SESSION * 8);
    let mut next_k: HashMap<u64, u64> = HashMap::new();
    for event in &events {
        let w = event.seq / 1_000_000;
        let k = next_k.entry(w).or_insert(0);
        assert!(
            *event == writer_event(w, 0, *k),
            "writer {w} record {k} out of order"
        );
        *k += 1;
    }
    assert_eq!(next_k[&9], PER_SESSION * 4);
    assert!((0..4).all(|w| next_k[&w] == PER_SESSION), "{next_k:?}");
}

/// SIGKILL of a process appending through its appender: a read gives exactly a
/// prefix of what it appended, and the next append repairs the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_a_leased_appender_leaves_a_readable_prefix() {
    let dir = support::tempdir();
    let root = dir.path().to_string_lossy().into_owned();
    let store = open_with(dir.path(), with_sync(SyncPolicy::Never));
    let mut committed = 0u64;
    for round in 0..12u64 {
        let (policy, _) = policies()[(round % 3) as usize];
        let name = "crash/leased";
        let id = sid(name);
        let start = committed + 1;
        let mut appender = child::spawn("leased-append-loop", &[&root, name, &start.to_string(), policy]);
        appender.wait_ready();
        std::thread::sleep(Duration::from_micros(fastrand::u64(0..20_000)));
        appender.kill();
        let events: Vec<_> = store
            .read_events(&id)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("round {round}: corrupt record after a kill: {e}"));
        assert!(
            events.len() as u64 >= committed,
            "round {round}: records were lost"
        );
        for (i, event) in events.iter().enumerate() {
            assert!(
                *event == crash_event(i as u64 + 1),
                "round {round}: record {} differs",
                i + 1
            );
        }
        committed = events.len() as u64;
        let lease = store.acquire_run(&id).await.unwrap();
        store.append(&id, &crash_event(committed + 1)).await.unwrap();
        drop(lease);
        committed += 1;
        let expected: Vec<u8> = (1..=committed).flat_map(|s| line(&crash_event(s))).collect();
        assert!(
            std::fs::read(store.paths(&id).events).unwrap() == expected,
            "round {round}: the file holds exactly the committed records"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_record_that_cannot_be_written_is_counted_and_logged() {
    let dir = support::tempdir();
    let store = open_with(dir.path(), with_sync(SyncPolicy::Never));
    let id = sid("sess-leased-fail");
    std::fs::create_dir(store.paths(&id).tools).unwrap();
    let lease = store.acquire_run(&id).await.unwrap();
    let call = ToolCall::new("c1", "Read", "{}");
    // Buffered: the failure shows when the batch is written.
    let _ = store.record(&allowed_record(&id, &call, "ok")).await;
    drop(lease);
    assert_eq!(store.dropped_records(), 1);
    assert!(!logs::warnings_mentioning("sess-leased-fail").is_empty());
}
