//! [`AppHost`]: the composition root behind the host port the faces use
//! ([`engine_core::host::SessionHost`]). It parses a session's client MCP servers
//! (the one wire parser, [`crate::mcp_servers`]), applies the rule that a remote
//! caller never makes this process spawn one, and opens the session's engine through
//! the [`SessionEngineFactory`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_llm::ModelPrices;
use adapter_mcp::{ClientServerKind, ClientServerSpec, ClientServersError};
use async_trait::async_trait;
use engine_core::host::{
    GlobalServers, HostError, HostedSession, McpServerStatus, MemoryScope, OpenSession, SessionHost,
    SkippedTool, StoreHealth, ToolEntry,
};
use engine_core::{Catalog, Engine};
use engine_ports::{CommandExpander, EventLog, PermissionMode, SessionStore, ToolCallLog, Usage};

use crate::assembly::FamilyMap;
use crate::error::FactoryError;
use crate::factory::{SessionEngine, SessionEngineFactory, SessionRequest};
use crate::global_mcp::GlobalMcp;
use crate::mcp_servers::parse_mcp_servers;
use crate::report::{McpServerEntry, tool_entries};
use crate::store::AppStore;

/// What [`Built::host`](crate::Built::host) hands the faces: shared handles to the
/// factory, the store, the shared catalog and the palette.
pub(crate) struct AppHost {
    pub(crate) factory: SessionEngineFactory,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) workspace: PathBuf,
    pub(crate) commands: Arc<dyn CommandExpander>,
    pub(crate) shared_engine: Arc<Engine>,
    pub(crate) shared_catalog: Arc<Catalog>,
    pub(crate) shared_families: Arc<FamilyMap>,
    pub(crate) model: String,
    pub(crate) models: Vec<String>,
    pub(crate) prices: Arc<ModelPrices>,
    /// The store behind `store`, for its event log, audit and health.
    pub(crate) app_store: AppStore,
    pub(crate) memory_scopes: Vec<MemoryScope>,
    pub(crate) global: GlobalMcp,
    /// The build's MCP servers in connect order, failed ones with their error.
    pub(crate) mcp_report: Vec<McpServerEntry>,
    /// The build's skipped tools (the report's list).
    pub(crate) skipped: Vec<SkippedTool>,
    /// How many global servers were given up at build (unreachable in time).
    pub(crate) given_up: usize,
}

/// How long a store health probe may take.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

#[async_trait]
impl SessionHost for AppHost {
    async fn open(&self, request: OpenSession) -> Result<Box<dyn HostedSession>, HostError> {
        let client_servers = client_servers(&request)?;
        let engine = self
            .factory
            .create(SessionRequest {
                client_servers,
                allow_stdio: request.allow_stdio,
            })
            .await
            .map_err(host_error)?;
        Ok(Box::new(engine))
    }

    fn shared_engine(&self) -> &Arc<Engine> {
        &self.shared_engine
    }

    fn session_store(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.store)
    }

    fn workspace_root(&self) -> &Path {
        &self.workspace
    }

    fn commands(&self) -> &Arc<dyn CommandExpander> {
        &self.commands
    }

    fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry> {
        let disclosure = self.shared_engine.disclosure_for(&self.shared_catalog);
        tool_entries(&self.shared_catalog, &self.shared_families, mode, disclosure)
    }

    fn skipped_tools(&self) -> &[SkippedTool] {
        &self.skipped
    }

    fn max_sessions(&self) -> usize {
        self.factory.max_sessions()
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn models(&self) -> &[String] {
        &self.models
    }

    fn cost(&self, usage: &BTreeMap<String, Usage>) -> Option<f64> {
        self.prices.cost_of(usage)
    }

    /// `build` waits until every global server connected or was given up (its
    /// startup timeout), so none is ever still connecting once a face has a host.
    fn global_servers(&self) -> GlobalServers {
        GlobalServers {
            connected: self.global.servers().len(),
            given_up: self.given_up,
            connecting: 0,
        }
    }

    fn event_log(&self) -> Arc<dyn EventLog> {
        self.app_store.event_log()
    }

    fn tool_call_log(&self) -> Arc<dyn ToolCallLog> {
        self.app_store.tool_call_log()
    }

    fn memory_scopes(&self) -> Vec<MemoryScope> {
        self.memory_scopes.clone()
    }

    fn mcp_servers(&self) -> Vec<McpServerStatus> {
        mcp_status(&self.mcp_report, &self.global.servers())
    }

    async fn store_health(&self) -> StoreHealth {
        let started = Instant::now();
        let listed = tokio::time::timeout(STORE_PROBE_TIMEOUT, self.store.list()).await;
        let probe_micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (sessions, error) = match listed {
            Ok(Ok(listings)) => (Some(listings.len()), None),
            Ok(Err(error)) => (None, Some(error.to_string())),
            Err(_) => (
                None,
                Some(format!(
                    "the store did not list its sessions within {} s",
                    STORE_PROBE_TIMEOUT.as_secs()
                )),
            ),
        };
        StoreHealth {
            kind: self.app_store.kind(),
            place: self.app_store.place(),
            persistent: self.app_store.is_persistent(),
            ok: error.is_none(),
            sessions,
            probe_micros,
            error,
        }
    }
}

/// The build's MCP servers with the live status and counts of the connected ones;
/// a failure that asks for a login says so.
fn mcp_status(report: &[McpServerEntry], live: &[adapter_mcp::McpServerInfo]) -> Vec<McpServerStatus> {
    report
        .iter()
        .map(|entry| {
            let now = live.iter().find(|info| info.name == entry.name);
            let login_needed = entry
                .error
                .as_deref()
                .is_some_and(|error| error.contains("mecated mcp login"));
            McpServerStatus {
                name: entry.name.clone(),
                transport: entry.transport.clone(),
                source: entry.source.clone(),
                status: now.map_or_else(|| entry.status.clone(), |info| info.status.as_str().to_owned()),
                error: entry.error.clone(),
                login_needed,
                tools: now.map_or(entry.tools, |info| info.tools),
                resources: now.map_or(entry.resources, |info| info.resources),
                prompts: now.map_or(entry.prompts, |info| info.prompts),
            }
        })
        .collect()
}

/// The client servers of `request`, parsed; stdio ones refused unless the request
/// came over a local stdio transport.
///
/// # Errors
/// [`HostError::InvalidClientServers`] when the wire form does not parse,
/// [`HostError::ClientServersRejected`] for a stdio server from a remote caller.
pub(crate) fn client_servers(request: &OpenSession) -> Result<Vec<ClientServerSpec>, HostError> {
    let specs = match &request.client_servers {
        None => Vec::new(),
        Some(value) => {
            parse_mcp_servers(value).map_err(|error| HostError::InvalidClientServers(error.to_string()))?
        }
    };
    if !request.allow_stdio {
        reject_stdio(&specs)?;
    }
    Ok(specs)
}

/// Refuses every stdio entry, naming each: a remote caller must never make this
/// process spawn programs (D5).
fn reject_stdio(specs: &[ClientServerSpec]) -> Result<(), HostError> {
    let stdio: Vec<&ClientServerSpec> = specs
        .iter()
        .filter(|spec| matches!(spec.kind, ClientServerKind::Stdio { .. }))
        .collect();
    if stdio.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = stdio.iter().map(|spec| format!("{:?}", spec.name)).collect();
    let (subject, verb) = if stdio.len() == 1 {
        ("MCP server", "uses")
    } else {
        ("MCP servers", "use")
    };
    Err(HostError::ClientServersRejected {
        message: format!(
            "{subject} {} {verb} the stdio transport, but HTTP sessions accept streamable HTTP servers only (\"type\":\"http\"); nothing was mounted",
            names.join(", ")
        ),
        servers: stdio.iter().map(|spec| spec.name.clone()).collect(),
    })
}

/// The host's words for a factory error.
fn host_error(error: FactoryError) -> HostError {
    let servers = |problems: &ClientServersError| -> Vec<String> {
        problems
            .problems
            .iter()
            .filter_map(|p| p.server.clone())
            .collect()
    };
    match error {
        FactoryError::TooManySessions { limit } => HostError::TooManySessions { limit },
        FactoryError::ClientServersRejected(rejected) => HostError::ClientServersRejected {
            servers: servers(&rejected),
            message: rejected.to_string(),
        },
        FactoryError::ClientServersUnreachable(unreachable) => HostError::ClientServersUnreachable {
            servers: servers(&unreachable),
            message: unreachable.to_string(),
        },
        FactoryError::Closed => HostError::Closed,
        other => HostError::Other(other.to_string()),
    }
}

#[async_trait]
impl HostedSession for SessionEngine {
    fn engine(&self) -> &Arc<Engine> {
        SessionEngine::engine(self)
    }

    fn is_private(&self) -> bool {
        SessionEngine::is_private(self)
    }

    fn client_tool_names(&self) -> &[String] {
        SessionEngine::client_tool_names(self)
    }

    fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry> {
        SessionEngine::tools(self, mode)
    }

    async fn close(self: Box<Self>) -> Result<(), HostError> {
        SessionEngine::close(*self)
            .await
            .map_err(|error| HostError::Other(error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(value: serde_json::Value, allow_stdio: bool) -> OpenSession {
        OpenSession {
            client_servers: Some(value),
            allow_stdio,
        }
    }

    #[test]
    fn stdio_entries_from_a_remote_caller_are_refused_naming_each_and_http_ones_pass() {
        let servers = serde_json::json!([
            {"type": "http", "name": "cli", "url": "http://127.0.0.1:9/mcp", "headers": []},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
            {"name": "fs", "command": "mcp-fs", "args": [], "env": []},
            {"type": "stdio", "name": "fs2", "command": "mcp-fs"},
        ]);
        let Err(HostError::ClientServersRejected {
            message,
            servers: names,
        }) = client_servers(&request(servers.clone(), false))
        else {
            panic!("stdio servers from a remote caller must be refused");
        };
        assert_eq!(
            message,
            "MCP servers \"fs\", \"fs2\" use the stdio transport, but HTTP sessions \
             accept streamable HTTP servers only (\"type\":\"http\"); nothing was mounted"
        );
        assert_eq!(names, ["fs", "fs2"]);
        assert_eq!(client_servers(&request(servers, true)).unwrap().len(), 4);
        let http_only = serde_json::json!([
            {"type": "http", "name": "cli", "url": "http://127.0.0.1:9/mcp", "headers": []},
        ]);
        assert_eq!(client_servers(&request(http_only, false)).unwrap().len(), 1);
    }

    #[test]
    fn a_wire_form_that_does_not_parse_names_its_json_path() {
        let error = client_servers(&request(
            serde_json::json!([{"type": "http", "name": "x"}]),
            false,
        ))
        .unwrap_err();
        let HostError::InvalidClientServers(message) = error else {
            panic!("expected a parse error, got {error:?}");
        };
        assert!(message.contains("mcp_servers[0].url"), "{message}");
    }
}
