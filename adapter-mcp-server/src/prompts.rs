//! `prompts/list` and `prompts/get`: the command palette (skills, slash commands,
//! and — with `--mcp-prompts` — upstream servers' prompts under
//! `mcp__<server>__<prompt>`) as MCP prompts. Each takes one optional argument,
//! `arguments`, the text after the command (its `$ARGUMENTS`); getting one expands
//! the command exactly as a prompt typed in a chat would be, within the command
//! timeout, and returns the expansion as one user message.

use std::sync::Arc;

use engine_core::DEFAULT_COMMAND_TIMEOUT;
use engine_ports::{CommandExpander, Expansion};
use rmcp::model::{ErrorData, GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use serde_json::{Value, json};

/// The one argument every prompt takes.
const ARGUMENTS: &str = "arguments";

/// The palette as prompts.
pub(crate) async fn list(commands: &Arc<dyn CommandExpander>) -> Result<ListPromptsResult, ErrorData> {
    let listed = tokio::time::timeout(DEFAULT_COMMAND_TIMEOUT, commands.list())
        .await
        .map_err(|_| ErrorData::internal_error("listing the commands did not finish in time", None))?
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    let prompts: Vec<Value> = listed
        .into_iter()
        .map(|command| {
            json!({
                "name": command.name,
                "description": command.description,
                "arguments": [{
                    "name": ARGUMENTS,
                    "description": "The text after the command (what it calls $ARGUMENTS).",
                    "required": false,
                }],
            })
        })
        .collect();
    serde_json::from_value(json!({"prompts": prompts})).map_err(|error| {
        ErrorData::internal_error(format!("the prompt listing cannot be encoded: {error}"), None)
    })
}

/// One prompt: `/<name> <arguments>` expanded by the palette.
pub(crate) async fn get(
    commands: &Arc<dyn CommandExpander>,
    request: GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let name = request.name.to_string();
    if !engine_ports::valid_command_name(&name) {
        return Err(ErrorData::invalid_params(
            format!("no prompt named {name:?}: prompt names are [A-Za-z0-9._-]"),
            None,
        ));
    }
    let arguments = request
        .arguments
        .as_ref()
        .and_then(|map| map.get(ARGUMENTS))
        .and_then(Value::as_str)
        .unwrap_or("");
    let input = if arguments.is_empty() {
        format!("/{name}")
    } else {
        format!("/{name} {arguments}")
    };
    let expanded = tokio::time::timeout(DEFAULT_COMMAND_TIMEOUT, commands.expand(&input))
        .await
        .map_err(|_| ErrorData::internal_error(format!("expanding /{name} did not finish in time"), None))?
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    let text = match expanded {
        Expansion::Expanded(text) => text,
        Expansion::NotExpanded => {
            return Err(ErrorData::invalid_params(
                format!("no prompt named {name:?}: prompts/list names the prompts"),
                None,
            ));
        }
    };
    let wire = json!({
        "description": format!("/{name}"),
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    });
    serde_json::from_value(wire)
        .map_err(|error| ErrorData::internal_error(format!("the prompt cannot be encoded: {error}"), None))
}
