//! One authorization: discovery, the client's identity, then either the
//! client-credentials grant (machine to machine) or the authorization-code flow with
//! PKCE S256 and `state` — the authorization URL (with the RFC 8707 `resource` and the
//! selected scopes) goes to a person's browser, or is fetched headlessly, and the code
//! comes back to the loopback redirect receiver, then is exchanged (rmcp's
//! `AuthorizationSession` builds the URL, keeps the verifier and state, and exchanges
//! the code).

use std::time::Duration;

use rmcp::transport::auth::{AuthorizationRequest, AuthorizationSession};

use super::discovery::{self, Challenge};
use super::loopback::Receiver;
use super::refresh;
use super::registration::{self, Identity};
use super::store::{Grant, TokenAuth, Tokens, now_secs};
use super::{AuthFailure, Authorizer, OAuthClientSettings};

/// How long the headless fetch of the authorization URL may take.
const HEADLESS_TIMEOUT: Duration = Duration::from_secs(30);

/// What an authorization needs besides the challenge.
pub(crate) struct Request<'a> {
    pub(crate) server: &'a str,
    pub(crate) server_url: &'a str,
    pub(crate) settings: &'a OAuthClientSettings,
    pub(crate) authorizer: &'a Authorizer,
    pub(crate) http: &'a reqwest::Client,
    /// The scopes to ask for (a step-up); empty: the challenge's, else the
    /// resource's `scopes_supported`, else none.
    pub(crate) scopes: Vec<String>,
}

/// Runs one authorization answering `challenge`.
///
/// # Errors
/// [`AuthFailure`]: discovery, registration, the person, the redirect or the
/// exchange failed.
pub(crate) async fn authorize(request: &Request<'_>, challenge: &Challenge) -> Result<Tokens, AuthFailure> {
    let server = request.server;
    let failed = |what: String| AuthFailure::Failed(format!("MCP server {server:?}: {what}"));
    let discovered = discovery::discover(server, request.server_url, challenge, request.http).await?;
    let metadata = discovered.metadata;
    if registration::uses_client_credentials(&metadata, request.settings) {
        return client_credentials(request, &metadata).await;
    }
    let receiver = Receiver::bind().await?;
    let identity = registration::identity(
        server,
        &metadata,
        request.settings,
        receiver.redirect_uri(),
        request.http,
    )
    .await?;
    let mut authorization =
        AuthorizationRequest::new(receiver.redirect_uri()).with_client_name(registration::CLIENT_NAME);
    let (client_secret, token_auth) = match &identity {
        Identity::Client {
            client_id,
            client_secret,
            token_auth,
        } => {
            authorization = authorization.with_preregistered_client(client_id);
            if let Some(secret) = client_secret {
                authorization = authorization.with_client_secret(secret);
            }
            (client_secret.clone(), *token_auth)
        }
        Identity::MetadataDocument(url) => {
            authorization = authorization.with_client_metadata_url(url);
            (None, TokenAuth::None)
        }
    };
    let scopes = if request.scopes.is_empty() {
        request.settings.scopes.clone()
    } else {
        request.scopes.clone()
    };
    authorization = if scopes.is_empty() {
        authorization.with_initial_scope_selection()
    } else {
        authorization.with_scopes(scopes)
    };
    let session = AuthorizationSession::new(
        discovered.manager,
        authorization.with_challenge(&challenge.header),
    )
    .await
    .map_err(|(_, e)| failed(format!("cannot start the authorization: {e}")))?;
    let url = session.get_authorization_url().to_owned();
    let parsed = url::Url::parse(&url).map_err(|e| failed(format!("unusable authorization URL: {e}")))?;
    let param = |key: &str| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    let (Some(state), Some(client_id)) = (param("state"), param("client_id")) else {
        return Err(failed(
            "the authorization URL lacks its state or client id".to_owned(),
        ));
    };
    let resource = param("resource").unwrap_or_else(|| request.server_url.to_owned());
    let callback = match request.authorizer {
        Authorizer::Browser(browser) => {
            (browser.open)(&url);
            receiver.wait(&state, browser.timeout, server).await?
        }
        Authorizer::Headless => {
            let visit = headless_visit(request.http, &url, receiver.redirect_uri());
            let (callback, visited) = tokio::join!(receiver.wait(&state, HEADLESS_TIMEOUT, server), visit);
            visited.map_err(failed)?;
            callback?
        }
        Authorizer::Stored => return Err(AuthFailure::NeedsLogin),
    };
    let token = session
        .handle_callback_with_issuer(&callback.code, &callback.state, callback.issuer.as_deref())
        .await
        .map_err(|e| failed(format!("the authorization code exchange failed: {e}")))?;
    // The response as its JSON fields (the `oauth2` types stay inside rmcp).
    let answer: refresh::TokenResponse = serde_json::to_value(&token)
        .and_then(serde_json::from_value)
        .map_err(|e| failed(format!("unreadable token response: {e}")))?;
    let requested: Vec<String> = param("scope")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut tokens = Tokens {
        resource,
        issuer: metadata.issuer.clone(),
        token_endpoint: metadata.token_endpoint.clone(),
        client_id,
        client_secret,
        token_auth,
        grant: Grant::AuthorizationCode,
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        issued_at: now_secs(),
        scopes: requested,
    };
    refresh::apply(&mut tokens, answer);
    Ok(tokens)
}

/// The client-credentials grant with the configured client id and secret.
async fn client_credentials(
    request: &Request<'_>,
    metadata: &rmcp::transport::auth::AuthorizationMetadata,
) -> Result<Tokens, AuthFailure> {
    let server = request.server;
    let (Some(client_id), Some(secret)) = (&request.settings.client_id, &request.settings.client_secret)
    else {
        return Err(AuthFailure::Failed(format!(
            "MCP server {server:?}: the client-credentials grant needs a client id and secret"
        )));
    };
    let skeleton = Tokens {
        resource: request.server_url.to_owned(),
        issuer: metadata.issuer.clone(),
        token_endpoint: metadata.token_endpoint.clone(),
        client_id: client_id.clone(),
        client_secret: Some(secret.clone()),
        token_auth: registration::token_auth(metadata, true, None),
        grant: Grant::ClientCredentials,
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        issued_at: now_secs(),
        scopes: if request.scopes.is_empty() {
            request.settings.scopes.clone()
        } else {
            request.scopes.clone()
        },
    };
    refresh::renew(request.http, &skeleton).await.map_err(|e| {
        AuthFailure::Failed(format!(
            "MCP server {server:?}: the client-credentials grant failed: {e}"
        ))
    })
}

/// Fetches the authorization URL without following redirects (a test authorization
/// server that grants at once answers with a redirect carrying the code) and
/// delivers the redirect to our receiver, as a browser would.
async fn headless_visit(http: &reqwest::Client, url: &str, redirect_uri: &str) -> Result<(), String> {
    let response = http
        .get(url)
        .timeout(HEADLESS_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("fetching the authorization URL failed: {}", e.without_url()))?;
    let status = response.status();
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| format!("the authorization URL answered HTTP {status} without a redirect"))?;
    let target =
        url::Url::parse(location).map_err(|e| format!("the authorization redirect is not a URL: {e}"))?;
    let expected = url::Url::parse(redirect_uri).map_err(|e| e.to_string())?;
    if target.origin() != expected.origin() || target.path() != expected.path() {
        return Err(format!(
            "the authorization server redirected to {} instead of {redirect_uri}",
            crate::redact::redact_url(location)
        ));
    }
    http.get(target)
        .timeout(HEADLESS_TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            format!(
                "delivering the authorization redirect failed: {}",
                e.without_url()
            )
        })?;
    Ok(())
}
