//! One client connection as an rmcp `ServerHandler`: its audited session, who the
//! client is, the tools it has hydrated, and the watch that tells it when the
//! catalog changes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use engine_core::Engine;
use engine_core::host::{SessionHost, new_session_id};
use engine_ports::{Caller, SessionId};
use rmcp::ServerHandler;
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, GetPromptRequestParams, GetPromptResponse,
    InitializeResult, ListPromptsResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::{MCP_SERVER_NAME, McpServeOptions};

/// What every connection of one server shares.
pub(crate) struct Shared {
    pub(crate) host: Arc<dyn SessionHost>,
    pub(crate) options: McpServeOptions,
}

impl Shared {
    pub(crate) fn new(host: Arc<dyn SessionHost>, options: McpServeOptions) -> Self {
        Self { host, options }
    }

    pub(crate) fn engine(&self) -> &Arc<Engine> {
        self.host.shared_engine()
    }
}

/// How the client reached the face (named in the audit).
#[derive(Clone, Debug)]
pub(crate) enum Surface {
    /// The process's stdio.
    Stdio,
    /// Streamable HTTP; `subject` is the bearer token's fingerprint when one is
    /// required.
    Http { subject: Option<String> },
}

/// One client connection (cheap to clone: rmcp clones the handler per request).
#[derive(Clone)]
pub(crate) struct Connection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) state: Arc<State>,
}

/// The connection's own state.
pub(crate) struct State {
    /// The session its calls are audited under.
    pub(crate) session: SessionId,
    pub(crate) surface: Surface,
    /// Disclosable tools a `ToolSearch` of this connection returned in full.
    pub(crate) hydrated: Mutex<BTreeSet<String>>,
    /// Calls made so far (each call's id is `mcp-<n>`).
    pub(crate) calls: AtomicU64,
    /// The catalog generation last offered.
    pub(crate) generation: AtomicU64,
    /// Stops the list-change watch when the connection goes.
    watch: CancellationToken,
}

impl Drop for State {
    fn drop(&mut self) {
        self.watch.cancel();
    }
}

impl Connection {
    pub(crate) fn new(shared: Arc<Shared>, surface: Surface) -> Self {
        Self {
            shared,
            state: Arc::new(State {
                session: SessionId::from(new_session_id()),
                surface,
                hydrated: Mutex::default(),
                calls: AtomicU64::new(0),
                generation: AtomicU64::new(0),
                watch: CancellationToken::new(),
            }),
        }
    }

    /// The tools this connection has hydrated.
    pub(crate) fn hydrated(&self) -> BTreeSet<String> {
        self.state
            .hydrated
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Adds hydrated tools; whether any was new.
    pub(crate) fn hydrate(&self, names: Vec<String>) -> bool {
        let mut hydrated = self.state.hydrated.lock().unwrap_or_else(PoisonError::into_inner);
        let before = hydrated.len();
        hydrated.extend(names);
        hydrated.len() != before
    }

    /// Who the client is, for the audit: the surface, `clientInfo` as
    /// `name/version`, and on HTTP the token's fingerprint.
    pub(crate) fn caller(&self, peer: &Peer<RoleServer>) -> Caller {
        let (surface, subject) = match &self.state.surface {
            Surface::Stdio => ("mcp-stdio", None),
            Surface::Http { subject } => ("mcp-http", subject.clone()),
        };
        Caller {
            surface: surface.to_owned(),
            client: client_name(peer),
            subject,
        }
    }
}

/// The client's `clientInfo` as `name/version` (its own words, clipped).
pub(crate) fn client_name(peer: &Peer<RoleServer>) -> Option<String> {
    let info = peer.peer_info()?;
    let name = &info.client_info.name;
    let version = &info.client_info.version;
    let text = if version.is_empty() {
        name.clone()
    } else {
        format!("{name}/{version}")
    };
    Some(engine_ports::clip_chars(&text, 200).into_owned())
}

impl ServerHandler for Connection {
    fn get_info(&self) -> InitializeResult {
        let value = json!({
            "protocolVersion": ProtocolVersion::V_2025_11_25,
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": false},
                "logging": {},
            },
            "serverInfo": {"name": MCP_SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
            "instructions": "Mecatl's governed tool catalog: every call is decided by the operator's mode, \
                             rules, hooks and approval level, may ask you for approval, and is audited.",
        });
        serde_json::from_value(value).unwrap_or_default()
    }

    /// Up to 2025-11-25: later revisions forbid the requests to the client that
    /// approvals and relayed questions are (elicitation).
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let weak = Arc::downgrade(&self.state);
        let stop = self.state.watch.clone();
        tokio::spawn(watch_catalog(Arc::clone(&self.shared), weak, context.peer, stop));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (generation, offered) = self
            .shared
            .engine()
            .offered_tools(self.shared.options.mode, &self.hydrated())
            .await;
        self.state.generation.store(generation, Ordering::SeqCst);
        Ok(crate::listing::tools_result(&offered))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(crate::calls::call(self, request, context).await.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        crate::prompts::list(self.shared.host.commands()).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        crate::prompts::get(self.shared.host.commands(), request)
            .await
            .map(Into::into)
    }

    /// Accepted (the face sends no log messages of its own: what it does is in
    /// the audit and the process's log). Logging is deprecated in later revisions of
    /// the protocol, which this server does not offer.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }
}

/// Tells the client when the catalog's generation moves past the one it was last
/// offered (an upstream server changed its tools), until the connection goes.
async fn watch_catalog(
    shared: Arc<Shared>,
    state: Weak<State>,
    peer: Peer<RoleServer>,
    stop: CancellationToken,
) {
    let poll = shared.options.list_change_poll;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(poll) => {}
        }
        if peer.is_transport_closed() {
            return;
        }
        let generation = shared.engine().refresh_catalog().await;
        let Some(state) = state.upgrade() else {
            return;
        };
        let offered = state.generation.swap(generation, Ordering::SeqCst);
        drop(state);
        if generation != offered && peer.notify_tool_list_changed().await.is_err() {
            return;
        }
    }
}
