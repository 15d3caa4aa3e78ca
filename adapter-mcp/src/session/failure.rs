//! The drop classification of a failed request, by types only (never by message
//! text), and error chains as text.

use std::time::Duration;

use rmcp::model::ErrorData;
use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// How a failed request is classified.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The caller cancelled; the request future was dropped.
    Cancelled,
    /// The request never reached the server: safe to resend once.
    NotDelivered(String),
    /// The connection broke after the request went out: never resent (D13).
    PossiblyDelivered(String),
    /// No reply within the request limits: the server was told the request is
    /// cancelled; whether it ran is unknown.
    TimedOut(Duration),
    /// The reply went over the size limit of one message (bytes): the server was
    /// told the request is cancelled; the session stays.
    TooLarge(usize),
    /// A JSON-RPC error reply: a successful round trip.
    Remote(ErrorData),
    /// Anything else, verbatim.
    Other(String),
}

/// Where a request was when it failed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Handing the request to the service loop.
    Enqueue,
    /// Waiting for the reply.
    Await,
}

/// The drop classification, by types only (never by message text).
pub(super) fn classify(error: ServiceError, stage: Stage) -> Failure {
    match error {
        ServiceError::McpError(data) => Failure::Remote(data),
        ServiceError::Cancelled { .. } => Failure::Cancelled,
        ServiceError::Timeout { timeout } => Failure::TimedOut(timeout),
        ServiceError::TransportClosed if stage == Stage::Enqueue => Failure::NotDelivered(error.to_string()),
        ServiceError::TransportClosed => Failure::PossiblyDelivered(error.to_string()),
        ServiceError::TransportSend(ref transport) => {
            let text = error_chain(&error);
            match classify_transport(transport.error.as_ref()) {
                Some(true) => Failure::NotDelivered(text),
                Some(false) => Failure::PossiblyDelivered(text),
                None => Failure::Other(text),
            }
        }
        other => Failure::Other(error_chain(&other)),
    }
}

/// `Some(true)`: not delivered; `Some(false)`: possibly delivered; `None`: not a drop.
fn classify_transport(error: &(dyn std::error::Error + Send + Sync + 'static)) -> Option<bool> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut saw_io = false;
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return match http {
                StreamableHttpError::SessionExpired | StreamableHttpError::TransportChannelClosed => {
                    Some(true)
                }
                StreamableHttpError::Client(inner) => Some(inner.is_connect()),
                _ => None,
            };
        }
        if let Some(inner) = e.downcast_ref::<reqwest::Error>() {
            return Some(inner.is_connect());
        }
        if e.downcast_ref::<std::io::Error>().is_some() {
            saw_io = true;
        }
        current = e.source();
    }
    // Writing to a stdio child failed: the request never left.
    saw_io.then_some(true)
}

/// `error` and its sources, joined by `: ` (without repeating a message its
/// wrapper already shows).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut current = next_source(error);
    while let Some(e) = current {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        current = next_source(e);
    }
    text
}

/// `source()`, except that rmcp's `StreamableHttpError::Client` (which shows its
/// reqwest error but does not expose it as a source) continues into that error.
fn next_source<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    if let Some(StreamableHttpError::Client(inner)) =
        error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(inner);
    }
    error.source()
}
