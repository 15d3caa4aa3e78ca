//! [`StoreUrl`]: a `postgres://` URL parsed once, shown only without its password.
//!
//! The URL follows libpq's form (`postgres[ql]://[user[:password]@]host[:port][,…]
//! [/database][?param=value&…]`, percent-encoded). `sslmode` and `sslrootcert` are
//! read here (TLS is this crate's, see `tls.rs`); every other parameter goes to
//! `tokio-postgres`, which refuses the ones it does not know. A password comes from
//! the URL, else from the value the caller passes (`PGPASSWORD`, read by the app).
//!
//! `Display` and `Debug` print `postgres://user@host:port/database` — never the
//! password, never the query (a `password=` parameter would be one). A URL that does
//! not parse is quoted the same way ([`redact_raw`]).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr as _;
use std::time::Duration;

use tokio_postgres::config::Host;

/// The connect timeout when the URL sets no `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How the connection is encrypted and the server checked, libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// `disable`: plaintext.
    Disable,
    /// `allow` or `prefer` (libpq's default): TLS when the server offers it,
    /// plaintext otherwise; the certificate is not checked.
    Prefer,
    /// `require`: TLS or no connection; the certificate is checked against
    /// `sslrootcert` only when one is given (as libpq does).
    Require,
    /// `verify-ca`: TLS, the chain checked against `sslrootcert` (or the system's
    /// roots), any host name.
    VerifyCa,
    /// `verify-full`: TLS, the chain checked and the host name matched.
    VerifyFull,
}

/// Where trusted root certificates come from (`sslrootcert`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootCerts {
    /// No `sslrootcert`: the platform's roots for `verify-ca` / `verify-full`.
    Default,
    /// `sslrootcert=system`: the platform's roots.
    System,
    /// `sslrootcert=FILE`: the PEM certificates of that file.
    File(PathBuf),
}

/// A parsed `--store-url`. Cheap to clone; shows no secret.
#[derive(Clone)]
pub struct StoreUrl {
    config: tokio_postgres::Config,
    ssl_mode: SslMode,
    root_certs: RootCerts,
    shown: String,
}

/// A URL that cannot be used; the message quotes the URL redacted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{url}: {reason}")]
pub struct UrlError {
    /// The URL, redacted ([`redact_raw`]).
    pub url: String,
    /// What is wrong and what is expected.
    pub reason: String,
}

const EXPECTED: &str = "expected postgres://[user[:password]@]host[:port]/database[?sslmode=…]";

impl StoreUrl {
    /// Parses `raw`; `password` (from `PGPASSWORD`) is used when the URL has none.
    ///
    /// # Errors
    /// [`UrlError`] for another scheme, a malformed URL, an unknown parameter or an
    /// unsupported TLS setting (client certificates).
    pub fn parse(raw: &str, password: Option<&str>) -> Result<Self, UrlError> {
        let error = |reason: String| UrlError {
            url: redact_raw(raw),
            reason,
        };
        if !(raw.starts_with("postgres://") || raw.starts_with("postgresql://")) {
            return Err(error(format!("not a PostgreSQL URL ({EXPECTED})")));
        }
        let (base, query) = match raw.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (raw, None),
        };
        let mut ssl_mode = SslMode::Prefer;
        let mut root_certs = RootCerts::Default;
        let mut rest: Vec<&str> = Vec::new();
        for pair in query.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(error(format!(
                    "parameter {:?} has no value (expected key=value)",
                    redact_param(pair)
                )));
            };
            let value =
                percent_decode(value).map_err(|reason| error(format!("parameter {key}: {reason}")))?;
            match key {
                "sslmode" => {
                    ssl_mode = match value.as_str() {
                        "disable" => SslMode::Disable,
                        "allow" | "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-ca" => SslMode::VerifyCa,
                        "verify-full" => SslMode::VerifyFull,
                        other => {
                            return Err(error(format!(
                                "sslmode={other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                            )));
                        }
                    };
                }
                "sslrootcert" => {
                    root_certs = if value == "system" {
                        RootCerts::System
                    } else if value.is_empty() {
                        return Err(error(
                            "sslrootcert is empty (expected a PEM file or `system`)".into(),
                        ));
                    } else {
                        RootCerts::File(PathBuf::from(value))
                    };
                }
                "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" | "sslsni"
                | "sslcompression" | "requirepeer" | "gssencmode" | "krbsrvname" => {
                    return Err(error(format!(
                        "parameter {key} is not supported (client certificates and GSSAPI are not implemented)"
                    )));
                }
                _ => rest.push(pair),
            }
        }
        let rebuilt = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut config = tokio_postgres::Config::from_str(&rebuilt)
            .map_err(|e| error(format!("{} ({EXPECTED})", crate::db::describe(&e))))?;
        if config.get_hosts().is_empty() {
            return Err(error(format!("no host ({EXPECTED})")));
        }
        if config.get_password().is_none()
            && let Some(password) = password.filter(|p| !p.is_empty())
        {
            config.password(password);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("mecated");
        }
        config.ssl_mode(match ssl_mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        });
        let shown = show(&config, ssl_mode);
        Ok(Self {
            config,
            ssl_mode,
            root_certs,
            shown,
        })
    }

    /// The `tokio-postgres` configuration (holds the password: never print it).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The TLS mode.
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// Where root certificates come from.
    pub fn root_certs(&self) -> &RootCerts {
        &self.root_certs
    }

    /// `host:port[,host:port…]/database`: what errors name.
    pub fn target(&self) -> String {
        let hosts = hosts(&self.config);
        format!(
            "{hosts}/{}",
            self.config
                .get_dbname()
                .or(self.config.get_user())
                .unwrap_or_default()
        )
    }

    /// The connect timeout (the URL's `connect_timeout`, else 5 s).
    pub fn connect_timeout(&self) -> Duration {
        self.config
            .get_connect_timeout()
            .copied()
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StoreUrl").field(&self.shown).finish()
    }
}

impl PartialEq for StoreUrl {
    fn eq(&self, other: &Self) -> bool {
        self.shown == other.shown
            && self.root_certs == other.root_certs
            && self.config.get_password() == other.config.get_password()
            && self.config.get_options() == other.config.get_options()
            && self.config.get_connect_timeout() == other.config.get_connect_timeout()
    }
}

impl Eq for StoreUrl {}

fn hosts(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn show(config: &tokio_postgres::Config, ssl_mode: SslMode) -> String {
    let user = config.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    let db = config.get_dbname().unwrap_or_default();
    let ssl = match ssl_mode {
        SslMode::Prefer => "",
        SslMode::Disable => "?sslmode=disable",
        SslMode::Require => "?sslmode=require",
        SslMode::VerifyCa => "?sslmode=verify-ca",
        SslMode::VerifyFull => "?sslmode=verify-full",
    };
    format!("postgres://{user}{}/{db}{ssl}", hosts(config))
}

/// `raw` with anything that may be a secret replaced: the user information before
/// the last `@` becomes `***` and the query is dropped. For URLs that did not parse.
pub fn redact_raw(raw: &str) -> String {
    let (scheme, rest) = match raw.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), raw),
    };
    let rest = match rest.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => rest.to_owned(),
    };
    let rest = match rest.split_once('?') {
        Some((base, _)) => format!("{base}?…"),
        None => rest,
    };
    format!("{scheme}{rest}")
}

fn redact_param(pair: &str) -> String {
    if pair.starts_with("password") {
        "password=***".to_owned()
    } else {
        pair.chars().take(64).collect()
    }
}

fn percent_decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "a % not followed by two hex digits".to_owned())?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "percent-encoded bytes are not UTF-8".to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_password_never_shows() {
        let url = StoreUrl::parse(
            "postgres://alice:s3cr%2Ft@db.example:6543/app?sslmode=require",
            None,
        )
        .unwrap();
        assert_eq!(
            url.to_string(),
            "postgres://alice@db.example:6543/app?sslmode=require"
        );
        assert!(!format!("{url:?}").contains("s3cr"));
        assert_eq!(url.config().get_password(), Some(&b"s3cr/t"[..]));
        assert_eq!(url.target(), "db.example:6543/app");
        assert_eq!(url.ssl_mode(), SslMode::Require);
    }

    #[test]
    fn pgpassword_fills_a_missing_password_only() {
        let url = StoreUrl::parse("postgres://alice@h/app", Some("env")).unwrap();
        assert_eq!(url.config().get_password(), Some(&b"env"[..]));
        let url = StoreUrl::parse("postgres://alice:url@h/app", Some("env")).unwrap();
        assert_eq!(url.config().get_password(), Some(&b"url"[..]));
    }

    #[test]
    fn tls_parameters_are_read_here() {
        let url = StoreUrl::parse(
            "postgresql://u@h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&connect_timeout=2",
            None,
        )
        .unwrap();
        assert_eq!(url.ssl_mode(), SslMode::VerifyFull);
        assert_eq!(url.root_certs(), &RootCerts::File(PathBuf::from("/tmp/ca.pem")));
        assert_eq!(url.connect_timeout(), Duration::from_secs(2));
        let default = StoreUrl::parse("postgres://u@h/db", None).unwrap();
        assert_eq!(default.ssl_mode(), SslMode::Prefer);
        assert_eq!(default.connect_timeout(), DEFAULT_CONNECT_TIMEOUT);
    }

    #[test]
    fn bad_urls_are_refused_without_their_secrets() {
        let cases = [
            ("mysql://u:pw@h/db", "not a PostgreSQL URL"),
            ("postgres://u:pw@h/db?sslmode=bogus", "sslmode=\"bogus\""),
            ("postgres://u:pw@h/db?sslcert=x", "sslcert is not supported"),
            ("postgres://u:pw@h/db?frobnicate=1", "frobnicate"),
            ("postgres://u:pw@h/db?password=pw&x", "has no value"),
            ("postgres://u:pw@/db", "no host"),
        ];
        for (raw, needle) in cases {
            let error = StoreUrl::parse(raw, None).unwrap_err();
            let text = error.to_string();
            assert!(text.contains(needle), "{raw}: {text}");
            assert!(!text.contains("pw"), "{raw}: {text}");
        }
    }

    #[test]
    fn raw_urls_are_redacted_up_to_the_last_at() {
        assert_eq!(
            redact_raw("postgres://u:p@ss@h:1/db?password=x"),
            "postgres://***@h:1/db?…"
        );
        assert_eq!(redact_raw("postgres://h/db"), "postgres://h/db");
    }
}
