//! The byte transport of the ACP server: newline-delimited JSON-RPC read with a
//! bounded line reader, so that no input can end the connection or grow memory.
//!
//! The protocol crate's own reader stops the whole connection (every session) at the
//! first line that is not UTF-8, buffers a line of any length, and its parse-error
//! answers quote the whole offending line. Here each line is read into a buffer that
//! never grows past [`MAX_ACP_LINE_BYTES`]: a longer line is discarded up to its
//! newline while it is read, and a line that is too long, not UTF-8, or long and not
//! JSON reaches the protocol layer as a short description instead. Every description
//! starts with `<`, which no JSON value does, so the protocol layer answers it like any
//! malformed line — a JSON-RPC parse error (-32700) with `id: null` whose data quotes
//! only the description — and the connection goes on with the next line.

use std::io;
use std::pin::Pin;

use agent_client_protocol::{Agent, ConnectTo, Lines};
use futures::{Sink, Stream};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

/// The longest line read from an ACP client (8 MiB); a longer one is answered with a
/// parse error and skipped without being buffered.
pub const MAX_ACP_LINE_BYTES: usize = 8 * 1024 * 1024;

/// How much of a malformed line an error answer quotes.
const QUOTE_CAP: usize = 200;

/// The ACP transport over this process's stdin and stdout.
pub fn acp_stdio_transport() -> impl ConnectTo<Agent> + 'static {
    acp_line_transport(tokio::io::stdin(), tokio::io::stdout())
}

/// The ACP transport over any byte streams: lines from `reader` (at most
/// [`MAX_ACP_LINE_BYTES`] each), frames to `writer`, one per line.
pub fn acp_line_transport<R, W>(reader: R, writer: W) -> impl ConnectTo<Agent> + 'static
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let incoming: Pin<Box<dyn Stream<Item = io::Result<String>> + Send>> =
        Box::pin(incoming_lines(BufReader::new(reader), MAX_ACP_LINE_BYTES));
    let outgoing: Pin<Box<dyn Sink<String, Error = io::Error> + Send>> = Box::pin(futures::sink::unfold(
        writer,
        |mut writer: W, line: String| async move {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await?;
            Ok::<_, io::Error>(writer)
        },
    ));
    Lines::new(outgoing, incoming)
}

/// The lines of `reader` as the protocol layer takes them; a read error ends the
/// stream after it is reported.
fn incoming_lines<R>(reader: R, cap: usize) -> impl Stream<Item = io::Result<String>> + Send
where
    R: AsyncBufRead + Send + Unpin,
{
    futures::stream::unfold(Some(LineReader::new(reader, cap)), |state| async move {
        let mut reader = state?;
        match reader.next_line().await {
            Ok(Some(line)) => Some((Ok(line), Some(reader))),
            Ok(None) => None,
            Err(error) => Some((Err(error), None)),
        }
    })
}

/// Reads lines of at most `cap` bytes: the line buffer never holds more than `cap`
/// bytes (nor reserves more), whatever the input.
struct LineReader<R> {
    reader: R,
    cap: usize,
    line: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    fn new(reader: R, cap: usize) -> Self {
        Self {
            reader,
            cap,
            line: Vec::new(),
        }
    }

    /// The next line without its `\n` (or `\r\n`), replaced by a description when it
    /// is longer than the cap, not UTF-8, or longer than [`QUOTE_CAP`] and not JSON;
    /// `None` at the end of the input.
    async fn next_line(&mut self) -> io::Result<Option<String>> {
        self.line.clear();
        // Bytes of the current line so far (newline excluded), held or discarded.
        let mut length = 0usize;
        let mut overflowed = false;
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                // The end of the input: a last line without a newline is still a line.
                if length == 0 {
                    return Ok(None);
                }
                break;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..newline.unwrap_or(available.len())];
            length = length.saturating_add(chunk.len());
            if !overflowed && length <= self.cap {
                reserve_within(&mut self.line, chunk.len(), self.cap);
                self.line.extend_from_slice(chunk);
            } else if !overflowed {
                overflowed = true;
                self.line = Vec::new();
            }
            let consumed = chunk.len() + usize::from(newline.is_some());
            self.reader.consume(consumed);
            if newline.is_some() {
                break;
            }
        }
        if overflowed {
            return Ok(Some(format!(
                "<a line longer than the {} byte limit was discarded>",
                self.cap
            )));
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        let line = std::mem::take(&mut self.line);
        Ok(Some(match String::from_utf8(line) {
            Ok(text) => quoted_if_malformed(text),
            Err(error) => {
                let offset = error.utf8_error().valid_up_to();
                let bytes = error.into_bytes();
                format!(
                    "<a line of {} bytes is not valid UTF-8 (byte 0x{:02X} at offset {offset})>",
                    bytes.len(),
                    bytes[offset]
                )
            }
        }))
    }
}

/// Grows `line` for `extra` more bytes, doubling as usual but never reserving past
/// `cap` (the caller checked that the line fits).
fn reserve_within(line: &mut Vec<u8>, extra: usize, cap: usize) {
    let needed = line.len() + extra;
    if needed > line.capacity() {
        let target = needed.max(line.capacity().saturating_mul(2)).min(cap);
        line.reserve_exact(target - line.len());
    }
}

/// `text` itself when it is short or JSON (the protocol layer quotes short malformed
/// lines and never quotes JSON); else a description quoting its first
/// [`QUOTE_CAP`] bytes, so a parse-error answer stays short.
fn quoted_if_malformed(text: String) -> String {
    if text.len() <= QUOTE_CAP || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
        return text;
    }
    let mut end = QUOTE_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "<a line of {} bytes is not valid JSON; it starts with {:?}>",
        text.len(),
        &text[..end]
    )
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;

    use super::*;

    async fn lines(input: &[u8], cap: usize) -> Vec<String> {
        incoming_lines(input, cap)
            .map(|line| line.unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn lines_split_on_newlines_like_the_protocol_reader() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\n{\"b\":2}\nlast", 64).await,
            ["{\"a\":1}", "", "{\"b\":2}", "last"]
        );
        assert!(lines(b"", 64).await.is_empty());
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_becomes_a_description_and_reading_goes_on() {
        let got = lines(b"{\"a\":\"\xff\"}\n{\"b\":2}\n", 64).await;
        assert_eq!(got.len(), 2);
        assert!(
            got[0].starts_with('<') && got[0].contains("not valid UTF-8"),
            "{got:?}"
        );
        assert!(got[0].contains("0xFF") && got[0].contains("offset 6"), "{got:?}");
        assert!(serde_json::from_str::<serde_json::Value>(&got[0]).is_err());
        assert_eq!(got[1], "{\"b\":2}");
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_skipped_to_its_newline_without_being_buffered() {
        let cap = 1024;
        let mut input = vec![b'x'; 1024 * 1024];
        input.push(b'\n');
        input.extend_from_slice(b"{\"next\":true}\n");
        input.extend_from_slice(&[b'y'; 1024]);
        input.extend_from_slice(b"\n");
        let mut reader = LineReader::new(BufReader::with_capacity(4096, input.as_slice()), cap);
        let first = reader.next_line().await.unwrap().unwrap();
        assert!(first.contains("longer than the 1024 byte limit"), "{first}");
        assert!(reader.line.capacity() <= cap);
        assert_eq!(reader.next_line().await.unwrap().unwrap(), "{\"next\":true}");
        // Exactly at the cap is still a line (quoted short: it is not JSON).
        let at_cap = reader.next_line().await.unwrap().unwrap();
        assert!(at_cap.contains("1024 bytes is not valid JSON"), "{at_cap}");
        assert!(reader.line.capacity() <= cap);
        assert!(reader.next_line().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn the_buffer_never_reserves_past_the_cap() {
        let cap = 10_000;
        let input = format!("\"{}\"\n", "z".repeat(cap - 2));
        let mut reader = LineReader::new(BufReader::with_capacity(64, input.as_bytes()), cap);
        let line = reader.next_line().await.unwrap().unwrap();
        assert_eq!(line.len(), cap, "a JSON string exactly at the cap passes whole");
        let mut line = Vec::new();
        for _ in 0..100 {
            reserve_within(&mut line, 64, cap);
            line.extend_from_slice(&[0; 64]);
            assert!(line.capacity() <= cap, "{}", line.capacity());
        }
    }

    #[test]
    fn long_malformed_lines_are_quoted_short_and_json_passes_whole() {
        let long = format!("{{\"jsonrpc\":\"2.0\",\"params\":{}", "é".repeat(100_000));
        let quoted = quoted_if_malformed(long.clone());
        assert!(quoted.len() < 400, "{}", quoted.len());
        assert!(quoted.starts_with("<a line of ") && quoted.contains("not valid JSON"));
        assert!(serde_json::from_str::<serde_json::Value>(&quoted).is_err());
        let json = format!("{{\"text\":\"{}\"}}", "a".repeat(10_000));
        assert_eq!(quoted_if_malformed(json.clone()), json);
        assert_eq!(quoted_if_malformed("{oops".to_owned()), "{oops");
    }
}
