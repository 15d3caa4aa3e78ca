//! Shared test support: the fixture server, fakellm, requests and stream collection.

pub(crate) mod fixture;

use std::process::Command;
use std::time::Duration;

use adapter_llm::{ApiKey, HttpProviderConfig, RetryPolicy, Timeouts};
use engine_ports::testkit::llm_stream;
use engine_ports::{
    CancellationToken, Chunk, LlmError, LlmProvider, LlmRequest, Message, ModelRetry, ToolCall, ToolSpec,
};
use serde_json::{Value, json};
use test_peers::PeerProcess;

/// The key every test provider uses; no error may ever contain it.
pub(crate) const TEST_KEY: &str = "sk-test-0123456789abcdef";

/// Test settings: short time limits and quick retries (waits up to 10 ms, doubling
/// to 40 ms, within 500 ms).
pub(crate) fn config(base_url: String) -> HttpProviderConfig {
    HttpProviderConfig::new(ApiKey::new(TEST_KEY))
        .with_base_url(base_url)
        .with_timeouts(Timeouts {
            first_byte: Duration::from_secs(10),
            idle: Duration::from_secs(10),
        })
        .with_retry(RetryPolicy {
            budget: Duration::from_millis(500),
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
        })
}

/// A request with one user message and `tools`.
pub(crate) fn request(tools: &[&str]) -> LlmRequest {
    LlmRequest {
        model: String::new(),
        system: String::new(),
        messages: vec![Message::User {
            text: "add 2 and 3".to_owned(),
        }]
        .into(),
        tools: tools
            .iter()
            .map(|name| {
                ToolSpec::new(*name, format!("the {name} tool")).with_schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                }))
            })
            .collect(),
        ..LlmRequest::default()
    }
}

/// Streams `request` to the end, checks the stream contract and returns the items.
pub(crate) async fn collect(
    provider: &dyn LlmProvider,
    request: LlmRequest,
) -> Result<Vec<Result<Chunk, LlmError>>, LlmError> {
    let items = llm_stream::collect(provider, request, CancellationToken::new()).await?;
    if let Err(breach) = llm_stream::check_contract(&items) {
        panic!("stream contract broken: {breach}\n{items:?}");
    }
    Ok(items)
}

/// The assistant text of a stream.
pub(crate) fn text(items: &[Result<Chunk, LlmError>]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(Chunk::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The tool calls of a stream.
pub(crate) fn calls(items: &[Result<Chunk, LlmError>]) -> Vec<ToolCall> {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(Chunk::ToolCall(c)) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// The retry notices of a stream.
pub(crate) fn retries(items: &[Result<Chunk, LlmError>]) -> Vec<ModelRetry> {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(Chunk::Retry(notice)) => Some(notice.clone()),
            _ => None,
        })
        .collect()
}

/// The final error of a stream, if it ended with one.
pub(crate) fn final_error(items: &[Result<Chunk, LlmError>]) -> Option<LlmError> {
    match items.last() {
        Some(Err(error)) => Some(error.clone()),
        _ => None,
    }
}

/// Asserts no key material leaks into an error text.
pub(crate) fn assert_no_key(error: &LlmError) {
    let text = error.to_string();
    assert!(!text.contains(TEST_KEY), "the key leaked: {text}");
    assert!(!text.contains("Bearer"), "a header leaked: {text}");
}

/// A fakellm server started for one test with a committed config.
pub(crate) struct FakeLlm {
    peer: PeerProcess,
}

impl FakeLlm {
    /// Starts fakellm with `tests/peers/fakellm/<config>`; `None` only when the peer
    /// is missing and skipping is allowed (never under `CI=true`).
    pub(crate) fn start(test: &str, config: &str) -> Option<Self> {
        let fakellm = test_peers::venv_bin(test, "fakellm")?;
        let config = test_peers::repo_root().join("tests/peers/fakellm").join(config);
        assert!(config.exists(), "missing fakellm config {}", config.display());
        let peer = PeerProcess::start(|port| {
            let mut command = Command::new(&fakellm);
            command
                .arg("serve")
                .arg("--host")
                .arg("127.0.0.1")
                .arg("--port")
                .arg(port.to_string())
                .arg("--config")
                .arg(&config);
            command
        })
        .unwrap_or_else(|error| panic!("fakellm did not start: {error}"));
        Some(Self { peer })
    }

    /// The server root (for Anthropic).
    pub(crate) fn root(&self) -> String {
        self.peer.base_url()
    }

    /// The `/v1` base (for OpenAI chat).
    pub(crate) fn v1(&self) -> String {
        format!("{}/v1", self.peer.base_url())
    }

    /// `GET /_fakellm/stats`.
    pub(crate) async fn stats(&self) -> Value {
        let url = format!("{}/_fakellm/stats", self.peer.base_url());
        let body = reqwest::get(&url).await.unwrap().bytes().await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// The rules that fired, oldest first.
    pub(crate) async fn fired(&self) -> Vec<(String, bool)> {
        let stats = self.stats().await;
        let mut recent: Vec<(String, bool)> = stats["recent"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["matched_rule"].as_str().unwrap().to_owned(),
                    r["stream"].as_bool().unwrap(),
                )
            })
            .collect();
        recent.reverse();
        recent
    }

    /// What fakellm wrote to stderr (for failure messages).
    pub(crate) fn stderr(&self) -> String {
        self.peer.stderr_text()
    }
}
