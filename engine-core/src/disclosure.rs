//! Progressive disclosure (D3): which specs a turn advertises, and hydration — how
//! a `ToolSearch` result makes Disclosable tools advertised in full for the rest of
//! its session. This module owns the mechanism end to end; the dispatcher, the turn
//! loop and the catalog call into it.
//!
//! 1. **Disclosable tools.** A tool whose
//!    [`Tool::advertised_spec`](crate::Tool::advertised_spec) is `Some` (in
//!    `mecated`, the MCP tools when progressive tools are on). Under [`Disclosure`]
//!    `Light` or `Deferred` it is advertised light or left out until hydrated; it is
//!    callable by name in every mode whether or not it was hydrated.
//! 2. **The search.** With progressive tools the engine owns `ToolSearch` (never
//!    registered: `Engine::new` refuses a catalog holding the name). The dispatcher
//!    resolves the name, per turn, to a [`ToolSearch`](crate::ToolSearch) bound to
//!    that turn's catalog and mode, so plan mode never returns a tool it cannot call.
//! 3. **Which names hydrate.** The *final* result of each `ToolSearch` call of the
//!    turn — the one the model sees, after the PostToolUse hook, id forcing and the
//!    output cap — unless it is an error: the names of its items
//!    ([`returned_names`]) that are Disclosable tools of the turn's catalog. A hook
//!    that rewrites the result so decides what hydrates; a result the cap cut does
//!    not parse and hydrates nothing. [`TurnHydration`] collects them in call order;
//!    the dispatcher reports them sorted, each once, as
//!    [`TurnOutcome::hydrated`](crate::TurnOutcome::hydrated).
//! 4. **Per session.** The turn loop adds them to the session's hydrated set
//!    ([`SessionSnapshot::hydrated`], saved with the session after every dispatch)
//!    through [`hydrate`]. The set only grows: it outlives runs and restarts, is
//!    never shared with another session on the same catalog, and a name whose tool a
//!    catalog switch removed stays harmlessly (specs come from the catalog).
//! 5. **The next turn.** Every turn advertises [`turn_specs`] of the session's
//!    catalog, mode and hydrated set (so does `session.init`'s tool list): a hydrated
//!    Disclosable tool in full ([`Catalog::advertised_specs_for`],
//!    [`Catalog::undeferred_specs_for`]), from the turn after the search on — the
//!    searching turn's request was already sent.
//!
//! 6. **Auto.** [`Disclosure::Auto`] (the default of `mecated`) is `Off` while the
//!    Disclosable tools' full specs are small and `Deferred` once they pass
//!    [`AUTO_SHARE_PERCENT`] of the model's context window
//!    ([`Disclosure::resolve`], per turn, against that turn's catalog: a server that
//!    adds tools mid-session can switch it on; the size is computed once per catalog).
//!
//! Hosts that list tools outside a session (`app`'s tool report) read the same rules:
//! [`tool_search_spec_for`] is the `ToolSearch` spec a turn advertises, and a tool's
//! `advertised_spec` says whether it is Disclosable.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use engine_ports::{PermissionMode, SessionSnapshot, ToolResult, ToolSpec};

use crate::catalog::{Catalog, view_of};
use crate::tool_search::{deferred_tool_search_spec, returned_names, tool_search_spec};

/// How Disclosable tools are advertised (`--progressive-tools[=auto|light|deferred|off]`).
///
/// | mode | unhydrated Disclosable tool | `ToolSearch` |
/// |---|---|---|
/// | `Auto` | as `Off` while their specs are small, as `Deferred` past [`AUTO_SHARE_PERCENT`] of the window | as resolved |
/// | `Off` | full spec | absent |
/// | `Light` | its light spec (name, first description line) | listed |
/// | `Deferred` | absent; its name is in `ToolSearch`'s description | listed |
///
/// In every mode a hydrated tool is advertised in full and a Disclosable tool is
/// callable by name whether or not it was hydrated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Disclosure {
    /// Every tool in full, no `ToolSearch`.
    #[default]
    Off,
    /// Unhydrated Disclosable tools as light specs, plus `ToolSearch`.
    Light,
    /// Unhydrated Disclosable tools left out; `ToolSearch` names them.
    Deferred,
    /// `Off` while the Disclosable tools' full specs take at most
    /// [`AUTO_SHARE_PERCENT`] of the context window, else `Deferred`
    /// ([`Disclosure::resolve`]).
    Auto,
}

/// Under [`Disclosure::Auto`], the share of the context window (in %) the
/// Disclosable tools' full specs may take before they are deferred (Claude Code
/// defers MCP tools at the same share).
pub const AUTO_SHARE_PERCENT: u64 = 10;

impl Disclosure {
    /// Whether the engine owns a `ToolSearch` (any mode but `Off`; under `Auto` it
    /// is advertised only while the tools are deferred).
    pub fn is_progressive(self) -> bool {
        self != Self::Off
    }

    /// The mode a turn over `catalog` uses: `Auto` becomes `Deferred` when the full
    /// specs of the catalog's Disclosable tools take more than [`AUTO_SHARE_PERCENT`]
    /// of `context_window` tokens (estimated at the engine's bytes per token), else
    /// `Off`; the other modes are themselves.
    pub fn resolve(self, catalog: &Catalog, context_window: u64) -> Self {
        if self != Self::Auto {
            return self;
        }
        if auto_defers(catalog.disclosable_spec_bytes(), context_window) {
            Self::Deferred
        } else {
            Self::Off
        }
    }
}

/// Whether `bytes` of Disclosable specs pass the auto share of `context_window`.
pub fn auto_defers(bytes: u64, context_window: u64) -> bool {
    crate::context::tokens_of(bytes).saturating_mul(100) > context_window.saturating_mul(AUTO_SHARE_PERCENT)
}

/// The tools advertised for one turn, sorted by name.
///
/// `disclosure` is a resolved mode ([`Disclosure::resolve`]); an unresolved `Auto`
/// is taken as `Off`. `Off`: the catalog's full specs for `mode`. `Light`: the advertised specs with the
/// session's `hydrated` tools in full, plus `ToolSearch`'s spec. `Deferred`: the full
/// specs of every tool that is not Disclosable or is hydrated, plus `ToolSearch`'s spec
/// naming the Disclosable tools of `mode` (a pure function of catalog and mode, so it
/// stays byte-identical across turns).
pub fn turn_specs(
    catalog: &Catalog,
    mode: PermissionMode,
    hydrated: &BTreeSet<String>,
    disclosure: Disclosure,
) -> Vec<ToolSpec> {
    turn_tools(catalog, mode, hydrated, disclosure).specs.clone()
}

/// What one turn advertises ([`turn_specs`]) and the bytes its specs add to every
/// request ([`spec_bytes`](crate::context::spec_bytes) summed).
#[derive(Debug)]
pub(crate) struct TurnTools {
    /// The specs, sorted by name.
    pub(crate) specs: Vec<ToolSpec>,
    /// Their bytes, as the request estimate counts them.
    pub(crate) bytes: u64,
}

impl TurnTools {
    pub(crate) fn new(specs: Vec<ToolSpec>) -> Self {
        let bytes = specs.iter().map(crate::context::spec_bytes).sum();
        Self { specs, bytes }
    }
}

/// A catalog's turn listings with nothing hydrated — every session's until a
/// `ToolSearch` hydrates a tool — per mode view (`[0]` the default modes, `[1]` plan
/// mode) and resolved disclosure (`Off`, `Light`, `Deferred`), each built on first use.
/// The catalog drops it at every registration; a frozen catalog's listings never
/// change, so turns share them instead of listing and measuring the tools each time.
#[derive(Clone, Default)]
pub(crate) struct TurnCache {
    slots: [[OnceLock<Arc<TurnTools>>; 3]; 2],
}

/// [`turn_specs`] with the specs' bytes, shared: from the catalog's [`TurnCache`]
/// when nothing is hydrated (or nothing can be: `Off`), else built for this turn.
pub(crate) fn turn_tools(
    catalog: &Catalog,
    mode: PermissionMode,
    hydrated: &BTreeSet<String>,
    disclosure: Disclosure,
) -> Arc<TurnTools> {
    let kind = match disclosure {
        Disclosure::Off | Disclosure::Auto => 0,
        Disclosure::Light => 1,
        Disclosure::Deferred => 2,
    };
    if kind != 0 && !hydrated.is_empty() {
        return Arc::new(TurnTools::new(list_turn_specs(
            catalog, mode, hydrated, disclosure,
        )));
    }
    let slot = &catalog.turn_cache().slots[view_of(mode)][kind];
    Arc::clone(slot.get_or_init(|| {
        Arc::new(TurnTools::new(list_turn_specs(
            catalog, mode, hydrated, disclosure,
        )))
    }))
}

/// [`turn_specs`], listed from the catalog.
fn list_turn_specs(
    catalog: &Catalog,
    mode: PermissionMode,
    hydrated: &BTreeSet<String>,
    disclosure: Disclosure,
) -> Vec<ToolSpec> {
    let (mut specs, search) = match disclosure {
        Disclosure::Off | Disclosure::Auto => return catalog.specs(mode),
        Disclosure::Light => (catalog.advertised_specs_for(mode, hydrated), tool_search_spec()),
        Disclosure::Deferred => (
            catalog.undeferred_specs_for(mode, hydrated),
            deferred_tool_search_spec(catalog, mode),
        ),
    };
    let at = specs.partition_point(|s| s.name() < search.name());
    specs.insert(at, search);
    specs
}

/// The `ToolSearch` spec a turn advertises under the resolved `disclosure` (`None`
/// when off; an unresolved `Auto` counts as off), for hosts that list it.
pub fn tool_search_spec_for(
    catalog: &Catalog,
    mode: PermissionMode,
    disclosure: Disclosure,
) -> Option<ToolSpec> {
    match disclosure {
        Disclosure::Off | Disclosure::Auto => None,
        Disclosure::Light => Some(tool_search_spec()),
        Disclosure::Deferred => Some(deferred_tool_search_spec(catalog, mode)),
    }
}

/// What one turn's `ToolSearch` results hydrate (step 3 of the module doc).
#[derive(Debug, Default)]
pub(crate) struct TurnHydration {
    names: Vec<String>,
}

impl TurnHydration {
    /// Takes the final result of one `ToolSearch` call: the Disclosable tools of
    /// `catalog` whose full spec it returned (none when it is an error).
    pub(crate) fn add_search_result(&mut self, catalog: &Catalog, result: &ToolResult) {
        self.names
            .extend(returned_names(result).into_iter().filter(|name| {
                catalog
                    .lookup(name)
                    .is_some_and(|tool| tool.advertised_spec().is_some())
            }));
    }

    /// The names collected, sorted, each once.
    pub(crate) fn into_names(mut self) -> Vec<String> {
        self.names.sort();
        self.names.dedup();
        self.names
    }
}

/// Adds a turn's hydrated names to the session (step 4 of the module doc): from the
/// next turn on, [`turn_specs`] advertises them in full.
pub(crate) fn hydrate(session: &mut SessionSnapshot, names: Vec<String>) {
    session.hydrated.extend(names);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use engine_ports::{CancellationToken, ToolCall, ToolResult, ToolSpec};

    use std::collections::BTreeSet;

    use engine_ports::PermissionMode;

    use super::{Disclosure, TurnHydration, turn_tools};
    use crate::catalog::Catalog;
    use crate::environment::Environment;
    use crate::tool::{Tool, ToolError};

    struct Named(&'static str, bool);

    #[async_trait]
    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new(self.0, "full description")
        }
        fn read_only(&self) -> bool {
            true
        }
        fn advertised_spec(&self) -> Option<ToolSpec> {
            self.1.then(|| ToolSpec::new(self.0, "light"))
        }
        async fn execute(
            &self,
            _: &CancellationToken,
            call: &ToolCall,
            _: &Environment,
        ) -> Result<ToolResult, ToolError> {
            Ok(ToolResult::text(call.id().clone(), ""))
        }
    }

    #[test]
    fn search_results_hydrate_the_disclosable_tools_they_returned_sorted_once() {
        let mut catalog = Catalog::new();
        for tool in [Named("Mcp", true), Named("Alpha", true), Named("Read", false)] {
            catalog.must_register(Arc::new(tool));
        }
        let found = |text: &str| ToolResult::text("c1", text);
        let mut hydration = TurnHydration::default();
        hydration.add_search_result(
            &catalog,
            &found(r#"[{"name":"Mcp"},{"name":"Read"},{"name":"Gone"}]"#),
        );
        hydration.add_search_result(&catalog, &ToolResult::error("c2", r#"[{"name":"Alpha"}]"#));
        hydration.add_search_result(&catalog, &found(r#"[{"name":"Mcp"}]"#));
        assert_eq!(
            hydration.into_names(),
            ["Mcp"],
            "errors hydrate nothing, names hydrate once"
        );

        let mut hydration = TurnHydration::default();
        hydration.add_search_result(&catalog, &found(r#"[{"name":"Mcp"},{"name":"Alpha"}]"#));
        assert_eq!(hydration.into_names(), ["Alpha", "Mcp"]);
    }

    #[test]
    fn a_turn_listing_weighs_the_specs_it_lists_before_and_after_a_registration() {
        let mut catalog = Catalog::new();
        catalog.must_register(Arc::new(Named("Read", false)));
        catalog.must_register(Arc::new(Named("Mcp", true)));
        let none = BTreeSet::new();
        let weighed = |catalog: &Catalog, disclosure| {
            let tools = turn_tools(catalog, PermissionMode::Default, &none, disclosure);
            let bytes: u64 = tools.specs.iter().map(crate::context::spec_bytes).sum();
            (tools.bytes, bytes)
        };
        for disclosure in [Disclosure::Off, Disclosure::Light, Disclosure::Deferred] {
            let (kept, counted) = weighed(&catalog, disclosure);
            assert_eq!(kept, counted, "{disclosure:?}");
        }
        let off = weighed(&catalog, Disclosure::Off).0;
        catalog.must_register(Arc::new(Named("Grep", false)));
        let (kept, counted) = weighed(&catalog, Disclosure::Off);
        assert_eq!(kept, counted);
        assert!(kept > off, "the registered tool weighs in");
    }
}
