//! Provider selection and settings: [`ProviderKind`], [`HttpProviderConfig`],
//! [`ApiKey`], [`Timeouts`], [`RetryPolicy`].

use std::fmt;
use std::time::Duration;

use engine_ports::Keyword;

/// The HTTP providers `--provider` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (`openai-chat`).
    OpenAiChat,
    /// Anthropic Messages (`anthropic`).
    Anthropic,
}

impl ProviderKind {
    /// The model used when neither `--model` nor the request names one.
    pub fn default_model(self) -> &'static str {
        match self {
            Self::OpenAiChat => "gpt-5",
            Self::Anthropic => "claude-sonnet-4-6",
        }
    }

    /// The base URL used without `--base-url`: for `openai-chat` it ends in `/v1`
    /// (the adapter appends `/chat/completions`); for `anthropic` it is the server
    /// root (the adapter appends `/v1/messages`).
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAiChat => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable the application reads the key from.
    pub fn api_key_env(self) -> &'static str {
        match self {
            Self::OpenAiChat => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

// The `--provider` values, in the order `--provider` lists them; also the provider
// names in errors.
engine_ports::keyword_words! {
    ProviderKind {
        OpenAiChat => "openai-chat",
        Anthropic => "anthropic",
    }
    parse_error: UnknownProvider { given }
}

/// A `--provider` value that names no provider.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {given:?}: expected one of {}", ProviderKind::expected())]
pub struct UnknownProvider {
    /// What was given.
    pub given: String,
}

/// An API key. Its `Debug` form never shows the value, and errors never contain it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key, for building the request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Per-attempt time limits of an HTTP provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// From sending the request to the first byte of the response body (per attempt).
    pub first_byte: Duration,
    /// Longest gap between two reads of the response body.
    pub idle: Duration,
}

impl Default for Timeouts {
    /// 120 s to the first byte, 180 s between reads.
    fn default() -> Self {
        Self {
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(180),
        }
    }
}

/// When and how a request is retried: the one policy of both providers. Retries
/// happen only before anything of the answer reached the caller (connect failures,
/// resets and time-outs before the first chunk, HTTP 408, 409, 429, 500, 502, 503,
/// 504 and 529), each wait announced with a `Chunk::Retry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The most time retries may add, from the start of the first attempt: a wait
    /// that would end past it is not taken (zero disables retries).
    pub budget: Duration,
    /// The ceiling of the first wait; doubles for each further one.
    pub initial_backoff: Duration,
    /// The highest ceiling of a wait.
    pub max_backoff: Duration,
}

/// Default of [`RetryPolicy::budget`]: 60 s.
pub const DEFAULT_RETRY_BUDGET: Duration = Duration::from_secs(60);

impl Default for RetryPolicy {
    /// Within 60 s: waits drawn from 0 to 500 ms, doubling, capped at 10 s.
    fn default() -> Self {
        Self {
            budget: DEFAULT_RETRY_BUDGET,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The ceiling of the wait after failed attempt `attempt` (1-based).
    pub fn base_backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        self.initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }

    /// The wait after failed attempt `attempt` with full jitter: the ceiling times
    /// `unit` (a value in `[0, 1)`), so retries of many clients spread out.
    pub fn backoff(&self, attempt: u32, unit: f64) -> Duration {
        self.base_backoff(attempt).mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// Settings of an HTTP provider. `api_key` is required; everything else has the
/// kind's defaults. Build it with [`HttpProviderConfig::new`] and the `with_*`
/// methods (or set the public fields); more settings may be added.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HttpProviderConfig {
    /// `--base-url`; `None` uses [`ProviderKind::default_base_url`].
    pub base_url: Option<String>,
    /// `--model`; `None` uses [`ProviderKind::default_model`]. A request whose
    /// `model` is non-empty uses that instead.
    pub model: Option<String>,
    /// The key (from `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`).
    pub api_key: ApiKey,
    /// Time limits.
    pub timeouts: Timeouts,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Ask for a streamed answer (`stream: true`, the default). Off, the whole
    /// answer is read first and then delivered as chunks, for servers that cannot
    /// stream.
    pub streaming: bool,
}

impl HttpProviderConfig {
    /// Default settings with `api_key`.
    pub fn new(api_key: ApiKey) -> Self {
        Self {
            base_url: None,
            model: None,
            api_key,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            streaming: true,
        }
    }

    /// The same settings with another base URL.
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The same settings with another model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The same settings with other time limits.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The same settings with another retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same settings, streamed or not.
    #[must_use]
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print() {
        for kind in ProviderKind::ALL {
            assert_eq!(kind.as_str().parse::<ProviderKind>(), Ok(kind));
        }
        let error = "openai".parse::<ProviderKind>().unwrap_err().to_string();
        assert!(error.contains("openai-chat, anthropic"), "{error}");
        assert_eq!(
            error,
            "unknown provider \"openai\": expected one of openai-chat, anthropic"
        );
    }

    #[test]
    fn keys_never_print() {
        let config = HttpProviderConfig::new(ApiKey::new("sk-secret"));
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn backoff_doubles_with_full_jitter_and_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.base_backoff(1), Duration::from_millis(500));
        assert_eq!(policy.base_backoff(2), Duration::from_secs(1));
        assert_eq!(policy.base_backoff(10), Duration::from_secs(10));
        assert_eq!(policy.backoff(1, 0.0), Duration::ZERO);
        assert_eq!(policy.backoff(1, 0.5), Duration::from_millis(250));
        assert_eq!(policy.backoff(3, 0.5), Duration::from_secs(1));
        assert_eq!(policy.backoff(40, 1.0), Duration::from_secs(10));
    }
}
