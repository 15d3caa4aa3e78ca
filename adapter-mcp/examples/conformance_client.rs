//! The MCP conformance-suite client (`@modelcontextprotocol/conformance client
//! --command …`): reads the scenario from `MCP_CONFORMANCE_SCENARIO` and the server
//! URL from its last argument, and acts the scenario out with the product's own
//! client ([`adapter_mcp::run_conformance_scenario`]). `app` exposes the same flow
//! as `mecated mcp conformance-client URL`.
//!
//! The scenario's context comes from `MCP_CONFORMANCE_CONTEXT`.
//!
//! Exit status: 0 when the scenario completed, 1 when it failed, 2 for a scenario
//! not in `CONFORMANCE_SCENARIOS` or an unusable context (saying so).

// A command-line program: it reports on stderr and exits with a status.
#![allow(clippy::print_stderr)]

use std::process::ExitCode;

use adapter_mcp::{ConformanceError, run_conformance_scenario};

fn main() -> ExitCode {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
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
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").ok();
    match runtime.block_on(run_conformance_scenario(&scenario, &url, context.as_deref())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error @ (ConformanceError::Unsupported(_) | ConformanceError::Context(_))) => {
            eprintln!("conformance-client: {error}");
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("conformance-client: {scenario} failed: {error}");
            ExitCode::FAILURE
        }
    }
}
