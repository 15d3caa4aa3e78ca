//! [`assemble_catalog`]: the only code that registers tools, for the shared catalog
//! and every per-session catalog.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use adapter_mcp::{McpError, McpManager};
use engine_core::{Catalog, CatalogError, ChildAccess, ChildSpec, TOOL_SEARCH_NAME, Tool};
use engine_ports::{Diagnostic, Diagnostics, Level};

use crate::assets::CatalogAssets;
pub use engine_core::host::SkippedTool;
use engine_core::host::{FAMILY_ORDER, Family};

/// What one assembly gets besides the shared assets.
#[derive(Clone, Copy, Debug, Default)]
pub struct CatalogInputs<'a> {
    /// The session's client-provided MCP servers (per-session catalogs only).
    pub client_mcp: Option<&'a McpManager>,
    /// Log one INFO per family saying it is enabled or why not (the shared build
    /// only); without it, assembly logs WARNs only.
    pub narrate: bool,
    /// A child engine's profile. Its catalog holds no delegation tool and no
    /// `SkillDraft` (the engine gives children no `ToolSearch`); of the other families
    /// only what its access allows (read-only: read-only tools; a workspace copy:
    /// read-only tools and the core tools, which act on the copy) and, when given,
    /// only its tool names; then its own extra tools, in the delegation family's place.
    pub child: Option<&'a ChildSpec>,
}

/// Two non-MCP families registered the same name: a bug, which fails the build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolConflict {
    /// The name.
    pub name: String,
    /// The family that registered it first.
    pub kept: Family,
    /// The family that tried again.
    pub rejected: Family,
}

/// The family of every tool of one catalog.
pub type FamilyMap = HashMap<Arc<str>, Family>;

/// A freshly assembled catalog and what happened while assembling it.
#[non_exhaustive]
pub struct AssembledCatalog {
    /// The frozen catalog.
    pub catalog: Arc<Catalog>,
    /// Tools skipped because their name was taken, in registration order.
    pub skipped: Vec<SkippedTool>,
    /// The client MCP tools that were registered.
    pub client_tool_names: Vec<String>,
    /// The family of every registered tool.
    pub families: Arc<FamilyMap>,
    /// Collisions between non-MCP families (always empty unless there is a bug).
    pub conflicts: Vec<ToolConflict>,
    /// The INFO lines (with `narrate`) and WARNs of this assembly, as data (D9).
    pub diagnostics: Vec<Diagnostic>,
    /// The global MCP snapshot generation the catalog was built from.
    pub mcp_generation: u64,
    /// Closes what belongs to this catalog alone (its client MCP manager).
    pub teardown: CatalogTeardown,
}

impl std::fmt::Debug for AssembledCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssembledCatalog")
            .field("catalog", &self.catalog)
            .field("skipped", &self.skipped)
            .field("client_tool_names", &self.client_tool_names)
            .field("conflicts", &self.conflicts)
            .finish_non_exhaustive()
    }
}

/// What a catalog owns beyond its tools: a per-session catalog's client MCP manager.
/// Closing it never touches the server-global manager.
#[derive(Clone, Debug, Default)]
pub struct CatalogTeardown {
    client: Option<McpManager>,
}

impl CatalogTeardown {
    /// Closes the client MCP manager, if any (idempotent).
    ///
    /// # Errors
    /// The manager's first close error.
    pub async fn close(&self) -> Result<(), McpError> {
        match &self.client {
            Some(client) => client.close().await,
            None => Ok(()),
        }
    }

    /// Whether there is a client manager to close.
    pub fn has_client_servers(&self) -> bool {
        self.client.is_some()
    }
}

/// Builds a fresh catalog from `assets`, family by family in [`FAMILY_ORDER`].
///
/// This is the **only** code that registers tools. It does no I/O: the global MCP
/// tools come from the snapshot pinned at the start, the client tools from the client
/// manager's snapshot taken at the start, skills and resources from the assets. On a
/// name collision the first registration wins; the later tool is skipped, recorded in
/// `skipped` and logged in one WARN per tier. Two non-MCP families colliding is
/// recorded in `conflicts` (the build treats it as fatal).
pub fn assemble_catalog(assets: &CatalogAssets, inputs: CatalogInputs<'_>) -> AssembledCatalog {
    // Pin every snapshot first: the loop below sees one generation of each list.
    let global = assets.global.pinned_tools();
    let client: Option<Vec<Arc<dyn Tool>>> = inputs
        .client_mcp
        .map(|manager| manager.tool_snapshot(assets.mount).catalog_tools());
    let capacity = assets.core.len()
        + global.tools().len()
        + assets.resources.tools.len()
        + client.as_ref().map_or(0, Vec::len)
        + assets.memory.project.len()
        + assets.memory.user.len()
        + 2;
    let mut run = Assembly::new(inputs.narrate, capacity);
    run.child = inputs.child.map(ChildFilter::new);

    for family in FAMILY_ORDER {
        match family {
            Family::Core => {
                run.builtin(Family::Core, &assets.core, Confined::Yes);
                run.extra(&assets.extra);
                run.narrate(|| {
                    let shell = if assets.shell {
                        "Shell included"
                    } else {
                        "Shell disabled by --no-shell"
                    };
                    let extra = match assets.extra.len() {
                        0 => String::new(),
                        n => format!(", {n} embedder tool(s)"),
                    };
                    format!("core tools enabled: {} tools, {shell}{extra}", assets.core.len())
                });
            }
            Family::McpGlobal => {
                // The resource meta-tools join this tier: one collision WARN for both.
                let tools = global.tools();
                let mut registration = run.mcp(Family::McpGlobal, tools);
                let resources = run.mcp(Family::McpResource, &assets.resources.tools);
                registration.registered.extend(resources.registered);
                registration.skipped.extend(resources.skipped);
                run.warn_skipped(&registration, Tier::Global);
                run.narrate(|| {
                    if tools.is_empty() {
                        "server-global MCP tools disabled: no MCP server is connected or none lists a tool"
                            .to_owned()
                    } else {
                        let servers = assets.global.servers().len();
                        format!(
                            "server-global MCP tools enabled: {} tool(s) from {servers} server(s)",
                            tools.len()
                        )
                    }
                });
                // The resource meta-tools' INFO was logged once when they were built.
                run.narrated(&assets.resources.note);
            }
            // Registered right after the server-global MCP tools, in their tier.
            Family::McpResource => {}
            Family::McpClient => {
                if let Some(tools) = &client {
                    let registration = run.mcp(Family::McpClient, tools);
                    run.warn_skipped(&registration, Tier::Client);
                    run.client_tool_names = registration.registered;
                }
                run.narrate(|| "client MCP tools: mounted per session only".to_owned());
            }
            Family::Delegation => match inputs.child {
                // A child's own tools (SubmitResult, a team's coordination tools)
                // take the delegation place of its catalog.
                Some(child) => run.child_extras(&child.extra_tools),
                None => {
                    let delegation = &assets.delegation;
                    // (tools, what they are, the flag that turns them off, what `enabled` adds)
                    let families = [
                        (
                            &delegation.subagent,
                            "Subagent, InspectSubagent and SubagentStatus",
                            "--enable-subagents",
                            format!(": {} named agent(s)", delegation.agents),
                        ),
                        (
                            &delegation.parallel,
                            "Parallel",
                            "--enable-parallel",
                            ": branches on private workspace copies".to_owned(),
                        ),
                        (
                            &delegation.team,
                            "Team and InspectMember",
                            "--enable-teams",
                            String::new(),
                        ),
                    ];
                    for (tools, what, flag, detail) in families {
                        run.builtin(Family::Delegation, tools, Confined::No);
                        run.narrate(|| {
                            if tools.is_empty() {
                                format!("{what} disabled: {flag}=false")
                            } else {
                                format!("{what} enabled{detail}")
                            }
                        });
                    }
                }
            },
            Family::Memory => {
                let memory = &assets.memory;
                // (tools, what they are, their store, where it is or why it is off)
                let families = [
                    (
                        &memory.project,
                        "memory tools",
                        "project memory",
                        &memory.project_place,
                    ),
                    (&memory.user, "user-model tools", "user model", &memory.user_place),
                ];
                for (tools, what, store, place) in families {
                    run.builtin(Family::Memory, tools, Confined::No);
                    run.narrate(|| match tools.len() {
                        0 => format!("{what} disabled: {place}"),
                        n => format!("{what} enabled: {n} tools, {store} {place}"),
                    });
                }
            }
            Family::Skill => {
                let skill = assets.skills.as_ref().map(|s| Arc::clone(&s.tool));
                run.builtin(Family::Skill, skill.as_slice(), Confined::No);
                run.narrate(|| match &assets.skills {
                    Some(skills) => format!("Skill tool enabled: {} skill(s)", skills.metas.len()),
                    None => "Skill tool disabled: no skill resolved".to_owned(),
                });
                // Children never draft skills.
                let draft = assets.skill_draft.clone().filter(|_| inputs.child.is_none());
                run.builtin(Family::Skill, draft.as_slice(), Confined::No);
                run.narrate(|| match &assets.skill_draft {
                    Some(_) => "SkillDraft tool enabled (--skills-draft-dir)".to_owned(),
                    None => "SkillDraft tool disabled: no --skills-draft-dir".to_owned(),
                });
            }
            // `ToolSearch` belongs to each engine; hosts list it, catalogs never hold it.
            Family::Meta => {}
        }
    }

    AssembledCatalog {
        catalog: Arc::new(run.catalog),
        skipped: run.skipped,
        client_tool_names: run.client_tool_names,
        families: Arc::new(run.families),
        conflicts: run.conflicts,
        diagnostics: run.diagnostics.into_entries(),
        mcp_generation: global.generation(),
        teardown: CatalogTeardown {
            client: inputs.client_mcp.cloned(),
        },
    }
}

/// Whether a family's tools act only inside the engine's workspace root (the core
/// tools), so a child working on a copy may keep its mutating ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Confined {
    Yes,
    No,
}

/// What a child profile lets into a child's catalog.
struct ChildFilter {
    access: ChildAccess,
    tools: Option<HashSet<String>>,
}

impl ChildFilter {
    fn new(spec: &ChildSpec) -> Self {
        Self {
            access: spec.access,
            tools: spec.tools.as_ref().map(|names| names.iter().cloned().collect()),
        }
    }

    fn admits(&self, tool: &dyn Tool, name: &str, confined: Confined) -> bool {
        let access = match self.access {
            ChildAccess::ReadOnly => tool.read_only(),
            ChildAccess::ReadWrite => true,
            ChildAccess::WorkspaceCopy => tool.read_only() || confined == Confined::Yes,
        };
        access && self.tools.as_ref().is_none_or(|names| names.contains(name))
    }
}

/// The state of one assembly.
struct Assembly {
    narrate: bool,
    /// A child's profile (a child catalog), if any.
    child: Option<ChildFilter>,
    catalog: Catalog,
    families: FamilyMap,
    skipped: Vec<SkippedTool>,
    conflicts: Vec<ToolConflict>,
    client_tool_names: Vec<String>,
    diagnostics: Diagnostics,
    /// The names an embedder's extra tools took: later built-in families meeting
    /// one are skipped (first wins), not a conflict.
    extra_names: HashSet<Arc<str>>,
}

impl Assembly {
    fn new(narrate: bool, capacity: usize) -> Self {
        Self {
            narrate,
            child: None,
            catalog: Catalog::new(),
            families: HashMap::with_capacity(capacity),
            skipped: Vec::new(),
            conflicts: Vec::new(),
            client_tool_names: Vec::new(),
            diagnostics: Diagnostics::new(),
            extra_names: HashSet::new(),
        }
    }

    /// One INFO line (logged and kept) when narrating.
    fn narrate(&mut self, line: impl FnOnce() -> String) {
        if self.narrate {
            self.diagnostics.info(line());
        }
    }

    /// Keeps an INFO line that was already logged, when narrating.
    fn narrated(&mut self, line: &str) {
        if self.narrate && !line.is_empty() {
            self.diagnostics.extend([Diagnostic {
                level: Level::Info,
                message: line.to_owned(),
            }]);
        }
    }

    fn skip_reason(&self, name: &str, fallback: String) -> String {
        match self.families.get(name) {
            Some(kept) => format!("the name is already registered by a tool of family {kept}, which is kept"),
            None => fallback,
        }
    }

    /// Whether a child profile (if any) lets `tool` in.
    fn admits(&self, tool: &dyn Tool, name: &str, confined: Confined) -> bool {
        self.child
            .as_ref()
            .is_none_or(|child| child.admits(tool, name, confined))
    }

    /// Registers a child's own tools in the delegation family, whatever its profile
    /// says; a name already taken is skipped like any built-in tool's.
    fn child_extras(&mut self, tools: &[Arc<dyn Tool>]) {
        let filter = self.child.take();
        self.builtin(Family::Delegation, tools, Confined::No);
        self.child = filter;
    }

    /// Registers built-in (non-MCP) tools: a name taken by an MCP tool is skipped
    /// (one WARN); a name taken by another built-in family is a conflict. A child
    /// profile leaves out what it does not admit.
    fn builtin(&mut self, family: Family, tools: &[Arc<dyn Tool>], confined: Confined) {
        let mut skipped = Vec::new();
        for tool in tools {
            let name: Arc<str> = Arc::from(tool.spec().name());
            if !self.admits(tool.as_ref(), &name, confined) {
                continue;
            }
            match self.catalog.register(Arc::clone(tool)) {
                Ok(()) => {
                    self.families.insert(name, family);
                }
                Err(CatalogError::Duplicate(_)) => {
                    let kept = self.families.get(&name).copied();
                    match kept {
                        Some(kept) if !kept.is_mcp() && !self.extra_names.contains(&name) => {
                            self.conflicts.push(ToolConflict {
                                name: name.to_string(),
                                kept,
                                rejected: family,
                            });
                        }
                        _ => skipped.push(SkippedTool {
                            reason: self.skip_reason(&name, "the name is already registered".to_owned()),
                            name: name.to_string(),
                            family,
                        }),
                    }
                }
                Err(error) => skipped.push(SkippedTool {
                    name: name.to_string(),
                    family,
                    reason: error.to_string(),
                }),
            }
        }
        if !skipped.is_empty() {
            let names = join_names(&skipped);
            tracing::warn!(tools = %names, family = family.as_str(), "{family} tool(s) skipped because their names are already registered: {names}");
            self.diagnostics.extend([Diagnostic {
                level: Level::Warn,
                message: format!(
                    "{family} tool(s) skipped because their names are already registered: {names}"
                ),
            }]);
            self.skipped.extend(skipped);
        }
    }

    /// Registers an embedder's extra tools in family `core`, first wins: a name already
    /// taken, reserved or invalid is skipped with one WARN for the lot.
    fn extra(&mut self, tools: &[Arc<dyn Tool>]) {
        let mut skipped = Vec::new();
        for tool in tools {
            let name: Arc<str> = Arc::from(tool.spec().name());
            if !self.admits(tool.as_ref(), &name, Confined::No) {
                continue;
            }
            if &*name == TOOL_SEARCH_NAME {
                skipped.push(SkippedTool {
                    name: name.to_string(),
                    family: Family::Core,
                    reason: "the name is reserved for the engine's ToolSearch".to_owned(),
                });
                continue;
            }
            match self.catalog.register(Arc::clone(tool)) {
                Ok(()) => {
                    self.families.insert(Arc::clone(&name), Family::Core);
                    self.extra_names.insert(name);
                }
                Err(error) => {
                    let fallback = error.to_string();
                    skipped.push(SkippedTool {
                        reason: self.skip_reason(&name, fallback),
                        name: name.to_string(),
                        family: Family::Core,
                    });
                }
            }
        }
        if !skipped.is_empty() {
            let names = join_names(&skipped);
            let message = format!(
                "embedder tool(s) skipped because their names are taken or reserved (the earlier tools are kept): {names}"
            );
            tracing::warn!(tools = %names, "{message}");
            self.diagnostics.extend([Diagnostic {
                level: Level::Warn,
                message,
            }]);
            self.skipped.extend(skipped);
        }
    }

    /// Registers MCP tools (first wins, skip and continue); the caller WARNs once per
    /// tier.
    fn mcp(&mut self, family: Family, tools: &[Arc<dyn Tool>]) -> Registration {
        let mut registration = Registration::default();
        for tool in tools {
            let name: Arc<str> = Arc::from(tool.spec().name());
            if !self.admits(tool.as_ref(), &name, Confined::No) {
                continue;
            }
            match self.catalog.register(Arc::clone(tool)) {
                Ok(()) => {
                    self.families.insert(Arc::clone(&name), family);
                    registration.registered.push(name.to_string());
                }
                Err(error) => {
                    let fallback = match error {
                        CatalogError::Duplicate(_) => "the name is already registered".to_owned(),
                        other => other.to_string(),
                    };
                    let skipped = SkippedTool {
                        reason: self.skip_reason(&name, fallback),
                        name: name.to_string(),
                        family,
                    };
                    registration.skipped.push(skipped.name.clone());
                    self.skipped.push(skipped);
                }
            }
        }
        registration
    }

    /// One WARN for a tier that skipped something, logged and kept as data.
    fn warn_skipped(&mut self, registration: &Registration, tier: Tier) {
        if registration.skipped.is_empty() {
            return;
        }
        let names = registration.skipped.join(", ");
        let message = match tier {
            Tier::Global => format!(
                "server-global MCP tool(s) skipped because their names are already registered (the earlier tools are kept): {names}"
            ),
            Tier::Client => format!(
                "client MCP tool(s) skipped: shadowed by server-global tools of the same name, which win: {names}"
            ),
        };
        tracing::warn!(tools = %names, "{message}");
        self.diagnostics.extend([Diagnostic {
            level: Level::Warn,
            message,
        }]);
    }
}

/// Which MCP mount a WARN speaks for.
#[derive(Clone, Copy)]
enum Tier {
    /// Server-global and resource tools: a server advertised a name already taken.
    Global,
    /// A session's client tools: shadowed by earlier (server-global) tools.
    Client,
}

/// What one MCP mount registered and skipped, by name, in order.
#[derive(Default)]
struct Registration {
    registered: Vec<String>,
    skipped: Vec<String>,
}

fn join_names(skipped: &[SkippedTool]) -> String {
    skipped
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use adapter_mcp::{McpManager, MountOptions};
    use async_trait::async_trait;
    use engine_core::{Environment, InMemoryStore, Tool, ToolError};
    use engine_ports::{CancellationToken, Level, ToolCall, ToolResult, ToolSpec};

    use super::*;
    use crate::assets::{CatalogAssets, ResourceAssets};
    use crate::global_mcp::GlobalMcp;
    use crate::store::AppStore;

    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new(self.0, "A test tool.")
        }
        fn read_only(&self) -> bool {
            true
        }
        async fn execute(
            &self,
            _: &CancellationToken,
            call: &ToolCall,
            _: &Environment,
        ) -> Result<ToolResult, ToolError> {
            Ok(ToolResult::text(call.id().clone(), self.0))
        }
    }

    fn assets(core: &[&'static str], skill: Option<&'static str>) -> CatalogAssets {
        CatalogAssets {
            core: core.iter().map(|n| Arc::new(Named(n)) as Arc<dyn Tool>).collect(),
            extra: Vec::new(),
            shell: false,
            global: GlobalMcp::new(McpManager::empty(), MountOptions::default()),
            resources: ResourceAssets {
                tools: Vec::new(),
                note: String::new(),
            },
            skills: None,
            skill_draft: skill.map(|n| Arc::new(Named(n)) as Arc<dyn Tool>),
            memory: crate::assets::MemoryAssets::default(),
            delegation: crate::assets::DelegationAssets::default(),
            store: AppStore::Memory(Arc::new(InMemoryStore::new())),
            mount: MountOptions::default(),
            disclosure: engine_core::Disclosure::Off,
        }
    }

    #[test]
    fn two_builtin_families_with_one_name_are_a_conflict_and_the_first_stays() {
        let assembled = assemble_catalog(
            &assets(&["Read", "SkillDraft"], Some("SkillDraft")),
            CatalogInputs::default(),
        );
        assert_eq!(
            assembled.conflicts,
            [ToolConflict {
                name: "SkillDraft".to_owned(),
                kept: Family::Core,
                rejected: Family::Skill,
            }]
        );
        assert_eq!(assembled.families.get("SkillDraft"), Some(&Family::Core));
        assert!(assembled.skipped.is_empty());
    }

    #[test]
    fn narration_is_one_info_per_registration_step_and_only_when_asked() {
        let quiet = assemble_catalog(&assets(&["Read"], None), CatalogInputs::default());
        assert!(quiet.diagnostics.is_empty(), "{:?}", quiet.diagnostics);
        let narrated = assemble_catalog(
            &assets(&["Read"], None),
            CatalogInputs {
                narrate: true,
                ..CatalogInputs::default()
            },
        );
        // One line per registration step, in order; the resource note was logged
        // when the assets were built (empty here).
        let heads: Vec<&str> = narrated
            .diagnostics
            .iter()
            .map(|d| d.message.split([':', ' ']).next().unwrap_or_default())
            .collect();
        assert_eq!(
            heads,
            [
                "core",
                "server-global",
                "client",
                "Subagent,",
                "Parallel",
                "Team",
                "memory",
                "user-model",
                "Skill",
                "SkillDraft"
            ]
        );
        assert!(narrated.diagnostics.iter().all(|d| d.level == Level::Info));
        assert_eq!(narrated.catalog.names().collect::<Vec<_>>(), ["Read"]);
    }

    fn named(names: &[&'static str]) -> Vec<Arc<dyn Tool>> {
        names
            .iter()
            .map(|n| Arc::new(Named(n)) as Arc<dyn Tool>)
            .collect()
    }

    #[test]
    fn extra_tools_follow_the_core_tools_in_family_core() {
        let mut assets = assets(&["Read", "Write"], None);
        assets.extra = named(&["Ping", "Pong"]);
        let assembled = assemble_catalog(&assets, CatalogInputs::default());
        assert_eq!(
            assembled.catalog.names().collect::<Vec<_>>(),
            ["Ping", "Pong", "Read", "Write"]
        );
        assert_eq!(assembled.families.get("Ping"), Some(&Family::Core));
        assert!(assembled.skipped.is_empty() && assembled.conflicts.is_empty());
        assert!(assembled.diagnostics.is_empty(), "{:?}", assembled.diagnostics);
    }

    #[test]
    fn an_extra_tool_with_a_taken_or_reserved_name_is_skipped_with_one_warn() {
        let mut assets = assets(&["Read"], None);
        assets.extra = named(&["Read", "Ping", "Ping", "ToolSearch"]);
        let assembled = assemble_catalog(&assets, CatalogInputs::default());
        assert_eq!(assembled.catalog.names().collect::<Vec<_>>(), ["Ping", "Read"]);
        let skipped: Vec<(&str, &str)> = assembled
            .skipped
            .iter()
            .map(|s| (s.name.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(
            skipped,
            [
                (
                    "Read",
                    "the name is already registered by a tool of family core, which is kept"
                ),
                (
                    "Ping",
                    "the name is already registered by a tool of family core, which is kept"
                ),
                ("ToolSearch", "the name is reserved for the engine's ToolSearch"),
            ]
        );
        assert!(assembled.conflicts.is_empty());
        let warns: Vec<&str> = assembled
            .diagnostics
            .iter()
            .filter(|d| d.level == Level::Warn)
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(
            warns,
            [
                "embedder tool(s) skipped because their names are taken or reserved (the earlier tools are kept): Read, Ping, ToolSearch"
            ]
        );
    }

    #[test]
    fn a_later_builtin_family_meeting_an_extra_tool_name_is_skipped_not_a_conflict() {
        let mut assets = assets(&["Read"], Some("SkillDraft"));
        assets.extra = named(&["SkillDraft"]);
        let assembled = assemble_catalog(&assets, CatalogInputs::default());
        assert!(assembled.conflicts.is_empty(), "{:?}", assembled.conflicts);
        assert_eq!(assembled.families.get("SkillDraft"), Some(&Family::Core));
        assert_eq!(assembled.skipped.len(), 1);
        assert_eq!(assembled.skipped[0].family, Family::Skill);
        assert_eq!(
            assembled
                .diagnostics
                .iter()
                .filter(|d| d.level == Level::Warn)
                .count(),
            1,
            "{:?}",
            assembled.diagnostics
        );
    }
}
