//! `tools/list`: the engine's offered tools as MCP tools — catalog name, full
//! description, input schema (an object schema when the tool has none), output
//! schema when declared, and the annotations `readOnlyHint` and `destructiveHint`.

use engine_core::OfferedTool;
use rmcp::model::{ListToolsResult, Tool};
use serde_json::{Value, json};

/// The listing of `offered`, in their order; a tool whose spec cannot be carried is
/// left out with a WARN.
pub(crate) fn tools_result(offered: &[OfferedTool]) -> ListToolsResult {
    let tools = offered.iter().filter_map(tool).collect();
    ListToolsResult::with_all_items(tools)
}

fn tool(offered: &OfferedTool) -> Option<Tool> {
    let spec = &offered.spec;
    let input = match spec.schema() {
        Some(schema @ Value::Object(map)) if map.get("type") == Some(&Value::from("object")) => {
            schema.clone()
        }
        Some(Value::Object(map)) if !map.contains_key("type") => {
            let mut schema = map.clone();
            schema.insert("type".to_owned(), Value::from("object"));
            Value::Object(schema)
        }
        _ => json!({"type": "object"}),
    };
    let mut annotations = json!({"readOnlyHint": offered.read_only});
    if !offered.read_only {
        annotations["destructiveHint"] = Value::Bool(offered.destructive);
    }
    let mut wire = json!({
        "name": spec.name(),
        "description": spec.description(),
        "inputSchema": input,
        "annotations": annotations,
    });
    if let Some(output) = offered.output_schema.as_ref().filter(|schema| schema.is_object()) {
        wire["outputSchema"] = output.clone();
    }
    match serde_json::from_value(wire) {
        Ok(tool) => Some(tool),
        Err(error) => {
            tracing::warn!(tool = spec.name(), %error, "a tool cannot be listed over MCP; it is left out");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use engine_ports::ToolSpec;

    use super::*;

    fn offered(name: &str, read_only: bool, destructive: bool, schema: Option<Value>) -> OfferedTool {
        let spec = ToolSpec::new(name, format!("the {name} tool"));
        OfferedTool {
            spec: match schema {
                Some(schema) => spec.with_schema(schema),
                None => spec,
            },
            read_only,
            destructive,
            output_schema: None,
        }
    }

    #[test]
    fn tools_carry_their_schema_and_annotations() {
        let listed = tools_result(&[
            offered(
                "Read",
                true,
                false,
                Some(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
            ),
            offered("Write", false, true, None),
            OfferedTool {
                output_schema: Some(json!({"type": "object"})),
                ..offered("mcp__s__add", false, false, Some(json!({"properties": {}})))
            },
        ]);
        let wire = serde_json::to_value(&listed).unwrap();
        let tools = wire["tools"].as_array().unwrap();
        assert_eq!(tools[0]["annotations"], json!({"readOnlyHint": true}));
        assert_eq!(tools[0]["inputSchema"]["properties"]["path"]["type"], "string");
        assert_eq!(
            tools[1]["annotations"],
            json!({"readOnlyHint": false, "destructiveHint": true})
        );
        assert_eq!(tools[1]["inputSchema"], json!({"type": "object"}));
        assert_eq!(
            tools[2]["inputSchema"],
            json!({"properties": {}, "type": "object"})
        );
        assert_eq!(tools[2]["annotations"]["destructiveHint"], false);
        assert_eq!(tools[2]["outputSchema"], json!({"type": "object"}));
    }
}
