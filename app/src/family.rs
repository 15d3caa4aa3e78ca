//! Tool families ([`Family`]) and the canonical registration order
//! ([`FAMILY_ORDER`] of [`FamilySlot`]s).

use std::fmt;

use serde::Serialize;

/// The family of a catalog tool, as `mecated tools --json` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Family {
    /// Read, Write, Edit, Glob, Grep, ListDir, Shell.
    Core,
    /// Tools of operator-configured and ToolHive MCP servers.
    McpGlobal,
    /// `ListMcpResources`, `ReadMcpResource`.
    McpResource,
    /// Tools of a session's client-provided MCP servers.
    McpClient,
    /// Subagent, InspectSubagent, SubagentStatus, Parallel, Team, InspectMember.
    Delegation,
    /// Memory and user-model tools.
    Memory,
    /// `Skill`, `SkillDraft`.
    Skill,
    /// `ToolSearch` (owned by each engine, listed by hosts; never in a catalog).
    Meta,
}

impl Family {
    /// The wire name: `core`, `mcp-global`, `mcp-resource`, `mcp-client`,
    /// `delegation`, `memory`, `skill` or `meta`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::McpGlobal => "mcp-global",
            Self::McpResource => "mcp-resource",
            Self::McpClient => "mcp-client",
            Self::Delegation => "delegation",
            Self::Memory => "memory",
            Self::Skill => "skill",
            Self::Meta => "meta",
        }
    }

    /// Whether tools of this family come from MCP servers (they lose name collisions
    /// and never fail a build; two non-MCP families colliding is a bug).
    pub fn is_mcp(self) -> bool {
        matches!(self, Self::McpGlobal | Self::McpResource | Self::McpClient)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One slot of the canonical registration order. A slot whose family is not built
/// yet is a no-op arm of the assembly loop; filling it later cannot reorder the
/// others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FamilySlot {
    /// The core tools (family `core`).
    Core,
    /// Server-global MCP tools, then the resource meta-tools (`mcp-global`,
    /// `mcp-resource`).
    GlobalMcp,
    /// A session's client MCP tools (`mcp-client`); per-session catalogs only.
    ClientMcp,
    /// Subagent, InspectSubagent, SubagentStatus (`delegation`); in a child's
    /// catalog, the child's own tools instead.
    Subagent,
    /// Parallel (`delegation`; never in a child's catalog).
    Parallel,
    /// Team, InspectMember (`delegation`; never in a child's catalog).
    Team,
    /// Remember, Recall, SearchMemory, ForgetMemory (`memory`).
    Memory,
    /// RememberUser, RecallUser, SearchUserModel, ForgetUser (`memory`).
    UserModel,
    /// `Skill` (`skill`).
    Skill,
    /// `SkillDraft` (`skill`).
    SkillDraft,
}

impl FamilySlot {
    /// A short name for narration and tests.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::GlobalMcp => "server-global MCP",
            Self::ClientMcp => "client MCP",
            Self::Subagent => "Subagent/InspectSubagent/SubagentStatus",
            Self::Parallel => "Parallel",
            Self::Team => "Team/InspectMember",
            Self::Memory => "memory",
            Self::UserModel => "user-model",
            Self::Skill => "Skill",
            Self::SkillDraft => "SkillDraft",
        }
    }
}

/// The canonical order of registration, as the seed fixes it: core → server-global
/// MCP (+ resource meta-tools) → client MCP → Subagent/InspectSubagent/SubagentStatus →
/// Parallel → Team/InspectMember → memory → user-model → Skill → SkillDraft.
/// [`assemble_catalog`](crate::assemble_catalog) walks it in one loop; earlier slots
/// win name collisions.
pub const FAMILY_ORDER: [FamilySlot; 10] = [
    FamilySlot::Core,
    FamilySlot::GlobalMcp,
    FamilySlot::ClientMcp,
    FamilySlot::Subagent,
    FamilySlot::Parallel,
    FamilySlot::Team,
    FamilySlot::Memory,
    FamilySlot::UserModel,
    FamilySlot::Skill,
    FamilySlot::SkillDraft,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_order_is_the_seed_sequence() {
        let names: Vec<&str> = FAMILY_ORDER.iter().map(|slot| slot.as_str()).collect();
        assert_eq!(
            names,
            [
                "core",
                "server-global MCP",
                "client MCP",
                "Subagent/InspectSubagent/SubagentStatus",
                "Parallel",
                "Team/InspectMember",
                "memory",
                "user-model",
                "Skill",
                "SkillDraft",
            ]
        );
    }

    #[test]
    fn family_wire_names() {
        let all = [
            Family::Core,
            Family::McpGlobal,
            Family::McpResource,
            Family::McpClient,
            Family::Delegation,
            Family::Memory,
            Family::Skill,
            Family::Meta,
        ];
        let names: Vec<String> = all
            .iter()
            .map(|f| serde_json::to_value(f).unwrap().as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "core",
                "mcp-global",
                "mcp-resource",
                "mcp-client",
                "delegation",
                "memory",
                "skill",
                "meta"
            ]
        );
        assert!(all.iter().all(|f| f.as_str() == serde_json::to_value(f).unwrap()));
    }
}
