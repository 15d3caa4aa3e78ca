//! The names the operator allows besides loopback: [`AllowedHost`]
//! (`--allowed-host`) and [`AllowedOrigin`] (`--allowed-origin`), and how a `Host`
//! value is read (`host[:port]`, loopback or not).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

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

impl AllowedHost {
    /// Whether `host` (lower-case, brackets kept) with `port` is this one.
    pub(crate) fn admits(&self, host: &str, port: Option<u16>) -> bool {
        self.host == host && self.port.is_none_or(|p| Some(p) == port)
    }
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

impl AllowedOrigin {
    /// Whether the `Origin` value `origin` is this one.
    pub(crate) fn admits(&self, origin: &str) -> bool {
        self.0.eq_ignore_ascii_case(origin.trim())
    }
}

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

/// `host[:port]` or `[v6][:port]` → the host (brackets kept) and the port; `None`
/// for anything else.
pub(crate) fn split_authority(value: &str) -> Option<(&str, Option<u16>)> {
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
pub(crate) fn is_loopback_name(host: &str) -> bool {
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
    fn allowed_names_parse_only_hosts_and_origins() {
        assert!("".parse::<AllowedHost>().is_err());
        assert!("http://x".parse::<AllowedHost>().is_err());
        assert!("x/y".parse::<AllowedHost>().is_err());
        assert_eq!(
            "Box.Internal:9000".parse::<AllowedHost>().unwrap().to_string(),
            "box.internal:9000"
        );
        assert!("null".parse::<AllowedOrigin>().is_err());
        assert!("http://a.example/path".parse::<AllowedOrigin>().is_err());
        assert!("a.example".parse::<AllowedOrigin>().is_err());
        assert!("https://a.example:8443".parse::<AllowedOrigin>().is_ok());
    }

    #[test]
    fn quoted_values_are_cut_on_a_character_boundary() {
        assert_eq!(quoted("a"), "\"a\"");
        let long = "é".repeat(100);
        let cut = quoted(&long);
        assert!(cut.ends_with('…'), "{cut}");
        assert!(cut.len() < 110, "{cut}");
    }
}
