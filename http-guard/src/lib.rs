//! The one rule for who may reach a local HTTP face of Mecatl (the HTTP API of
//! `mecated serve`, the MCP server of `mecated mcp serve --http-addr`), on header
//! values only, so each face applies it in its own HTTP stack.
//!
//! A loopback listener is reachable by every web page the user opens: a page cannot
//! read a cross-origin answer, but it can send "simple" requests, and a
//! DNS-rebinding page can even read answers, because its own host name now resolves
//! to 127.0.0.1. The browser still names the page's host in `Host` and its origin in
//! `Origin`, so [`Admission`] admits a request only when `Host` names a loopback
//! host (or one the operator allowed with `--allowed-host`; any host once a bearer
//! token protects the face) and when it carries no `Origin` or an allowed one
//! (`--allowed-origin`). [`AuthToken`] keeps only the token's digest and compares in
//! constant time. A leaf crate (no workspace dependency), so faces share the rule
//! without depending on one another.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

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

/// A face's bearer token (`MECATED_AUTH_TOKEN` or `--auth-token`).
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

    /// Whether an `Authorization` header value is `Bearer <the token>` (the scheme
    /// in any case).
    pub fn authorizes(&self, authorization: Option<&str>) -> bool {
        let Some((scheme, presented)) = authorization.and_then(|value| value.trim().split_once(' ')) else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer") && self.matches(presented.trim())
    }

    /// What names the token's holder in an audit record without revealing it:
    /// `token:sha256:` and the first 16 hex digits of its digest.
    pub fn fingerprint(&self) -> String {
        let hex: String = self.digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("token:sha256:{hex}")
    }
}

impl fmt::Debug for AuthToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthToken(<redacted>)")
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&Sha256::digest(bytes));
    out
}

/// Which `Host` and `Origin` headers a face admits, fixed when it binds.
#[derive(Clone, Debug, Default)]
pub struct Admission {
    allowed_hosts: Vec<AllowedHost>,
    allowed_origins: Vec<AllowedOrigin>,
    token_protected: bool,
    same_origin: bool,
}

impl Admission {
    /// The rule for a face with these allowances; `token_protected` when a bearer
    /// token guards it (then any `Host` passes: the token is the protection).
    pub fn new(
        allowed_hosts: Vec<AllowedHost>,
        allowed_origins: Vec<AllowedOrigin>,
        token_protected: bool,
    ) -> Self {
        Self {
            allowed_hosts,
            allowed_origins,
            token_protected,
            same_origin: false,
        }
    }

    /// The same rule, also admitting a same-origin request: an `Origin` that is
    /// `http://` or `https://` followed by the request's own `Host`. Only a page
    /// served at this very host and port has that origin, so a face that serves no
    /// page of another party may admit it (a rebinding page's `Host` is its own
    /// name, which the `Host` check refuses).
    #[must_use]
    pub fn with_same_origin(mut self) -> Self {
        self.same_origin = true;
        self
    }

    /// The `Host` check: `hosts` are the request's `Host` header values (a value
    /// that is not text as `""`), `target` the authority of an absolute request
    /// target. Without a token there must be exactly one `Host`, naming a loopback
    /// or allowed host, and so must the target.
    ///
    /// # Errors
    /// Why the request is refused (a face answers 403 with it).
    pub fn check_host<'a>(
        &self,
        hosts: impl IntoIterator<Item = &'a str>,
        target: Option<&str>,
    ) -> Result<(), String> {
        if self.token_protected {
            return Ok(());
        }
        let mut hosts = hosts.into_iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(value), None) => value,
            (None, _) => return Err(self.host_refused("the request has no Host header")),
            (Some(_), Some(_)) => return Err(self.host_refused("the request has more than one Host header")),
        };
        if !self.host_allowed(host) {
            return Err(self.host_refused(&format!("Host {} is not allowed", quoted(host))));
        }
        if let Some(authority) = target
            && !self.host_allowed(authority)
        {
            return Err(self.host_refused(&format!(
                "the request target names host {}, which is not allowed",
                quoted(authority)
            )));
        }
        Ok(())
    }

    /// The `Origin` check: a request without `Origin` (curl, SDKs) passes; with
    /// one, every value must be an allowed origin (or, [`with_same_origin`], the
    /// request's own origin: `host` is its `Host` header).
    ///
    /// [`with_same_origin`]: Self::with_same_origin
    ///
    /// # Errors
    /// Why the request is refused (a face answers 403 with it).
    pub fn check_origin<'a>(
        &self,
        origins: impl IntoIterator<Item = &'a str>,
        host: Option<&str>,
    ) -> Result<(), String> {
        let same = |origin: &str| {
            let Some(host) = host.filter(|_| self.same_origin).map(str::trim) else {
                return false;
            };
            let origin = origin.trim();
            ["http://", "https://"].iter().any(|scheme| {
                origin.len() == scheme.len() + host.len()
                    && origin
                        .get(..scheme.len())
                        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(scheme))
                    && origin
                        .get(scheme.len()..)
                        .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
            })
        };
        let refused = origins.into_iter().find(|origin| {
            !same(origin)
                && !self
                    .allowed_origins
                    .iter()
                    .any(|allowed| allowed.0.eq_ignore_ascii_case(origin.trim()))
        });
        let Some(origin) = refused else {
            return Ok(());
        };
        let expected = if self.allowed_origins.is_empty() {
            "no Origin header (requests from web pages are refused unless --allowed-origin names their origin)"
                .to_owned()
        } else {
            let names: Vec<String> = self.allowed_origins.iter().map(ToString::to_string).collect();
            format!(
                "no Origin header, or one of {} (--allowed-origin)",
                names.join(", ")
            )
        };
        Err(format!(
            "Origin {} is not allowed: expected {expected}",
            quoted(origin)
        ))
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

    fn host_refused(&self, what: &str) -> String {
        let extra = if self.allowed_hosts.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = self.allowed_hosts.iter().map(ToString::to_string).collect();
            format!(", or one of {}", names.join(", "))
        };
        format!(
            "{what}: expected Host localhost, 127.0.0.1 or [::1] (any port){extra}; \
             allow more with --allowed-host, or set an auth token"
        )
    }
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

/// A header value quoted for an error message, cut to 100 bytes (`…` when cut).
pub fn quoted(value: &str) -> String {
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
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn tokens_match_only_themselves_and_never_show() {
        let token = AuthToken::new("s3cr3t").unwrap();
        assert!(token.matches("s3cr3t"));
        assert!(!token.matches("s3cr3"));
        assert!(!token.matches(""));
        assert!(AuthToken::new("").is_none());
        assert!(!format!("{token:?}").contains("s3cr3t"));
        assert!(token.authorizes(Some("bearer s3cr3t")));
        assert!(token.authorizes(Some("Bearer s3cr3t")));
        assert!(!token.authorizes(Some("Basic s3cr3t")));
        assert!(!token.authorizes(Some("s3cr3t")));
        assert!(!token.authorizes(None));
    }

    #[test]
    fn a_fingerprint_names_the_token_without_revealing_it() {
        let token = AuthToken::new("s3cr3t").unwrap();
        let print = token.fingerprint();
        assert!(print.starts_with("token:sha256:"), "{print}");
        assert_eq!(print.len(), "token:sha256:".len() + 16);
        assert!(!print.contains("s3cr3t"));
        assert_eq!(print, AuthToken::new("s3cr3t").unwrap().fingerprint());
        assert_ne!(print, AuthToken::new("other").unwrap().fingerprint());
    }

    #[test]
    fn hosts_must_be_loopback_or_allowed_unless_a_token_protects() {
        let open = Admission::default();
        for host in ["localhost:8080", "127.0.0.9", "[::1]:1"] {
            assert_eq!(open.check_host([host], None), Ok(()), "{host}");
        }
        for host in ["evil.example", "localhost.evil.example", "0.0.0.0", ""] {
            assert!(open.check_host([host], None).is_err(), "{host}");
        }
        assert!(open.check_host([], None).is_err());
        assert!(open.check_host(["localhost", "localhost"], None).is_err());
        assert!(open.check_host(["localhost"], Some("evil.example")).is_err());
        let allowed = Admission::new(vec!["mecatl.internal:8081".parse().unwrap()], Vec::new(), false);
        assert_eq!(allowed.check_host(["mecatl.internal:8081"], None), Ok(()));
        assert!(allowed.check_host(["mecatl.internal:8082"], None).is_err());
        let protected = Admission::new(Vec::new(), Vec::new(), true);
        assert_eq!(protected.check_host(["evil.example"], None), Ok(()));
    }

    #[test]
    fn origins_must_be_listed_exactly() {
        let open = Admission::default();
        assert_eq!(open.check_origin([], None), Ok(()));
        let refused = open.check_origin(["http://evil.example"], None).unwrap_err();
        assert!(
            refused.starts_with("Origin \"http://evil.example\" is not allowed"),
            "{refused}"
        );
        let listed = Admission::new(Vec::new(), vec!["http://localhost:3000".parse().unwrap()], true);
        assert_eq!(listed.check_origin(["HTTP://LOCALHOST:3000"], None), Ok(()));
        assert!(listed.check_origin(["http://localhost:3001"], None).is_err());
    }

    #[test]
    fn a_same_origin_request_passes_only_when_the_face_admits_it() {
        let host = Some("127.0.0.1:8090");
        assert!(
            Admission::default()
                .check_origin(["http://127.0.0.1:8090"], host)
                .is_err()
        );
        let same = Admission::default().with_same_origin();
        assert_eq!(same.check_origin(["http://127.0.0.1:8090"], host), Ok(()));
        assert_eq!(same.check_origin(["HTTPS://127.0.0.1:8090"], host), Ok(()));
        for other in [
            "http://127.0.0.1:8091",
            "http://127.0.0.1",
            "http://evil.example",
            "ftp://127.0.0.1:8090",
        ] {
            assert!(same.check_origin([other], host).is_err(), "{other}");
        }
        assert!(same.check_origin(["http://127.0.0.1:8090"], None).is_err());
        // As long as the same-origin text, with a character across its scheme's end.
        let odd = "http:/\u{2026}27.0.0.1:809";
        assert_eq!(odd.len(), "http://127.0.0.1:8090".len());
        assert!(same.check_origin([odd], host).is_err());
    }
}
