//! Shared helpers: stores in temp dirs, event builders, WARN capture and child
//! processes.

pub(crate) mod child;
pub(crate) use test_peers::logs;

use std::path::Path;
use std::time::Duration;

use adapter_jsonlstore::{JsonlStore, StoreOptions, SyncPolicy};
use engine_ports::{Event, EventKind, SessionId};

pub(crate) use engine_ports::testkit::event_log::delta;

/// A fresh temp dir.
pub(crate) fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A store with the default options (Batched sync) at `root`.
pub(crate) fn open(root: &Path) -> JsonlStore {
    logs::init();
    JsonlStore::open(root, StoreOptions::default()).unwrap()
}

/// A store with `sync` at `root`.
pub(crate) fn open_with(root: &Path, opts: StoreOptions) -> JsonlStore {
    logs::init();
    JsonlStore::open(root, opts).unwrap()
}

/// Options with `SyncPolicy::Never` (fast tests).
pub(crate) fn never() -> StoreOptions {
    StoreOptions {
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    }
}

/// A session id.
pub(crate) fn sid(id: &str) -> SessionId {
    SessionId::from(id)
}

/// Every event of a session through the lazy reader, errors included.
pub(crate) fn read_all(store: &JsonlStore, id: &str) -> Vec<Result<Event, String>> {
    store
        .read_events(&sid(id))
        .unwrap()
        .map(|item| item.map_err(|e| e.to_string()))
        .collect()
}

/// The `seq`s of the good events before the first error.
pub(crate) fn good_seqs(store: &JsonlStore, id: &str) -> Vec<u64> {
    store
        .read_events(&sid(id))
        .unwrap()
        .map_while(Result::ok)
        .map(|e| e.seq)
        .collect()
}

/// A `tool.call` event.
/// The audit record of `call`, allowed by the policy and answered with the text
/// `output`, written now.
pub(crate) fn allowed_record(
    session: &SessionId,
    call: &engine_ports::ToolCall,
    output: impl Into<String>,
) -> engine_ports::ToolCallRecord {
    engine_ports::ToolCallRecord::new(
        session,
        call,
        &engine_ports::ToolResult::text(call.id().clone(), output),
        Duration::ZERO,
        Duration::ZERO,
        std::time::SystemTime::now(),
    )
    .with_approval(engine_ports::Approval::POLICY_ALLOW)
}

pub(crate) fn tool_call_event(seq: u64, call: &engine_ports::ToolCall) -> Event {
    Event {
        seq,
        time: None,
        kind: EventKind::ToolCall {
            call_id: call.id().clone(),
            name: call.name().to_owned(),
            args: call.args_value(),
        },
    }
}

/// The entries of a directory, sorted by name.
pub(crate) fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The permission bits of a path.
pub(crate) fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Runs `work` on a thread and fails (instead of hanging) if it takes longer than
/// `limit`.
pub(crate) fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the operation did not finish within {limit:?}"))
}

/// A current-thread runtime for blocking contexts (threads, children, proptest).
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}
