//! [`CatalogAssets`]: what every catalog of one process is assembled from — built
//! once by [`build`](crate::build), shared by the shared catalog and every
//! per-session catalog.

use std::sync::Arc;

use adapter_mcp::MountOptions;
use engine_core::{Disclosure, Tool};
use engine_ports::{MemoryStore, SkillMeta, SkillSource};

use crate::global_mcp::GlobalMcp;
use crate::memory::{MemoryConfig, MemorySetting, MemoryStores, OpenedMemory};
use crate::store::AppStore;
use engine_core::host::MemoryScope;

/// The handles and prebuilt tools catalog assembly reads. Nothing here does I/O when
/// read: MCP tool lists come from the pinned snapshot of [`GlobalMcp`], skills from
/// the snapshot the `Skill` tool was built over, and every tool is an `Arc` shared by
/// all catalogs (no deep clones).
pub struct CatalogAssets {
    pub(crate) core: Vec<Arc<dyn Tool>>,
    pub(crate) extra: Vec<Arc<dyn Tool>>,
    pub(crate) shell: bool,
    pub(crate) global: GlobalMcp,
    pub(crate) resources: ResourceAssets,
    pub(crate) skills: Option<SkillAssets>,
    pub(crate) skill_draft: Option<Arc<dyn Tool>>,
    pub(crate) memory: MemoryAssets,
    pub(crate) delegation: DelegationAssets,
    pub(crate) store: AppStore,
    pub(crate) mount: MountOptions,
    pub(crate) disclosure: Disclosure,
}

/// The resource meta-tools (both or none) and the INFO that said why, logged once
/// when they were built.
pub(crate) struct ResourceAssets {
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) note: String,
}

/// The memory and user-model tools (empty when a family is off) and where each store
/// lives (or why it is off), for the narration.
#[derive(Default)]
pub(crate) struct MemoryAssets {
    pub(crate) project: Vec<Arc<dyn Tool>>,
    pub(crate) project_place: String,
    pub(crate) user: Vec<Arc<dyn Tool>>,
    pub(crate) user_place: String,
    /// The scopes that are on, for the faces that list and prune facts.
    pub(crate) scopes: Vec<MemoryScope>,
}

impl MemoryAssets {
    pub(crate) fn new(config: &MemoryConfig, stores: &MemoryStores) -> Self {
        let (project, project_place) = memory_family(
            stores.project.as_ref(),
            &config.project,
            "--no-memory",
            engine_core::memory_tools,
        );
        let (user, user_place) = memory_family(
            stores.user.as_ref(),
            &config.user,
            "--no-user-model",
            engine_core::user_model_tools,
        );
        let scopes = [
            ("project", stores.project.as_ref()),
            ("user", stores.user.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, opened)| {
            opened.map(|memory| MemoryScope {
                name,
                place: memory.place.clone(),
                store: Arc::clone(&memory.store),
            })
        })
        .collect();
        Self {
            project,
            project_place,
            user,
            user_place,
            scopes,
        }
    }
}

/// One memory family: its tools over the opened store and where the store lives; or
/// no tools and why it is off (the `flag` that turned it off, or the warning).
fn memory_family<F>(
    opened: Option<&OpenedMemory>,
    setting: &MemorySetting,
    flag: &str,
    tools: F,
) -> (Vec<Arc<dyn Tool>>, String)
where
    F: FnOnce(Arc<dyn MemoryStore>) -> Vec<Arc<dyn Tool>>,
{
    match (opened, setting) {
        (Some(memory), _) => (tools(Arc::clone(&memory.store)), memory.place.clone()),
        (None, MemorySetting::Off) => (Vec::new(), flag.to_owned()),
        (None, _) => (Vec::new(), "no usable directory (see the warning)".to_owned()),
    }
}

/// The delegation families' tools (they hold no state: each call finds its run's
/// child engines in its environment).
#[derive(Default)]
pub(crate) struct DelegationAssets {
    /// `Subagent`, `InspectSubagent`, `SubagentStatus`.
    pub(crate) subagent: Vec<Arc<dyn Tool>>,
    /// `Parallel`.
    pub(crate) parallel: Vec<Arc<dyn Tool>>,
    /// `Team`, `InspectMember`.
    pub(crate) team: Vec<Arc<dyn Tool>>,
    /// How many named agents `Subagent` lists.
    pub(crate) agents: usize,
}

/// The resolved skills and the `Skill` tool built over them (its description is
/// computed once, here).
pub(crate) struct SkillAssets {
    pub(crate) source: Arc<dyn SkillSource>,
    pub(crate) metas: Vec<SkillMeta>,
    pub(crate) tool: Arc<dyn Tool>,
}

impl CatalogAssets {
    /// The server-global MCP servers (tools, resources, prompts; no `close`).
    pub fn global_mcp(&self) -> &GlobalMcp {
        &self.global
    }

    /// The store every engine writes to.
    pub fn store(&self) -> &AppStore {
        &self.store
    }

    /// Whether progressive tools are on (MCP tools are then Disclosable).
    pub fn progressive_tools(&self) -> bool {
        self.mount.progressive
    }

    /// How disclosable tools are advertised (`--progressive-tools[=light|deferred]`).
    pub fn disclosure(&self) -> Disclosure {
        self.disclosure
    }

    /// Whether the core tools include `Shell`.
    pub fn shell(&self) -> bool {
        self.shell
    }

    /// The skill source and its metas, when at least one skill resolved.
    pub fn skills(&self) -> Option<(&Arc<dyn SkillSource>, &[SkillMeta])> {
        self.skills.as_ref().map(|s| (&s.source, s.metas.as_slice()))
    }

    /// How MCP tools are mounted (client tools use the same options).
    pub fn mount_options(&self) -> MountOptions {
        self.mount
    }
}

impl std::fmt::Debug for CatalogAssets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogAssets")
            .field("core", &self.core.len())
            .field("extra", &self.extra.len())
            .field("shell", &self.shell)
            .field("global", &self.global)
            .field("resources", &self.resources.tools.len())
            .field("skills", &self.skills.as_ref().map(|s| s.metas.len()))
            .field("skill_draft", &self.skill_draft.is_some())
            .field("memory", &self.memory.project.len())
            .field("user_model", &self.memory.user.len())
            .field("delegation", &self.delegation.subagent.len())
            .field("disclosure", &self.disclosure)
            .finish()
    }
}
