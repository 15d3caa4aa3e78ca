//! [`AuthToken`] and the check every `/v1` request passes when a token is set: the
//! bearer token, or the page's login cookie derived from it.

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

/// The name of the page's login cookie.
pub(crate) const LOGIN_COOKIE: &str = "mecated_login";

impl AuthToken {
    /// The value of the login cookie: a SHA-256 over the token's digest, so the
    /// cookie is not the token (it cannot be replayed as a bearer) and changes with it.
    fn cookie_digest(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(b"mecated login cookie v1\0");
        hasher.update(self.digest);
        let mut out = [0u8; 32];
        out.copy_from_slice(&hasher.finalize());
        out
    }

    /// The `Set-Cookie` value that logs the page in: `HttpOnly` (no script reads
    /// it), `SameSite=Strict` (no other site's page sends it), `Path=/`.
    pub(crate) fn login_cookie(&self) -> String {
        let value: String = self.cookie_digest().iter().map(|b| format!("{b:02x}")).collect();
        format!("{LOGIN_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/")
    }

    /// Whether `presented` is the login cookie's value (constant time, as the token).
    fn matches_cookie(&self, presented: &str) -> bool {
        let expected = sha256(
            self.cookie_digest()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .as_bytes(),
        );
        let presented = sha256(presented.as_bytes());
        let difference = expected
            .iter()
            .zip(presented.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(difference) == 0
    }
}

/// The `Set-Cookie` value that logs the page out (the cookie expires at once).
pub(crate) fn logout_cookie() -> String {
    format!("{LOGIN_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// How a request proved it may use the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Credential {
    /// No token is set: nothing to prove.
    Open,
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// The page's login cookie (the browser sends it by itself, so the guard checks
    /// the request's `Origin` as well).
    Cookie,
}

/// Whether `headers` carry the login cookie of `token`.
fn cookie_authorized(token: &AuthToken, headers: &HeaderMap) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(name, value)| name == LOGIN_COOKIE && token.matches_cookie(value.trim()))
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

/// With a token, every request under `/v1` must carry it (or the page's login
/// cookie), else 401 (the answer adds `WWW-Authenticate: Bearer`); `/healthz`, the
/// page and unknown paths outside `/v1` are open. Says which credential passed.
pub(crate) fn check_bearer(
    token: Option<&AuthToken>,
    path: &str,
    headers: &HeaderMap,
) -> Result<Credential, ApiError> {
    let Some(token) = token else {
        return Ok(Credential::Open);
    };
    if !is_api_path(path) {
        return Ok(Credential::Open);
    }
    if authorized(token, headers) {
        return Ok(Credential::Bearer);
    }
    if cookie_authorized(token, headers) {
        return Ok(Credential::Cookie);
    }
    Err(ApiError::new(
        StatusCode::UNAUTHORIZED,
        "missing or invalid bearer token: send Authorization: Bearer <token> (the page logs in at POST /login)",
    ))
}

fn is_api_path(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
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
    fn the_login_cookie_is_derived_from_the_token_and_checked_like_it() {
        let token = AuthToken::new("abc").unwrap();
        let cookie = token.login_cookie();
        assert!(cookie.starts_with("mecated_login="), "{cookie}");
        assert!(
            cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/"),
            "{cookie}"
        );
        assert!(!cookie.contains("abc;"), "the cookie is not the token: {cookie}");
        let value = cookie
            .strip_prefix("mecated_login=")
            .and_then(|rest| rest.split(';').next())
            .unwrap();
        let with_cookie = |cookie: &str| {
            let mut map = HeaderMap::new();
            map.insert(header::COOKIE, cookie.parse().unwrap());
            map
        };
        let path = "/v1/sessions";
        let sent = with_cookie(&format!("theme=dark; mecated_login={value}"));
        assert_eq!(
            check_bearer(Some(&token), path, &sent).unwrap(),
            Credential::Cookie
        );
        let other = AuthToken::new("abd").unwrap();
        assert!(check_bearer(Some(&other), path, &sent).is_err());
        assert!(check_bearer(Some(&token), path, &with_cookie("mecated_login=abc")).is_err());
        assert!(check_bearer(Some(&token), path, &with_cookie(&format!("other={value}"))).is_err());
        let mut bearer = HeaderMap::new();
        bearer.insert(header::AUTHORIZATION, format!("Bearer {value}").parse().unwrap());
        assert!(
            check_bearer(Some(&token), path, &bearer).is_err(),
            "the cookie's value is no bearer token"
        );
        assert_eq!(check_bearer(None, path, &sent).unwrap(), Credential::Open);
        assert!(logout_cookie().contains("Max-Age=0"));
    }
}
