//! Streamable HTTP (`mecated mcp serve --http-addr`): rmcp's session-keeping
//! service at `/mcp` (`Mcp-Session-Id`, idle sessions closed after 5 minutes,
//! bodies bounded while they stream) behind the guard every request passes first:
//! the one guard of the HTTP faces (the `http-guard` crate, the rule of `mecated
//! serve`): `Host`, `Origin` (the server's own or an allowed one; an allowed
//! origin's preflight is answered here), the bearer token on every path when one is
//! set, then a JSON body within [`MAX_MCP_BODY_BYTES`]. This face serves no page,
//! so no login cookie is accepted.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use axum::serve::ListenerExt as _;
use http_guard::{Admission, AllowedHost, AllowedOrigin, AuthToken, Face, Guard};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::handler::{Connection, Surface};
use crate::{McpServeError, McpServer};

/// The largest request body (8 MiB, as large as an ACP line: a call's arguments
/// may carry a file), enforced while the body streams.
pub const MAX_MCP_BODY_BYTES: usize = 8 * 1024 * 1024;

/// This face for the guard: the token on every path, no page (no login cookie),
/// what an MCP client in an allowed origin's page sends and reads.
const FACE: Face = Face {
    token_paths: None,
    login: None,
    cors_methods: "GET, POST, DELETE",
    cors_headers: "authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version",
    cors_expose: Some("mcp-session-id"),
    max_body_bytes: MAX_MCP_BODY_BYTES,
};

/// Who may reach the HTTP endpoint.
#[derive(Clone, Debug, Default)]
pub struct McpHttpOptions {
    /// The bearer token every request must carry (required off loopback; the
    /// command line refuses to listen there without one).
    pub auth_token: Option<AuthToken>,
    /// `Host` names accepted besides the loopback ones (any host once a token is
    /// set).
    pub allowed_hosts: Vec<AllowedHost>,
    /// `Origin`s accepted; a request from any other web page is refused.
    pub allowed_origins: Vec<AllowedOrigin>,
}

/// The MCP server on a bound listener.
#[derive(Debug)]
pub struct McpHttpServer {
    listener: TcpListener,
    router: Router,
    stop: CancellationToken,
}

impl McpHttpServer {
    /// Binds `addr` and prepares the endpoint `/mcp`.
    ///
    /// # Errors
    /// [`McpServeError::Listen`] when the address cannot be bound.
    pub async fn bind(
        server: &McpServer,
        addr: SocketAddr,
        options: McpHttpOptions,
    ) -> Result<Self, McpServeError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| McpServeError::Listen { addr, source })?;
        let stop = CancellationToken::new();
        let subject = options.auth_token.as_ref().map(AuthToken::fingerprint);
        let shared = Arc::clone(&server.shared);
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_max_request_body_bytes(MAX_MCP_BODY_BYTES)
            .with_cancellation_token(stop.child_token());
        let service = StreamableHttpService::new(
            move || {
                Ok(Connection::new(
                    Arc::clone(&shared),
                    Surface::Http {
                        subject: subject.clone(),
                    },
                ))
            },
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let guard = Arc::new(Guard::new(
            FACE,
            options.allowed_hosts,
            options.allowed_origins,
            options.auth_token,
        ));
        let router = Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn_with_state(guard, admit));
        Ok(Self {
            listener,
            router,
            stop,
        })
    }

    /// The bound address (the port the kernel picked for port 0).
    ///
    /// # Errors
    /// The socket's error.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then ends every MCP session (their calls
    /// are cancelled) and returns.
    ///
    /// # Errors
    /// [`McpServeError::Connection`] when the listener fails.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), McpServeError> {
        let stop = self.stop.clone();
        let graceful = async move {
            shutdown.await;
            stop.cancel();
        };
        // A `tools/call` answer is an SSE stream written in several small frames:
        // without TCP_NODELAY, Nagle's algorithm holds the later ones until the
        // client's delayed ACK, which some clients (Node's) make every call wait.
        let listener = self.listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY could not be set");
            }
        });
        axum::serve(listener, self.router)
            .with_graceful_shutdown(graceful)
            .await
            .map_err(|error| McpServeError::Connection(error.to_string()))
    }
}

/// Every request passes [`Guard::admit`]: a refusal (403, 401, 415, 413) is
/// answered with a JSON-RPC error body naming what is expected; an allowed origin's
/// preflight is answered at once, and its answers name it.
async fn admit(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.admit(request.method(), request.uri(), request.headers()) {
        Err(refused) => {
            let (status, message) = refused.into_parts();
            let mut response = refusal(status, &message);
            if status == StatusCode::UNAUTHORIZED {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            response
        }
        Ok(Admission::Preflight(origin)) => {
            let mut response = StatusCode::NO_CONTENT.into_response();
            response.headers_mut().extend(guard.preflight_headers(origin));
            response
        }
        Ok(Admission::Pass { cors }) => {
            let mut response = next.run(request).await;
            if let Some(origin) = cors {
                guard.add_cors(origin, response.headers_mut());
            }
            response
        }
    }
}

/// A refusal as a JSON-RPC error without an id (what MCP clients read).
fn refusal(status: StatusCode, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": message}});
    (status, axum::Json(body)).into_response()
}
