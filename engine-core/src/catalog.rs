//! [`Catalog`]: the registered tools, keyed by name, with per-mode projections.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::Arc;

use engine_ports::{PermissionMode, ToolSpec};

use crate::disclosure::TurnCache;
use crate::tool::Tool;
use crate::tool_search::SearchCache;

/// The set of registered tools.
///
/// The **key** of a tool is `spec().name` read once at registration; lookups,
/// ordering, projections and emitted spec names all use it. Every listing is in
/// ascending byte order of keys, kept at registration (never sorted per call);
/// `lookup` and `resolve` are O(1) on average.
///
/// The host fills a catalog through `&mut self`, then freezes it as `Arc<Catalog>`
/// shared by every engine and session; `&self` methods never mutate, so sessions
/// read it concurrently. `Clone` is shallow (tools are `Arc`s). A host builds every
/// catalog it serves through one registration path (in `mecated`, `app`'s
/// `assemble_catalog`, which builds a per-session catalog fresh rather than cloning
/// the shared one), and a newer catalog replaces an engine's at a turn boundary
/// ([`CatalogUpdates`]); a frozen catalog never changes.
///
/// ```
/// use std::sync::Arc;
/// use async_trait::async_trait;
/// use engine_core::{Catalog, CatalogError, Environment, Tool, ToolError};
/// use engine_ports::{CancellationToken, PermissionMode, ToolCall, ToolResult, ToolSpec};
///
/// struct PingTool;
///
/// #[async_trait]
/// impl Tool for PingTool {
///     fn spec(&self) -> ToolSpec {
///         ToolSpec::new(
///             "Ping",
///             "Returns a pong. Use this to verify the tool catalog is reachable. Takes no arguments.",
///         )
///         .with_schema(serde_json::json!({"type": "object", "properties": {}}))
///     }
///     fn read_only(&self) -> bool {
///         true
///     }
///     async fn execute(
///         &self,
///         _cancel: &CancellationToken,
///         call: &ToolCall,
///         _env: &Environment,
///     ) -> Result<ToolResult, ToolError> {
///         Ok(ToolResult::text(call.id().clone(), "pong"))
///     }
/// }
///
/// let mut catalog = Catalog::new();
/// catalog.must_register(Arc::new(PingTool));
/// assert!(catalog.lookup("Ping").is_some());
/// assert_eq!(catalog.available_names(PermissionMode::Plan), ["Ping"]);
/// assert_eq!(
///     catalog.register(Arc::new(PingTool)),
///     Err(CatalogError::Duplicate("Ping".to_owned()))
/// );
/// ```
#[derive(Clone, Default)]
pub struct Catalog {
    by_key: HashMap<Arc<str>, Arc<dyn Tool>>,
    ordered: BTreeMap<Arc<str>, Arc<dyn Tool>>,
    /// What `ToolSearch` derives from the tools (keyword index, deferred listing),
    /// built on first use and dropped by every registration.
    search: SearchCache,
    /// What turns advertise (per mode view and disclosure, nothing hydrated), built
    /// on first use and dropped by every registration.
    turns: TurnCache,
}

/// A registration the catalog refused; the catalog is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// A tool with this name is already registered.
    #[error("a tool named {0:?} is already registered")]
    Duplicate(String),
    /// The tool's spec has an empty name.
    #[error("a tool's spec has an empty name")]
    EmptyName,
}

/// How a name resolves in a mode.
#[derive(Clone, Copy)]
pub enum Resolved<'a> {
    /// Registered and available in the mode.
    Available(&'a Arc<dyn Tool>),
    /// Registered but not available in the mode.
    NotInMode(&'a Arc<dyn Tool>),
    /// Not registered.
    Unknown,
}

impl std::fmt::Debug for Resolved<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Available(_) => f.write_str("Available"),
            Self::NotInMode(_) => f.write_str("NotInMode"),
            Self::Unknown => f.write_str("Unknown"),
        }
    }
}

/// A set of tool names (the hydrated set of a session).
pub trait NameSet {
    /// Whether `name` is in the set.
    fn contains_name(&self, name: &str) -> bool;
}

impl<S: BuildHasher> NameSet for HashSet<String, S> {
    fn contains_name(&self, name: &str) -> bool {
        self.contains(name)
    }
}

impl NameSet for BTreeSet<String> {
    fn contains_name(&self, name: &str) -> bool {
        self.contains(name)
    }
}

/// Whether `tool` is projected in `mode`: plan mode keeps read-only tools (plan-only
/// ones included); every other mode keeps all tools except plan-only ones.
pub fn available_in(tool: &dyn Tool, mode: PermissionMode) -> bool {
    match mode {
        PermissionMode::Plan => tool.read_only(),
        PermissionMode::Default | PermissionMode::AcceptEdits => !tool.plan_only(),
    }
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool under its spec name.
    ///
    /// # Errors
    /// [`CatalogError::Duplicate`] when the name is taken, [`CatalogError::EmptyName`]
    /// for `""`; the catalog is unchanged either way.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), CatalogError> {
        let spec = tool.spec();
        if spec.name().is_empty() {
            return Err(CatalogError::EmptyName);
        }
        if self.by_key.contains_key(spec.name()) {
            return Err(CatalogError::Duplicate(spec.name().to_owned()));
        }
        let key: Arc<str> = Arc::from(spec.name());
        self.by_key.insert(Arc::clone(&key), Arc::clone(&tool));
        self.ordered.insert(key, tool);
        self.search = SearchCache::default();
        self.turns = TurnCache::default();
        Ok(())
    }

    /// Registers a tool that must not collide (a programming error otherwise).
    ///
    /// # Panics
    /// With the [`CatalogError`] message when registration fails.
    #[allow(clippy::panic)]
    pub fn must_register(&mut self, tool: Arc<dyn Tool>) {
        if let Err(error) = self.register(tool) {
            panic!("{error}");
        }
    }

    /// The tool registered under `name`, whatever the mode.
    pub fn lookup(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_key.get(name)
    }

    /// How `name` resolves in `mode`.
    pub fn resolve(&self, name: &str, mode: PermissionMode) -> Resolved<'_> {
        match self.by_key.get(name) {
            Some(tool) if available_in(tool.as_ref(), mode) => Resolved::Available(tool),
            Some(tool) => Resolved::NotInMode(tool),
            None => Resolved::Unknown,
        }
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Every tool, sorted by key.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &Arc<dyn Tool>> + '_ {
        self.ordered.values()
    }

    /// Every key, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.ordered.keys().map(|k| &**k)
    }

    /// `(key, tool)` pairs, sorted by key.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (&str, &Arc<dyn Tool>)> + '_ {
        self.ordered.iter().map(|(k, t)| (&**k, t))
    }

    /// The tools available in `mode`, sorted by key.
    pub fn available(&self, mode: PermissionMode) -> Vec<&Arc<dyn Tool>> {
        self.available_entries(mode).map(|(_, tool)| tool).collect()
    }

    /// The keys of the tools available in `mode`, sorted.
    pub fn available_names(&self, mode: PermissionMode) -> Vec<&str> {
        self.available_entries(mode).map(|(key, _)| &**key).collect()
    }

    fn available_entries(
        &self,
        mode: PermissionMode,
    ) -> impl Iterator<Item = (&Arc<str>, &Arc<dyn Tool>)> + '_ {
        self.ordered
            .iter()
            .filter(move |(_, tool)| available_in(tool.as_ref(), mode))
    }

    /// Full specs of the tools available in `mode` (named by key), sorted.
    pub fn specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.available_entries(mode)
            .map(|(key, tool)| tool.spec().with_name(Arc::clone(key)))
            .collect()
    }

    /// As [`Catalog::specs`], with the light spec of every Disclosable tool.
    pub fn advertised_specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.available_entries(mode)
            .map(|(key, tool)| advertised(key, tool.as_ref(), false))
            .collect()
    }

    /// As [`Catalog::advertised_specs`], but hydrated Disclosable tools keep their
    /// full spec.
    pub fn advertised_specs_for(&self, mode: PermissionMode, hydrated: &impl NameSet) -> Vec<ToolSpec> {
        self.available_entries(mode)
            .map(|(key, tool)| advertised(key, tool.as_ref(), hydrated.contains_name(key)))
            .collect()
    }

    /// Full specs of the tools available in `mode` that are not deferred: every tool
    /// that is not Disclosable, and the Disclosable ones in `hydrated`.
    pub fn undeferred_specs_for(&self, mode: PermissionMode, hydrated: &impl NameSet) -> Vec<ToolSpec> {
        self.available_entries(mode)
            .filter(|(key, tool)| hydrated.contains_name(key) || tool.advertised_spec().is_none())
            .map(|(key, tool)| tool.spec().with_name(Arc::clone(key)))
            .collect()
    }

    /// The bytes of the full specs (name, description, argument schema) of the
    /// Disclosable tools, computed once per catalog: what [`Disclosure::Auto`]
    /// weighs against the context window.
    ///
    /// [`Disclosure::Auto`]: crate::Disclosure::Auto
    pub fn disclosable_spec_bytes(&self) -> u64 {
        self.search.disclosable_bytes(self)
    }

    /// The catalog's `ToolSearch` cache (the caller builds what is missing).
    pub(crate) fn search_cache(&self) -> &SearchCache {
        &self.search
    }

    /// The catalog's cache of turn listings (the caller builds what is missing).
    pub(crate) fn turn_cache(&self) -> &TurnCache {
        &self.turns
    }
}

fn advertised(key: &Arc<str>, tool: &dyn Tool, hydrated: bool) -> ToolSpec {
    let spec = if hydrated {
        tool.spec()
    } else {
        tool.advertised_spec().unwrap_or_else(|| tool.spec())
    };
    spec.with_name(Arc::clone(key))
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Newer catalogs for an engine whose tools can change while it serves — an MCP server
/// announcing `notifications/tools/list_changed`. The engine asks at the start of every
/// run and at every turn boundary, and a run switches catalogs only there, so one turn's
/// advertised tools and its dispatch always agree. The implementation owns how a newer
/// catalog is made (the composition root re-assembles it through its one registration
/// path, so every engine sees the same refreshed snapshot).
#[async_trait::async_trait]
pub trait CatalogUpdates: Send + Sync {
    /// The newest catalog and its generation, when newer than `generation` (an
    /// engine's initial catalog is generation 0). May do I/O, such as re-listing a
    /// server's tools; must be cheap when nothing changed.
    async fn newer_than(&self, generation: u64) -> Option<(u64, Arc<Catalog>)>;
}
