//! [`CommandChain`]: the precedence chain of expanders and the palette listing.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{CommandError, CommandExpander, CommandInfo, CommandSource, Expansion};

use super::source_expander::SourceExpander;
use crate::output_cap::OutputCap;

/// The command chain: itself a [`CommandExpander`] over an ordered list of links.
///
/// Expansion offers the input to each link in order; the **first that expands
/// wins**, and an error from any link stops the chain (the submission fails with an
/// error naming the command, nothing reaches the model). The palette listing merges
/// the links' listings in chain order, keeps the first entry per name and sorts by
/// name; a link that cannot list ([`CommandExpander::can_list`] is `false`) adds
/// nothing, and a link's listing error aborts the listing. With no links every input
/// passes through and the listing is empty.
#[derive(Clone, Default)]
pub struct CommandChain {
    links: Vec<Arc<dyn CommandExpander>>,
}

impl CommandChain {
    /// A chain over `links`, in precedence order.
    pub fn new(links: Vec<Arc<dyn CommandExpander>>) -> Self {
        Self { links }
    }

    /// A builder that places each link at its specified rank, whatever the call
    /// order: (1) local command files, (2) skills, (3) a remote command source, (4)
    /// the MCP prompt expander.
    pub fn builder(cap: OutputCap) -> CommandChainBuilder {
        CommandChainBuilder {
            cap,
            files: None,
            skills: None,
            remote: None,
            mcp_prompts: None,
        }
    }

    /// How many links it has.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether it has no link.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }
}

#[async_trait]
impl CommandExpander for CommandChain {
    async fn expand(&self, input: &str) -> Result<Expansion, CommandError> {
        for link in &self.links {
            match link.expand(input).await? {
                Expansion::Expanded(text) => return Ok(Expansion::Expanded(text)),
                Expansion::NotExpanded => {}
            }
        }
        Ok(Expansion::NotExpanded)
    }

    async fn list(&self) -> Result<Vec<CommandInfo>, CommandError> {
        let mut merged: Vec<CommandInfo> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for link in self.links.iter().filter(|link| link.can_list()) {
            for info in link.list().await? {
                if seen.insert(info.name.clone()) {
                    merged.push(info);
                }
            }
        }
        merged.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(merged)
    }
}

/// Builds a [`CommandChain`] in the specified precedence, whatever the call order.
#[must_use]
pub struct CommandChainBuilder {
    cap: OutputCap,
    files: Option<Arc<dyn CommandSource>>,
    skills: Option<Arc<dyn CommandSource>>,
    remote: Option<Arc<dyn CommandSource>>,
    mcp_prompts: Option<Arc<dyn CommandExpander>>,
}

impl CommandChainBuilder {
    /// Link 1: the local command files.
    pub fn file_commands(mut self, source: Arc<dyn CommandSource>) -> Self {
        self.files = Some(source);
        self
    }

    /// Link 2: skills as commands (usually a
    /// [`SkillCommandSource`](super::SkillCommandSource)).
    pub fn skill_commands(mut self, source: Arc<dyn CommandSource>) -> Self {
        self.skills = Some(source);
        self
    }

    /// Link 3: a remote command source injected by the embedder, consulted live.
    pub fn remote_commands(mut self, source: Arc<dyn CommandSource>) -> Self {
        self.remote = Some(source);
        self
    }

    /// Link 4: the MCP prompt expander (last).
    pub fn mcp_prompts(mut self, expander: Arc<dyn CommandExpander>) -> Self {
        self.mcp_prompts = Some(expander);
        self
    }

    /// The chain: each source wrapped in a [`SourceExpander`] with the cap.
    pub fn build(self) -> CommandChain {
        let cap = self.cap;
        let mut links: Vec<Arc<dyn CommandExpander>> = [self.files, self.skills, self.remote]
            .into_iter()
            .flatten()
            .map(|source| Arc::new(SourceExpander::new(source, cap)) as Arc<dyn CommandExpander>)
            .collect();
        links.extend(self.mcp_prompts);
        CommandChain::new(links)
    }
}
