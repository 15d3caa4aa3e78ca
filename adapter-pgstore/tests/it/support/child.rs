//! Child processes for the cross-process tests: the test binary re-executes itself
//! with only [`entry`] selected and env vars naming the mode and its arguments.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use adapter_pgstore::{PgStore, StoreUrl};
use engine_ports::EventLog;

use super::{delta, fast, sid};

const MODE_ENV: &str = "PGSTORE_IT_CHILD";
const ARGS_ENV: &str = "PGSTORE_IT_CHILD_ARGS";
/// A child never outlives this, even if its parent forgets it.
const CHILD_LIFETIME: Duration = Duration::from_secs(120);

/// The child entry point; a no-op in a normal test run.
#[test]
fn entry() {
    let Ok(mode) = std::env::var(MODE_ENV) else {
        return;
    };
    let args: Vec<String> = std::env::var(ARGS_ENV)
        .unwrap()
        .split('\u{1f}')
        .map(str::to_owned)
        .collect();
    std::thread::spawn(|| {
        std::thread::sleep(CHILD_LIFETIME);
        std::process::exit(3);
    });
    match mode.as_str() {
        "append-loop" => append_loop(&args),
        other => panic!("unknown child mode {other}"),
    }
}

/// Starts the test binary as a child in `mode` with `args`.
pub(crate) fn spawn(mode: &str, args: &[&str]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "support::child::entry",
            "--nocapture",
            "--test-threads",
            "1",
            "-q",
        ])
        .env(MODE_ENV, mode)
        .env(ARGS_ENV, args.join("\u{1f}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The text of event `n` of process `tag` in session `session`.
pub(crate) fn writer_text(tag: &str, session: usize, n: usize) -> String {
    format!("{tag}:{session}:{n}")
}

/// `args`: URL, tag, sessions, appends per session. Appends `appends` events to
/// each of `sessions` sessions (`conc-<i>`), one task per session, all at once.
fn append_loop(args: &[String]) {
    let url = StoreUrl::parse(&args[0], None).unwrap();
    let tag = args[1].clone();
    let sessions: usize = args[2].parse().unwrap();
    let appends: usize = args[3].parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let store = Arc::new(PgStore::open(&url, fast()).await.unwrap());
        let tasks: Vec<_> = (0..sessions)
            .map(|session| {
                let store = Arc::clone(&store);
                let tag = tag.clone();
                tokio::spawn(async move {
                    let id = sid(&format!("conc-{session}"));
                    for n in 0..appends {
                        let event = delta(n as u64 + 1, writer_text(&tag, session, n));
                        store.append(&id, &event).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
}
