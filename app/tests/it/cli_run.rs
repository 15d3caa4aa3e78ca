//! `mecated run`: approvals, limits, the JSONL event stream, continuing a stored
//! session, and what a run does when an audit record cannot be written.

use serde_json::Value;

use crate::support::{Output, Scratch, json_lines, mecated_command};

const WRITE_THEN_TEXT: &str = r#"{"turns": [
  {"text": "writing", "tool_calls": [{"id": "w1", "name": "Write", "args": {"path": "out.txt", "content": "hello"}}]},
  {"text": "all done"}
]}"#;

async fn run(scratch: &Scratch, script: &str, extra: &[&str]) -> Output {
    crate::support::mecated_run(scratch, script, extra).await
}

fn results(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "tool.result").collect()
}

#[tokio::test]
async fn approve_all_runs_the_write_and_exits_0() {
    let scratch = Scratch::new();
    let output = run(&scratch, WRITE_THEN_TEXT, &["--approve", "all", "write it"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        std::fs::read_to_string(scratch.ws().join("out.txt")).unwrap(),
        "hello"
    );
    assert_eq!(output.stdout, "writing\nall done\n");
    assert!(
        output.stderr.contains("[tool] Write path=out.txt content=hello"),
        "{}",
        output.stderr
    );
    assert!(output.stderr.contains("[tool] Write → ok"), "{}", output.stderr);
}

#[tokio::test]
async fn the_default_approval_denies_the_write_and_the_model_sees_it() {
    let scratch = Scratch::new();
    let output = run(&scratch, WRITE_THEN_TEXT, &["--output", "jsonl", "write it"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    assert!(!scratch.ws().join("out.txt").exists());
    let events = json_lines(&output.stdout);
    let denied = results(&events);
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["name"], "Write");
    assert_eq!(denied[0]["is_error"], true);
    assert!(
        denied[0]["content"].as_str().unwrap().contains("read-only"),
        "{}",
        denied[0]
    );
}

#[tokio::test]
async fn a_turn_limit_stop_exits_1() {
    let scratch = Scratch::new();
    let output = run(
        &scratch,
        WRITE_THEN_TEXT,
        &["--max-turns", "1", "--approve", "all", "write it"],
    )
    .await;
    assert_eq!(output.code, 1, "{output:?}");
    assert!(
        output.stderr.contains("[run] stopped: max_turns"),
        "{}",
        output.stderr
    );
}

#[tokio::test]
async fn jsonl_prints_one_event_per_line_in_seq_order() {
    let scratch = Scratch::new();
    let output = run(
        &scratch,
        WRITE_THEN_TEXT,
        &["--output", "jsonl", "--approve", "all", "go"],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let events = json_lines(&output.stdout);
    assert_eq!(events.first().unwrap()["type"], "session.init");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["stop"], "end_turn");
    assert_eq!(last["text"], "all done");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let call = events.iter().find(|e| e["type"] == "tool.call").unwrap();
    assert_eq!(call["call_id"], "w1");
    assert_eq!(call["name"], "Write");
    assert_eq!(call["args"]["path"], "out.txt");
    assert!(events.iter().any(|e| e["type"] == "message.delta"));
    assert!(output.stderr.is_empty(), "{}", output.stderr);
}

#[tokio::test]
async fn a_stored_session_continues_where_it_stopped() {
    let scratch = Scratch::new();
    let store = scratch.path("store").display().to_string();
    let script = r#"{"turns": [{"text": "first answer"}, {"text": "second answer"}]}"#;
    let args = [
        "--store-dir",
        store.as_str(),
        "--session",
        "s1",
        "--output",
        "jsonl",
    ];
    let first = run(&scratch, script, &[&args[..], &["hello"]].concat()).await;
    let second = run(&scratch, script, &[&args[..], &["again"]].concat()).await;
    assert_eq!((first.code, second.code), (0, 0), "{first:?} {second:?}");
    let first = json_lines(&first.stdout);
    let second = json_lines(&second.stdout);
    assert_eq!(first.last().unwrap()["text"], "first answer");
    assert_eq!(second.last().unwrap()["text"], "second answer");
    let last_seq = first.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(second[0]["seq"].as_u64().unwrap(), last_seq + 1);
    assert_eq!(second[0]["session_id"], "s1");

    // The event log holds both runs in one increasing sequence.
    let token = adapter_jsonlstore::JsonlStore::token(&engine_ports::SessionId::from("s1"));
    let log = std::fs::read_to_string(scratch.path(&format!("store/sid-v1/{token}.events.jsonl"))).unwrap();
    let logged: Vec<u64> = json_lines(&log)
        .iter()
        .map(|line| line["ev"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(logged, (1..=logged.len() as u64).collect::<Vec<_>>());
    assert_eq!(logged.len(), first.len() + second.len());
}

#[tokio::test]
async fn a_mode_flag_applies_plan_mode() {
    let scratch = Scratch::new();
    let output = run(
        &scratch,
        WRITE_THEN_TEXT,
        &["--mode", "plan", "--approve", "all", "--output", "jsonl", "try"],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let events = json_lines(&output.stdout);
    assert_eq!(events[0]["mode"], "plan");
    let result = results(&events)[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"].as_str().unwrap().contains("plan mode"),
        "{result}"
    );
    assert!(!scratch.ws().join("out.txt").exists());
}

/// Runs the session named `audit` with `--audit <audit>` twice; between the runs its
/// tool-call record file is replaced by a directory, so the second run's record
/// cannot be written. Returns the second run.
async fn run_with_unwritable_records(scratch: &Scratch, audit: &str) -> std::process::Output {
    let script = scratch.write(
        "script.json",
        r#"{"turns": [
  {"text": "reading", "tool_calls": [{"id": "r1", "name": "Read", "args": {"path": "README.md"}}]},
  {"text": "done"},
  {"text": "reading again", "tool_calls": [{"id": "r2", "name": "Read", "args": {"path": "README.md"}}]},
  {"text": "done again"}
]}"#,
    );
    let store = scratch.path("store");
    let run = || {
        let mut command = mecated_command(scratch.dir.path());
        command
            .args(["run", "--toolhive=false", "--output", "jsonl", "--workspace"])
            .arg(scratch.ws())
            .arg("--store-dir")
            .arg(&store)
            .args(["--session", audit, "--audit", audit, "--mock-script"])
            .arg(&script)
            .arg("read");
        command
    };
    let first = run().output().await.unwrap();
    assert!(first.status.success(), "{first:?}");
    let records = find_tools_jsonl(&store);
    assert_eq!(records.len(), 1, "{records:?}");
    std::fs::remove_file(&records[0]).unwrap();
    std::fs::create_dir(&records[0]).unwrap();
    run().output().await.unwrap()
}

#[tokio::test]
async fn a_run_with_required_audit_fails_when_a_tool_call_record_cannot_be_written() {
    let scratch = Scratch::new();
    let required = run_with_unwritable_records(&scratch, "required").await;
    let stdout = String::from_utf8_lossy(&required.stdout);
    assert_eq!(required.status.code(), Some(1), "{stdout}");
    let last = json_lines(&stdout).pop().unwrap();
    assert_eq!(last["type"], "result");
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .contains("audit record could not be written"),
        "{last}"
    );
}

#[tokio::test]
async fn a_best_effort_run_goes_on_when_a_tool_call_record_cannot_be_written() {
    let scratch = Scratch::new();
    let best = run_with_unwritable_records(&scratch, "best-effort").await;
    let stdout = String::from_utf8_lossy(&best.stdout);
    assert_eq!(best.status.code(), Some(0), "{stdout}");
    let last = json_lines(&stdout).pop().unwrap();
    assert_eq!(last["stop"], "end_turn", "{last}");
    assert_eq!(last["text"], "done again");
}

/// Every `*.tools.jsonl` under `dir`.
pub(crate) fn find_tools_jsonl(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(".tools.jsonl") {
                found.push(path);
            }
        }
    }
    found
}

const ASK_NAME_THEN_TEXT: &str = r#"{"turns": [
  {"tool_calls": [{"id": "q1", "name": "mcp__py__ask_name", "args": {}}]},
  {"text": "done"}
]}"#;

#[tokio::test]
async fn a_headless_run_declines_a_servers_question_with_a_clear_text_and_records_the_policys_allow() {
    const TEST: &str =
        "a_headless_run_declines_a_servers_question_with_a_clear_text_and_records_the_policys_allow";
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    let server = format!("py={}/mcp", peer.base_url());
    let store = scratch.path("store").display().to_string();
    let output = run(
        &scratch,
        ASK_NAME_THEN_TEXT,
        &[
            "--mcp-server",
            &server,
            "--approve",
            "all",
            "--store-dir",
            &store,
            "--output",
            "jsonl",
            "who am I?",
        ],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let events = json_lines(&output.stdout);
    let request = events
        .iter()
        .find(|e| e["type"] == "elicitation.request")
        .expect("the question is in the event stream");
    assert_eq!(request["call_id"], "q1");
    assert_eq!(request["name"], "mcp__py__ask_name");
    assert_eq!(request["message"], "What is your name?");
    let ended = events.iter().find(|e| e["type"] == "elicitation.result").unwrap();
    assert_eq!(ended["action"], "decline");
    assert!(
        ended["reason"]
            .as_str()
            .unwrap()
            .starts_with("this run is headless (mecated run)")
    );
    let result = results(&events)[0];
    let text = result["content"].as_str().unwrap();
    assert!(text.contains("declined"), "the server saw the decline: {text}");
    assert!(
        text.contains("[the server's question was declined: this run is headless (mecated run): nobody can answer the server's question"),
        "{text}"
    );
    let records: Vec<Value> = std::fs::read_dir(scratch.path("store").join("sid-v1"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tools.jsonl"))
        .flat_map(|e| json_lines(&std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        records[0]["approval"],
        serde_json::json!({"by": "policy", "verdict": "allow"})
    );
}

const SLOW_BRANCH: &str = r#"{"turns": [
  {"tool_calls": [{"id": "c1", "name": "Parallel", "args": {"tasks": ["SLOW branch"]}}]},
  {"text": "done"}
], "children": [{"match": "SLOW", "turns": [
  {"tool_calls": [{"id": "g1", "name": "Glob", "args": {"pattern": "*"}}]},
  {"delay_ms": 30000, "text": "late"}
]}]}"#;

/// The copy directories under `base` (not the lock files beside them).
fn copies_in(base: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(base)
        .map(|dir| {
            dir.flatten()
                .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn sigterm_cancels_the_run_and_removes_its_workspace_copies() {
    use std::os::unix::fs::MetadataExt as _;
    use tokio::io::AsyncBufReadExt as _;

    let scratch = Scratch::new();
    let script = scratch.write("script.json", SLOW_BRANCH).display().to_string();
    let ws = scratch.ws().display().to_string();
    let tmp = scratch.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let uid = std::fs::metadata("/proc/self").unwrap().uid();
    let base = tmp.join(format!("mecatl-forks-{uid}"));
    let mut command = mecated_command(scratch.dir.path());
    command
        .args([
            "run",
            "--workspace",
            ws.as_str(),
            "--toolhive=false",
            "--mock-script",
        ])
        .args([script.as_str(), "--approve", "all", "--output", "jsonl", "go"])
        .env("TMPDIR", &tmp)
        .env_remove("XDG_RUNTIME_DIR")
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // The branch called a tool: its copy exists.
    let mut seen = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        let event: Value = serde_json::from_str(&line).unwrap();
        seen.push(line);
        if event["type"] == "parallel.branch" && event["phase"] == "tool" {
            break;
        }
    }
    assert!(!seen.iter().any(|line| line.contains("\"result\"")), "{seen:#?}");
    assert_eq!(copies_in(&base).len(), 1, "{seen:#?}");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        status.code().is_some(),
        "it exits rather than dying of the signal: {status:?}"
    );
    assert!(copies_in(&base).is_empty(), "{:?}", copies_in(&base));
    assert_eq!(
        std::fs::read_dir(&base).unwrap().count(),
        0,
        "no lock file is left either"
    );
}
