//! The https-or-loopback URL check ([`validate_url`]), shared by the `--mcp-server`
//! token rule and client-provided servers. It never resolves a name.

use std::net::{IpAddr, Ipv6Addr};

/// Why a URL failed [`validate_url`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum UrlError {
    /// Nothing was given.
    #[error("the URL is empty")]
    Empty,
    /// The text is not a URL.
    #[error("the URL does not parse ({0})")]
    Unparsable(String),
    /// A relative reference.
    #[error("the URL is relative; give an absolute https:// URL")]
    Relative,
    /// No host (`https:///mcp`).
    #[error("the URL has no host")]
    NoHost,
    /// `user:password@` in the authority.
    #[error("the URL contains user info (user:password@); credentials must not travel in the URL")]
    Userinfo,
    /// Plain `http` to a host that is not loopback.
    #[error(
        "plain http to the non-loopback host {host} would travel unencrypted; use https (plain http is only accepted for localhost, 127.0.0.0/8 and ::1)"
    )]
    InsecureHttp {
        /// The host.
        host: String,
    },
    /// A scheme other than http and https.
    #[error("the scheme {scheme:?} is not allowed; use https, or http to a loopback host")]
    Scheme {
        /// The scheme.
        scheme: String,
    },
}

/// Checks that `url` is `https` to any host, or `http` to a loopback host
/// (`localhost` exactly, `127.0.0.0/8`, `::1`, `::ffff:127.x.y.z`), without user info.
///
/// The input is trimmed; schemes compare case-insensitively. No DNS lookup is made,
/// and no private-range or metadata-address filtering is done.
///
/// # Errors
/// A [`UrlError`] saying which rule failed.
pub(crate) fn validate_url(url: &str) -> Result<(), UrlError> {
    let parsed = parse_absolute(url)?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlError::Userinfo);
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" => {
            let host = parsed.host().ok_or(UrlError::NoHost)?;
            if is_loopback(&host) {
                Ok(())
            } else {
                Err(UrlError::InsecureHttp {
                    host: host.to_string(),
                })
            }
        }
        other => Err(UrlError::Scheme {
            scheme: other.to_owned(),
        }),
    }
}

/// Whether `url` (trimmed) is an absolute `http`/`https` URL with a host; the
/// https-or-loopback gating is [`validate_url`]'s job.
pub(crate) fn check_http_shape(url: &str) -> Result<url::Url, UrlError> {
    let parsed = parse_absolute(url)?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(UrlError::Scheme {
            scheme: other.to_owned(),
        }),
    }
}

/// Whether the URL's host is loopback (see [`validate_url`]).
pub(crate) fn is_loopback_url(url: &url::Url) -> bool {
    url.host().is_some_and(|h| is_loopback(&h))
}

fn parse_absolute(url: &str) -> Result<url::Url, UrlError> {
    let text = url.trim();
    if text.is_empty() {
        return Err(UrlError::Empty);
    }
    let parsed = match url::Url::parse(text) {
        Ok(parsed) => parsed,
        Err(url::ParseError::RelativeUrlWithoutBase) => return Err(UrlError::Relative),
        Err(url::ParseError::EmptyHost) => return Err(UrlError::NoHost),
        Err(error) => return Err(UrlError::Unparsable(error.to_string())),
    };
    if matches!(parsed.scheme(), "http" | "https") {
        // WHATWG parsing turns `https:///mcp` into host `mcp`; look at the text.
        let after_scheme = &text[parsed.scheme().len()..];
        let authority = after_scheme
            .strip_prefix("://")
            .map(|rest| &rest[..rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len())]);
        if authority.is_none_or(str::is_empty) || !parsed.has_host() {
            return Err(UrlError::NoHost);
        }
    }
    Ok(parsed)
}

fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => is_loopback_v6(*ip),
    }
}

fn is_loopback_v6(ip: Ipv6Addr) -> bool {
    ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| IpAddr::V4(v4).is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_https_and_loopback_http() {
        for ok in [
            "https://example.test/mcp",
            "https://example.test:8443/mcp",
            "http://127.0.0.1:9000/mcp",
            "http://127.9.9.9/mcp",
            "http://[::1]:9000/mcp",
            "http://LOCALHOST:9000/mcp",
            "  http://localhost/mcp  ",
            "HTTPS://example.test/mcp",
            "http://[::ffff:127.0.0.1]:9000/mcp",
        ] {
            assert_eq!(validate_url(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn rejects_each_rule_with_its_reason() {
        type Check = fn(&UrlError) -> bool;
        let cases: &[(&str, Check)] = &[
            ("http://example.test/mcp", |e| {
                matches!(e, UrlError::InsecureHttp { .. })
            }),
            ("http://localhost.example/mcp", |e| {
                matches!(e, UrlError::InsecureHttp { .. })
            }),
            ("http://localhost./mcp", |e| {
                matches!(e, UrlError::InsecureHttp { .. })
            }),
            ("http://user:pw@127.0.0.1/mcp", |e| *e == UrlError::Userinfo),
            ("file:///etc/passwd", |e| matches!(e, UrlError::Scheme { .. })),
            ("ftp://example.test/x", |e| matches!(e, UrlError::Scheme { .. })),
            ("", |e| *e == UrlError::Empty),
            ("   ", |e| *e == UrlError::Empty),
            ("/just/a/path", |e| *e == UrlError::Relative),
            ("https:///mcp", |e| *e == UrlError::NoHost),
            ("http://10.0.0.1/mcp", |e| {
                matches!(e, UrlError::InsecureHttp { .. })
            }),
        ];
        for (url, check) in cases {
            let error = validate_url(url).expect_err(url);
            assert!(check(&error), "{url}: {error:?}");
        }
        let scheme = validate_url("ftp://example.test/x").unwrap_err().to_string();
        assert!(scheme.contains("ftp") && scheme.contains("https"), "{scheme}");
        let insecure = validate_url("http://example.test/mcp").unwrap_err().to_string();
        assert!(insecure.contains("https"), "{insecure}");
    }
}
