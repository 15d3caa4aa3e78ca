//! Catalog scenarios: registration, ordering, mode projections, keys, disclosure
//! of specs, concurrent reads.

use std::collections::HashSet;
use std::sync::Arc;

use engine_core::{Catalog, CatalogError, Resolved, Tool};
use engine_ports::PermissionMode;

use crate::support::{FakeTool, Probe};

fn names(specs: &[engine_ports::ToolSpec]) -> Vec<String> {
    specs.iter().map(|s| s.name().to_owned()).collect()
}

#[test]
fn lookup_duplicates_and_empty_names() {
    let probe = Probe::new();
    let mut catalog = Catalog::new();
    catalog.must_register(FakeTool::new("Read", true, &probe).arc());
    assert!(catalog.lookup("Read").is_some());
    assert!(catalog.lookup("Nope").is_none());

    let again = catalog.register(FakeTool::new("Read", true, &probe).arc());
    assert_eq!(again, Err(CatalogError::Duplicate("Read".to_owned())));
    assert_eq!(catalog.len(), 1, "the catalog is unchanged");

    assert_eq!(
        catalog.register(FakeTool::new("", true, &probe).arc()),
        Err(CatalogError::EmptyName)
    );
    assert_eq!(catalog.len(), 1);
}

#[test]
fn must_register_panics_with_the_duplicate_message() {
    let probe = Probe::new();
    let mut catalog = Catalog::new();
    catalog.must_register(FakeTool::new("Read", true, &probe).arc());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        catalog.must_register(FakeTool::new("Read", true, &probe).arc());
    }));
    let payload = outcome.expect_err("a duplicate must panic");
    let message = payload.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("\"Read\"") && message.contains("already registered"),
        "{message}"
    );
}

#[test]
fn listings_are_sorted_and_plan_mode_keeps_read_only_tools() {
    let probe = Probe::new();
    let mut catalog = Catalog::new();
    for (name, read_only) in [("Write", false), ("Edit", false), ("Read", true), ("Grep", true)] {
        catalog.must_register(FakeTool::new(name, read_only, &probe).arc());
    }
    assert_eq!(
        catalog.names().collect::<Vec<_>>(),
        ["Edit", "Grep", "Read", "Write"]
    );
    assert_eq!(catalog.available_names(PermissionMode::Plan), ["Grep", "Read"]);
    for mode in [PermissionMode::Default, PermissionMode::AcceptEdits] {
        assert_eq!(catalog.available_names(mode), ["Edit", "Grep", "Read", "Write"]);
    }

    let mut small = Catalog::new();
    small.must_register(FakeTool::new("Read", true, &probe).arc());
    small.must_register(FakeTool::new("Edit", false, &probe).arc());
    assert_eq!(names(&small.specs(PermissionMode::Plan)), ["Read"]);
}

#[test]
fn plan_only_tools_appear_only_in_plan_mode_and_never_when_mutating() {
    let probe = Probe::new();
    let mut catalog = Catalog::new();
    catalog.must_register(FakeTool::new("Read", true, &probe).arc());
    catalog.must_register(FakeTool::new("Edit", false, &probe).arc());
    catalog.must_register(FakeTool::new("PresentPlan", true, &probe).plan_only().arc());
    catalog.must_register(FakeTool::new("Draft", false, &probe).plan_only().arc());

    for mode in [PermissionMode::Default, PermissionMode::AcceptEdits] {
        assert_eq!(catalog.available_names(mode), ["Edit", "Read"]);
        assert_eq!(names(&catalog.specs(mode)), ["Edit", "Read"]);
        assert_eq!(names(&catalog.advertised_specs(mode)), ["Edit", "Read"]);
    }
    assert_eq!(
        catalog.available_names(PermissionMode::Plan),
        ["PresentPlan", "Read"]
    );
    for mode in PermissionMode::ALL {
        assert!(
            !catalog.available_names(mode).contains(&"Draft"),
            "Draft in {mode}"
        );
    }
    assert!(matches!(
        catalog.resolve("Draft", PermissionMode::Default),
        Resolved::NotInMode(_)
    ));
    assert!(matches!(
        catalog.resolve("Draft", PermissionMode::Plan),
        Resolved::NotInMode(_)
    ));
    assert!(matches!(
        catalog.resolve("PresentPlan", PermissionMode::Plan),
        Resolved::Available(_)
    ));
    assert!(matches!(
        catalog.resolve("Nope", PermissionMode::Plan),
        Resolved::Unknown
    ));
}

#[test]
fn the_key_and_the_specs_are_read_once_at_registration() {
    let probe = Probe::new();
    let drifting = FakeTool::new("Stable", true, &probe).arc();
    let mutating = FakeTool::new("Mutator", false, &probe).arc();
    let mut catalog = Catalog::new();
    catalog.must_register(drifting.clone());
    catalog.must_register(mutating.clone());
    assert_eq!((drifting.spec_calls(), mutating.spec_calls()), (1, 1));

    drifting.report(Some("Drifted"), Some("a new description"));
    assert!(catalog.lookup("Stable").is_some());
    assert!(catalog.lookup("Drifted").is_none());
    assert_eq!(catalog.names().collect::<Vec<_>>(), ["Mutator", "Stable"]);
    let specs = catalog.specs(PermissionMode::Default);
    let stable = specs
        .iter()
        .find(|s| s.name() == "Stable")
        .expect("listed under its key");
    assert_eq!(
        stable.description(),
        "the Stable tool",
        "the spec read at registration"
    );

    let hydrated: HashSet<String> = ["Stable".to_owned()].into();
    for mode in PermissionMode::ALL {
        let _ = catalog.available(mode);
        let _ = catalog.specs(mode);
        let _ = catalog.advertised_specs(mode);
        let _ = catalog.advertised_specs_for(mode, &hydrated);
        let _ = catalog.undeferred_specs_for(mode, &hydrated);
    }
    assert_eq!(
        (drifting.spec_calls(), mutating.spec_calls()),
        (1, 1),
        "no listing reads a spec again"
    );
}

/// What each listing of `mode` must hold, read from the tools themselves: every
/// tool available in the mode, in key order, named by its key; Disclosable ones in
/// full when `hydrated` names them, else light (`advertised`) or left out
/// (`!advertised`).
fn expected_from_tools(
    tools: &[(&str, Arc<FakeTool>)],
    mode: PermissionMode,
    hydrated: &HashSet<String>,
    advertised: bool,
) -> Vec<engine_ports::ToolSpec> {
    let mut sorted: Vec<_> = tools.iter().collect();
    sorted.sort_by_key(|(key, _)| *key);
    sorted
        .into_iter()
        .filter(|(_, tool)| engine_core::available_in(tool.as_ref(), mode))
        .filter_map(|(key, tool)| {
            let spec = match tool.advertised_spec() {
                Some(_) if hydrated.contains(*key) => Some(tool.spec()),
                Some(light) => advertised.then_some(light),
                None => Some(tool.spec()),
            };
            spec.map(|spec| spec.with_name(*key))
        })
        .collect()
}

#[test]
fn listings_hold_what_each_tool_reports_under_its_key_hydrated_or_not() {
    let probe = Probe::new();
    let schema = serde_json::json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let tools: Vec<(&str, Arc<FakeTool>)> = vec![
        ("b_plain", FakeTool::new("b_plain", true, &probe).arc()),
        ("a_write", FakeTool::new("a_write", false, &probe).arc()),
        (
            "mcp__docs__search",
            FakeTool::new("mcp__docs__search", true, &probe)
                .with_schema(schema.clone())
                .disclosable("Searches the docs.")
                .arc(),
        ),
        (
            "mcp__docs__write",
            FakeTool::new("mcp__docs__write", false, &probe)
                .with_schema(schema.clone())
                .disclosable("Writes a doc.")
                .arc(),
        ),
        (
            "mcp__web__fetch",
            FakeTool::new("mcp__web__fetch", true, &probe)
                .with_schema(schema)
                .disclosable("Fetches a page.")
                .arc(),
        ),
        (
            "plan_note",
            FakeTool::new("plan_note", true, &probe).plan_only().arc(),
        ),
    ];
    let mut catalog = Catalog::new();
    for (_, tool) in &tools {
        catalog.must_register(Arc::clone(tool) as _);
    }
    // The light spec of a Disclosable tool differs from its full one.
    let light = catalog
        .lookup("mcp__docs__search")
        .unwrap()
        .advertised_spec()
        .unwrap();
    assert_ne!(light, catalog.lookup("mcp__docs__search").unwrap().spec());

    let every: HashSet<String> = tools.iter().map(|(key, _)| (*key).to_owned()).collect();
    let none = HashSet::new();
    let sets: [&[&str]; 4] = [
        &[],
        &["mcp__docs__search"],
        &["mcp__docs__write", "mcp__web__fetch", "b_plain", "unknown"],
        &["mcp__docs__search", "mcp__docs__write", "mcp__web__fetch"],
    ];
    for set in sets {
        let hydrated: HashSet<String> = set.iter().map(|name| (*name).to_owned()).collect();
        let ordered: std::collections::BTreeSet<String> = hydrated.iter().cloned().collect();
        for mode in PermissionMode::ALL {
            assert_eq!(
                catalog.specs(mode),
                expected_from_tools(&tools, mode, &every, true),
                "{mode}"
            );
            assert_eq!(
                catalog.advertised_specs(mode),
                expected_from_tools(&tools, mode, &none, true),
                "{mode}"
            );
            let advertised = expected_from_tools(&tools, mode, &hydrated, true);
            assert_eq!(
                catalog.advertised_specs_for(mode, &hydrated),
                advertised,
                "{mode} {set:?}"
            );
            assert_eq!(
                catalog.advertised_specs_for(mode, &ordered),
                advertised,
                "{mode} {set:?}"
            );
            let undeferred = expected_from_tools(&tools, mode, &hydrated, false);
            assert_eq!(
                catalog.undeferred_specs_for(mode, &hydrated),
                undeferred,
                "{mode} {set:?}"
            );
            assert_eq!(
                catalog.undeferred_specs_for(mode, &ordered),
                undeferred,
                "{mode} {set:?}"
            );
        }
    }
}

#[test]
fn advertised_specs_substitute_light_specs_only_for_disclosable_tools() {
    let probe = Probe::new();
    let mut plain = Catalog::new();
    plain.must_register(FakeTool::new("Read", true, &probe).arc());
    plain.must_register(FakeTool::new("Write", false, &probe).arc());
    for mode in PermissionMode::ALL {
        assert_eq!(plain.advertised_specs(mode), plain.specs(mode), "{mode}");
    }

    let schema = serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}});
    let mut catalog = Catalog::new();
    catalog.must_register(
        FakeTool::new("Mcp", true, &probe)
            .with_schema(schema.clone())
            .disclosable("light Mcp")
            .arc(),
    );
    catalog.must_register(FakeTool::new("Read", true, &probe).arc());
    let advertised = catalog.advertised_specs(PermissionMode::Default);
    let mcp = advertised.iter().find(|s| s.name() == "Mcp").unwrap();
    assert!(mcp.schema().is_none(), "advertised light spec has no schema");
    assert_eq!(mcp.description(), "light Mcp");
    assert_eq!(catalog.lookup("Mcp").unwrap().spec().schema(), Some(&schema));

    let hydrated: HashSet<String> = ["Mcp".to_owned()].into();
    let full = catalog.advertised_specs_for(PermissionMode::Default, &hydrated);
    assert_eq!(full, catalog.specs(PermissionMode::Default));
    let none: HashSet<String> = HashSet::new();
    assert_eq!(
        catalog.advertised_specs_for(PermissionMode::Default, &none),
        advertised
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_shared_catalog_reads_the_same_from_parallel_tasks() {
    let probe = Probe::new();
    let mut catalog = Catalog::new();
    for i in 0..200 {
        let tool = FakeTool::new(&format!("T{i:03}"), i % 3 != 0, &probe);
        let tool = if i % 5 == 0 {
            tool.disclosable("light")
        } else {
            tool
        };
        catalog.must_register(tool.arc());
    }
    let catalog = Arc::new(catalog);
    let expected = catalog.advertised_specs(PermissionMode::Plan);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let catalog = Arc::clone(&catalog);
            tokio::spawn(async move {
                let found = (0..200)
                    .filter(|i| catalog.lookup(&format!("T{i:03}")).is_some())
                    .count();
                (found, catalog.advertised_specs(PermissionMode::Plan))
            })
        })
        .collect();
    for task in tasks {
        let (found, specs) = task.await.unwrap();
        assert_eq!(found, 200);
        assert_eq!(specs, expected);
    }
}

#[test]
fn catalog_is_send_and_sync_and_clone_is_shallow() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Catalog>();
    assert_send_sync::<Arc<dyn Tool>>();
    let probe = Probe::new();
    let mut shared = Catalog::new();
    shared.must_register(FakeTool::new("Read", true, &probe).arc());
    let mut per_session = shared.clone();
    per_session.must_register(FakeTool::new("mcp__cli__echo", false, &probe).arc());
    assert_eq!(shared.len(), 1);
    assert_eq!(per_session.len(), 2);
    assert!(Arc::ptr_eq(
        shared.lookup("Read").unwrap(),
        per_session.lookup("Read").unwrap()
    ));
}
