//! ACP `mcpServers` entries → [`ClientServerSpec`]s (D5: streamable HTTP and stdio;
//! SSE is mapped so the factory's validation rejects it naming the server).

use adapter_mcp::{ClientServerKind, ClientServerSpec};
use agent_client_protocol::v1::schema::McpServer;

/// The client server spec of one `session/new` entry. An `http` entry keeps its
/// name, URL and headers; a `stdio` entry (ACP's default when `type` is absent) its
/// command, arguments and environment; an `sse` entry becomes
/// [`ClientServerKind::Sse`], which validation rejects naming the server and its
/// transport.
pub(crate) fn client_server_spec(server: &McpServer) -> ClientServerSpec {
    match server {
        McpServer::Http(http) => ClientServerSpec {
            name: http.name.clone(),
            kind: ClientServerKind::Http {
                url: http.url.clone(),
                headers: http
                    .headers
                    .iter()
                    .map(|header| (header.name.clone(), header.value.clone()))
                    .collect(),
            },
        },
        McpServer::Sse(sse) => ClientServerSpec {
            name: sse.name.clone(),
            kind: ClientServerKind::Sse,
        },
        McpServer::Stdio(stdio) => ClientServerSpec {
            name: stdio.name.clone(),
            kind: ClientServerKind::Stdio {
                command: stdio.command.to_string_lossy().into_owned(),
                args: stdio.args.clone(),
                env: stdio
                    .env
                    .iter()
                    .map(|variable| (variable.name.clone(), variable.value.clone()))
                    .collect(),
            },
        },
        _ => ClientServerSpec {
            name: String::new(),
            kind: ClientServerKind::Unknown,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> ClientServerSpec {
        client_server_spec(&serde_json::from_value::<McpServer>(json).unwrap())
    }

    #[test]
    fn each_transport_maps_to_its_spec() {
        let http = spec(serde_json::json!({
            "type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
            "headers": [{"name": "X-Key", "value": "secret"}]
        }));
        assert_eq!(http.name, "web");
        assert_eq!(
            http.kind,
            ClientServerKind::Http {
                url: "http://127.0.0.1:9/mcp".to_owned(),
                headers: vec![("X-Key".to_owned(), "secret".to_owned())],
            }
        );

        // No `type`: ACP's baseline stdio transport.
        let stdio = spec(serde_json::json!({
            "name": "fs", "command": "/usr/bin/node", "args": ["x.js", "/ws"],
            "env": [{"name": "A", "value": "1"}]
        }));
        assert_eq!(
            stdio.kind,
            ClientServerKind::Stdio {
                command: "/usr/bin/node".to_owned(),
                args: vec!["x.js".to_owned(), "/ws".to_owned()],
                env: vec![("A".to_owned(), "1".to_owned())],
            }
        );

        let sse = spec(
            serde_json::json!({"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}),
        );
        assert_eq!(sse.name, "old");
        assert_eq!(sse.kind, ClientServerKind::Sse);
    }
}
