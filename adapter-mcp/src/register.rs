//! Registering MCP tools into a catalog — first wins, skip and continue, one WARN
//! per mount.

use std::sync::Arc;

use engine_core::{Catalog, CatalogError, Tool};

/// The family of a mounted tool, as `tools --json` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolFamily {
    /// Tools of operator-configured and ToolHive servers.
    McpGlobal,
    /// `ListMcpResources` and `ReadMcpResource`.
    McpResource,
    /// Tools of a session's client-provided servers.
    McpClient,
}

impl ToolFamily {
    /// `mcp-global`, `mcp-resource` or `mcp-client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::McpGlobal => "mcp-global",
            Self::McpResource => "mcp-resource",
            Self::McpClient => "mcp-client",
        }
    }
}

/// Which mount a [`Registration`] WARN speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Global servers: a server advertised names already registered.
    Global,
    /// Client servers: their tools are shadowed by server-global tools.
    Client,
}

/// A tool the catalog did not take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedTool {
    /// The tool name.
    pub name: String,
    /// Its family.
    pub family: ToolFamily,
    /// Why it was skipped.
    pub reason: String,
}

/// What one mount registered and skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The family of the mount.
    pub family: ToolFamily,
    /// Names registered, in order.
    pub registered: Vec<String>,
    /// Names skipped, in encounter order (empty when clean).
    pub skipped: Vec<SkippedTool>,
}

/// Adds `tools` to `catalog` in order. On a name collision the existing entry stays
/// and the new tool is skipped (first wins); any other rejection is a skip too;
/// registration always goes on.
pub fn register(
    catalog: &mut Catalog,
    tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    family: ToolFamily,
) -> Registration {
    let mut registration = Registration {
        family,
        registered: Vec::new(),
        skipped: Vec::new(),
    };
    for tool in tools {
        let name = tool.spec().name().to_owned();
        match catalog.register(tool) {
            Ok(()) => registration.registered.push(name),
            Err(error) => {
                let reason = match &error {
                    CatalogError::Duplicate(_) => {
                        "a tool with this name is already registered; the existing one is kept".to_owned()
                    }
                    other => other.to_string(),
                };
                registration.skipped.push(SkippedTool { name, family, reason });
            }
        }
    }
    registration
}

impl Registration {
    /// The skipped names joined by `", "`.
    pub fn skipped_names(&self) -> String {
        self.skipped
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Emits exactly one WARN when something was skipped (none otherwise), listing
    /// every skipped name in the message and in the structured field `tools`.
    pub fn warn(&self, tier: Tier) {
        if self.skipped.is_empty() {
            return;
        }
        let tools = self.skipped_names();
        match tier {
            Tier::Global => tracing::warn!(
                tools = %tools,
                family = self.family.as_str(),
                "an MCP server advertised tool name(s) already registered; the existing tools are kept and these are skipped: {tools}"
            ),
            Tier::Client => tracing::warn!(
                tools = %tools,
                family = self.family.as_str(),
                "client MCP tool(s) are shadowed by server-global tools of the same name; the global tools win and these client tools are skipped: {tools}"
            ),
        }
    }
}
