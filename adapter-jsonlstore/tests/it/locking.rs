//! The lock protocol: timeouts against a lock held by another
//! process, parallel sessions, and the re-check after Delete unlinks a lock file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_jsonlstore::StoreOptions;
use engine_ports::{EventLog, StoreError, ToolCall, ToolCallRecorder};

use crate::support::{self, allowed_record, child, delta, good_seqs, logs, open_with, runtime, sid, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_by_another_process_times_out_the_recorder_and_append() {
    let dir = support::tempdir();
    // Only the recorder timeout is short here: the recorder must not use the
    // 30-second lock timeout.
    let store = open_with(
        dir.path(),
        StoreOptions {
            recorder_lock_timeout: Duration::from_millis(200),
            ..StoreOptions::default()
        },
    );
    let appender = open_with(
        dir.path(),
        StoreOptions {
            lock_timeout: Duration::from_millis(200),
            ..StoreOptions::default()
        },
    );
    let id = sid("sess-locked-19");
    let lock = store.paths(&id).lock;
    let mut holder = child::spawn("hold-lock", &[&lock.to_string_lossy()]);
    holder.wait_ready();

    let call = ToolCall::new("c1", "Shell", r#"{"command":"ls"}"#);
    let started = Instant::now();
    let error = store.record(&allowed_record(&id, &call, "ok")).await.unwrap_err();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(
        waited < Duration::from_secs(3),
        "the recorder must give up near its timeout: {waited:?}"
    );
    let text = error.to_string();
    for needle in ["sess-locked-19", "c1", "Shell"] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
    assert_eq!(store.dropped_records(), 1);
    let warnings = logs::warnings_mentioning("sess-locked-19");
    assert_eq!(warnings.len(), 1, "{warnings:?}");

    let started = Instant::now();
    let error = appender.append(&id, &delta(1, "x")).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, StoreError::LockTimeout { .. }), "{error:?}");
    assert!(error.to_string().contains("\"sess-locked-19\""), "{error}");

    // Other sessions are not blocked.
    store.append(&sid("sess-free"), &delta(1, "x")).await.unwrap();

    holder.kill();
    store.append(&id, &delta(1, "x")).await.unwrap();
    assert_eq!(good_seqs(&store, "sess-locked-19"), [1]);
}

/// A writer waiting on a lock file that Delete unlinks while holding it starts
/// over on a fresh lock file instead of proceeding on the unlinked inode.
#[test]
fn a_waiter_starts_over_when_the_lock_file_is_unlinked() {
    let dir = support::tempdir();
    let store = Arc::new(open_with(dir.path(), support::never()));
    let id = sid("sess-relock");
    let lock = store.paths(&id).lock;
    let mut holder = child::spawn("hold-lock", &[&lock.to_string_lossy()]);
    holder.wait_ready();
    let s = Arc::clone(&store);
    let waiter =
        std::thread::spawn(move || runtime().block_on(s.append(&sid("sess-relock"), &delta(1, "x"))));
    // Wait until the waiter holds the old inode open (it then waits for the lock).
    wait_until_open_here(&lock);
    holder.send("unlink");
    holder.wait_success();
    let outcome = within(Duration::from_secs(20), move || waiter.join().unwrap());
    outcome.unwrap();
    assert!(
        lock.exists(),
        "the waiter re-created and locked a fresh lock file"
    );
    assert_eq!(good_seqs(&store, "sess-relock"), [1]);
}

/// Blocks until some descriptor of this process refers to `path` (Linux: through
/// `/proc/self/fd`), bounded by 20 s.
fn wait_until_open_here(path: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let open_here = std::fs::read_dir("/proc/self/fd")
            .map(|fds| {
                fds.flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
            })
            .unwrap_or(true);
        if open_here {
            return;
        }
        std::thread::yield_now();
    }
    panic!("the waiter never opened {}", path.display());
}
