//! One connected server: its current session and generation, the single call wrapper
//! every live request goes through, the single-flight reconnect, the
//! snapshots and their lazy re-list, and close.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, TransportConfig};
use crate::error::{McpError, Operation};
use crate::listing::{self, McpPrompt, McpResource, ToolDef};
use crate::redact;
use crate::session::{
    Advertised, DialContext, DialError, DirtyFlags, Failure, ListKind, RequestLimits, Session, dial,
};

/// How long closing one session may take.
pub(crate) const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// A reconnect attempt that did not produce a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AttemptError {
    /// The server was closed meanwhile.
    Closed,
    /// The dial failed (already logged).
    Failed,
}

type Attempt = Shared<BoxFuture<'static, Result<Arc<Session>, AttemptError>>>;

/// A connect that failed: what `Connected.failures` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectFailure {
    /// The server name.
    pub server: String,
    /// Its transport.
    pub transport: crate::config::TransportKind,
    /// Its source.
    pub source: crate::config::ServerSource,
    /// Its URL (without user info or query) or program.
    pub endpoint: String,
    /// The cause, redacted (no header values, tokens, URL user info or queries).
    pub error: String,
}

impl std::fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MCP server {:?} ({}) failed to connect: {}",
            self.server, self.endpoint, self.error
        )
    }
}

/// Snapshot of a server's lists.
struct Lists {
    tools: RwLock<Arc<Vec<Arc<ToolDef>>>>,
    resources: RwLock<Arc<Vec<McpResource>>>,
    prompts: RwLock<Arc<Vec<McpPrompt>>>,
}

pub(crate) struct ServerState {
    pub(crate) config: ServerConfig,
    pub(crate) name: Arc<str>,
    dial: DialContext,
    secrets: Vec<String>,
    current: RwLock<Arc<Session>>,
    next_generation: AtomicU64,
    /// Reconnect dials that succeeded (the `mecatl.mcp.reconnects` metric).
    reconnects: AtomicU64,
    closed: CancellationToken,
    reconnect: Mutex<Option<Attempt>>,
    flags: Arc<DirtyFlags>,
    lists: Lists,
    relist_locks: [tokio::sync::Mutex<()>; 3],
    advertised: Advertised,
    tools_generation: Arc<AtomicU64>,
}

fn read<T: Clone>(lock: &RwLock<T>) -> T {
    match lock.read() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

fn write<T>(lock: &RwLock<T>, value: T) -> T {
    match lock.write() {
        Ok(mut guard) => std::mem::replace(&mut *guard, value),
        Err(poisoned) => std::mem::replace(&mut *poisoned.into_inner(), value),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// `12 s`, `0.5 s`.
pub(crate) fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{secs} s")
    }
}

impl ServerState {
    /// The connect sequence under one deadline: validation, transport, `initialize`,
    /// cache off, all tools, then resources and prompts when advertised.
    pub(crate) async fn connect(
        config: ServerConfig,
        tools_generation: Arc<AtomicU64>,
        limits: RequestLimits,
    ) -> Result<Arc<Self>, ConnectFailure> {
        let failure = |config: &ServerConfig, error: String| ConnectFailure {
            server: config.name.clone(),
            transport: config.transport_kind(),
            source: config.source.clone(),
            endpoint: config.endpoint_for_display(),
            error,
        };
        if let Err(error) = config.validate() {
            return Err(failure(&config, error.to_string()));
        }
        let secrets = config.secrets();
        let redirects = match &config.transport {
            TransportConfig::Http { redirects, .. } => Some(*redirects),
            TransportConfig::Sse { .. } => Some(crate::config::Redirects::SameOrigin),
            TransportConfig::Stdio { .. } => None,
        };
        let http = match redirects.map(crate::http::build_client).transpose() {
            Ok(client) => client,
            Err(e) => {
                let error = redact::diagnostic(&format!("cannot build the HTTP client: {e}"), &secrets);
                return Err(failure(&config, error));
            }
        };
        let name: Arc<str> = Arc::from(config.name.as_str());
        let auth = match &config.transport {
            // Configured servers only: a client's or a discovered server's login is not
            // the user's to make (`mecated mcp login` names configured servers).
            TransportConfig::Http { url, .. }
                if config.source == crate::config::ServerSource::Static
                    && !config.has_static_authorization() =>
            {
                Some(Arc::new(crate::auth::ServerAuth::new(
                    Arc::clone(&name),
                    url,
                    config.auth.client.clone(),
                    config.auth.store.clone(),
                    config.auth.authorizer.clone(),
                )))
            }
            _ => None,
        };
        let flags = Arc::new(DirtyFlags::default());
        let ctx = DialContext {
            server: Arc::clone(&name),
            http,
            flags: Arc::clone(&flags),
            limits,
            auth,
        };
        let timeout = config.connect_timeout;
        let sequence = connect_sequence(&config, &ctx, &secrets);
        let (session, tools, resources, prompts) = match tokio::time::timeout(timeout, sequence).await {
            Ok(Ok(parts)) => parts,
            Ok(Err(_)) if ctx.auth.as_ref().is_some_and(|auth| auth.needs_login()) => {
                return Err(failure(
                    &config,
                    crate::auth::ServerAuth::login_hint(&config.name),
                ));
            }
            Ok(Err(error)) => return Err(failure(&config, error)),
            Err(_) => {
                return Err(failure(
                    &config,
                    format!("the connect timed out after {}", seconds(timeout)),
                ));
            }
        };
        let advertised = session.advertised;
        Ok(Arc::new(Self {
            name,
            dial: ctx,
            secrets,
            current: RwLock::new(session),
            next_generation: AtomicU64::new(2),
            reconnects: AtomicU64::new(0),
            closed: CancellationToken::new(),
            reconnect: Mutex::new(None),
            flags,
            lists: Lists {
                tools: RwLock::new(Arc::new(tools)),
                resources: RwLock::new(Arc::new(resources)),
                prompts: RwLock::new(Arc::new(prompts)),
            },
            relist_locks: [
                tokio::sync::Mutex::new(()),
                tokio::sync::Mutex::new(()),
                tokio::sync::Mutex::new(()),
            ],
            advertised,
            tools_generation,
            config,
        }))
    }

    /// Whether an OAuth authorization ran for this server in this process.
    pub(crate) fn authorized(&self) -> bool {
        self.dial.auth.as_ref().is_some_and(|auth| auth.authorized())
    }

    /// How many reconnect dials succeeded since the server connected.
    pub(crate) fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    pub(crate) fn current(&self) -> Arc<Session> {
        read(&self.current)
    }

    /// Whether the current session is known dead.
    pub(crate) fn is_dropped(&self) -> bool {
        self.current().is_dead()
    }

    /// The protocol revision the current session negotiated.
    pub(crate) fn protocol(&self) -> String {
        self.current().protocol.to_string()
    }

    /// The stdio child's pid of the current session.
    pub(crate) fn child_pid(&self) -> Option<u32> {
        self.current().child_pid()
    }

    pub(crate) fn tools_snapshot(&self) -> Arc<Vec<Arc<ToolDef>>> {
        read(&self.lists.tools)
    }

    pub(crate) fn resources_snapshot(&self) -> Arc<Vec<McpResource>> {
        read(&self.lists.resources)
    }

    pub(crate) fn prompts_snapshot(&self) -> Arc<Vec<McpPrompt>> {
        read(&self.lists.prompts)
    }

    fn redacted(&self, text: &str) -> String {
        redact::redact_text(text, &self.secrets)
    }

    /// Every live request goes through here. `send` is called at most twice:
    /// once, and once more on a fresh session after a drop that was not delivered.
    pub(crate) async fn call<T, F, Fut>(
        self: &Arc<Self>,
        operation: Operation,
        cancel: &CancellationToken,
        send: F,
    ) -> Result<T, McpError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        if self.is_closed() {
            return Err(self.closed_error(operation));
        }
        if cancel.is_cancelled() {
            return Err(McpError::Cancelled);
        }
        let mut session = self.current();
        // A call dials at most once: before sending when the session is known dead,
        // or after a drop that was not delivered — never both.
        let mut reconnected = false;
        if session.is_dead() {
            session = self.reconnect_from(&session, cancel, operation).await?;
            reconnected = true;
        }
        match send(Arc::clone(&session)).await {
            Ok(value) => Ok(value),
            Err(Failure::NotDelivered(detail)) if reconnected => {
                tracing::debug!(server = %self.name, detail = %self.redacted(&detail), "MCP request not delivered on a fresh session");
                session.mark_dropped();
                Err(self.after_reconnect(operation))
            }
            Err(Failure::NotDelivered(detail)) => {
                tracing::debug!(server = %self.name, detail = %self.redacted(&detail), "MCP request not delivered; reconnecting");
                session.mark_dropped();
                let fresh = self.reconnect_from(&session, cancel, operation).await?;
                match send(Arc::clone(&fresh)).await {
                    Ok(value) => Ok(value),
                    Err(Failure::NotDelivered(_)) => {
                        fresh.mark_dropped();
                        Err(self.after_reconnect(operation))
                    }
                    Err(other) => Err(self.failure_error(other, &fresh, operation)),
                }
            }
            Err(other) => Err(self.failure_error(other, &session, operation)),
        }
    }

    fn closed_error(&self, operation: Operation) -> McpError {
        McpError::Closed {
            server: self.config.name.clone(),
            operation,
        }
    }

    fn after_reconnect(&self, operation: Operation) -> McpError {
        if self.is_closed() {
            return self.closed_error(operation);
        }
        McpError::UnavailableAfterReconnect {
            server: self.config.name.clone(),
            operation,
        }
    }

    fn failure_error(&self, failure: Failure, session: &Session, operation: Operation) -> McpError {
        if self.is_closed() {
            return self.closed_error(operation);
        }
        match failure {
            Failure::Cancelled => McpError::Cancelled,
            Failure::NotDelivered(_) => self.after_reconnect(operation),
            Failure::PossiblyDelivered(detail) => {
                if session.transport_closed() {
                    session.mark_dropped();
                }
                tracing::debug!(server = %self.name, detail = %self.redacted(&detail), "MCP connection broke after the request went out");
                McpError::OutcomeUnknown {
                    server: self.config.name.clone(),
                    operation,
                }
            }
            Failure::TimedOut(after) => McpError::TimedOut {
                server: self.config.name.clone(),
                operation,
                subject: operation.method().to_owned(),
                after,
            },
            Failure::TooLarge(limit) => McpError::TooLarge {
                server: self.config.name.clone(),
                operation,
                subject: operation.method().to_owned(),
                limit,
            },
            Failure::Remote(data) => McpError::Remote {
                server: self.config.name.clone(),
                operation,
                code: data.code.0,
                message: self.redacted(&data.message),
            },
            Failure::Other(message) => McpError::Failed {
                server: self.config.name.clone(),
                operation,
                message: self.redacted(&message),
            },
        }
    }

    /// A session newer than `failed` is used as it is; otherwise the caller
    /// joins the attempt in flight or starts one. The wait is cancellable; the dial
    /// is not (it finishes in the background and its outcome is shared).
    async fn reconnect_from(
        self: &Arc<Self>,
        failed: &Arc<Session>,
        cancel: &CancellationToken,
        operation: Operation,
    ) -> Result<Arc<Session>, McpError> {
        let attempt = {
            let mut slot = lock(&self.reconnect);
            let current = self.current();
            if current.generation > failed.generation && !current.is_dead() {
                return Ok(current);
            }
            if self.is_closed() {
                return Err(self.closed_error(operation));
            }
            match slot.as_ref() {
                Some(attempt) => attempt.clone(),
                None => {
                    let attempt = self.start_attempt();
                    *slot = Some(attempt.clone());
                    attempt
                }
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(McpError::Cancelled),
            outcome = attempt => match outcome {
                Ok(session) => Ok(session),
                Err(AttemptError::Closed) => Err(self.closed_error(operation)),
                Err(AttemptError::Failed) => Err(self.after_reconnect(operation)),
            },
        }
    }

    fn start_attempt(self: &Arc<Self>) -> Attempt {
        let this = Arc::clone(self);
        let task = tokio::spawn(async move {
            let outcome = this.redial().await;
            *lock(&this.reconnect) = None;
            outcome
        });
        async move { task.await.unwrap_or(Err(AttemptError::Failed)) }
            .boxed()
            .shared()
    }

    /// One reconnect dial: the connect handshake (cache off) without re-listing.
    async fn redial(&self) -> Result<Arc<Session>, AttemptError> {
        if self.is_closed() {
            return Err(AttemptError::Closed);
        }
        let server = &*self.name;
        tracing::info!(
            event = "mcp.reconnect.start",
            server,
            "reconnecting to MCP server {server:?}"
        );
        let generation = self.next_generation.fetch_add(1, Ordering::SeqCst);
        let timeout = self.config.connect_timeout;
        let error = match tokio::time::timeout(timeout, dial(&self.config, &self.dial, generation)).await {
            Ok(Ok(session)) => {
                let session = Arc::new(session);
                if self.is_closed() {
                    session.close(CLOSE_LIMIT).await;
                    return Err(AttemptError::Closed);
                }
                let old = write(&self.current, Arc::clone(&session));
                self.reconnects.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    old.wait_idle().await;
                    old.close(CLOSE_LIMIT).await;
                });
                tracing::info!(
                    event = "mcp.reconnect.ok",
                    server,
                    generation,
                    "reconnected to MCP server {server:?}"
                );
                return Ok(session);
            }
            Ok(Err(error)) => self.dial_error_text(&error),
            Err(_) => format!("the connect timed out after {}", seconds(timeout)),
        };
        if self.is_closed() {
            // Closed meanwhile: terminal, so nothing more is logged.
            return Err(AttemptError::Closed);
        }
        tracing::warn!(
            event = "mcp.reconnect.failed",
            server,
            error = %error,
            "reconnecting to MCP server {server:?} failed: {error}"
        );
        Err(AttemptError::Failed)
    }

    fn dial_error_text(&self, error: &DialError) -> String {
        dial_error_text(error, &self.secrets)
    }

    /// Re-lists `kind` when its flag is set (under `connect_timeout`, detached
    /// from the reader's cancellation). Readers wait for a re-list in flight.
    pub(crate) async fn refresh(self: &Arc<Self>, kind: ListKind) {
        if self.is_closed() {
            return;
        }
        let index = match kind {
            ListKind::Tools => 0,
            ListKind::Resources => 1,
            ListKind::Prompts => 2,
        };
        let _guard = self.relist_locks[index].lock().await;
        if !self.flags.take(kind) {
            return;
        }
        if !self.advertised.lists(kind) {
            return;
        }
        let this = Arc::clone(self);
        let _ = tokio::spawn(async move { this.relist(kind).await }).await;
    }

    async fn relist(self: Arc<Self>, kind: ListKind) {
        let server = &*self.name;
        let cancel = CancellationToken::new();
        let listing = self.call(Operation::List, &cancel, |session| {
            let cancel = cancel.clone();
            async move { listing::list_all(&session, kind, &cancel).await }
        });
        let outcome = match tokio::time::timeout(self.config.connect_timeout, listing).await {
            Ok(Ok(gathered)) => {
                if let Some(cap) = &gathered.cap {
                    warn_cap(server, kind, cap, gathered.items.len());
                }
                self.replace(kind, gathered.items)
            }
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!(
                "the re-list timed out after {}",
                seconds(self.config.connect_timeout)
            )),
        };
        if let Err(error) = outcome {
            if !self.is_closed() {
                self.flags.rearm(kind);
            }
            let error = redact::diagnostic(&error, &self.secrets);
            tracing::warn!(
                server,
                list = kind.key(),
                error = %error,
                "re-listing the {} of MCP server {server:?} failed; keeping the previous list: {error}",
                kind.key()
            );
        }
    }

    fn replace(&self, kind: ListKind, items: Vec<serde_json::Value>) -> Result<(), String> {
        match kind {
            ListKind::Tools => {
                let tools: Vec<Arc<ToolDef>> = listing::decode_tools(&self.name, items)?
                    .into_iter()
                    .map(Arc::new)
                    .collect();
                let old = write(&self.lists.tools, Arc::new(tools));
                if *old != *self.tools_snapshot() {
                    self.tools_generation.fetch_add(1, Ordering::SeqCst);
                }
            }
            ListKind::Resources => {
                write(
                    &self.lists.resources,
                    Arc::new(listing::decode_resources(&self.name, items)?),
                );
            }
            ListKind::Prompts => {
                write(
                    &self.lists.prompts,
                    Arc::new(listing::decode_prompts(&self.name, items)?),
                );
            }
        }
        Ok(())
    }

    /// Closes the server for good: calls get the closed error, nothing dials.
    pub(crate) async fn close(&self) {
        self.closed.cancel();
        let attempt = lock(&self.reconnect).take();
        if let Some(attempt) = attempt {
            // A dial in flight notices the close and shuts its session down.
            let _ = tokio::time::timeout(CLOSE_LIMIT, attempt).await;
        }
        let session = self.current();
        if tokio::time::timeout(CLOSE_LIMIT, session.close(CLOSE_LIMIT))
            .await
            .is_err()
        {
            session.kill();
        }
    }
}

fn warn_cap(server: &str, kind: ListKind, cap: &str, kept: usize) {
    tracing::warn!(
        server,
        list = kind.key(),
        cap,
        "listing the {} of MCP server {server:?} stopped at {cap}; keeping the {kept} entries gathered",
        kind.key()
    );
}

/// The redacted, clamped cause of a failed dial, with the stdio stderr tail.
pub(crate) fn dial_error_text(error: &DialError, secrets: &[String]) -> String {
    let mut text = redact::diagnostic(&error.cause, secrets);
    if let Some(tail) = &error.stderr_tail {
        text.push_str(&format!("; stderr: {:?}", redact::redact_text(tail, secrets)));
    }
    text
}

/// The connect steps (the caller holds the deadline).
async fn connect_sequence(
    config: &ServerConfig,
    ctx: &DialContext,
    secrets: &[String],
) -> Result<(Arc<Session>, Vec<Arc<ToolDef>>, Vec<McpResource>, Vec<McpPrompt>), String> {
    let server = &*ctx.server;
    let session = dial(config, ctx, 1)
        .await
        .map_err(|e| dial_error_text(&e, secrets))?;
    let session = Arc::new(session);
    let cancel = CancellationToken::new();
    let tools = match listing::list_all(&session, ListKind::Tools, &cancel).await {
        Ok(gathered) => {
            if let Some(cap) = &gathered.cap {
                warn_cap(server, ListKind::Tools, cap, gathered.items.len());
            }
            listing::decode_tools(server, gathered.items)
        }
        Err(failure) => Err(format!("tools/list failed: {}", failure_text(&failure))),
    };
    let tools = match tools {
        Ok(tools) => tools.into_iter().map(Arc::new).collect(),
        Err(error) => {
            let closing = Arc::clone(&session);
            tokio::spawn(async move { closing.close(CLOSE_LIMIT).await });
            return Err(redact::diagnostic(&error, secrets));
        }
    };
    let resources = optional_list(
        server,
        &session,
        ListKind::Resources,
        &cancel,
        secrets,
        listing::decode_resources,
    )
    .await;
    let prompts = optional_list(
        server,
        &session,
        ListKind::Prompts,
        &cancel,
        secrets,
        listing::decode_prompts,
    )
    .await;
    Ok((session, tools, resources, prompts))
}

/// An optional list (resources, prompts) at connect, decoded: empty when the server
/// does not advertise it, and when listing or decoding fails, which is a warning, not
/// a failed connect.
async fn optional_list<T>(
    server: &str,
    session: &Session,
    kind: ListKind,
    cancel: &CancellationToken,
    secrets: &[String],
    decode: fn(&str, Vec<serde_json::Value>) -> Result<Vec<T>, String>,
) -> Vec<T> {
    if !session.advertised.lists(kind) {
        return Vec::new();
    }
    let decoded = match listing::list_all(session, kind, cancel).await {
        Ok(gathered) => {
            if let Some(cap) = &gathered.cap {
                warn_cap(server, kind, cap, gathered.items.len());
            }
            decode(server, gathered.items)
        }
        Err(failure) => Err(format!("{} failed: {}", kind.method(), failure_text(&failure))),
    };
    decoded.unwrap_or_else(|error| {
        let error = redact::diagnostic(&error, secrets);
        tracing::warn!(
            server,
            list = kind.key(),
            error = %error,
            "MCP server {server:?}: listing its {} failed; continuing without them: {error}",
            kind.key()
        );
        Vec::new()
    })
}

fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Cancelled => "cancelled".to_owned(),
        Failure::TimedOut(after) => format!("no answer within {}", seconds(*after)),
        Failure::TooLarge(limit) => format!("a reply over the {limit}-byte limit of one message"),
        Failure::NotDelivered(text) | Failure::PossiblyDelivered(text) | Failure::Other(text) => text.clone(),
        Failure::Remote(data) => format!("{} (JSON-RPC error {})", data.message, data.code.0),
    }
}
