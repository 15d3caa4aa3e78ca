//! Progressive disclosure (D3): which specs a turn advertises.

use std::collections::BTreeSet;

use engine_ports::{PermissionMode, ToolSpec};

use crate::catalog::Catalog;
use crate::tool_search::{deferred_tool_search_spec, tool_search_spec};

/// How Disclosable tools are advertised (`--progressive-tools[=light|deferred]`).
///
/// | mode | unhydrated Disclosable tool | `ToolSearch` |
/// |---|---|---|
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
}

impl Disclosure {
    /// Whether the engine owns a `ToolSearch` (any mode but `Off`).
    pub fn is_progressive(self) -> bool {
        self != Self::Off
    }
}

/// The tools advertised for one turn, sorted by name.
///
/// `Off`: the catalog's full specs for `mode`. `Light`: the advertised specs with the
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
    let (mut specs, search) = match disclosure {
        Disclosure::Off => return catalog.specs(mode),
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

/// The `ToolSearch` spec a turn advertises under `disclosure` (`None` when off), for
/// hosts that list it.
pub fn tool_search_spec_for(
    catalog: &Catalog,
    mode: PermissionMode,
    disclosure: Disclosure,
) -> Option<ToolSpec> {
    match disclosure {
        Disclosure::Off => None,
        Disclosure::Light => Some(tool_search_spec()),
        Disclosure::Deferred => Some(deferred_tool_search_spec(catalog, mode)),
    }
}
