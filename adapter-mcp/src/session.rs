//! One MCP session: the connect handshake over either transport (`dial`), requests with
//! caller cancellation and their time limits, the typed drop classification, the
//! server's questions during a tool call (elicitation) routed to that call, and close.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use engine_core::{ElicitationRequest, Elicitor};
use rmcp::ClientHandler;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientNotification,
    ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction as McpElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{
    ClientCacheConfig, ClientInitializeError, InboundStreamOrigin, NotificationContext, Peer,
    PeerRequestOptions, RequestContext, RoleClient, RunningService, ServiceError, ServiceExt as _,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpError;
use tokio_util::sync::CancellationToken;

use crate::calls::{CallEntry, InFlightCalls};
use crate::config::{ServerConfig, TransportConfig};
use crate::stdio::{self, ChildProcess};

/// How long closing a stdio session's service (and so the child's stdin) may take
/// before the exit → TERM → KILL sequence starts.
const STDIN_CLOSE_LIMIT: Duration = Duration::from_millis(500);

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
    server: Arc<str>,
    flags: Arc<DirtyFlags>,
    calls: Arc<InFlightCalls>,
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
        let (message, requested_schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (message, requested_schema),
            _ => {
                tracing::warn!(
                    server,
                    "MCP server {server:?} asked for a URL (or other non-form) elicitation, which this client does not offer; declined"
                );
                return ElicitResult::new(McpElicitationAction::Decline);
            }
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
        let Some(elicitor) = entry.elicitor.clone() else {
            tracing::warn!(
                server,
                "MCP server {server:?} asked a question during a request that cannot ask the user; declined"
            );
            return ElicitResult::new(McpElicitationAction::Decline);
        };
        let requested_schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let _asking = entry.asking();
        let response = elicitor
            .elicit(
                ElicitationRequest {
                    message,
                    requested_schema,
                },
                &context.ct,
            )
            .await;
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

/// What the server's `initialize` result advertised.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Advertised {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Advertised {
    /// Whether the server has the `kind` list (every server has tools).
    pub(crate) fn lists(self, kind: ListKind) -> bool {
        match kind {
            ListKind::Tools => true,
            ListKind::Resources => self.resources,
            ListKind::Prompts => self.prompts,
        }
    }
}

/// One live (or dead) MCP session.
pub(crate) struct Session {
    pub(crate) generation: u64,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    dropped: AtomicBool,
    /// Set by the HTTP client when the server said the session is gone.
    lost: Option<Arc<AtomicBool>>,
    child: Option<Arc<ChildProcess>>,
    limits: RequestLimits,
    /// Requests awaiting their reply, and a wake-up when that drops to zero.
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// The requests awaiting their reply, by id: for progress and elicitation routing.
    calls: Arc<InFlightCalls>,
    pub(crate) advertised: Advertised,
}

/// How long one request may wait for its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    /// Without a reply (or a progress notification for the request) for this long,
    /// the request is given up: the server is sent `notifications/cancelled` and the
    /// caller gets "did not answer within N s; request outcome is unknown". Each
    /// progress notification starts the wait again.
    pub idle: Duration,
    /// The longest a request may take, progress or not.
    pub total: Duration,
}

/// Default of [`RequestLimits::idle`]: 60 s.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of [`RequestLimits::total`]: 600 s.
pub(crate) const DEFAULT_MAX_CALL: Duration = Duration::from_secs(600);

impl Default for RequestLimits {
    fn default() -> Self {
        Self {
            idle: DEFAULT_REQUEST_TIMEOUT,
            total: DEFAULT_MAX_CALL,
        }
    }
}

/// Everything a dial needs besides the config.
#[derive(Clone)]
pub(crate) struct DialContext {
    pub(crate) server: Arc<str>,
    pub(crate) http: Option<reqwest::Client>,
    pub(crate) flags: Arc<DirtyFlags>,
    pub(crate) limits: RequestLimits,
    /// The server's OAuth state (HTTP servers without a configured token).
    pub(crate) auth: Option<Arc<crate::auth::ServerAuth>>,
}

/// A dial that failed: the cause (not yet redacted) and, for stdio, the stderr tail.
#[derive(Debug)]
pub(crate) struct DialError {
    pub(crate) cause: String,
    pub(crate) stderr_tail: Option<String>,
}

/// Transport + `initialize` + cache off: the first three connect steps (no listing).
pub(crate) async fn dial(
    config: &ServerConfig,
    ctx: &DialContext,
    generation: u64,
) -> Result<Session, DialError> {
    let calls = Arc::new(InFlightCalls::default());
    let handler = Handler {
        server: Arc::clone(&ctx.server),
        flags: Arc::clone(&ctx.flags),
        calls: Arc::clone(&calls),
    };
    match &config.transport {
        TransportConfig::Http { url, headers, .. } => {
            let client = match &ctx.http {
                Some(client) => client.clone(),
                None => crate::http::build_client(crate::config::Redirects::None).map_err(|e| DialError {
                    cause: format!("cannot build the HTTP client: {e}"),
                    stderr_tail: None,
                })?,
            };
            let client = crate::http::SessionAwareClient::new(client);
            let lost = client.lost_flag();
            let transport_config = crate::http::transport_config(url, headers.as_ref());
            let served = match &ctx.auth {
                Some(auth) => {
                    let client = crate::auth::AuthorizedClient::new(client, Arc::clone(auth));
                    handler
                        .serve(StreamableHttpClientTransport::with_client(
                            client,
                            transport_config,
                        ))
                        .await
                }
                None => {
                    handler
                        .serve(StreamableHttpClientTransport::with_client(
                            client,
                            transport_config,
                        ))
                        .await
                }
            };
            let service = served.map_err(|e| DialError {
                cause: match &ctx.auth {
                    Some(auth) if auth.needs_login() => crate::auth::ServerAuth::login_hint(&ctx.server),
                    _ => format!("initialize failed: {}", init_error_text(&e)),
                },
                stderr_tail: None,
            })?;
            Ok(finish(service, None, Some(lost), ctx.limits, generation, calls).await)
        }
        TransportConfig::Stdio {
            program,
            args,
            cwd,
            env,
        } => {
            let spawned = stdio::spawn(&ctx.server, program, args, cwd, env, config.sandbox.as_ref())
                .map_err(|e| DialError {
                    cause: format!("cannot start {program:?}: {e}"),
                    stderr_tail: None,
                })?;
            let process = spawned.process;
            match handler.serve((spawned.stdout, spawned.stdin)).await {
                Ok(service) => Ok(finish(service, Some(process), None, ctx.limits, generation, calls).await),
                Err(e) => {
                    // A child that died at once has said why on stderr: let it finish.
                    let exited = process.wait_exit(Duration::from_millis(500)).await;
                    process.wait_stderr_closed(Duration::from_millis(500)).await;
                    let tail = process.stderr_tail();
                    let cause = if exited {
                        format!("the process exited during initialize ({})", init_error_text(&e))
                    } else {
                        format!("initialize failed: {}", init_error_text(&e))
                    };
                    process.shut_down().await;
                    Err(DialError {
                        cause,
                        stderr_tail: (!tail.is_empty()).then_some(tail),
                    })
                }
            }
        }
    }
}

async fn finish(
    service: RunningService<RoleClient, Handler>,
    child: Option<Arc<ChildProcess>>,
    lost: Option<Arc<AtomicBool>>,
    limits: RequestLimits,
    generation: u64,
    calls: Arc<InFlightCalls>,
) -> Session {
    let peer = service.peer().clone();
    peer.set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let advertised = peer
        .peer_info()
        .map(|info| Advertised {
            resources: info.capabilities.resources.is_some(),
            prompts: info.capabilities.prompts.is_some(),
        })
        .unwrap_or_default();
    Session {
        generation,
        peer,
        service: tokio::sync::Mutex::new(Some(service)),
        dropped: AtomicBool::new(false),
        lost,
        child,
        limits,
        in_flight: AtomicUsize::new(0),
        idle: tokio::sync::Notify::new(),
        calls,
        advertised,
    }
}

/// How a failed request is classified.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The caller cancelled; the request future was dropped.
    Cancelled,
    /// The request never reached the server: safe to resend once.
    NotDelivered(String),
    /// The connection broke after the request went out: never resent (D13).
    PossiblyDelivered(String),
    /// No reply within the request limits: the server was told the request is
    /// cancelled; whether it ran is unknown.
    TimedOut(Duration),
    /// A JSON-RPC error reply: a successful round trip.
    Remote(ErrorData),
    /// Anything else, verbatim.
    Other(String),
}

/// Where a request was when it failed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Handing the request to the service loop.
    Enqueue,
    /// Waiting for the reply.
    Await,
}

impl Session {
    /// Whether the session is known dead: marked dropped, transport closed, or its
    /// stdio child exited.
    pub(crate) fn is_dead(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
            || self.lost.as_ref().is_some_and(|lost| lost.load(Ordering::SeqCst))
            || self.peer.is_transport_closed()
            || self.child.as_ref().is_some_and(|c| c.has_exited())
    }

    /// Whether the transport itself reports closed (or the child exited).
    pub(crate) fn transport_closed(&self) -> bool {
        self.peer.is_transport_closed() || self.child.as_ref().is_some_and(|c| c.has_exited())
    }

    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::SeqCst);
    }

    /// The stdio child's pid, if any.
    pub(crate) fn child_pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.pid())
    }

    /// Sends one request and waits for its reply within the session's
    /// [`RequestLimits`], honouring `cancel`: on cancellation or expiry the server
    /// is sent `notifications/cancelled`.
    pub(crate) async fn request(
        &self,
        request: ClientRequest,
        cancel: &CancellationToken,
    ) -> Result<ServerResult, Failure> {
        self.request_asking(request, cancel, None).await
    }

    /// [`Session::request`] for a request during which the server may ask the user
    /// (a tool call): its questions go to `elicitor`.
    ///
    /// The limits are kept here rather than by rmcp: the idle time restarts with
    /// every progress notification for the request and stops while a question of the
    /// request waits for the user (the server is waiting for us, not hung); the total
    /// time always applies.
    pub(crate) async fn request_asking(
        &self,
        request: ClientRequest,
        cancel: &CancellationToken,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<ServerResult, Failure> {
        if cancel.is_cancelled() {
            return Err(Failure::Cancelled);
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let _in_flight = InFlight(self);
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| classify(e, Stage::Enqueue))?;
        let entry = self
            .calls
            .register(handle.id.clone(), handle.progress_token.clone(), elicitor);
        let _registered = Registered {
            calls: &self.calls,
            id: handle.id.clone(),
        };
        let mut guard = CancelOnDrop {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
            reason: "request cancelled by the caller",
        };
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Failure::Cancelled),
            result = handle.await_response() => result,
            after = expiry(&entry, self.limits) => {
                guard.reason = "request timeout";
                return Err(Failure::TimedOut(after));
            }
        };
        guard.id = None;
        result.map_err(|e| classify(e, Stage::Await))
    }

    /// Waits until no request awaits its reply on this session (at most the longest
    /// call allowed). A replaced session is closed only then, so a request still on
    /// it ends by its own classification (a lost session's requests fail at once as
    /// "not delivered" and are resent on the new session) rather than as "closed".
    pub(crate) async fn wait_idle(&self) {
        let wait = async {
            loop {
                let notified = self.idle.notified();
                if self.in_flight.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(self.limits.total, wait).await;
    }

    /// Closes the session: the rmcp service within `limit` (HTTP: session
    /// DELETE), or for stdio its stdin (briefly), then the child's exit → TERM →
    /// KILL sequence.
    pub(crate) async fn close(&self, limit: Duration) {
        self.mark_dropped();
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let limit = if self.child.is_some() {
                STDIN_CLOSE_LIMIT
            } else {
                limit
            };
            let _ = service.close_with_timeout(limit).await;
        }
        if let Some(child) = &self.child {
            child.shut_down().await;
        }
    }

    /// Kills a stdio child's process group at once (a close that ran out of time).
    pub(crate) fn kill(&self) {
        if let Some(child) = &self.child {
            child.kill();
        }
    }
}

/// Counts one request out of [`Session::request`], however it ends.
struct InFlight<'a>(&'a Session);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// When a request's time is up: its idle time (restarted by its progress, stopped
/// while it waits for the user) or its total time, whichever ends first; returns
/// that limit.
async fn expiry(entry: &CallEntry, limits: RequestLimits) -> Duration {
    let total = tokio::time::sleep(limits.total);
    tokio::pin!(total);
    loop {
        tokio::select! {
            () = &mut total => return limits.total,
            () = tokio::time::sleep(limits.idle) => {
                if !entry.is_asking() {
                    return limits.idle;
                }
            }
            () = entry.activity() => {}
        }
    }
}

/// Takes a request out of the in-flight table however it ends.
struct Registered<'a> {
    calls: &'a InFlightCalls,
    id: RequestId,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.calls.remove(&self.id);
    }
}

/// Sends `notifications/cancelled` for a request whose future was dropped.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    reason: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let reason = self.reason;
        runtime.spawn(async move {
            let notification = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some(reason.to_owned()),
            ));
            let _ = peer
                .send_notification(ClientNotification::CancelledNotification(notification))
                .await;
        });
    }
}

/// The drop classification, by types only (never by message text).
fn classify(error: ServiceError, stage: Stage) -> Failure {
    match error {
        ServiceError::McpError(data) => Failure::Remote(data),
        ServiceError::Cancelled { .. } => Failure::Cancelled,
        ServiceError::Timeout { timeout } => Failure::TimedOut(timeout),
        ServiceError::TransportClosed if stage == Stage::Enqueue => Failure::NotDelivered(error.to_string()),
        ServiceError::TransportClosed => Failure::PossiblyDelivered(error.to_string()),
        ServiceError::TransportSend(ref transport) => {
            let text = error_chain(&error);
            match classify_transport(transport.error.as_ref()) {
                Some(true) => Failure::NotDelivered(text),
                Some(false) => Failure::PossiblyDelivered(text),
                None => Failure::Other(text),
            }
        }
        other => Failure::Other(error_chain(&other)),
    }
}

/// `Some(true)`: not delivered; `Some(false)`: possibly delivered; `None`: not a drop.
fn classify_transport(error: &(dyn std::error::Error + Send + Sync + 'static)) -> Option<bool> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut saw_io = false;
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return match http {
                StreamableHttpError::SessionExpired | StreamableHttpError::TransportChannelClosed => {
                    Some(true)
                }
                StreamableHttpError::Client(inner) => Some(inner.is_connect()),
                _ => None,
            };
        }
        if let Some(inner) = e.downcast_ref::<reqwest::Error>() {
            return Some(inner.is_connect());
        }
        if e.downcast_ref::<std::io::Error>().is_some() {
            saw_io = true;
        }
        current = e.source();
    }
    // Writing to a stdio child failed: the request never left.
    saw_io.then_some(true)
}

/// A failed `initialize`, without rmcp's transport type names.
fn init_error_text(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", error_chain(error.error.as_ref()))
        }
        other => error_chain(other),
    }
}

/// `error` and its sources, joined by `: ` (without repeating a message its
/// wrapper already shows).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut current = next_source(error);
    while let Some(e) = current {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        current = next_source(e);
    }
    text
}

/// `source()`, except that rmcp's `StreamableHttpError::Client` (which shows its
/// reqwest error but does not expose it as a source) continues into that error.
fn next_source<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    if let Some(StreamableHttpError::Client(inner)) =
        error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(inner);
    }
    error.source()
}
