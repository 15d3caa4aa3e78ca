//! [`HttpServer`]: binds the listener, routes requests, and shuts down in order
//! (stop accepting, cancel runs, drain, close the session engines).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::auth::{AuthToken, require_bearer};
use super::error::ApiError;
use super::sessions::Sessions;
use super::{KEEP_ALIVE_INTERVAL, MAX_BODY_BYTES, handlers};
use crate::built::Built;

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
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            auth_token: None,
            keep_alive: KEEP_ALIVE_INTERVAL,
            drain_timeout: Duration::from_secs(10),
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
    pub(crate) built: Arc<Built>,
    pub(crate) sessions: Sessions,
    /// Whether the listener is on a loopback address (client MCP servers allowed).
    pub(crate) loopback: bool,
    pub(crate) keep_alive: Duration,
    auth_token: Option<AuthToken>,
    closing: AtomicBool,
}

impl ServerState {
    /// The bearer token, when one is required.
    pub(crate) fn auth_token(&self) -> Option<&AuthToken> {
        self.auth_token.as_ref()
    }

    /// 503 once shutdown began.
    pub(crate) fn ensure_open(&self) -> Result<(), ApiError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(ApiError::shutting_down());
        }
        Ok(())
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

/// The HTTP + SSE API over one [`Built`].
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    state: Arc<ServerState>,
    drain_timeout: Duration,
}

impl HttpServer {
    /// Binds `addr`. The engines of `built` should be interactive
    /// (`EngineSettings::interactive`), so asks reach the client as `permission.ask`
    /// events instead of being denied.
    ///
    /// # Errors
    /// [`ServeError::TokenRequired`] for a non-loopback address without a token,
    /// [`ServeError::Bind`] when the address cannot be bound.
    pub async fn bind(built: Arc<Built>, addr: SocketAddr, options: HttpOptions) -> Result<Self, ServeError> {
        let loopback = addr.ip().is_loopback();
        if !loopback && options.auth_token.is_none() {
            return Err(ServeError::TokenRequired { addr });
        }
        if !built.shared_engine().config().interactive {
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
        let limit = built.factory().max_sessions();
        let state = Arc::new(ServerState {
            built,
            sessions: Sessions::new(limit),
            loopback,
            keep_alive: options.keep_alive,
            auth_token: options.auth_token,
            closing: AtomicBool::new(false),
        });
        Ok(Self {
            listener,
            addr,
            state,
            drain_timeout: options.drain_timeout,
        })
    }

    /// The bound address (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` resolves; then stops accepting, cancels every run,
    /// waits up to the drain timeout for open requests (SSE streams end with
    /// `result`), closes every session engine it opened and returns. Closing the
    /// [`Built`] is the caller's next step.
    ///
    /// # Errors
    /// [`ServeError::Io`] when the listener fails.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), ServeError> {
        let state = Arc::clone(&self.state);
        let stopping = CancellationToken::new();
        let signal = {
            let state = Arc::clone(&state);
            let stopping = stopping.clone();
            async move {
                shutdown.await;
                tracing::info!("shutting down: no new connections, cancelling runs");
                state.begin_shutdown();
                stopping.cancel();
            }
        };
        // SSE writes many small frames: without TCP_NODELAY, Nagle's algorithm and the
        // peer's delayed ACK hold each one back by up to 40 ms.
        let listener = self.listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY could not be set");
            }
        });
        let server = axum::serve(listener, router(Arc::clone(&state))).with_graceful_shutdown(signal);
        let drain_timeout = self.drain_timeout;
        let outcome = tokio::select! {
            outcome = server.into_future() => outcome.map_err(ServeError::Io),
            () = async {
                stopping.cancelled().await;
                tokio::time::sleep(drain_timeout).await;
            } => {
                tracing::warn!("open requests did not finish within {drain_timeout:?} of shutdown; dropping them");
                Ok(())
            }
        };
        state.close_sessions().await;
        outcome
    }
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .field("loopback", &self.state.loopback)
            .field("auth", &self.state.auth_token.is_some())
            .finish_non_exhaustive()
    }
}

/// The routes, the bearer check, the body limit and JSON fallbacks.
fn router(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .route("/v1/sessions", post(handlers::create).get(handlers::list))
        .route("/v1/sessions/{id}", get(handlers::show).delete(handlers::delete))
        .route("/v1/sessions/{id}/prompt", post(handlers::prompt))
        .route("/v1/sessions/{id}/approve", post(handlers::approve))
        .route("/v1/sessions/{id}/cancel", post(handlers::cancel))
        .route("/v1/sessions/{id}/tools", get(handlers::tools))
        .route("/v1/sessions/{id}/commands", get(handlers::commands))
        .fallback(handlers::no_route)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(middleware::from_fn_with_state(Arc::clone(&state), require_bearer))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}
