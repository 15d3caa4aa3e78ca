//! The slash-command chain of the CLI: file commands > skill commands > (no remote
//! source) > MCP prompts.

use std::path::Path;
use std::sync::Arc;

use adapter_skillfs::{CommandDirsOptions, FileCommandSource, HostEnv, ProjectTrust};
use engine_core::{CommandChain, OutputCap, SkillCommandSource};
use engine_ports::{CommandExpander, CommandSource, Diagnostic, SkillMeta, SkillSource};

use crate::global_mcp::GlobalMcp;

/// What the chain is built from.
pub(crate) struct ChainParts<'a> {
    pub(crate) commands_dir: Option<&'a Path>,
    pub(crate) workspace: &'a Path,
    pub(crate) trust: ProjectTrust,
    pub(crate) host: &'a HostEnv,
    pub(crate) skills: Option<(&'a Arc<dyn SkillSource>, &'a [SkillMeta])>,
    pub(crate) global: &'a GlobalMcp,
    pub(crate) mcp_prompts: bool,
    pub(crate) cap: OutputCap,
}

/// Builds the chain every prompt goes through and returns its diagnostics (a WARN
/// per withheld project command directory, the MCP prompt INFO), already logged.
///
/// Links, in precedence order: (1) command files (`--commands-dir`, then the project
/// directories when the workspace is trusted), (2) skills as `/<skill-name>` (only
/// with at least one skill), (3) no remote source in the CLI, (4) the MCP prompt
/// expander (only when some global server lists a prompt).
pub(crate) fn command_chain(parts: &ChainParts<'_>) -> (Arc<dyn CommandExpander>, Vec<Diagnostic>) {
    let (files, mut diagnostics) = FileCommandSource::new(
        &CommandDirsOptions {
            commands_dir: parts.commands_dir.map(Path::to_path_buf),
            workspace: parts.workspace.to_path_buf(),
            trust: parts.trust,
        },
        parts.host,
    );
    let mut builder =
        CommandChain::builder(parts.cap).file_commands(Arc::new(files) as Arc<dyn CommandSource>);
    if let Some((source, metas)) = parts.skills {
        let skill_commands = SkillCommandSource::new(Arc::clone(source), metas);
        builder = builder.skill_commands(Arc::new(skill_commands));
    }
    let (prompts, prompt_notes) = parts.global.prompt_expander(parts.mcp_prompts, parts.cap);
    diagnostics.extend(prompt_notes.into_entries());
    if let Some(prompts) = prompts {
        builder = builder.mcp_prompts(Arc::new(prompts));
    }
    (Arc::new(builder.build()), diagnostics)
}
