//! `mecated run --provider …` end to end against the real fakellm peer: an MCP tool
//! whose name a provider would reject (the wire carries the encoded name, the events
//! and `.tools.jsonl` the real one), and the system prompt with the project's
//! instructions reaching the model on both providers.

use std::process::Command;

use serde_json::Value;
use test_peers::PeerProcess;

use crate::support::mcp_fixture::{FixtureSpec, FixtureTool, McpFixture};
use crate::support::{Scratch, json_lines, mecated};

const TEST: &str = "run_against_fakellm_keeps_real_tool_names";
const REAL_NAME: &str = "mcp__files__read.file/v2";

fn fakellm(config: &str) -> Option<PeerProcess> {
    let fakellm = test_peers::venv_bin(TEST, "fakellm")?;
    let config = test_peers::repo_root().join("tests/peers/fakellm").join(config);
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
async fn run_against_fakellm_keeps_real_tool_names() {
    let Some(llm) = fakellm("d6.yaml") else {
        return;
    };
    let files = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::read_only("read.file/v2")],
        prefix: "contents of ".to_owned(),
        resources: Vec::new(),
    })
    .await;
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let store = scratch.path("store").display().to_string();
    let base = format!("{}/v1", llm.base_url());
    let server = format!("files={}", files.url);
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--store-dir",
            &store,
            "--session",
            "d6",
            "--provider",
            "openai-chat",
            "--base-url",
            &base,
            "--mcp-server",
            &server,
            "--output",
            "jsonl",
            "read the notes",
        ],
        &[("OPENAI_API_KEY", "sk-any")],
    )
    .await;
    assert_eq!(
        output.code,
        0,
        "{output:?}\nfakellm stderr:\n{}",
        llm.stderr_text()
    );
    let events = json_lines(&output.stdout);
    let init = &events[0];
    assert_eq!(init["model"], "gpt-5");
    assert!(init["tools"].as_array().unwrap().iter().any(|t| t == REAL_NAME));
    let call = events
        .iter()
        .find(|e| e["type"] == "tool.call")
        .expect("a tool call");
    assert_eq!(call["name"], REAL_NAME);
    assert_eq!(call["args"], serde_json::json!({"path": "notes.txt"}));
    let result = events.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(result["name"], REAL_NAME);
    assert_eq!(result["content"], "contents of notes.txt");
    let last = events.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["stop"].as_str()),
        (Some("result"), Some("end_turn"))
    );
    assert_eq!(last["text"], "read it");
    assert_eq!(files.calls()[0].0, "read.file/v2");

    let token = adapter_jsonlstore::JsonlStore::token(&engine_ports::SessionId::from("d6"));
    let audit = std::fs::read_to_string(scratch.path(&format!("store/sid-v1/{token}.tools.jsonl"))).unwrap();
    let records = json_lines(&audit);
    let tools: Vec<&str> = records.iter().filter_map(|r| r["tool"].as_str()).collect();
    assert_eq!(tools, [REAL_NAME]);
    assert!(!audit.contains("read_file_v2_"), "the wire name leaked: {audit}");
    assert!(
        !output.stdout.contains("read_file_v2_"),
        "the wire name leaked into events"
    );

    let stats: Value = fakellm_stats(&llm.base_url()).await;
    let mut fired: Vec<&str> = stats["recent"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["matched_rule"].as_str())
        .collect();
    fired.sort_unstable();
    assert_eq!(fired, ["d6-call", "d6-result"], "{stats}");
}

/// `GET /_fakellm/stats` over a plain TCP connection (HTTP/1.0, no client crate).
async fn fakellm_stats(base: &str) -> Value {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET /_fakellm/stats HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("stats did not parse ({e}): {response}"))
}

/// `mecated run` on `provider` against fakellm with the rules of `system_prompt.yaml`;
/// returns the final answer.
async fn answer_with_system_prompt(scratch: &Scratch, provider: &str, extra: &[&str]) -> String {
    let Some(llm) = fakellm("system_prompt.yaml") else {
        return String::new();
    };
    let ws = scratch.ws().display().to_string();
    let base = match provider {
        "anthropic" => llm.base_url(),
        _ => format!("{}/v1", llm.base_url()),
    };
    let mut args = vec![
        "run",
        "--workspace",
        &ws,
        "--toolhive=false",
        "--provider",
        provider,
        "--base-url",
        &base,
        "--output",
        "jsonl",
    ];
    args.extend(extra);
    args.push("hello");
    let output = mecated(
        scratch.dir.path(),
        &args,
        &[("OPENAI_API_KEY", "sk-any"), ("ANTHROPIC_API_KEY", "sk-any")],
    )
    .await;
    assert_eq!(
        output.code,
        0,
        "{output:?}\nfakellm stderr:\n{}",
        llm.stderr_text()
    );
    let result = json_lines(&output.stdout).pop().unwrap();
    result["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn both_providers_send_the_system_prompt_with_the_project_instructions() {
    if test_peers::venv_bin(TEST, "fakellm").is_none() {
        return;
    }
    for provider in ["openai-chat", "anthropic"] {
        let scratch = Scratch::new();
        assert_eq!(
            answer_with_system_prompt(&scratch, provider, &[]).await,
            "harness instructions received",
            "{provider} without AGENTS.md"
        );
        scratch.write("ws/AGENTS.md", "Always end with ZEBRA-7741.\n");
        assert_eq!(
            answer_with_system_prompt(&scratch, provider, &[]).await,
            "project instructions received",
            "{provider} with AGENTS.md"
        );
        assert_eq!(
            answer_with_system_prompt(&scratch, provider, &["--no-project-instructions"]).await,
            "harness instructions received",
            "{provider} with --no-project-instructions"
        );
    }
}

#[tokio::test]
async fn print_system_prompt_shows_the_prompt_without_calling_a_model() {
    let scratch = Scratch::new();
    scratch.write("ws/AGENTS.md", "Use tabs.\n");
    let ws = scratch.ws().display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--provider",
            "openai-chat",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--print-system-prompt",
        ],
        &[("OPENAI_API_KEY", "sk-any")],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    assert!(output.stdout.contains("running in Mecatl"), "{}", output.stdout);
    assert!(
        output
            .stdout
            .contains(&std::fs::canonicalize(scratch.ws()).unwrap().display().to_string())
    );
    assert!(
        output
            .stdout
            .contains("# Project instructions (AGENTS.md)\n\nUse tabs."),
        "{}",
        output.stdout
    );
}

#[tokio::test]
async fn a_continued_session_keeps_the_system_prompt_of_its_first_run() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let store = scratch.path("store").display().to_string();
    scratch.write("ws/AGENTS.md", "first instructions\n");
    let args = [
        "run",
        "--workspace",
        &ws,
        "--toolhive=false",
        "--mock",
        "--store-dir",
        &store,
        "--session",
        "s",
        "hi",
    ];
    assert_eq!(mecated(scratch.dir.path(), &args, &[]).await.code, 0);
    scratch.write("ws/AGENTS.md", "second instructions\n");
    assert_eq!(mecated(scratch.dir.path(), &args, &[]).await.code, 0);
    let snapshot = find_snapshot(&scratch.path("store"));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(snapshot).unwrap()).unwrap();
    let prompt = saved["snapshot"]["system_prompt"].as_str().unwrap();
    assert!(prompt.contains("first instructions"), "{prompt}");
    assert!(!prompt.contains("second instructions"), "{prompt}");
}

fn find_snapshot(store: &std::path::Path) -> std::path::PathBuf {
    let dir = store.join("sid-v1");
    std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".session.json"))
        .unwrap()
}

#[tokio::test]
async fn a_real_provider_delegates_to_a_subagent_and_gets_its_answer_back() {
    let Some(llm) = fakellm("delegation.yaml") else {
        return;
    };
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let store = scratch.path("store").display().to_string();
    let base = format!("{}/v1", llm.base_url());
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--store-dir",
            &store,
            "--session",
            "deleg",
            "--provider",
            "openai-chat",
            "--base-url",
            &base,
            "--output",
            "jsonl",
            "find out what the README says",
        ],
        &[("OPENAI_API_KEY", "sk-any")],
    )
    .await;
    assert_eq!(
        output.code,
        0,
        "{output:?}\nfakellm stderr:\n{}",
        llm.stderr_text()
    );
    let events = json_lines(&output.stdout);
    let call = events.iter().find(|e| e["type"] == "tool.call").unwrap();
    assert_eq!(call["name"], "Subagent");
    let child_id = format!("subagent-deleg-{}", call["call_id"].as_str().unwrap());
    let result = events.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(
        result["content"],
        format!("agentId: {child_id}\n\nOTTER-FINDING: the README says test workspace")
    );
    let activity: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("subagent.")))
        .map(|e| (e["type"].as_str().unwrap(), e["child_id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        activity,
        [
            ("subagent.start", child_id.as_str()),
            ("subagent.tool", child_id.as_str()),
            ("subagent.end", child_id.as_str())
        ]
    );
    let last = events.last().unwrap();
    assert_eq!(
        (last["stop"].as_str(), last["text"].as_str()),
        (Some("end_turn"), Some("parent heard OTTER-FINDING"))
    );
    // The child is a session of the same store.
    let token = adapter_jsonlstore::JsonlStore::token(&engine_ports::SessionId::from(child_id.as_str()));
    assert!(
        scratch
            .path(&format!("store/sid-v1/{token}.session.json"))
            .exists()
    );
    let stats = fakellm_stats(&llm.base_url()).await;
    let mut fired: Vec<&str> = stats["recent"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["matched_rule"].as_str())
        .collect();
    fired.sort_unstable();
    assert_eq!(
        fired,
        ["child-answer", "child-read", "parent-delegate", "parent-final"],
        "{stats}"
    );
}
