//! [`HttpCore`]: one HTTP provider's client and settings, and the exchange: connect
//! (retrying before the first chunk as the policy allows, within the first-byte
//! limit, cancellable) and hand the response to the body [`Driver`].

use engine_ports::{ChunkStream, LlmError};
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
/// time, the attempts made so far and the caller's cancel.
pub(super) struct Request {
    pub(super) who: Who,
    pub(super) body: Vec<u8>,
    pub(super) attempts: u32,
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

    /// Sends `body` (retrying as the policy allows) and returns the chunk stream.
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
            cancel,
        };
        let (response, started) = self.connect(&mut request).await?;
        let driver = Driver::new(std::sync::Arc::clone(self), request, decoder, response, started);
        Ok(futures::stream::unfold(driver, |mut driver| async move {
            driver.next_item().await.map(|item| (item, driver))
        })
        .boxed())
    }

    /// Attempts until a success status arrives, the policy gives up, or `cancel`.
    pub(super) async fn connect(&self, request: &mut Request) -> Result<(Response, Instant), LlmError> {
        loop {
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
            let attempt_error = match outcome {
                Ok(Ok(response)) if response.status().is_success() => return Ok((response, started)),
                Ok(Ok(response)) => self.status_error(&request.who, response, &request.cancel).await?,
                Ok(Err(error)) => AttemptError::retryable(request.who.transport(format!(
                    "POST {} failed: {}",
                    self.shown_url,
                    chain(&error.without_url())
                ))),
                Err(_) => AttemptError::retryable(request.who.transport(format!(
                    "no response from {} within {:?}",
                    self.shown_url, self.timeouts.first_byte
                ))),
            };
            self.wait_before_retry(request, &attempt_error).await?;
        }
    }
}
