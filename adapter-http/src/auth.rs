//! [`AuthToken`] and the bearer check every `/v1` request passes when a token is set.

use axum::http::{HeaderMap, StatusCode, header};
use sha2::{Digest as _, Sha256};

use super::error::ApiError;

/// The bearer token of the API (`MECATED_AUTH_TOKEN` or `--auth-token`).
///
/// Only its SHA-256 digest is kept; a presented token is hashed the same way and the
/// digests are compared in constant time, so neither the length nor a common prefix
/// shows in the timing. `Debug` never shows it.
#[derive(Clone)]
pub struct AuthToken {
    digest: [u8; 32],
}

impl AuthToken {
    /// The token `secret`; `None` when it is empty (an empty token protects nothing).
    pub fn new(secret: &str) -> Option<Self> {
        (!secret.is_empty()).then(|| Self {
            digest: sha256(secret.as_bytes()),
        })
    }

    /// Whether `presented` is the token (constant time in the secret).
    pub fn matches(&self, presented: &str) -> bool {
        let presented = sha256(presented.as_bytes());
        let difference = self
            .digest
            .iter()
            .zip(presented.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(difference) == 0
    }
}

impl std::fmt::Debug for AuthToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthToken(<redacted>)")
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&Sha256::digest(bytes));
    out
}

/// Whether `headers` carry `Authorization: Bearer <token>` (the scheme in any case).
fn authorized(token: &AuthToken, headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((scheme, presented)) = value.trim().split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") && token.matches(presented.trim())
}

/// With a token, every request under `/v1` must carry it, else 401 (the answer adds
/// `WWW-Authenticate: Bearer`); `/healthz` and unknown paths outside `/v1` are open.
pub(crate) fn check_bearer(
    token: Option<&AuthToken>,
    path: &str,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    match token {
        Some(token) if is_api_path(path) && !authorized(token, headers) => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing or invalid bearer token: send Authorization: Bearer <token>",
        )),
        _ => Ok(()),
    }
}

/// The paths behind the token: the API and the metrics page (which names the tools
/// and models in use).
fn is_api_path(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/") || path == "/metrics"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_themselves_and_never_show() {
        let token = AuthToken::new("s3cr3t").unwrap();
        assert!(token.matches("s3cr3t"));
        assert!(!token.matches("s3cr3"));
        assert!(!token.matches("s3cr3t "));
        assert!(!token.matches(""));
        assert!(AuthToken::new("").is_none());
        assert!(!format!("{token:?}").contains("s3cr3t"));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_required() {
        let token = AuthToken::new("abc").unwrap();
        let headers = |value: &str| {
            let mut map = HeaderMap::new();
            map.insert(header::AUTHORIZATION, value.parse().unwrap());
            map
        };
        assert!(authorized(&token, &headers("Bearer abc")));
        assert!(authorized(&token, &headers("bearer abc")));
        assert!(!authorized(&token, &headers("Basic abc")));
        assert!(!authorized(&token, &headers("Bearer abd")));
        assert!(!authorized(&token, &headers("abc")));
        assert!(!authorized(&token, &HeaderMap::new()));
        assert!(is_api_path("/v1/sessions"));
        assert!(!is_api_path("/healthz"));
        assert!(!is_api_path("/v10"));
    }

    #[test]
    fn the_metrics_page_is_behind_the_token() {
        let token = AuthToken::new("abc").unwrap();
        assert!(check_bearer(Some(&token), "/metrics", &HeaderMap::new()).is_err());
        assert!(check_bearer(None, "/metrics", &HeaderMap::new()).is_ok());
        assert!(check_bearer(Some(&token), "/healthz", &HeaderMap::new()).is_ok());
    }
}
