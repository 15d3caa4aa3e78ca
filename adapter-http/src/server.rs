//! [`HttpServer`]: binds the listener, accepts connections (bounded in number, each
//! with a deadline for its request headers), routes requests through the guard, and
//! shuts down in order (refuse new work while running turns finish, bounded; stop
//! accepting, cancel the runs left, wait for open requests, close the session engines).

use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{delete, get, post};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::error::ApiError;
use super::guard::{FACE, check_request};
use super::metrics::{self, MetricsText};
use super::sessions::{Sessions, unload_idle_sessions};
use super::{
    BODY_READ_TIMEOUT, DRAIN, HEADER_READ_TIMEOUT, HEALTH_CONNECTIONS, IDLE_UNLOAD, KEEP_ALIVE_INTERVAL,
    MAX_BODY_BYTES, MAX_CONNECTIONS, MAX_LIVE_SESSIONS, handlers, inspect, studio,
};
use engine_core::host::SessionHost;
use http_guard::{AllowedHost, AllowedOrigin, AuthToken, Guard};

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The bearer token every `/v1` request must carry; required off loopback.
    pub auth_token: Option<AuthToken>,
    /// How often an idle SSE stream carries a keep-alive comment (default 15 s).
    pub keep_alive: Duration,
    /// How long shutdown waits for open requests once runs are cancelled (default
    /// 10 s); connections still open then are dropped.
    pub drain_timeout: Duration,
    /// How long running turns may go on once shutdown begins (default 30 s,
    /// `--drain-secs`): meanwhile new sessions and prompts are refused (503 with
    /// `Retry-After`), `/readyz` answers 503 and everything else is served; runs
    /// still going then are cancelled.
    pub drain: Duration,
    /// How many sessions are live at once (default 64, `--max-live-sessions`); past
    /// it the least recently used idle one is unloaded to the store.
    pub max_live_sessions: usize,
    /// How long a session may go unused before it is unloaded to the store (default
    /// 600 s, `--idle-unload-secs`); it is loaded back at its next prompt.
    pub idle_unload: Duration,
    /// `Host` values accepted besides the loopback names (`--allowed-host`); without
    /// a token every other host is refused (403), which stops DNS rebinding. With a
    /// token any host is accepted.
    pub allowed_hosts: Vec<AllowedHost>,
    /// `Origin` values accepted (`--allowed-origin`); a request carrying any other
    /// `Origin` is refused (403). Requests without `Origin` are not web pages.
    pub allowed_origins: Vec<AllowedOrigin>,
    /// How long a connection may take to send a request's headers (default 10 s)
    /// before it is closed; also bounds how long an idle connection is kept.
    pub header_read_timeout: Duration,
    /// How many connections are served at once (default 256). A connection accepted
    /// over the cap is served for `GET /healthz` and `GET /readyz` only, one request, while one of the
    /// [`HEALTH_CONNECTIONS`](crate::HEALTH_CONNECTIONS) is free; otherwise it is
    /// closed at once.
    pub max_connections: usize,
    /// How long a request body may take to arrive once its handler reads it (default
    /// 30 s); a slower one is answered 408 and its connection closed.
    pub body_read_timeout: Duration,
    /// Renders `GET /metrics` (the Prometheus text format, behind the token when one
    /// is set); `None`: the path is not found.
    pub metrics: Option<MetricsText>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            auth_token: None,
            keep_alive: KEEP_ALIVE_INTERVAL,
            drain_timeout: Duration::from_secs(10),
            drain: DRAIN,
            max_live_sessions: MAX_LIVE_SESSIONS,
            idle_unload: IDLE_UNLOAD,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            body_read_timeout: BODY_READ_TIMEOUT,
            metrics: None,
        }
    }
}

/// The server cannot start or failed while serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A non-loopback address without an auth token.
    #[error(
        "--http-addr {addr} is not a loopback address: set an auth token (the MECATED_AUTH_TOKEN environment variable, or --auth-token TOKEN) to listen on it, or listen on 127.0.0.1"
    )]
    TokenRequired {
        /// The address.
        addr: SocketAddr,
    },
    /// The address cannot be bound.
    #[error("cannot listen on {addr} (--http-addr): {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("the HTTP server failed: {0}")]
    Io(#[source] std::io::Error),
}

/// What every handler shares.
pub(crate) struct ServerState {
    pub(crate) host: Arc<dyn SessionHost>,
    pub(crate) sessions: Sessions,
    /// Whether the listener is on a loopback address (client MCP servers allowed).
    pub(crate) loopback: bool,
    pub(crate) keep_alive: Duration,
    /// What requests are admitted (host, origin, token, body type and length).
    pub(crate) policy: Guard,
    /// How long a request body may take to arrive (408 after).
    pub(crate) body_read_timeout: Duration,
    /// Every run's forwarder (closed when the drain begins, so waiting on it waits
    /// for the running turns).
    pub(crate) runs: TaskTracker,
    /// The `/metrics` renderer.
    pub(crate) metrics: Option<MetricsText>,
    /// Set when the drain begins: no new session or prompt.
    closing: AtomicBool,
}

impl ServerState {
    /// 503 with `Retry-After` once the drain began.
    pub(crate) fn ensure_open(&self) -> Result<(), ApiError> {
        if self.is_draining() {
            return Err(ApiError::shutting_down());
        }
        Ok(())
    }

    /// Whether the drain (or the shutdown after it) began.
    pub(crate) fn is_draining(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Refuses new sessions and runs from now on; running turns go on.
    fn begin_drain(&self) {
        self.closing.store(true, Ordering::SeqCst);
        self.runs.close();
    }

    /// Refuses new sessions and runs, and cancels every run in progress (their
    /// streams end with `result` `cancelled`).
    fn begin_shutdown(&self) {
        self.closing.store(true, Ordering::SeqCst);
        for session in self.sessions.all() {
            session.engine().cancel(session.id());
        }
    }

    /// Closes every live session (runs drained, private engines and their client
    /// MCP servers closed).
    async fn close_sessions(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let sessions = self.sessions.drain();
        futures::future::join_all(sessions.iter().map(|session| session.close())).await;
    }
}

/// The HTTP + SSE API over one [`SessionHost`].
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    state: Arc<ServerState>,
    drain_timeout: Duration,
    drain: Duration,
    idle_unload: Duration,
    header_read_timeout: Duration,
    connections: OpenConnections,
    /// The connections served over the cap, for `/healthz` and `/readyz` only.
    health_connections: OpenConnections,
}

/// How many connections a server holds open, against its cap (a cheap handle, also
/// valid after the server stopped).
#[derive(Clone, Debug)]
pub struct OpenConnections {
    slots: Arc<Semaphore>,
    max: usize,
}

impl OpenConnections {
    fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            slots: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// The connections open now.
    pub fn count(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }
}

impl HttpServer {
    /// Binds `addr`. The engines of `host` should be interactive
    /// (`EngineSettings::interactive`), so asks reach the client as `permission.ask`
    /// events instead of being denied.
    ///
    /// # Errors
    /// [`ServeError::TokenRequired`] for a non-loopback address without a token,
    /// [`ServeError::Bind`] when the address cannot be bound.
    pub async fn bind(
        host: Arc<dyn SessionHost>,
        addr: SocketAddr,
        options: HttpOptions,
    ) -> Result<Self, ServeError> {
        let loopback = addr.ip().is_loopback();
        if !loopback && options.auth_token.is_none() {
            return Err(ServeError::TokenRequired { addr });
        }
        if !host.shared_engine().config().interactive {
            tracing::warn!(
                "the engines are not interactive: permission asks are denied instead of sent to clients"
            );
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr, source })?;
        let state = Arc::new(ServerState {
            host,
            sessions: Sessions::new(options.max_live_sessions),
            loopback,
            keep_alive: options.keep_alive,
            policy: Guard::new(
                FACE,
                options.allowed_hosts,
                options.allowed_origins,
                options.auth_token,
            ),
            body_read_timeout: options.body_read_timeout,
            runs: TaskTracker::new(),
            metrics: options.metrics,
            closing: AtomicBool::new(false),
        });
        Ok(Self {
            listener,
            addr,
            state,
            drain_timeout: options.drain_timeout,
            drain: options.drain,
            idle_unload: options.idle_unload,
            header_read_timeout: options.header_read_timeout,
            connections: OpenConnections::new(options.max_connections),
            health_connections: OpenConnections::new(HEALTH_CONNECTIONS),
        })
    }

    /// The open connections of this server, against its cap.
    pub fn connections(&self) -> OpenConnections {
        self.connections.clone()
    }

    /// The bound address (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` resolves, then drains: new sessions and prompts are
    /// refused (503 with `Retry-After`) and `/readyz` answers 503 while connections
    /// are still accepted and the running turns go on, for at most the drain bound;
    /// then it stops accepting, cancels the runs still going, waits up to the drain
    /// timeout for open requests (SSE streams end with `result`), closes every
    /// session engine it opened and returns. Closing the host (flushing the store)
    /// is the caller's next step.
    ///
    /// # Errors
    /// None today: a failing `accept` is logged and retried (the variant
    /// [`ServeError::Io`] is kept for listener failures).
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), ServeError> {
        let Self {
            listener,
            state,
            drain_timeout,
            drain,
            idle_unload,
            header_read_timeout,
            connections,
            health_connections,
            ..
        } = self;
        let mut http = http1::Builder::new();
        // Slowloris: a connection gets `header_read_timeout` to deliver each request's
        // headers (idle keep-alive connections included), then it is closed.
        http.timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout)
            .keep_alive(true);
        // A health connection answers one request and closes.
        let mut health_http = http.clone();
        health_http.keep_alive(false);
        let mut acceptor = Acceptor {
            service: TowerToHyperService::new(router(Arc::clone(&state))),
            health_service: TowerToHyperService::new(health_router(Arc::clone(&state))),
            http,
            health_http,
            connections,
            health_connections,
            stopping: CancellationToken::new(),
            tasks: JoinSet::new(),
        };
        // A zero `idle_unload` turns the timer off (sessions are still unloaded at the cap).
        let unloader = (!idle_unload.is_zero()).then(|| {
            let state = Arc::clone(&state);
            tokio::spawn(async move { unload_idle_sessions(&state.sessions, idle_unload).await })
        });
        let mut shutdown = pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => acceptor.accept(accepted).await,
            }
        }
        // The drain: still accepting (answers say "not here"), running turns go on.
        state.begin_drain();
        let running = state.runs.len();
        tracing::info!(
            running,
            "draining: no new sessions or prompts; running turns may take {drain:?}"
        );
        let deadline = tokio::time::Instant::now() + drain;
        {
            let finished = state.runs.wait();
            let mut finished = pin!(finished);
            loop {
                tokio::select! {
                    () = &mut finished => {
                        tracing::info!("drained: every running turn finished");
                        break;
                    }
                    () = tokio::time::sleep_until(deadline) => {
                        tracing::warn!(running = state.runs.len(), "turns still running after {drain:?} of drain: cancelling them");
                        break;
                    }
                    accepted = listener.accept() => acceptor.accept(accepted).await,
                }
            }
        }
        drop(listener);
        if let Some(unloader) = unloader {
            unloader.abort();
        }
        tracing::info!("shutting down: no new connections, cancelling runs");
        state.begin_shutdown();
        let Acceptor {
            stopping, mut tasks, ..
        } = acceptor;
        stopping.cancel();
        let drained = tokio::time::timeout(drain_timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                "open requests did not finish within {drain_timeout:?} of shutdown; dropping them"
            );
            tasks.shutdown().await;
        }
        state.close_sessions().await;
        Ok(())
    }
}

/// Accepts connections: served in full under the cap, for `/healthz` and `/readyz`
/// on a reserved connection over it, else closed at once.
struct Acceptor {
    service: TowerToHyperService<Router>,
    health_service: TowerToHyperService<Router>,
    http: http1::Builder,
    health_http: http1::Builder,
    connections: OpenConnections,
    health_connections: OpenConnections,
    /// Cancelled at shutdown: each connection finishes its request and closes.
    stopping: CancellationToken,
    tasks: JoinSet<()>,
}

impl Acceptor {
    async fn accept(&mut self, accepted: std::io::Result<(TcpStream, SocketAddr)>) {
        while self.tasks.try_join_next().is_some() {}
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                accept_failed(&error).await;
                return;
            }
        };
        // Over the cap the connection may still ask `/healthz` or `/readyz` (one
        // request, no body read), else it is closed at once rather than queued: a held
        // descriptor is what a slow client wants.
        let Ok(slot) = Arc::clone(&self.connections.slots).try_acquire_owned() else {
            if let Ok(slot) = Arc::clone(&self.health_connections.slots).try_acquire_owned() {
                self.tasks.spawn(serve_connection(
                    self.health_http.clone(),
                    tcp,
                    self.health_service.clone(),
                    self.stopping.clone(),
                    slot,
                ));
            } else {
                tracing::debug!(%peer, max = self.connections.max, "too many open connections: closing a new one");
                drop(tcp);
            }
            return;
        };
        self.tasks.spawn(serve_connection(
            self.http.clone(),
            tcp,
            self.service.clone(),
            self.stopping.clone(),
            slot,
        ));
    }
}

/// Serves one connection until it ends; once `stopping` is cancelled, finishes the
/// request in progress and closes. `slot` is held for as long as the connection.
async fn serve_connection(
    http: http1::Builder,
    tcp: TcpStream,
    service: TowerToHyperService<Router>,
    stopping: CancellationToken,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    let _slot = slot;
    // SSE writes many small frames: without TCP_NODELAY, Nagle's algorithm and the
    // peer's delayed ACK hold each one back by up to 40 ms.
    if let Err(error) = tcp.set_nodelay(true) {
        tracing::debug!(%error, "TCP_NODELAY could not be set");
    }
    let mut connection = pin!(http.serve_connection(TokioIo::new(tcp), service));
    let outcome = tokio::select! {
        outcome = connection.as_mut() => outcome,
        () = stopping.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = outcome {
        tracing::debug!(%error, "a connection ended with an error");
    }
}

/// An `accept` failure: per-connection errors are skipped; others (out of
/// descriptors) are logged and retried after a pause instead of spinning.
async fn accept_failed(error: &std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::warn!(%error, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .field("loopback", &self.state.loopback)
            .field("auth", &self.state.policy.auth_token().is_some())
            .field("max_connections", &self.connections.max)
            .finish_non_exhaustive()
    }
}

/// The routes of a connection over the cap: `/healthz` and `/readyz` behind the
/// same guard, 503 for anything else (no body is read).
fn health_router(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::readyz))
        .fallback(handlers::over_capacity)
        .layer(middleware::from_fn_with_state(Arc::clone(&state), check_request))
        .with_state(state)
}

/// The routes, the request guard, the body limit and JSON fallbacks.
fn router(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::readyz))
        .route("/v1/sessions", post(handlers::create).get(handlers::list))
        .route(
            "/v1/sessions/{id}",
            get(handlers::show)
                .delete(handlers::delete)
                .patch(inspect::update),
        )
        .route("/v1/sessions/{id}/prompt", post(handlers::prompt))
        .route("/v1/sessions/{id}/approve", post(handlers::approve))
        .route("/v1/sessions/{id}/elicit", post(handlers::elicit))
        .route("/v1/sessions/{id}/cancel", post(handlers::cancel))
        .route("/v1/sessions/{id}/cancel-child", post(handlers::cancel_child))
        .route("/v1/sessions/{id}/tools", get(handlers::tools))
        .route("/v1/sessions/{id}/commands", get(handlers::commands))
        .route("/v1/sessions/{id}/events", get(inspect::events))
        .route("/v1/sessions/{id}/audit", get(inspect::audit))
        .route("/v1/models", get(inspect::models))
        .route("/v1/memory", get(inspect::memory))
        .route("/v1/memory/{scope}/{key}", delete(inspect::forget))
        .route("/v1/mcp", get(inspect::mcp))
        .route("/v1/store", get(inspect::store))
        .route("/", get(studio::index))
        .route("/favicon.ico", get(studio::favicon))
        .route("/assets/{*file}", get(studio::asset))
        .route("/login", post(studio::login))
        .route("/logout", post(studio::logout))
        .route("/metrics", get(metrics::metrics))
        .fallback(handlers::no_route)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(middleware::from_fn_with_state(Arc::clone(&state), check_request))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}
