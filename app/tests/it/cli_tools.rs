//! `mecated tools`: the real build, listed per mode; `--json` is the
//! overview object, exactly.

use serde_json::{Value, json};

use crate::support::mcp_fixture::{FixtureSpec, FixtureTool, McpFixture};
use crate::support::{Scratch, mecated};

/// The keys of an object, in order.
fn keys(value: &Value) -> Vec<&str> {
    value.as_object().unwrap().keys().map(String::as_str).collect()
}

fn tool<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

#[tokio::test]
async fn tools_json_lists_failed_servers_and_collisions_and_exits_0() {
    // `s` + `_echo` and `s_` + `echo` both give `mcp__s___echo`: the first server wins.
    let s = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::read_only("_echo"), FixtureTool::new("write")],
        prefix: "s:".to_owned(),
        resources: vec![("s://doc".to_owned(), "doc".to_owned(), "text".to_owned())],
    })
    .await;
    let s_ = McpFixture::start(FixtureSpec::tools("s_:", &["echo"])).await;
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let server_s = format!("s={}", s.url);
    let server_s_ = format!("s_={}", s_.url);
    let output = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--json",
            "--workspace",
            &ws,
            "--no-shell",
            "--mcp-server",
            &server_s,
            "--mcp-server",
            "dead=http://127.0.0.1:1/mcp",
            "--mcp-server",
            &server_s_,
            "--no-memory",
            "--no-user-model",
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let listing: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(
        keys(&listing),
        [
            "tools",
            "skipped",
            "mcp_servers",
            "skills",
            "diagnostics",
            "disclosure"
        ]
    );

    let names: Vec<&str> = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Edit",
            "Glob",
            "Grep",
            "InspectMember",
            "InspectSubagent",
            "ListDir",
            "ListMcpResources",
            "Parallel",
            "Read",
            "ReadMcpResource",
            "Subagent",
            "SubagentStatus",
            "Team",
            "Write",
            "mcp__s___echo",
            "mcp__s__write",
        ]
    );
    let echo = tool(&listing, "mcp__s___echo");
    assert_eq!(
        keys(echo),
        [
            "name",
            "family",
            "read_only",
            "plan_only",
            "disclosable",
            "description",
            "schema"
        ]
    );
    assert_eq!(
        echo,
        &json!({
            "name": "mcp__s___echo", "family": "mcp-global", "read_only": true, "plan_only": false,
            // Disclosable under the default `auto`: deferred once MCP specs grow large.
            "disclosable": true, "description": "Fixture tool _echo.",
            "schema": {"type": "object", "properties": {"text": {"type": "string"}, "path": {"type": "string"}}},
        })
    );
    assert_eq!(tool(&listing, "Read")["family"], "core");
    assert_eq!(tool(&listing, "ListMcpResources")["family"], "mcp-resource");
    assert_eq!(tool(&listing, "mcp__s__write")["read_only"], false);

    assert_eq!(
        listing["skipped"].as_array().unwrap().len(),
        1,
        "{}",
        listing["skipped"]
    );
    let skipped = &listing["skipped"][0];
    assert_eq!(keys(skipped), ["name", "family", "reason"]);
    assert_eq!(skipped["name"], "mcp__s___echo");
    assert_eq!(skipped["family"], "mcp-global");
    assert!(
        skipped["reason"].as_str().unwrap().contains("mcp-global"),
        "{skipped}"
    );

    let servers = listing["mcp_servers"].as_array().unwrap();
    let order: Vec<&str> = servers.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(order, ["s", "dead", "s_"]);
    assert_eq!(
        keys(&servers[0]),
        [
            "name",
            "transport",
            "source",
            "status",
            "error",
            "tools",
            "resources",
            "prompts",
            "protocol"
        ]
    );
    // The fixture server speaks the session revisions only, so the newest of those is
    // negotiated (the stateless one is tested against servers offering it in adapter-mcp).
    assert_eq!(
        servers[0],
        json!({"name": "s", "transport": "streamable-http", "source": "static", "status": "connected",
               "error": null, "tools": 2, "resources": 1, "prompts": 0, "protocol": "2025-11-25"})
    );
    assert_eq!(servers[1]["status"], "failed");
    assert_eq!(servers[1]["protocol"], Value::Null);
    assert_eq!(servers[1]["source"], "static");
    assert_eq!(servers[1]["tools"], 0);
    assert!(
        servers[1]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{}",
        servers[1]
    );
    assert_eq!(listing["skills"], json!([]));
    let diagnostics = listing["diagnostics"].as_array().unwrap();
    assert!(diagnostics.iter().all(|d| keys(d) == ["level", "message"]));
    assert!(
        diagnostics
            .iter()
            .any(|d| d["level"] == "warn" && d["message"].as_str().unwrap().contains("\"dead\"")),
        "{diagnostics:?}"
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d["level"] == "warn" && d["message"].as_str().unwrap().contains("mcp__s___echo")),
        "{diagnostics:?}"
    );
}

#[tokio::test]
async fn plan_mode_and_progressive_tools_change_the_listing() {
    let fixture = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::read_only("peek"), FixtureTool::new("poke")],
        prefix: String::new(),
        resources: Vec::new(),
    })
    .await;
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let server = format!("fx={}", fixture.url);
    let output = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--json",
            "--workspace",
            &ws,
            "--mode",
            "plan",
            "--progressive-tools",
            "--mcp-server",
            &server,
            "--no-memory",
            "--no-user-model",
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let listing: Value = serde_json::from_str(&output.stdout).unwrap();
    let entries: Vec<(&str, &str, bool, bool)> = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["family"].as_str().unwrap(),
                t["read_only"].as_bool().unwrap(),
                t["disclosable"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("Glob", "core", true, false),
            ("Grep", "core", true, false),
            ("InspectMember", "delegation", true, false),
            ("InspectSubagent", "delegation", true, false),
            ("ListDir", "core", true, false),
            ("Read", "core", true, false),
            ("Subagent", "delegation", true, false),
            ("SubagentStatus", "delegation", true, false),
            ("ToolSearch", "meta", true, false),
            ("mcp__fx__peek", "mcp-global", true, true),
        ]
    );
    assert!(
        tool(&listing, "mcp__fx__peek")["schema"].is_object(),
        "the full spec is shown"
    );

    let text = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--workspace",
            &ws,
            "--mode",
            "plan",
            "--toolhive=false",
            "--no-memory",
            "--no-user-model",
            "--enable-subagents=false",
            "--enable-parallel=false",
            "--enable-teams=false",
        ],
        &[],
    )
    .await;
    assert_eq!(text.code, 0, "{text:?}");
    // Only the read-only core tools, each with its family, access and first line.
    insta::assert_snapshot!("plan_mode_lists_only_the_read_only_core_tools", text.stdout);
}

/// `ToolSearch`'s description in `mecated tools --json` with these extra flags.
async fn tool_search_description(fixture: &McpFixture, flags: &[&str]) -> Option<String> {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let server = format!("fx={}", fixture.url);
    let mut args = vec![
        "tools",
        "--json",
        "--workspace",
        &ws,
        "--toolhive=false",
        "--mcp-server",
        &server,
    ];
    args.extend_from_slice(flags);
    let output = mecated(scratch.dir.path(), &args, &[]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let listing: Value = serde_json::from_str(&output.stdout).unwrap();
    let search = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ToolSearch")?;
    Some(search["description"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn progressive_tools_takes_light_or_deferred_and_the_listing_shows_what_the_engine_advertises() {
    let fixture = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::read_only("peek"), FixtureTool::new("poke")],
        prefix: String::new(),
        resources: Vec::new(),
    })
    .await;
    assert_eq!(
        tool_search_description(&fixture, &[]).await,
        None,
        "auto by default, and two small tools stay in full"
    );
    assert_eq!(
        tool_search_description(&fixture, &["--progressive-tools=off"]).await,
        None
    );
    let bare = tool_search_description(&fixture, &["--progressive-tools"])
        .await
        .unwrap();
    let light = tool_search_description(&fixture, &["--progressive-tools=light"])
        .await
        .unwrap();
    assert_eq!(bare, light, "the bare flag means light");
    assert!(!light.contains("Deferred tools"), "{light}");
    let deferred = tool_search_description(&fixture, &["--progressive-tools=deferred"])
        .await
        .unwrap();
    assert!(deferred.contains("\n- mcp__fx__*: peek, poke"), "{deferred}");
}

#[tokio::test]
async fn a_failing_build_exits_1() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let inside = scratch.ws().join("drafts").display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &["tools", "--workspace", &ws, "--skills-draft-dir", &inside],
        &[],
    )
    .await;
    assert_eq!(output.code, 1, "{output:?}");
    assert!(output.stderr.contains("--skills-draft-dir"), "{}", output.stderr);
    assert!(
        output.stderr.contains("inside the workspace"),
        "{}",
        output.stderr
    );
}

#[tokio::test]
async fn a_minimal_listing_is_exactly_the_core_tools_and_the_narration() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "tools",
            "--json",
            "--workspace",
            &ws,
            "--no-shell",
            "--enable-subagents=false",
            "--enable-parallel=false",
            "--enable-teams=false",
            "--mode",
            "plan",
            "--toolhive=false",
            "--no-memory",
            "--no-user-model",
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let listing: Value = serde_json::from_str(&output.stdout).unwrap();
    let mut core: Vec<Value> =
        adapter_fstools::core_tools(&adapter_fstools::CoreToolsOptions::new().with_shell(false))
            .iter()
            .filter(|tool| tool.read_only())
            .map(|tool| {
                let spec = tool.spec();
                json!({
                    "name": spec.name(), "family": "core", "read_only": true, "plan_only": false,
                    "disclosable": false, "description": spec.description(), "schema": spec.schema().unwrap(),
                })
            })
            .collect();
    core.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let info = |message: &str| json!({"level": "info", "message": message});
    let expected = json!({
        "tools": core,
        "skipped": [],
        "mcp_servers": [],
        "skills": [],
        "diagnostics": [
            info("MCP disabled: no MCP server from --mcp-server, --mcp-stdio or ToolHive"),
            info("core tools enabled: 6 tools, Shell disabled by --no-shell"),
            info("server-global MCP tools disabled: no MCP server is connected or none lists a tool"),
            info("MCP resource tools disabled: no connected MCP server lists a resource"),
            info("client MCP tools: mounted per session only"),
            info("Subagent, InspectSubagent and SubagentStatus disabled: --enable-subagents=false"),
            info("Parallel disabled: --enable-parallel=false"),
            info("Team and InspectMember disabled: --enable-teams=false"),
            info("memory tools disabled: --no-memory"),
            info("user-model tools disabled: --no-user-model"),
            info("Skill tool disabled: no skill resolved"),
            info("SkillDraft tool disabled: no --skills-draft-dir"),
            info("MCP prompt commands disabled: no connected MCP server lists a prompt"),
        ],
        "disclosure": {
            "mode": "auto", "in_force": "off", "disclosable_tools": 0, "disclosable_tokens": 0,
            "context_window": 128_000,
            "reason": "auto: every tool in full because 0 MCP tool(s) take about 0 tokens, within 10% of the 128000-token window",
        },
    });
    assert_eq!(listing, expected);
    assert_eq!(
        listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["Glob", "Grep", "ListDir", "Read"]
    );
}

#[tokio::test]
async fn tools_says_which_disclosure_mode_is_in_force_and_why() {
    let fixture = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::read_only("peek"), FixtureTool::new("poke")],
        prefix: String::new(),
        resources: Vec::new(),
    })
    .await;
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let server = format!("fx={}", fixture.url);
    let base = [
        "tools",
        "--workspace",
        &ws,
        "--toolhive=false",
        "--mcp-server",
        &server,
    ];
    let text = mecated(scratch.dir.path(), &base, &[]).await;
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stderr
            .contains("note: progressive tools: auto: every tool in full because 2 MCP tool(s) take about"),
        "{}",
        text.stderr
    );
    assert!(text.stderr.contains("within 10% of the"), "{}", text.stderr);

    let mut json_args = base.to_vec();
    json_args.extend(["--json", "--progressive-tools=deferred"]);
    let json = mecated(scratch.dir.path(), &json_args, &[]).await;
    assert_eq!(json.code, 0, "{json:?}");
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["disclosure"]["mode"], "deferred");
    assert_eq!(report["disclosure"]["in_force"], "deferred");
    assert_eq!(report["disclosure"]["disclosable_tools"], 2);
}
