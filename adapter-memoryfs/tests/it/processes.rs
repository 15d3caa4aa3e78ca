//! Writers in other OS processes: this test binary re-executes itself with
//! `child_writer` as the only test and the `CHILD_*` variables set.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use adapter_memoryfs::{DOCUMENT_FILE, MemoryFs, MemoryFsOptions, TEMP_PREFIX};
use engine_ports::MemoryStore;
use engine_ports::testkit::memory_store::create;

const CHILD_DIR: &str = "MECATL_MEMORYFS_CHILD_DIR";
const CHILD_PREFIX: &str = "MECATL_MEMORYFS_CHILD_PREFIX";
const CHILD_COUNT: &str = "MECATL_MEMORYFS_CHILD_COUNT";
const CHILD_VALUE_BYTES: &str = "MECATL_MEMORYFS_CHILD_VALUE_BYTES";

/// The body of a child process: writes `COUNT` keys `PREFIX/kN` one by one. Does
/// nothing when run as an ordinary test.
#[test]
fn child_writer() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let prefix = std::env::var(CHILD_PREFIX).unwrap();
    let count: usize = std::env::var(CHILD_COUNT).unwrap().parse().unwrap();
    let value_bytes: usize = std::env::var(CHILD_VALUE_BYTES).unwrap().parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = MemoryFs::open(
            dir,
            MemoryFsOptions {
                lock_timeout: Duration::from_secs(60),
                ..MemoryFsOptions::default()
            },
        );
        for i in 0..count {
            let value = format!("{prefix}-{i}-").repeat(value_bytes / 8 + 1);
            store
                .put(create(&format!("{prefix}/k{i:04}"), &value, ""))
                .await
                .unwrap();
        }
    });
}

fn spawn_writer(dir: &Path, prefix: &str, count: usize, value_bytes: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "processes::child_writer",
            "--test-threads=1",
            "--quiet",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_PREFIX, prefix)
        .env(CHILD_COUNT, count.to_string())
        .env(CHILD_VALUE_BYTES, value_bytes.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_writing_a_thousand_keys_each_lose_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = spawn_writer(dir.path(), "a", 1000, 8);
    let mut b = spawn_writer(dir.path(), "b", 1000, 8);
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
    let index = store.index().await.unwrap();
    assert_eq!(index.len(), 2000);
    for prefix in ["a", "b"] {
        let listed = store.prefix(&format!("{prefix}/"), 2000).await.unwrap();
        assert_eq!(listed.total, 1000, "{prefix}");
        for (i, entry) in listed.entries.iter().enumerate() {
            assert_eq!(entry.key, format!("{prefix}/k{i:04}"));
            assert_eq!(entry.version, 1);
            assert!(entry.value.starts_with(&format!("{prefix}-{i}-")));
        }
    }
}

/// How many keys the document holds now (0 while there is none).
async fn live_keys(dir: &Path) -> usize {
    let store = MemoryFs::open(dir, MemoryFsOptions::default());
    store.index().await.map(|i| i.len()).unwrap_or_default()
}

fn temp_file_present(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().starts_with(TEMP_PREFIX))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_writes_leaves_the_previous_document_whole() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    let dir = tempfile::tempdir().unwrap();
    let mut interrupted = 0;
    for round in 0..20usize {
        let prefix = format!("r{round}");
        let before = live_keys(dir.path()).await;
        // Large values make each write long (a few MiB written and synced).
        let mut child = spawn_writer(dir.path(), &prefix, 1000, 48 * 1024);
        let deadline = Instant::now() + Duration::from_secs(60);
        // Even rounds kill once the child wrote some keys; odd rounds as soon as a
        // write's temp file exists, i.e. in the middle of a write.
        let want = 1 + round % 3;
        loop {
            assert!(
                Instant::now() < deadline,
                "round {round}: the writer made no progress"
            );
            let ready = if round % 2 == 0 {
                live_keys(dir.path()).await >= before + want
            } else {
                temp_file_present(dir.path())
            };
            if ready {
                break;
            }
            tokio::task::yield_now().await;
        }
        kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), Signal::SIGKILL).unwrap();
        child.wait().unwrap();
        interrupted += usize::from(temp_file_present(dir.path()));

        // The document decodes and holds every key the child finished, in order.
        let store = MemoryFs::open(dir.path(), MemoryFsOptions::default());
        let listed = store.prefix(&format!("{prefix}/"), 1000).await.unwrap();
        if round % 2 == 0 {
            assert!(listed.total >= want, "round {round}: {} keys", listed.total);
        }
        for (i, entry) in listed.entries.iter().enumerate() {
            assert_eq!(entry.key, format!("{prefix}/k{i:04}"), "round {round}");
            assert!(
                entry.value.starts_with(&format!("{prefix}-{i}-")),
                "round {round}"
            );
        }
        assert_eq!(
            store.index().await.unwrap().len(),
            before + listed.total,
            "round {round}"
        );
        // The store takes writes again, and the first write clears the dead temp file.
        store
            .put(create(&format!("after/r{round}"), "v", ""))
            .await
            .unwrap();
        assert!(!temp_file_present(dir.path()), "round {round}");
        assert!(dir.path().join(DOCUMENT_FILE).exists());
    }
    assert!(interrupted > 0, "no kill landed inside a write");
    eprintln!("sigkill rounds that interrupted a write: {interrupted} of 20");
}
