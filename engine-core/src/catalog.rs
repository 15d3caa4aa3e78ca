//! [`Catalog`]: the registered tools, keyed by name, with per-mode projections.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

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
/// Registration also reads, once, what every listing needs of a tool (the
/// [`Tool`] contract makes them the same for the tool's life): its full spec and,
/// when Disclosable, its light spec, both named by the key, and the mode views it
/// is available in ([`available_in`]). Each mode view's listings are derived from
/// them on first use and kept until the next registration, so a listing makes no
/// call into a tool: [`Catalog::specs`] and [`Catalog::advertised_specs`] copy a
/// kept listing, and a hydrated set costs a search per hydrated name, not a
/// look-up per tool.
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
    by_key: HashMap<Arc<str>, Arc<Entry>>,
    ordered: BTreeMap<Arc<str>, Arc<Entry>>,
    /// Each mode view's listings (index [`view_of`]), built on first use and
    /// dropped by every registration.
    views: [OnceLock<Arc<ViewListing>>; 2],
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

    /// Calls `visit` with every name in the set, each once, in any order.
    fn each_name(&self, visit: &mut dyn FnMut(&str));
}

impl<S: BuildHasher> NameSet for HashSet<String, S> {
    fn contains_name(&self, name: &str) -> bool {
        self.contains(name)
    }

    fn each_name(&self, visit: &mut dyn FnMut(&str)) {
        self.iter().for_each(|name| visit(name));
    }
}

impl NameSet for BTreeSet<String> {
    fn contains_name(&self, name: &str) -> bool {
        self.contains(name)
    }

    fn each_name(&self, visit: &mut dyn FnMut(&str)) {
        self.iter().for_each(|name| visit(name));
    }
}

/// A registered tool with what the listings read of it, read once at registration.
struct Entry {
    tool: Arc<dyn Tool>,
    /// Its full spec, named by the key.
    full: ToolSpec,
    /// Its light spec, named by the key, when the tool is Disclosable.
    light: Option<ToolSpec>,
    /// The mode views it is available in: bit [`view_of`] of a mode.
    views: u8,
}

impl Entry {
    fn new(key: &Arc<str>, tool: Arc<dyn Tool>, spec: ToolSpec) -> Self {
        let light = tool
            .advertised_spec()
            .map(|light| light.with_name(Arc::clone(key)));
        let views = [PermissionMode::Default, PermissionMode::Plan]
            .into_iter()
            .filter(|&mode| available_in(tool.as_ref(), mode))
            .fold(0, |views, mode| views | view_bit(mode));
        Self {
            full: spec.with_name(Arc::clone(key)),
            light,
            views,
            tool,
        }
    }

    fn available_in(&self, mode: PermissionMode) -> bool {
        self.views & view_bit(mode) != 0
    }
}

/// The mode view of `mode`, which every per-mode cache is indexed by: `Default`
/// and `AcceptEdits` project the same tools ([`available_in`]: index 0), plan mode
/// its own (index 1).
pub(crate) fn view_of(mode: PermissionMode) -> usize {
    usize::from(mode == PermissionMode::Plan)
}

fn view_bit(mode: PermissionMode) -> u8 {
    1 << view_of(mode)
}

/// The listings of one mode view: its tools in key order, each list
/// index-aligned with the others.
struct ViewListing {
    /// Every tool's full spec.
    full: Box<[ToolSpec]>,
    /// Every tool's light spec when Disclosable, else its full spec.
    advertised: Box<[ToolSpec]>,
    /// Whether each tool is Disclosable.
    disclosable: Box<[bool]>,
    /// How many tools are not Disclosable.
    undeferred: usize,
}

impl ViewListing {
    fn new<'a>(entries: impl Iterator<Item = &'a Entry>) -> Self {
        let (mut full, mut advertised, mut disclosable) = (Vec::new(), Vec::new(), Vec::new());
        for entry in entries {
            full.push(entry.full.clone());
            advertised.push(entry.light.as_ref().unwrap_or(&entry.full).clone());
            disclosable.push(entry.light.is_some());
        }
        Self {
            undeferred: disclosable.iter().filter(|&&disclosable| !disclosable).count(),
            full: full.into(),
            advertised: advertised.into(),
            disclosable: disclosable.into(),
        }
    }

    /// Calls `found` with the index of every Disclosable tool of the view named in
    /// `hydrated` (a binary search per name: the specs are named by their keys,
    /// in key order).
    fn each_hydrated(&self, hydrated: &impl NameSet, mut found: impl FnMut(usize)) {
        hydrated.each_name(&mut |name| {
            if let Ok(at) = self.full.binary_search_by(|spec| spec.name().cmp(name))
                && self.disclosable[at]
            {
                found(at);
            }
        });
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
        let entry = Arc::new(Entry::new(&key, tool, spec));
        self.by_key.insert(Arc::clone(&key), Arc::clone(&entry));
        self.ordered.insert(key, entry);
        self.views = Default::default();
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
        self.by_key.get(name).map(|entry| &entry.tool)
    }

    /// How `name` resolves in `mode`.
    pub fn resolve(&self, name: &str, mode: PermissionMode) -> Resolved<'_> {
        match self.by_key.get(name) {
            Some(entry) if entry.available_in(mode) => Resolved::Available(&entry.tool),
            Some(entry) => Resolved::NotInMode(&entry.tool),
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
        self.ordered.values().map(|entry| &entry.tool)
    }

    /// Every key, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.ordered.keys().map(|k| &**k)
    }

    /// `(key, tool)` pairs, sorted by key.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (&str, &Arc<dyn Tool>)> + '_ {
        self.ordered.iter().map(|(k, entry)| (&**k, &entry.tool))
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
            .filter(move |(_, entry)| entry.available_in(mode))
            .map(|(key, entry)| (key, &entry.tool))
    }

    /// The listings of `mode`'s view, derived from the entries on first use.
    fn view(&self, mode: PermissionMode) -> &ViewListing {
        let view = view_of(mode);
        self.views[view].get_or_init(|| {
            Arc::new(ViewListing::new(
                self.ordered
                    .values()
                    .map(|entry| &**entry)
                    .filter(|entry| entry.available_in(mode)),
            ))
        })
    }

    /// Full specs of the tools available in `mode` (named by key), sorted.
    pub fn specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.view(mode).full.to_vec()
    }

    /// As [`Catalog::specs`], with the light spec of every Disclosable tool.
    pub fn advertised_specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.view(mode).advertised.to_vec()
    }

    /// As [`Catalog::advertised_specs`], but hydrated Disclosable tools keep their
    /// full spec.
    pub fn advertised_specs_for(&self, mode: PermissionMode, hydrated: &impl NameSet) -> Vec<ToolSpec> {
        let view = self.view(mode);
        let mut specs = view.advertised.to_vec();
        view.each_hydrated(hydrated, |at| specs[at] = view.full[at].clone());
        specs
    }

    /// Full specs of the tools available in `mode` that are not deferred: every tool
    /// that is not Disclosable, and the Disclosable ones in `hydrated`.
    pub fn undeferred_specs_for(&self, mode: PermissionMode, hydrated: &impl NameSet) -> Vec<ToolSpec> {
        let view = self.view(mode);
        let mut hydrated_at = Vec::new();
        view.each_hydrated(hydrated, |at| hydrated_at.push(at));
        hydrated_at.sort_unstable();
        hydrated_at.dedup();
        let mut specs = Vec::with_capacity(view.undeferred + hydrated_at.len());
        let mut hydrated_at = hydrated_at.into_iter().peekable();
        for (at, (spec, &disclosable)) in view.full.iter().zip(&view.disclosable).enumerate() {
            if !disclosable || hydrated_at.next_if_eq(&at).is_some() {
                specs.push(spec.clone());
            }
        }
        specs
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
