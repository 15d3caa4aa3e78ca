//! [`MemoryCommandSource`]: an in-memory [`CommandSource`].

use async_trait::async_trait;

use crate::commands::{CommandBody, CommandError, CommandInfo, CommandSource};
use crate::testkit::command_source::CommandFixture;

/// An in-memory command source: listing entries and bodies as given, the first of
/// each name kept, listed in name order. It passes
/// [`command_source::run`](crate::testkit::command_source::run).
#[derive(Clone, Debug, Default)]
pub struct MemoryCommandSource {
    commands: Vec<(CommandInfo, CommandBody)>,
}

impl MemoryCommandSource {
    /// A source holding `commands`.
    pub fn new(commands: impl IntoIterator<Item = (CommandInfo, CommandBody)>) -> Self {
        let mut kept: Vec<(CommandInfo, CommandBody)> = Vec::new();
        for (info, body) in commands {
            if !kept.iter().any(|(k, _)| k.name == info.name) {
                kept.push((info, body));
            }
        }
        kept.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        Self { commands: kept }
    }

    /// A source of bare templates: no description, no `post`.
    pub fn from_templates<'a>(templates: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self::new(templates.into_iter().map(|(name, body)| {
            (
                CommandInfo {
                    name: name.to_owned(),
                    description: String::new(),
                },
                CommandBody {
                    body: body.to_owned(),
                    post: String::new(),
                },
            )
        }))
    }

    /// A source holding the conformance fixture.
    pub fn from_fixture(fixture: &[CommandFixture]) -> Self {
        Self::new(fixture.iter().map(|c| {
            (
                CommandInfo {
                    name: c.name.to_owned(),
                    description: c.description.to_owned(),
                },
                CommandBody {
                    body: c.template.to_owned(),
                    post: String::new(),
                },
            )
        }))
    }
}

#[async_trait]
impl CommandSource for MemoryCommandSource {
    async fn list_commands(&self) -> Result<Vec<CommandInfo>, CommandError> {
        Ok(self.commands.iter().map(|(info, _)| info.clone()).collect())
    }

    async fn command_body(&self, name: &str) -> Result<Option<CommandBody>, CommandError> {
        Ok(self
            .commands
            .iter()
            .find(|(info, _)| info.name == name)
            .map(|(_, body)| body.clone()))
    }
}
