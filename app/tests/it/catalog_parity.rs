//! The catalog-parity invariant: the baseline is the real build
//! output; a per-session catalog equals the shared one by name, plus only the
//! session's `mcp__<client>__*` tools, in every mode.

use std::collections::BTreeSet;
use std::sync::Arc;

use adapter_jsonlstore::SyncPolicy;
use app::{
    Built, CatalogInputs, ExtraTools, FAMILY_ORDER, Family, MemoryConfig, MemorySetting, SessionRequest,
    StoreConfig, assemble_catalog, build,
};
use async_trait::async_trait;
use engine_core::{
    Approve, Catalog, ChildAccess, ChildSpec, DefaultPolicy, Disclosure, Engine, Environment, Limits,
    TOOL_SEARCH_NAME, Tool, ToolError, turn_specs,
};
use engine_ports::RequestPurpose;
use engine_ports::{CancellationToken, PermissionMode, ToolCall, ToolResult, ToolSpec};

use crate::support::mcp_fixture::{FixtureSpec, FixtureTool, McpFixture};
use crate::support::{Scratch, client_spec, config, http_server};

/// Every family and the names it must contribute to the fully loaded build (this
/// catches a family dropped from both sides).
const REQUIRED: &[(Family, &[&str])] = &[
    (
        Family::Core,
        &[
            "Read", "Write", "Edit", "Glob", "Grep", "ListDir", "Shell", "Extra",
        ],
    ),
    (Family::McpGlobal, &["mcp__globe__echo"]),
    (Family::McpResource, &["ListMcpResources", "ReadMcpResource"]),
    (
        Family::Delegation,
        &[
            "Subagent",
            "InspectSubagent",
            "SubagentStatus",
            "Parallel",
            "Team",
            "InspectMember",
        ],
    ),
    (
        Family::Memory,
        &[
            "Remember",
            "Recall",
            "SearchMemory",
            "ForgetMemory",
            "RememberUser",
            "RecallUser",
            "SearchUserModel",
            "ForgetUser",
        ],
    ),
    (Family::Skill, &["Skill", "SkillDraft"]),
];

/// The fully loaded setup: shell, an embedder's extra tool (`Extra`), one skill, a
/// draft dir outside the workspace, resource tools, progressive tools, a JSONL store,
/// project memory in a directory and the user model in memory, the `globe` server
/// (tool `echo`, one resource) and the client server `cli` (tools `echo`, `ping`).
struct Loaded {
    _scratch: Scratch,
    _globe: McpFixture,
    cli: McpFixture,
    built: Built,
}

async fn fully_loaded() -> Loaded {
    let scratch = Scratch::new();
    let skills = scratch.skill("skills", "greet", "Greets people politely.");
    let globe = McpFixture::start(FixtureSpec::tools("global:", &["echo"]).with_resource(
        "globe://readme",
        "readme",
        "hello from globe",
    ))
    .await;
    let cli = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::new("echo"), FixtureTool::read_only("ping")],
        prefix: "client:".to_owned(),
        resources: Vec::new(),
    })
    .await;
    let mut cfg = config(&scratch);
    cfg.shell = Some("/bin/sh".into());
    cfg.skills.dirs = vec![skills];
    cfg.skills.draft_dir = Some(scratch.path("drafts"));
    cfg.mcp.resource_tools = true;
    cfg.mcp.servers = vec![http_server("globe", &globe.url)];
    cfg.disclosure = Disclosure::Light;
    cfg.extra_tools = ExtraTools::new().with(Arc::new(Named("Extra")));
    cfg.store = StoreConfig::Dir {
        path: scratch.path("store"),
        sync: SyncPolicy::Never,
    };
    cfg.memory = MemoryConfig {
        project: MemorySetting::Dir(scratch.path("memory")),
        user: MemorySetting::InMemory,
    };
    let built = build(cfg).await.unwrap();
    Loaded {
        _scratch: scratch,
        _globe: globe,
        cli,
        built,
    }
}

fn names(catalog: &Catalog) -> Vec<String> {
    catalog.names().map(str::to_owned).collect()
}

fn names_in(catalog: &Catalog, mode: PermissionMode) -> Vec<String> {
    catalog
        .available_names(mode)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The parity comparison: `session` must hold every `shared` name, and its extras
/// must all start with `client_prefix` (at least one of them) or, without a prefix,
/// not exist. The error lists the missing and the extra names.
fn compare(shared: &[String], session: &[String], client_prefix: Option<&str>) -> Result<(), String> {
    let shared_set: BTreeSet<&String> = shared.iter().collect();
    let session_set: BTreeSet<&String> = session.iter().collect();
    let missing: Vec<&&String> = shared_set.difference(&session_set).collect();
    let extra: Vec<&&String> = session_set.difference(&shared_set).collect();
    let foreign: Vec<&&&String> = extra
        .iter()
        .filter(|name| client_prefix.is_none_or(|prefix| !name.starts_with(prefix)))
        .collect();
    let no_client_tool = client_prefix.is_some() && extra.is_empty();
    if missing.is_empty() && foreign.is_empty() && !no_client_tool {
        return Ok(());
    }
    Err(format!(
        "catalog parity broken: missing {missing:?}; extra {foreign:?}{}",
        if no_client_tool {
            "; no client tool was mounted"
        } else {
            ""
        }
    ))
}

/// Every mode and the unfiltered catalog.
fn compare_all(shared: &Catalog, session: &Catalog, client_prefix: Option<&str>, plan_has_client: bool) {
    compare(&names(shared), &names(session), client_prefix).unwrap();
    for mode in PermissionMode::ALL {
        let prefix = match mode {
            PermissionMode::Plan if !plan_has_client => None,
            _ => client_prefix,
        };
        compare(&names_in(shared, mode), &names_in(session, mode), prefix)
            .unwrap_or_else(|e| panic!("mode {mode}: {e}"));
    }
}

fn advertises_tool_search(engine: &Engine) -> bool {
    turn_specs(
        engine.catalog(),
        PermissionMode::Default,
        &BTreeSet::new(),
        engine.config().disclosure,
    )
    .iter()
    .any(|spec| spec.name() == TOOL_SEARCH_NAME)
}

#[tokio::test]
async fn the_fully_loaded_build_has_every_required_family() {
    let loaded = fully_loaded().await;
    let built = &loaded.built;
    let listed = built.tools(PermissionMode::Default);
    for (family, required) in REQUIRED {
        for name in *required {
            let entry = listed
                .iter()
                .find(|t| t.name == *name)
                .unwrap_or_else(|| panic!("{name} ({family}) is missing from the shared catalog"));
            assert_eq!(entry.family, *family, "{name}");
        }
    }
    assert!(advertises_tool_search(built.shared_engine()));
    let private = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    assert!(advertises_tool_search(private.engine()));
    assert!(
        listed
            .iter()
            .any(|t| t.name == TOOL_SEARCH_NAME && t.family == Family::Meta)
    );

    // The global servers as hosts see them: snapshots, live reads, no reconnect.
    let global = built.global_mcp();
    assert_eq!(global.resources().len(), 1);
    let contents = global
        .read_resource("globe", "globe://readme", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(contents.len(), 1);
    let generation = global.pinned_tools().generation();
    assert!(!global.refresh().await, "nothing changed");
    assert_eq!(global.pinned_tools().generation(), generation);
    private.close().await.unwrap();
    built.close().await.unwrap();
}

#[tokio::test]
async fn a_private_engine_without_client_servers_has_exactly_the_shared_names() {
    let loaded = fully_loaded().await;
    let built = &loaded.built;
    let private = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    assert!(private.is_private());
    assert!(!Arc::ptr_eq(private.engine(), built.shared_engine()));
    assert_eq!(names(built.shared_catalog()), names(private.engine().catalog()));
    compare_all(built.shared_catalog(), private.engine().catalog(), None, false);

    // `create` without client servers is the shared engine itself.
    let shared = built.factory().create(SessionRequest::default()).await.unwrap();
    assert!(!shared.is_private());
    assert!(Arc::ptr_eq(shared.engine(), built.shared_engine()));
    shared.close().await.unwrap();
    private.close().await.unwrap();
    built.close().await.unwrap();
}

#[tokio::test]
async fn a_client_server_adds_only_its_own_tools_in_every_mode() {
    let loaded = fully_loaded().await;
    let built = &loaded.built;
    let session = built
        .factory()
        .create(SessionRequest::new(vec![client_spec("cli", &loaded.cli.url)]))
        .await
        .unwrap();
    let catalog = session.engine().catalog();
    let shared = names(built.shared_catalog());
    let extra: Vec<String> = names(catalog)
        .into_iter()
        .filter(|n| !shared.contains(n))
        .collect();
    assert_eq!(extra, ["mcp__cli__echo", "mcp__cli__ping"]);
    assert_eq!(session.client_tool_names(), ["mcp__cli__echo", "mcp__cli__ping"]);
    compare_all(built.shared_catalog(), catalog, Some("mcp__cli__"), true);
    let families: Vec<Family> = session
        .tools(PermissionMode::Default)
        .into_iter()
        .filter(|t| t.name.starts_with("mcp__cli__"))
        .map(|t| t.family)
        .collect();
    assert_eq!(families, [Family::McpClient, Family::McpClient]);
    session.close().await.unwrap();
    built.close().await.unwrap();
}

/// A read-only test tool answering its own name.
struct Named(&'static str);

#[async_trait]
impl Tool for Named {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.0, "A test tool.")
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _: &CancellationToken,
        call: &ToolCall,
        _: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(call.id().clone(), self.0))
    }
}

#[tokio::test]
async fn the_comparison_catches_a_tool_registered_outside_assembly() {
    let loaded = fully_loaded().await;
    let built = &loaded.built;
    let private = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();

    let mut tampered = (**built.shared_catalog()).clone();
    // A tool registered outside `assemble_catalog`.
    tampered.register(Arc::new(Named("Sneaky"))).unwrap();
    let error = compare(&names(&tampered), &names(private.engine().catalog()), None).unwrap_err();
    assert!(error.contains("missing [\"Sneaky\"]"), "{error}");
    let error = compare(&names(private.engine().catalog()), &names(&tampered), None).unwrap_err();
    assert!(error.contains("extra [\"Sneaky\"]"), "{error}");
    let error = compare(
        &names(private.engine().catalog()),
        &names(&tampered),
        Some("mcp__cli__"),
    )
    .unwrap_err();
    assert!(error.contains("Sneaky"), "{error}");
    // And a client server that mounted nothing is caught too.
    let same = names(private.engine().catalog());
    assert!(compare(&same, &same, Some("mcp__cli__")).is_err());
    private.close().await.unwrap();
    built.close().await.unwrap();
}

#[tokio::test]
async fn without_global_mcp_or_shell_parity_still_holds() {
    let scratch = Scratch::new();
    let built = build(config(&scratch)).await.unwrap();
    let session = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    let listed = names(session.engine().catalog());
    assert!(listed.contains(&"Read".to_owned()));
    assert!(!listed.iter().any(|n| n.starts_with("mcp__")));
    compare_all(built.shared_catalog(), session.engine().catalog(), None, false);
    session.close().await.unwrap();
    built.close().await.unwrap();

    let mut cfg = config(&scratch);
    cfg.shell = None;
    let built = build(cfg).await.unwrap();
    let session = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    assert!(built.shared_catalog().lookup("Shell").is_none());
    assert!(session.engine().catalog().lookup("Shell").is_none());
    assert!(built.shared_engine().catalog().lookup("Read").is_some());
    compare_all(built.shared_catalog(), session.engine().catalog(), None, false);
    session.close().await.unwrap();
    built.close().await.unwrap();
}

#[tokio::test]
async fn an_extra_tool_keeps_its_name_against_a_global_mcp_tool_with_one_warn() {
    let scratch = Scratch::new();
    let globe = McpFixture::start(FixtureSpec::tools("global:", &["echo", "ping"])).await;
    let mut cfg = config(&scratch);
    cfg.mcp.servers = vec![http_server("globe", &globe.url)];
    cfg.extra_tools = ExtraTools::new().with(Arc::new(Named("mcp__globe__echo")));
    let built = build(cfg).await.unwrap();
    let report = built.report();
    let skipped: Vec<(&str, Family)> = report
        .skipped
        .iter()
        .map(|s| (s.name.as_str(), s.family))
        .collect();
    assert_eq!(skipped, [("mcp__globe__echo", Family::McpGlobal)]);
    let warns: Vec<&str> = report
        .diagnostics
        .iter()
        .filter(|d| d.level == engine_ports::Level::Warn)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        warns,
        [
            "server-global MCP tool(s) skipped because their names are already registered (the earlier tools are kept): mcp__globe__echo"
        ]
    );
    let listed = built.tools(PermissionMode::Default);
    let echo = listed.iter().find(|t| t.name == "mcp__globe__echo").unwrap();
    assert_eq!(echo.family, Family::Core);
    assert!(
        listed
            .iter()
            .any(|t| t.name == "mcp__globe__ping" && t.family == Family::McpGlobal)
    );
    // Every session's catalog has the same winner.
    let session = built
        .factory()
        .create_private(SessionRequest::default())
        .await
        .unwrap();
    compare_all(built.shared_catalog(), session.engine().catalog(), None, false);
    session.close().await.unwrap();
    built.close().await.unwrap();
}

#[test]
fn family_order_is_the_seed_sequence() {
    assert_eq!(
        FAMILY_ORDER,
        [
            Family::Core,
            Family::McpGlobal,
            Family::McpResource,
            Family::McpClient,
            Family::Delegation,
            Family::Memory,
            Family::Skill,
            Family::Meta,
        ]
    );
}

fn child_spec(access: ChildAccess, tools: Option<&[&str]>, extra: Vec<Arc<dyn Tool>>) -> ChildSpec {
    ChildSpec {
        access,
        tools: tools.map(|names| names.iter().map(|n| (*n).to_owned()).collect()),
        extra_tools: extra,
        workspace: None,
        model: None,
        system_prompt: None,
        limits: Limits::default(),
        purpose: RequestPurpose::Subagent,
        policy: Arc::new(DefaultPolicy::new(false, Approve::ReadOnly)),
        interactive: false,
    }
}

#[tokio::test]
async fn child_catalogs_are_the_shared_catalog_narrowed_by_their_profile_plus_their_own_tools() {
    let loaded = fully_loaded().await;
    let built = &loaded.built;
    let shared = built.shared_catalog();
    let families = &built.report().tools;
    let family_of = |name: &str| families.iter().find(|t| t.name == name).map(|t| t.family);
    // Never in a child: the delegation family, SkillDraft (ToolSearch is the
    // engine's, and child engines have none).
    let never: BTreeSet<String> = names(shared)
        .into_iter()
        .filter(|name| family_of(name) == Some(Family::Delegation) || name == "SkillDraft")
        .collect();
    assert_eq!(
        never.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "InspectMember",
            "InspectSubagent",
            "Parallel",
            "SkillDraft",
            "Subagent",
            "SubagentStatus",
            "Team"
        ]
    );
    let allowed: Vec<String> = names(shared).into_iter().filter(|n| !never.contains(n)).collect();

    for access in [
        ChildAccess::ReadOnly,
        ChildAccess::ReadWrite,
        ChildAccess::WorkspaceCopy,
    ] {
        let spec = child_spec(access, None, vec![Arc::new(Named("ChildOnly"))]);
        let assembled = assemble_catalog(
            built.assets(),
            CatalogInputs {
                child: Some(&spec),
                ..CatalogInputs::default()
            },
        );
        assert!(
            assembled.conflicts.is_empty() && assembled.skipped.is_empty(),
            "{access:?}"
        );
        let child = &assembled.catalog;
        assert_eq!(assembled.families.get("ChildOnly"), Some(&Family::Delegation));
        let inherited: Vec<String> = names(child).into_iter().filter(|n| n != "ChildOnly").collect();
        let foreign: Vec<&String> = inherited.iter().filter(|n| !allowed.contains(n)).collect();
        assert!(foreign.is_empty(), "{access:?}: {foreign:?}");
        assert!(child.lookup(TOOL_SEARCH_NAME).is_none());
        let mutating: Vec<String> = inherited
            .iter()
            .filter(|n| !child.lookup(n).unwrap().read_only())
            .cloned()
            .collect();
        match access {
            ChildAccess::ReadOnly => assert!(mutating.is_empty(), "{mutating:?}"),
            // The whole non-delegation catalog.
            ChildAccess::ReadWrite => assert_eq!(inherited, allowed),
            // Mutating tools only where they act on the copy: the core tools.
            ChildAccess::WorkspaceCopy => assert_eq!(mutating, ["Edit", "Shell", "Write"]),
        }
        // In plan mode every child sees only read-only tools, as the parent does.
        for name in child.available_names(PermissionMode::Plan) {
            assert!(child.lookup(name).unwrap().read_only(), "{name}");
        }
    }
    // A named agent's tool list narrows further; its own tools always come.
    let spec = child_spec(
        ChildAccess::ReadWrite,
        Some(&["Read", "Write", "Subagent", "mcp__globe__echo"]),
        vec![Arc::new(Named("ChildOnly"))],
    );
    let assembled = assemble_catalog(
        built.assets(),
        CatalogInputs {
            child: Some(&spec),
            ..CatalogInputs::default()
        },
    );
    assert_eq!(
        names(&assembled.catalog),
        ["ChildOnly", "Read", "Write", "mcp__globe__echo"]
    );
    built.close().await.unwrap();
}
