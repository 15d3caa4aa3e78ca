//! [`Usage`]: token counts reported by a model.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Token counts of one turn, or summed over a run or a session.
///
/// `input_tokens` counts every prompt token, cached ones included; the two cache
/// counts say how many of them the provider read from its prompt cache or wrote into
/// it (0, and absent from the JSON, when the provider reports none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Prompt tokens written into the provider's prompt cache (part of
    /// `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

// serde's `skip_serializing_if` passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Usage {
    /// Counts from input and output tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// The same counts with the prompt-cache tokens the provider reported.
    #[must_use]
    pub fn with_cache(mut self, read_tokens: u64, write_tokens: u64) -> Self {
        self.cache_read_tokens = read_tokens;
        self.cache_write_tokens = write_tokens;
        self
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_counts_are_absent_from_json_until_reported() {
        let plain = Usage::new(10, 2);
        assert_eq!(
            serde_json::to_value(plain).unwrap(),
            serde_json::json!({"input_tokens": 10, "output_tokens": 2})
        );
        let cached = Usage::new(10, 2).with_cache(7, 3);
        assert_eq!(
            serde_json::to_value(cached).unwrap(),
            serde_json::json!({"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 7, "cache_write_tokens": 3})
        );
        let old: Usage = serde_json::from_str(r#"{"input_tokens":1,"output_tokens":1}"#).unwrap();
        assert_eq!(old, Usage::new(1, 1));
        let mut sum = plain;
        sum += cached;
        assert_eq!(sum, Usage::new(20, 4).with_cache(7, 3));
    }
}
