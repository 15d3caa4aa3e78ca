//! Tool families ([`Family`]): the one taxonomy, its wire names and the canonical
//! registration order ([`FAMILY_ORDER`]).

use std::fmt;

use serde::Serialize;

/// The family of a catalog tool, as `mecated tools --json` shows it. Declared in
/// [`FAMILY_ORDER`], so the derived order is the registration order. Exhaustive on
/// purpose: a new family must be placed in every `match` that assigns tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
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

/// The canonical order of registration, as the seed fixes it, one entry per family:
/// core → server-global MCP → its resource meta-tools → client MCP → delegation
/// (Subagent/InspectSubagent/SubagentStatus, then Parallel, then Team/InspectMember) →
/// memory (project memory, then the user model) → skill (`Skill`, then `SkillDraft`) →
/// meta. `app::assemble_catalog` walks it in one loop; earlier
/// entries win name collisions. This list is the one place that says which families
/// exist and in which order; every family is enabled (what a build leaves out is the
/// configuration's choice, narrated per family). `meta` is last and registers nothing:
/// `ToolSearch` is owned by each engine, never by a catalog.
pub const FAMILY_ORDER: [Family; 8] = [
    Family::Core,
    Family::McpGlobal,
    Family::McpResource,
    Family::McpClient,
    Family::Delegation,
    Family::Memory,
    Family::Skill,
    Family::Meta,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_order_is_the_declaration_order() {
        let names: Vec<&str> = FAMILY_ORDER.iter().map(|family| family.as_str()).collect();
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
                "meta",
            ]
        );
        assert!(FAMILY_ORDER.is_sorted());
    }

    #[test]
    fn family_wire_names() {
        // The names themselves are fixed by the order test above.
        for family in FAMILY_ORDER {
            assert_eq!(serde_json::to_value(family).unwrap(), family.as_str());
        }
    }
}
