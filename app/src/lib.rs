//! The composition root of Mecatl: it turns one [`AppConfig`] into running engines,
//! and it is the only crate that knows every adapter (and `clap`).
//!
//! [`build`] runs once per process, in a fixed order (config, server-global MCP
//! servers, skills, store, catalog assets and the shared catalog, engines), and
//! returns [`Built`], which owns everything it opened — the server-global MCP manager
//! above all — and closes it in order ([`Built::close`]). Catalogs come from exactly
//! one function, [`assemble_catalog`], which registers families in [`FAMILY_ORDER`];
//! the [`SessionEngineFactory`] hands a session the shared engine, or a private engine
//! over a catalog assembled from the same [`CatalogAssets`] plus the session's client
//! MCP servers, so per-session catalogs never drift from the shared one (the parity
//! invariant). [`BuildReport`] is the build as data (`mecated tools --json`).
//!
//! The faces live in crates of their own and reach the engines through the host
//! port ([`engine_core::host::SessionHost`], which [`Built::host`] hands out):
//! [`AcpServer`] (`adapter-acp`, `mecated acp`), [`HttpServer`] (`adapter-http`,
//! `mecated serve`) and [`McpServer`] (`adapter-mcp-server`, `mecated mcp serve`);
//! they are re-exported here for the binary's and tests' sake.
//!
//! This crate is not the domain (that is `engine-core`) and adds no tool of its own.
//! The `mecated` binary (`src/bin/mecated/`) maps the command line onto [`AppConfig`],
//! installs the `tracing` subscriber and prints; the library never touches stdin,
//! stdout, signals or global subscribers. Start with [`AppConfig::new`] and [`build`],
//! then [`Built::factory`].
//!
//! ```no_run
//! use app::{AppConfig, SessionRequest, build};
//! use engine_ports::SessionId;
//! use futures::StreamExt as _;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let built = build(AppConfig::new("/srv/repo")).await?;
//! let session = built.factory().create(SessionRequest::default()).await?;
//! let mut run = session.engine().run(&SessionId::from("s1"), "hello")?;
//! while let Some(event) = run.next().await {
//!     println!("{}", serde_json::to_string(&event)?);
//! }
//! session.close().await?;
//! built.close().await?;
//! # Ok(()) }
//! ```

mod assembly;
mod assets;
mod build;
mod built;
mod children;
mod commands;
mod config;
pub mod demo;
mod engine_template;
mod error;
mod factory;
mod global_mcp;
mod host;
mod live_catalog;
mod mcp_servers;
mod memory;
mod report;
mod store;
mod system_prompt;

// The public surface, in one place: the config, the build and what it owns, catalog
// assembly, the factory, the report, the ACP server, and the demo's script and
// workspace.
pub use adapter_acp::{
    ACP_AGENT_NAME, ACP_LIST_PAGE, ACP_LIST_READS, AcpError, AcpServer, MAX_ACP_LINE_BYTES,
    acp_line_transport, acp_stdio_transport,
};
pub use adapter_http::{
    AllowedHost, AllowedOrigin, AuthToken, BODY_READ_TIMEOUT, CONTENT_SECURITY_POLICY, HEADER_READ_TIMEOUT,
    HEALTH_CONNECTIONS, HttpOptions, HttpServer, KEEP_ALIVE_INTERVAL, MAX_BODY_BYTES, MAX_CONNECTIONS,
    METRICS_CONTENT_TYPE, MetricsText, OpenConnections, ServeError, asset_bytes,
};
pub use adapter_mcp_server::{
    DEFAULT_CALL_TIMEOUT, LIST_CHANGE_POLL, MAX_MCP_BODY_BYTES, MCP_SERVER_NAME, McpHttpOptions,
    McpHttpServer, McpServeError, McpServeOptions, McpServer,
};
pub use assembly::{
    AssembledCatalog, CatalogInputs, CatalogTeardown, FamilyMap, SkippedTool, ToolConflict, assemble_catalog,
};
pub use assets::CatalogAssets;
pub use build::{MOCK_MODEL_NAME, build, system_prompt};
pub use built::{Built, TELEMETRY_FLUSH_TIMEOUT};
pub use config::{
    AppConfig, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TEAM_TOKENS, DEFAULT_MAX_TURNS, DEFAULT_MCP_STARTUP_TIMEOUT,
    DelegationConfig, EngineSettings, ExtraTools, McpConfig, ModelConfig, PolicyConfig, SandboxConfig,
    SkillsConfig, StoreConfig, TelemetryConfig,
};
pub use engine_core::host::{FAMILY_ORDER, Family, ToolEntry, new_session_id};
pub use error::{BuildError, CloseError, FactoryError};
pub use factory::{SessionEngine, SessionEngineFactory, SessionRequest};
pub use global_mcp::{GlobalMcp, PinnedTools};
pub use memory::{
    MemoryConfig, MemoryEnv, MemorySetting, MemoryStores, OpenedMemory, open_memory, project_memory_scope,
    user_model_scope, workspace_token,
};
pub use report::{BuildReport, DisclosureEntry, McpServerEntry, SkillEntry, ToolRule, tool_entries};
pub use store::{AppStore, MEMORY_AUDIT_CAP};

/// The allocator the `mecated` binary (and the benches that measure it) installs as
/// `#[global_allocator]`: mimalloc. A run allocates and frees a few hundred small
/// blocks (events, ids, messages, records), often freeing on one worker what another
/// allocated; with glibc's allocator, `malloc` and `free` were about a third of a
/// short run's instructions. A library only names it: the binary chooses.
pub use mimalloc::MiMalloc as Allocator;
pub use system_prompt::{
    MAX_PROJECT_INSTRUCTIONS_BYTES, PROJECT_INSTRUCTION_FILES, SystemPrompt, SystemPromptConfig,
    assemble_system_prompt,
};

/// Entry points for the fuzzing harness in `fuzz/` (not part of the API): the HTTP
/// request bodies as the face decodes them, then the client servers as the host
/// parses them.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use adapter_http::fuzzing::{Rejection, approve_body, elicit_body, prompt_body};

    /// `POST /v1/sessions`: the body through the face's decoding, then its
    /// `mcp_servers` through the host's parser and stdio rule; `Ok` holds the number
    /// of client MCP servers.
    ///
    /// # Errors
    /// The 4xx answer the server would send.
    pub fn create_session_body(bytes: &[u8]) -> Result<usize, Rejection> {
        let servers = adapter_http::fuzzing::create_session_body(bytes)?;
        let request = engine_core::host::OpenSession {
            client_servers: servers,
            allow_stdio: false,
        };
        crate::host::client_servers(&request)
            .map(|specs| specs.len())
            .map_err(|error| (400, error.to_string()))
    }
}
