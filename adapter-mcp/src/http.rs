//! Our own `reqwest` client for streamable-HTTP servers: same-origin 307/308 redirects
//! only (or none), so headers and the bearer token never reach another origin; pooled
//! keep-alive connections; and [`SessionAwareClient`], which recognises a lost session
//! whatever the server's SDK answers.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt as _;
use futures::stream::BoxStream;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use crate::calls::InFlightCalls;
use crate::config::Redirects;

/// Most redirect hops a request follows under [`Redirects::SameOrigin`].
pub(crate) const MAX_REDIRECTS: usize = 10;

/// Builds the HTTP client of one server.
///
/// Keep-alive connections are pooled (reqwest's defaults), so a call does not pay a
/// TCP handshake. A pooled connection the server closed is dropped from the pool when
/// its close is read; a request that raced such a close before being written is
/// retried by the connection pool itself, and one that failed to connect is "not
/// delivered" (resent once after a reconnect). `TCP_NODELAY` avoids the delayed-ACK
/// stall of small requests on a reused connection.
pub(crate) fn build_client(redirects: Redirects) -> Result<reqwest::Client, reqwest::Error> {
    let policy = match redirects {
        Redirects::None => reqwest::redirect::Policy::none(),
        Redirects::SameOrigin => same_origin_policy(),
    };
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .redirect(policy)
        .build()
}

/// The HTTP client one session's transport runs on: the server's pooled
/// `reqwest::Client`, plus the session's "lost" flag.
///
/// rmcp completes a pending request only when a reply names it. Servers tell a
/// client its session is gone in SDK-specific ways, and some of them would leave the
/// request waiting forever: the TypeScript SDK answers a stale `Mcp-Session-Id` with
/// HTTP 400 and a JSON-RPC error **without an id**, which rmcp can route to no one.
/// This wrapper turns every such answer into rmcp's typed `SessionExpired` (so the
/// request fails as "not delivered" and is resent once on a fresh session) and sets
/// the flag, so the next call reconnects before sending:
///
/// - a POST on a session answered by HTTP 404 (rmcp already says `SessionExpired`);
/// - a POST on a session answered by a JSON-RPC error without an id, whatever the
///   HTTP status (the server could not tie it to our request: it did not run it);
/// - the standalone GET stream of a session refused with a 4xx other than 405;
/// - any request after the flag was set (fails fast instead of dialling the dead
///   session).
///
/// It also tells a request at once when its reply goes over a size limit (a JSON
/// body, or an SSE event of its response stream): see `size_limit.rs`.
#[derive(Clone)]
pub(crate) struct SessionAwareClient {
    inner: reqwest::Client,
    lost: Arc<AtomicBool>,
    calls: Arc<InFlightCalls>,
}

impl SessionAwareClient {
    /// Wraps `inner` with a fresh flag, for the session whose requests are `calls`.
    pub(crate) fn new(inner: reqwest::Client, calls: Arc<InFlightCalls>) -> Self {
        Self {
            inner,
            lost: Arc::new(AtomicBool::new(false)),
            calls,
        }
    }

    /// The flag [`SessionAwareClient`] sets when the session is lost.
    pub(crate) fn lost_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.lost)
    }

    fn mark_lost(&self, why: &str) {
        if !self.lost.swap(true, Ordering::SeqCst) {
            tracing::debug!(why, "MCP session lost");
        }
    }

    fn check_post(
        &self,
        session_attached: bool,
        result: HttpResult<StreamableHttpPostResponse>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        match result {
            Ok(StreamableHttpPostResponse::Json(JsonRpcMessage::Error(error), _)) if error.id.is_none() => {
                if session_attached {
                    self.mark_lost("a JSON-RPC error without an id answered a POST on the session");
                    Err(StreamableHttpError::SessionExpired)
                } else {
                    Err(StreamableHttpError::UnexpectedServerResponse(
                        format!(
                            "the server answered with a JSON-RPC error that names no request: {} (code {})",
                            error.error.message, error.error.code.0
                        )
                        .into(),
                    ))
                }
            }
            Err(StreamableHttpError::SessionExpired) => {
                self.mark_lost("HTTP 404 on the session");
                Err(StreamableHttpError::SessionExpired)
            }
            other => other,
        }
    }

    fn check_stream(&self, session_attached: bool, result: HttpResult<SseStream>) -> HttpResult<SseStream> {
        if let Err(StreamableHttpError::Client(error)) = &result
            && session_attached
            && let Some(status) = error.status()
            && status.is_client_error()
            && status != reqwest::StatusCode::METHOD_NOT_ALLOWED
        {
            self.mark_lost("the session's GET stream was refused with a 4xx");
            return Err(StreamableHttpError::SessionExpired);
        }
        result
    }

    /// Tells request `id` when its reply went over a limit: the JSON body now, an
    /// SSE event of its response stream when the stream meets it. rmcp's own
    /// error for either ends the request too, but names neither the request nor
    /// the limit (and its SSE error type is private: it is known by its text).
    fn watch_size(
        &self,
        id: Option<RequestId>,
        limits: StreamableHttpResponseLimits,
        result: HttpResult<StreamableHttpPostResponse>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let Some(id) = id else {
            return result;
        };
        match result {
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                self.calls.too_large(Some(&id), max_size);
                Err(StreamableHttpError::ResponseBodyTooLarge { max_size })
            }
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                let calls = Arc::clone(&self.calls);
                let limit = limits.max_sse_event_size;
                let stream = stream.inspect(move |event| {
                    if let Err(SseError::Body(error)) = event
                        && error
                            .to_string()
                            .starts_with("SSE event exceeded the maximum size")
                    {
                        calls.too_large(Some(&id), limit);
                    }
                });
                Ok(StreamableHttpPostResponse::Sse(stream.boxed(), session))
            }
            other => other,
        }
    }

    fn fail_fast<T>(&self, session_attached: bool) -> Option<HttpResult<T>> {
        (session_attached && self.lost.load(Ordering::SeqCst))
            .then_some(Err(StreamableHttpError::SessionExpired))
    }
}

impl HttpLayer for SessionAwareClient {
    async fn post(
        &self,
        target: Target,
        session_id: Option<Arc<str>>,
        message: ClientJsonRpcMessage,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let attached = session_id.is_some();
        if let Some(refused) = self.fail_fast(attached) {
            return refused;
        }
        let id = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let result = self
            .inner
            .post_message_with_response_limits(
                target.uri,
                message,
                session_id,
                target.auth_header,
                target.headers,
                limits,
            )
            .await;
        self.watch_size(id, limits, self.check_post(attached, without_url(result)))
    }

    async fn delete(&self, target: Target, session_id: Arc<str>) -> HttpResult<()> {
        without_url(
            self.inner
                .delete_session(target.uri, session_id, target.auth_header, target.headers)
                .await,
        )
    }

    async fn stream(
        &self,
        target: Target,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        max_sse_event_size: usize,
    ) -> HttpResult<SseStream> {
        let attached = session_id.is_some();
        if let Some(refused) = self.fail_fast(attached) {
            return refused;
        }
        let result = self
            .inner
            .get_stream_with_max_sse_event_size(
                target.uri,
                session_id,
                last_event_id,
                target.auth_header,
                target.headers,
                max_sse_event_size,
            )
            .await;
        self.check_stream(attached, without_url(result))
    }
}

/// What every request of a session carries besides its session, body and limits.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) uri: Arc<str>,
    /// The bearer token (without `Bearer `), when one is configured or obtained.
    pub(crate) auth_header: Option<String>,
    /// The configured headers and the protocol's own (rmcp sets those).
    pub(crate) headers: HashMap<HeaderName, HeaderValue>,
}

impl Target {
    fn new(uri: Arc<str>, auth_header: Option<String>, headers: HashMap<HeaderName, HeaderValue>) -> Self {
        Self {
            uri,
            auth_header,
            headers,
        }
    }
}

/// An SSE response stream as rmcp reads it.
pub(crate) type SseStream = BoxStream<'static, Result<Sse, SseError>>;

/// What one request of our HTTP client gives.
pub(crate) type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// One layer of our streamable-HTTP client (session awareness, OAuth): the three
/// requests rmcp's transport makes, each with the transport's size limits.
///
/// rmcp's `StreamableHttpClient` has six methods, three of them variants that only
/// add a limit; [`Layered`] implements it once over a layer, so each layer writes
/// only the logic that is its own and no layer can forget a limit.
pub(crate) trait HttpLayer: Clone + Send + Sync + 'static {
    /// A POST of one JSON-RPC message, its response bounded by `limits`.
    fn post(
        &self,
        target: Target,
        session_id: Option<Arc<str>>,
        message: ClientJsonRpcMessage,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = HttpResult<StreamableHttpPostResponse>> + Send + '_;

    /// The DELETE that ends a session.
    fn delete(
        &self,
        target: Target,
        session_id: Arc<str>,
    ) -> impl Future<Output = HttpResult<()>> + Send + '_;

    /// The GET of an SSE stream, each event bounded by `max_sse_event_size` bytes.
    fn stream(
        &self,
        target: Target,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = HttpResult<SseStream>> + Send + '_;
}

/// rmcp's client trait over one [`HttpLayer`]: every variant forwards to the layer
/// with its limits (the defaults when rmcp passes none).
#[derive(Clone)]
pub(crate) struct Layered<L>(pub(crate) L);

impl<L: HttpLayer> StreamableHttpClient for Layered<L> {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let target = Target::new(uri, auth_header, custom_headers);
        self.0
            .post(
                target,
                session_id,
                message,
                StreamableHttpResponseLimits::default(),
            )
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        let target = Target::new(uri, auth_header, custom_headers);
        self.0.post(target, session_id, message, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let target = Target::new(uri, auth_header, custom_headers);
        self.0.post(target, session_id, message, limits).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let target = Target::new(uri, auth_header, custom_headers);
        self.0.delete(target, session_id).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<SseStream> {
        let target = Target::new(uri, auth_header, custom_headers);
        let limit = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.0.stream(target, session_id, last_event_id, limit).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<SseStream> {
        let target = Target::new(uri, auth_header, custom_headers);
        self.0
            .stream(target, session_id, last_event_id, max_sse_event_size)
            .await
    }
}

/// `result` with the URL taken out of a client error. rmcp logs transport errors
/// itself, and a URL can hold what a `${VAR}` expanded to (or a token in its query);
/// diagnostics name the endpoint on their own, as written.
fn without_url<T>(result: HttpResult<T>) -> HttpResult<T> {
    result.map_err(|error| match error {
        StreamableHttpError::Client(error) => StreamableHttpError::Client(error.without_url()),
        other => other,
    })
}

fn same_origin_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        if !keeps_body {
            let status = attempt.status();
            return attempt.error(format!(
                "refusing to follow HTTP {status}: only 307/308 redirects to the same origin are followed"
            ));
        }
        // `url::Origin` compares scheme, lowercased host and effective port.
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            return attempt.error("refusing to follow a redirect to another origin");
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        attempt.follow()
    })
}

/// The rmcp transport config of one HTTP server: rmcp's silent session re-init is
/// off (a 404 goes through our resilience rules), the bearer token travels as rmcp's
/// auth header and every other header as a custom header.
pub(crate) fn transport_config(
    url: &str,
    headers: Option<&HeaderMap>,
) -> StreamableHttpClientTransportConfig {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).reinit_on_expired_session(false);
    let Some(headers) = headers else {
        return config;
    };
    let mut custom: HashMap<HeaderName, HeaderValue> = HashMap::new();
    for (name, value) in headers {
        if name == AUTHORIZATION
            && let Some(token) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))
        {
            config = config.auth_header(token);
            continue;
        }
        custom.insert(name.clone(), value.clone());
    }
    if !custom.is_empty() {
        config = config.custom_headers(custom);
    }
    config
}
