//! Which failed attempts are retried and how long to wait — the one retry policy of
//! both providers: an attempt's error and whether it is worth another
//! ([`AttemptError`], [`is_retryable_status`]), exponential backoff with full jitter
//! or what the provider asks for ([`retry_after`]), all within the request's retry
//! budget. Waits go through tokio time.

use std::time::{Duration, SystemTime};

use engine_ports::{LlmError, ModelRetry};
use reqwest::header::HeaderMap;

use super::http_core::{HttpCore, Request};

/// One failed attempt.
#[derive(Debug)]
pub(super) struct AttemptError {
    pub(super) error: LlmError,
    pub(super) retryable: bool,
    pub(super) retry_after: Option<Duration>,
    /// The HTTP status, when the attempt got one.
    pub(super) status: Option<u16>,
}

impl AttemptError {
    /// A failure without a status (a connection reset, a time-out) worth another
    /// attempt.
    pub(super) fn retryable(error: LlmError) -> Self {
        Self {
            error,
            retryable: true,
            retry_after: None,
            status: None,
        }
    }
}

/// Whether an HTTP status is worth another attempt: 408 (request time-out), 409
/// (conflict), 429 (rate limit), 500, 502, 503 (overloaded, or a model still
/// loading), 504 and 529 (Anthropic overloaded). Every other status, 400, 401, 403
/// and 404 among them, is final.
pub(super) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
}

impl HttpCore {
    /// The notice of the wait before the next attempt of `request`, or the error
    /// when there is none: the failure is final, or the wait would pass the retry
    /// budget (counted from the start of the first attempt).
    pub(super) fn plan_retry(&self, request: &Request, failed: AttemptError) -> Result<ModelRetry, LlmError> {
        let who = &request.who;
        if !failed.retryable {
            return Err(failed.error);
        }
        let budget = self.retry.budget;
        let left = budget.saturating_sub(request.first_started.elapsed());
        let backoff = self.retry.backoff(request.attempts, fastrand::f64());
        let wait = failed.retry_after.map_or(backoff, |asked| asked.max(backoff));
        if left.is_zero() || wait > left {
            let why = match failed.retry_after {
                Some(asked) if asked > left => format!(
                    "the provider asked to wait {} s, past the retry budget of {} s",
                    asked.as_secs_f64().ceil(),
                    budget.as_secs_f64()
                ),
                _ if request.attempts > 1 => format!(
                    "gave up after {} attempts within the retry budget of {} s",
                    request.attempts,
                    budget.as_secs_f64()
                ),
                _ => return Err(failed.error),
            };
            tracing::debug!(provider = who.kind.as_str(), model = %who.model, "{why}; not retrying");
            return Err(with_note(failed.error, &why));
        }
        // Reported to the caller as a retry notice (a `model.retry` event); the log
        // line is for operators who follow the process log.
        tracing::info!(
            provider = who.kind.as_str(), model = %who.model, attempt = request.attempts, wait = ?wait,
            error = %failed.error, "model request failed; retrying"
        );
        Ok(ModelRetry {
            attempt: request.attempts,
            status: failed.status,
            wait,
            error: failed.error.to_string(),
        })
    }
}

/// `error` with `(note)` appended to its message.
fn with_note(error: LlmError, note: &str) -> LlmError {
    match error {
        LlmError::Status {
            provider,
            model,
            status,
            message,
        } => LlmError::Status {
            provider,
            model,
            status,
            message: format!("{message} ({note})"),
        },
        LlmError::Transport {
            provider,
            model,
            message,
        } => LlmError::Transport {
            provider,
            model,
            message: format!("{message} ({note})"),
        },
        other => other,
    }
}

/// The wait a provider asks for: `retry-after-ms` (milliseconds, OpenAI), else
/// `retry-after` as seconds or as an HTTP date (the time until then, zero when it
/// has passed).
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

/// [`retry_after`] at the wall-clock time `now`.
fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let number = |text: &str| -> Option<f64> {
        let value = text.parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = text("retry-after-ms").and_then(number) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Some(seconds) = number(value) {
        return Some(Duration::from_secs_f64(seconds.min(1e9)));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));

        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:07 GMT"),
        );
        assert_eq!(retry_after_at(&dated, now), Some(Duration::from_secs(7)));
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:27:00 GMT"),
        );
        assert_eq!(retry_after_at(&dated, now), Some(Duration::ZERO));
        dated.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after_at(&dated, now), None);
    }

    #[test]
    fn only_transient_statuses_are_retryable() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422, 501, 505] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }
}
