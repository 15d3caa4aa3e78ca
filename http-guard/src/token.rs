//! [`AuthToken`]: a face's bearer token, kept as a digest, and the login cookie
//! derived from it for a face that serves a page.

use std::fmt;

use sha2::{Digest as _, Sha256};

/// The name of the page's login cookie.
pub const LOGIN_COOKIE: &str = "mecated_login";

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
        same_digest(&self.digest, &sha256(presented.as_bytes()))
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
        format!("token:sha256:{}", hex(&self.digest[..8]))
    }

    /// The value of the login cookie: a SHA-256 over the token's digest, so the
    /// cookie is not the token (it cannot be replayed as a bearer) and changes with it.
    fn cookie_value(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(b"mecated login cookie v1\0");
        hasher.update(self.digest);
        hex(&hasher.finalize())
    }

    /// The `Set-Cookie` value that logs the page in: `HttpOnly` (no script reads
    /// it), `SameSite=Strict` (no other site's page sends it), `Path=/`.
    pub fn login_cookie(&self) -> String {
        format!(
            "{LOGIN_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_value()
        )
    }

    /// Whether `presented` is the login cookie's value (constant time, as the token).
    pub fn matches_cookie(&self, presented: &str) -> bool {
        same_digest(
            &sha256(self.cookie_value().as_bytes()),
            &sha256(presented.as_bytes()),
        )
    }

    /// Whether `Cookie` header values carry the login cookie of this token.
    pub fn cookie_among<'a>(&self, cookies: impl IntoIterator<Item = &'a str>) -> bool {
        cookies
            .into_iter()
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == LOGIN_COOKIE && self.matches_cookie(value.trim()))
    }
}

/// The `Set-Cookie` value that logs the page out (the cookie expires at once).
pub fn logout_cookie() -> String {
    format!("{LOGIN_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
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

/// Whether two digests are equal, in constant time.
fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let difference = a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
        assert!(!token.matches("s3cr3t "));
        assert!(!token.matches(""));
        assert!(AuthToken::new("").is_none());
        assert!(!format!("{token:?}").contains("s3cr3t"));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_required() {
        let token = AuthToken::new("abc").unwrap();
        assert!(token.authorizes(Some("Bearer abc")));
        assert!(token.authorizes(Some("bearer abc")));
        assert!(!token.authorizes(Some("Basic abc")));
        assert!(!token.authorizes(Some("Bearer abd")));
        assert!(!token.authorizes(Some("abc")));
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
        let sent = format!("theme=dark; mecated_login={value}");
        assert!(token.cookie_among([sent.as_str()]));
        assert!(!AuthToken::new("abd").unwrap().cookie_among([sent.as_str()]));
        assert!(!token.cookie_among(["mecated_login=abc"]));
        assert!(!token.cookie_among([format!("other={value}").as_str()]));
        assert!(
            !token.authorizes(Some(&format!("Bearer {value}"))),
            "the cookie's value is no bearer token"
        );
        assert!(logout_cookie().contains("Max-Age=0"));
    }
}
