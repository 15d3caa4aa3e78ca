//! Filesystem skills for Mecatl: the `SKILL.md` parser, directory discovery with
//! tiers and the trust gate, [`FsSource`] (the filesystem
//! [`SkillSource`](engine_ports::SkillSource)), file-backed slash commands
//! ([`FileCommandSource`]), the quarantine drafter ([`QuarantineDrafter`]) and
//! promotion ([`promote`]).
//!
//! It implements ports of `engine-ports` and depends on no other workspace crate. It
//! is not the `Skill` tool, the command grammar or the expander chain (those are
//! domain code in `engine-core`), and it makes no trust decision itself: the
//! composition root passes [`ProjectTrust`] in. Filesystem locations never cross the
//! port: error texts, listings and results carry logical names only, while operator
//! diagnostics ([`SkipDiagnostic`]) and startup errors may name configured paths.
//!
//! Start with [`load_skills`] (options → tiers → [`DirSource`]s in a [`MultiSource`] →
//! [`FsSource`], diagnostics logged and returned), then [`parse_skill_md`] for the
//! file format. Named agent definitions ([`load_agents`], [`parse_agent_md`]) are read
//! and parsed the same way. For commands, [`FileCommandSource::new`]; for drafts,
//! [`QuarantineDrafter`], [`check_quarantine_placement`] and [`promote`].
//!
//! YAML: `gray_matter`'s splitter trims delimiter lines and its YAML engine types
//! scalars, so this crate splits frontmatter itself and drives the same YAML engine
//! (`yaml-rust2`) at event level, keeping scalars as source text and reducing
//! errors to positions. Directory walks use `walkdir`; asset reads open each
//! component with `O_NOFOLLOW` (`rustix`).

mod agents;
mod confined;
mod dir_source;
mod discovery;
mod drafter;
mod file_commands;
mod frontmatter;
mod fs_source;
mod fs_util;
mod injection;
mod inventory;
mod multi_source;
mod placement;
mod promotion;
mod similarity;
mod skill_md;
mod tiers;
mod yaml;

// The public surface, in one place.
pub use agents::{
    AGENT_MAX_TURNS_CAP, AgentFileError, AgentsLoad, MAX_AGENT_FILES_PER_DIR, ParsedAgent, load_agents,
    parse_agent_md, project_agent_dir,
};
pub use confined::{MAX_DEFINITION_FILE_BYTES, read_repository_file};
pub use dir_source::DirSource;
pub use discovery::{Discover, DiscoveredSkill, Discovery, DiscoveryError, DiscoveryFailure, SkipDiagnostic};
pub use drafter::{QuarantineDrafter, draft_file};
pub use file_commands::{
    COMMAND_DESCRIPTION_CHARS, CommandDirsOptions, FileCommandSource, describe as describe_command,
    project_command_dirs,
};
pub use fs_source::{FsBuild, FsSource, FsSourceConfig, SkillsLoad, load_skills};
pub use inventory::InventoryLimits;
pub use multi_source::MultiSource;
pub use placement::{PlacementError, check_quarantine_placement};
pub use promotion::{DraftSummary, PromoteError, PromoteRequest, Promoted, promote};
pub use similarity::NEAR_DUPLICATE_THRESHOLD;
pub use skill_md::{
    ALLOWED_TOOL_NAME_CAP, ALLOWED_TOOLS_MAX, DEFAULT_OUTPUT_CAP, DESCRIPTION_CAP, FIELD_CAP,
    FRONTMATTER_MAX_KEYS, METADATA_MAX_ENTRIES, METADATA_VALUE_CAP, NoteAction, NoteUnit, ParsedSkill,
    SKILL_NAME_GRAMMAR, SkillFileError, SkillNote, parse_skill_md,
};
pub use tiers::{
    HostEnv, ProjectTrust, ResolvedDirs, SkillsOptions, TierDir, project_skill_dirs, resolve_skill_dirs,
};
