//! [`Driver`]: the state machine that reads one exchange's body and turns it into
//! chunks — first-byte and idle limits, cancellation (nothing decoded before a
//! cancel is delivered after it), the whole-body and head bounds, and retries while
//! nothing of the answer has reached the caller yet (each wait announced with a
//! `Chunk::Retry` notice, then waited on tokio time).

use std::collections::VecDeque;

use engine_ports::{Chunk, LlmError};
use reqwest::Response;
use tokio::time::Instant;

use super::decoder::{Decoder, Failure, Step};
use super::errors::{chain, provider_message};
use super::http_core::{HttpCore, Request, Start};
use super::retry::AttemptError;
use crate::sse::SseParser;

/// Most bytes of a non-streamed answer.
const MAX_WHOLE_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Bytes of a streamed body kept to explain a body that held no events.
const MAX_HEAD_BYTES: usize = 4096;

/// Reads the body of one exchange and turns it into chunks.
pub(super) struct Driver<D> {
    core: std::sync::Arc<HttpCore>,
    request: Request,
    decoder: D,
    response: Option<Response>,
    started: Instant,
    got_byte: bool,
    sse: SseParser,
    whole: Vec<u8>,
    /// The first bytes of a streamed body (see `saw_event`).
    head: Vec<u8>,
    /// Whether the streamed body held any event; without one, an error quotes `head`
    /// (a JSON error sent with a success status, say).
    saw_event: bool,
    pending: VecDeque<Result<Chunk, LlmError>>,
    /// Whether part of the answer (anything but a retry notice) reached the caller.
    emitted: bool,
    finished: bool,
    /// When to make the next attempt, while waiting for it.
    next_attempt: Option<Instant>,
}

/// A body read that did not give bytes or the end.
enum ReadError {
    Cancelled,
    /// Worth a retry if nothing reached the caller yet.
    Retryable(LlmError),
}

impl<D: Decoder> Driver<D> {
    /// A driver for `request`, whose first attempt went as `start` says.
    pub(super) fn new(core: std::sync::Arc<HttpCore>, request: Request, decoder: D, start: Start) -> Self {
        let (response, started, notice) = match start {
            Start::Answer((response, started)) => (Some(response), started, None),
            Start::Retry(notice) => (None, Instant::now(), Some(notice)),
        };
        let mut driver = Self {
            core,
            request,
            decoder,
            response,
            started,
            got_byte: false,
            sse: SseParser::default(),
            whole: Vec::new(),
            head: Vec::new(),
            saw_event: false,
            pending: VecDeque::new(),
            emitted: false,
            finished: false,
            next_attempt: None,
        };
        if let Some(notice) = notice {
            driver.announce(notice);
        }
        driver
    }

    /// Queues the notice of a wait and waits before the next attempt.
    fn announce(&mut self, notice: engine_ports::ModelRetry) {
        self.next_attempt = Some(Instant::now() + notice.wait);
        self.pending.push_back(Ok(Chunk::Retry(notice)));
    }

    /// The next chunk or error; `None` after `Done` or an error.
    pub(super) async fn next_item(&mut self) -> Option<Result<Chunk, LlmError>> {
        loop {
            if self.request.cancel.is_cancelled() && !self.finished {
                // Nothing decoded before the cancel is delivered after it.
                self.pending.clear();
                self.pending.push_back(Err(LlmError::Cancelled));
            }
            if let Some(item) = self.pending.pop_front() {
                if matches!(item, Err(_) | Ok(Chunk::Done)) {
                    self.finished = true;
                    self.pending.clear();
                    self.response = None;
                }
                self.emitted |= !matches!(item, Ok(Chunk::Retry(_)));
                return Some(item);
            }
            if self.finished {
                return None;
            }
            if let Some(at) = self.next_attempt.take() {
                self.attempt_at(at).await;
                continue;
            }
            match self.read().await {
                Ok(Some(bytes)) => {
                    if let Some(retry) = self.feed(&bytes) {
                        self.retry_or_fail(retry);
                    }
                }
                Ok(None) => {
                    if let Some(retry) = self.end() {
                        self.retry_or_fail(retry);
                    }
                }
                Err(ReadError::Cancelled) => self.pending.push_back(Err(LlmError::Cancelled)),
                Err(ReadError::Retryable(error)) => self.retry_or_fail(AttemptError::retryable(error)),
            }
        }
    }

    /// The next piece of the body, within the first-byte or idle limit.
    async fn read(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        let Some(response) = self.response.as_mut() else {
            return Ok(None);
        };
        let (deadline, what) = if self.got_byte {
            (Instant::now() + self.core.timeouts.idle, "idle")
        } else {
            (self.started + self.core.timeouts.first_byte, "first-byte")
        };
        let limit = if self.got_byte {
            self.core.timeouts.idle
        } else {
            self.core.timeouts.first_byte
        };
        let read = tokio::select! {
            () = self.request.cancel.cancelled() => return Err(ReadError::Cancelled),
            read = tokio::time::timeout_at(deadline, response.chunk()) => read,
        };
        match read {
            Ok(Ok(Some(bytes))) => {
                self.got_byte = true;
                Ok(Some(bytes.to_vec()))
            }
            Ok(Ok(None)) => Ok(None),
            Ok(Err(error)) => Err(ReadError::Retryable(self.request.who.transport(format!(
                "the response body from {} broke: {}",
                self.core.shown_url,
                chain(&error.without_url())
            )))),
            Err(_) => Err(ReadError::Retryable(self.request.who.transport(format!(
                "the response from {} stalled: nothing arrived within the {what} limit of {limit:?}",
                self.core.shown_url
            )))),
        }
    }

    /// Decodes bytes; returns a retryable provider error that may warrant a retry.
    fn feed(&mut self, bytes: &[u8]) -> Option<AttemptError> {
        if !self.core.streaming {
            if self.whole.len() + bytes.len() > MAX_WHOLE_BODY_BYTES {
                self.pending
                    .push_back(Err(self.request.who.protocol(format!(
                        "the answer is larger than {MAX_WHOLE_BODY_BYTES} bytes"
                    ))));
                return None;
            }
            self.whole.extend_from_slice(bytes);
            return None;
        }
        if self.head.len() < MAX_HEAD_BYTES {
            let room = MAX_HEAD_BYTES - self.head.len();
            self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        let mut out = Vec::new();
        let events = self.sse.push(bytes);
        self.saw_event |= !events.is_empty();
        for event in events {
            match self.decoder.event(event, &mut out) {
                Ok(Step::Continue) => {}
                Ok(Step::Complete) => {
                    out.push(Chunk::Done);
                    break;
                }
                Err(failure) => return self.fail_with(out, failure),
            }
        }
        self.pending.extend(out.into_iter().map(Ok));
        None
    }

    /// The body ended.
    fn end(&mut self) -> Option<AttemptError> {
        let mut out = Vec::new();
        let result = if self.core.streaming {
            let mut step = Ok(Step::Continue);
            if let Some(event) = self.sse.finish() {
                self.saw_event = true;
                step = self.decoder.event(event, &mut out);
            }
            match step {
                Ok(Step::Complete) => Ok(()),
                Ok(Step::Continue) => self.decoder.end(&mut out).map_err(|failure| match failure {
                    Failure::Protocol(message) if !self.saw_event && !self.head.is_empty() => {
                        Failure::Protocol(format!(
                            "{message}; the body held no server-sent events: {}",
                            provider_message(&self.head)
                        ))
                    }
                    other => other,
                }),
                Err(failure) => Err(failure),
            }
        } else {
            let body = std::mem::take(&mut self.whole);
            self.decoder.whole(&body, &mut out)
        };
        match result {
            Ok(()) => {
                out.push(Chunk::Done);
                self.pending.extend(out.into_iter().map(Ok));
                None
            }
            Err(failure) => self.fail_with(out, failure),
        }
    }

    /// Queues `out` then the failure; a retryable provider error with nothing before
    /// it is handed back for a retry instead.
    fn fail_with(&mut self, out: Vec<Chunk>, failure: Failure) -> Option<AttemptError> {
        let retryable = matches!(failure, Failure::Provider { retryable: true, .. });
        let error = self.request.who.failure(failure);
        if retryable && out.is_empty() && self.pending.is_empty() && !self.emitted {
            return Some(AttemptError::retryable(error));
        }
        self.pending.extend(out.into_iter().map(Ok));
        self.pending.push_back(Err(error));
        None
    }

    /// Announces a retry when nothing reached the caller and the policy allows;
    /// otherwise queues the error.
    fn retry_or_fail(&mut self, failed: AttemptError) {
        self.response = None;
        if self.emitted || !self.pending.is_empty() {
            self.pending.push_back(Err(failed.error));
            return;
        }
        match self.core.plan_retry(&self.request, failed) {
            Ok(notice) => self.announce(notice),
            Err(error) => self.pending.push_back(Err(error)),
        }
    }

    /// Waits until `at` (cancellably), then makes the next attempt.
    async fn attempt_at(&mut self, at: Instant) {
        let cancel = self.request.cancel.clone();
        tokio::select! {
            () = cancel.cancelled() => {
                self.pending.push_back(Err(LlmError::Cancelled));
                return;
            }
            () = tokio::time::sleep_until(at) => {}
        }
        match self.core.attempt(&mut self.request).await {
            Ok(Ok((response, started))) => {
                self.response = Some(response);
                self.started = started;
                self.got_byte = false;
                self.sse = SseParser::default();
                self.whole.clear();
                self.head.clear();
                self.saw_event = false;
                self.decoder.reset();
            }
            Ok(Err(failed)) => self.retry_or_fail(failed),
            Err(error) => self.pending.push_back(Err(error)),
        }
    }
}
