//! The `engine-ports` conformance suites run against the in-memory stores (sessions and memory).

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
