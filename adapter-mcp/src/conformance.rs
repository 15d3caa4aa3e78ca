//! The client side of the official MCP conformance suite: the scenarios our client
//! acts out (`mecated mcp conformance-client URL`, `examples/conformance_client.rs`).
//! Every scenario runs the product's own connect (authorization included: a
//! challenge is answered headlessly, the suite's authorization server granting at
//! once), then lists the tools and calls one; the scenario name only picks the tool.

use std::sync::Arc;

use engine_core::{ElicitationRequest, ElicitationResponse, Elicitor};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::{Authorizer, OAuthClientSettings, TokenStore};
use crate::config::ServerConfig;
use crate::manager::{ConnectOptions, McpManager};
use crate::tool::MountOptions;

/// The scenarios [`run_conformance_scenario`] supports.
pub const CONFORMANCE_SCENARIOS: [&str; 24] = [
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
];

/// The client metadata document URL the suite's authorization servers accept as a
/// client id (it is never fetched).
const SUITE_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Why a conformance scenario did not complete.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConformanceError {
    /// The scenario is not one of [`CONFORMANCE_SCENARIOS`] (exit status 2).
    #[error("scenario {0:?} is not supported (supported: {list})", list = CONFORMANCE_SCENARIOS.join(", "))]
    Unsupported(String),
    /// The scenario's context (`MCP_CONFORMANCE_CONTEXT`) is not usable (exit status 2).
    #[error("MCP_CONFORMANCE_CONTEXT: {0}")]
    Context(String),
    /// The scenario ran and failed (exit status 1).
    #[error("{0}")]
    Failed(String),
}

/// The scenario's data the suite passes along: pre-registered client credentials.
#[derive(Default, Deserialize)]
struct Context {
    client_id: Option<String>,
    client_secret: Option<String>,
}

/// Acts out `scenario` against the conformance server at `url` (used exactly as
/// given) with the product's own client, `context` being the suite's
/// `MCP_CONFORMANCE_CONTEXT` JSON: connect (answering authorization challenges
/// headlessly with the context's client, else a registered one), list, then
/// `tools_call` calls `add_numbers` `{"a":2,"b":3}`, `initialize` calls nothing and
/// every other scenario calls the first listed tool with `{}` (accepting a question
/// with the form's defaults).
///
/// # Errors
/// [`ConformanceError`]: an unsupported scenario, an unusable context, or what
/// failed.
pub async fn run_conformance_scenario(
    scenario: &str,
    url: &str,
    context: Option<&str>,
) -> Result<(), ConformanceError> {
    if !CONFORMANCE_SCENARIOS.contains(&scenario) {
        return Err(ConformanceError::Unsupported(scenario.to_owned()));
    }
    let context: Context = match context {
        Some(text) => serde_json::from_str(text).map_err(|e| ConformanceError::Context(e.to_string()))?,
        None => Context::default(),
    };
    let client = OAuthClientSettings {
        client_id: context.client_id,
        client_secret: context.client_secret,
        client_metadata_url: Some(SUITE_CLIENT_METADATA_URL.to_owned()),
        ..OAuthClientSettings::default()
    };
    let config = ServerConfig::http("conformance", url, None)
        .with_oauth_client(client)
        .with_authorization(TokenStore::memory(), Authorizer::Headless);
    let connected = McpManager::connect(vec![config], ConnectOptions::default()).await;
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
        "initialize" => return Ok(()),
        "tools_call" => ("add_numbers".to_owned(), json!({"a": 2, "b": 3})),
        _ => match tools.first() {
            Some(tool) => (tool.remote_name().to_owned(), json!({})),
            None => return Err(ConformanceError::Failed("the server lists no tool".to_owned())),
        },
    };
    let result = manager
        .call_tool(
            "conformance",
            &tool,
            arguments.as_object().cloned(),
            &CancellationToken::new(),
            Some(Arc::new(FormDefaults)),
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

/// Answers every question by accepting the form's default values.
struct FormDefaults;

#[async_trait::async_trait]
impl Elicitor for FormDefaults {
    async fn elicit(&self, request: ElicitationRequest, _cancel: &CancellationToken) -> ElicitationResponse {
        ElicitationResponse::accept(form_defaults(&request.requested_schema))
    }
}

/// Each property's `default`, by name.
fn form_defaults(schema: &Value) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter_map(|(name, property)| property.get("default").map(|d| (name.clone(), d.clone())))
                .collect()
        })
        .unwrap_or_default()
}
