//! [`AuthorizedClient`]: the HTTP client of a server that may ask for OAuth. Every
//! request carries the server's current access token (none before a login); a
//! `401` or `403 insufficient_scope` challenge is answered through the server's
//! [`ServerAuth`] and the request sent again, at most [`MAX_AUTHORIZATIONS`] times.
//! A refused request did not run, so sending it again replays nothing.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};

use crate::http::{HttpLayer, HttpResult, SseStream, Target};

use super::{MAX_AUTHORIZATIONS, ServerAuth};

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

/// `target` carrying `token` instead of the token it came with.
fn with_auth(target: &Target, token: Option<String>) -> Target {
    Target {
        auth_header: token,
        ..target.clone()
    }
}

impl<C: HttpLayer> HttpLayer for AuthorizedClient<C> {
    async fn post(
        &self,
        target: Target,
        session_id: Option<Arc<str>>,
        message: ClientJsonRpcMessage,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.with_token(target.auth_header.clone(), |token| {
            self.inner.post(
                with_auth(&target, token),
                session_id.clone(),
                message.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete(&self, target: Target, session_id: Arc<str>) -> HttpResult<()> {
        // Closing never starts an authorization: the current token or none.
        let token = match &target.auth_header {
            Some(given) => Some(given.clone()),
            None => self.auth.token().await.ok().flatten(),
        };
        self.inner.delete(with_auth(&target, token), session_id).await
    }

    async fn stream(
        &self,
        target: Target,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        max_sse_event_size: usize,
    ) -> HttpResult<SseStream> {
        self.with_token(target.auth_header.clone(), |token| {
            self.inner.stream(
                with_auth(&target, token),
                session_id.clone(),
                last_event_id.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
