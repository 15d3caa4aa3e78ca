//! The legacy HTTP+SSE client transport (MCP 2024-11-05, a config file's
//! `"type": "sse"`), which rmcp does not have: a GET of the server's event stream,
//! whose first `endpoint` event names where to POST, then one POST per client
//! message while the server's messages arrive as `message` events on the stream.
//!
//! The endpoint must be on the stream's origin (scheme, host, port): a server must
//! not make us POST our headers and token elsewhere. Each event is bounded by the
//! size limit of one message; one over it tells the lone request in flight (as an
//! oversized stdio line without an id does) and ends the stream. The stream ending,
//! for whatever reason, closes the transport: the session is dead and the next
//! request dials again. The whole connect, the endpoint event included, runs within
//! the server's connect timeout (the caller's); each POST within `post_timeout`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use sse_stream::{Sse, SseStream};
use url::Url;

use crate::calls::InFlightCalls;

/// What went wrong opening the stream or posting a message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    /// The configured URL does not parse.
    #[error("the SSE URL is not a URL: {0}")]
    Url(url::ParseError),
    /// The GET of the event stream failed.
    #[error("the SSE stream request failed")]
    Get(#[source] reqwest::Error),
    /// The GET of the event stream was answered with a non-2xx status.
    #[error("the SSE stream was refused with HTTP {0}")]
    GetStatus(u16),
    /// The stream broke or ended before its `endpoint` event.
    #[error("the SSE stream ended before its endpoint event ({0})")]
    NoEndpoint(String),
    /// The `endpoint` event's data is not a URL reference.
    #[error("the SSE endpoint event is not a URL: {0}")]
    BadEndpoint(url::ParseError),
    /// The `endpoint` event named another origin than the stream's.
    #[error(
        "the SSE endpoint event names another origin ({endpoint}) than the stream ({stream}); refused: messages are posted only to the stream's origin"
    )]
    OtherOrigin {
        /// The endpoint's origin.
        endpoint: String,
        /// The stream's origin.
        stream: String,
    },
    /// Posting a message failed (not sent, or no answer).
    #[error("posting the message failed")]
    Post(#[source] reqwest::Error),
    /// Posting a message was answered with a non-2xx status.
    #[error("posting the message was refused with HTTP {0}")]
    PostStatus(u16),
}

/// A connected SSE session: the POST endpoint and the server's messages.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    post_timeout: Duration,
    messages: BoxStream<'static, ServerJsonRpcMessage>,
}

/// Opens the event stream of `url` with `headers` (also sent on every POST) and
/// waits for its `endpoint` event. An event over `limit` bytes is told to the lone
/// request of `calls` in flight and ends the stream.
///
/// # Errors
/// The stream cannot be opened, ends before its endpoint, or names an endpoint that
/// is not a URL or is on another origin.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: Option<&HeaderMap>,
    calls: Arc<InFlightCalls>,
    limit: usize,
    post_timeout: Duration,
    server: Arc<str>,
) -> Result<SseTransport, SseError> {
    let stream_url = Url::parse(url).map_err(SseError::Url)?;
    let headers = headers.cloned().unwrap_or_default();
    let response = client
        .get(stream_url.clone())
        .headers(headers.clone())
        .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
        .send()
        .await
        .map_err(SseError::Get)?;
    if !response.status().is_success() {
        return Err(SseError::GetStatus(response.status().as_u16()));
    }
    let mut events = event_stream(response, calls, limit);
    let given = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                break event.data.unwrap_or_default();
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(SseError::NoEndpoint(error.to_string())),
            None => return Err(SseError::NoEndpoint("end of stream".to_owned())),
        }
    };
    let endpoint = resolve_endpoint(&stream_url, given.trim())?;
    Ok(SseTransport {
        client,
        endpoint,
        headers,
        post_timeout,
        messages: messages(events, server),
    })
}

/// The POST URL an `endpoint` event gives, resolved against the stream's URL;
/// refused when it is on another origin.
pub(crate) fn resolve_endpoint(stream: &Url, given: &str) -> Result<Url, SseError> {
    let endpoint = stream.join(given).map_err(SseError::BadEndpoint)?;
    if endpoint.origin() != stream.origin() {
        return Err(SseError::OtherOrigin {
            endpoint: endpoint.origin().ascii_serialization(),
            stream: stream.origin().ascii_serialization(),
        });
    }
    Ok(endpoint)
}

/// The response body as SSE events, each bounded by `limit` bytes.
fn event_stream(
    response: reqwest::Response,
    calls: Arc<InFlightCalls>,
    limit: usize,
) -> BoxStream<'static, Result<Sse, sse_stream::Error>> {
    let mut size = EventSize::new(limit);
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        if size.observe(&chunk) {
            calls.too_large(None, limit);
            return Err(std::io::Error::other(format!(
                "an SSE event exceeded the maximum size of {limit} bytes"
            )));
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// The JSON-RPC messages of the stream's `message` events, until the stream ends
/// or breaks. An event that is not a JSON-RPC message is skipped.
fn messages(
    events: BoxStream<'static, Result<Sse, sse_stream::Error>>,
    server: Arc<str>,
) -> BoxStream<'static, ServerJsonRpcMessage> {
    futures::stream::unfold((events, server), |(mut events, server)| async move {
        loop {
            match events.next().await? {
                Ok(event) => {
                    if !matches!(event.event.as_deref(), None | Some("message")) {
                        continue;
                    }
                    let Some(data) = event.data else { continue };
                    match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                        Ok(message) => return Some((message, (events, server))),
                        Err(error) => tracing::debug!(
                            server = &*server,
                            "MCP server sent an SSE message that is not JSON-RPC: {error}"
                        ),
                    }
                }
                Err(error) => {
                    tracing::debug!(server = &*server, "MCP server's SSE stream broke: {error}");
                    return None;
                }
            }
        }
    })
    .boxed()
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .timeout(self.post_timeout)
            .json(&item);
        async move {
            let response = request.send().await.map_err(SseError::Post)?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::PostStatus(response.status().as_u16()))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.messages.next()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Ending the stream ends the session: a 2024-11-05 server has no DELETE.
        self.messages = futures::stream::empty().boxed();
        Ok(())
    }
}

/// The size of the SSE event being read, as the parser keeps it: its field lines
/// (comments excluded) joined by newlines, reset by the blank line ending it.
struct EventSize {
    limit: usize,
    retained: usize,
    line: usize,
    comment: bool,
    after_cr: bool,
}

impl EventSize {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            retained: 0,
            line: 0,
            comment: false,
            after_cr: false,
        }
    }

    /// Counts `chunk`; whether the event went over the limit.
    fn observe(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\r' | b'\n' => {
                    self.end_line();
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    if self.line == 0 {
                        self.comment = byte == b':';
                    }
                    self.line = self.line.saturating_add(1);
                }
            }
            if self.retained.saturating_add(self.line) > self.limit {
                return true;
            }
        }
        false
    }

    fn end_line(&mut self) {
        if self.line == 0 {
            self.retained = 0;
        } else if !self.comment {
            self.retained = self.retained.saturating_add(self.line).saturating_add(1);
        }
        self.line = 0;
        self.comment = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn a_relative_endpoint_resolves_against_the_stream_url() {
        let stream = url("http://127.0.0.1:3001/sse");
        let endpoint = resolve_endpoint(&stream, "/message?sessionId=abc").unwrap();
        assert_eq!(endpoint.as_str(), "http://127.0.0.1:3001/message?sessionId=abc");
    }

    #[test]
    fn an_endpoint_on_another_scheme_host_or_port_is_refused() {
        let stream = url("https://mcp.example/sse");
        for other in [
            "http://mcp.example/message",
            "https://evil.example/message",
            "https://mcp.example:8443/message",
            "//evil.example/message",
        ] {
            let error = resolve_endpoint(&stream, other).unwrap_err();
            assert!(matches!(error, SseError::OtherOrigin { .. }), "{other}: {error}");
        }
        assert!(resolve_endpoint(&stream, "https://mcp.example:443/message").is_ok());
    }

    #[test]
    fn an_event_counts_until_its_blank_line_and_comments_do_not_count() {
        let mut size = EventSize::new(16);
        assert!(!size.observe(b"data: 0123456\n\n"));
        assert!(!size.observe(b": ping\r\n"));
        assert!(!size.observe(b"data: 0123456\r\n\r\n"));
        assert!(size.observe(b"data: 0123456\ndata: 0123456\n"));
    }
}
