//! [`AuthorizedClient`]: the HTTP client of a server that may ask for OAuth. Every
//! request carries the server's current access token (none before a login); a
//! `401` or `403 insufficient_scope` challenge is answered through the server's
//! [`ServerAuth`] and the request sent again, at most [`MAX_AUTHORIZATIONS`] times.
//! A refused request did not run, so sending it again replays nothing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::{MAX_AUTHORIZATIONS, ServerAuth};

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// `inner` with the server's OAuth tokens attached and its challenges answered.
#[derive(Clone)]
pub(crate) struct AuthorizedClient<C> {
    inner: C,
    auth: Arc<ServerAuth>,
}

impl<C> AuthorizedClient<C> {
    pub(crate) fn new(inner: C, auth: Arc<ServerAuth>) -> Self {
        Self { inner, auth }
    }

    /// Runs `call` with the current token, answering each challenge and calling
    /// again, at most [`MAX_AUTHORIZATIONS`] times; a request that came with its own
    /// token (a configured header) is sent as it is.
    async fn with_token<T, F, Fut>(&self, given: Option<String>, call: F) -> HttpResult<T>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = HttpResult<T>>,
    {
        if given.is_some() {
            return call(given).await;
        }
        let mut token = self.auth.token().await.map_err(refused)?;
        for _ in 0..MAX_AUTHORIZATIONS {
            let header = match call(token.clone()).await {
                Err(StreamableHttpError::AuthRequired(challenge)) => challenge.www_authenticate_header,
                Err(StreamableHttpError::InsufficientScope(challenge)) => challenge.www_authenticate_header,
                other => return other,
            };
            token = Some(
                self.auth
                    .recover(&header, token.as_deref())
                    .await
                    .map_err(refused)?,
            );
        }
        call(token).await
    }
}

fn refused(text: String) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::Auth(AuthError::AuthorizationFailed(text))
}

impl<C> StreamableHttpClient for AuthorizedClient<C>
where
    C: StreamableHttpClient<Error = reqwest::Error> + Sync,
{
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
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
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
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
        self.with_token(auth_header, |token| {
            self.inner.post_message_with_response_limits(
                Arc::clone(&uri),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        // Closing never starts an authorization: the current token or none.
        let token = match auth_header {
            Some(given) => Some(given),
            None => self.auth.token().await.ok().flatten(),
        };
        self.inner
            .delete_session(uri, session_id, token, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.with_token(auth_header, |token| {
            self.inner.get_stream_with_max_sse_event_size(
                Arc::clone(&uri),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
