//! A reply over the size limit of one message, told to its request as soon as it
//! passes the limit rather than after the request's time limits.
//!
//! rmcp bounds every message it reads (16 MiB: a stdio line, an HTTP JSON body, an
//! SSE event), but only over HTTP does the request hear of it, and then as a
//! transport error; over stdio the line is dropped and its request waits for its
//! timeout. So the transports are watched here: [`LineWatch`] counts each stdio
//! line and, once one passes the limit, tells the request it answers (its id is
//! read from the start of the line; a line whose id comes after its result is
//! taken for the one request in flight); our HTTP client marks the request of a
//! POST whose body or SSE event went over (`http.rs`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::model::RequestId;
use tokio::io::{AsyncRead, ReadBuf};

use crate::calls::InFlightCalls;

/// The size limit of one message read from a server: rmcp's limit of a stdio line,
/// of an HTTP JSON body and of an SSE event (the same 16 MiB).
pub(crate) const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How much of a line is kept to find the id of the request it answers.
const HEAD_BYTES: usize = 512;

/// A stdio server's output, passed through unchanged, with each line's length
/// counted as rmcp counts it (its newline included).
pub(crate) struct LineWatch<R> {
    inner: R,
    calls: Arc<InFlightCalls>,
    limit: usize,
    /// Bytes of the current line so far.
    line: usize,
    head: Vec<u8>,
    reported: bool,
}

impl<R> LineWatch<R> {
    /// Watches `inner` for lines over `limit` bytes, telling `calls`.
    pub(crate) fn new(inner: R, calls: Arc<InFlightCalls>, limit: usize) -> Self {
        Self {
            inner,
            calls,
            limit,
            line: 0,
            head: Vec::with_capacity(HEAD_BYTES),
            reported: false,
        }
    }

    fn observe(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|b| *b == b'\n');
            let take = newline.map_or(bytes.len(), |at| at + 1);
            let keep = take.min(HEAD_BYTES - self.head.len());
            self.head.extend_from_slice(&bytes[..keep]);
            self.line = self.line.saturating_add(take);
            if self.line > self.limit && !self.reported {
                self.reported = true;
                self.report();
            }
            if newline.is_some() {
                self.line = 0;
                self.head.clear();
                self.reported = false;
            }
            bytes = &bytes[take..];
        }
    }

    fn report(&self) {
        let told = match reply_id(&self.head) {
            Head::Reply(id) => self.calls.too_large(Some(&id), self.limit),
            Head::Unknown => self.calls.too_large(None, self.limit),
            Head::NotReply => false,
        };
        if !told {
            tracing::warn!(
                limit = self.limit,
                "an MCP server sent a message over the size limit that answers no request in flight; it was discarded"
            );
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let this = &mut *self;
            this.observe(&buf.filled()[before..]);
        }
        polled
    }
}

/// What the start of a JSON-RPC message says about the request it answers.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// A reply to the request with this id.
    Reply(RequestId),
    /// A request or notification of the server's.
    NotReply,
    /// The start does not say (the id comes later, or the text is not JSON).
    Unknown,
}

/// Reads the top-level members of the JSON object `head` starts until it meets
/// `id` (a reply) or `method` (not one).
fn reply_id(head: &[u8]) -> Head {
    let mut at = skip_space(head, 0);
    if head.get(at) != Some(&b'{') {
        return Head::Unknown;
    }
    at += 1;
    loop {
        at = skip_space(head, at);
        let Some(key_end) = skip_value(head, at).filter(|_| head.get(at) == Some(&b'"')) else {
            return Head::Unknown;
        };
        let key = &head[at..key_end];
        at = skip_space(head, key_end);
        if head.get(at) != Some(&b':') {
            return Head::Unknown;
        }
        at = skip_space(head, at + 1);
        let Some(value_end) = skip_value(head, at) else {
            return Head::Unknown;
        };
        match key {
            b"\"id\"" => {
                return serde_json::from_slice(&head[at..value_end]).map_or(Head::Unknown, Head::Reply);
            }
            b"\"method\"" => return Head::NotReply,
            _ => {}
        }
        at = skip_space(head, value_end);
        if head.get(at) != Some(&b',') {
            return Head::Unknown;
        }
        at += 1;
    }
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while text.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The end of the JSON value starting at `at`, if it ends within `text`.
fn skip_value(text: &[u8], at: usize) -> Option<usize> {
    let first = *text.get(at)?;
    if first != b'"' && first != b'{' && first != b'[' {
        // A scalar: it ends where a delimiter starts (not at the end of the text,
        // where a number may go on).
        let len = text[at..]
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
        return Some(at + len);
    }
    let mut depth = 0_usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, byte) in text[at..].iter().enumerate() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    in_string = false;
                    if depth == 0 {
                        return Some(at + offset + 1);
                    }
                }
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_of_a_message_names_the_request_it_answers() {
        let reply = |text: &str| reply_id(text.as_bytes());
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xx"#),
            Head::Reply(RequestId::Number(7))
        );
        assert_eq!(
            reply(r#" { "jsonrpc" : "2.0" , "id" : "a\"b", "result": "#),
            Head::Reply(RequestId::String("a\"b".into()))
        );
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"#),
            Head::NotReply
        );
        // The TypeScript SDK writes the result before the id.
        assert_eq!(
            reply(r#"{"result":{"content":[{"type":"text","text":"xx"#),
            Head::Unknown
        );
        // A number cut by the end of the head may go on.
        assert_eq!(reply(r#"{"jsonrpc":"2.0","id":12"#), Head::Unknown);
        assert_eq!(reply("not json"), Head::Unknown);
    }

    #[tokio::test]
    async fn a_stdio_line_over_the_limit_fails_its_request_once_it_passes_the_limit() {
        use tokio::io::AsyncReadExt as _;

        let calls = Arc::new(InFlightCalls::default());
        let token = |n| rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(n));
        let other = calls.register(RequestId::Number(1), token(1), None);
        let big = calls.register(RequestId::Number(2), token(2), None);
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut watch = LineWatch::new(reader, Arc::clone(&calls), 40);
        let reading = tokio::spawn(async move {
            let mut all = Vec::new();
            watch.read_to_end(&mut all).await.map(|_| all)
        });
        use tokio::io::AsyncWriteExt as _;
        // A line of exactly the limit (its newline included) is fine.
        let fits = format!("{{\"id\":1,\"result\":\"{}\"}}\n", "x".repeat(19));
        assert_eq!(fits.len(), 40);
        writer.write_all(fits.as_bytes()).await.unwrap();
        writer
            .write_all(br#"{"jsonrpc":"2.0","id":2,"result":{"text":"#)
            .await
            .unwrap();
        // The line has passed the limit and has not ended.
        assert_eq!(big.too_large().await, 40);
        writer.write_all(b"\"}}\n").await.unwrap();
        drop(writer);
        let passed = reading.await.unwrap().unwrap();
        assert!(
            passed.starts_with(fits.as_bytes()),
            "bytes pass through unchanged"
        );
        assert!(passed.ends_with(b"\"}}\n"));
        use futures::FutureExt as _;
        assert_eq!(
            other.too_large().now_or_never(),
            None,
            "the reply within the limit marks nothing"
        );
    }
}
