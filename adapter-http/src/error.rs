//! [`ApiError`]: an HTTP error answer — a status and `{"error": "<message>"}` — and
//! the one mapping of host, engine and store errors onto statuses.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use engine_core::EngineError;
use engine_ports::StoreError;

use engine_core::host::HostError;

/// An error answer: the status and a message for the caller (never a secret).
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
    /// Seconds for a `Retry-After` header (a refusal that is only for now).
    retry_after: Option<u32>,
}

impl ApiError {
    /// Any status with `message`.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same answer with `Retry-After: seconds`.
    pub(crate) fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// 400.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404.
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 404 for an unknown session, naming it.
    pub(crate) fn unknown_session(id: &str) -> Self {
        Self::not_found(format!("session {id:?} not found"))
    }

    /// 409.
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// 503 with `Retry-After` once the server drains or shuts down: new sessions
    /// and prompts belong on another replica (or this one after its restart).
    pub(crate) fn shutting_down() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down: it takes no new sessions or prompts; retry on another replica or after its restart",
        )
        .retry_after(RETRY_AFTER_SECS)
    }

    /// 500 for a store failure (its messages name ids and paths, never contents);
    /// 409 for a session another run holds.
    pub(crate) fn store(error: &StoreError) -> Self {
        if let StoreError::Busy { id } = error {
            return Self::from(EngineError::Busy(id.clone()));
        }
        tracing::warn!(%error, "a session store operation failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
    }

    /// The status.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

/// The `Retry-After` of a refusal that is only for now (draining, every live
/// session busy): a client retrying after it reaches another replica or a freed slot.
pub(crate) const RETRY_AFTER_SECS: u32 = 1;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(serde_json::json!({ "error": self.message }))).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mecated\""),
            );
        }
        // The rest of a body that came too slowly is never read: the connection ends.
        if self.status == StatusCode::REQUEST_TIMEOUT {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

impl From<HostError> for ApiError {
    fn from(error: HostError) -> Self {
        let status = match &error {
            HostError::TooManySessions { .. } => StatusCode::TOO_MANY_REQUESTS,
            HostError::InvalidClientServers(_) | HostError::ClientServersRejected { .. } => {
                StatusCode::BAD_REQUEST
            }
            HostError::ClientServersUnreachable { .. } | HostError::Closed => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = match &error {
            HostError::ClientServersRejected { .. } => format!("invalid mcp_servers: {error}"),
            _ => error.to_string(),
        };
        Self::new(status, message)
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        match error {
            busy @ EngineError::Busy(_) => Self::conflict(busy.to_string()),
            EngineError::Closed => Self::shutting_down(),
            EngineError::Store(error) => Self::store(&error),
            other => Self::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}
