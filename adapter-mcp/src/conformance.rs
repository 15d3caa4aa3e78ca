//! The client side of the official MCP conformance suite: the scenarios our client
//! acts out (`mecated mcp conformance-client URL`, `examples/conformance_client.rs`).

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::manager::{ConnectOptions, McpManager};
use crate::tool::MountOptions;

/// The scenarios [`run_conformance_scenario`] supports.
pub(crate) const CONFORMANCE_SCENARIOS: [&str; 3] = ["initialize", "tools_call", "sse-retry"];

/// Why a conformance scenario did not complete.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConformanceError {
    /// The scenario is not `initialize`, `tools_call` or `sse-retry` (exit status 2).
    #[error("scenario {0:?} is not supported (supported: initialize, tools_call, sse-retry)")]
    Unsupported(String),
    /// The scenario ran and failed (exit status 1).
    #[error("{0}")]
    Failed(String),
}

/// Acts out `scenario` against the conformance server at `url` (used exactly as
/// given) with the product's own client: `initialize` connects and closes;
/// `tools_call` calls `add_numbers` `{"a":2,"b":3}`; `sse-retry` calls the first
/// listed tool (the transport resumes the closed SSE stream with `Last-Event-ID`
/// after the announced `retry`).
///
/// # Errors
/// [`ConformanceError`]: an unsupported scenario, or what failed.
pub async fn run_conformance_scenario(scenario: &str, url: &str) -> Result<(), ConformanceError> {
    if !CONFORMANCE_SCENARIOS.contains(&scenario) {
        return Err(ConformanceError::Unsupported(scenario.to_owned()));
    }
    let connected = McpManager::connect(
        vec![ServerConfig::http("conformance", url, None)],
        ConnectOptions::default(),
    )
    .await;
    if let Some(failure) = connected.failures.first() {
        return Err(ConformanceError::Failed(failure.to_string()));
    }
    let manager = connected.manager;
    let outcome = act(scenario, &manager).await;
    let closed = manager
        .close()
        .await
        .map_err(|e| ConformanceError::Failed(e.to_string()));
    outcome.and(closed)
}

async fn act(scenario: &str, manager: &McpManager) -> Result<(), ConformanceError> {
    let tools = manager.tools(MountOptions::default()).await;
    let (tool, arguments) = match scenario {
        "tools_call" => ("add_numbers".to_owned(), json!({"a": 2, "b": 3})),
        "sse-retry" => match tools.first() {
            Some(tool) => (tool.remote_name().to_owned(), json!({})),
            None => return Err(ConformanceError::Failed("the server lists no tool".to_owned())),
        },
        _ => return Ok(()),
    };
    let result = manager
        .call_tool(
            "conformance",
            &tool,
            arguments.as_object().cloned(),
            &CancellationToken::new(),
        )
        .await
        .map_err(|e| ConformanceError::Failed(e.to_string()))?;
    if result.is_error == Some(true) {
        return Err(ConformanceError::Failed(format!(
            "{tool} returned an error result"
        )));
    }
    Ok(())
}
