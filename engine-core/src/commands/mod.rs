//! Slash commands: the grammar, `$ARGUMENTS`/`$N` substitution, frontmatter
//! stripping, the [`SourceExpander`] over any command source, skills as commands and
//! the precedence [`CommandChain`] with its palette listing.

mod chain;
mod frontmatter;
mod grammar;
mod skill_commands;
mod source_expander;
mod substitute;

pub use chain::{CommandChain, CommandChainBuilder};
pub use frontmatter::strip_frontmatter;
pub use grammar::{CommandInvocation, parse_command};
pub use skill_commands::SkillCommandSource;
pub use source_expander::{SourceExpander, render_template};
pub use substitute::substitute;
