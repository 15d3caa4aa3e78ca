//! The error texts of an exchange: [`Who`] names the provider and model in every
//! error, an error status becomes the provider's own message (bounded, the key
//! redacted, a hint for 401/403/404), and a "prompt too long" refusal becomes
//! `ContextTooLong`.

use engine_ports::LlmError;
use reqwest::{Response, StatusCode};
use tokio_util::sync::CancellationToken;

use super::decoder::Failure;
use super::http_core::HttpCore;
use super::retry::{AttemptError, is_retryable_status, retry_after};
use crate::config::ProviderKind;

/// Longest provider message quoted in an error, in bytes.
pub const MAX_PROVIDER_MESSAGE_BYTES: usize = 500;

/// Most bytes of an error body read to find the provider's message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

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

    pub(super) fn too_long(&self, message: String) -> LlmError {
        LlmError::ContextTooLong {
            provider: self.provider(),
            model: self.model.clone(),
            message,
        }
    }

    pub(super) fn status(&self, status: StatusCode, message: String) -> LlmError {
        LlmError::Status {
            provider: self.provider(),
            model: self.model.clone(),
            status: status.as_u16(),
            message,
        }
    }

    pub(super) fn failure(&self, failure: Failure) -> LlmError {
        match failure {
            Failure::Protocol(message) => self.protocol(message),
            Failure::Provider { message, .. } => {
                self.transport(format!("the provider reported an error mid-stream: {message}"))
            }
        }
    }
}

impl HttpCore {
    /// Turns an error status into an attempt error with the provider's message.
    pub(super) async fn status_error(
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
                status: Some(status.as_u16()),
            });
        }
        Ok(AttemptError {
            error: who.status(status, message),
            retryable: is_retryable_status(status.as_u16()),
            retry_after,
            status: Some(status.as_u16()),
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

/// The error chain of `error`, joined with `: `.
pub(super) fn chain(error: &dyn std::error::Error) -> String {
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
}
