//! Progressive disclosure (D3): which specs a turn advertises.

use std::collections::BTreeSet;

use engine_ports::{PermissionMode, ToolSpec};

use crate::catalog::Catalog;
use crate::tool_search::tool_search_spec;

/// The tools advertised for one turn, sorted by name.
///
/// Off: the catalog's full specs for `mode`. On: the advertised specs with the
/// session's `hydrated` tools in full, plus `ToolSearch`'s full spec, merged in name
/// order.
pub fn turn_specs(
    catalog: &Catalog,
    mode: PermissionMode,
    hydrated: &BTreeSet<String>,
    progressive: bool,
) -> Vec<ToolSpec> {
    if !progressive {
        return catalog.specs(mode);
    }
    let mut specs = catalog.advertised_specs_for(mode, hydrated);
    let search = tool_search_spec();
    let at = specs.partition_point(|s| s.name() < search.name());
    specs.insert(at, search);
    specs
}
