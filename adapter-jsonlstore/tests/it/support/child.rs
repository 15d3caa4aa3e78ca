//! Child processes for the crash, lock and concurrency tests: the test binary
//! re-executes itself with only [`entry`] selected and an env var naming the mode.
//! A child signals readiness by writing `READY` on stdout (a pipe), never by timing.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_jsonlstore::{JsonlStore, StoreOptions, SyncPolicy};
use engine_ports::{
    Event, EventLog, Message, PermissionMode, SessionId, SessionSnapshot, SessionStore, ToolCall,
    ToolCallRecorder,
};

use super::{allowed_record, delta};

const MODE_ENV: &str = "JSONLSTORE_IT_CHILD";
const ARGS_ENV: &str = "JSONLSTORE_IT_CHILD_ARGS";
/// A child never outlives this, even if its parent forgets it.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);

/// The child entry point; a no-op in a normal test run.
#[test]
fn entry() {
    let Ok(mode) = std::env::var(MODE_ENV) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&std::env::var(ARGS_ENV).unwrap()).unwrap();
    std::thread::spawn(|| {
        std::thread::sleep(CHILD_LIFETIME);
        std::process::exit(3);
    });
    match mode.as_str() {
        "hold-lock" => hold_lock(&args),
        "hold-run" => hold_run(&args),
        "leased-append-loop" => leased_append_loop(&args),
        "append-loop" => append_loop(&args),
        "save-loop" => save_loop(&args),
        "writer" => writer(&args),
        "umask-files" => umask_files(&args),
        other => panic!("unknown child mode {other}"),
    }
}

/// A running child process.
pub(crate) struct ChildProc {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

/// Starts the test binary as a child in `mode` with `args`.
pub(crate) fn spawn(mode: &str, args: &[&str]) -> ChildProc {
    spawn_inner(mode, args, None)
}

/// As [`spawn`], with the child's umask set to `umask` (octal digits).
pub(crate) fn spawn_with_umask(umask: &str, mode: &str, args: &[&str]) -> ChildProc {
    spawn_inner(mode, args, Some(umask))
}

fn spawn_inner(mode: &str, args: &[&str], umask: Option<&str>) -> ChildProc {
    let exe = std::env::current_exe().unwrap();
    let harness = [
        "--exact",
        "support::child::entry",
        "--nocapture",
        "--test-threads",
        "1",
        "-q",
    ];
    let mut command = if let Some(umask) = umask {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
            .arg(exe)
            .args(harness);
        c
    } else {
        let mut c = Command::new(exe);
        c.args(harness);
        c
    };
    let mut child = command
        .env(MODE_ENV, mode)
        .env(ARGS_ENV, serde_json::to_string(args).unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    ChildProc { child, stdout }
}

impl ChildProc {
    /// Blocks until the child wrote `READY`.
    pub(crate) fn wait_ready(&mut self) {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the child exited before it was ready");
            if line.trim() == "READY" {
                return;
            }
        }
    }

    /// Sends one line to the child's stdin.
    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// SIGKILL, then reap.
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for a normal exit and asserts success.
    pub(crate) fn wait_success(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn ready() {
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
}

fn runtime() -> tokio::runtime::Runtime {
    super::runtime()
}

/// Holds the exclusive lock of a lock file until stdin closes (or for at most 10 s,
/// then exits). The line `unlink` removes the lock file while holding it (as Delete
/// does) and exits.
fn hold_lock(args: &[String]) {
    let path = Path::new(&args[0]);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap();
    file.lock().unwrap();
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(10));
        std::process::exit(0);
    });
    ready();
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {
        if line.trim() == "unlink" {
            std::fs::remove_file(path).unwrap();
            break;
        }
        line.clear();
    }
    drop(file);
}

/// Holds the run lease of session `args[1]` in the store at `args[0]` until stdin
/// closes or it is killed.
fn hold_run(args: &[String]) {
    let store = JsonlStore::open(&args[0], StoreOptions::default()).unwrap();
    let rt = runtime();
    let lease = rt
        .block_on(store.acquire_run(&SessionId::from(args[1].as_str())))
        .unwrap();
    ready();
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {
        line.clear();
    }
    drop(lease);
}

/// The event with `seq` of the crash test: four in five are 256 KiB (multi-page
/// writes), the rest small.
pub(crate) fn crash_event(seq: u64) -> Event {
    let len = if seq.is_multiple_of(5) {
        100 + (seq % 13) as usize * 50
    } else {
        256 * 1024
    };
    let fill = char::from(b'a' + (seq % 26) as u8);
    delta(seq, format!("{seq}:{}", fill.to_string().repeat(len)))
}

/// Appends `crash_event(start..)` until killed (at most 100,000 or 20 s).
fn append_loop(args: &[String]) {
    let store = JsonlStore::open(&args[0], StoreOptions::default()).unwrap();
    let id = SessionId::from(args[1].as_str());
    let start: u64 = args[2].parse().unwrap();
    let rt = runtime();
    ready();
    let deadline = Instant::now() + Duration::from_secs(20);
    for seq in start..start + 100_000 {
        rt.block_on(store.append(&id, &crash_event(seq))).unwrap();
        if Instant::now() > deadline {
            break;
        }
    }
}

/// As [`append_loop`], holding the session's run lease (so through its appender);
/// `args[3]` is the sync policy (`never`, `batched` or `always`).
fn leased_append_loop(args: &[String]) {
    let sync = match args[3].as_str() {
        "never" => SyncPolicy::Never,
        "always" => SyncPolicy::Always,
        _ => SyncPolicy::default(),
    };
    let store = JsonlStore::open(
        &args[0],
        StoreOptions {
            sync,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let id = SessionId::from(args[1].as_str());
    let start: u64 = args[2].parse().unwrap();
    let rt = runtime();
    let _lease = rt.block_on(store.acquire_run(&id)).unwrap();
    ready();
    let deadline = Instant::now() + Duration::from_secs(20);
    for seq in start..start + 100_000 {
        rt.block_on(store.append(&id, &crash_event(seq))).unwrap();
        if Instant::now() > deadline {
            break;
        }
    }
}

/// Version `v` of the snapshot of the Save crash test: up to 64 KiB, every 100th
/// 1 MiB.
pub(crate) fn version_snapshot(id: &str, v: u64) -> SessionSnapshot {
    let mut snapshot = SessionSnapshot::new(id, PermissionMode::Default);
    snapshot.turns = v;
    snapshot.next_seq = v + 1;
    let size = if v.is_multiple_of(100) {
        1024 * 1024
    } else {
        1024 * (v % 64) as usize
    };
    snapshot.conversation = vec![Message::User {
        text: format!("version {v} {}", "v".repeat(size)),
    }]
    .into();
    snapshot
}

/// Saves `version_snapshot(start..start + 1000)`.
fn save_loop(args: &[String]) {
    let store = JsonlStore::open(&args[0], StoreOptions::default()).unwrap();
    let id = args[1].as_str();
    let start: u64 = args[2].parse().unwrap();
    let rt = runtime();
    ready();
    for v in start..start + 1000 {
        rt.block_on(store.save(&version_snapshot(id, v))).unwrap();
    }
}

/// The event writer `w` appends as its `k`-th record to session `s`.
pub(crate) fn writer_event(w: u64, s: u64, k: u64) -> Event {
    delta(w * 1_000_000 + k, format!("w{w}:s{s}:k{k}:{}", "p".repeat(200)))
}

/// The session ids of the concurrency test.
pub(crate) fn writer_session(s: u64) -> String {
    format!("conc/session-{s}")
}

/// `threads` writers numbered from `first`, each appending `per_session` events to
/// each of `sessions` sessions, round robin (SyncPolicy::Never).
fn writer(args: &[String]) {
    let store = Arc::new(
        JsonlStore::open(
            &args[0],
            StoreOptions {
                sync: SyncPolicy::Never,
                ..StoreOptions::default()
            },
        )
        .unwrap(),
    );
    let first: u64 = args[1].parse().unwrap();
    let threads: u64 = args[2].parse().unwrap();
    let per_session: u64 = args[3].parse().unwrap();
    let sessions: u64 = args[4].parse().unwrap();
    let ids: Vec<SessionId> = (0..sessions)
        .map(|s| SessionId::from(writer_session(s)))
        .collect();
    let handles: Vec<_> = (first..first + threads)
        .map(|w| {
            let store = Arc::clone(&store);
            let ids = ids.clone();
            std::thread::spawn(move || {
                let rt = runtime();
                for i in 0..per_session * sessions {
                    let s = (i + w) % sessions;
                    let k = i / sessions;
                    rt.block_on(store.append(&ids[s as usize], &writer_event(w, s, k)))
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}

/// Under a test umask: opens a fresh store and writes every kind of file; writes
/// the control file `args[1]` with default permissions.
fn umask_files(args: &[String]) {
    let store = JsonlStore::open(&args[0], StoreOptions::default()).unwrap();
    let rt = runtime();
    let id = SessionId::from("sess-umask");
    rt.block_on(async {
        store
            .create(&SessionSnapshot::new("sess-umask", PermissionMode::Default))
            .await
            .unwrap();
        store
            .save(&SessionSnapshot::new("sess-umask", PermissionMode::Plan))
            .await
            .unwrap();
        store.append(&id, &delta(1, "x")).await.unwrap();
        let call = ToolCall::new("c1", "Read", "{}");
        store.record(&allowed_record(&id, &call, "ok")).await.unwrap();
    });
    store.close().unwrap();
    std::fs::write(&args[1], b"control").unwrap();
}
