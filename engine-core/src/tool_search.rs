//! `ToolSearch` (D4): returns full specs of matching tools so the model can call
//! them correctly, and hydrates Disclosable tools for the session (D3).

use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{PermissionMode, ToolCall, ToolResult, ToolSpec};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::catalog::Catalog;
use crate::environment::Environment;
use crate::tool::{Tool, ToolError};

/// The reserved name of the search tool.
pub const TOOL_SEARCH_NAME: &str = "ToolSearch";

const DESCRIPTION: &str = "Returns the full specs (name, description and JSON schema of the \
arguments) of the tools matching a query, so they can be called correctly. Some tools are \
listed with a short description only; search for them before calling them. The query matches \
an exact tool name first, otherwise any tool whose name or description contains it \
(case-insensitive); an empty query returns every tool. Use `select:NameA,NameB` to fetch \
several tools by exact name. The result is a JSON array sorted by name; no match is `[]`. \
This tool is read-only.";

/// The spec of `ToolSearch`, for hosts that list it (family `meta`).
pub fn tool_search_spec() -> ToolSpec {
    ToolSpec::new(TOOL_SEARCH_NAME, DESCRIPTION).with_schema(serde_json::json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "A tool name, words to look for in names and descriptions, or `select:NameA,NameB`."
            }
        }
    }))
}

/// `ToolSearch` bound to one turn's view: the tools available in the session's
/// current mode (plan mode never hydrates a tool it cannot call).
pub struct ToolSearch {
    catalog: Arc<Catalog>,
    mode: PermissionMode,
}

impl ToolSearch {
    /// The search over `catalog` in `mode`.
    pub fn new(catalog: Arc<Catalog>, mode: PermissionMode) -> Self {
        Self { catalog, mode }
    }

    /// The names of the tools matching `query`, sorted (the search view never holds
    /// `ToolSearch` itself).
    pub fn matches(&self, query: &str) -> Vec<&str> {
        let view: Vec<(&str, &Arc<dyn Tool>)> = self
            .catalog
            .entries()
            .filter(|(name, tool)| {
                *name != TOOL_SEARCH_NAME && crate::catalog::available_in(tool.as_ref(), self.mode)
            })
            .collect();
        let q = query.trim();
        if let Some(list) = q.strip_prefix("select:") {
            let wanted: std::collections::BTreeSet<&str> =
                list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            return view
                .iter()
                .map(|(name, _)| *name)
                .filter(|name| wanted.contains(name))
                .collect();
        }
        if let Some((name, _)) = view.iter().find(|(name, _)| *name == q) {
            return vec![*name];
        }
        if q.is_empty() {
            return view.iter().map(|(name, _)| *name).collect();
        }
        let needle = q.to_lowercase();
        view.iter()
            .filter(|(name, tool)| {
                name.to_lowercase().contains(&needle)
                    || tool.spec().description().to_lowercase().contains(&needle)
            })
            .map(|(name, _)| *name)
            .collect()
    }
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    query: Option<String>,
}

#[async_trait]
impl Tool for ToolSearch {
    fn spec(&self) -> ToolSpec {
        tool_search_spec()
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let args: Args = match call.parse_args() {
            Ok(args) => args,
            Err(error) => return Ok(error.into_result(call)),
        };
        let names = self.matches(args.query.as_deref().unwrap_or(""));
        let items: Vec<serde_json::Value> = names
            .iter()
            .filter_map(|name| self.catalog.lookup(name).map(|tool| (name, tool)))
            .map(|(name, tool)| {
                let spec = tool.spec();
                let mut item = serde_json::Map::new();
                item.insert("name".into(), serde_json::Value::from(*name));
                item.insert("description".into(), serde_json::Value::from(spec.description()));
                if let Some(schema) = spec.schema() {
                    item.insert("schema".into(), schema.clone());
                }
                serde_json::Value::Object(item)
            })
            .collect();
        let text = serde_json::Value::Array(items).to_string();
        let cap = env.output_cap();
        if !cap.fits(&text) {
            return Ok(ToolResult::error(
                call.id().clone(),
                format!(
                    "ToolSearch matched {} tools, whose specs exceed the {}-byte output cap. \
                     Use a narrower query, or `select:NameA,NameB` with exact names.",
                    names.len(),
                    cap.max_bytes()
                ),
            ));
        }
        Ok(ToolResult::text(call.id().clone(), text))
    }
}

/// The names of the tools whose full specs a (non-error) `ToolSearch` result returned.
pub fn returned_names(result: &ToolResult) -> Vec<String> {
    if result.is_error() {
        return Vec::new();
    }
    #[derive(Deserialize)]
    struct Item {
        name: String,
    }
    serde_json::from_str::<Vec<Item>>(result.content())
        .map(|items| items.into_iter().map(|item| item.name).collect())
        .unwrap_or_default()
}
