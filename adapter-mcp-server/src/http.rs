//! Streamable HTTP (`mecated mcp serve --http-addr`): rmcp's session-keeping
//! service at `/mcp` (`Mcp-Session-Id`, idle sessions closed after 5 minutes,
//! bodies bounded while they stream) behind the guard every request passes first:
//! `Host` and `Origin` by the shared rule of the `http-guard` crate (the rule of
//! `mecated serve`; a same-origin request passes too, since this server serves no
//! page another party could share its origin with), then the bearer token when
//! one is set.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use http_guard::{Admission, AllowedHost, AllowedOrigin, AuthToken};
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

/// What the guard checks, fixed at bind.
struct Guard {
    admission: Admission,
    token: Option<AuthToken>,
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
        let guard = Arc::new(Guard {
            admission: Admission::new(
                options.allowed_hosts,
                options.allowed_origins,
                options.auth_token.is_some(),
            )
            .with_same_origin(),
            token: options.auth_token,
        });
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
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(graceful)
            .await
            .map_err(|error| McpServeError::Connection(error.to_string()))
    }
}

/// Every request: `Host` (DNS rebinding), `Origin` (cross-site pages), then the
/// bearer token; 403 or 401 with a JSON-RPC error body naming what is expected.
async fn admit(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let hosts = headers
        .get_all(header::HOST)
        .iter()
        .map(|value| value.to_str().unwrap_or(""));
    let host = headers.get(header::HOST).and_then(|value| value.to_str().ok());
    let target = request.uri().authority().map(|authority| authority.as_str());
    let origins = headers
        .get_all(header::ORIGIN)
        .iter()
        .map(|value| value.to_str().unwrap_or(""));
    let admitted = guard
        .admission
        .check_host(hosts, target)
        .and_then(|()| guard.admission.check_origin(origins, host));
    if let Err(message) = admitted {
        return refusal(StatusCode::FORBIDDEN, &message);
    }
    if let Some(token) = &guard.token {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok());
        if !token.authorizes(authorization) {
            let mut response = refusal(
                StatusCode::UNAUTHORIZED,
                "missing or invalid bearer token: send Authorization: Bearer <token>",
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    next.run(request).await
}

/// A refusal as a JSON-RPC error without an id (what MCP clients read).
fn refusal(status: StatusCode, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": message}});
    (status, axum::Json(body)).into_response()
}
