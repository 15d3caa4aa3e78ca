//! Slash commands: the [`CommandSource`] port for templates and the
//! [`CommandExpander`] contract every link of the expansion chain implements.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A source of command templates (files, skills, a remote service).
///
/// # Contract
/// `command_body` returns `Ok(None)` for an unknown command (normal, not an error);
/// `Err` is a fault that stops the expansion chain.
#[async_trait]
pub trait CommandSource: Send + Sync {
    /// Every command this source offers.
    async fn list_commands(&self) -> Result<Vec<CommandInfo>, CommandError>;
    /// The template of one command.
    async fn command_body(&self, name: &str) -> Result<Option<CommandBody>, CommandError>;
}

/// One entry of a command palette.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandInfo {
    /// The command name (without `/`).
    pub name: String,
    /// One-line description.
    pub description: String,
}

/// A command template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandBody {
    /// The template (`$ARGUMENTS`, `$N` are substituted).
    pub body: String,
    /// A block placed before the expansion and never substituted (may be empty).
    pub post: String,
}

/// The result of offering input to an expander.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expansion {
    /// The input was a command this expander knows: here is the prompt.
    Expanded(String),
    /// Not for this expander; the input passes on unchanged.
    NotExpanded,
}

/// A command expansion or listing that failed. It stops the chain: the submission
/// fails and nothing reaches the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// Expanding the named command failed.
    #[error("command /{command} failed: {reason}")]
    Expand {
        /// The command name.
        command: String,
        /// What went wrong.
        reason: String,
    },
    /// Listing commands failed.
    #[error("listing commands failed: {reason}")]
    List {
        /// What went wrong.
        reason: String,
    },
}

/// One link of the command chain (file commands, skill commands, a remote source, MCP
/// prompts); the chain itself is an expander too.
///
/// # Contract
/// Input that is not for this expander gives [`Expansion::NotExpanded`], never an
/// error; `Err` means a command of this expander failed.
///
/// Listing is optional: an expander that cannot enumerate its commands (say, a remote
/// service consulted only live) returns `false` from [`CommandExpander::can_list`],
/// and palette merges then skip it without calling [`CommandExpander::list`]. An
/// expander that can list and fails to is an error that aborts the palette listing.
#[async_trait]
pub trait CommandExpander: Send + Sync {
    /// Expands `input` when it is one of this expander's commands.
    async fn expand(&self, input: &str) -> Result<Expansion, CommandError>;
    /// The commands this expander offers, for the palette.
    async fn list(&self) -> Result<Vec<CommandInfo>, CommandError>;
    /// Whether this expander can list its commands at all (default `true`). When
    /// `false`, it adds nothing to a palette and `list` is never consulted for one.
    fn can_list(&self) -> bool {
        true
    }
}

/// The command-name rule: non-empty, only `[A-Za-z0-9._-]`.
pub fn valid_command_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}
