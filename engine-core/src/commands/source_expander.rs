//! [`SourceExpander`]: turns any [`CommandSource`] into a link of the command chain.

use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    CommandBody, CommandError, CommandExpander, CommandInfo, CommandSource, Expansion, valid_command_name,
};

use super::frontmatter::strip_frontmatter;
use super::grammar::parse_command;
use super::substitute::substitute;
use crate::output_cap::OutputCap;

/// Wraps a command source (files, skills, a remote service). Every source goes
/// through it, so equal templates expand to byte-identical text whatever their
/// origin.
///
/// Non-command input never consults the source. An unknown command is
/// [`Expansion::NotExpanded`]; a source fault on a command-shaped input is `Err` (the
/// input is not expanded). The output is `substitute(strip_frontmatter(body), args)`,
/// preceded by `post` and an empty line when `post` is non-empty, and cut to the
/// output cap with the D10 marker.
pub struct SourceExpander {
    source: Arc<dyn CommandSource>,
    cap: OutputCap,
}

impl SourceExpander {
    /// An expander over `source` whose output never exceeds `cap`.
    pub fn new(source: Arc<dyn CommandSource>, cap: OutputCap) -> Self {
        Self { source, cap }
    }
}

/// The expansion of `body` with `args`, within `cap`.
pub fn render_template(body: &CommandBody, args: &[&str], cap: OutputCap) -> String {
    let expanded = substitute(strip_frontmatter(&body.body), args);
    if body.post.is_empty() {
        return cap.truncate_owned(expanded);
    }
    let mut out = String::with_capacity(body.post.len() + 2 + expanded.len());
    out.push_str(&body.post);
    out.push_str(if body.post.ends_with('\n') { "\n" } else { "\n\n" });
    out.push_str(&expanded);
    cap.truncate_owned(out)
}

#[async_trait]
impl CommandExpander for SourceExpander {
    async fn expand(&self, input: &str) -> Result<Expansion, CommandError> {
        let Some(invocation) = parse_command(input) else {
            return Ok(Expansion::NotExpanded);
        };
        match self.source.command_body(invocation.name).await {
            Ok(Some(body)) => Ok(Expansion::Expanded(render_template(
                &body,
                &invocation.args,
                self.cap,
            ))),
            Ok(None) => Ok(Expansion::NotExpanded),
            Err(CommandError::Expand { command, reason }) if command == invocation.name => {
                Err(CommandError::Expand { command, reason })
            }
            Err(error) => Err(CommandError::Expand {
                command: invocation.name.to_owned(),
                reason: error.to_string(),
            }),
        }
    }

    async fn list(&self) -> Result<Vec<CommandInfo>, CommandError> {
        let mut listed = self.source.list_commands().await?;
        listed.retain(|info| valid_command_name(&info.name));
        // Stable sort, then keep the first of each name.
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        listed.dedup_by(|later, earlier| later.name == earlier.name);
        Ok(listed)
    }
}
