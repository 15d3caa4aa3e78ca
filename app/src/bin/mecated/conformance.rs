//! `mecated mcp conformance-client URL`: the product's MCP client under the official
//! conformance suite (the scenario comes from `MCP_CONFORMANCE_SCENARIO`, its data
//! from `MCP_CONFORMANCE_CONTEXT`).

use std::process::ExitCode;

use adapter_mcp::{ConformanceError, run_conformance_scenario};

use crate::out;
use crate::usage::UsageError;

/// The environment variable the suite sets.
const SCENARIO_ENV: &str = "MCP_CONFORMANCE_SCENARIO";

/// The scenario's data (pre-registered client credentials), when it has some.
const CONTEXT_ENV: &str = "MCP_CONFORMANCE_CONTEXT";

/// Exit 0 when the scenario completed, 1 when it failed, 2 for an unsupported or
/// missing scenario or an unusable context.
pub(crate) async fn conformance_client(url: &str) -> ExitCode {
    let Some(scenario) = std::env::var(SCENARIO_ENV).ok().filter(|s| !s.is_empty()) else {
        return UsageError::new(format!(
            "{SCENARIO_ENV} is not set: it names the conformance scenario"
        ))
        .exit();
    };
    let context = std::env::var(CONTEXT_ENV).ok();
    match run_conformance_scenario(&scenario, url, context.as_deref()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error @ (ConformanceError::Unsupported(_) | ConformanceError::Context(_))) => {
            UsageError::new(error.to_string()).exit()
        }
        Err(error) => {
            out::stderr(&format!("error: conformance scenario {scenario}: {error}"));
            ExitCode::FAILURE
        }
    }
}
