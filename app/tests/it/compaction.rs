//! Context management through `mecated run`: `--context-window` makes a scripted
//! session compact (the summary comes from the script's child for side requests),
//! the compaction is saved in the store, and `--session` resumes the compacted
//! conversation in a later process; against the real fakellm peer, the Anthropic
//! adapter carries a compaction end to end.

use std::process::Command;

use serde_json::Value;
use test_peers::PeerProcess;

use crate::support::{Output, Scratch, json_lines, mecated};

/// Reads three files of growing conversations, then answers; side requests (the
/// compaction summary) get the child's turn.
const SCRIPT: &str = r#"{
  "turns": [
    {"tool_calls": [{"id": "r1", "name": "Read", "args": {"path": "a.txt"}}]},
    {"text": "first done"},
    {"tool_calls": [{"id": "r2", "name": "Read", "args": {"path": "b.txt"}}]},
    {"text": "second done"},
    {"tool_calls": [{"id": "r3", "name": "Read", "args": {"path": "c.txt"}}]},
    {"text": "third done"},
    {"text": "fourth done"}
  ],
  "children": [
    {"match": "Summarize the conversation below", "turns": [{"text": "SUMMARY-ZEBRA: a.txt holds a line of a's"}]}
  ],
  "default_child": {"turns": [{"text": "unexpected side request"}]}
}"#;

async fn run(scratch: &Scratch, extra: &[&str]) -> Output {
    let script = scratch.path("script.json").display().to_string();
    let ws = scratch.ws().display().to_string();
    let store = scratch.path("store").display().to_string();
    // The 4,000-token window is sized for the core tools' specs: the memory families'
    // eight tools would fill it before the third prompt.
    let mut args = vec![
        "run",
        "--workspace",
        ws.as_str(),
        "--toolhive=false",
        "--no-memory",
        "--no-user-model",
        // The windows below are calibrated on the core tools' specs alone.
        "--enable-subagents=false",
        "--enable-parallel=false",
        "--enable-teams=false",
        "--store-dir",
        store.as_str(),
        "--session",
        "long",
        "--context-window",
        "4000",
        "--mock-script",
        script.as_str(),
    ];
    args.extend(extra);
    mecated(scratch.dir.path(), &args, &[]).await
}

/// The stored snapshot of session `long`.
fn snapshot(scratch: &Scratch) -> Value {
    let token = adapter_jsonlstore::JsonlStore::token(&engine_ports::SessionId::from("long"));
    let text = std::fs::read_to_string(scratch.path(&format!("store/sid-v1/{token}.session.json"))).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["snapshot"].clone()
}

#[tokio::test]
async fn a_tiny_context_window_compacts_and_the_session_resumes_compacted() {
    let scratch = Scratch::new();
    scratch.write("script.json", SCRIPT);
    scratch.write("ws/a.txt", &"a".repeat(4_000));
    scratch.write("ws/b.txt", &"b".repeat(300));
    scratch.write("ws/c.txt", &"c".repeat(2_000));

    for (prompt, answer) in [("one", "first done\n"), ("two", "second done\n")] {
        let output = run(&scratch, &[prompt]).await;
        assert_eq!(output.code, 0, "{output:?}");
        assert_eq!(output.stdout, answer);
        assert!(!output.stderr.contains("[context]"), "{}", output.stderr);
    }

    let third = run(&scratch, &["--output", "jsonl", "three"]).await;
    assert_eq!(third.code, 0, "{third:?}");
    let events = json_lines(&third.stdout);
    let compacted: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(compacted.len(), 1, "{}", third.stdout);
    let event = compacted[0];
    assert_eq!(event["trigger"], "threshold");
    assert_eq!(event["context_window"], 4000);
    assert_eq!(
        (
            event["messages_replaced"].as_u64(),
            event["messages_kept"].as_u64()
        ),
        (Some(4), Some(7))
    );
    let before = event["tokens_before"].as_u64().unwrap();
    let after = event["tokens_after"].as_u64().unwrap();
    assert!(before > 3_200 && after < 3_200 && after < before, "{event}");
    let last = events.last().unwrap();
    assert_eq!(
        (last["stop"].as_str(), last["text"].as_str()),
        (Some("end_turn"), Some("third done"))
    );

    // The compaction is saved: the conversation starts with the summary and keeps
    // the last two user turns verbatim.
    let stored = snapshot(&scratch);
    let conversation = stored["conversation"].as_array().unwrap();
    assert_eq!(conversation[0]["role"], "summary");
    assert_eq!(conversation[0]["replaced_turns"], 2);
    let summary = conversation[0]["text"].as_str().unwrap();
    assert!(
        summary.contains("<summary>\nSUMMARY-ZEBRA: a.txt holds a line of a's\n</summary>"),
        "{summary}"
    );
    let users: Vec<&str> = conversation
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["two", "three"]);
    assert!(
        !stored.to_string().contains(&"a".repeat(100)),
        "a.txt's text was replaced"
    );

    // A later process continues the compacted conversation: the mock answers from
    // the turn count the summary carries, so "fourth done" proves it was sent.
    let fourth = run(&scratch, &["four"]).await;
    assert_eq!(fourth.code, 0, "{fourth:?}");
    assert_eq!(fourth.stdout, "fourth done\n");
    assert!(!fourth.stderr.contains("[context]"), "{}", fourth.stderr);
    let conversation = snapshot(&scratch)["conversation"].as_array().unwrap().clone();
    assert_eq!(conversation[0]["role"], "summary");
    assert_eq!(conversation.last().unwrap()["text"], "fourth done");
}

#[tokio::test]
async fn the_text_output_notes_a_compaction_on_stderr() {
    let scratch = Scratch::new();
    scratch.write("script.json", SCRIPT);
    scratch.write("ws/a.txt", &"a".repeat(4_000));
    scratch.write("ws/b.txt", &"b".repeat(300));
    scratch.write("ws/c.txt", &"c".repeat(2_000));
    for prompt in ["one", "two"] {
        assert_eq!(run(&scratch, &[prompt]).await.code, 0);
    }
    let third = run(&scratch, &["three"]).await;
    assert_eq!(third.code, 0, "{third:?}");
    assert_eq!(third.stdout, "third done\n");
    let note = third
        .stderr
        .lines()
        .find(|line| line.starts_with("[context] "))
        .unwrap_or_else(|| panic!("no note: {}", third.stderr));
    assert!(
        note.starts_with("[context] compacted: 4 messages summarized, about ")
            && note.ends_with(" tokens of a 4000-token window"),
        "{note}"
    );
}

// fakellm 0.3.5 reports one input token for every streamed Anthropic answer, so the
// engine's own byte estimate (never below the whole request's bytes) is what makes
// it compact here.
fn fakellm(test: &str) -> Option<PeerProcess> {
    let fakellm = test_peers::venv_bin(test, "fakellm")?;
    let config = test_peers::repo_root().join("tests/peers/fakellm/compaction.yaml");
    let peer = PeerProcess::start(|port| {
        let mut command = Command::new(&fakellm);
        command
            .args([
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--config",
            ])
            .arg(&config);
        command
    })
    .unwrap_or_else(|error| panic!("fakellm did not start: {error}"));
    Some(peer)
}

#[tokio::test]
async fn the_anthropic_adapter_compacts_against_fakellm() {
    const TEST: &str = "the_anthropic_adapter_compacts_against_fakellm";
    let Some(llm) = fakellm(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    scratch.write("ws/big.txt", &"x".repeat(8_000));
    let ws = scratch.ws().display().to_string();
    let base = llm.base_url();
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--provider",
            "anthropic",
            "--base-url",
            &base,
            "--context-window",
            "4000",
            "--output",
            "jsonl",
            "read big.txt",
        ],
        &[("ANTHROPIC_API_KEY", "sk-any")],
    )
    .await;
    assert_eq!(
        output.code,
        0,
        "{output:?}\nfakellm stderr:\n{}",
        llm.stderr_text()
    );
    let events = json_lines(&output.stdout);
    let compacted: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(compacted.len(), 1, "{}", output.stdout);
    // Nothing of the read fits the kept share of a 4,000-token window: the summary
    // replaces all three messages.
    assert_eq!(
        (
            compacted[0]["messages_replaced"].as_u64(),
            compacted[0]["messages_kept"].as_u64()
        ),
        (Some(3), Some(0))
    );
    let last = events.last().unwrap();
    assert_eq!(last["stop"], "end_turn");
    assert_eq!(last["text"], "continuing from SUMMARY-OKAPI");

    let stats = reqwest::get(format!("{base}/_fakellm/stats"))
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let mut fired: Vec<&str> = stats["recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["matched_rule"].as_str().unwrap())
        .collect();
    fired.reverse();
    assert_eq!(fired, ["read-call", "summarize", "after-summary"]);
}
