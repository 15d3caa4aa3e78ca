//! Redaction: no header value or token, URL user info or query ever reaches a
//! diagnostic or a model-visible error; diagnostics are clamped to 200 bytes.

/// Longest diagnostic error string, in bytes (the ellipsis included).
pub(crate) const DIAGNOSTIC_MAX_BYTES: usize = 200;

const REDACTED: &str = "[redacted]";

/// `url` without user info, query or fragment. Text that does not parse as a URL is
/// cut at the first `?` or `#` and loses anything before an `@` in its authority.
pub(crate) fn redact_url(url: &str) -> String {
    if let Ok(mut parsed) = url::Url::parse(url)
        && parsed.has_host()
    {
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        parsed.set_query(None);
        parsed.set_fragment(None);
        return parsed.to_string();
    }
    redact_url_text(url)
}

/// `url` as text (not parsed, so a `${VAR}` stays readable) cut at the first `?` or
/// `#`, without anything before an `@` in its authority.
pub(crate) fn redact_url_text(url: &str) -> String {
    let cut = url.find(['?', '#']).map_or(url, |i| &url[..i]);
    match cut.find("://") {
        Some(start) => {
            let rest = &cut[start + 3..];
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{}{}", &cut[..start + 3], &rest[at + 1..]),
                None => cut.to_owned(),
            }
        }
        None => cut.to_owned(),
    }
}

/// `text` with every secret replaced by `[redacted]` and every `http(s)://` URL in it
/// rewritten by [`redact_url`].
pub(crate) fn redact_text(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    let mut secrets: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    // Longest first, so a token inside its own `Bearer <token>` header is covered.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    redact_urls_in(&out)
}

fn redact_urls_in(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while pos < text.len() {
        let next = ["http://", "https://"]
            .iter()
            .filter_map(|scheme| lower[pos..].find(scheme).map(|i| pos + i))
            .min();
        let Some(start) = next else {
            out.push_str(&text[pos..]);
            break;
        };
        out.push_str(&text[pos..start]);
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')' | ']' | '`'))
            .map_or(text.len(), |i| start + i);
        out.push_str(&redact_url(&text[start..end]));
        pos = end;
    }
    out
}

/// `text` clamped to [`DIAGNOSTIC_MAX_BYTES`] on a char boundary, ending with `…` when
/// it was cut.
pub(crate) fn clamp(text: &str) -> String {
    engine_ports::truncate_with_ellipsis(text, DIAGNOSTIC_MAX_BYTES).into_owned()
}

/// Redacts then clamps: the form every diagnostic error string takes.
pub(crate) fn diagnostic(text: &str, secrets: &[String]) -> String {
    clamp(&redact_text(text, secrets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_userinfo_query_and_fragment() {
        assert_eq!(
            redact_url("https://user:pw@example.test:8443/mcp?token=abc#frag"),
            "https://example.test:8443/mcp"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:9100/mcp?tenant=a=b"),
            "http://127.0.0.1:9100/mcp"
        );
        assert_eq!(redact_url("not a url?x=1"), "not a url");
    }

    #[test]
    fn text_loses_secrets_and_url_queries() {
        let text = "error sending request for url (http://u:p@h.test/mcp?key=s3cr3t): Bearer s3cr3t";
        let out = redact_text(text, &["s3cr3t".to_owned(), "Bearer s3cr3t".to_owned()]);
        assert!(!out.contains("s3cr3t"), "{out}");
        assert!(!out.contains("u:p@"), "{out}");
        assert!(out.contains("http://h.test/mcp"), "{out}");
    }

    #[test]
    fn clamp_keeps_200_bytes_on_a_char_boundary() {
        let long = "é".repeat(150);
        let out = clamp(&long);
        assert!(out.len() <= DIAGNOSTIC_MAX_BYTES);
        assert!(out.ends_with('…'));
        assert_eq!(clamp("short"), "short");
    }
}
