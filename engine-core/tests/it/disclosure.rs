//! Progressive disclosure and `ToolSearch` scenarios (D3, D4).

use std::sync::Arc;

use engine_core::{
    COMPACT_SEARCH_UP_TO, Catalog, Deps, Disclosure, Engine, EngineConfig, EngineError, Environment,
    OutputCap, TOOL_SEARCH_NAME, Tool, ToolSearch, tool_search_spec, turn_specs,
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
        disclosure: Disclosure::Light,
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
async fn matching_prefers_exact_names_then_words_then_substrings() {
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
        ["Read"],
        "an exact name wins alone"
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"read"}"#).await),
        ["Read", "ReadFile"],
        "a word matches the words of camelCase names, case-insensitively"
    );
    let mut file = found(&search(&catalog, mode, r#"{"query":"FILE"}"#).await);
    file.sort();
    assert_eq!(file, ["Grep", "ReadFile"], "names and descriptions");
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"ontent"}"#).await),
        ["Grep"],
        "text matching no word is looked for inside names and descriptions"
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
        disclosure: Disclosure::Light,
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
        disclosure: Disclosure::Light,
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

fn deferred() -> EngineConfig {
    EngineConfig {
        disclosure: Disclosure::Deferred,
        ..config()
    }
}

/// `Read`, plus MCP tools of servers `git` and `fs` (Disclosable) and a Disclosable
/// tool of no server.
fn mounted(probe: &Arc<Probe>) -> Arc<Catalog> {
    let mcp = |name: &str, description: &str| {
        FakeTool::new(name, true, probe)
            .described(description)
            .with_schema(mcp_schema())
            .disclosable(description)
            .arc() as Arc<dyn Tool>
    };
    catalog_of(vec![
        FakeTool::new("Read", true, probe).arc(),
        mcp("mcp__git__git_commit", "Records changes to the repository"),
        mcp("mcp__git__git_status", "Shows the working tree status"),
        mcp(
            "mcp__fs__read_text_file",
            "Read the complete contents of a file as text",
        ),
        mcp("Lookup", "Looks a word up"),
    ])
}

fn search_description(specs: &[engine_ports::ToolSpec]) -> &str {
    specs
        .iter()
        .find(|s| s.name() == TOOL_SEARCH_NAME)
        .expect("ToolSearch is advertised")
        .description()
}

#[tokio::test]
async fn deferred_mode_leaves_unhydrated_disclosable_tools_out_and_names_them_in_tool_search() {
    let probe = Probe::new();
    let h = harness(mounted(&probe), vec![ScriptedTurn::text("done")], deferred());
    run_to_end(&h.engine, "a", "hi").await;
    let request = &h.llm.requests()[0];
    assert_eq!(tool_names(&request.tools), ["Read", "ToolSearch"]);
    let description = search_description(&request.tools);
    assert!(
        description.contains(
            "\n- mcp__fs__*: read_text_file\n- mcp__git__*: git_commit, git_status\n- other: Lookup"
        ),
        "{description}"
    );
    assert_eq!(
        turn_specs(
            &mounted(&probe),
            PermissionMode::Default,
            &Default::default(),
            Disclosure::Light
        )
        .len(),
        6,
        "light mode still lists every tool, plus ToolSearch"
    );
    let plain = catalog_of(vec![FakeTool::new("Read", true, &probe).arc()]);
    let specs = turn_specs(
        &plain,
        PermissionMode::Default,
        &Default::default(),
        Disclosure::Deferred,
    );
    assert!(
        !search_description(&specs).contains("eferred"),
        "nothing deferred, nothing listed"
    );
}

#[tokio::test]
async fn a_deferred_tool_found_by_keywords_is_advertised_in_full_on_the_next_turn() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call(
            "c1",
            TOOL_SEARCH_NAME,
            r#"{"query":"commit changes to the repository"}"#,
        ),
        ScriptedTurn::text("done"),
    ];
    let h = harness(mounted(&probe), turns, deferred());
    let events = run_to_end(&h.engine, "a", "commit").await;
    let results = results_of(&events);
    let items: Vec<serde_json::Value> = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(items[0]["name"], "mcp__git__git_commit", "best match first");

    let requests = h.llm.requests();
    assert_eq!(tool_names(&requests[0].tools), ["Read", "ToolSearch"]);
    let second = &requests[1].tools;
    assert!(
        second
            .iter()
            .any(|s| s.name() == "mcp__git__git_commit" && s.schema() == Some(&mcp_schema()))
    );
    assert_eq!(
        search_description(&requests[0].tools),
        search_description(second),
        "ToolSearch's description stays byte-identical across turns"
    );
}

#[tokio::test]
async fn a_deferred_tool_called_by_name_before_hydration_runs() {
    let probe = Probe::new();
    let turns = vec![
        ScriptedTurn::call("c1", "mcp__git__git_status", r#"{"x":"1"}"#),
        ScriptedTurn::text("done"),
    ];
    let h = harness(mounted(&probe), turns, deferred());
    let events = run_to_end(&h.engine, "a", "go").await;
    assert_eq!(probe.executions("mcp__git__git_status"), 1);
    assert!(!results_of(&events)[0].2);
}

/// `n` Disclosable tools of server `synth` with plausible names.
fn synthetic(n: usize, probe: &Arc<Probe>) -> Arc<Catalog> {
    const VERBS: [&str; 5] = ["create", "get", "list", "update", "delete"];
    catalog_of(
        (0..n)
            .map(|i| {
                let name = format!("mcp__synth__{}_record{}", VERBS[i % VERBS.len()], i / VERBS.len());
                FakeTool::new(&name, true, probe)
                    .disclosable("a record tool")
                    .arc() as Arc<dyn Tool>
            })
            .collect(),
    )
}

fn deferred_search_bytes(n: usize, probe: &Arc<Probe>) -> (usize, String) {
    let catalog = synthetic(n, probe);
    let specs = turn_specs(
        &catalog,
        PermissionMode::Default,
        &Default::default(),
        Disclosure::Deferred,
    );
    assert_eq!(
        tool_names(&specs),
        [TOOL_SEARCH_NAME],
        "no synthetic tool is advertised"
    );
    let bytes = serde_json::to_vec(&specs).unwrap().len();
    (bytes, search_description(&specs).to_owned())
}

#[test]
fn the_deferred_listing_switches_to_one_line_per_server_above_4_kb_of_names() {
    let probe = Probe::new();
    let (_, named) = deferred_search_bytes(100, &probe);
    assert!(
        named.contains("\n- mcp__synth__*: create_record0, create_record1,"),
        "{named}"
    );
    let (_, counted) = deferred_search_bytes(1000, &probe);
    assert!(counted.contains("\n- mcp__synth__* (1000 tools)"), "{counted}");
    assert!(!counted.contains("create_record0"), "{counted}");
}

#[test]
fn each_deferred_tool_costs_at_most_40_bytes_until_the_switch_and_nothing_after() {
    let probe = Probe::new();
    let sizes = [10, 50, 100, 200, 1000, 2000];
    let bytes: Vec<usize> = sizes
        .iter()
        .map(|&n| deferred_search_bytes(n, &probe).0)
        .collect();
    for i in 1..sizes.len() {
        let added = (sizes[i] - sizes[i - 1]) as f64;
        let per_tool = (bytes[i] as f64 - bytes[i - 1] as f64) / added;
        println!(
            "{} → {} tools: {per_tool:.1} bytes per added tool",
            sizes[i - 1],
            sizes[i]
        );
        assert!(
            per_tool <= 40.0,
            "{per_tool} bytes per tool between {} and {}",
            sizes[i - 1],
            sizes[i]
        );
    }
    assert_eq!(bytes[4], bytes[5], "flat once the listing is per server");
}

#[tokio::test]
async fn keyword_queries_rank_with_bm25_and_honour_the_limit() {
    let probe = Probe::new();
    let described = |name: &str, description: &str, schema: serde_json::Value| {
        FakeTool::new(name, true, &probe)
            .described(description)
            .with_schema(schema)
            .arc() as Arc<dyn Tool>
    };
    let mut tools = vec![
        described(
            "mcp__fs__read_text_file",
            "Read the complete contents of a file as text.",
            serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ),
        described(
            "mcp__fs__move_file",
            "Move or rename files and directories.",
            serde_json::json!({"type": "object", "properties": {"source": {}, "destination": {}}}),
        ),
        described(
            "mcp__git__git_log",
            "Shows the commit logs.",
            serde_json::json!({"type": "object", "properties": {
                "max_count": {"type": "integer", "description": "Maximum number of commits to show"}
            }}),
        ),
        described(
            "getTinyImage",
            "Returns a small picture.",
            serde_json::json!({"type": "object", "properties": {}}),
        ),
    ];
    for i in 0..30 {
        tools.push(described(
            &format!("mcp__misc__note_{i:02}"),
            "Stores a note about a file.",
            serde_json::json!({"type": "object", "properties": {}}),
        ));
    }
    let catalog = catalog_of(tools);
    let mode = PermissionMode::Default;
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"rename a file"}"#).await)[0],
        "mcp__fs__move_file"
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"read files as text"}"#).await)[0],
        "mcp__fs__read_text_file",
        "stems: files finds file"
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"tiny image"}"#).await)[0],
        "getTinyImage",
        "camelCase names are split into words"
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"maximum number of commits"}"#).await)[0],
        "mcp__git__git_log",
        "argument names and descriptions count"
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"note"}"#).await).len(),
        5,
        "top 5 by default"
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"note","limit":12}"#).await).len(),
        12
    );
    assert_eq!(
        found(&search(&catalog, mode, r#"{"query":"note","limit":500}"#).await).len(),
        20,
        "the limit is capped"
    );
    let zero = search(&catalog, mode, r#"{"query":"note","limit":0}"#).await;
    assert!(
        zero.is_error() && zero.content().contains("limit"),
        "{}",
        zero.content()
    );
}

#[tokio::test]
async fn the_keyword_index_is_built_once_per_catalog() {
    let probe = Probe::new();
    let counted = FakeTool::new("Counted", true, &probe)
        .described("an unrelated tool")
        .arc();
    let catalog = catalog_of(vec![
        Arc::clone(&counted) as Arc<dyn Tool>,
        FakeTool::new("Grep", true, &probe)
            .described("search file contents")
            .arc(),
    ]);
    let before = counted.spec_calls();
    for _ in 0..3 {
        assert_eq!(
            found(&search(&catalog, PermissionMode::Default, r#"{"query":"contents"}"#).await),
            ["Grep"]
        );
    }
    assert_eq!(counted.spec_calls() - before, 1, "one spec read, for the index");
}

/// `ToolSearch` as the model sees it, in both progressive modes, over two servers'
/// disclosable tools and one core tool: a change to its wording or schema shows as a
/// reviewed snapshot diff.
#[test]
fn tool_search_specs_are_the_reviewed_model_contract() {
    let probe = Probe::new();
    let catalog = catalog_of(vec![
        FakeTool::new("mcp__docs__search_pages", true, &probe)
            .described("Searches the documentation pages by keyword.")
            .with_schema(mcp_schema())
            .disclosable("Searches the documentation pages.")
            .arc(),
        FakeTool::new("mcp__git__commit", false, &probe)
            .described("Records staged changes in the repository.")
            .with_schema(mcp_schema())
            .disclosable("Records staged changes.")
            .arc(),
        FakeTool::new("Read", true, &probe).arc(),
    ]);
    let rendered: Vec<serde_json::Value> = [Disclosure::Light, Disclosure::Deferred]
        .into_iter()
        .map(|disclosure| {
            let spec = engine_core::tool_search_spec_for(&catalog, PermissionMode::Default, disclosure)
                .expect("progressive modes advertise ToolSearch");
            serde_json::json!({
                "disclosure": format!("{disclosure:?}"),
                "name": spec.name(),
                "description": spec.description(),
                "schema": spec.schema(),
            })
        })
        .collect();
    insta::assert_json_snapshot!("tool_search_specs", rendered);
}

/// `n` Disclosable tools shaped like a real MCP server's: a sentence of description
/// and a schema of three described arguments (about 360 bytes each in full).
fn realistic(n: usize, probe: &Arc<Probe>) -> Arc<Catalog> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file, relative to the root"},
            "limit": {"type": "integer", "description": "Most entries returned"},
            "recursive": {"type": "boolean", "description": "Whether to descend"}
        },
        "required": ["path"]
    });
    catalog_of(
        (0..n)
            .map(|i| {
                FakeTool::new(&format!("mcp__files__op_{i}"), true, probe)
                    .described(
                        "Reads, lists or changes entries under the given path and returns them as text.",
                    )
                    .with_schema(schema.clone())
                    .disclosable("Reads, lists or changes entries.")
                    .arc() as Arc<dyn Tool>
            })
            .collect(),
    )
}

fn turn_bytes(catalog: &Catalog, disclosure: Disclosure) -> usize {
    let specs = turn_specs(catalog, PermissionMode::Default, &Default::default(), disclosure);
    serde_json::to_vec(&specs).unwrap().len()
}

#[test]
fn a_small_deferred_catalog_gets_a_compact_search_spec_and_still_saves_nine_tenths() {
    let probe = Probe::new();
    let small = realistic(24, &probe);
    let (off, deferred) = (
        turn_bytes(&small, Disclosure::Off),
        turn_bytes(&small, Disclosure::Deferred),
    );
    println!("24 tools: {off} bytes in full, {deferred} deferred");
    assert!(
        deferred * 10 <= off,
        "{deferred} of {off} bytes is more than a tenth"
    );
    let compact = turn_specs(
        &small,
        PermissionMode::Default,
        &Default::default(),
        Disclosure::Deferred,
    );
    let description = search_description(&compact).to_owned();
    assert!(description.contains("select:NameA,NameB"), "{description}");
    assert!(description.contains("mcp__files__*: op_0, op_1"), "{description}");

    let large = realistic(COMPACT_SEARCH_UP_TO + 1, &probe);
    let full = turn_specs(
        &large,
        PermissionMode::Default,
        &Default::default(),
        Disclosure::Deferred,
    );
    let full_description = search_description(&full);
    assert!(
        full_description.contains("An empty query returns every tool"),
        "a larger catalog gets the full matching rules: {full_description}"
    );
    assert!(
        !description.contains("An empty query returns every tool"),
        "{description}"
    );
}

#[tokio::test]
async fn auto_lists_small_catalogs_in_full_and_defers_tools_past_a_tenth_of_the_window() {
    let probe = Probe::new();
    let catalog = realistic(10, &probe);
    let bytes = catalog.disclosable_spec_bytes();
    assert!(bytes > 3000, "{bytes}");
    let auto = |window: u64| EngineConfig {
        disclosure: Disclosure::Auto,
        context_window: Some(window),
        ..config()
    };
    // 10 tools of about 360 bytes are about 900 tokens: in full under a 128k window…
    let roomy = harness(
        Arc::clone(&catalog),
        vec![ScriptedTurn::text("done")],
        auto(128_000),
    );
    run_to_end(&roomy.engine, "a", "hi").await;
    let requests = roomy.llm.requests();
    let names = tool_names(&requests[0].tools);
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(!names.contains(&TOOL_SEARCH_NAME), "{names:?}");
    assert_eq!(roomy.engine.disclosure_for(&catalog), Disclosure::Off);
    // …and deferred under a window where they pass 10 %.
    let tight = harness(
        Arc::clone(&catalog),
        vec![ScriptedTurn::text("done")],
        auto(6_000),
    );
    run_to_end(&tight.engine, "a", "hi").await;
    assert_eq!(tool_names(&tight.llm.requests()[0].tools), [TOOL_SEARCH_NAME]);
    assert_eq!(tight.engine.disclosure_for(&catalog), Disclosure::Deferred);
}

#[test]
fn auto_defers_exactly_past_the_share_of_the_window() {
    // 4 bytes a token: 4,000 bytes are 1,000 tokens, 10 % of a 10,000-token window.
    assert!(!engine_core::auto_defers(4_000, 10_000));
    assert!(engine_core::auto_defers(4_004, 10_000));
    assert_eq!(engine_core::AUTO_SHARE_PERCENT, 10);
}
