//! [`Guard`]: the checks every request to an HTTP face passes before it is routed,
//! in this order: `Host`, `Origin`, a CORS preflight of an allowed origin, the
//! credential (bearer token, or the page's login cookie with the CSRF rule), then
//! the body's declared type and length.

use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};

use crate::names::{AllowedHost, AllowedOrigin, is_loopback_name, quoted, split_authority};
use crate::token::AuthToken;

/// What differs between the faces that share the guard, fixed in each face's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Face {
    /// The path prefixes under which the token is required (`/v1` covers `/v1` and
    /// `/v1/…`); `None`: every path.
    pub token_paths: Option<&'static [&'static str]>,
    /// Where the face's own page logs in (`POST /login`), when it serves one: its
    /// login cookie is then accepted like the token, from the page only.
    pub login: Option<&'static str>,
    /// The methods an allowed origin's preflight is told.
    pub cors_methods: &'static str,
    /// The request headers an allowed origin's preflight is told.
    pub cors_headers: &'static str,
    /// The answer headers an allowed origin's script may read, if any beyond the
    /// CORS-safelisted ones.
    pub cors_expose: Option<&'static str>,
    /// The largest request body, in bytes; a larger declared `Content-Length` is
    /// refused before the body is read.
    pub max_body_bytes: usize,
}

/// A refused request: the status to answer with and why (naming what is expected).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// 403, 401, 415 or 413.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// What was refused and what is expected instead.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The status and the message.
    pub fn into_parts(self) -> (StatusCode, String) {
        (self.status, self.message)
    }
}

/// What the guard decided for an admitted request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Route it; answers to an allowed origin carry the CORS headers naming it
    /// ([`Guard::add_cors`]).
    Pass {
        /// The allowed origin the answer names.
        cors: Option<HeaderValue>,
    },
    /// A CORS preflight of an allowed origin: answered by the face at once (204 with
    /// [`Guard::preflight_headers`]), without the token.
    Preflight(HeaderValue),
}

/// Where an admitted request's `Origin` points.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RequestOrigin {
    /// The server's own (`http://<Host>`): the page it serves.
    Same,
    /// An `--allowed-origin` origin (its value as sent).
    Allowed(HeaderValue),
}

/// How a request proved it may use the face.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Credential {
    /// No token is set, or the path needs none: nothing to prove.
    Open,
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// The page's login cookie (the browser sends it by itself, so the guard checks
    /// the request's `Origin` as well).
    Cookie,
}

/// Who may reach a face, fixed when it binds.
#[derive(Clone, Debug)]
pub struct Guard {
    face: Face,
    allowed_hosts: Vec<AllowedHost>,
    allowed_origins: Vec<AllowedOrigin>,
    auth_token: Option<AuthToken>,
}

impl Guard {
    /// The guard of `face` with the operator's allowances and token.
    pub fn new(
        face: Face,
        allowed_hosts: Vec<AllowedHost>,
        allowed_origins: Vec<AllowedOrigin>,
        auth_token: Option<AuthToken>,
    ) -> Self {
        Self {
            face,
            allowed_hosts,
            allowed_origins,
            auth_token,
        }
    }

    /// The bearer token, when one is required.
    pub fn auth_token(&self) -> Option<&AuthToken> {
        self.auth_token.as_ref()
    }

    /// Admits a request or says why not: 403 for the host or the origin, 401 for the
    /// credential, 403 for a cookie request without the page's origin, 415 for a
    /// body that is not JSON, 413 for a declared length over the cap. A CORS
    /// preflight of an allowed origin is admitted before the credential check, as
    /// [`Admission::Preflight`].
    ///
    /// # Errors
    /// The [`Refusal`] to answer with.
    pub fn admit(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<Admission, Refusal> {
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
        if self.check_credential(uri.path(), headers)? == Credential::Cookie {
            check_cookie_origin(method, origin.as_ref())?;
        }
        check_content_type(headers)?;
        self.check_content_length(headers)?;
        Ok(Admission::Pass { cors })
    }

    /// The headers of the 204 answering an allowed origin's preflight.
    pub fn preflight_headers(&self, origin: HeaderValue) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        for (name, value) in [
            (header::ACCESS_CONTROL_ALLOW_METHODS, self.face.cors_methods),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, self.face.cors_headers),
            (header::ACCESS_CONTROL_MAX_AGE, "600"),
            (header::VARY, "origin"),
        ] {
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.insert(name, value);
            }
        }
        headers
    }

    /// Adds to an admitted request's answer the CORS headers naming its allowed
    /// origin.
    pub fn add_cors(&self, origin: HeaderValue, headers: &mut HeaderMap) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.append(header::VARY, HeaderValue::from_static("origin"));
        if let Some(value) = self
            .face
            .cors_expose
            .and_then(|expose| HeaderValue::from_str(expose).ok())
        {
            headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, value);
        }
    }

    /// 413 naming the cap (also for a chunked body cut off at the cap while it is
    /// read).
    pub fn body_too_large(&self) -> Refusal {
        const MIB: usize = 1024 * 1024;
        let cap = self.face.max_body_bytes;
        let mib = if cap > 0 && cap.is_multiple_of(MIB) {
            format!(" ({} MiB)", cap / MIB)
        } else {
            String::new()
        };
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {cap} bytes{mib}"),
        )
    }

    /// With a token any host passes (the token is the protection); without one,
    /// `Host` (and an absolute request target) must name a loopback or allowed host.
    fn check_host(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
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
                .any(|allowed| allowed.admits(host, port))
    }

    fn host_refused(&self, what: &str) -> Refusal {
        let extra = if self.allowed_hosts.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = self.allowed_hosts.iter().map(ToString::to_string).collect();
            format!(", or one of {}", names.join(", "))
        };
        Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "{what}: expected Host localhost, 127.0.0.1 or [::1] (any port){extra}; \
                 allow more with --allowed-host, or set an auth token"
            ),
        )
    }

    /// A request without `Origin` (curl, SDKs) passes; with one, it must be the
    /// server's own (`http://<Host>`: only a page served at this very host and port
    /// has it, and a rebinding page's `Host` is its own name) or allowed; more than
    /// one `Origin` is refused.
    fn check_origin(&self, headers: &HeaderMap) -> Result<Option<RequestOrigin>, Refusal> {
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
            if self.allowed_origins.iter().any(|allowed| allowed.admits(origin)) {
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
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!("{what}: expected {expected}"),
        ))
    }

    /// With a token, every request under the face's token paths must carry it (or,
    /// on a face with a page, the page's login cookie), else 401. Says which
    /// credential passed.
    fn check_credential(&self, path: &str, headers: &HeaderMap) -> Result<Credential, Refusal> {
        let Some(token) = &self.auth_token else {
            return Ok(Credential::Open);
        };
        if let Some(prefixes) = self.face.token_paths
            && !prefixes.iter().any(|prefix| under(path, prefix))
        {
            return Ok(Credential::Open);
        }
        let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        if token.authorizes(authorization) {
            return Ok(Credential::Bearer);
        }
        if let Some(login) = self.face.login {
            let cookies = headers
                .get_all(header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok());
            if token.cookie_among(cookies) {
                return Ok(Credential::Cookie);
            }
            return Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                format!(
                    "missing or invalid bearer token: send Authorization: Bearer <token> (the page logs in at {login})"
                ),
            ));
        }
        Err(Refusal::new(
            StatusCode::UNAUTHORIZED,
            "missing or invalid bearer token: send Authorization: Bearer <token>",
        ))
    }

    /// A declared `Content-Length` over the cap is refused before the body is read.
    fn check_content_length(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        match declared_length(headers) {
            Some(length) if length > self.face.max_body_bytes as u64 => Err(self.body_too_large()),
            _ => Ok(()),
        }
    }
}

/// Whether `path` is `prefix` or below it.
fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether `origin` is the server's own: `http://` and the request's `Host`.
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
        && origin
            .get(7..)
            .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
}

/// The login cookie is accepted from the page only: a request naming another
/// origin is refused, and a state-changing one must name the page's (CSRF).
fn check_cookie_origin(method: &Method, origin: Option<&RequestOrigin>) -> Result<(), Refusal> {
    let safe = matches!(*method, Method::GET | Method::HEAD);
    match origin {
        Some(RequestOrigin::Same) => Ok(()),
        None if safe => Ok(()),
        Some(RequestOrigin::Allowed(_)) => Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "the login cookie is accepted only from this server's own page: \
             requests from other origins send Authorization: Bearer <token>",
        )),
        None => Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "a {method} request authenticated by the login cookie must carry the page's Origin \
                 (http://<Host>); send Authorization: Bearer <token> from other clients"
            ),
        )),
    }
}

/// A request with a body, or one declaring a type, must declare `application/json`
/// (parameters such as `charset` allowed): a page cannot send that cross-origin
/// without a preflight, approved only for `--allowed-origin` origins.
fn check_content_type(headers: &HeaderMap) -> Result<(), Refusal> {
    match headers.get(header::CONTENT_TYPE) {
        Some(value) => {
            let value = value.to_str().unwrap_or("");
            let essence = value.split(';').next().unwrap_or("").trim();
            if essence.eq_ignore_ascii_case("application/json") {
                Ok(())
            } else {
                Err(Refusal::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!(
                        "Content-Type {} is not accepted: request bodies must be sent as application/json",
                        quoted(value)
                    ),
                ))
            }
        }
        None if has_body(headers) => Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the request has a body but no Content-Type: send it as Content-Type: application/json",
        )),
        None => Ok(()),
    }
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
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The largest body of the face under test.
    const MAX_BODY_BYTES: usize = 1024 * 1024;

    /// A face with a page that logs in, its API under `/v1` and a metrics page.
    const PAGE: Face = Face {
        token_paths: Some(&["/v1", "/metrics"]),
        login: Some("POST /login"),
        cors_methods: "GET, POST, PATCH, DELETE",
        cors_headers: "authorization, content-type, last-event-id",
        cors_expose: None,
        max_body_bytes: MAX_BODY_BYTES,
    };

    /// A face without a page, every path behind the token.
    const API_ONLY: Face = Face {
        token_paths: None,
        login: None,
        cors_methods: "GET, POST, DELETE",
        cors_headers: "authorization, content-type, mcp-session-id",
        cors_expose: Some("mcp-session-id"),
        max_body_bytes: 8 * MAX_BODY_BYTES,
    };

    fn policy(hosts: &[&str], origins: &[&str], token: Option<&str>) -> Guard {
        face_policy(PAGE, hosts, origins, token)
    }

    fn face_policy(face: Face, hosts: &[&str], origins: &[&str], token: Option<&str>) -> Guard {
        Guard::new(
            face,
            hosts.iter().map(|h| h.parse().unwrap()).collect(),
            origins.iter().map(|o| o.parse().unwrap()).collect(),
            token.and_then(AuthToken::new),
        )
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn status(policy: &Guard, pairs: &[(&str, &str)]) -> Option<StatusCode> {
        method_status(policy, &Method::GET, pairs)
    }

    fn method_status(policy: &Guard, method: &Method, pairs: &[(&str, &str)]) -> Option<StatusCode> {
        let uri: Uri = "/v1/sessions".parse().unwrap();
        policy
            .admit(method, &uri, &headers(pairs))
            .err()
            .map(|e| e.status())
    }

    /// Asserts that a request with the headers `base` and `name: value` is admitted for
    /// each of `admitted` and refused with `refusal` for each of `refused`.
    fn assert_admits(
        policy: &Guard,
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
    fn every_token_path_needs_the_token_and_other_paths_stay_open() {
        let policy = policy(&[], &[], Some("abc"));
        let admitted = |path: &str, pairs: &[(&str, &str)]| {
            let uri: Uri = path.parse().unwrap();
            policy
                .admit(&Method::GET, &uri, &headers(pairs))
                .map(|_| ())
                .map_err(|e| e.status())
        };
        let host = ("host", "127.0.0.1:8080");
        for path in ["/v1", "/v1/sessions", "/metrics"] {
            assert_eq!(admitted(path, &[host]), Err(StatusCode::UNAUTHORIZED), "{path}");
            assert_eq!(
                admitted(path, &[host, ("authorization", "Bearer abc")]),
                Ok(()),
                "{path}"
            );
        }
        for path in ["/healthz", "/readyz", "/", "/metricsx", "/v10"] {
            assert_eq!(admitted(path, &[host]), Ok(()), "{path}");
        }
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

    #[test]
    fn a_face_without_a_page_takes_no_cookie_and_guards_every_path() {
        let token = face_policy(API_ONLY, &[], &[], Some("t"));
        let set_cookie = AuthToken::new("t").unwrap().login_cookie();
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        let host = ("host", "127.0.0.1:8090");
        let own = ("origin", "http://127.0.0.1:8090");
        let refused = token
            .admit(
                &Method::POST,
                &"/mcp".parse().unwrap(),
                &headers(&[host, own, ("cookie", &cookie)]),
            )
            .unwrap_err();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        assert!(!refused.message().contains("/login"), "{}", refused.message());
        let bearer = [host, own, ("authorization", "Bearer t")];
        assert_eq!(
            token.admit(&Method::POST, &"/mcp".parse().unwrap(), &headers(&bearer)),
            Ok(Admission::Pass { cors: None })
        );
        let open = face_policy(API_ONLY, &[], &[], None);
        let json = ("content-type", "application/json");
        let over = (8 * MAX_BODY_BYTES + 1).to_string();
        let refused = open
            .admit(
                &Method::POST,
                &"/mcp".parse().unwrap(),
                &headers(&[host, json, ("content-length", &over)]),
            )
            .unwrap_err();
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(refused.message().contains("(8 MiB)"), "{}", refused.message());
    }

    #[test]
    fn cors_answers_name_the_allowed_origin_and_what_the_face_accepts() {
        let guard = face_policy(API_ONLY, &[], &["http://localhost:3000"], None);
        let origin = HeaderValue::from_static("http://localhost:3000");
        let preflight = guard.preflight_headers(origin.clone());
        assert_eq!(preflight[header::ACCESS_CONTROL_ALLOW_ORIGIN], origin);
        assert_eq!(
            preflight[header::ACCESS_CONTROL_ALLOW_HEADERS],
            "authorization, content-type, mcp-session-id"
        );
        assert_eq!(
            preflight[header::ACCESS_CONTROL_ALLOW_METHODS],
            "GET, POST, DELETE"
        );
        let mut answer = HeaderMap::new();
        guard.add_cors(origin.clone(), &mut answer);
        assert_eq!(answer[header::ACCESS_CONTROL_ALLOW_ORIGIN], origin);
        assert_eq!(answer[header::ACCESS_CONTROL_EXPOSE_HEADERS], "mcp-session-id");
        let mut page_answer = HeaderMap::new();
        policy(&[], &[], None).add_cors(origin, &mut page_answer);
        assert!(!page_answer.contains_key(header::ACCESS_CONTROL_EXPOSE_HEADERS));
    }
}
