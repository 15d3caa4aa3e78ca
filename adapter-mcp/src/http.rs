//! Our own `reqwest` client for streamable-HTTP servers: same-origin 307/308 redirects
//! only (or none), so headers and the bearer token never reach another origin.

use std::collections::HashMap;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::config::Redirects;

/// Most redirect hops a request follows under [`Redirects::SameOrigin`].
pub(crate) const MAX_REDIRECTS: usize = 10;

/// Builds the HTTP client of one server.
///
/// Idle connections are not pooled: a restarted server never meets a stale pooled
/// connection (which would blur "not delivered" into "possibly delivered"), and
/// Linux delayed-ACK stalls on reused connections are avoided.
pub(crate) fn build_client(redirects: Redirects) -> Result<reqwest::Client, reqwest::Error> {
    let policy = match redirects {
        Redirects::None => reqwest::redirect::Policy::none(),
        Redirects::SameOrigin => same_origin_policy(),
    };
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
}

fn same_origin_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        if !keeps_body {
            let status = attempt.status();
            return attempt.error(format!(
                "refusing to follow HTTP {status}: only 307/308 redirects to the same origin are followed"
            ));
        }
        // `url::Origin` compares scheme, lowercased host and effective port.
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            return attempt.error("refusing to follow a redirect to another origin");
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        attempt.follow()
    })
}

/// The rmcp transport config of one HTTP server: rmcp's silent session re-init is
/// off (a 404 goes through our resilience rules), the bearer token travels as rmcp's
/// auth header and every other header as a custom header.
pub(crate) fn transport_config(
    url: &str,
    headers: Option<&HeaderMap>,
) -> StreamableHttpClientTransportConfig {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).reinit_on_expired_session(false);
    let Some(headers) = headers else {
        return config;
    };
    let mut custom: HashMap<HeaderName, HeaderValue> = HashMap::new();
    for (name, value) in headers {
        if name == AUTHORIZATION
            && let Some(token) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))
        {
            config = config.auth_header(token);
            continue;
        }
        custom.insert(name.clone(), value.clone());
    }
    if !custom.is_empty() {
        config = config.custom_headers(custom);
    }
    config
}
