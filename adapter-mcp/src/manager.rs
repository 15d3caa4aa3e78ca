//! [`McpManager`]: the connected servers behind one cheap-to-clone handle, and the
//! provider surface (tools, resources, prompts, raw calls) routed by server name.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::StreamExt as _;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, GetPromptRequest,
    GetPromptRequestParams, GetPromptResult, JsonObject, ReadResourceRequest, ReadResourceRequestParams,
    ResourceContents, ServerResult,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, ServerSource, TransportKind};
use crate::content::CallReply;
use crate::error::{McpError, Operation};
use crate::listing::{McpPrompt, McpResource, result_value};
use crate::prompts::PromptReply;
use crate::resources::ResourceChunk;
use crate::server::{CLOSE_LIMIT, ConnectFailure, ServerState};
use crate::session::{Failure, ListKind, RequestLimits};
use crate::tool::{McpTool, MountOptions};

/// Most connects in flight at once.
pub(crate) const MAX_CONCURRENT_CONNECTS: usize = 16;

/// Options of [`McpManager::connect`].
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// Cancels the whole connect: it returns promptly, every server counted as
    /// failed, nothing left in flight.
    pub cancel: CancellationToken,
    /// Most connects in flight at once (at most 16).
    pub max_in_flight: usize,
    /// How long each later request to these servers may wait for its reply.
    pub limits: RequestLimits,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            cancel: CancellationToken::new(),
            max_in_flight: MAX_CONCURRENT_CONNECTS,
            limits: RequestLimits::default(),
        }
    }
}

/// What [`McpManager::connect`] gives: the survivors and the failures, both in
/// config order.
#[derive(Debug)]
pub struct Connected {
    /// The connected servers.
    pub manager: McpManager,
    /// One entry per server that failed (also logged as one WARN each).
    pub failures: Vec<ConnectFailure>,
}

/// A server's state as `tools --json` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerStatus {
    /// The session is live (as far as we know).
    Connected,
    /// The session dropped; the next request reconnects.
    Dropped,
    /// Closed for good.
    Closed,
}

impl ServerStatus {
    /// `connected`, `dropped` or `closed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connected => "connected",
            Self::Dropped => "dropped",
            Self::Closed => "closed",
        }
    }
}

/// One connected server, for listings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerInfo {
    /// The name.
    pub name: String,
    /// The transport.
    pub transport: TransportKind,
    /// Where it came from.
    pub source: ServerSource,
    /// Its state.
    pub status: ServerStatus,
    /// Tools in its snapshot.
    pub tools: usize,
    /// Resources in its snapshot.
    pub resources: usize,
    /// Prompts in its snapshot.
    pub prompts: usize,
    /// The protocol revision its current session negotiated (`2026-07-28` with a
    /// server that offers it, else what the server answered to `initialize`).
    pub protocol: String,
}

/// The MCP tools of all servers at one moment, for catalog assembly without I/O.
#[derive(Clone, Debug)]
pub struct ToolSnapshot {
    generation: u64,
    tools: Vec<Arc<McpTool>>,
}

impl ToolSnapshot {
    /// The tools generation the snapshot was taken at.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The tools, in server order then listing order.
    pub fn tools(&self) -> &[Arc<McpTool>] {
        &self.tools
    }

    /// The tools as catalog entries.
    pub fn catalog_tools(&self) -> Vec<Arc<dyn engine_core::Tool>> {
        self.tools
            .iter()
            .map(|t| Arc::clone(t) as Arc<dyn engine_core::Tool>)
            .collect()
    }
}

/// The connected MCP servers of one scope (the process-wide global servers, or one
/// session's client servers). Cheap to clone; every clone is the same manager.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Vec<Arc<ServerState>>,
    tools_generation: Arc<AtomicU64>,
    closed: AtomicBool,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.inner.servers.iter().map(|s| &s.config.name))
            .finish()
    }
}

impl McpManager {
    /// A manager without servers.
    pub fn empty() -> Self {
        Self {
            inner: Arc::new(Inner {
                servers: Vec::new(),
                tools_generation: Arc::new(AtomicU64::new(0)),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// Connects every config concurrently (at most 16 in flight, each under its own
    /// deadline) and keeps the survivors, in config order. Each failure is returned
    /// as data and logged as one WARN naming the server, its redacted URL or program,
    /// and the cause. Zero configs give an empty manager and no diagnostics.
    pub async fn connect(configs: Vec<ServerConfig>, options: ConnectOptions) -> Connected {
        let generation = Arc::new(AtomicU64::new(0));
        let limit = options.max_in_flight.clamp(1, MAX_CONCURRENT_CONNECTS);
        let names: Vec<(String, TransportKind, ServerSource, String)> = configs
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.transport_kind(),
                    c.source.clone(),
                    c.endpoint_for_display(),
                )
            })
            .collect();
        let gen_for_connects = Arc::clone(&generation);
        let all = futures::stream::iter(configs)
            .map(move |config| ServerState::connect(config, Arc::clone(&gen_for_connects), options.limits))
            .buffered(limit)
            .collect::<Vec<_>>();
        let outcomes = tokio::select! {
            biased;
            () = options.cancel.cancelled() => None,
            outcomes = all => Some(outcomes),
        };
        let Some(outcomes) = outcomes else {
            let failures = names
                .into_iter()
                .map(|(server, transport, source, endpoint)| ConnectFailure {
                    server,
                    transport,
                    source,
                    endpoint,
                    error: "the connect was cancelled".to_owned(),
                })
                .collect();
            return Connected {
                manager: Self::empty(),
                failures,
            };
        };
        let mut servers = Vec::new();
        let mut failures = Vec::new();
        for outcome in outcomes {
            match outcome {
                Ok(server) => servers.push(server),
                Err(failure) => {
                    tracing::warn!(
                        server = %failure.server,
                        endpoint = %failure.endpoint,
                        error = %failure.error,
                        "{failure}"
                    );
                    failures.push(failure);
                }
            }
        }
        Connected {
            manager: Self {
                inner: Arc::new(Inner {
                    servers,
                    tools_generation: generation,
                    closed: AtomicBool::new(false),
                }),
            },
            failures,
        }
    }

    /// Whether no server is connected.
    pub fn is_empty(&self) -> bool {
        self.inner.servers.is_empty()
    }

    /// The server names, in server order.
    pub fn server_names(&self) -> Vec<String> {
        self.inner.servers.iter().map(|s| s.config.name.clone()).collect()
    }

    /// Per server, in server order: its name and how many times its session was
    /// dialled again after it was lost (since it connected).
    pub fn reconnect_counts(&self) -> Vec<(String, u64)> {
        self.inner
            .servers
            .iter()
            .map(|s| (s.config.name.clone(), s.reconnects()))
            .collect()
    }

    /// Per server: name, transport, status and snapshot counts, in server order.
    pub fn servers(&self) -> Vec<McpServerInfo> {
        self.inner
            .servers
            .iter()
            .map(|s| McpServerInfo {
                name: s.config.name.clone(),
                transport: s.config.transport_kind(),
                source: s.config.source.clone(),
                status: if s.is_closed() {
                    ServerStatus::Closed
                } else if s.is_dropped() {
                    ServerStatus::Dropped
                } else {
                    ServerStatus::Connected
                },
                tools: s.tools_snapshot().len(),
                resources: s.resources_snapshot().len(),
                prompts: s.prompts_snapshot().len(),
                protocol: s.protocol(),
            })
            .collect()
    }

    fn live(&self) -> impl Iterator<Item = &Arc<ServerState>> + '_ {
        self.inner.servers.iter().filter(|s| !s.is_closed())
    }

    fn server(&self, name: &str) -> Result<&Arc<ServerState>, McpError> {
        self.inner
            .servers
            .iter()
            .find(|s| s.config.name == name)
            .ok_or_else(|| McpError::UnknownServer {
                server: name.to_owned(),
            })
    }

    fn selected(&self, server: Option<&str>) -> Result<Vec<&Arc<ServerState>>, McpError> {
        match server {
            Some(name) => Ok(vec![self.server(name)?]),
            None => Ok(self.live().collect()),
        }
    }

    /// The `kind` entries of one server (or all, `None`) from their `snapshot`s, after
    /// re-listing the dirty ones.
    async fn listed<T: Clone>(
        &self,
        server: Option<&str>,
        kind: ListKind,
        snapshot: fn(&ServerState) -> Arc<Vec<T>>,
    ) -> Result<Vec<T>, McpError> {
        let servers = self.selected(server)?;
        futures::future::join_all(servers.iter().map(|s| s.refresh(kind))).await;
        Ok(servers.iter().flat_map(|s| snapshot(s).to_vec()).collect())
    }

    /// Re-lists every list a `list_changed` notification marked dirty.
    pub async fn refresh(&self) {
        let refreshes = self.live().flat_map(|s| {
            [ListKind::Tools, ListKind::Resources, ListKind::Prompts].map(|kind| s.refresh(kind))
        });
        futures::future::join_all(refreshes).await;
    }

    /// The union of the live servers' tools (server order, then listing order),
    /// after re-listing tool lists marked dirty.
    pub async fn tools(&self, options: MountOptions) -> Vec<Arc<McpTool>> {
        futures::future::join_all(self.live().map(|s| s.refresh(ListKind::Tools))).await;
        self.tool_snapshot(options).tools
    }

    /// The current tools without any I/O (what catalog assembly pins).
    pub fn tool_snapshot(&self, options: MountOptions) -> ToolSnapshot {
        let generation = self.tools_generation();
        let tools = self
            .live()
            .flat_map(|s| {
                s.tools_snapshot()
                    .iter()
                    .map(|def| Arc::new(McpTool::new(Arc::clone(s), Arc::clone(def), options)))
                    .collect::<Vec<_>>()
            })
            .collect();
        ToolSnapshot { generation, tools }
    }

    /// Grows whenever a re-list changed some server's tool set.
    pub fn tools_generation(&self) -> u64 {
        self.inner.tools_generation.load(Ordering::SeqCst)
    }

    /// The resources of one server (or all, `None`), from the snapshots, after
    /// re-listing dirty resource lists. Templates are not listed.
    ///
    /// # Errors
    /// [`McpError::UnknownServer`].
    pub async fn list_resources(&self, server: Option<&str>) -> Result<Vec<McpResource>, McpError> {
        self.listed(server, ListKind::Resources, ServerState::resources_snapshot)
            .await
    }

    /// The resources in the snapshots, without I/O.
    pub fn resource_snapshot(&self) -> Vec<McpResource> {
        self.live()
            .flat_map(|s| s.resources_snapshot().to_vec())
            .collect()
    }

    /// Reads one resource live (through the resilience wrapper); returns its content chunks.
    ///
    /// # Errors
    /// [`McpError`]: unknown server, closed, unavailable, or the server's error.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<ResourceChunk>, McpError> {
        let state = self.server(server)?;
        state
            .call(Operation::ReadResource, cancel, |session| {
                let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
                    ReadResourceRequestParams::new(uri),
                ));
                async move {
                    let reply = session.request(request, cancel).await?;
                    decode_reply::<ReadResourceResultLenient>(reply, "resources/read")
                        .map(|r| r.contents.into_iter().map(ResourceChunk::from_contents).collect())
                }
            })
            .await
    }

    /// The prompts of one server (or all), from the snapshots, after re-listing
    /// dirty prompt lists.
    ///
    /// # Errors
    /// [`McpError::UnknownServer`].
    pub async fn list_prompts(&self, server: Option<&str>) -> Result<Vec<McpPrompt>, McpError> {
        self.listed(server, ListKind::Prompts, ServerState::prompts_snapshot)
            .await
    }

    /// The prompts in the snapshots, without I/O.
    pub fn prompt_snapshot(&self) -> Vec<McpPrompt> {
        self.live().flat_map(|s| s.prompts_snapshot().to_vec()).collect()
    }

    /// Gets one prompt live (through the resilience wrapper): its messages as role and
    /// text. `None` arguments send no `arguments`.
    ///
    /// # Errors
    /// [`McpError`]: unknown server, closed, unavailable, or the server's error.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
        cancel: &CancellationToken,
    ) -> Result<PromptReply, McpError> {
        let state = self.server(server)?;
        let arguments: Option<JsonObject> =
            arguments.map(|args| args.into_iter().map(|(k, v)| (k, Value::String(v))).collect());
        state
            .call(Operation::GetPrompt, cancel, |session| {
                let mut params = GetPromptRequestParams::new(name);
                params.arguments = arguments.clone();
                let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
                async move {
                    let reply = session.request(request, cancel).await?;
                    match reply {
                        ServerResult::GetPromptResult(result) => Ok(result),
                        other => decode_reply::<GetPromptResult>(other, "prompts/get"),
                    }
                }
            })
            .await
            .map(|result| PromptReply::from_result(&result))
    }

    /// Calls one remote tool live (through the resilience wrapper), raw and untruncated. Content items of
    /// a kind rmcp does not know are left out (an [`McpTool`] shows them as an
    /// "unsupported content" marker instead).
    ///
    /// # Errors
    /// [`McpError`]: unknown server, closed, unavailable, or the server's error.
    pub(crate) async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
        elicitor: Option<Arc<dyn engine_core::Elicitor>>,
    ) -> Result<CallToolResult, McpError> {
        call_tool_on(self.server(server)?, tool, arguments, cancel, elicitor)
            .await
            .map(CallReply::into_typed)
    }

    /// Whether this manager ran an OAuth authorization for `server`.
    pub(crate) fn authorized(&self, server: &str) -> bool {
        self.server(server).is_ok_and(|state| state.authorized())
    }

    /// The pid of a stdio server's current child (diagnostics).
    pub fn server_pid(&self, server: &str) -> Option<u32> {
        self.server(server).ok().and_then(|s| s.child_pid())
    }

    /// Closes every server concurrently (≤ 5 s each). Idempotent and terminal:
    /// afterwards nothing dials or spawns and calls get the closed error.
    ///
    /// # Errors
    /// The first server that did not finish closing in time.
    pub async fn close(&self) -> Result<(), McpError> {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let closes = self.inner.servers.iter().map(|s| async move {
            let done = tokio::time::timeout(CLOSE_LIMIT * 2, s.close()).await.is_ok();
            (s.config.name.clone(), done)
        });
        let outcomes = futures::future::join_all(closes).await;
        match outcomes.into_iter().find(|(_, done)| !done) {
            Some((server, _)) => Err(McpError::Failed {
                server: server.clone(),
                operation: Operation::Close,
                message: format!("closing MCP server {server:?} did not finish in time"),
            }),
            None => Ok(()),
        }
    }

    /// Whether [`McpManager::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }
}

/// `tools/call` on one server through the resilience wrapper, decoded leniently.
/// The server's questions during the call go to `elicitor` (none: declined).
pub(crate) async fn call_tool_on(
    state: &Arc<ServerState>,
    tool: &str,
    arguments: Option<JsonObject>,
    cancel: &CancellationToken,
    elicitor: Option<Arc<dyn engine_core::Elicitor>>,
) -> Result<CallReply, McpError> {
    state
        .call(Operation::CallTool, cancel, |session| {
            let mut params = CallToolRequestParams::new(tool.to_owned());
            params.arguments = arguments.clone();
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            let elicitor = elicitor.clone();
            async move {
                let reply = session.request_asking(request, cancel, elicitor).await?;
                match reply {
                    ServerResult::CallToolResult(result) => Ok(CallReply::from_typed(result)),
                    ServerResult::EmptyResult(_) => Ok(CallReply::default()),
                    other => CallReply::from_value(result_value(other)).map_err(Failure::Other),
                }
            }
        })
        .await
        .map_err(|error| match error {
            McpError::TimedOut {
                server,
                operation,
                after,
                ..
            } => McpError::TimedOut {
                server,
                operation,
                subject: tool.to_owned(),
                after,
            },
            McpError::TooLarge {
                server,
                operation,
                limit,
                ..
            } => McpError::TooLarge {
                server,
                operation,
                subject: tool.to_owned(),
                limit,
            },
            other => other,
        })
}

/// A `resources/read` result decoded leniently (only `contents` matters).
#[derive(serde::Deserialize)]
struct ReadResourceResultLenient {
    #[serde(default)]
    contents: Vec<ResourceContents>,
}

fn decode_reply<T: serde::de::DeserializeOwned>(reply: ServerResult, method: &str) -> Result<T, Failure> {
    serde_json::from_value(result_value(reply))
        .map_err(|e| Failure::Other(format!("unexpected {method} result: {e}")))
}
