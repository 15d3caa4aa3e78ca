//! The MCP prompt expander, `/mcp__<server>__<prompt> key=value …`, the last
//! link of the command chain.
//!
//! A prompt's text replaces the turn's input: an MCP server can rewrite the agent's
//! goal this way, so enable prompts only for servers you trust.

use std::collections::BTreeMap;

use async_trait::async_trait;
use engine_core::OutputCap;
use engine_ports::{CommandError, CommandExpander, CommandInfo, Diagnostics, Expansion};
use rmcp::model::GetPromptResult;
use tokio_util::sync::CancellationToken;

use crate::content::block_text;
use crate::manager::McpManager;

/// A parsed `/mcp__<server>__<prompt> key=value …` invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PromptCommand {
    /// The server.
    pub server: String,
    /// The prompt (may contain `__`).
    pub prompt: String,
    /// `None` when no `key=value` pair was given (no `arguments` at all).
    pub arguments: Option<BTreeMap<String, String>>,
}

/// Parses the expander grammar; `None` means "not for this expander".
///
/// Leading spaces and tabs are skipped; the head runs to the first space or tab and
/// splits at its first `__` after `/mcp__`. Tail tokens split at their first `=`;
/// tokens without `=` or with an empty key are ignored; there is no quoting; a later
/// duplicate key wins; `k=` gives an empty string.
pub(crate) fn parse_prompt_command(input: &str) -> Option<PromptCommand> {
    let text = input.trim_start_matches([' ', '\t']);
    let rest = text.strip_prefix("/mcp__")?;
    let head_end = rest.find([' ', '\t']).unwrap_or(rest.len());
    let (head, tail) = rest.split_at(head_end);
    let (server, prompt) = head.split_once("__")?;
    if server.is_empty() || prompt.is_empty() {
        return None;
    }
    let mut arguments = BTreeMap::new();
    for token in tail.split_whitespace() {
        if let Some((key, value)) = token.split_once('=')
            && !key.is_empty()
        {
            arguments.insert(key.to_owned(), value.to_owned());
        }
    }
    Some(PromptCommand {
        server: server.to_owned(),
        prompt: prompt.to_owned(),
        arguments: (!arguments.is_empty()).then_some(arguments),
    })
}

/// A `prompts/get` reply, as [`McpManager::get_prompt`] gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptReply {
    /// The prompt's description, when the server gave one.
    pub description: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<PromptMessage>,
}

/// One message of a [`PromptReply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptMessage {
    /// `user` or `assistant` (as the server named it; `user` when it named none).
    pub role: String,
    /// The content text mapping: text verbatim, markers for non-text content, never
    /// base64.
    pub text: String,
}

impl PromptReply {
    pub(crate) fn from_result(result: &GetPromptResult) -> Self {
        let messages = result
            .messages
            .iter()
            .map(|message| PromptMessage {
                role: serde_json::to_value(&message.role)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| "user".to_owned()),
                text: block_text(&message.content),
            })
            .collect();
        Self {
            description: result.description.clone(),
            messages,
        }
    }
}

/// Renders a prompt: `<role>: <text>` per message, separated by a blank line; the
/// whole within `cap`.
pub(crate) fn render_prompt(reply: &PromptReply, cap: OutputCap) -> String {
    let text = reply
        .messages
        .iter()
        .map(|message| format!("{}: {}", message.role, message.text))
        .collect::<Vec<_>>()
        .join("\n\n");
    cap.truncate_owned(text)
}

/// The MCP prompt expander over the global manager. Every expansion calls
/// `prompts/get` live; any failure leaves the input unchanged (one WARN).
pub struct McpPromptExpander {
    manager: McpManager,
    cap: OutputCap,
}

/// Builds the expander when `enabled` (`--mcp-prompts`), a global manager exists
/// and its prompt snapshot holds at least one prompt; otherwise one INFO says it is
/// disabled.
pub fn prompt_expander(
    enabled: bool,
    manager: Option<&McpManager>,
    cap: OutputCap,
) -> (Option<McpPromptExpander>, Diagnostics) {
    let mut diagnostics = Diagnostics::new();
    if !enabled {
        diagnostics.info("MCP prompt commands disabled by --mcp-prompts=false");
        return (None, diagnostics);
    }
    let count = manager.map_or(0, |m| m.prompt_snapshot().len());
    match manager.filter(|_| count > 0) {
        Some(manager) => {
            diagnostics.info(format!(
                "MCP prompt commands enabled: {count} prompt(s) as /mcp__<server>__<prompt>"
            ));
            (
                Some(McpPromptExpander {
                    manager: manager.clone(),
                    cap,
                }),
                diagnostics,
            )
        }
        None => {
            diagnostics.info("MCP prompt commands disabled: no connected MCP server lists a prompt");
            (None, diagnostics)
        }
    }
}

impl McpPromptExpander {
    /// An expander over `manager`, rendering within `cap`.
    pub fn new(manager: McpManager, cap: OutputCap) -> Self {
        Self { manager, cap }
    }
}

#[async_trait]
impl CommandExpander for McpPromptExpander {
    async fn expand(&self, input: &str) -> Result<Expansion, CommandError> {
        let Some(command) = parse_prompt_command(input) else {
            return Ok(Expansion::NotExpanded);
        };
        let cancel = CancellationToken::new();
        match self
            .manager
            .get_prompt(
                &command.server,
                &command.prompt,
                command.arguments.clone(),
                &cancel,
            )
            .await
        {
            Ok(result) => Ok(Expansion::Expanded(render_prompt(&result, self.cap))),
            Err(error) => {
                // Argument values never reach the log, even echoed by the server.
                let mut error = error.to_string();
                for value in command.arguments.iter().flat_map(|a| a.values()) {
                    if value.len() >= 3 {
                        error = error.replace(value.as_str(), "[value]");
                    }
                }
                let argument_names = command
                    .arguments
                    .as_ref()
                    .map(|a| a.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default();
                tracing::warn!(
                    server = %command.server,
                    prompt = %command.prompt,
                    arguments = %argument_names,
                    error = %error,
                    "MCP prompt /mcp__{}__{} was not expanded: {error}",
                    command.server,
                    command.prompt
                );
                Ok(Expansion::NotExpanded)
            }
        }
    }

    async fn list(&self) -> Result<Vec<CommandInfo>, CommandError> {
        let prompts = self
            .manager
            .list_prompts(None)
            .await
            .map_err(|e| CommandError::List {
                reason: e.to_string(),
            })?;
        Ok(prompts
            .into_iter()
            .map(|prompt| CommandInfo {
                name: format!("mcp__{}__{}", prompt.server, prompt.name),
                description: prompt.description.clone().unwrap_or_default(),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_command_grammar() {
        let args = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        assert_eq!(
            parse_prompt_command("/mcp__srv__greet who=Ada"),
            Some(PromptCommand {
                server: "srv".into(),
                prompt: "greet".into(),
                arguments: args(&[("who", "Ada")]),
            })
        );
        assert_eq!(
            parse_prompt_command(" \t/mcp__srv__greet").unwrap().arguments,
            None
        );
        let nested = parse_prompt_command("/mcp__srv__a__b k=v").unwrap();
        assert_eq!((nested.server.as_str(), nested.prompt.as_str()), ("srv", "a__b"));
        for no in [
            "/review x",
            "plain",
            "/mcp__onlyserver",
            "/mcp____x",
            "/mcp__srv__",
            "mcp__srv__p",
        ] {
            assert_eq!(parse_prompt_command(no), None, "{no}");
        }
        let tricky = parse_prompt_command("/mcp__s__p a=1 novalue =x a=2 b= \"q=v w\"").unwrap();
        assert_eq!(tricky.arguments, args(&[("\"q", "v"), ("a", "2"), ("b", "")]));
    }
}
