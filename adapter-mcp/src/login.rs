//! `mecated mcp login NAME`: a login is a connect (the same code a run uses) whose
//! requests for authorization are answered by a person in a browser; the login it
//! makes is stored and the connection closed.

use std::time::Duration;

use crate::auth::{Authorizer, BrowserLogin, TokenStore};
use crate::config::{ServerConfig, TransportConfig};
use crate::manager::{ConnectOptions, McpManager};

/// What a login did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginOutcome {
    /// The person logged in; the login is stored.
    LoggedIn,
    /// The server answered without asking for authorization: nothing to store.
    NotRequired,
}

/// Connects `config` (an HTTP server) asking a person through `browser` whenever the
/// server asks for authorization, and stores the login in `store`. The connect may
/// take the browser's timeout plus the config's own connect timeout.
///
/// # Errors
/// The connect failure (its text names the server and the cause), or a config that
/// is not an HTTP server or sends its own `Authorization` header.
pub async fn login(
    config: ServerConfig,
    store: TokenStore,
    browser: BrowserLogin,
) -> Result<LoginOutcome, String> {
    let name = config.name.clone();
    if !matches!(config.transport, TransportConfig::Http { .. }) {
        return Err(format!(
            "MCP server {name:?} uses the {} transport: only streamable HTTP servers log in",
            config.transport_kind()
        ));
    }
    if config.has_static_authorization() {
        return Err(format!(
            "MCP server {name:?} sends a configured Authorization header (a token from MCP_<NAME>_TOKEN or the config's headers): remove it to log in with OAuth"
        ));
    }
    let timeout = config.connect_timeout + browser.timeout;
    let config = config
        .with_connect_timeout(timeout)
        .with_authorization(store, Authorizer::Browser(browser));
    let connected = McpManager::connect(vec![config], ConnectOptions::default()).await;
    if let Some(failure) = connected.failures.first() {
        return Err(failure.to_string());
    }
    let manager = connected.manager;
    let authorized = manager.authorized(&name);
    let _ = tokio::time::timeout(Duration::from_secs(10), manager.close()).await;
    Ok(if authorized {
        LoginOutcome::LoggedIn
    } else {
        LoginOutcome::NotRequired
    })
}
