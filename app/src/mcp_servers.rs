//! The `mcp_servers` wire form, one parser for both surfaces that accept it: ACP
//! `session/new` / `session/load` (`mcpServers`, typed by the ACP crate) and HTTP
//! `POST /v1/sessions` (`mcp_servers`). One typed model ([`Entry`]) and one conversion
//! into [`ClientServerSpec`]s; every error names its JSON path
//! (`mcp_servers[2].env[0].name: expected a string`).
//!
//! Forms (ACP's `McpServer` JSON): `{"type":"http","name","url","headers":[{"name","value"}]}`,
//! `{"type":"sse","name","url","headers"}`, and stdio —
//! `{"name","command","args","env":[{"name","value"}]}` with no `type` (ACP's default)
//! or `"type":"stdio"`. Unknown fields (such as `_meta`) are ignored. What each surface
//! then accepts (HTTP: streamable HTTP only; both: no SSE) is decided after parsing.
//! Header and environment values are secrets: no error repeats them.

use adapter_mcp::{ClientServerKind, ClientServerSpec};
use serde::Deserialize;
use serde_json::Value;

/// The field the wire form lives in, the root of every error path.
const FIELD: &str = "mcp_servers";

/// Why an `mcp_servers` value was refused: the JSON path, what is expected there and,
/// when it may be repeated, the value found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum McpServersError {
    /// A required field is absent (or `null`).
    #[error("missing field {path:?}: {expected}")]
    Missing {
        /// The JSON path, e.g. `mcp_servers[1].url`.
        path: String,
        /// What belongs there.
        expected: String,
    },
    /// A field holds a value of the wrong kind.
    #[error("invalid value {value}for field {path:?}: {expected}", value = shown(value.as_deref()))]
    Invalid {
        /// The JSON path, e.g. `mcp_servers[0].headers[0].value`.
        path: String,
        /// The value as compact JSON, `None` when it must not be repeated.
        value: Option<String>,
        /// What belongs there.
        expected: String,
    },
}

fn shown(value: Option<&str>) -> String {
    value.map(|v| format!("{v} ")).unwrap_or_default()
}

/// One entry of the wire form. Everything is optional here so that the conversion
/// can name a missing field by its path.
#[derive(Deserialize)]
#[serde(expecting = "an object {\"type\":\"http\",\"name\",\"url\",\"headers\"}")]
struct Entry {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    url: Option<String>,
    headers: Option<Vec<NameValue>>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<Vec<NameValue>>,
}

/// A header or an environment variable.
#[derive(Deserialize)]
#[serde(expecting = "{\"name\": string, \"value\": string}")]
struct NameValue {
    name: Option<String>,
    value: Option<String>,
}

/// Parses an `mcp_servers` array into client server specs, in order.
///
/// # Errors
/// [`McpServersError`] naming the JSON path of the first malformed field.
pub(crate) fn parse_mcp_servers(value: &Value) -> Result<Vec<ClientServerSpec>, McpServersError> {
    if !value.is_array() {
        return Err(McpServersError::Invalid {
            path: FIELD.to_owned(),
            value: Some(value.to_string()),
            expected: "expected an array of MCP servers ({\"type\":\"http\",\"name\",\"url\",\"headers\"})"
                .to_owned(),
        });
    }
    let entries: Vec<Entry> = serde_path_to_error::deserialize(value).map_err(|error| {
        let path = format!("{FIELD}{}", error.path()).replace(&format!("{FIELD}."), FIELD);
        McpServersError::Invalid {
            path,
            value: None,
            expected: expected_text(&error.into_inner().to_string()),
        }
    })?;
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| entry.into_spec(&format!("{FIELD}[{index}]")))
        .collect()
}

/// The "expected …" half of a serde message, which never holds the value itself
/// (the first half, `invalid type: string "…"`, may).
fn expected_text(message: &str) -> String {
    match message.split_once(", expected ") {
        Some((_, expected)) => format!("expected {}", expected.replace("a sequence", "an array")),
        None => message.to_owned(),
    }
}

impl Entry {
    fn into_spec(self, path: &str) -> Result<ClientServerSpec, McpServersError> {
        let name = required(path, "name", self.name, "expected the server name")?;
        let kind = match self.kind.as_deref() {
            None | Some("stdio") => ClientServerKind::Stdio {
                command: self.command.unwrap_or_default(),
                args: self.args.unwrap_or_default(),
                env: pairs(&format!("{path}.env"), self.env)?,
            },
            Some("http") => ClientServerKind::Http {
                url: required(path, "url", self.url, "expected the server's URL")?,
                headers: pairs(&format!("{path}.headers"), self.headers)?,
            },
            Some("sse") => ClientServerKind::Sse,
            Some(other) => {
                return Err(McpServersError::Invalid {
                    path: format!("{path}.type"),
                    value: Some(Value::String(other.to_owned()).to_string()),
                    expected: "expected \"http\" (streamable HTTP), \"stdio\" or \"sse\"".to_owned(),
                });
            }
        };
        Ok(ClientServerSpec { name, kind })
    }
}

fn required(path: &str, key: &str, value: Option<String>, expected: &str) -> Result<String, McpServersError> {
    value.ok_or_else(|| McpServersError::Missing {
        path: format!("{path}.{key}"),
        expected: expected.to_owned(),
    })
}

/// `[{"name","value"}]` → pairs.
fn pairs(path: &str, entries: Option<Vec<NameValue>>) -> Result<Vec<(String, String)>, McpServersError> {
    entries
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let at = format!("{path}[{index}]");
            Ok((
                required(&at, "name", entry.name, "expected a string")?,
                required(&at, "value", entry.value, "expected a string")?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn error(value: Value) -> String {
        parse_mcp_servers(&value).unwrap_err().to_string()
    }

    #[test]
    fn every_form_maps_onto_its_spec() {
        let specs = parse_mcp_servers(&json!([
            {"type": "http", "name": "cli", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "X-Key", "value": "v"}], "_meta": {"x": 1}},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
            {"name": "fs", "command": "/usr/bin/node", "args": ["x.js", "/ws"],
             "env": [{"name": "A", "value": "1"}]},
            {"type": "stdio", "name": "fs2", "command": "mcp-fs"},
        ]))
        .unwrap();
        let kinds: Vec<_> = specs.iter().map(|s| (s.name.as_str(), &s.kind)).collect();
        assert_eq!(
            kinds,
            [
                (
                    "cli",
                    &ClientServerKind::Http {
                        url: "http://127.0.0.1:9/mcp".to_owned(),
                        headers: vec![("X-Key".to_owned(), "v".to_owned())],
                    }
                ),
                ("old", &ClientServerKind::Sse),
                (
                    "fs",
                    &ClientServerKind::Stdio {
                        command: "/usr/bin/node".to_owned(),
                        args: vec!["x.js".to_owned(), "/ws".to_owned()],
                        env: vec![("A".to_owned(), "1".to_owned())],
                    }
                ),
                (
                    "fs2",
                    &ClientServerKind::Stdio {
                        command: "mcp-fs".to_owned(),
                        args: Vec::new(),
                        env: Vec::new(),
                    }
                ),
            ]
        );
    }

    #[test]
    fn acp_typed_entries_take_the_same_parser() {
        use agent_client_protocol::v1::schema::McpServer;
        let wire = json!([
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "X-Key", "value": "secret"}]},
            {"name": "fs", "command": "/usr/bin/node", "args": ["x.js", "/ws"],
             "env": [{"name": "A", "value": "1"}]},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
        ]);
        let typed: Vec<McpServer> = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(
            parse_mcp_servers(&serde_json::to_value(&typed).unwrap()).unwrap(),
            parse_mcp_servers(&wire).unwrap()
        );
    }

    #[test]
    fn each_malformed_field_is_named_by_its_json_path() {
        assert_eq!(
            error(json!({"a": 1})),
            "invalid value {\"a\":1} for field \"mcp_servers\": expected an array of MCP servers \
             ({\"type\":\"http\",\"name\",\"url\",\"headers\"})"
        );
        assert_eq!(
            error(json!([5])),
            "invalid value for field \"mcp_servers[0]\": expected an object {\"type\":\"http\",\"name\",\"url\",\"headers\"}"
        );
        assert_eq!(
            error(json!([{"type": "http", "name": "a"}])),
            "missing field \"mcp_servers[0].url\": expected the server's URL"
        );
        assert_eq!(
            error(json!([{"type": "http", "url": "http://127.0.0.1/"}])),
            "missing field \"mcp_servers[0].name\": expected the server name"
        );
        assert_eq!(
            error(json!([{"type": "ws", "name": "a"}])),
            "invalid value \"ws\" for field \"mcp_servers[0].type\": expected \"http\" (streamable HTTP), \"stdio\" or \"sse\""
        );
        assert_eq!(
            error(json!([{"type": 5, "name": "a"}])),
            "invalid value for field \"mcp_servers[0].type\": expected a string"
        );
        assert_eq!(
            error(json!([{"type": "http", "name": "a", "url": "u", "headers": "X"}])),
            "invalid value for field \"mcp_servers[0].headers\": expected an array"
        );
        assert_eq!(
            error(json!([{"type": "http", "name": "a", "url": "u", "headers": ["X"]}])),
            "invalid value for field \"mcp_servers[0].headers[0]\": expected {\"name\": string, \"value\": string}"
        );
        assert_eq!(
            error(json!([{"type": "http", "name": "a", "url": "u", "headers": [{"name": "X"}]}])),
            "missing field \"mcp_servers[0].headers[0].value\": expected a string"
        );
        assert_eq!(
            error(json!([
                {"type": "http", "name": "a", "url": "u"},
                {"type": "http", "name": "b", "url": "u"},
                {"name": "c", "command": "x", "env": [{"name": 7, "value": "v"}]},
            ])),
            "invalid value for field \"mcp_servers[2].env[0].name\": expected a string"
        );
        assert_eq!(
            error(json!([{"name": "c", "command": "x", "args": ["a", 1]}])),
            "invalid value for field \"mcp_servers[0].args[1]\": expected a string"
        );
    }

    #[test]
    fn secret_values_are_never_repeated() {
        for entry in [
            json!({"type": "http", "name": "a", "url": "u", "headers": [{"name": "X", "value": 123456789}]}),
            json!({"name": "a", "command": "x", "env": [{"name": "TOKEN", "value": ["s3cr3t-value"]}]}),
            json!({"name": "a", "command": "x", "env": [{"name": "TOKEN", "value": {"k": "s3cr3t-value"}}]}),
        ] {
            let text = error(json!([entry]));
            assert!(text.contains("].value\": expected a string"), "{text}");
            assert!(!text.contains("123456789") && !text.contains("s3cr3t"), "{text}");
        }
    }
}
