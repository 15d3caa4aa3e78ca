//! What a turn advertises is derived once per catalog, mode view and disclosure, and
//! whatever can change it shows from the next listing or run on: a registration, a
//! newer catalog, a mode change, a hydrated tool, a rule that hides a tool.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use engine_core::{Catalog, CatalogUpdates, Disclosure, turn_specs};
use engine_ports::testkit::ScriptedTurn;
use engine_ports::{EventKind, PermissionMode, PermissionRules, RuleEffect, RuleMatch, SessionId, ToolCall};

use crate::support::{FakeTool, Probe, catalog_of, config, harness, harness_with, run_to_end};

fn names(specs: &[engine_ports::ToolSpec]) -> Vec<&str> {
    specs.iter().map(|spec| spec.name()).collect()
}

fn listing(catalog: &Catalog, mode: PermissionMode, disclosure: Disclosure) -> Vec<String> {
    names(&turn_specs(catalog, mode, &BTreeSet::new(), disclosure))
        .into_iter()
        .map(str::to_owned)
        .collect()
}

#[test]
fn turns_read_each_tool_spec_once_per_catalog() {
    let probe = Probe::new();
    let counted = FakeTool::new("Read", true, &probe).arc();
    let catalog = catalog_of(vec![
        Arc::clone(&counted) as _,
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    for _ in 0..3 {
        assert_eq!(
            listing(&catalog, PermissionMode::Default, Disclosure::Off),
            ["Read", "Write"]
        );
    }
    assert_eq!(
        counted.spec_calls(),
        1,
        "one read, at registration, for every turn of the catalog"
    );
}

#[test]
fn a_registration_after_a_listing_shows_in_the_next_listing() {
    let probe = Probe::new();
    let mut catalog = Catalog::new();
    catalog.must_register(FakeTool::new("Read", true, &probe).arc());
    for disclosure in [Disclosure::Off, Disclosure::Light, Disclosure::Deferred] {
        let _ = listing(&catalog, PermissionMode::Default, disclosure);
    }
    catalog.must_register(FakeTool::new("Grep", true, &probe).arc());
    catalog.must_register(
        FakeTool::new("mcp__docs__search", true, &probe)
            .disclosable("Searches the docs.")
            .arc(),
    );
    assert_eq!(
        listing(&catalog, PermissionMode::Default, Disclosure::Off),
        ["Grep", "Read", "mcp__docs__search"]
    );
    assert_eq!(
        listing(&catalog, PermissionMode::Default, Disclosure::Light),
        ["Grep", "Read", "ToolSearch", "mcp__docs__search"]
    );
    assert_eq!(
        listing(&catalog, PermissionMode::Default, Disclosure::Deferred),
        ["Grep", "Read", "ToolSearch"]
    );
}

#[test]
fn each_mode_view_and_disclosure_has_its_own_listing() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
        FakeTool::new("mcp__docs__search", true, &probe)
            .disclosable("Searches the docs.")
            .arc(),
    ]);
    for _ in 0..2 {
        assert_eq!(
            listing(&catalog, PermissionMode::Default, Disclosure::Off),
            ["Read", "Write", "mcp__docs__search"]
        );
        assert_eq!(
            listing(&catalog, PermissionMode::Plan, Disclosure::Off),
            ["Read", "mcp__docs__search"]
        );
        assert_eq!(
            listing(&catalog, PermissionMode::Plan, Disclosure::Deferred),
            ["Read", "ToolSearch"]
        );
        let light = turn_specs(
            &catalog,
            PermissionMode::AcceptEdits,
            &BTreeSet::new(),
            Disclosure::Light,
        );
        let search = light.iter().find(|s| s.name() == "mcp__docs__search").unwrap();
        assert_eq!(search.description(), "Searches the docs.", "the light spec");
    }
    let hydrated = BTreeSet::from(["mcp__docs__search".to_owned()]);
    let full = turn_specs(&catalog, PermissionMode::Default, &hydrated, Disclosure::Light);
    let search = full.iter().find(|s| s.name() == "mcp__docs__search").unwrap();
    assert_eq!(
        search.description(),
        "the mcp__docs__search tool",
        "a hydrated tool in full"
    );
    let deferred = turn_specs(&catalog, PermissionMode::Default, &hydrated, Disclosure::Deferred);
    assert_eq!(
        names(&deferred),
        ["Read", "ToolSearch", "Write", "mcp__docs__search"]
    );
}

/// A newer catalog once `switched` is set.
struct Switch {
    switched: AtomicBool,
    newer: Arc<Catalog>,
}

#[async_trait::async_trait]
impl CatalogUpdates for Switch {
    async fn newer_than(&self, generation: u64) -> Option<(u64, Arc<Catalog>)> {
        (self.switched.load(Ordering::SeqCst) && generation < 1).then(|| (1, Arc::clone(&self.newer)))
    }
}

/// The tool names of every request the model got.
fn requested(h: &crate::support::Harness) -> Vec<Vec<String>> {
    h.llm
        .requests()
        .iter()
        .map(|request| request.tools.iter().map(|s| s.name().to_owned()).collect())
        .collect()
}

fn init_tools(events: &[engine_ports::Event]) -> Vec<String> {
    events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::SessionInit { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .unwrap()
}

fn texts(n: usize) -> Vec<ScriptedTurn> {
    (0..n)
        .map(|i| ScriptedTurn::text(format!("answer {i}")))
        .collect()
}

#[tokio::test]
async fn a_newer_catalog_is_advertised_from_the_next_run_on() {
    let probe = Probe::new();
    let first = catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]);
    let newer = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("mcp__docs__search", true, &probe).arc(),
    ]);
    let switch = Arc::new(Switch {
        switched: AtomicBool::new(false),
        newer,
    });
    let updates = Arc::clone(&switch) as Arc<dyn CatalogUpdates>;
    let h = harness_with(first, texts(2), config(), |mut deps| {
        deps.catalog_updates = Some(updates);
        deps
    });
    let before = run_to_end(&h.engine, "s", "one").await;
    switch.switched.store(true, Ordering::SeqCst);
    let after = run_to_end(&h.engine, "s", "two").await;
    assert_eq!(init_tools(&before), ["Read"]);
    assert_eq!(init_tools(&after), ["Read", "mcp__docs__search"]);
    assert_eq!(requested(&h), [vec!["Read"], vec!["Read", "mcp__docs__search"]]);
}

#[tokio::test]
async fn a_mode_change_changes_the_next_runs_tools() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    let h = harness(catalog, texts(3), config());
    let session = SessionId::from("s");
    run_to_end(&h.engine, "s", "one").await;
    h.engine.set_mode(&session, PermissionMode::Plan).await.unwrap();
    run_to_end(&h.engine, "s", "two").await;
    h.engine
        .set_mode(&session, PermissionMode::Default)
        .await
        .unwrap();
    run_to_end(&h.engine, "s", "three").await;
    assert_eq!(
        requested(&h),
        [vec!["Read", "Write"], vec!["Read"], vec!["Read", "Write"]]
    );
}

/// Hides `Write` once `hiding` is set (as a bare `deny` rule would).
struct HideWrite {
    hiding: AtomicBool,
}

impl PermissionRules for HideWrite {
    fn check(&self, _: &ToolCall) -> Option<RuleMatch> {
        None
    }

    fn hides(&self, name: &str) -> Option<RuleMatch> {
        (self.hiding.load(Ordering::SeqCst) && name == "Write").then(|| RuleMatch {
            effect: RuleEffect::Deny,
            rule: "Write".to_owned(),
            source: "settings.json".to_owned(),
        })
    }
}

#[tokio::test]
async fn a_rule_that_starts_hiding_a_tool_hides_it_from_the_next_run() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    let rules = Arc::new(HideWrite {
        hiding: AtomicBool::new(false),
    });
    let given = Arc::clone(&rules) as Arc<dyn PermissionRules>;
    let h = harness_with(catalog, texts(3), config(), |mut deps| {
        deps.rules = Some(given);
        deps
    });
    run_to_end(&h.engine, "s", "one").await;
    rules.hiding.store(true, Ordering::SeqCst);
    let hidden = run_to_end(&h.engine, "s", "two").await;
    rules.hiding.store(false, Ordering::SeqCst);
    run_to_end(&h.engine, "s", "three").await;
    assert_eq!(init_tools(&hidden), ["Read"]);
    assert_eq!(
        requested(&h),
        [vec!["Read", "Write"], vec!["Read"], vec!["Read", "Write"]]
    );
}
