//! Entry points for the coverage-guided fuzzing harness (`fuzz/`), behind the
//! `fuzzing` feature: thin wrappers over crate-private decoding and mapping code, so
//! the harness drives the real functions without widening the public surface.

use engine_core::OutputCap;
use engine_ports::{ToolCallId, ToolResult};
use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::content::{CallReply, ResultContext, tool_result};

/// Maps the raw JSON of a `tools/call` result as the client does: rmcp's typed
/// [`CallToolResult`] when the value decodes as one, else the lenient decoding of
/// a result rmcp could not type; then the content mapping under `cap` (for both
/// values of "the tool declares an output schema"). `None` when `json` is not JSON
/// or the lenient decoding refuses it.
#[must_use]
pub fn map_call_result(json: &[u8], cap: usize) -> Option<[ToolResult; 2]> {
    let value: Value = serde_json::from_slice(json).ok()?;
    let reply = match serde_json::from_value::<CallToolResult>(value.clone()) {
        Ok(typed) => CallReply::from_typed(typed),
        Err(_) => CallReply::from_value(value).ok()?,
    };
    let call_id = ToolCallId::from("fuzz-call");
    let map = |has_output_schema| {
        tool_result(
            &reply,
            &ResultContext {
                call_id: &call_id,
                tool: "mcp__fuzz__tool",
                server: "fuzz",
                has_output_schema,
                cap: OutputCap::new(cap),
            },
        )
    };
    let results = [map(false), map(true)];
    // The typed round trip the raw provider surface (`McpManager::call_tool`) uses.
    let _typed = reply.into_typed();
    Some(results)
}
