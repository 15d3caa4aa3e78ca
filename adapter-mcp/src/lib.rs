//! MCP servers as catalog tools, on the official Rust MCP SDK (`rmcp`).
//!
//! This crate is the MCP client adapter: it connects to operator-configured
//! streamable-HTTP and stdio servers, ToolHive workloads and a session's
//! client-provided servers ([`McpManager`]), mounts their tools as
//! `mcp__<server>__<tool>` ([`McpTool`]; names are identities, D6),
//! maps their results onto typed content parts under the one output cap (D10),
//! reconnects dropped sessions once and never replays a request that may have
//! arrived (D13), offers the resource meta-tools ([`resource_tools`]) and the
//! `/mcp__<server>__<prompt>` command expander ([`McpPromptExpander`]), and owns the
//! `--mcp-*` / `--toolhive*` rules as pure functions ([`parse_mcp_flags`],
//! [`parse_mcp_config`], [`discover_toolhive`]). It is not the composition root: `app`
//! maps clap and ACP/HTTP bodies onto these types, owns the global manager's
//! lifecycle and alone registers tools into catalogs (order, first wins): this crate
//! produces tools and never registers them itself.
//!
//! Start with [`parse_mcp_flags`] → [`merge_servers`] → [`McpManager::connect`], then
//! [`McpManager::tool_snapshot`] and [`ToolSnapshot::catalog_tools`], which the
//! catalog assembly registers:
//!
//! ```
//! use adapter_mcp::{McpFlags, parse_mcp_flags};
//!
//! let flags = McpFlags {
//!     servers: vec!["docs=https://docs.example/mcp".into()],
//!     stdio: vec!["fs=mcp-fs --root '/srv/a b'".into()],
//!     ..McpFlags::default()
//! };
//! // Tokens come from an injected lookup, read once: here MCP_DOCS_TOKEN is set.
//! let configs = parse_mcp_flags(&flags, |var| (var == "MCP_DOCS_TOKEN").then(|| "t0k".to_owned())).unwrap();
//! assert_eq!(configs[0].name, "docs");
//! assert_eq!(configs[1].name, "fs");
//! // …then `McpManager::connect(configs, ConnectOptions::default()).await`.
//! ```
//!
//! **Security:** an MCP prompt's text replaces the turn's input, so a server can
//! rewrite the agent's goal through it. Enable MCP prompts (`--mcp-prompts`) only for
//! servers you trust. Likewise, tool descriptions and results come from the server
//! and reach the model as they are.
//!
//! The SDK stays inside: live reads and prompts come back as this crate's
//! [`ResourceChunk`] and [`PromptReply`], and no `rmcp` type is part of the API.

// The surface below is the whole API: nothing public hides in a module, and no type
// reachable from it is left unnamed (an `rmcp` type would be one).
#![deny(unreachable_pub, unnameable_types)]

mod auth;
mod calls;
mod client_servers;
mod config;
mod conformance;
mod content;
mod error;
mod flags;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod inputs;
mod listing;
mod login;
mod manager;
mod mcp_config;
mod naming;
mod output_schema;
mod prompts;
mod redact;
mod resources;
mod server;
mod server_name;
mod session;
mod size_limit;
mod sse_client;
mod stdio;
mod tool;
mod toolhive;
mod url_check;

// The public surface, in one place: what `app` (the composition root, its tests and
// benches) names, and the types those items carry. Everything else is crate-private;
// no `rmcp` type crosses this line.
pub use auth::{AuthStatus, Authorizer, BrowserLogin, OAuthClientSettings, TokenStore, TokenStoreError};
pub use client_servers::{
    ClientServerContext, ClientServerKind, ClientServerProblem, ClientServerSpec, ClientServersError,
    connect_client_servers, validate_client_servers,
};
pub use config::{ConfigError, Redirects, ServerConfig, ServerSource, TransportConfig, TransportKind};
pub use conformance::{CONFORMANCE_SCENARIOS, ConformanceError, run_conformance_scenario};
pub use error::{McpError, Operation};
pub use flags::{
    FlagError, MCP_SERVER_HELP, MCP_SERVER_INSECURE_HTTP_HELP, MCP_STDIO_HELP, McpFlags, parse_mcp_flags,
};
pub use inputs::{InputPrompter, McpInput, McpInputKind, McpInputs, input_env_var};
pub use listing::{McpPrompt, McpPromptArgument, McpResource};
pub use login::{LoginOutcome, login};
pub use manager::{ConnectOptions, Connected, McpManager, McpServerInfo, ServerStatus, ToolSnapshot};
pub use mcp_config::{
    Expansion, MAX_MCP_CONFIG_BYTES, McpConfigError, McpConfigFile, is_variable_name, parse_mcp_config,
};
pub use prompts::{McpPromptExpander, PromptMessage, PromptReply, prompt_expander};
pub use resources::{ListMcpResources, ReadMcpResource, ResourceChunk, ResourceTools, resource_tools};
pub use server::ConnectFailure;
pub use server_name::ServerNameError;
pub use session::RequestLimits;
pub use tool::{McpTool, MountOptions};
pub use toolhive::{
    MergedServers, ToolhiveDiscovery, ToolhiveOptions, ToolhiveSkip, discover_toolhive, merge_servers,
    toolhive_base_url,
};
