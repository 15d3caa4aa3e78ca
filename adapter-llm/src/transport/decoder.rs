//! What one provider's wire format supplies to the shared exchange: a [`Decoder`]
//! of events or whole bodies, whether an answer is complete ([`Step`]) and what went
//! wrong while decoding ([`Failure`]), with the failures both wire formats share
//! ([`parse_whole`], [`Failure::in_body`]).

use engine_ports::Chunk;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::errors::provider_message;
use crate::sse::SseEvent;

/// What one provider's wire format does with the response body.
pub(crate) trait Decoder: Send + 'static {
    /// Handles one server-sent event, appending chunks to `out`.
    fn event(&mut self, event: SseEvent, out: &mut Vec<Chunk>) -> Result<Step, Failure>;

    /// The body ended without the completion marker: finish (`Ok`) or fail.
    fn end(&mut self, out: &mut Vec<Chunk>) -> Result<(), Failure>;

    /// Decodes a whole non-streamed answer.
    fn whole(&mut self, body: &[u8], out: &mut Vec<Chunk>) -> Result<(), Failure>;

    /// Forgets everything (before a retry).
    fn reset(&mut self);
}

/// Whether the answer is complete after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// More events follow.
    Continue,
    /// The completion marker arrived.
    Complete,
}

/// What went wrong while decoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The body breaks the wire format.
    Protocol(String),
    /// The provider reported an error inside the body; `retryable` when it is an
    /// overload or server error.
    Provider {
        /// The provider's message.
        message: String,
        /// Worth another attempt when nothing reached the caller yet.
        retryable: bool,
    },
}

impl Failure {
    /// The `error` object a provider sent inside the body, with the provider's message.
    pub(crate) fn in_body(error: Value, retryable: bool) -> Self {
        Self::Provider {
            message: provider_message(json!({ "error": error }).to_string().as_bytes()),
            retryable,
        }
    }
}

/// A whole non-streamed answer as `T`; a body that is not `what` (`"a message"`) is a
/// protocol failure quoting the body's start.
pub(crate) fn parse_whole<T: DeserializeOwned>(body: &[u8], what: &str) -> Result<T, Failure> {
    serde_json::from_slice(body).map_err(|error| {
        Failure::Protocol(format!(
            "the answer is not {what} ({error}): {:.200}",
            String::from_utf8_lossy(body)
        ))
    })
}
