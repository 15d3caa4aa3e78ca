//! One run per session across processes: a `mecated run` holding a session makes
//! another process's run of it fail (CLI exit 1, HTTP 409) without losing or
//! duplicating anything, and a killed holder gives the session back.
//!
//! The holder is made slow deterministically: its first tool call is a Shell loop
//! that waits for a file the test creates when it is done with the holder.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use app::StoreConfig;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::support::http::TestServer;
use crate::support::{Scratch, config, json_lines, mecated, mecated_command};

const LIMIT: Duration = Duration::from_secs(60);

/// A `mecated run --output jsonl` that holds `session` until `go` exists.
struct Holder {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    events: Vec<Value>,
    go: PathBuf,
}

impl Holder {
    /// Starts the holder and returns once its run is inside the waiting tool call
    /// (so it holds the session). `earlier` is the number of model answers the
    /// session already holds (the mock plays the turn after them).
    async fn start(scratch: &Scratch, session: &str, earlier: usize) -> Self {
        let go = scratch.path(&format!("go-{session}"));
        let wait = format!(
            "while [ ! -e '{}' ]; do sleep 0.02; done; echo released",
            go.display()
        );
        let mut turns = vec![serde_json::json!({"text": "earlier"}); earlier];
        turns.extend([
            serde_json::json!({"text": "waiting", "tool_calls": [{"id": "w1", "name": "Shell", "args": {"command": wait}}]}),
            serde_json::json!({"text": "the holder's answer"}),
        ]);
        let script = serde_json::json!({ "turns": turns });
        let script = scratch.write(&format!("holder-{session}.json"), &script.to_string());
        let mut command = mecated_command(scratch.dir.path());
        command
            .args(common(scratch, &script))
            .args([
                "--session",
                session,
                "--approve",
                "all",
                "--output",
                "jsonl",
                "hold it",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut events = Vec::new();
        let started = tokio::time::timeout(LIMIT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let event: Value = serde_json::from_str(&line).unwrap();
                let in_call = event["type"] == "tool.call";
                events.push(event);
                if in_call {
                    return true;
                }
            }
            false
        })
        .await
        .expect("the holder reached its tool call in time");
        assert!(started, "the holder exited early: {events:?}");
        Self {
            child,
            lines,
            events,
            go,
        }
    }

    /// Lets the holder finish; its exit code and every event it printed.
    async fn finish(mut self) -> (i32, Vec<Value>) {
        std::fs::write(&self.go, b"").unwrap();
        let rest = tokio::time::timeout(LIMIT, async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                self.events.push(serde_json::from_str(&line).unwrap());
            }
            self.child.wait().await.unwrap()
        })
        .await
        .expect("the holder finished in time");
        (rest.code().unwrap_or(-1), self.events)
    }

    /// SIGKILL, then lets its orphaned Shell loop end.
    async fn kill(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
        std::fs::write(&self.go, b"").unwrap();
    }
}

fn store_dir(scratch: &Scratch) -> PathBuf {
    scratch.path("store")
}

fn common(scratch: &Scratch, script: &Path) -> Vec<String> {
    [
        "run",
        "--workspace",
        &scratch.ws().display().to_string(),
        "--toolhive=false",
        "--store-dir",
        &store_dir(scratch).display().to_string(),
        "--mock-script",
        &script.display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A quick `mecated run` of `session` answering `answer`.
async fn quick_run(scratch: &Scratch, session: &str, answer: &str) -> crate::support::Output {
    let script = serde_json::json!({"turns": [{"text": answer}]}).to_string();
    let script = scratch.write(&format!("quick-{answer}.json"), &script);
    let mut args = common(scratch, &script);
    args.extend(["--session", session, "--output", "jsonl", "go"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    mecated(scratch.dir.path(), &args, &[]).await
}

/// The one file of `suffix` in the store.
fn store_file(scratch: &Scratch, suffix: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(store_dir(scratch).join("sid-v1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

/// The events of the store's event log, in file order.
fn logged_events(scratch: &Scratch) -> Vec<Value> {
    let text = std::fs::read_to_string(store_file(scratch, ".events.jsonl")).unwrap();
    json_lines(&text)
        .into_iter()
        .map(|line| line["ev"].clone())
        .collect()
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

fn strictly_increasing(seqs: &[u64]) -> bool {
    seqs.windows(2).all(|w| w[0] < w[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_running_the_same_session_is_refused_and_nothing_is_lost() {
    let scratch = Scratch::new();
    let holder = Holder::start(&scratch, "same", 0).await;

    let refused = quick_run(&scratch, "same", "the intruder's answer").await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("error: session \"same\" already has a run in progress"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stdout.is_empty(),
        "a refused run emits no event: {refused:?}"
    );

    let (code, events) = holder.finish().await;
    assert_eq!(code, 0, "{events:?}");
    let logged = logged_events(&scratch);
    assert_eq!(logged, events, "the log holds exactly the holder's events");
    assert!(strictly_increasing(&seqs(&logged)), "{:?}", seqs(&logged));
    let snapshot = std::fs::read_to_string(store_file(&scratch, ".session.json")).unwrap();
    assert!(snapshot.contains("the holder's answer"), "{snapshot}");
    assert!(!snapshot.contains("the intruder's answer"), "{snapshot}");

    // Released with the holder's `result`: the next run goes on from its seq.
    let next = quick_run(&scratch, "same", "the next answer").await;
    assert_eq!(next.code, 0, "{next:?}");
    let all = seqs(&logged_events(&scratch));
    assert!(strictly_increasing(&all), "{all:?}");
    assert_eq!(all.len(), logged.len() + json_lines(&next.stdout).len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_releases_the_session() {
    let scratch = Scratch::new();
    let holder = Holder::start(&scratch, "killed", 0).await;
    let refused = quick_run(&scratch, "killed", "too early").await;
    assert_eq!(refused.code, 1, "{refused:?}");

    holder.kill().await;
    let later = quick_run(&scratch, "killed", "after the kill").await;
    assert_eq!(later.code, 0, "{later:?}");
    let snapshot = std::fs::read_to_string(store_file(&scratch, ".session.json")).unwrap();
    assert!(snapshot.contains("after the kill"), "{snapshot}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_409_for_a_session_running_in_another_process() {
    let scratch = Scratch::new();
    // The session exists in the store before the holder takes it.
    assert_eq!(quick_run(&scratch, "shared", "first").await.code, 0);
    let mut cfg = config(&scratch);
    cfg.store = StoreConfig::Dir {
        path: store_dir(&scratch),
        sync: adapter_jsonlstore::SyncPolicy::default(),
    };
    let server = TestServer::start(cfg).await;
    let holder = Holder::start(&scratch, "shared", 1).await;

    let busy = crate::support::http::answer(server.prompt_response("shared", "hello").await).await;
    assert_eq!(busy.status, StatusCode::CONFLICT, "{busy:?}");
    assert_eq!(busy.error(), "session \"shared\" already has a run in progress");
    let deleted = server.call("DELETE", "/v1/sessions/shared", None).await;
    assert_eq!(deleted.status, StatusCode::CONFLICT, "{deleted:?}");

    let (code, _) = holder.finish().await;
    assert_eq!(code, 0);
    let events = server.prompt("shared", "hello").await.rest().await;
    assert_eq!(events.last().unwrap().1["stop"], "end_turn", "{events:?}");
    let all = seqs(&logged_events(&scratch));
    assert!(strictly_increasing(&all), "{all:?}");
    server.stop().await;
}
