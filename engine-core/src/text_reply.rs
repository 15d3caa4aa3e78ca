//! Reading the reply to a tool-less request — a compaction summary, a delegation side
//! request (a `Parallel` judge, a child's salvage turn) — to its end: its text, kept up
//! to [`MAX_TEXT_REPLY_BYTES`], and the usage it reported. Nothing of it is streamed to
//! a run's consumers.

use engine_ports::{Chunk, ChunkStream, LlmError, Usage};
use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;

/// Most text kept of a tool-less reply; the stream is still read to its end.
pub(crate) const MAX_TEXT_REPLY_BYTES: usize = 1 << 20;

/// Why a tool-less reply was not read to its end.
pub(crate) enum ReplyError {
    /// `cancel` fired.
    Cancelled,
    /// The stream failed.
    Failed(LlmError),
}

/// Reads `stream` to its end (or until `cancel` fires): its text and usage. Reasoning
/// and any stray tool call are not part of the text.
///
/// # Errors
/// [`ReplyError`]: cancelled, or the stream's error.
pub(crate) async fn read_text_reply(
    mut stream: ChunkStream,
    cancel: &CancellationToken,
) -> Result<(String, Usage), ReplyError> {
    let mut text = String::new();
    let mut usage = Usage::default();
    loop {
        let item = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ReplyError::Cancelled),
            item = stream.next() => item,
        };
        match item {
            None | Some(Ok(Chunk::Done)) => return Ok((text, usage)),
            Some(Ok(Chunk::Text(piece))) => {
                if text.len() < MAX_TEXT_REPLY_BYTES {
                    text.push_str(&piece);
                }
            }
            Some(Ok(Chunk::Usage(reported))) => usage += reported,
            // A reply cut off by the output limit keeps the text it has; retry notices
            // are not part of it.
            Some(Ok(Chunk::Reasoning(_) | Chunk::ToolCall(_) | Chunk::Truncated | Chunk::Retry(_))) => {}
            Some(Err(error)) => return Err(ReplyError::Failed(error)),
        }
    }
}
