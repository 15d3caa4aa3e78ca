//! `GET /metrics`: the process's metrics in the Prometheus text exposition format,
//! rendered by a function the composition root hands in ([`MetricsText`]), so this
//! face never depends on the telemetry adapter. Behind the bearer token when one is
//! set (like `/v1`); without a renderer the path is not found.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};

use super::error::ApiError;
use super::server::ServerState;

/// The content type of the Prometheus text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders the metrics page (the Prometheus text format); called once per scrape,
/// on a blocking thread.
#[derive(Clone)]
pub struct MetricsText(Arc<dyn Fn() -> String + Send + Sync>);

impl MetricsText {
    /// A page rendered by `render`.
    pub fn new(render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self(Arc::new(render))
    }
}

impl std::fmt::Debug for MetricsText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsText(..)")
    }
}

/// `GET /metrics` → 200 with the page, 404 without a renderer.
pub(crate) async fn metrics(State(state): State<Arc<ServerState>>) -> Response {
    let Some(render) = state.metrics.clone() else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "no metrics here: this server keeps none (OTEL_SDK_DISABLED is set)",
        )
        .into_response();
    };
    match tokio::task::spawn_blocking(move || (render.0)()).await {
        Ok(text) => ([(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], text).into_response(),
        Err(_) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "rendering the metrics failed").into_response()
        }
    }
}
