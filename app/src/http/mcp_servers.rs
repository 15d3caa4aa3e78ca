//! The `mcp_servers` of a create body, in ACP's `McpServer` JSON form, mapped onto
//! [`ClientServerSpec`]s, and the HTTP rule that only streamable HTTP is accepted.
//!
//! Forms: `{"type":"http","name","url","headers":[{"name","value"}]}`,
//! `{"type":"sse","name","url","headers"}`, and stdio —
//! `{"name","command","args","env":[{"name","value"}]}` with no `type` (ACP's
//! default) or `"type":"stdio"`. Unknown fields (such as `_meta`) are ignored.

use adapter_mcp::{ClientServerKind, ClientServerSpec};
use serde_json::Value;

use super::body::invalid;
use super::error::ApiError;

/// Maps the `mcp_servers` array; 400 naming the field (`mcp_servers[1].url`) and the
/// value for a malformed entry.
pub(crate) fn parse_mcp_servers(value: &Value) -> Result<Vec<ClientServerSpec>, ApiError> {
    let Value::Array(entries) = value else {
        return Err(invalid(
            "mcp_servers",
            value,
            "expected an array of MCP servers ({\"type\":\"http\",\"name\",\"url\",\"headers\"})",
        ));
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| parse_entry(&format!("mcp_servers[{index}]"), entry))
        .collect()
}

fn parse_entry(field: &str, entry: &Value) -> Result<ClientServerSpec, ApiError> {
    let Value::Object(map) = entry else {
        return Err(invalid(
            field,
            entry,
            "expected an object {\"type\":\"http\",\"name\",\"url\",\"headers\"}",
        ));
    };
    let name = required_string(field, map.get("name"), "name", "expected the server name")?;
    let kind = match map.get("type") {
        None | Some(Value::Null) => ClientServerKind::Stdio {
            command: String::new(),
            args: Vec::new(),
            env: Vec::new(),
        },
        Some(Value::String(kind)) => match kind.as_str() {
            "http" => ClientServerKind::Http {
                url: required_string(field, map.get("url"), "url", "expected the server's URL")?,
                headers: name_values(&format!("{field}.headers"), map.get("headers"))?,
            },
            "sse" => ClientServerKind::Sse,
            "stdio" => ClientServerKind::Stdio {
                command: String::new(),
                args: Vec::new(),
                env: Vec::new(),
            },
            _ => {
                return Err(invalid(
                    &format!("{field}.type"),
                    &Value::String(kind.clone()),
                    "expected \"http\" (streamable HTTP)",
                ));
            }
        },
        Some(other) => {
            return Err(invalid(
                &format!("{field}.type"),
                other,
                "expected \"http\" (streamable HTTP)",
            ));
        }
    };
    Ok(ClientServerSpec { name, kind })
}

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

fn required_string(
    field: &str,
    value: Option<&Value>,
    key: &str,
    expected: &str,
) -> Result<String, ApiError> {
    match value {
        Some(Value::String(text)) => Ok(text.clone()),
        None | Some(Value::Null) => Err(ApiError::bad_request(format!(
            "missing field \"{field}.{key}\": {expected}"
        ))),
        Some(other) => Err(invalid(&format!("{field}.{key}"), other, expected)),
    }
}

/// `[{"name","value"}]` → pairs; values are secrets and never echoed.
fn name_values(field: &str, value: Option<&Value>) -> Result<Vec<(String, String)>, ApiError> {
    let entries = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "invalid value for field {field:?}: expected an array of {{\"name\",\"value\"}}"
            )));
        }
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let (Some(Value::String(name)), Some(Value::String(value))) = (entry.get("name"), entry.get("value"))
            else {
                return Err(ApiError::bad_request(format!(
                    "invalid value for field \"{field}[{index}]\": expected {{\"name\": string, \"value\": string}}"
                )));
            };
            Ok((name.clone(), value.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_acp_forms_map_onto_specs() {
        let specs = parse_mcp_servers(&serde_json::json!([
            {"type": "http", "name": "cli", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "X-Key", "value": "v"}]},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
            {"name": "fs", "command": "mcp-fs", "args": [], "env": []},
            {"type": "stdio", "name": "fs2", "command": "mcp-fs"},
        ]))
        .unwrap();
        assert_eq!(specs.len(), 4);
        assert_eq!(
            specs[0].kind,
            ClientServerKind::Http {
                url: "http://127.0.0.1:9/mcp".to_owned(),
                headers: vec![("X-Key".to_owned(), "v".to_owned())],
            }
        );
        assert_eq!(specs[1].kind, ClientServerKind::Sse);
        assert!(matches!(specs[2].kind, ClientServerKind::Stdio { .. }));
        let error = reject_stdio(&specs).unwrap_err();
        for part in ["\"fs\"", "\"fs2\"", "streamable HTTP servers only"] {
            assert!(error.message().contains(part), "{}", error.message());
        }
        assert!(!error.message().contains("\"cli\""));
    }

    #[test]
    fn malformed_entries_name_the_field() {
        let error = parse_mcp_servers(&serde_json::json!([{"type": "http", "name": "a"}])).unwrap_err();
        assert!(
            error.message().contains("mcp_servers[0].url"),
            "{}",
            error.message()
        );
        let error = parse_mcp_servers(&serde_json::json!([{"type": "ws", "name": "a"}])).unwrap_err();
        assert!(error.message().contains("\"ws\""), "{}", error.message());
        assert!(
            error.message().contains("mcp_servers[0].type"),
            "{}",
            error.message()
        );
        let error = parse_mcp_servers(&serde_json::json!({"a": 1})).unwrap_err();
        assert!(error.message().contains("mcp_servers"), "{}", error.message());
        let error = parse_mcp_servers(&serde_json::json!([
            {"type": "http", "name": "a", "url": "http://127.0.0.1/", "headers": [{"name": "X", "value": 5}]}
        ]))
        .unwrap_err();
        assert!(
            error.message().contains("mcp_servers[0].headers[0]"),
            "{}",
            error.message()
        );
    }
}
