//! ACP v1 beyond the basics, under the official Rust client and the official
//! TypeScript SDK: config options (mode and model) kept across load and resume,
//! `usage_update`s with the context filled and the cost, `session/resume` without a
//! replay, `$/cancel_request` of a slow prompt and of a slow load, and additional
//! workspace roots.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, ContentBlock, LoadSessionRequest, McpServer, McpServerHttp, NewSessionRequest,
    PromptRequest, ResumeSessionRequest, SetSessionConfigOptionRequest, StopReason, TextContent,
};
use serde_json::{Value, json};

use crate::support::Scratch;
use crate::support::acp_client::{AcpClient, PATIENCE};

/// One answer reporting usage, then a slow one (cancelled by the tests that reach it).
const SCRIPT: &str = r#"{"turns": [
  {"text": "hello", "usage": {"input_tokens": 1200, "output_tokens": 30, "cache_read_tokens": 1000}},
  {"delay_ms": 4000, "text": "too late"}
]}"#;

/// Prices of the mock's model names, in dollars per million tokens.
const PRICES: &str = r#"{"taken": "2026-01-01", "models": {
  "mock": {"input": 2.0, "cached_input": 0.5, "output": 10.0},
  "other": {"input": 4.0, "output": 20.0}
}}"#;

struct Setup {
    scratch: Scratch,
    args: Vec<String>,
}

impl Setup {
    fn new() -> Self {
        let scratch = Scratch::new();
        let script = scratch.write("script.json", SCRIPT);
        let prices = scratch.write("prices.json", PRICES);
        std::fs::create_dir_all(scratch.ws().join("sub")).unwrap();
        let args = [
            "--workspace",
            &scratch.ws().display().to_string(),
            "--store-dir",
            &scratch.path("store").display().to_string(),
            "--mock-script",
            &script.display().to_string(),
            "--models",
            "other",
            "--model-prices",
            &prices.display().to_string(),
            "--toolhive=false",
        ]
        .map(str::to_owned)
        .to_vec();
        Self { scratch, args }
    }

    async fn start(&self) -> AcpClient {
        AcpClient::start(self.scratch.dir.path(), &self.args, &[]).await
    }

    fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.scratch.ws()).unwrap()
    }
}

fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options
        .as_array()
        .unwrap()
        .iter()
        .find(|option| option["id"] == id)
        .unwrap_or_else(|| panic!("no option {id} in {options}"))
}

fn values(option: &Value) -> Vec<&str> {
    option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value["value"].as_str().unwrap())
        .collect()
}

fn of_kind(updates: &[Value], kind: &str) -> Vec<Value> {
    updates
        .iter()
        .filter(|update| update["sessionUpdate"] == kind)
        .cloned()
        .collect()
}

/// Sends `$request` on `$client` and waits (bounded) for its answer.
macro_rules! request {
    ($client:expr, $request:expr $(,)?) => {
        tokio::time::timeout(PATIENCE, $client.cx.send_request($request).block_task())
            .await
            .expect("answered in time")
    };
}

fn text(text: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(text))]
}

#[tokio::test]
async fn config_options_pick_mode_and_model_and_the_session_keeps_them_across_load_and_resume() {
    let setup = Setup::new();
    let mut client = setup.start().await;
    let capabilities = serde_json::to_value(&client.init.agent_capabilities).unwrap();
    assert_eq!(capabilities["sessionCapabilities"]["resume"], json!({}));
    assert_eq!(
        capabilities["sessionCapabilities"]["additionalDirectories"],
        json!({})
    );

    let created = request!(client, NewSessionRequest::new(setup.ws())).unwrap();
    let session = created.session_id.0.to_string();
    let options = serde_json::to_value(&created.config_options).unwrap();
    let model = option(&options, "model");
    assert_eq!(
        (model["category"].as_str(), model["currentValue"].as_str()),
        (Some("model"), Some("mock"))
    );
    assert_eq!(values(model), ["mock", "other"]);
    let mode = option(&options, "mode");
    assert_eq!(mode["currentValue"], "default");
    assert_eq!(values(mode), ["default", "plan", "acceptEdits"]);

    // A model the agent does not offer, and an unknown option, are refused.
    let refused = request!(
        client,
        SetSessionConfigOptionRequest::new(session.clone(), "model", "gpt-9")
    )
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    assert!(refused.message.contains("mock, other"), "{refused:?}");
    let refused = request!(
        client,
        SetSessionConfigOptionRequest::new(session.clone(), "speed", "fast")
    )
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);

    let set = request!(
        client,
        SetSessionConfigOptionRequest::new(session.clone(), "model", "other")
    )
    .unwrap();
    let options = serde_json::to_value(&set.config_options).unwrap();
    assert_eq!(option(&options, "model")["currentValue"], "other");
    let set = request!(
        client,
        SetSessionConfigOptionRequest::new(session.clone(), "mode", "plan")
    )
    .unwrap();
    let options = serde_json::to_value(&set.config_options).unwrap();
    assert_eq!(option(&options, "mode")["currentValue"], "plan");
    let updates = client.updates_of(&session);
    assert_eq!(
        of_kind(&updates, "current_mode_update")[0]["currentModeId"],
        "plan"
    );

    // The prompt runs on the picked model: its usage is priced at that model's price.
    let response = request!(client, PromptRequest::new(session.clone(), text("hi"))).unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let usage = of_kind(&client.updates_of(&session), "usage_update");
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0]["used"], 1230);
    assert_eq!(usage[0]["size"], 128_000);
    // 200 plain and 1,000 cached prompt tokens count at "other"'s input price (it has
    // no cached price), 30 answer tokens at its output price.
    let expected = (1200.0 * 4.0 + 30.0 * 20.0) / 1_000_000.0;
    assert!(
        (usage[0]["cost"]["amount"].as_f64().unwrap() - expected).abs() < 1e-12,
        "{usage:?}"
    );
    assert_eq!(usage[0]["cost"]["currency"], "USD");

    // Reopened — loaded, or resumed without a replay — it keeps both, and tells its usage.
    request!(client, CloseSessionRequest::new(session.clone())).unwrap();
    let loaded = request!(client, LoadSessionRequest::new(session.clone(), setup.ws())).unwrap();
    let options = serde_json::to_value(&loaded.config_options).unwrap();
    assert_eq!(option(&options, "model")["currentValue"], "other");
    assert_eq!(option(&options, "mode")["currentValue"], "plan");
    let updates = client.updates_of(&session);
    assert!(
        !of_kind(&updates, "user_message_chunk").is_empty(),
        "a load replays"
    );
    assert_eq!(of_kind(&updates, "usage_update")[0]["used"], 1230);

    request!(client, CloseSessionRequest::new(session.clone())).unwrap();
    let resumed = request!(client, ResumeSessionRequest::new(session.clone(), setup.ws())).unwrap();
    let options = serde_json::to_value(&resumed.config_options).unwrap();
    assert_eq!(option(&options, "model")["currentValue"], "other");
    assert_eq!(
        serde_json::to_value(&resumed.modes).unwrap()["currentModeId"],
        "plan"
    );
    let updates = client.updates_of(&session);
    assert!(
        of_kind(&updates, "user_message_chunk").is_empty(),
        "a resume replays nothing: {updates:?}"
    );
    assert!(!of_kind(&updates, "usage_update").is_empty());
    // A resumed session is open: a second resume is refused, a prompt continues it.
    let again = request!(client, ResumeSessionRequest::new(session.clone(), setup.ws())).unwrap_err();
    assert_eq!(again.code, ErrorCode::INVALID_REQUEST);
    client.finish().await;
}

#[tokio::test]
async fn cancel_request_stops_a_slow_prompt_and_a_slow_load() {
    let setup = Setup::new();
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    request!(client, PromptRequest::new(session.clone(), text("first"))).unwrap();

    // The second answer takes 4 s: `$/cancel_request` ends the prompt as `cancelled`.
    // The server starts the run while it reads the prompt, before the cancel behind it.
    let slow = client
        .cx
        .send_request(PromptRequest::new(session.clone(), text("take your time")));
    let cancelled_at = Instant::now();
    slow.cancel().unwrap();
    let response = tokio::time::timeout(PATIENCE, slow.block_task())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(3),
        "{:?}",
        cancelled_at.elapsed()
    );
    let _ = client.updates_of(&session);

    // A load whose client server never answers is cancelled before it connects:
    // nothing stays open, and the session loads again at once.
    request!(client, CloseSessionRequest::new(session.clone())).unwrap();
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", silent.local_addr().unwrap());
    let (connected, connecting) = tokio::sync::oneshot::channel();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        let mut connected = Some(connected);
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
            if let Some(connected) = connected.take() {
                let _ = connected.send(());
            }
        }
    });
    let load = client.cx.send_request(
        LoadSessionRequest::new(session.clone(), setup.ws())
            .mcp_servers(vec![McpServer::Http(McpServerHttp::new("silent", url))]),
    );
    // The load is waiting for the silent server's answer.
    tokio::time::timeout(PATIENCE, connecting).await.unwrap().unwrap();
    let cancelled_at = Instant::now();
    load.cancel().unwrap();
    let error = tokio::time::timeout(PATIENCE, load.block_task())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::REQUEST_CANCELLED, "{error:?}");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(3),
        "{:?}",
        cancelled_at.elapsed()
    );
    let reloaded = request!(client, LoadSessionRequest::new(session.clone(), setup.ws()));
    assert!(reloaded.is_ok(), "{reloaded:?}");
    holder.abort();
    client.finish().await;
}

#[tokio::test]
async fn additional_roots_inside_the_workspace_are_accepted_and_others_refused() {
    let setup = Setup::new();
    let client = setup.start().await;
    let inside = NewSessionRequest::new(setup.ws()).additional_directories(vec![setup.ws().join("sub")]);
    assert!(request!(client, inside).is_ok());
    let outside = std::fs::canonicalize(setup.scratch.dir.path()).unwrap();
    let refused = request!(
        client,
        NewSessionRequest::new(setup.ws())
            .additional_directories(vec![setup.ws().join("sub"), outside.clone()]),
    )
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    assert!(
        refused.message.contains("additionalDirectories[1]")
            && refused.message.contains(&outside.display().to_string())
            && refused.message.contains("outside the workspace"),
        "{refused:?}"
    );
    client.finish().await;
}

#[tokio::test]
async fn the_typescript_sdk_client_picks_a_model_reads_usage_cancels_and_resumes() {
    const TEST: &str = "the_typescript_sdk_client_picks_a_model_reads_usage_cancels_and_resumes";
    let Some(node) = test_peers::node(TEST) else {
        return;
    };
    let Some(package) = test_peers::npm_file(TEST, "@agentclientprotocol/sdk/package.json") else {
        return;
    };
    let setup = Setup::new();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/acp_sdk_client.mjs");
    let mut command = tokio::process::Command::new(node);
    command
        .arg(script)
        .arg(package.parent().unwrap())
        .arg(setup.ws())
        .arg(env!("CARGO_BIN_EXE_mecated"))
        .args(&setup.args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("HOME", setup.scratch.dir.path())
        .env("MECATED_LOG", "warn")
        .env("MECATED_TOOLHIVE_URL", "http://127.0.0.1:1")
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the SDK client finished in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the SDK client failed: {stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "not JSON ({error}): {}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    assert_eq!(seen["protocolVersion"], 1, "{seen}");
    assert_eq!(seen["resume"], true, "{seen}");
    assert_eq!(seen["offered"], json!(["mock", "other"]), "{seen}");
    assert_eq!(seen["modelAfterSet"], "other", "{seen}");
    assert_eq!(seen["stopReason"], "end_turn", "{seen}");
    assert_eq!(seen["usage"]["used"], 1230, "{seen}");
    assert_eq!(seen["usage"]["size"], 128_000, "{seen}");
    assert_eq!(seen["usage"]["cost"]["currency"], "USD", "{seen}");
    assert_eq!(seen["cancelledStopReason"], "cancelled", "{seen}");
    assert_eq!(seen["resumedModel"], "other", "{seen}");
    assert_eq!(seen["replayedOnResume"], 0, "{seen}");
    assert_eq!(seen["stopAfterResume"], "end_turn", "{seen}");
}
