//! The HTTP exchange both providers share, one job per module:
//!
//! - [`decoder`]: what a wire format supplies (`Decoder`, `Step`, `Failure`);
//! - [`http_core`]: `HttpCore`, one provider's client and settings, and the
//!   connect loop that retries before the first chunk within the time limits;
//! - [`retry`]: which failed attempts are retried and how long to wait;
//! - [`errors`]: the error texts (`Who`, status and provider messages, redaction);
//! - [`driver`]: the state machine that turns a response body into chunks
//!   (cancellation, idle limits, retries while nothing reached the caller).

mod decoder;
mod driver;
mod errors;
mod http_core;
mod retry;

pub(crate) use decoder::{Decoder, Failure, Step, parse_whole};
pub use errors::MAX_PROVIDER_MESSAGE_BYTES;
pub(crate) use http_core::HttpCore;
