//! The checks every request passes before it is routed, in one place and in this
//! order: the `Host` header (DNS rebinding), the `Origin` header (cross-site pages),
//! the bearer token, then the body's type and declared length.
//!
//! A loopback listener is reachable by every web page the user opens: a page cannot
//! read a cross-origin answer, but it can send "simple" requests (`text/plain`
//! bodies, no preflight), and a DNS-rebinding page can even read answers, because
//! its own host name now resolves to 127.0.0.1. The browser still names the page's
//! host in `Host` and its origin in `Origin`, so a request is admitted only when
//! `Host` names a loopback host (or one the operator allowed; any host once a bearer
//! token protects the API), when it carries no `Origin` or an allowed one, and when
//! any body it has is declared `application/json` (which a page cannot send
//! cross-origin without a preflight that this server never approves).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use http_guard::{Admission, quoted};

use super::MAX_BODY_BYTES;
use super::auth::{AuthToken, check_bearer};
use super::error::ApiError;
use super::server::ServerState;

pub use http_guard::{AllowedHost, AllowedOrigin};

/// What the guard admits, fixed when the server binds.
#[derive(Debug)]
pub(crate) struct RequestPolicy {
    admission: Admission,
    auth_token: Option<AuthToken>,
}

impl RequestPolicy {
    pub(crate) fn new(
        allowed_hosts: Vec<AllowedHost>,
        allowed_origins: Vec<AllowedOrigin>,
        auth_token: Option<AuthToken>,
    ) -> Self {
        Self {
            admission: Admission::new(allowed_hosts, allowed_origins, auth_token.is_some()),
            auth_token,
        }
    }

    /// The bearer token, when one is required.
    pub(crate) fn auth_token(&self) -> Option<&AuthToken> {
        self.auth_token.as_ref()
    }

    /// Admits a request or says why not: 403 for the host or the origin, 401 for the
    /// token, 415 for a body that is not JSON, 413 for a declared length over the cap.
    pub(crate) fn admit(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
        self.check_host(uri, headers)?;
        self.check_origin(headers)?;
        check_bearer(self.auth_token.as_ref(), uri.path(), headers)?;
        check_content_type(headers)?;
        check_content_length(headers)
    }

    /// With a token any host passes (the token is the protection); without one,
    /// `Host` (and an absolute request target) must name a loopback or allowed host
    /// (the shared rule, [`Admission::check_host`]).
    fn check_host(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
        let hosts = headers
            .get_all(header::HOST)
            .iter()
            .map(|value| value.to_str().unwrap_or(""));
        let target = uri.authority().map(|authority| authority.as_str());
        self.admission
            .check_host(hosts, target)
            .map_err(|message| ApiError::new(StatusCode::FORBIDDEN, message))
    }

    /// A request without `Origin` (curl, SDKs) passes; with one, it must be allowed
    /// (the shared rule, [`Admission::check_origin`]).
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let origins = headers
            .get_all(header::ORIGIN)
            .iter()
            .map(|value| value.to_str().unwrap_or(""));
        self.admission
            .check_origin(origins, None)
            .map_err(|message| ApiError::new(StatusCode::FORBIDDEN, message))
    }
}

/// Middleware: every request passes [`RequestPolicy::admit`] before it is routed.
pub(crate) async fn check_request(
    State(state): State<Arc<ServerState>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(error) = state.policy.admit(request.uri(), request.headers()) {
        return error.into_response();
    }
    next.run(request).await
}

/// A request with a body, or one declaring a type, must declare `application/json`
/// (parameters such as `charset` allowed).
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    match headers.get(header::CONTENT_TYPE) {
        Some(value) => {
            let value = value.to_str().unwrap_or("");
            let essence = value.split(';').next().unwrap_or("").trim();
            if essence.eq_ignore_ascii_case("application/json") {
                Ok(())
            } else {
                Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!(
                        "Content-Type {} is not accepted: request bodies must be sent as application/json",
                        quoted(value)
                    ),
                ))
            }
        }
        None if has_body(headers) => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the request has a body but no Content-Type: send it as Content-Type: application/json",
        )),
        None => Ok(()),
    }
}

/// A declared `Content-Length` over the cap is refused before the body is read
/// (a chunked body is cut off at the cap while it is read).
fn check_content_length(headers: &HeaderMap) -> Result<(), ApiError> {
    match declared_length(headers) {
        Some(length) if length > MAX_BODY_BYTES as u64 => Err(body_too_large()),
        _ => Ok(()),
    }
}

/// 413 naming the cap.
pub(crate) fn body_too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is larger than {MAX_BODY_BYTES} bytes (1 MiB)"),
    )
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse().ok())
}

fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || declared_length(headers).is_some_and(|length| length > 0)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn policy(hosts: &[&str], origins: &[&str], token: Option<&str>) -> RequestPolicy {
        RequestPolicy::new(
            hosts.iter().map(|h| h.parse().unwrap()).collect(),
            origins.iter().map(|o| o.parse().unwrap()).collect(),
            token.and_then(AuthToken::new),
        )
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn status(policy: &RequestPolicy, pairs: &[(&str, &str)]) -> Option<StatusCode> {
        let uri: Uri = "/v1/sessions".parse().unwrap();
        policy.admit(&uri, &headers(pairs)).err().map(|e| e.status())
    }

    /// Asserts that a request with the headers `base` and `name: value` is admitted for
    /// each of `admitted` and refused with `refusal` for each of `refused`.
    fn assert_admits(
        policy: &RequestPolicy,
        base: &[(&str, &str)],
        name: &str,
        admitted: &[&str],
        refused: &[&str],
        refusal: StatusCode,
    ) {
        let cases = admitted.iter().map(|value| (value, None));
        for (value, expected) in cases.chain(refused.iter().map(|value| (value, Some(refusal)))) {
            let mut pairs = base.to_vec();
            pairs.push((name, value));
            assert_eq!(status(policy, &pairs), expected, "{name}: {value}");
        }
    }

    #[test]
    fn loopback_hosts_pass_with_or_without_a_port_in_any_case() {
        let open = policy(&[], &[], None);
        let loopback = [
            "localhost",
            "LOCALHOST:8081",
            "127.0.0.1",
            "127.0.0.1:1",
            "127.200.3.4:65535",
            "[::1]",
            "[::1]:8081",
            "[0:0:0:0:0:0:0:1]:8081",
        ];
        let others = [
            "rebind.evil.example:8081",
            "localhost.evil.example",
            "128.0.0.1",
            "0.0.0.0:8081",
            "[::2]:8081",
            "::1",
            "localhost:",
            "localhost:80:80",
            "localhost:x",
            "",
        ];
        assert_admits(&open, &[], "host", &loopback, &others, StatusCode::FORBIDDEN);
        assert_eq!(status(&open, &[]), Some(StatusCode::FORBIDDEN), "no Host");
        assert_eq!(
            status(&open, &[("host", "localhost"), ("host", "evil.example")]),
            Some(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn allowed_hosts_match_by_name_and_optionally_port() {
        let allowed = policy(&["Box.Internal", "other.internal:9000"], &[], None);
        assert_eq!(status(&allowed, &[("host", "box.internal:1234")]), None);
        assert_eq!(status(&allowed, &[("host", "BOX.INTERNAL")]), None);
        assert_eq!(status(&allowed, &[("host", "other.internal:9000")]), None);
        assert_eq!(
            status(&allowed, &[("host", "other.internal:9001")]),
            Some(StatusCode::FORBIDDEN)
        );
        assert!("".parse::<AllowedHost>().is_err());
        assert!("http://x".parse::<AllowedHost>().is_err());
        assert!("x/y".parse::<AllowedHost>().is_err());
    }

    #[test]
    fn a_token_lifts_the_host_check_but_not_the_origin_check() {
        let token = policy(&[], &[], Some("t"));
        let auth = ("authorization", "Bearer t");
        assert_eq!(status(&token, &[("host", "anything.example"), auth]), None);
        assert_eq!(
            status(&token, &[("host", "anything.example")]),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(
                &token,
                &[("host", "a.example"), ("origin", "http://a.example"), auth]
            ),
            Some(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn origins_must_be_listed_exactly() {
        let open = policy(&[], &["http://localhost:3000"], None);
        let host = ("host", "localhost:8081");
        let listed = ["http://localhost:3000", "HTTP://LOCALHOST:3000"];
        let others = [
            "http://localhost:3001",
            "https://localhost:3000",
            "null",
            "http://localhost",
        ];
        assert_admits(&open, &[host], "origin", &listed, &others, StatusCode::FORBIDDEN);
        assert!("null".parse::<AllowedOrigin>().is_err());
        assert!("http://a.example/path".parse::<AllowedOrigin>().is_err());
        assert!("a.example".parse::<AllowedOrigin>().is_err());
        assert!("https://a.example:8443".parse::<AllowedOrigin>().is_ok());
    }

    #[test]
    fn bodies_must_be_json_and_declared_lengths_within_the_cap() {
        let open = policy(&[], &[], None);
        let host = ("host", "127.0.0.1:8081");
        assert_eq!(status(&open, &[host]), None);
        assert_eq!(status(&open, &[host, ("content-length", "0")]), None);
        let json = ["application/json", "Application/JSON; charset=utf-8"];
        let others = [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ];
        let unsupported = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        assert_admits(&open, &[host], "content-type", &json, &others, unsupported);
        assert_eq!(
            status(&open, &[host, ("content-length", "2")]),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
        assert_eq!(
            status(&open, &[host, ("transfer-encoding", "chunked")]),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
        let json = ("content-type", "application/json");
        let cap = MAX_BODY_BYTES.to_string();
        let over = (MAX_BODY_BYTES + 1).to_string();
        assert_eq!(status(&open, &[host, json, ("content-length", &cap)]), None);
        assert_eq!(
            status(&open, &[host, json, ("content-length", &over)]),
            Some(StatusCode::PAYLOAD_TOO_LARGE)
        );
    }

    #[test]
    fn the_checks_run_host_origin_token_type_length() {
        let token = policy(&[], &[], Some("t"));
        let open = policy(&[], &[], None);
        let everything_wrong = [
            ("host", "evil.example"),
            ("origin", "http://evil.example"),
            ("content-type", "text/plain"),
            ("content-length", "99999999"),
        ];
        assert_eq!(status(&open, &everything_wrong), Some(StatusCode::FORBIDDEN));
        let error = open
            .admit(&"/v1/sessions".parse().unwrap(), &headers(&everything_wrong))
            .unwrap_err();
        assert!(
            error.message().contains("Host \"evil.example\""),
            "{}",
            error.message()
        );
        let error = open
            .admit(&"/".parse().unwrap(), &headers(&everything_wrong[1..]))
            .unwrap_err();
        assert!(error.message().contains("no Host header"), "{}", error.message());
        // Origin before the token, the token before the body checks.
        assert_eq!(status(&token, &everything_wrong), Some(StatusCode::FORBIDDEN));
        assert_eq!(
            status(&token, &everything_wrong[2..]),
            Some(StatusCode::UNAUTHORIZED)
        );
        let authorized = [
            ("authorization", "Bearer t"),
            everything_wrong[2],
            everything_wrong[3],
        ];
        assert_eq!(
            status(&token, &authorized),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
    }

    #[test]
    fn refused_values_are_quoted_short() {
        let long = "h".repeat(10_000);
        let open = policy(&[], &[], None);
        let error = open
            .admit(&"/".parse().unwrap(), &headers(&[("host", &long)]))
            .unwrap_err();
        assert!(error.message().len() < 400, "{}", error.message());
    }
}
