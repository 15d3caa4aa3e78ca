//! Renewing a stored login without a person: the refresh-token grant, or for a
//! machine-to-machine client the client-credentials grant again. Either request
//! carries the RFC 8707 `resource` and the client authentication the login was made
//! with; the access token itself never goes to the token endpoint.

use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use super::store::{Grant, TokenAuth, Tokens, now_secs};

/// How long one token request may take.
pub(crate) const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a renewal failed.
#[derive(Debug)]
pub(crate) enum RenewError {
    /// The server refused the grant for good (`invalid_grant`, `invalid_client`,
    /// `unauthorized_client`): a new login is needed.
    Rejected(String),
    /// Anything else (network, server error): the login may still work later.
    Failed(String),
}

impl std::fmt::Display for RenewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rejected(text) | Self::Failed(text) => f.write_str(text),
        }
    }
}

/// A token endpoint's successful answer.
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    pub(crate) access_token: String,
    #[serde(default)]
    pub(crate) refresh_token: Option<String>,
    #[serde(default)]
    pub(crate) expires_in: Option<u64>,
    #[serde(default)]
    pub(crate) scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// `login` with fresh tokens from its token endpoint.
///
/// # Errors
/// [`RenewError::Rejected`] when the server refuses the grant; otherwise
/// [`RenewError::Failed`].
pub(crate) async fn renew(http: &reqwest::Client, login: &Tokens) -> Result<Tokens, RenewError> {
    let mut form: Vec<(&str, String)> = Vec::new();
    match login.grant {
        Grant::AuthorizationCode => {
            let Some(refresh) = &login.refresh_token else {
                return Err(RenewError::Rejected("the login has no refresh token".to_owned()));
            };
            form.push(("grant_type", "refresh_token".to_owned()));
            form.push(("refresh_token", refresh.clone()));
        }
        Grant::ClientCredentials => {
            form.push(("grant_type", "client_credentials".to_owned()));
            if !login.scopes.is_empty() {
                form.push(("scope", login.scopes.join(" ")));
            }
        }
    }
    form.push(("resource", login.resource.clone()));
    let answer = token_request(http, login, form).await?;
    let mut renewed = login.clone();
    apply(&mut renewed, answer);
    Ok(renewed)
}

/// Puts a token response into `login`: a missing refresh token keeps the old one
/// (RFC 6749 §6), a missing scope keeps the scopes asked for.
pub(crate) fn apply(login: &mut Tokens, answer: TokenResponse) {
    let now = now_secs();
    login.access_token = answer.access_token;
    if answer.refresh_token.is_some() {
        login.refresh_token = answer.refresh_token;
    }
    login.issued_at = now;
    login.expires_at = answer.expires_in.map(|secs| now.saturating_add(secs));
    if let Some(scope) = answer.scope {
        login.scopes = scope.split_whitespace().map(str::to_owned).collect();
    }
}

/// One POST to the token endpoint with the client's authentication.
async fn token_request(
    http: &reqwest::Client,
    login: &Tokens,
    mut form: Vec<(&str, String)>,
) -> Result<TokenResponse, RenewError> {
    let mut request = http.post(&login.token_endpoint).timeout(TOKEN_TIMEOUT);
    match (login.token_auth, &login.client_secret) {
        (TokenAuth::ClientSecretBasic, Some(secret)) => {
            // RFC 6749 §2.3.1: both parts form-urlencoded before the Basic encoding.
            let pair = format!("{}:{}", form_encode(&login.client_id), form_encode(secret));
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            request = request.header(reqwest::header::AUTHORIZATION, format!("Basic {encoded}"));
        }
        (TokenAuth::ClientSecretPost, Some(secret)) => {
            form.push(("client_id", login.client_id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        _ => form.push(("client_id", login.client_id.clone())),
    }
    let endpoint = crate::redact::redact_url(&login.token_endpoint);
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let response = request
        .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(reqwest::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| {
            RenewError::Failed(format!("token request to {endpoint} failed: {}", e.without_url()))
        })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| {
        RenewError::Failed(format!("token request to {endpoint} failed: {}", e.without_url()))
    })?;
    if status.is_success() {
        return serde_json::from_slice(&body)
            .map_err(|e| RenewError::Failed(format!("unreadable token response from {endpoint}: {e}")));
    }
    match serde_json::from_slice::<ErrorResponse>(&body) {
        Ok(error) => {
            let text = format!(
                "the token endpoint {endpoint} answered {} ({})",
                error.error,
                crate::redact::clamp(error.error_description.as_deref().unwrap_or("no description"))
            );
            if matches!(
                error.error.as_str(),
                "invalid_grant" | "invalid_client" | "unauthorized_client"
            ) {
                Err(RenewError::Rejected(text))
            } else {
                Err(RenewError::Failed(text))
            }
        }
        Err(_) => Err(RenewError::Failed(format!(
            "the token endpoint {endpoint} answered HTTP {status}"
        ))),
    }
}

fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
