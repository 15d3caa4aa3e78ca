//! [`HttpCore`]: one HTTP provider's client and settings, and the exchange: one
//! attempt (within the first-byte limit, cancellable), then the body [`Driver`]
//! (which makes any further attempts the retry policy allows).

use engine_ports::{ChunkStream, LlmError, ModelRetry};
use futures::StreamExt as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, Url};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::decoder::Decoder;
use super::driver::Driver;
use super::errors::{Who, chain};
use super::retry::AttemptError;
use crate::config::{ApiKey, HttpProviderConfig, ProviderKind, RetryPolicy, Timeouts};

/// One exchange's request as every attempt sees it: who it is for, the body sent each
/// time, the attempts made so far, when the first one started (the retry budget
/// counts from it) and the caller's cancel.
pub(super) struct Request {
    pub(super) who: Who,
    pub(super) body: Vec<u8>,
    pub(super) attempts: u32,
    pub(super) first_started: Instant,
    pub(super) cancel: CancellationToken,
}

/// The settings and client of one HTTP provider.
#[derive(Debug)]
pub(crate) struct HttpCore {
    pub(crate) kind: ProviderKind,
    client: reqwest::Client,
    url: Url,
    pub(super) shown_url: String,
    model: String,
    pub(super) api_key: ApiKey,
    headers: HeaderMap,
    pub(super) timeouts: Timeouts,
    pub(super) retry: RetryPolicy,
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

    /// Sends `body` and returns the chunk stream. The first attempt is made here: a
    /// final failure of it is the outer error; a failure worth another attempt
    /// starts the stream with its [`engine_ports::Chunk::Retry`] notice, and later attempts are
    /// made as the stream is read.
    pub(crate) async fn exchange(
        self: &std::sync::Arc<Self>,
        who: Who,
        body: Vec<u8>,
        decoder: impl Decoder,
        cancel: CancellationToken,
    ) -> Result<ChunkStream, LlmError> {
        tracing::debug!(provider = who.kind.as_str(), model = %who.model, url = %self.shown_url, "model request");
        let mut request = Request {
            who,
            body,
            attempts: 0,
            first_started: Instant::now(),
            cancel,
        };
        let start = match self.attempt(&mut request).await? {
            Ok(answer) => Start::Answer(answer),
            Err(failed) => Start::Retry(self.plan_retry(&request, failed)?),
        };
        let driver = Driver::new(std::sync::Arc::clone(self), request, decoder, start);
        Ok(futures::stream::unfold(driver, |mut driver| async move {
            driver.next_item().await.map(|item| (item, driver))
        })
        .boxed())
    }

    /// One attempt: the response with a success status and when the attempt
    /// started, or what went wrong; the outer error only when `cancel` fires.
    pub(super) async fn attempt(
        &self,
        request: &mut Request,
    ) -> Result<Result<(Response, Instant), AttemptError>, LlmError> {
        request.attempts += 1;
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
            .body(request.body.clone())
            .send();
        let outcome = tokio::select! {
            () = request.cancel.cancelled() => return Err(LlmError::Cancelled),
            outcome = tokio::time::timeout(self.timeouts.first_byte, send) => outcome,
        };
        Ok(match outcome {
            Ok(Ok(response)) if response.status().is_success() => Ok((response, started)),
            Ok(Ok(response)) => Err(self.status_error(&request.who, response, &request.cancel).await?),
            Ok(Err(error)) => Err(AttemptError::retryable(request.who.transport(format!(
                "POST {} failed: {}",
                self.shown_url,
                chain(&error.without_url())
            )))),
            Err(_) => Err(AttemptError::retryable(request.who.transport(format!(
                "no response from {} within {:?}",
                self.shown_url, self.timeouts.first_byte
            )))),
        })
    }
}

/// How an exchange's stream starts: with the first attempt's answer, or with the
/// notice of the wait before the second attempt.
pub(super) enum Start {
    Answer((Response, Instant)),
    Retry(ModelRetry),
}
