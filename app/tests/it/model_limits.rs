//! How the faces report a model's output limit and retries: `mecated run` exits 3 on
//! a `max_tokens` stop, prints each retry wait on stderr and sends whole (not
//! streamed) requests with `--stream=false`; the HTTP API's `result` event says
//! `max_tokens`.

use std::process::Command;

use adapter_llm::{MockEnding, MockScript, MockTurn};
use app::ModelConfig;
use serde_json::{Value, json};
use test_peers::PeerProcess;

use crate::support::http::TestServer;
use crate::support::{Scratch, config, json_lines, mecated};

const CUT_OFF: &str = r#"{"turns": [{"text": "The three reasons are: first", "stop": "max_tokens"}]}"#;

async fn run_script(scratch: &Scratch, script: &str, extra: &[&str]) -> crate::support::Output {
    crate::support::mecated_run(scratch, script, extra).await
}

#[tokio::test]
async fn a_run_cut_off_by_the_output_limit_exits_3_saying_so() {
    let scratch = Scratch::new();
    let output = run_script(&scratch, CUT_OFF, &["why?"]).await;
    assert_eq!(output.code, 3, "{output:?}");
    assert_eq!(output.stdout.trim_end(), "The three reasons are: first");
    assert!(
        output.stderr.contains("[run] stopped: max_tokens") && output.stderr.contains("--max-tokens"),
        "{}",
        output.stderr
    );

    let output = run_script(&scratch, CUT_OFF, &["--output", "jsonl", "why?"]).await;
    assert_eq!(output.code, 3, "{output:?}");
    let events = json_lines(&output.stdout);
    let last = events.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["stop"].as_str()),
        (Some("result"), Some("max_tokens")),
        "{last}"
    );
}

#[tokio::test]
async fn the_output_limit_flags_are_checked() {
    let scratch = Scratch::new();
    for (bad, flag) in [
        ("--max-tokens=0", "--max-tokens"),
        ("--max-tokens=many", "--max-tokens"),
        ("--stream=maybe", "--stream"),
        ("--model-retry-secs=soon", "--model-retry-secs"),
    ] {
        let output = run_script(&scratch, CUT_OFF, &[bad, "hi"]).await;
        assert_eq!(output.code, 2, "{bad}: {output:?}");
        assert!(output.stderr.contains(flag), "{bad}: {}", output.stderr);
    }
}

#[tokio::test]
async fn an_http_run_cut_off_by_the_output_limit_ends_with_max_tokens() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = ModelConfig::MockScript(MockScript::new([MockTurn {
        ending: MockEnding::Truncated,
        ..MockTurn::text("partial answer")
    }]));
    let server = TestServer::start(cfg).await;
    let created = server.post("/v1/sessions", json!({})).await;
    let id = created.body["session_id"].as_str().unwrap().to_owned();
    let events = server.prompt(&id, "hello").await.rest().await;
    let (_, result) = events.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["stop"], "max_tokens");
    assert_eq!(result["text"], "partial answer");
}

fn fakellm(test: &str) -> Option<PeerProcess> {
    let fakellm = test_peers::venv_bin(test, "fakellm")?;
    let config = test_peers::repo_root().join("tests/peers/fakellm/errors.yaml");
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
async fn retries_show_on_stderr_and_stream_false_sends_whole_requests() {
    let test = "retries_show_on_stderr_and_stream_false_sends_whole_requests";
    let Some(llm) = fakellm(test) else {
        return;
    };
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let base = format!("{}/v1", llm.base_url());
    let output = mecated(
        scratch.dir.path(),
        &[
            "run",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--provider",
            "openai-chat",
            "--base-url",
            &base,
            "--model",
            "err500-cli",
            "--stream=false",
            "--model-retry-secs",
            "1",
            "hi",
        ],
        &[("OPENAI_API_KEY", "sk-any")],
    )
    .await;
    assert_eq!(output.code, 1, "{output:?}");
    let waits: Vec<&str> = output
        .stderr
        .lines()
        .filter(|line| line.starts_with("[model] attempt "))
        .collect();
    assert!(!waits.is_empty(), "{}", output.stderr);
    assert!(
        waits[0].contains("failed (HTTP 500); retrying in") && waits[0].contains("overloaded"),
        "{}",
        waits[0]
    );
    assert!(output.stderr.contains("retry budget of 1 s"), "{}", output.stderr);
    let stats: Value = reqwest::get(format!("{}/_fakellm/stats", llm.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let recent = stats["recent"].as_array().unwrap();
    assert_eq!(recent.len(), waits.len() + 1, "{stats}");
    assert!(recent.iter().all(|r| r["stream"] == false), "{stats}");
}
