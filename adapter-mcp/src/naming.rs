//! D6: catalog names `mcp__<server>__<tool>`, kept exactly, and the rules an
//! advertised tool name must pass.

/// Longest catalog name of an MCP tool, in bytes (exactly this many is fine).
pub(crate) const MAX_TOOL_NAME_BYTES: usize = 256;

/// The catalog name of remote tool `tool` of server `server`: plain concatenation,
/// never sanitized, lowercased or truncated.
pub(crate) fn catalog_tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// An advertised tool name that fails D6's rules (it fails its whole server).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum NameError {
    /// The remote name is empty.
    #[error("MCP server {server:?} advertises a tool with an empty name")]
    Empty {
        /// The server.
        server: String,
    },
    /// The full name is longer than [`MAX_TOOL_NAME_BYTES`].
    #[error(
        "MCP server {server:?} advertises tool {name:?}: its full name is {bytes} bytes, over the {MAX_TOOL_NAME_BYTES}-byte limit"
    )]
    TooLong {
        /// The server.
        server: String,
        /// The full catalog name.
        name: String,
        /// Its length.
        bytes: usize,
    },
    /// The full name contains a control character.
    #[error("MCP server {server:?} advertises tool {name:?}: names must not contain control characters")]
    ControlCharacter {
        /// The server.
        server: String,
        /// The full catalog name.
        name: String,
    },
}

/// Checks the remote tool name `tool` of `server` and returns its catalog name.
///
/// Non-ASCII, `.`, `-` and `__` inside the tool name are accepted as they are.
///
/// # Errors
/// [`NameError`] naming the server and the rule; a bad name only appears
/// Debug-escaped.
pub(crate) fn validate_tool_name(server: &str, tool: &str) -> Result<String, NameError> {
    if tool.is_empty() {
        return Err(NameError::Empty {
            server: server.to_owned(),
        });
    }
    let full = catalog_tool_name(server, tool);
    if full.chars().any(char::is_control) {
        return Err(NameError::ControlCharacter {
            server: server.to_owned(),
            name: full,
        });
    }
    if full.len() > MAX_TOOL_NAME_BYTES {
        return Err(NameError::TooLong {
            server: server.to_owned(),
            bytes: full.len(),
            name: full,
        });
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_name_rules() {
        let long_ok = "é".repeat(124);
        assert_eq!(validate_tool_name("s", &long_ok).unwrap().len(), 256);
        for ok in ["read_file", "café", "a.b-c", "a__b"] {
            assert_eq!(validate_tool_name("srv", ok).unwrap(), format!("mcp__srv__{ok}"));
        }
        let too_long = format!("{long_ok}x");
        assert!(matches!(
            validate_tool_name("s", &too_long),
            Err(NameError::TooLong { bytes: 257, .. })
        ));
        assert!(matches!(
            validate_tool_name("s", ""),
            Err(NameError::Empty { .. })
        ));
        for bad in ["read\nfile", "read\0file", "read\u{85}file"] {
            let error = validate_tool_name("s", bad).unwrap_err();
            assert!(matches!(error, NameError::ControlCharacter { .. }), "{bad:?}");
            // The bad name only shows Debug-escaped.
            assert!(!error.to_string().contains(bad), "{error}");
        }
    }
}
