//! The bearer check every `/v1` request passes when a token is set (the token itself,
//! [`AuthToken`], is the shared rule of the `http-guard` crate).

use axum::http::{HeaderMap, StatusCode, header};
pub use http_guard::AuthToken;

use super::error::ApiError;

/// Whether `headers` carry `Authorization: Bearer <token>` (the scheme in any case).
fn authorized(token: &AuthToken, headers: &HeaderMap) -> bool {
    token.authorizes(headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()))
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

fn is_api_path(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
