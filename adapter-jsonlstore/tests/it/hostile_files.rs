//! Symlinks, FIFOs and directories in place of store files are refused
//! with errors naming the path, and nothing hangs.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use adapter_jsonlstore::JsonlStore;
use engine_ports::{EventLog, PermissionMode, SessionSnapshot, SessionStore};

use crate::support::{self, delta, open, runtime, sid, within};

fn mkfifo(path: &Path) {
    assert!(
        std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap()
            .success()
    );
}

/// Append and read of the events file of `id`, each bounded in time.
fn append_and_read_fail(store: &Arc<JsonlStore>, id: &str, path: &Path) {
    let shown = path.to_string_lossy().into_owned();
    let (s, i) = (Arc::clone(store), id.to_owned());
    let append = within(Duration::from_secs(10), move || {
        runtime().block_on(s.append(&sid(&i), &delta(1, "x")))
    });
    let error = append.unwrap_err().to_string();
    assert!(error.contains(&shown), "{error}");
    let (s, i) = (Arc::clone(store), id.to_owned());
    let read = within(Duration::from_secs(10), move || {
        s.read_events(&sid(&i)).map(|_| ())
    });
    let error = read.unwrap_err().to_string();
    assert!(error.contains(&shown), "{error}");
    let (s, i) = (Arc::clone(store), id.to_owned());
    let port_read = within(Duration::from_secs(10), move || {
        runtime().block_on(s.read(&sid(&i)))
    });
    assert!(port_read.is_err());
}

#[test]
fn a_symlinked_events_file_is_refused() {
    let dir = support::tempdir();
    let store = Arc::new(open(&dir.path().join("store")));
    let target = dir.path().join("elsewhere.jsonl");
    std::fs::write(&target, b"").unwrap();
    let path = store.paths(&sid("sess-link")).events;
    std::os::unix::fs::symlink(&target, &path).unwrap();
    append_and_read_fail(&store, "sess-link", &path);
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"",
        "the link target is untouched"
    );
}

#[test]
fn a_fifo_events_file_is_refused_without_hanging() {
    let dir = support::tempdir();
    let store = Arc::new(open(dir.path()));
    let path = store.paths(&sid("sess-fifo")).events;
    mkfifo(&path);
    append_and_read_fail(&store, "sess-fifo", &path);
}

#[test]
fn hostile_snapshot_and_lock_files_are_refused() {
    let dir = support::tempdir();
    let store = Arc::new(open(dir.path()));
    let rt = runtime();
    let target = dir.path().join("target.json");
    std::fs::write(&target, b"{}").unwrap();

    let linked = store.paths(&sid("sess-a")).snapshot;
    std::os::unix::fs::symlink(&target, &linked).unwrap();
    let error = rt.block_on(store.load(&sid("sess-a"))).unwrap_err().to_string();
    assert!(error.contains(&*linked.to_string_lossy()), "{error}");

    let fifo = store.paths(&sid("sess-b")).snapshot;
    mkfifo(&fifo);
    let s = Arc::clone(&store);
    let error = within(Duration::from_secs(10), move || {
        runtime().block_on(s.load(&sid("sess-b")))
    })
    .unwrap_err()
    .to_string();
    assert!(error.contains(&*fifo.to_string_lossy()), "{error}");

    let lock = store.paths(&sid("sess-c")).lock;
    mkfifo(&lock);
    let s = Arc::clone(&store);
    let error = within(Duration::from_secs(10), move || {
        runtime().block_on(s.save(&SessionSnapshot::new("sess-c", PermissionMode::Default)))
    })
    .unwrap_err()
    .to_string();
    assert!(error.contains(&*lock.to_string_lossy()), "{error}");

    // List skips (with a WARN) rather than failing on a hostile entry.
    assert!(rt.block_on(store.list()).unwrap().is_empty());
    assert_eq!(std::fs::read(&target).unwrap(), b"{}");
}
