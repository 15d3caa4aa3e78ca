//! The `engine-ports` conformance suites of the store ports, run against `JsonlStore`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adapter_jsonlstore::JsonlStore;
use engine_ports::testkit::tool_call_recorder::{RecorderUnderTest, run_failing};
use engine_ports::testkit::{event_log, session_store, tool_call_log, tool_call_recorder};
use engine_ports::{EventLog, SessionId, SessionStore, ToolCallRecorder};

use crate::support::{self, open, open_with};

/// Fresh stores in numbered subdirectories of one temp dir that outlives them.
struct Fresh {
    parent: tempfile::TempDir,
    next: AtomicUsize,
}

impl Fresh {
    fn new() -> Self {
        Self {
            parent: support::tempdir(),
            next: AtomicUsize::new(0),
        }
    }

    fn store(&self) -> Arc<JsonlStore> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Arc::new(open(&self.parent.path().join(format!("store-{n}"))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_store_is_a_session_store() {
    let fresh = Fresh::new();
    session_store::run(|| fresh.store() as Arc<dyn SessionStore>).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_store_is_an_event_log() {
    let fresh = Fresh::new();
    event_log::run(|| fresh.store() as Arc<dyn EventLog>).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_store_is_a_tool_call_recorder() {
    let fresh = Fresh::new();
    tool_call_recorder::run(|| {
        let store = fresh.store();
        let reader = Arc::clone(&store);
        RecorderUnderTest {
            recorder: store as Arc<dyn ToolCallRecorder>,
            read_back: Box::new(move |id| {
                reader
                    .read_tool_calls(id)
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap()
            }),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_store_is_a_tool_call_log() {
    let fresh = Fresh::new();
    tool_call_log::run(|| fresh.store()).await;
}

/// A store whose tools file cannot be written (a directory stands in its place).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_backing_write_is_a_recorder_error() {
    let dir = support::tempdir();
    let store = Arc::new(open_with(dir.path(), support::never()));
    let tools = store.paths(&SessionId::from("sess-fail")).tools;
    std::fs::create_dir(&tools).unwrap();
    run_failing(Arc::clone(&store) as Arc<dyn ToolCallRecorder>).await;
    assert_eq!(store.dropped_records(), 1);
}
