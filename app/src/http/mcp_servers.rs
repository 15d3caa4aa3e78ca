//! The HTTP rule for the `mcp_servers` of a create body (parsed by
//! [`crate::mcp_servers`]): only streamable HTTP servers are accepted.

use adapter_mcp::{ClientServerKind, ClientServerSpec};

use super::error::ApiError;

/// 400 when any entry uses stdio, naming each: a remote caller must never make this
/// server spawn processes (D5).
pub(crate) fn reject_stdio(specs: &[ClientServerSpec]) -> Result<(), ApiError> {
    let stdio: Vec<String> = specs
        .iter()
        .filter(|spec| matches!(spec.kind, ClientServerKind::Stdio { .. }))
        .map(|spec| format!("{:?}", spec.name))
        .collect();
    if stdio.is_empty() {
        return Ok(());
    }
    let (subject, verb) = if stdio.len() == 1 {
        ("MCP server", "uses")
    } else {
        ("MCP servers", "use")
    };
    Err(ApiError::bad_request(format!(
        "invalid mcp_servers: {subject} {} {verb} the stdio transport, but HTTP sessions accept streamable HTTP servers only (\"type\":\"http\"); nothing was mounted",
        stdio.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_servers::parse_mcp_servers;

    #[test]
    fn stdio_entries_are_refused_naming_each_and_http_ones_pass() {
        let specs = parse_mcp_servers(&serde_json::json!([
            {"type": "http", "name": "cli", "url": "http://127.0.0.1:9/mcp", "headers": []},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
            {"name": "fs", "command": "mcp-fs", "args": [], "env": []},
            {"type": "stdio", "name": "fs2", "command": "mcp-fs"},
        ]))
        .unwrap();
        let error = reject_stdio(&specs).unwrap_err();
        assert_eq!(
            error.message(),
            "invalid mcp_servers: MCP servers \"fs\", \"fs2\" use the stdio transport, but HTTP sessions \
             accept streamable HTTP servers only (\"type\":\"http\"); nothing was mounted"
        );
        assert!(reject_stdio(&specs[..2]).is_ok());
    }
}
