//! The session's `ClientHandler`: `list_changed` notifications become per-list dirty
//! flags, progress notifications liveness of their request, and a server's question
//! (form elicitation) the question of the tool call it belongs to; and the client
//! identity and capabilities every connect announces.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use engine_core::{ElicitationRequest, Elicitor};
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction as McpElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability,
    Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};

use tokio_util::sync::CancellationToken;

use crate::calls::InFlightCalls;

/// The client name sent in `initialize`.
pub(crate) const CLIENT_NAME: &str = "mecatl";

/// The client version sent in `initialize` (this crate's version).
pub(crate) const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Which list a `list_changed` notification or a re-list is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl ListKind {
    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::Tools => "tools/list",
            Self::Resources => "resources/list",
            Self::Prompts => "prompts/list",
        }
    }

    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Resources => "resources",
            Self::Prompts => "prompts",
        }
    }
}

/// The per-list dirty flags a server's `list_changed` notifications set.
#[derive(Debug, Default)]
pub(crate) struct DirtyFlags {
    tools: AtomicBool,
    resources: AtomicBool,
    prompts: AtomicBool,
}

impl DirtyFlags {
    fn flag(&self, kind: ListKind) -> &AtomicBool {
        match kind {
            ListKind::Tools => &self.tools,
            ListKind::Resources => &self.resources,
            ListKind::Prompts => &self.prompts,
        }
    }

    /// Sets the flag; INFO on the clean → dirty transition.
    pub(crate) fn mark(&self, kind: ListKind, server: &str) {
        if !self.flag(kind).swap(true, Ordering::SeqCst) {
            tracing::info!(
                server,
                list = kind.key(),
                "MCP server {server:?} changed its {} list; it is re-listed on next use",
                kind.key()
            );
        }
    }

    /// Clears the flag; whether it was set.
    pub(crate) fn take(&self, kind: ListKind) -> bool {
        self.flag(kind).swap(false, Ordering::SeqCst)
    }

    /// Sets the flag again without a log (a failed re-list re-arms it).
    pub(crate) fn rearm(&self, kind: ListKind) {
        self.flag(kind).store(true, Ordering::SeqCst);
    }
}

/// Our `ClientHandler`: it turns `list_changed` notifications into dirty flags,
/// progress notifications into liveness of the request they belong to, and a
/// server's questions (form elicitation) into questions to the user of the tool call
/// they belong to.
pub(crate) struct Handler {
    pub(super) server: Arc<str>,
    pub(super) flags: Arc<DirtyFlags>,
    pub(super) calls: Arc<InFlightCalls>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.calls.progress(&params.progress_token);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.elicit(request, &context).await)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.flags.mark(ListKind::Tools, &self.server);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.flags.mark(ListKind::Resources, &self.server);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.flags.mark(ListKind::Prompts, &self.server);
    }

    fn get_info(&self) -> ClientConfig {
        client_info()
    }
}

impl Handler {
    /// A server's question: routed to the tool call it belongs to, which asks its
    /// user (or declines on their behalf); declined at once when no call can be
    /// told apart (never shown to the user of another session).
    async fn elicit(
        &self,
        request: ElicitRequestParams,
        context: &RequestContext<RoleClient>,
    ) -> ElicitResult {
        let server = &*self.server;
        let Some(question) = form_question(server, request) else {
            return ElicitResult::new(McpElicitationAction::Decline);
        };
        let origin = context.extensions.get::<InboundStreamOrigin>();
        let entry = match self.calls.route(origin) {
            Ok(entry) => entry,
            Err(problem) => {
                tracing::warn!(
                    server,
                    "MCP server {server:?} asked a question that belongs to no tool call of this client ({problem}); declined"
                );
                return ElicitResult::new(McpElicitationAction::Decline);
            }
        };
        let _asking = entry.asking();
        ask_user(server, question, entry.elicitor.as_ref(), &context.ct).await
    }
}

/// A form question's message and schema; `None` (with a WARN: declined) for a
/// question of a kind this client does not offer (URL mode).
pub(super) fn form_question(server: &str, request: ElicitRequestParams) -> Option<ElicitationRequest> {
    match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => Some(ElicitationRequest {
            message,
            requested_schema: serde_json::to_value(&requested_schema).unwrap_or_default(),
        }),
        _ => {
            tracing::warn!(
                server,
                "MCP server {server:?} asked for a URL (or other non-form) elicitation, which this client does not offer; declined"
            );
            None
        }
    }
}

/// Asks the user of a request the server's question through its `elicitor` and
/// turns the answer into the server's result; without an elicitor (a request that
/// cannot ask anyone) the question is declined.
pub(super) async fn ask_user(
    server: &str,
    question: ElicitationRequest,
    elicitor: Option<&Arc<dyn Elicitor>>,
    cancel: &CancellationToken,
) -> ElicitResult {
    let Some(elicitor) = elicitor else {
        tracing::warn!(
            server,
            "MCP server {server:?} asked a question during a request that cannot ask the user; declined"
        );
        return ElicitResult::new(McpElicitationAction::Decline);
    };
    let response = elicitor.elicit(question, cancel).await;
    let action = match response.action {
        engine_ports::ElicitationAction::Accept => McpElicitationAction::Accept,
        engine_ports::ElicitationAction::Decline => McpElicitationAction::Decline,
        engine_ports::ElicitationAction::Cancel => McpElicitationAction::Cancel,
    };
    let result = ElicitResult::new(action);
    match response.content {
        Some(content) => result.with_content(serde_json::Value::Object(content)),
        None => result,
    }
}

/// The `initialize` parameters: client `mecatl` + crate version, form elicitation
/// (a server may ask the user a question during a tool call; no roots, sampling or
/// URL elicitation), the newest protocol version that still has the `initialize`
/// handshake.
pub(crate) fn client_info() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    ClientConfig::new(capabilities, Implementation::new(CLIENT_NAME, CLIENT_VERSION))
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}
