//! The errors of the composition root: [`BuildError`], [`CloseError`],
//! [`FactoryError`].

use std::path::PathBuf;

use adapter_mcp::{ClientServersError, McpError};
use adapter_skillfs::PlacementError;
use engine_core::EngineError;
use engine_ports::{LlmError, StoreError};

use engine_core::host::Family;

/// A build that cannot go on; everything opened so far was closed again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The telemetry the `OTEL_*` variables ask for cannot start.
    #[error("telemetry (OTEL_EXPORTER_OTLP_*): {0}")]
    Telemetry(#[from] adapter_telemetry::TelemetryError),
    /// A settings file (managed, `--settings`, the workspace's, the user's) cannot be
    /// used: the error names the file, the JSON path and what is expected.
    #[error(transparent)]
    Settings(adapter_policy::SettingsError),
    /// The workspace does not exist or is not a directory.
    #[error("the workspace {} (--workspace) cannot be used: {reason}", path.display())]
    Workspace {
        /// The workspace as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The sandbox's private temporary directory cannot be created.
    #[error("the sandbox (--sandbox) cannot be prepared: {reason}")]
    Sandbox {
        /// Why.
        reason: String,
    },
    /// `--system-prompt-file` cannot be read as UTF-8 text.
    #[error("the system prompt file {} (--system-prompt-file) cannot be read: {reason}", path.display())]
    SystemPromptFile {
        /// The file as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The provider's key variable is unset.
    #[error("--provider {provider} needs an API key: set {variable}")]
    MissingApiKey {
        /// The provider (`openai-chat`, `anthropic`).
        provider: &'static str,
        /// The environment variable.
        variable: &'static str,
    },
    /// The provider cannot be built (a bad base URL, say).
    #[error("--provider {provider} cannot be used: {source}")]
    Provider {
        /// The provider.
        provider: &'static str,
        /// Why.
        #[source]
        source: LlmError,
    },
    /// The skill draft directory overlaps the workspace or a skill directory.
    #[error(transparent)]
    DraftDir(#[from] PlacementError),
    /// The store cannot be opened.
    #[error("the store at {} (--store-dir) cannot be opened: {source}", path.display())]
    Store {
        /// The store directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<StoreError>,
    },
    /// `--memory-dir` / `--user-model-dir` cannot be used (inside the workspace, not a
    /// directory).
    #[error("{flag} {} cannot be used: {reason}", path.display())]
    MemoryDir {
        /// The flag.
        flag: &'static str,
        /// The directory as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The PostgreSQL store cannot be opened (unreachable, refused, a newer schema).
    #[error("the store at {url} (--store-url) cannot be opened: {reason}")]
    Database {
        /// The URL without its password.
        url: String,
        /// Why, naming the server.
        reason: String,
    },
    /// Two non-MCP families registered the same tool name (a bug).
    #[error(
        "tool {name:?} is registered by both the {kept} and the {rejected} family; built-in tool names must be unique"
    )]
    DuplicateTool {
        /// The name.
        name: String,
        /// The family that registered it first.
        kept: Family,
        /// The family that collided.
        rejected: Family,
    },
    /// The engine refused its dependencies.
    #[error("the engine cannot be built: {0}")]
    Engine(#[from] EngineError),
}

/// A step of [`Built::close`](crate::Built::close) that failed (the others still ran).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloseError {
    /// Closing MCP servers (global or a session's client servers) failed.
    #[error("closing MCP servers failed: {0}")]
    Mcp(#[from] McpError),
    /// Flushing or closing the store failed.
    #[error("closing the store failed: {0}")]
    Store(Box<StoreError>),
}

/// A per-session engine that cannot be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// The live per-session engine cap is reached (HTTP 429, an ACP error).
    #[error("too many sessions: {limit} per-session engines are live; close one first")]
    TooManySessions {
        /// The cap.
        limit: usize,
    },
    /// Client-provided MCP servers were rejected before dialling (a bad name, a
    /// transport not accepted here, a bad URL or header; HTTP 400). The message
    /// names every failing server, never a header value.
    #[error(transparent)]
    ClientServersRejected(ClientServersError),
    /// Client-provided MCP servers did not connect (D7: the others were closed,
    /// nothing is mounted; HTTP 503). The message names every failing server.
    #[error(transparent)]
    ClientServersUnreachable(ClientServersError),
    /// The factory was closed (the process is shutting down).
    #[error("the session factory is closed")]
    Closed,
    /// The PostgreSQL store cannot be opened (unreachable, refused, a newer schema).
    #[error("the store at {url} (--store-url) cannot be opened: {reason}")]
    Database {
        /// The URL without its password.
        url: String,
        /// Why, naming the server.
        reason: String,
    },
    /// Two non-MCP families registered the same tool name (a bug).
    #[error("tool {name:?} is registered by two built-in families")]
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// The engine refused its dependencies.
    #[error("the engine cannot be built: {0}")]
    Engine(#[from] EngineError),
}
