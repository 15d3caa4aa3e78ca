//! The `engine-ports` conformance suites run against the in-memory stores (sessions and
//! memory), and the in-memory store's cap on audit records.

use std::sync::Arc;

use engine_core::InMemoryStore;
use engine_ports::testkit::tool_call_recorder::RecorderUnderTest;
use engine_ports::testkit::{event_log, session_store, tool_call_log, tool_call_recorder};
use engine_ports::{EventLog, SessionStore, ToolCallRecorder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store_is_a_session_store() {
    session_store::run(|| Arc::new(InMemoryStore::new()) as Arc<dyn SessionStore>).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store_is_an_event_log() {
    event_log::run(|| Arc::new(InMemoryStore::new()) as Arc<dyn EventLog>).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store_is_a_tool_call_recorder() {
    tool_call_recorder::run(|| {
        let store = Arc::new(InMemoryStore::new());
        let reader = Arc::clone(&store);
        RecorderUnderTest {
            recorder: store as Arc<dyn ToolCallRecorder>,
            read_back: Box::new(move |id| reader.records(id)),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store_is_a_tool_call_log() {
    tool_call_log::run(|| Arc::new(InMemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store_refuses_records_of_an_empty_session_id() {
    // The in-memory store has no backing write that can fail; an invalid session id
    // is its one recorder failure, and it must be an error naming the call.
    let store = InMemoryStore::new();
    let call = engine_ports::ToolCall::new("call-9", "Write", "{}");
    let result = engine_ports::ToolResult::text("call-9", "ok");
    let error = store
        .record(
            &engine_ports::ToolCallRecord::new(
                &engine_ports::SessionId::from(""),
                &call,
                &result,
                std::time::Duration::ZERO,
                std::time::Duration::ZERO,
                std::time::SystemTime::now(),
            )
            .with_approval(engine_ports::Approval::POLICY_ALLOW),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("call-9") && error.to_string().contains("Write"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_memory_is_a_memory_store() {
    engine_ports::testkit::memory_store::run(|| {
        Arc::new(engine_core::InMemoryMemory::new()) as Arc<dyn engine_ports::MemoryStore>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_in_memory_store_is_a_tool_call_recorder_and_log() {
    tool_call_recorder::run(|| {
        let store = Arc::new(InMemoryStore::with_record_cap(1_000));
        let reader = Arc::clone(&store);
        RecorderUnderTest {
            recorder: store as Arc<dyn ToolCallRecorder>,
            read_back: Box::new(move |id| reader.records(id)),
        }
    })
    .await;
    tool_call_log::run(|| Arc::new(InMemoryStore::with_record_cap(1_000))).await;
}

/// A record of `session` for call `id`.
fn record_of(session: &str, id: &str) -> engine_ports::ToolCallRecord {
    let call = engine_ports::ToolCall::new(id, "Read", "{}");
    let result = engine_ports::ToolResult::text(id, "ok");
    engine_ports::ToolCallRecord::new(
        &engine_ports::SessionId::from(session),
        &call,
        &result,
        std::time::Duration::ZERO,
        std::time::Duration::ZERO,
        std::time::SystemTime::now(),
    )
}

fn call_ids(store: &InMemoryStore, session: &str) -> Vec<String> {
    store
        .records(&engine_ports::SessionId::from(session))
        .into_iter()
        .map(|record| record.call_id.as_str().to_owned())
        .collect()
}

#[tokio::test]
async fn a_capped_in_memory_store_drops_the_oldest_records_of_all_sessions_first() {
    let store = InMemoryStore::with_record_cap(3);
    for (session, id) in [("a", "a1"), ("b", "b1"), ("a", "a2")] {
        store.record(&record_of(session, id)).await.unwrap();
    }
    assert_eq!(store.dropped_records(), 0);
    store.record(&record_of("b", "b2")).await.unwrap();
    store.record(&record_of("b", "b3")).await.unwrap();
    // a1, then b1 were the oldest of all.
    assert_eq!(call_ids(&store, "a"), ["a2"]);
    assert_eq!(call_ids(&store, "b"), ["b2", "b3"]);
    assert_eq!(store.dropped_records(), 2);
    store.record(&record_of("b", "b4")).await.unwrap();
    assert!(
        call_ids(&store, "a").is_empty(),
        "a session whose records all went is empty"
    );
    assert_eq!(call_ids(&store, "b"), ["b2", "b3", "b4"]);
    assert_eq!(store.dropped_records(), 3);
}

#[tokio::test]
async fn deleting_a_session_frees_its_records_places_under_the_cap() {
    let store = InMemoryStore::with_record_cap(2);
    store.record(&record_of("a", "a1")).await.unwrap();
    store.record(&record_of("b", "b1")).await.unwrap();
    store.delete(&engine_ports::SessionId::from("a")).await.unwrap();
    store.record(&record_of("b", "b2")).await.unwrap();
    assert_eq!(call_ids(&store, "b"), ["b1", "b2"]);
    assert_eq!(store.dropped_records(), 0);
}

#[tokio::test]
async fn an_uncapped_in_memory_store_keeps_every_record() {
    let store = InMemoryStore::new();
    for n in 0..100 {
        store.record(&record_of("a", &format!("a{n}"))).await.unwrap();
    }
    assert_eq!(call_ids(&store, "a").len(), 100);
    assert_eq!(store.dropped_records(), 0);
}
