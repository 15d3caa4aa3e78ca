//! The HTTP glue of the one guard every request passes before it is routed: the
//! rules (`Host`, `Origin`, CORS preflights, the bearer token or the page's login
//! cookie with its CSRF rule, the body's type and length) are the leaf
//! `http-guard` crate's, shared with the MCP server face; this module says what
//! this face is ([`FACE`]), answers a refusal as an [`ApiError`], an allowed
//! origin's preflight at once, and adds CORS headers to that origin's answers.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use http_guard::{Admission, Face, Refusal};

use super::MAX_BODY_BYTES;
use super::error::ApiError;
use super::server::ServerState;

/// This face for the guard: the token guards the API under `/v1` and the metrics page
/// at `/metrics` (which names the tools and models in use; the page, its assets,
/// `/healthz` and `/readyz` are open), the page logs in at `POST /login`, bodies are
/// JSON of at most [`MAX_BODY_BYTES`].
pub(crate) const FACE: Face = Face {
    token_paths: Some(&["/v1", "/metrics"]),
    login: Some("POST /login"),
    cors_methods: "GET, POST, PATCH, DELETE",
    cors_headers: "authorization, content-type, last-event-id",
    cors_expose: None,
    max_body_bytes: MAX_BODY_BYTES,
};

/// A refusal of the guard as this face's error answer (401 adds
/// `WWW-Authenticate: Bearer`).
pub(crate) fn refused(refusal: Refusal) -> ApiError {
    let (status, message) = refusal.into_parts();
    ApiError::new(status, message)
}

/// Middleware: every request passes [`http_guard::Guard::admit`] before it is
/// routed; an allowed origin's preflight is answered here, and its answers name it.
pub(crate) async fn check_request(
    State(state): State<Arc<ServerState>>,
    request: Request,
    next: Next,
) -> Response {
    let policy = &state.policy;
    match policy.admit(request.method(), request.uri(), request.headers()) {
        Err(refusal) => refused(refusal).into_response(),
        Ok(Admission::Preflight(origin)) => {
            let mut response = StatusCode::NO_CONTENT.into_response();
            response.headers_mut().extend(policy.preflight_headers(origin));
            response
        }
        Ok(Admission::Pass { cors }) => {
            let mut response = next.run(request).await;
            if let Some(origin) = cors {
                policy.add_cors(origin, response.headers_mut());
            }
            response
        }
    }
}
