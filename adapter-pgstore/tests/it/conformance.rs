//! The `engine-ports` conformance suites of the store ports, run against `PgStore`: every case
//! gets a fresh store in a schema of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adapter_pgstore::PgStore;
use engine_ports::testkit::tool_call_recorder::{RecorderUnderTest, run_failing};
use engine_ports::testkit::{event_log, session_store, tool_call_log, tool_call_recorder};
use engine_ports::{EventLog, SessionStore, ToolCallRecorder};

use crate::support::{TestDb, fast, lock_table};

/// Fresh stores, one schema each, in one database.
struct Fresh {
    db: TestDb,
    next: AtomicUsize,
}

impl Fresh {
    fn new(test: &str) -> Option<Self> {
        Some(Self {
            db: TestDb::new(test)?,
            next: AtomicUsize::new(0),
        })
    }

    /// Opens a store from the suites' synchronous factories (multi-threaded runtime).
    fn store(&self) -> Arc<PgStore> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let url = self.db.schema_url(&format!("case_{n}"));
        let store = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(PgStore::open(&url, fast()))
        });
        Arc::new(store.unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_store_is_a_session_store() {
    let Some(fresh) = Fresh::new("pg_store_is_a_session_store") else {
        return;
    };
    session_store::run(|| fresh.store() as Arc<dyn SessionStore>).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_store_is_an_event_log() {
    let Some(fresh) = Fresh::new("pg_store_is_an_event_log") else {
        return;
    };
    event_log::run(|| fresh.store() as Arc<dyn EventLog>).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_store_is_a_tool_call_recorder() {
    let Some(fresh) = Fresh::new("pg_store_is_a_tool_call_recorder") else {
        return;
    };
    tool_call_recorder::run(|| {
        let store = fresh.store();
        let reader = Arc::clone(&store);
        RecorderUnderTest {
            recorder: store as Arc<dyn ToolCallRecorder>,
            read_back: Box::new(move |id| {
                let id = id.clone();
                let reader = Arc::clone(&reader);
                tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current()
                        .block_on(async move { reader.read_tool_calls(&id).await })
                })
                .unwrap()
            }),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_store_is_a_tool_call_log() {
    let Some(fresh) = Fresh::new("pg_store_is_a_tool_call_log") else {
        return;
    };
    tool_call_log::run(|| fresh.store()).await;
}

/// A recorder whose table is locked by another transaction past the store's time
/// limit returns an error naming session, call and tool (and does not hang).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_backing_write_is_a_recorder_error() {
    let Some(db) = TestDb::new("a_failing_backing_write_is_a_recorder_error") else {
        return;
    };
    let store = Arc::new(
        db.open_with(adapter_pgstore::PgStoreOptions {
            timeout: std::time::Duration::from_millis(500),
            ..fast()
        })
        .await,
    );
    let mut client = db.client().await;
    let locker = lock_table(&mut client, "mecated_tool_calls").await;
    run_failing(Arc::clone(&store) as Arc<dyn ToolCallRecorder>).await;
    locker.rollback().await.unwrap();
}
