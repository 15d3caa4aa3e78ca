//! The host port: what a driving adapter (a *face*: the ACP server, the HTTP API and
//! its page, the MCP server face, the terminal client) needs from the composition root.
//!
//! A face never builds a catalog or connects a server itself. It asks its
//! [`SessionHost`] for a session's engine ([`SessionHost::open`]: the shared engine, or
//! a private one over the session's client MCP servers), reads the store, the
//! workspace root, the command palette, the tool listing, the models a session may
//! pick and the price of what it spent through it, and closes
//! what it opened ([`HostedSession::close`]); a server's readiness check asks it
//! where the global MCP servers stand ([`SessionHost::global_servers`]). The composition root (`app`) implements
//! the trait; a face depends only on `engine-core` and `engine-ports`, so faces stay
//! independent of each other and of every driven adapter.
//!
//! The vocabulary a listing needs lives here too: the tool [`Family`] taxonomy and one
//! listed tool ([`ToolEntry`]), one skipped tool ([`SkippedTool`]).

mod family;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    CommandExpander, EventLog, MemoryStore, PermissionMode, SessionStore, ToolCallLog, Usage,
};
use serde::Serialize;
use serde_json::Value;

use crate::engine::Engine;

pub use family::{FAMILY_ORDER, Family};

/// What a face asks for when it opens a session.
#[derive(Clone, Debug, Default)]
pub struct OpenSession {
    /// The session's client-provided MCP servers in their wire form (ACP's
    /// `McpServer` list as JSON, or the HTTP create body's `mcp_servers`), `None`
    /// when there are none. The host parses and validates them; every error names
    /// its JSON path under `mcp_servers`.
    pub client_servers: Option<Value>,
    /// Whether stdio client servers are accepted: only when the request came over a
    /// local stdio transport (ACP). A remote caller must never make the host spawn
    /// processes.
    pub allow_stdio: bool,
}

/// Why a session cannot be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The live per-session engine cap is reached.
    #[error("too many sessions: {limit} per-session engines are live; close one first")]
    TooManySessions {
        /// The cap.
        limit: usize,
    },
    /// The client servers' wire form does not parse (the message names the JSON
    /// path and what is expected, never a header or environment value).
    #[error("{0}")]
    InvalidClientServers(String),
    /// Client servers were refused before dialling (a bad name, a transport not
    /// accepted here, a bad URL or header). The message names every failing
    /// server, never a header or environment value.
    #[error("{message}")]
    ClientServersRejected {
        /// What was wrong with each.
        message: String,
        /// The servers refused.
        servers: Vec<String>,
    },
    /// Client servers did not connect (nothing stays connected or mounted).
    #[error("{message}")]
    ClientServersUnreachable {
        /// What failed for each.
        message: String,
        /// The servers that did not connect.
        servers: Vec<String>,
    },
    /// The host is shutting down.
    #[error("the session factory is closed")]
    Closed,
    /// Anything else (the store cannot be opened, the engine refused its
    /// dependencies): the message says what and where.
    #[error("{0}")]
    Other(String),
}

/// The engine of one open session, and how to end it.
#[async_trait]
pub trait HostedSession: Send + Sync + fmt::Debug {
    /// The engine: `run`, `cancel`, `approve`, `set_mode`, `create_session`.
    fn engine(&self) -> &Arc<Engine>;

    /// Whether this is a private engine (its own catalog), not the shared one.
    fn is_private(&self) -> bool;

    /// The client MCP tools mounted for this session.
    fn client_tool_names(&self) -> &[String];

    /// The tools available in `mode` on this session's catalog, sorted by name.
    fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry>;

    /// Ends the session's engine: a private engine cancels its runs and closes its
    /// client MCP servers; the shared engine is left alone.
    ///
    /// # Errors
    /// Closing the client servers failed (it was still attempted in full).
    async fn close(self: Box<Self>) -> Result<(), HostError>;
}

/// What the composition root offers faces.
#[async_trait]
pub trait SessionHost: Send + Sync {
    /// The engine for a new session: the shared engine when `request` names no
    /// client server, else a private one over a catalog with them.
    ///
    /// # Errors
    /// [`HostError`]: the cap, bad or unreachable client servers, shutdown.
    async fn open(&self, request: OpenSession) -> Result<Box<dyn HostedSession>, HostError>;

    /// The engine of sessions without client servers.
    fn shared_engine(&self) -> &Arc<Engine>;

    /// Where sessions are stored.
    fn session_store(&self) -> Arc<dyn SessionStore>;

    /// The canonical workspace root (the only root a session's `cwd` may lie in).
    fn workspace_root(&self) -> &Path;

    /// The command palette of the shared catalog (slash commands, skills, prompts).
    fn commands(&self) -> &Arc<dyn CommandExpander>;

    /// The shared catalog's tools available in `mode`, sorted by name.
    fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry>;

    /// The tools the shared catalog did not take (their names were already
    /// registered), in registration order, each with why: the build's own list, the
    /// one `mecated tools --json` prints.
    fn skipped_tools(&self) -> &[SkippedTool];

    /// The cap on live per-session (private) engines.
    fn max_sessions(&self) -> usize;

    /// The model name the engines send for a session that chose none.
    fn model(&self) -> &str;

    /// The models a session may choose, [`model`](Self::model) first (a face
    /// offers them in its picker and refuses any other).
    fn models(&self) -> &[String];

    /// The estimated cost in US dollars of `usage`, the tokens spent per model
    /// name; `None` unless the price of every model that spent tokens is known
    /// (never a guess).
    fn cost(&self, usage: &BTreeMap<String, Usage>) -> Option<f64>;

    /// The log of every session's events (a face replays a stored session's history
    /// from it).
    fn event_log(&self) -> Arc<dyn EventLog>;

    /// The audit of every session's tool calls (who decided each call, how long it
    /// queued and ran), which the events do not carry.
    fn tool_call_log(&self) -> Arc<dyn ToolCallLog>;

    /// The memory scopes that are on (project memory, then the user model), each
    /// with its store, for a face that lists and forgets facts as the operator.
    fn memory_scopes(&self) -> Vec<MemoryScope>;

    /// The server-global MCP servers now, in connect order: live status and counts
    /// of the connected ones, the (redacted) error of those that failed.
    fn mcp_servers(&self) -> Vec<McpServerStatus>;

    /// Probes the session store (a listing within a time limit) and says where it
    /// lives and whether it answered.
    async fn store_health(&self) -> StoreHealth;

    /// Where the server-global MCP servers stand (a readiness check: ready once
    /// none is still connecting).
    fn global_servers(&self) -> GlobalServers;
}

/// One memory scope a face may list and prune.
#[derive(Clone)]
pub struct MemoryScope {
    /// `project` (project memory) or `user` (the user model).
    pub name: &'static str,
    /// Where it lives, for people (a directory, a database scope, `in memory`).
    pub place: String,
    /// The store.
    pub store: Arc<dyn MemoryStore>,
}

impl fmt::Debug for MemoryScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryScope")
            .field("name", &self.name)
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

/// One server-global MCP server, as a face shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct McpServerStatus {
    /// The server name.
    pub name: String,
    /// `streamable-http` or `stdio`.
    pub transport: String,
    /// `static` or `toolhive(<group>)`.
    pub source: String,
    /// `connected`, `dropped`, `closed` or `failed`.
    pub status: String,
    /// Why it failed (redacted), for `failed`.
    pub error: Option<String>,
    /// Whether it failed for want of a login (`mecated mcp login <name>`).
    pub login_needed: bool,
    /// Tools in its snapshot.
    pub tools: usize,
    /// Resources in its snapshot.
    pub resources: usize,
    /// Prompts in its snapshot.
    pub prompts: usize,
}

/// What a probe of the session store found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoreHealth {
    /// `jsonl`, `postgres` or `memory`.
    pub kind: &'static str,
    /// Where it lives, for people (a directory, `host:port/db`, `in memory`).
    pub place: String,
    /// Whether sessions outlive the process.
    pub persistent: bool,
    /// Whether the probe answered in time.
    pub ok: bool,
    /// The sessions it listed.
    pub sessions: Option<usize>,
    /// How long the probe took, in microseconds.
    pub probe_micros: u64,
    /// Why it failed.
    pub error: Option<String>,
}

/// The server-global MCP servers as a readiness check sees them: how many are
/// connected, given up or still connecting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GlobalServers {
    /// Connected (a dropped session reconnects at its next request, so it counts
    /// here).
    pub connected: usize,
    /// Given up: unreachable within the startup timeout, their tools absent.
    pub given_up: usize,
    /// Still connecting.
    pub connecting: usize,
}

impl GlobalServers {
    /// Whether every server is connected or given up.
    pub fn settled(&self) -> bool {
        self.connecting == 0
    }
}

/// A fresh random session id: 32 lowercase hex digits (128 bits).
pub fn new_session_id() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// A one-line summary of call arguments, as the command line's notes and the
/// terminal client show calls: `path=README.md pattern="src/**"` for an object of
/// scalars, else compact JSON; at most `max` chars (`…` when cut).
pub fn args_summary(args: &Value, max: usize) -> String {
    let text = match args {
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| match value {
                Value::String(s) if !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == '"') => {
                    format!("{key}={s}")
                }
                Value::String(s) => format!("{key}={s:?}"),
                other => format!("{key}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    engine_ports::clip_chars(&text, max).into_owned()
}

/// One tool of a listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolEntry {
    /// The catalog name.
    pub name: String,
    /// Its family.
    pub family: Family,
    /// Whether it is read-only (kept in plan mode, run in parallel).
    pub read_only: bool,
    /// Whether it exists only in plan mode.
    pub plan_only: bool,
    /// Whether progressive disclosure applies to it: advertised light or left out
    /// until `ToolSearch` hydrates it (under `auto`, once the catalog's disclosable
    /// specs pass the share of the window).
    pub disclosable: bool,
    /// The full description.
    pub description: String,
    /// The full argument schema (`null` when the tool has none).
    pub schema: Value,
}

/// A tool the catalog did not take because its name was already registered (the
/// first registration wins): `mecated tools --json` and a face's catalog view list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkippedTool {
    /// The tool name.
    pub name: String,
    /// Its own family.
    pub family: Family,
    /// Why, naming the family that kept the name.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_summaries_are_short_and_readable() {
        let args = serde_json::json!({"path": "README.md", "pattern": "a b", "limit": 3});
        assert_eq!(args_summary(&args, 80), "path=README.md pattern=\"a b\" limit=3");
        assert_eq!(args_summary(&serde_json::json!({}), 80), "");
        assert_eq!(args_summary(&serde_json::json!({"k": "abcdef"}), 5), "k=ab…");
    }

    #[test]
    fn session_ids_are_32_lowercase_hex_digits_and_distinct() {
        let a = new_session_id();
        let b = new_session_id();
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
