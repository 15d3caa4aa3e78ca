//! The MCP server face of Mecatl (`mecated mcp serve`): the catalog an engine
//! governs — core tools, skills, memory, every upstream MCP server — offered to any
//! MCP client as one MCP server, over stdio ([`McpServer::serve_stdio`]) or
//! streamable HTTP ([`McpHttpServer`]), on the official SDK's server side (`rmcp`).
//!
//! The face reaches the engine through the host port only
//! ([`engine_core::host::SessionHost`]): the shared engine and the command palette.
//! Each client connection is one audited session (a fresh id), whose client is
//! named in every call's record (`clientInfo`, and on HTTP the token's
//! fingerprint). `tools/list` is [`engine_core::Engine::offered_tools`] in the
//! configured mode; `tools/call` is [`engine_core::Engine::call_tool`]: the engine's
//! dispatcher decides it (mode, rules, hooks, approval level, person), never this
//! crate. When the gate asks a person, the client is asked through form elicitation
//! (accept runs the call once, anything else refuses it) when it declared the
//! capability, else the call is refused saying so. A tool's own question (an
//! upstream server's elicitation) is relayed the same way. Skills, slash commands
//! and upstream prompts are offered as prompts; `notifications/tools/list_changed`
//! follows the catalog's generation and the tools a `ToolSearch` hydrates.

mod calls;
mod content;
mod handler;
mod http;
mod listing;
mod prompts;

use std::sync::Arc;
use std::time::Duration;

use engine_core::host::SessionHost;
use engine_ports::PermissionMode;
use tokio::io::{AsyncRead, AsyncWrite};

pub use self::http::{MAX_MCP_BODY_BYTES, McpHttpOptions, McpHttpServer};
pub use http_guard::{AllowedHost, AllowedOrigin, AuthToken};

/// The name the server gives in `initialize`'s `serverInfo`.
pub const MCP_SERVER_NAME: &str = "mecated";

/// Default longest time one `tools/call` may take, asks included, before it is
/// cancelled and answered with an error result.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How often a connection asks the engine whether the catalog changed (an upstream
/// server's `list_changed`), to tell its client.
pub const LIST_CHANGE_POLL: Duration = Duration::from_secs(2);

/// How the face serves the catalog.
#[derive(Clone, Debug)]
pub struct McpServeOptions {
    /// The mode every call is decided in (`plan` offers and runs read-only tools
    /// only).
    pub mode: PermissionMode,
    /// The longest one `tools/call` may take (asks included).
    pub call_timeout: Duration,
    /// How often each connection checks for a changed catalog.
    pub list_change_poll: Duration,
}

impl Default for McpServeOptions {
    fn default() -> Self {
        Self {
            mode: PermissionMode::Default,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            list_change_poll: LIST_CHANGE_POLL,
        }
    }
}

/// Serving failed: the transport broke or the peer did not initialize.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The MCP session could not start (no or a bad `initialize`).
    #[error("the MCP client did not initialize the session: {0}")]
    Initialize(String),
    /// The connection failed while serving.
    #[error("the MCP connection failed: {0}")]
    Connection(String),
    /// The HTTP listener could not be bound or failed.
    #[error("the MCP HTTP listener on {addr} failed: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The catalog of a host's shared engine as an MCP server.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<handler::Shared>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server over `host`'s shared engine and command palette.
    pub fn new(host: Arc<dyn SessionHost>, options: McpServeOptions) -> Self {
        Self {
            shared: Arc::new(handler::Shared::new(host, options)),
        }
    }

    /// Serves one client on this process's stdin and stdout (stdout carries
    /// protocol frames only) until the client closes its end.
    ///
    /// # Errors
    /// [`McpServeError`] when the session cannot start or the transport fails.
    pub async fn serve_stdio(&self) -> Result<(), McpServeError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one client over a byte stream pair (newline-delimited JSON-RPC): the
    /// process's stdio, or a pipe in tests and benches.
    ///
    /// # Errors
    /// [`McpServeError`] when the session cannot start or the transport fails.
    pub async fn serve_io<R, W>(&self, read: R, write: W) -> Result<(), McpServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let connection = handler::Connection::new(Arc::clone(&self.shared), handler::Surface::Stdio);
        let running = rmcp::serve_server(connection, (read, write))
            .await
            .map_err(|error| McpServeError::Initialize(error.to_string()))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|error| McpServeError::Connection(error.to_string()))
    }
}
