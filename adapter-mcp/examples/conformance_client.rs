//! The MCP conformance-suite client (`@modelcontextprotocol/conformance client
//! --command …`): connects with the product's own MCP client and acts out the
//! scenario named by `MCP_CONFORMANCE_SCENARIO` against the server URL given as the
//! last argument. `app` exposes the same flow as `mecated mcp conformance-client URL`.
//!
//! Scenarios: `initialize` (handshake, `initialized`, close), `tools_call` (list
//! tools, call `add_numbers` `{"a":2,"b":3}`), `sse-retry` (list and call tools; the
//! transport resumes the closed SSE stream with `Last-Event-ID` after the announced
//! `retry`). Any other scenario exits with status 2, saying so.

// A command-line program: it reports on stdout/stderr and exits with a status.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use adapter_mcp::{ConnectOptions, McpManager, ServerConfig};
use engine_ports::CancellationToken;
use serde_json::json;

const SUPPORTED: [&str; 3] = ["initialize", "tools_call", "sse-retry"];

fn main() -> ExitCode {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if !SUPPORTED.contains(&scenario.as_str()) {
        eprintln!(
            "conformance-client: scenario {scenario:?} is not supported (supported: {})",
            SUPPORTED.join(", ")
        );
        return ExitCode::from(2);
    }
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client URL (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("conformance-client: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&scenario, &url)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance-client: {scenario} failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str) -> Result<(), String> {
    let connected = McpManager::connect(
        vec![ServerConfig::http("conformance", url, None)],
        ConnectOptions::default(),
    )
    .await;
    if let Some(failure) = connected.failures.first() {
        return Err(failure.to_string());
    }
    let manager = connected.manager;
    let outcome = act(scenario, &manager).await;
    let closed = manager.close().await.map_err(|e| e.to_string());
    outcome.and(closed)
}

async fn act(scenario: &str, manager: &McpManager) -> Result<(), String> {
    let cancel = CancellationToken::new();
    let tools = manager.tools(adapter_mcp::MountOptions::default()).await;
    println!(
        "tools: {:?}",
        tools.iter().map(|t| t.remote_name()).collect::<Vec<_>>()
    );
    let (tool, arguments) = match scenario {
        "initialize" => return Ok(()),
        "tools_call" => ("add_numbers".to_owned(), json!({"a": 2, "b": 3})),
        _ => match tools.first() {
            Some(tool) => (tool.remote_name().to_owned(), json!({})),
            None => return Err("the server lists no tool".to_owned()),
        },
    };
    let arguments = arguments.as_object().cloned();
    let result = manager
        .call_tool("conformance", &tool, arguments, &cancel)
        .await
        .map_err(|e| e.to_string())?;
    println!("{tool}: {}", serde_json::to_string(&result).unwrap_or_default());
    if result.is_error == Some(true) {
        return Err(format!("{tool} returned an error result"));
    }
    Ok(())
}
