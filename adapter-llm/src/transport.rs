//! The HTTP exchange both providers share: retries before the first chunk, time
//! limits, cancellation, error texts, and the body-to-chunks driver.

use std::collections::VecDeque;
use std::time::Duration;

use engine_ports::{Chunk, ChunkStream, LlmError};
use futures::StreamExt as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, StatusCode, Url};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{ApiKey, HttpProviderConfig, ProviderKind, RetryPolicy, Timeouts};
use crate::sse::{SseEvent, SseParser};

/// Longest provider message quoted in an error, in bytes.
pub const MAX_PROVIDER_MESSAGE_BYTES: usize = 500;

/// Most bytes of an error body read to find the provider's message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Most bytes of a non-streamed answer.
const MAX_WHOLE_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Bytes of a streamed body kept to explain a body that held no events.
const MAX_HEAD_BYTES: usize = 4096;

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

/// The provider and model a request is for; every error names both.
#[derive(Clone, Debug)]
pub(crate) struct Who {
    pub(crate) kind: ProviderKind,
    pub(crate) model: String,
}

impl Who {
    fn provider(&self) -> String {
        self.kind.as_str().to_owned()
    }

    pub(crate) fn protocol(&self, message: impl Into<String>) -> LlmError {
        LlmError::Protocol {
            provider: self.provider(),
            model: self.model.clone(),
            message: message.into(),
        }
    }

    pub(crate) fn transport(&self, message: impl Into<String>) -> LlmError {
        LlmError::Transport {
            provider: self.provider(),
            model: self.model.clone(),
            message: message.into(),
        }
    }

    pub(crate) fn config(&self, message: impl Into<String>) -> LlmError {
        LlmError::Config {
            provider: self.provider(),
            message: message.into(),
        }
    }

    fn too_long(&self, message: String) -> LlmError {
        LlmError::ContextTooLong {
            provider: self.provider(),
            model: self.model.clone(),
            message,
        }
    }

    fn status(&self, status: StatusCode, message: String) -> LlmError {
        LlmError::Status {
            provider: self.provider(),
            model: self.model.clone(),
            status: status.as_u16(),
            message,
        }
    }

    fn failure(&self, failure: Failure) -> LlmError {
        match failure {
            Failure::Protocol(message) => self.protocol(message),
            Failure::Provider { message, .. } => {
                self.transport(format!("the provider reported an error mid-stream: {message}"))
            }
        }
    }
}

/// The settings and client of one HTTP provider.
#[derive(Debug)]
pub(crate) struct HttpCore {
    pub(crate) kind: ProviderKind,
    client: reqwest::Client,
    url: Url,
    shown_url: String,
    model: String,
    api_key: ApiKey,
    headers: HeaderMap,
    timeouts: Timeouts,
    retry: RetryPolicy,
    pub(crate) streaming: bool,
}

impl HttpCore {
    /// A core posting to `<base>` + `path`, with `headers` (marked sensitive) on every
    /// request.
    pub(crate) fn new(
        kind: ProviderKind,
        config: HttpProviderConfig,
        path: &str,
        headers: Vec<(&'static str, String)>,
    ) -> Result<Self, LlmError> {
        let model = config
            .model
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| kind.default_model().to_owned());
        let who = Who {
            kind,
            model: model.clone(),
        };
        let base = config
            .base_url
            .clone()
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| kind.default_base_url().to_owned());
        let joined = format!("{}{path}", base.trim_end_matches('/'));
        let url =
            Url::parse(&joined).map_err(|error| who.config(format!("invalid base URL {base:?}: {error}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(who.config(format!(
                "invalid base URL {base:?}: expected an http:// or https:// URL"
            )));
        }
        let mut shown = url.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        let mut header_map = HeaderMap::new();
        for (name, value) in headers {
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                who.config(format!(
                    "the value for header {name} holds characters HTTP does not allow (check {})",
                    kind.api_key_env()
                ))
            })?;
            value.set_sensitive(true);
            header_map.insert(HeaderName::from_static(name), value);
        }
        let client = reqwest::Client::builder()
            .user_agent(concat!("mecatl-adapter-llm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| who.config(format!("cannot build the HTTP client: {}", chain(&error))))?;
        Ok(Self {
            kind,
            client,
            url,
            shown_url: shown.to_string(),
            model,
            api_key: config.api_key,
            headers: header_map,
            timeouts: config.timeouts,
            retry: config.retry,
            streaming: config.streaming,
        })
    }

    /// The provider and model of a request (its own `model` wins when set).
    pub(crate) fn who(&self, request_model: &str) -> Who {
        Who {
            kind: self.kind,
            model: if request_model.is_empty() {
                self.model.clone()
            } else {
                request_model.to_owned()
            },
        }
    }

    /// Sends `body` (retrying as the policy allows) and returns the chunk stream.
    pub(crate) async fn exchange(
        self: &std::sync::Arc<Self>,
        who: Who,
        body: Vec<u8>,
        decoder: impl Decoder,
        cancel: CancellationToken,
    ) -> Result<ChunkStream, LlmError> {
        tracing::debug!(provider = who.kind.as_str(), model = %who.model, url = %self.shown_url, "model request");
        let mut attempts = 0u32;
        let (response, started) = self.connect(&who, &body, &mut attempts, &cancel).await?;
        let driver = Driver {
            core: std::sync::Arc::clone(self),
            who,
            body,
            decoder,
            cancel,
            attempts,
            response: Some(response),
            started,
            got_byte: false,
            sse: SseParser::default(),
            whole: Vec::new(),
            head: Vec::new(),
            saw_event: false,
            pending: VecDeque::new(),
            emitted: false,
            finished: false,
        };
        Ok(futures::stream::unfold(driver, |mut driver| async move {
            driver.next_item().await.map(|item| (item, driver))
        })
        .boxed())
    }

    /// Attempts until a success status arrives, the policy gives up, or `cancel`.
    async fn connect(
        &self,
        who: &Who,
        body: &[u8],
        attempts: &mut u32,
        cancel: &CancellationToken,
    ) -> Result<(Response, Instant), LlmError> {
        loop {
            *attempts += 1;
            let started = Instant::now();
            let send = self
                .client
                .post(self.url.clone())
                .headers(self.headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(
                    reqwest::header::ACCEPT,
                    if self.streaming {
                        "text/event-stream"
                    } else {
                        "application/json"
                    },
                )
                .body(body.to_vec())
                .send();
            let outcome = tokio::select! {
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                outcome = tokio::time::timeout(self.timeouts.first_byte, send) => outcome,
            };
            let attempt_error = match outcome {
                Ok(Ok(response)) if response.status().is_success() => return Ok((response, started)),
                Ok(Ok(response)) => self.status_error(who, response, cancel).await?,
                Ok(Err(error)) => AttemptError::retryable(who.transport(format!(
                    "POST {} failed: {}",
                    self.shown_url,
                    chain(&error.without_url())
                ))),
                Err(_) => AttemptError::retryable(who.transport(format!(
                    "no response from {} within {:?}",
                    self.shown_url, self.timeouts.first_byte
                ))),
            };
            let delay = self.retry_delay(who, *attempts, &attempt_error)?;
            tokio::select! {
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// The wait before the next attempt, or the error when there is none.
    fn retry_delay(&self, who: &Who, attempts: u32, failed: &AttemptError) -> Result<Duration, LlmError> {
        if !failed.retryable || attempts >= self.retry.max_attempts {
            return Err(failed.error.clone());
        }
        let backoff = self.retry.backoff(attempts, fastrand::f64());
        let delay = match failed.retry_after {
            Some(asked) if asked > self.retry.max_retry_after => {
                tracing::warn!(
                    provider = who.kind.as_str(), model = %who.model, retry_after = ?asked,
                    "the provider asked to wait longer than allowed; not retrying"
                );
                return Err(failed.error.clone());
            }
            Some(asked) => asked.max(backoff),
            None => backoff,
        };
        tracing::warn!(
            provider = who.kind.as_str(), model = %who.model, attempt = attempts, delay = ?delay,
            error = %failed.error, "model request failed; retrying"
        );
        Ok(delay)
    }

    /// Turns an error status into an attempt error with the provider's message.
    async fn status_error(
        &self,
        who: &Who,
        mut response: Response,
        cancel: &CancellationToken,
    ) -> Result<AttemptError, LlmError> {
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let mut body = Vec::new();
        let read = async {
            while body.len() < MAX_ERROR_BODY_BYTES {
                match response.chunk().await {
                    Ok(Some(bytes)) => body.extend_from_slice(&bytes),
                    Ok(None) | Err(_) => break,
                }
            }
        };
        tokio::select! {
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            _ = tokio::time::timeout(self.timeouts.idle, read) => {}
        }
        let mut message = self.redact(&provider_message(&body));
        if message.is_empty() {
            message = status.canonical_reason().unwrap_or("no message").to_owned();
        }
        if matches!(status.as_u16(), 401 | 403) {
            message.push_str(&format!(
                " (check {}: the provider rejected the key or its permissions)",
                self.kind.api_key_env()
            ));
        } else if status.as_u16() == 404 {
            message.push_str(&format!(
                " (check the base URL {} and the model name)",
                self.shown_url
            ));
        }
        if status.is_client_error() && self.is_context_too_long(&body) {
            return Ok(AttemptError {
                error: who.too_long(message),
                retryable: false,
                retry_after: None,
            });
        }
        let retryable = matches!(status.as_u16(), 408 | 429 | 529) || status.is_server_error();
        Ok(AttemptError {
            error: who.status(status, message),
            retryable,
            retry_after,
        })
    }

    /// Whether an error body is this provider's "the prompt does not fit the context
    /// window" refusal.
    fn is_context_too_long(&self, body: &[u8]) -> bool {
        match self.kind {
            ProviderKind::OpenAiChat => crate::openai::is_context_too_long(body),
            ProviderKind::Anthropic => crate::anthropic::is_context_too_long(body),
        }
    }

    /// Removes the key from a provider message, should the provider echo it.
    fn redact(&self, message: &str) -> String {
        let key = self.api_key.expose();
        if key.len() >= 4 {
            message.replace(key, "<redacted>")
        } else {
            message.to_owned()
        }
    }
}

/// One failed attempt.
#[derive(Debug)]
struct AttemptError {
    error: LlmError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl AttemptError {
    fn retryable(error: LlmError) -> Self {
        Self {
            error,
            retryable: true,
            retry_after: None,
        }
    }
}

/// Reads the body of one exchange and turns it into chunks.
struct Driver<D> {
    core: std::sync::Arc<HttpCore>,
    who: Who,
    body: Vec<u8>,
    decoder: D,
    cancel: CancellationToken,
    attempts: u32,
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
    emitted: bool,
    finished: bool,
}

/// A body read that did not give bytes or the end.
enum ReadError {
    Cancelled,
    /// Worth a retry if nothing reached the caller yet.
    Retryable(LlmError),
}

impl<D: Decoder> Driver<D> {
    async fn next_item(&mut self) -> Option<Result<Chunk, LlmError>> {
        loop {
            if self.cancel.is_cancelled() && !self.finished {
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
                self.emitted = true;
                return Some(item);
            }
            if self.finished {
                return None;
            }
            match self.read().await {
                Ok(Some(bytes)) => {
                    if let Some(retry) = self.feed(&bytes) {
                        self.retry_or_fail(retry).await;
                    }
                }
                Ok(None) => {
                    if let Some(retry) = self.end() {
                        self.retry_or_fail(retry).await;
                    }
                }
                Err(ReadError::Cancelled) => self.pending.push_back(Err(LlmError::Cancelled)),
                Err(ReadError::Retryable(error)) => self.retry_or_fail(AttemptError::retryable(error)).await,
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
            () = self.cancel.cancelled() => return Err(ReadError::Cancelled),
            read = tokio::time::timeout_at(deadline, response.chunk()) => read,
        };
        match read {
            Ok(Ok(Some(bytes))) => {
                self.got_byte = true;
                Ok(Some(bytes.to_vec()))
            }
            Ok(Ok(None)) => Ok(None),
            Ok(Err(error)) => Err(ReadError::Retryable(self.who.transport(format!(
                "the response body from {} broke: {}",
                self.core.shown_url,
                chain(&error.without_url())
            )))),
            Err(_) => Err(ReadError::Retryable(self.who.transport(format!(
                "the response from {} stalled: nothing arrived within the {what} limit of {limit:?}",
                self.core.shown_url
            )))),
        }
    }

    /// Decodes bytes; returns a retryable provider error that may warrant a retry.
    fn feed(&mut self, bytes: &[u8]) -> Option<AttemptError> {
        if !self.core.streaming {
            if self.whole.len() + bytes.len() > MAX_WHOLE_BODY_BYTES {
                self.pending.push_back(Err(self
                    .who
                    .protocol(format!("the answer is larger than {MAX_WHOLE_BODY_BYTES} bytes"))));
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
        let error = self.who.failure(failure);
        if retryable && out.is_empty() && self.pending.is_empty() && !self.emitted {
            return Some(AttemptError::retryable(error));
        }
        self.pending.extend(out.into_iter().map(Ok));
        self.pending.push_back(Err(error));
        None
    }

    /// Retries when nothing reached the caller and the policy allows; otherwise queues
    /// the error.
    async fn retry_or_fail(&mut self, failed: AttemptError) {
        self.response = None;
        if self.emitted || !self.pending.is_empty() {
            self.pending.push_back(Err(failed.error));
            return;
        }
        let delay = match self.core.retry_delay(&self.who, self.attempts, &failed) {
            Ok(delay) => delay,
            Err(error) => {
                self.pending.push_back(Err(error));
                return;
            }
        };
        tokio::select! {
            () = self.cancel.cancelled() => {
                self.pending.push_back(Err(LlmError::Cancelled));
                return;
            }
            () = tokio::time::sleep(delay) => {}
        }
        match self
            .core
            .connect(&self.who, &self.body, &mut self.attempts, &self.cancel)
            .await
        {
            Ok((response, started)) => {
                self.response = Some(response);
                self.started = started;
                self.got_byte = false;
                self.sse = SseParser::default();
                self.whole.clear();
                self.head.clear();
                self.saw_event = false;
                self.decoder.reset();
            }
            Err(error) => self.pending.push_back(Err(error)),
        }
    }
}

/// The error chain of `error`, joined with `: `.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `retry-after-ms` (milliseconds) or `retry-after` (seconds); HTTP dates are ignored.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// The provider's message in an error body: `error.message`, `message` or `error`
/// of a JSON body, else the body text; whitespace-collapsed and cut to
/// [`MAX_PROVIDER_MESSAGE_BYTES`].
pub(crate) fn provider_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let from_json = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|value| {
            let error = value.get("error");
            let message = error
                .and_then(|e| e.get("message"))
                .or_else(|| value.get("message"))
                .or(error)?;
            let kind = error.and_then(|e| e.get("type")).and_then(|t| t.as_str());
            let message = match message {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(match kind {
                Some(kind) if !kind.is_empty() && !message.contains(kind) => format!("{kind}: {message}"),
                _ => message,
            })
        });
    let message = from_json.unwrap_or_else(|| text.into_owned());
    let collapsed = message.split_whitespace().collect::<Vec<_>>().join(" ");
    engine_ports::truncate_with_ellipsis(&collapsed, MAX_PROVIDER_MESSAGE_BYTES).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_are_found_and_bounded() {
        assert_eq!(
            provider_message(br#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#),
            "invalid_request_error: bad key"
        );
        assert_eq!(
            provider_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "overloaded_error: Overloaded"
        );
        assert_eq!(provider_message(b"  plain\n text "), "plain text");
        let long = "é".repeat(400);
        let cut = provider_message(long.as_bytes());
        assert!(
            cut.len() <= MAX_PROVIDER_MESSAGE_BYTES && cut.ends_with('…'),
            "{}",
            cut.len()
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&dated), None);
    }
}
