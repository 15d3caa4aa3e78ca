//! [`ServerName`]: the one rule an MCP server's name follows, whoever names it (a flag,
//! an `mcpServers` file, ToolHive, an editor's or an HTTP client's server list).
//!
//! A server's name becomes the middle of its tools' names (`mcp__<server>__<tool>`)
//! and its prompts' commands, so it must not contain `__` (a name such as `a__b` would
//! forge another server's namespace) and stays short and printable.

/// Longest server name, in bytes.
pub(crate) const MAX_SERVER_NAME_BYTES: usize = 64;

/// The rule: 1 to [`MAX_SERVER_NAME_BYTES`] bytes of `[A-Za-z0-9._-]`, without `__`.
pub(crate) struct ServerName;

/// Why a server name was refused; the message says what is expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerNameError {
    /// The name is empty.
    #[error("the name is empty")]
    Empty,
    /// The name is longer than 64 bytes.
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
    pub(crate) fn check(name: &str) -> Result<(), ServerNameError> {
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
