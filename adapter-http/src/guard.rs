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
//! cross-origin without a preflight, approved only for `--allowed-origin` origins).
//!
//! The page this server serves is its own origin: `Origin: http://<Host>` passes.
//! With a token, the page logs in once and then carries an `HttpOnly;
//! SameSite=Strict` cookie, which the guard accepts like the bearer token but only
//! from the page itself: a cookie request naming another origin is refused, and a
//! state-changing one (not `GET`/`HEAD`) must name the page's origin (CSRF). Allowed
//! origins get CORS: their preflight `OPTIONS` is answered without the token (the
//! real request still needs it) and their answers carry
//! `Access-Control-Allow-Origin`; other origins' preflights are refused.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use super::MAX_BODY_BYTES;
use super::auth::{AuthToken, Credential, check_bearer};
use super::error::ApiError;
use super::server::ServerState;

/// The longest piece of a refused header value quoted back in an error.
const QUOTED_HEADER_CAP: usize = 100;

/// A `Host` the operator allows besides the loopback names (`--allowed-host`):
/// `NAME` matches that host name on any port, `NAME:PORT` only that port. Names
/// compare case-insensitively; IPv6 addresses are written in brackets (`[fd00::1]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowedHost {
    host: String,
    port: Option<u16>,
}

impl FromStr for AllowedHost {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        const EXPECTED: &str = "expected a host name or address with an optional port, such as \
                                mecatl.internal, mecatl.internal:8081 or [fd00::1]:8081";
        let lower = value.trim().to_ascii_lowercase();
        let valid_chars = lower
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']'));
        match split_authority(&lower) {
            Some((host, port)) if valid_chars && !host.is_empty() => Ok(Self {
                host: host.to_owned(),
                port,
            }),
            _ => Err(EXPECTED.to_owned()),
        }
    }
}

impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// An `Origin` the operator allows (`--allowed-origin`): `scheme://host[:port]`,
/// matched exactly (case-insensitively) against the whole `Origin` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowedOrigin(String);

impl FromStr for AllowedOrigin {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        const EXPECTED: &str = "expected an origin scheme://host[:port] without a path, such as \
                                http://localhost:3000 or https://app.example.com";
        let lower = value.trim().to_ascii_lowercase();
        let Some((scheme, authority)) = lower.split_once("://") else {
            return Err(EXPECTED.to_owned());
        };
        let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
        if !scheme_ok || AllowedHost::from_str(authority).is_err() {
            return Err(EXPECTED.to_owned());
        }
        Ok(Self(lower))
    }
}

impl fmt::Display for AllowedOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the guard admits, fixed when the server binds.
#[derive(Debug)]
pub(crate) struct RequestPolicy {
    allowed_hosts: Vec<AllowedHost>,
    allowed_origins: Vec<AllowedOrigin>,
    auth_token: Option<AuthToken>,
}

impl RequestPolicy {
    pub(crate) fn new(
        allowed_hosts: Vec<AllowedHost>,
        allowed_origins: Vec<AllowedOrigin>,
        auth_token: Option<AuthToken>,
    ) -> Self {
        Self {
            allowed_hosts,
            allowed_origins,
            auth_token,
        }
    }

    /// The bearer token, when one is required.
    pub(crate) fn auth_token(&self) -> Option<&AuthToken> {
        self.auth_token.as_ref()
    }

    /// Admits a request or says why not: 403 for the host or the origin, 401 for the
    /// token, 403 for a cookie request without the page's origin, 415 for a body that
    /// is not JSON, 413 for a declared length over the cap. A CORS preflight of an
    /// allowed origin is admitted before the token check, as [`Admission::Preflight`].
    pub(crate) fn admit(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<Admission, ApiError> {
        self.check_host(uri, headers)?;
        let origin = self.check_origin(headers)?;
        let cors = match &origin {
            Some(RequestOrigin::Allowed(value)) => Some(value.clone()),
            _ => None,
        };
        if method == Method::OPTIONS
            && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
            && let Some(origin) = cors
        {
            return Ok(Admission::Preflight(origin));
        }
        let credential = check_bearer(self.auth_token.as_ref(), uri.path(), headers)?;
        if credential == Credential::Cookie {
            check_cookie_origin(method, origin.as_ref())?;
        }
        check_content_type(headers)?;
        check_content_length(headers)?;
        Ok(Admission::Pass { cors })
    }

    /// With a token any host passes (the token is the protection); without one,
    /// `Host` (and an absolute request target) must name a loopback or allowed host.
    fn check_host(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
        if self.auth_token.is_some() {
            return Ok(());
        }
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(value), None) => value.to_str().unwrap_or(""),
            (None, _) => return Err(self.host_refused("the request has no Host header")),
            (Some(_), Some(_)) => return Err(self.host_refused("the request has more than one Host header")),
        };
        if !self.host_allowed(host) {
            return Err(self.host_refused(&format!("Host {} is not allowed", quoted(host))));
        }
        if let Some(authority) = uri.authority()
            && !self.host_allowed(authority.as_str())
        {
            return Err(self.host_refused(&format!(
                "the request target names host {}, which is not allowed",
                quoted(authority.as_str())
            )));
        }
        Ok(())
    }

    fn host_allowed(&self, value: &str) -> bool {
        let lower = value.trim().to_ascii_lowercase();
        let Some((host, port)) = split_authority(&lower) else {
            return false;
        };
        is_loopback_name(host)
            || self
                .allowed_hosts
                .iter()
                .any(|allowed| allowed.host == host && allowed.port.is_none_or(|p| Some(p) == port))
    }

    fn host_refused(&self, what: &str) -> ApiError {
        let extra = if self.allowed_hosts.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = self.allowed_hosts.iter().map(ToString::to_string).collect();
            format!(", or one of {}", names.join(", "))
        };
        ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "{what}: expected Host localhost, 127.0.0.1 or [::1] (any port){extra}; \
                 allow more with --allowed-host, or set an auth token"
            ),
        )
    }

    /// A request without `Origin` (curl, SDKs) passes; with one, it must be the
    /// page's own (`http://<Host>`) or allowed; more than one `Origin` is refused.
    fn check_origin(&self, headers: &HeaderMap) -> Result<Option<RequestOrigin>, ApiError> {
        let mut values = headers.get_all(header::ORIGIN).iter();
        let (value, more) = (values.next(), values.next());
        let Some(value) = value else {
            return Ok(None);
        };
        let origin = value.to_str().unwrap_or("").trim();
        if more.is_none() {
            if is_same_origin(origin, headers) {
                return Ok(Some(RequestOrigin::Same));
            }
            if self
                .allowed_origins
                .iter()
                .any(|allowed| allowed.0.eq_ignore_ascii_case(origin))
            {
                return Ok(Some(RequestOrigin::Allowed(value.clone())));
            }
        }
        let expected = if self.allowed_origins.is_empty() {
            "no Origin header, or this server's own page (requests from other web pages are refused unless --allowed-origin names their origin)"
                .to_owned()
        } else {
            let names: Vec<String> = self.allowed_origins.iter().map(ToString::to_string).collect();
            format!(
                "no Origin header, this server's own page, or one of {} (--allowed-origin)",
                names.join(", ")
            )
        };
        let what = if more.is_some() {
            "more than one Origin header is sent".to_owned()
        } else {
            format!("Origin {} is not allowed", quoted(origin))
        };
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("{what}: expected {expected}"),
        ))
    }
}

/// Where an admitted request's `Origin` points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RequestOrigin {
    /// The page this server serves (`http://<Host>`).
    Same,
    /// An `--allowed-origin` origin (its value as sent).
    Allowed(HeaderValue),
}

/// What the guard decided for an admitted request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Route it; answers to an allowed origin carry CORS headers naming it.
    Pass {
        /// The allowed origin the answer names.
        cors: Option<HeaderValue>,
    },
    /// A CORS preflight of an allowed origin: answered here, without the token.
    Preflight(HeaderValue),
}

/// The methods and request headers a preflight of an allowed origin is told.
const CORS_METHODS: &str = "GET, POST, PATCH, DELETE";
const CORS_HEADERS: &str = "authorization, content-type, last-event-id";

/// Whether `origin` is the page's own: `http://` and the request's `Host`.
fn is_same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return false;
    };
    let host = host.to_str().unwrap_or("").trim();
    !host.is_empty()
        && origin
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
        && origin[7..].eq_ignore_ascii_case(host)
}

/// The login cookie is accepted from the page only: a request naming another
/// origin is refused, and a state-changing one must name the page's (CSRF).
fn check_cookie_origin(method: &Method, origin: Option<&RequestOrigin>) -> Result<(), ApiError> {
    let safe = matches!(*method, Method::GET | Method::HEAD);
    match origin {
        Some(RequestOrigin::Same) => Ok(()),
        None if safe => Ok(()),
        Some(RequestOrigin::Allowed(_)) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "the login cookie is accepted only from this server's own page: \
             requests from other origins send Authorization: Bearer <token>",
        )),
        None => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "a {method} request authenticated by the login cookie must carry the page's Origin \
                 (http://<Host>); send Authorization: Bearer <token> from other clients"
            ),
        )),
    }
}

/// Middleware: every request passes [`RequestPolicy::admit`] before it is routed;
/// an allowed origin's preflight is answered here, and its answers name it.
pub(crate) async fn check_request(
    State(state): State<Arc<ServerState>>,
    request: Request,
    next: Next,
) -> Response {
    match state
        .policy
        .admit(request.method(), request.uri(), request.headers())
    {
        Err(error) => error.into_response(),
        Ok(Admission::Preflight(origin)) => {
            let mut response = StatusCode::NO_CONTENT.into_response();
            let headers = response.headers_mut();
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(CORS_METHODS),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(CORS_HEADERS),
            );
            headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
            headers.insert(header::VARY, HeaderValue::from_static("origin"));
            response
        }
        Ok(Admission::Pass { cors }) => {
            let mut response = next.run(request).await;
            if let Some(origin) = cors {
                let headers = response.headers_mut();
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
                headers.append(header::VARY, HeaderValue::from_static("origin"));
            }
            response
        }
    }
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

/// `host[:port]` or `[v6][:port]` → the host (brackets kept) and the port; `None`
/// for anything else.
fn split_authority(value: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if value.starts_with('[') {
        let end = value.find(']')?;
        let (host, rest) = value.split_at(end + 1);
        match rest {
            "" => (host, None),
            _ => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match value.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (value, None),
        }
    };
    let port = match port {
        None => None,
        Some(port) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            Some(port.parse().ok()?)
        }
        Some(_) => return None,
    };
    Some((host, port))
}

/// `localhost`, any `127.x.y.z`, or `[::1]` (already lower-case, port removed).
fn is_loopback_name(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
    }
    host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// A header value quoted for an error message, cut to [`QUOTED_HEADER_CAP`] bytes.
fn quoted(value: &str) -> String {
    if value.len() <= QUOTED_HEADER_CAP {
        return format!("{value:?}");
    }
    let mut end = QUOTED_HEADER_CAP;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}…", &value[..end])
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
        method_status(policy, &Method::GET, pairs)
    }

    fn method_status(policy: &RequestPolicy, method: &Method, pairs: &[(&str, &str)]) -> Option<StatusCode> {
        let uri: Uri = "/v1/sessions".parse().unwrap();
        policy
            .admit(method, &uri, &headers(pairs))
            .err()
            .map(|e| e.status())
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
                &[("host", "a.example"), ("origin", "http://b.example"), auth]
            ),
            Some(StatusCode::FORBIDDEN)
        );
        // The page served under that host is its own origin.
        assert_eq!(
            status(
                &token,
                &[("host", "a.example"), ("origin", "http://a.example"), auth]
            ),
            None
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
            ("origin", "http://other.example"),
            ("content-type", "text/plain"),
            ("content-length", "99999999"),
        ];
        assert_eq!(status(&open, &everything_wrong), Some(StatusCode::FORBIDDEN));
        let error = open
            .admit(
                &Method::GET,
                &"/v1/sessions".parse().unwrap(),
                &headers(&everything_wrong),
            )
            .unwrap_err();
        assert!(
            error.message().contains("Host \"evil.example\""),
            "{}",
            error.message()
        );
        let error = open
            .admit(
                &Method::GET,
                &"/".parse().unwrap(),
                &headers(&everything_wrong[1..]),
            )
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
            .admit(&Method::GET, &"/".parse().unwrap(), &headers(&[("host", &long)]))
            .unwrap_err();
        assert!(error.message().len() < 400, "{}", error.message());
    }

    #[test]
    fn the_pages_own_origin_passes_and_others_do_not() {
        let open = policy(&[], &[], None);
        let host = ("host", "127.0.0.1:8081");
        let own = ["http://127.0.0.1:8081", "HTTP://127.0.0.1:8081"];
        let others = [
            "https://127.0.0.1:8081",
            "http://127.0.0.1:8082",
            "http://127.0.0.1",
            "http://evil.example",
        ];
        assert_admits(&open, &[host], "origin", &own, &others, StatusCode::FORBIDDEN);
        assert_eq!(
            status(
                &open,
                &[
                    host,
                    ("origin", "http://127.0.0.1:8081"),
                    ("origin", "http://127.0.0.1:8081")
                ]
            ),
            Some(StatusCode::FORBIDDEN),
            "two Origin headers"
        );
    }

    #[test]
    fn preflights_of_allowed_origins_pass_without_the_token_and_others_are_refused() {
        let token = policy(&[], &["http://localhost:3000"], Some("t"));
        let preflight = |origin: &str| {
            let pairs = [
                ("host", "127.0.0.1:8081"),
                ("origin", origin),
                ("access-control-request-method", "POST"),
            ];
            token.admit(
                &Method::OPTIONS,
                &"/v1/sessions".parse().unwrap(),
                &headers(&pairs),
            )
        };
        assert_eq!(
            preflight("http://localhost:3000").unwrap(),
            Admission::Preflight(HeaderValue::from_static("http://localhost:3000"))
        );
        assert_eq!(
            preflight("http://evil.example").unwrap_err().status(),
            StatusCode::FORBIDDEN
        );
        // Not a preflight without Access-Control-Request-Method: the token is needed.
        let plain = [("host", "127.0.0.1:8081"), ("origin", "http://localhost:3000")];
        assert_eq!(
            method_status(&token, &Method::OPTIONS, &plain),
            Some(StatusCode::UNAUTHORIZED)
        );
        // The real request needs the token, and its answer names the origin.
        assert_eq!(
            method_status(&token, &Method::POST, &plain),
            Some(StatusCode::UNAUTHORIZED)
        );
        let authorized = [plain[0], plain[1], ("authorization", "Bearer t")];
        assert_eq!(
            token
                .admit(
                    &Method::POST,
                    &"/v1/sessions".parse().unwrap(),
                    &headers(&authorized)
                )
                .unwrap(),
            Admission::Pass {
                cors: Some(HeaderValue::from_static("http://localhost:3000"))
            }
        );
    }

    #[test]
    fn the_login_cookie_needs_the_pages_origin_to_change_anything() {
        let token = policy(&[], &["http://localhost:3000"], Some("t"));
        let set_cookie = AuthToken::new("t").unwrap().login_cookie();
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        let host = ("host", "127.0.0.1:8081");
        let with_cookie = ("cookie", cookie.as_str());
        let own = ("origin", "http://127.0.0.1:8081");
        let allowed = ("origin", "http://localhost:3000");
        assert_eq!(method_status(&token, &Method::GET, &[host, with_cookie]), None);
        assert_eq!(
            method_status(&token, &Method::GET, &[host, with_cookie, own]),
            None
        );
        assert_eq!(
            method_status(&token, &Method::POST, &[host, with_cookie, own]),
            None
        );
        assert_eq!(
            method_status(&token, &Method::DELETE, &[host, with_cookie, own]),
            None
        );
        let forbidden = Some(StatusCode::FORBIDDEN);
        assert_eq!(
            method_status(&token, &Method::POST, &[host, with_cookie]),
            forbidden
        );
        assert_eq!(
            method_status(&token, &Method::PATCH, &[host, with_cookie]),
            forbidden
        );
        assert_eq!(
            method_status(&token, &Method::GET, &[host, with_cookie, allowed]),
            forbidden
        );
        assert_eq!(
            method_status(&token, &Method::POST, &[host, with_cookie, allowed]),
            forbidden
        );
        // The bearer token needs no Origin.
        assert_eq!(
            method_status(&token, &Method::POST, &[host, ("authorization", "Bearer t")]),
            None
        );
    }
}
