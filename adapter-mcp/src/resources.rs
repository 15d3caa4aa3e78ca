//! The resource meta-tools `ListMcpResources` and `ReadMcpResource` over the
//! global manager.

use std::sync::Arc;

use async_trait::async_trait;
use engine_core::{Environment, Tool, ToolError};
use engine_ports::{Diagnostics, ToolCall, ToolResult, ToolSpec};
use rmcp::model::ResourceContents;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::content::resource_chunk_text;
use crate::error::{McpError, Operation};
use crate::manager::McpManager;

/// Name of the listing meta-tool.
pub(crate) const LIST_MCP_RESOURCES: &str = "ListMcpResources";
/// Name of the reading meta-tool.
pub(crate) const READ_MCP_RESOURCE: &str = "ReadMcpResource";

/// One chunk of a `resources/read` reply, as [`McpManager::read_resource`] gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceChunk {
    /// A text chunk.
    Text {
        /// The chunk's URI.
        uri: String,
        /// Its MIME type, when the server gave one.
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// A binary chunk.
    Blob {
        /// The chunk's URI.
        uri: String,
        /// Its MIME type, when the server gave one.
        mime_type: Option<String>,
        /// The bytes, base64-encoded as the server sent them.
        base64: String,
    },
    /// A chunk of a kind this adapter does not know.
    Unsupported,
}

impl ResourceChunk {
    pub(crate) fn from_contents(contents: ResourceContents) -> Self {
        match contents {
            ResourceContents::TextResourceContents {
                uri, mime_type, text, ..
            } => Self::Text { uri, mime_type, text },
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => Self::Blob {
                uri,
                mime_type,
                base64: blob,
            },
            #[allow(unreachable_patterns)]
            _ => Self::Unsupported,
        }
    }

    /// The text the model reads for this chunk: text verbatim, a blob as its MIME
    /// type and size (never base64).
    pub fn model_text(&self) -> String {
        resource_chunk_text(self)
    }
}

/// The meta-tools to register (both or neither) and the INFO that says why.
pub struct ResourceTools {
    /// `ListMcpResources` and `ReadMcpResource`, or nothing.
    pub tools: Vec<Arc<dyn Tool>>,
    /// One INFO: enabled, disabled for lack of resources, or disabled by the flag.
    pub diagnostics: Diagnostics,
}

/// Builds the meta-tools when `enabled` (`--mcp-resource-tools`) and the global
/// manager's snapshots hold at least one resource at assembly (no I/O).
pub fn resource_tools(enabled: bool, manager: Option<&McpManager>) -> ResourceTools {
    let mut diagnostics = Diagnostics::new();
    if !enabled {
        diagnostics.info("MCP resource tools disabled by --mcp-resource-tools=false");
        return ResourceTools {
            tools: Vec::new(),
            diagnostics,
        };
    }
    let count = manager.map_or(0, |m| m.resource_snapshot().len());
    let Some(manager) = manager.filter(|_| count > 0) else {
        diagnostics.info("MCP resource tools disabled: no connected MCP server lists a resource");
        return ResourceTools {
            tools: Vec::new(),
            diagnostics,
        };
    };
    diagnostics.info(format!(
        "MCP resource tools enabled ({LIST_MCP_RESOURCES}, {READ_MCP_RESOURCE}): {count} resource(s)"
    ));
    ResourceTools {
        tools: vec![
            Arc::new(ListMcpResources {
                manager: manager.clone(),
            }),
            Arc::new(ReadMcpResource {
                manager: manager.clone(),
            }),
        ],
        diagnostics,
    }
}

/// Lists the resources of the connected MCP servers.
pub struct ListMcpResources {
    manager: McpManager,
}

/// Reads one MCP resource by server and URI.
pub struct ReadMcpResource {
    manager: McpManager,
}

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    server: Option<String>,
}

#[derive(Deserialize)]
struct ReadArgs {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    uri: Option<String>,
}

/// A meta-tool call's arguments, once the call is known not to be cancelled; `Err` is
/// what `execute` returns at once: [`ToolError::Cancelled`], or the uniform
/// invalid-arguments result.
fn arguments<A: DeserializeOwned>(
    cancel: &CancellationToken,
    call: &ToolCall,
) -> Result<A, Result<ToolResult, ToolError>> {
    if cancel.is_cancelled() {
        return Err(Err(ToolError::Cancelled));
    }
    call.parse_args().map_err(|error| Ok(error.into_result(call)))
}

fn prefixed(error: &McpError) -> String {
    match error {
        McpError::UnknownServer { .. } => format!("{}: {error}", Operation::ReadResource.prefix()),
        other => other.to_string(),
    }
}

#[async_trait]
impl Tool for ListMcpResources {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            LIST_MCP_RESOURCES,
            "Lists the resources (URI-addressable documents and data) of the connected MCP servers. \
             Each line shows `- [<server>] <uri>`, then the resource name in parentheses, its MIME type \
             in brackets and its description when the server gives them. Read one with ReadMcpResource.",
        )
        .with_schema(json!({
            "type": "object",
            "properties": {
                "server": {
                    "type": "string",
                    "description": "Only list this MCP server's resources; omit (or leave blank) for all servers."
                }
            }
        }))
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let args: ListArgs = match arguments(cancel, call) {
            Ok(args) => args,
            Err(done) => return done,
        };
        let server = args.server.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let mut resources = match self.manager.list_resources(server).await {
            Ok(resources) => resources,
            Err(error) => {
                return Ok(ToolResult::error(
                    call.id().clone(),
                    format!("mcp resource list failed: {error}"),
                ));
            }
        };
        if resources.is_empty() {
            return Ok(ToolResult::text(
                call.id().clone(),
                "No MCP resources are available.",
            ));
        }
        resources.sort_by(|a, b| (&a.server, &a.uri).cmp(&(&b.server, &b.uri)));
        let mut out = String::new();
        for resource in resources {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("- [{}] {}", resource.server, resource.uri));
            if !resource.name.is_empty() {
                out.push_str(&format!(" ({})", resource.name));
            }
            if let Some(mime) = resource.mime.as_deref().filter(|m| !m.is_empty()) {
                out.push_str(&format!(" [{mime}]"));
            }
            if let Some(description) = resource.description.as_deref().filter(|d| !d.is_empty()) {
                out.push_str(&format!(": {description}"));
            }
        }
        Ok(ToolResult::text(
            call.id().clone(),
            env.output_cap().truncate_owned(out),
        ))
    }
}

#[async_trait]
impl Tool for ReadMcpResource {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            READ_MCP_RESOURCE,
            "Reads one MCP resource by server and URI (see ListMcpResources). Text comes back verbatim; \
             binary content is summarized by type and size, never dumped. Without `server`, the URI is \
             looked up in the resource lists of all connected servers.",
        )
        .with_schema(json!({
            "type": "object",
            "properties": {
                "server": {
                    "type": "string",
                    "description": "The MCP server that lists the resource (optional when only one server lists the URI)."
                },
                "uri": {
                    "type": "string",
                    "description": "The resource URI, exactly as ListMcpResources shows it."
                }
            },
            "required": ["uri"]
        }))
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let args: ReadArgs = match arguments(cancel, call) {
            Ok(args) => args,
            Err(done) => return done,
        };
        let prefix = Operation::ReadResource.prefix();
        let uri = args.uri.as_deref().map(str::trim).unwrap_or_default();
        if uri.is_empty() {
            return Ok(ToolResult::error(
                call.id().clone(),
                format!("{prefix}: the uri argument is required (a resource URI from ListMcpResources)"),
            ));
        }
        let server = match args.server.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(server) => server.to_owned(),
            None => match self.locate(uri).await {
                Ok(server) => server,
                Err(message) => {
                    return Ok(ToolResult::error(
                        call.id().clone(),
                        format!("{prefix}: {message}"),
                    ));
                }
            },
        };
        match self.manager.read_resource(&server, uri, cancel).await {
            Ok(chunks) => {
                let text = chunks
                    .iter()
                    .map(resource_chunk_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok(ToolResult::text(
                    call.id().clone(),
                    env.output_cap().truncate_owned(text),
                ))
            }
            Err(McpError::Cancelled) => Err(ToolError::Cancelled),
            Err(error) => Ok(ToolResult::error(
                call.id().clone(),
                env.output_cap().truncate_owned(prefixed(&error)),
            )),
        }
    }
}

impl ReadMcpResource {
    /// The one server whose resource list holds `uri`.
    async fn locate(&self, uri: &str) -> Result<String, String> {
        let resources = self
            .manager
            .list_resources(None)
            .await
            .map_err(|e| e.to_string())?;
        let mut candidates: Vec<String> = resources
            .iter()
            .filter(|r| r.uri == uri)
            .map(|r| r.server.clone())
            .collect();
        candidates.dedup();
        match candidates.len() {
            1 => Ok(candidates.remove(0)),
            0 => {
                let searched = self.manager.server_names().join(", ");
                Err(format!(
                    "no connected MCP server lists the resource {uri:?} (servers searched: {searched}); \
                     check the URI with ListMcpResources or pass \"server\""
                ))
            }
            _ => Err(format!(
                "the resource {uri:?} is listed by several MCP servers ({}); pass \"server\" to choose one",
                candidates.join(", ")
            )),
        }
    }
}
