//! The Agent Client Protocol server behind `mecated acp`: [`AcpServer`] speaks ACP v1
//! (JSON-RPC, on the `agent-client-protocol` crate) over any transport — stdio in
//! the binary, an in-process pipe in tests and benches — on top of a [`SessionHost`].
//!
//! Each `session/new` gets an engine from the [`SessionHost`] (the shared
//! engine, or a private one when the client names MCP servers: D5, D7), a 32-hex id
//! and a session created before its first prompt; `session/load` reopens a stored
//! session (replaying its conversation as `session/update`s), `session/list` pages
//! through the stored ones, `session/close` frees a session's engine, client MCP
//! servers and slot at once. The prompt's D11 events stream back as
//! `session/update` notifications, asks become `session/request_permission`
//! requests. [`acp_stdio_transport`] is the binary's transport: lines of at most
//! [`MAX_ACP_LINE_BYTES`], where a line that is too long, not UTF-8 or not JSON is
//! answered with a parse error and the connection goes on. When the connection
//! ends, the running prompts may finish within a drain bound, then every session's
//! engine is closed (client MCP servers and their stdio children included); the
//! host stays its owner's to close.

mod elicitation;
mod handlers;
mod history;
mod listing;
mod options;
mod permission;
mod prompt_text;
mod session;
mod transport;
mod updates;

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, InitializeRequest, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, ResumeSessionRequest, SetSessionConfigOptionRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::{Agent, Client, ConnectTo};

use engine_core::host::SessionHost;

pub use self::listing::{LIST_PAGE as ACP_LIST_PAGE, LIST_READS as ACP_LIST_READS};
use self::session::Sessions;
pub use self::transport::{MAX_ACP_LINE_BYTES, acp_line_transport, acp_stdio_transport};

/// The name the server gives in `initialize`'s `agentInfo`.
pub const ACP_AGENT_NAME: &str = "mecated";

/// An ACP v1 agent over one [`SessionHost`]: `initialize`, `session/new`, `session/load`,
/// `session/resume`, `session/list`, `session/close`, `session/prompt`,
/// `session/cancel`, `session/set_mode`, `session/set_config_option` and
/// `$/cancel_request` (of a `session/load`, `session/resume` or `session/prompt`).
///
/// Build the app with `engine.interactive = true` so that asks reach the client as
/// `session/request_permission` (a headless engine turns them into denials).
#[derive(Clone)]
pub struct AcpServer {
    sessions: Arc<Sessions>,
    /// How long running prompts may go on once the connection ended.
    drain: Duration,
}

/// The connection failed (a transport error, or a peer that broke the protocol).
#[derive(Debug, thiserror::Error)]
#[error("the ACP connection failed: {0}")]
pub struct AcpError(#[source] agent_client_protocol::Error);

impl AcpServer {
    /// A server for the sessions `host` opens: its engines, its store and its
    /// workspace root (the only root a `session/new` `cwd` may lie in).
    pub fn new(host: Arc<dyn SessionHost>) -> Self {
        let store = host.session_store();
        let workspace = host.workspace_root().to_path_buf();
        Self {
            sessions: Arc::new(Sessions::new(host, store, workspace)),
            drain: Duration::ZERO,
        }
    }

    /// Lets the prompts running when the connection ends go on for up to `drain`
    /// (their asks denied: nobody is left to answer) before they are cancelled; the
    /// default is zero (cancelled at once).
    #[must_use]
    pub fn with_drain(mut self, drain: Duration) -> Self {
        self.drain = drain;
        self
    }

    /// Serves one connection until its incoming side ends (EOF), lets the running
    /// prompts finish within the drain bound ([`AcpServer::with_drain`]), then closes
    /// every session it created: runs cancelled, pending asks denied, private engines
    /// closed with their client MCP servers (never the global ones). Sessions belong
    /// to this server: give each connection a server of its own.
    ///
    /// # Errors
    /// [`AcpError`] when the transport fails; the sessions are closed all the same.
    pub async fn serve(&self, transport: impl ConnectTo<Agent> + 'static) -> Result<(), AcpError> {
        let outcome = self.connection(transport).await;
        self.sessions.drain(self.drain).await;
        self.sessions.close_all().await;
        outcome.map_err(AcpError)
    }

    async fn connection(
        &self,
        transport: impl ConnectTo<Agent> + 'static,
    ) -> Result<(), agent_client_protocol::Error> {
        let on_init = Arc::clone(&self.sessions);
        let on_new = Arc::clone(&self.sessions);
        let on_load = Arc::clone(&self.sessions);
        let on_resume = Arc::clone(&self.sessions);
        let on_option = Arc::clone(&self.sessions);
        let on_list = Arc::clone(&self.sessions);
        let on_close = Arc::clone(&self.sessions);
        let on_prompt = Arc::clone(&self.sessions);
        let on_mode = Arc::clone(&self.sessions);
        let on_cancel = Arc::clone(&self.sessions);
        Agent
            .v1()
            .name(ACP_AGENT_NAME)
            .on_receive_request(
                async move |request: InitializeRequest, responder, _cx| {
                    responder.respond(handlers::initialize(&on_init, &request))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: NewSessionRequest, responder, cx| {
                    // Connecting client servers can take seconds: off the dispatch loop.
                    off_the_loop(&cx, &on_new, move |sessions, connection| async move {
                        handlers::new_session(&sessions, request, responder, &connection).await;
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: LoadSessionRequest, responder, cx| {
                    // Connecting client servers and reading the store: off the loop.
                    off_the_loop(&cx, &on_load, move |sessions, connection| async move {
                        handlers::load_session(&sessions, request, responder, &connection).await;
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ResumeSessionRequest, responder, cx| {
                    off_the_loop(&cx, &on_resume, move |sessions, connection| async move {
                        handlers::resume_session(&sessions, request, responder, &connection).await;
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ListSessionsRequest, responder, cx| {
                    off_the_loop(&cx, &on_list, move |sessions, _| async move {
                        handlers::list(&sessions, request, responder).await;
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: CloseSessionRequest, responder, cx| {
                    // Waiting for a cancelled prompt and closing client servers: off the loop.
                    off_the_loop(&cx, &on_close, move |sessions, _| async move {
                        handlers::close(&sessions, request, responder).await;
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: PromptRequest, responder, cx| {
                    handlers::prompt(&on_prompt, request, responder, &cx);
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: SetSessionModeRequest, responder, cx| {
                    handlers::set_mode(&on_mode, request, responder, &cx).await;
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: SetSessionConfigOptionRequest, responder, cx| {
                    // Reads and writes the store: off the loop.
                    off_the_loop(&cx, &on_option, move |sessions, connection| async move {
                        handlers::set_config_option(&sessions, request, responder, &connection).await;
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |notification: CancelNotification, _cx| {
                    on_cancel.cancel(notification.session_id.0.as_ref());
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_to(transport)
            .await
    }
}

/// Runs a request's handler as a task of the connection, off its dispatch loop (for
/// handlers that wait on the store, on client MCP servers or on a prompt), giving it
/// the sessions and the connection it answers on.
#[track_caller]
fn off_the_loop<F>(
    cx: &ConnectionTo<Client>,
    sessions: &Arc<Sessions>,
    handler: impl FnOnce(Arc<Sessions>, ConnectionTo<Client>) -> F,
) -> Result<(), agent_client_protocol::Error>
where
    F: Future<Output = ()> + Send + 'static,
{
    let task = handler(Arc::clone(sessions), cx.clone());
    cx.spawn(async move {
        task.await;
        Ok(())
    })
}

impl std::fmt::Debug for AcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpServer")
            .field("sessions", &self.sessions.len())
            .finish()
    }
}

/// The string `key` of every element of the JSON array `array`, for tests of the wire forms.
#[cfg(test)]
fn field_of_each<'a>(array: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    let elements = array.as_array().expect("a JSON array");
    elements
        .iter()
        .map(|element| element[key].as_str().expect("a string"))
        .collect()
}
