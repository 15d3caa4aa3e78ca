//! Which failed attempts are retried and how long to wait: an attempt's error and
//! whether it is worth another ([`AttemptError`]), the policy's backoff capped by
//! what the provider asks for ([`retry_after`]).

use std::time::Duration;

use engine_ports::LlmError;
use reqwest::header::HeaderMap;

use super::errors::Who;
use super::http_core::{HttpCore, Request};

/// One failed attempt.
#[derive(Debug)]
pub(super) struct AttemptError {
    pub(super) error: LlmError,
    pub(super) retryable: bool,
    pub(super) retry_after: Option<Duration>,
}

impl AttemptError {
    pub(super) fn retryable(error: LlmError) -> Self {
        Self {
            error,
            retryable: true,
            retry_after: None,
        }
    }
}

impl HttpCore {
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

    /// Waits the delay before the next attempt of `request`: the error when there is
    /// none (see [`HttpCore::retry_delay`]), [`LlmError::Cancelled`] when the caller
    /// cancels first.
    pub(super) async fn wait_before_retry(
        &self,
        request: &Request,
        failed: &AttemptError,
    ) -> Result<(), LlmError> {
        let delay = self.retry_delay(&request.who, request.attempts, failed)?;
        tokio::select! {
            () = request.cancel.cancelled() => Err(LlmError::Cancelled),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }
}

/// `retry-after-ms` (milliseconds) or `retry-after` (seconds); HTTP dates are ignored.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

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
