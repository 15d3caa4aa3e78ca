//! [`ServerName`]: the one rule an MCP server's name follows, whoever names it (a flag,
//! an `mcpServers` file, ToolHive, an editor's or an HTTP client's server list).
//!
//! A server's name becomes the middle of its tools' names (`mcp__<server>__<tool>`)
//! and its prompts' commands, so it must not contain `__` (a name such as `a__b` would
//! forge another server's namespace) and stays short and printable.

use std::fmt;

/// Longest server name, in bytes.
pub const MAX_SERVER_NAME_BYTES: usize = 64;

/// A valid server name: 1 to [`MAX_SERVER_NAME_BYTES`] bytes of `[A-Za-z0-9._-]`,
/// without `__`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerName(String);

/// Why a server name was refused; the message says what is expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerNameError {
    /// The name is empty.
    #[error("the name is empty")]
    Empty,
    /// The name is longer than [`MAX_SERVER_NAME_BYTES`].
    #[error("the name is {bytes} bytes, longer than {MAX_SERVER_NAME_BYTES}")]
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
    /// A character outside `[A-Za-z0-9._-]`.
    #[error("the name must use only [A-Za-z0-9._-]")]
    Characters,
    /// The name contains `__`.
    #[error("the name contains \"__\", which would corrupt tool namespacing (mcp__<server>__<tool>)")]
    DoubleUnderscore,
}

impl ServerName {
    /// Checks `name` against the rule.
    ///
    /// # Errors
    /// The first rule it breaks, in the order empty, too long, characters, `__`.
    ///
    /// ```
    /// use adapter_mcp::{ServerName, ServerNameError};
    /// assert_eq!(ServerName::parse("sequential-thinking").unwrap().as_str(), "sequential-thinking");
    /// assert_eq!(ServerName::parse("a__b"), Err(ServerNameError::DoubleUnderscore));
    /// assert_eq!(ServerName::parse("a b"), Err(ServerNameError::Characters));
    /// ```
    pub fn parse(name: &str) -> Result<Self, ServerNameError> {
        Self::check(name).map(|()| Self(name.to_owned()))
    }

    /// [`parse`](Self::parse) without keeping the name.
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn check(name: &str) -> Result<(), ServerNameError> {
        if name.is_empty() {
            return Err(ServerNameError::Empty);
        }
        if name.len() > MAX_SERVER_NAME_BYTES {
            return Err(ServerNameError::TooLong { bytes: name.len() });
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(ServerNameError::Characters);
        }
        if name.contains("__") {
            return Err(ServerNameError::DoubleUnderscore);
        }
        Ok(())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ServerName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_is_reported_in_order() {
        assert_eq!(ServerName::check(""), Err(ServerNameError::Empty));
        let long = "a".repeat(MAX_SERVER_NAME_BYTES + 1);
        assert_eq!(
            ServerName::check(&long),
            Err(ServerNameError::TooLong { bytes: 65 })
        );
        assert!(ServerName::check(&long[1..]).is_ok());
        for bad in ["a b", "é", "a/b", "a\nb", "a:b"] {
            assert_eq!(
                ServerName::check(bad),
                Err(ServerNameError::Characters),
                "{bad:?}"
            );
        }
        for bad in ["a__b", "__", "a___"] {
            assert_eq!(
                ServerName::check(bad),
                Err(ServerNameError::DoubleUnderscore),
                "{bad:?}"
            );
        }
        for good in ["docs", "a_b", "a.b-c", "A9", "_x"] {
            assert!(ServerName::check(good).is_ok(), "{good:?}");
        }
    }
}
