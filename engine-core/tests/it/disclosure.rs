//! Progressive disclosure and `ToolSearch` scenarios (D3, D4).

use std::sync::Arc;

use engine_core::{
    Catalog, Deps, Engine, EngineConfig, EngineError, Environment, OutputCap, TOOL_SEARCH_NAME, Tool,
    ToolSearch, tool_search_spec,
};
use engine_ports::testkit::{ScriptedLlm, ScriptedTurn};
use engine_ports::{CancellationToken, PermissionMode, SessionId, ToolCall, ToolResult};

use crate::support::{FakeTool, Probe, catalog_of, config, env, harness, results_of, run_to_end, stop_of};

fn mcp_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}})
}

fn mcp_and_read(probe: &Arc<Probe>) -> Arc<Catalog> {
    catalog_of(vec![
        FakeTool::new("Mcp", true, probe)
            .described("the mcp tool")
            .with_schema(mcp_schema())
            .disclosable("light mcp")
            .arc(),
        FakeTool::new("Read", true, probe).arc(),
    ])
}

async fn search(catalog: &Arc<Catalog>, mode: PermissionMode, args: &str) -> ToolResult {
    search_in(catalog, mode, args, &env()).await
}

async fn search_in(
    catalog: &Arc<Catalog>,
    mode: PermissionMode,
    args: &str,
    env: &Environment,
) -> ToolResult {
    ToolSearch::new(Arc::clone(catalog), mode)
        .execute(
            &CancellationToken::new(),
            &ToolCall::new("s1", TOOL_SEARCH_NAME, args),
            env,
        )
        .await
        .expect("ToolSearch never fails as a harness error")
}

fn found(result: &ToolResult) -> Vec<String> {
    assert!(!result.is_error(), "unexpected error: {}", result.content());
    let items: Vec<serde_json::Value> = serde_json::from_str(result.content()).expect("a JSON array");
    items
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_owned())
        .collect()
}

fn tool_names(specs: &[engine_ports::ToolSpec]) -> Vec<&str> {
    specs.iter().map(engine_ports::ToolSpec::name).collect()
}

#[tokio::test]
async fn progressive_off_advertises_full_specs_and_no_search() {
    let probe = Probe::new();
    let h = harness(mcp_and_read(&probe), vec![ScriptedTurn::text("done")], config());
    let events = run_to_end(&h.engine, "a", "hi").await;
    assert_eq!(stop_of(&events).0, engine_ports::StopReason::EndTurn);
    let request = &h.llm.requests()[0];
    assert_eq!(tool_names(&request.tools), ["Mcp", "Read"]);
    assert_eq!(request.tools[0].schema(), Some(&mcp_schema()));
}

#[tokio::test]
async fn tool_search_hydrates_one_session_from_the_next_turn_on() {
    let probe = Probe::new();
    let cfg = EngineConfig {
        progressive_tools: true,
        ..config()
    };
    let turns = vec![
        ScriptedTurn::call("c1", TOOL_SEARCH_NAME, r#"{"query":"mcp"}"#),
        ScriptedTurn::text("done a"),
        ScriptedTurn::text("done b"),
        ScriptedTurn::text("done a again"),
    ];
    let h = harness(mcp_and_read(&probe), turns, cfg);

    let events = run_to_end(&h.engine, "a", "find it").await;
    let results = results_of(&events);
    assert_eq!(results.len(), 1);
    let items: Vec<serde_json::Value> = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["name"], "Mcp");
    assert!(items[0]["schema"]["properties"].is_object());

    run_to_end(&h.engine, "b", "other session").await;
    run_to_end(&h.engine, "a", "again").await;

    let requests = h.llm.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(tool_names(&request.tools), ["Mcp", "Read", "ToolSearch"]);
    }
    let mcp_schema_of = |i: usize| requests[i].tools[0].schema().cloned();
    assert_eq!(mcp_schema_of(0), None, "turn 1 of a: light");
    assert_eq!(mcp_schema_of(1), Some(mcp_schema()), "turn 2 of a: hydrated");
    assert_eq!(mcp_schema_of(2), None, "session b is not hydrated");
    assert_eq!(
        mcp_schema_of(3),
        Some(mcp_schema()),
        "a new run of a keeps the full spec"
    );
    let stored = h.engine.store().load(&SessionId::from("a")).await.unwrap();
    assert!(stored.hydrated.contains("Mcp"));
}

#[tokio::test]
async fn matching_prefers_exact_names_then_substrings_case_insensitively() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).described("show a path").arc(),
        FakeTool::new("ReadFile", true, &probe)
            .described("show one document")
            .arc(),
        FakeTool::new("Grep", true, &probe)
            .described("search file contents")
            .arc(),
    ]);
    let mode = PermissionMode::Default;
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"Read"}"#).await),
        ["Read"]
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"read"}"#).await),
        ["Read", "ReadFile"]
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"FILE"}"#).await),
        ["Grep", "ReadFile"]
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"select:Read, Nope ,Grep"}"#).await),
        ["Grep", "Read"]
    );
    assert!(found(&search(&catalog, mode, r#"{"query":"select:Nope"}"#).await).is_empty());
    let none = search(&catalog, mode, r#"{"query":"zzz"}"#).await;
    assert!(!none.is_error());
    assert_eq!(none.content(), "[]");
    assert_eq!(
        found(&search(&catalog, mode, "{}").await),
        ["Grep", "Read", "ReadFile"]
    );
    assert_eq!(
        found(&search(&catalog, mode, "").await),
        ["Grep", "Read", "ReadFile"]
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":null}"#).await),
        ["Grep", "Read", "ReadFile"]
    );
    assert!(found(&search(&catalog, mode, r#"{"query":"select:ToolSearch"}"#).await).is_empty());
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"select:Grep,Grep"}"#).await),
        ["Grep"],
        "duplicates collapse"
    );
}

#[tokio::test]
async fn plan_mode_searches_only_read_only_tools_and_bad_args_name_the_tool() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("Read", true, &probe).arc(),
        FakeTool::new("Write", false, &probe).arc(),
    ]);
    assert_eq!(
        found(&search(&catalog, PermissionMode::Plan, "{}").await),
        ["Read"]
    );
    assert_eq!(
        found(&search(&catalog, PermissionMode::Default, "{}").await),
        ["Read", "Write"]
    );
    assert!(ToolSearch::new(Arc::clone(&catalog), PermissionMode::Plan).read_only());

    for bad in ["{bad", r#"{"query": 42}"#] {
        let result = search(&catalog, PermissionMode::Default, bad).await;
        assert!(result.is_error(), "{bad}");
        assert!(result.content().contains("ToolSearch"), "{}", result.content());
    }
}

#[tokio::test]
async fn results_over_the_output_cap_are_an_error_with_the_count() {
    let probe = Probe::new();
    let tools: Vec<Arc<dyn Tool>> = (0..50)
        .map(|i| FakeTool::new(&format!("T{i:02}"), true, &probe).arc() as Arc<dyn Tool>)
        .collect();
    let catalog = catalog_of(tools);
    let small = env().with_output_cap(OutputCap::new(500));
    let result = search_in(&catalog, PermissionMode::Default, "{}", &small).await;
    assert!(result.is_error());
    assert!(result.content().contains("50"), "{}", result.content());
    assert!(result.content().contains("select:"), "{}", result.content());
}

#[tokio::test]
async fn an_unhydrated_disclosable_tool_is_callable_directly() {
    let probe = Probe::new();
    let cfg = EngineConfig {
        progressive_tools: true,
        ..config()
    };
    let turns = vec![
        ScriptedTurn::call("c1", "Mcp", r#"{"x":"1"}"#),
        ScriptedTurn::text("done"),
    ];
    let h = harness(mcp_and_read(&probe), turns, cfg);
    let events = run_to_end(&h.engine, "a", "go").await;
    assert_eq!(probe.executions("Mcp"), 1);
    assert!(!results_of(&events)[0].2);
}

#[tokio::test]
async fn each_engine_owns_one_tool_search_and_the_catalog_never_holds_it() {
    let probe = Probe::new();
    let catalog = mcp_and_read(&probe);
    let cfg = EngineConfig {
        progressive_tools: true,
        ..config()
    };
    let first = harness(Arc::clone(&catalog), vec![ScriptedTurn::text("one")], cfg.clone());
    let second = harness(Arc::clone(&catalog), vec![ScriptedTurn::text("two")], cfg.clone());
    run_to_end(&first.engine, "s", "x").await;
    run_to_end(&second.engine, "s", "x").await;
    for h in [&first, &second] {
        let tools = &h.llm.requests()[0].tools;
        assert_eq!(tools.iter().filter(|s| s.name() == TOOL_SEARCH_NAME).count(), 1);
        assert_eq!(
            tools.iter().find(|s| s.name() == TOOL_SEARCH_NAME),
            Some(&tool_search_spec())
        );
    }
    assert!(catalog.lookup(TOOL_SEARCH_NAME).is_none());
    assert!(!catalog.names().any(|n| n == TOOL_SEARCH_NAME));

    let reserved = catalog_of(vec![FakeTool::new(TOOL_SEARCH_NAME, true, &probe).arc()]);
    let mut deps = Deps::new(Arc::new(ScriptedLlm::new([])), reserved.clone(), env());
    deps.config = cfg;
    assert!(matches!(Engine::new(deps), Err(EngineError::ReservedToolName)));
    let mut off = Deps::new(Arc::new(ScriptedLlm::new([])), reserved, env());
    off.config = config();
    assert!(
        Engine::new(off).is_ok(),
        "without progressive tools the name is free"
    );
}

#[test]
fn the_search_spec_says_what_it_does() {
    let spec = tool_search_spec();
    assert_eq!(spec.name(), "ToolSearch");
    assert!(spec.description().contains("select:"));
    assert!(spec.description().contains("read-only"));
    let schema = spec.schema().unwrap();
    assert_eq!(schema["properties"]["query"]["type"], "string");
    assert!(schema.get("required").is_none(), "query is optional");
}
