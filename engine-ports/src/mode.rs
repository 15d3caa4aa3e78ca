//! [`PermissionMode`]: the session mode that shapes the catalog projection.

use serde::{Deserialize, Serialize};

use crate::Keyword;

/// The mode of a session.
///
/// Only [`PermissionMode::Plan`] changes the catalog projection (read-only tools
/// only, D1); [`PermissionMode::AcceptEdits`] only loosens the default permission
/// policy. Serde, `FromStr` and `Display` use exactly `default`, `plan` and
/// `acceptEdits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PermissionMode {
    /// Every tool that is not plan-only.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// Read-only tools only; plan-only tools appear.
    #[serde(rename = "plan")]
    Plan,
    /// As `Default`, with edits auto-approved by the default policy.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
}

crate::keyword_words! {
    PermissionMode {
        Default => "default",
        Plan => "plan",
        AcceptEdits => "acceptEdits",
    }
    parse_error: ParseModeError { value }
}

/// A string that is not one of `default`, `plan`, `acceptEdits`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid mode {value:?}: expected one of {}", PermissionMode::expected())]
pub struct ParseModeError {
    /// The rejected text.
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_mode_lists_the_three_modes() {
        let error = "accept".parse::<PermissionMode>().unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid mode \"accept\": expected one of default, plan, acceptEdits"
        );
        assert_eq!(PermissionMode::expected(), "default, plan, acceptEdits");
    }
}
