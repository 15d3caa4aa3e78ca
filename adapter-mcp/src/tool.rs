//! [`McpTool`]: one remote MCP tool as a catalog [`Tool`].

use std::sync::Arc;

use async_trait::async_trait;
use engine_core::{Environment, Tool, ToolError};
use engine_ports::{ToolCall, ToolResult, ToolSpec};
use rmcp::model::JsonObject;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::{ResultContext, tool_result};
use crate::error::McpError;
use crate::listing::ToolDef;
use crate::server::ServerState;

/// How MCP tools are mounted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MountOptions {
    /// Progressive tools (D3): each MCP tool is Disclosable, advertised with its name
    /// and the first line of its description until `ToolSearch` hydrates it.
    pub progressive: bool,
    /// Trust the `readOnlyHint` of servers found by discovery (ToolHive). Off by
    /// default: any local process answering on the discovery port could claim a
    /// mutating tool is read-only, and read-only tools are kept in plan mode and
    /// auto-approved by `--approve read-only`. Untrusted, such a tool counts as
    /// mutating: hidden in plan mode, serialized, and asked for (or denied headless).
    pub trust_discovered: bool,
}

/// A remote MCP tool in the catalog as `mcp__<server>__<tool>`.
///
/// `read_only()` is `true` only when the server's `annotations.readOnlyHint` is
/// `true` and the server's hints are trusted (always for operator and client servers;
/// for discovered ones only with [`MountOptions::trust_discovered`]), so an unknown
/// remote tool is serialized and hidden in plan mode.
#[derive(Clone)]
pub struct McpTool {
    server: Arc<ServerState>,
    def: Arc<ToolDef>,
    progressive: bool,
    read_only: bool,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &&*self.def.full)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl McpTool {
    pub(crate) fn new(server: Arc<ServerState>, def: Arc<ToolDef>, options: MountOptions) -> Self {
        let trusted = options.trust_discovered || !server.config.source.is_discovered();
        Self {
            read_only: def.read_only && trusted,
            server,
            def,
            progressive: options.progressive,
        }
    }

    /// The catalog name, `mcp__<server>__<tool>`.
    pub fn name(&self) -> &str {
        &self.def.full
    }

    /// The server name.
    pub fn server(&self) -> &str {
        &self.server.config.name
    }

    /// The remote tool name (what `tools/call` sends).
    pub fn remote_name(&self) -> &str {
        &self.def.remote
    }

    /// This tool as a catalog entry.
    pub fn into_dyn(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

/// The arguments a call sends: `None` for empty text or `null`, else an object.
fn call_arguments(call: &ToolCall) -> Result<Option<JsonObject>, ToolResult> {
    let text = call.args().trim();
    if text.is_empty() || text == "null" {
        return Ok(None);
    }
    match call.parse_args::<Value>() {
        Err(error) => Err(error.into_result(call)),
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(ToolResult::error(
            call.id().clone(),
            format!(
                "invalid arguments for tool {}: they must be a JSON object, but {} was received. \
                 Send a JSON object that matches the tool's schema.",
                call.name(),
                json_type(&other)
            ),
        )),
    }
}

/// "an array", "a string", … for argument errors.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.def.spec.clone()
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn advertised_spec(&self) -> Option<ToolSpec> {
        self.progressive.then(|| self.def.light.clone())
    }

    /// The server's `outputSchema`, offered to the clients of the MCP server face
    /// (the model never sees it).
    fn output_schema(&self) -> Option<Value> {
        self.def.output_schema.clone()
    }

    /// The server's `destructiveHint`; a read-only tool destroys nothing.
    fn destructive(&self) -> bool {
        !self.read_only && self.def.destructive
    }

    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let arguments = match call_arguments(call) {
            Ok(arguments) => arguments,
            Err(result) => return Ok(result),
        };
        let elicitor = env.elicitor().cloned();
        match crate::manager::call_tool_on(&self.server, &self.def.remote, arguments, cancel, elicitor).await
        {
            Ok(result) => {
                if !result.is_error
                    && let Some(validator) = &self.def.output_validator
                    && let Err(problem) = crate::output_schema::check(validator, result.structured.as_ref())
                {
                    let text = format!(
                        "MCP tool {} (server {:?}) {problem}",
                        self.def.full, self.server.config.name
                    );
                    return Ok(ToolResult::error(
                        call.id().clone(),
                        env.output_cap().truncate_owned(text),
                    ));
                }
                Ok(tool_result(
                    &result,
                    &ResultContext {
                        call_id: call.id(),
                        tool: &self.def.full,
                        server: &self.server.config.name,
                        has_output_schema: self.def.has_output_schema(),
                        cap: env.output_cap(),
                    },
                ))
            }
            Err(McpError::Cancelled) => Err(ToolError::Cancelled),
            Err(error) => Ok(ToolResult::error(
                call.id().clone(),
                env.output_cap().truncate_owned(error.to_string()),
            )),
        }
    }
}
