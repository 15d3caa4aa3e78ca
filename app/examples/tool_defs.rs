//! Size of the tool definitions one turn sends, per disclosure mode.
//!
//! ```text
//! tool_defs [--mcp-server NAME=URL]… [--mcp-stdio NAME=COMMAND]… [--workspace DIR]
//! ```
//!
//! Builds the shared catalog once per `--progressive-tools` mode (off, light, deferred)
//! the way `mecated` does (`app::build` with the same MCP flags), takes what the engine
//! advertises on a session's first turn (`engine_core::turn_specs` in `default` mode,
//! nothing hydrated) and serializes it as an OpenAI chat-completions `tools` array
//! (`{"type":"function","function":{"name","description","parameters"}}`, compact
//! JSON, as `adapter-llm` sends it). Then measures growth: catalogs of N synthetic
//! disclosable tools of one server (N = 10, 50, 100, 200, 1000, 2000), the first turn's
//! `tools` array per mode, and the bytes each added tool costs. Prints one JSON object
//! on stdout: byte counts for the whole catalog and for the MCP servers' part alone
//! (their tools, plus `ToolSearch` when progressive tools are on), where the
//! progressive bytes go, and the growth series. `scripts/benchmarks.sh` runs it.

// A measuring program: it reports on stdout, and a broken setup is fatal.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs
)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use adapter_mcp::{McpFlags, parse_mcp_flags};
use adapter_skillfs::HostEnv;
use app::{AppConfig, build};
use async_trait::async_trait;
use engine_core::{
    Catalog, DEFERRED_NAMES_BUDGET, Disclosure, Environment, TOOL_SEARCH_NAME, Tool, ToolError, turn_specs,
};
use engine_ports::{CancellationToken, PermissionMode, ToolCall, ToolResult, ToolSpec};
use serde_json::{Value, json};

fn usage() -> ! {
    eprintln!("usage: tool_defs [--mcp-server NAME=URL]... [--mcp-stdio NAME=COMMAND]... [--workspace DIR]");
    std::process::exit(2)
}

/// One spec as an OpenAI chat-completions tool (the shape `adapter-llm` sends).
fn openai_tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name(),
            "description": spec.description(),
            "parameters": spec.schema().cloned().unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        }
    })
}

/// Count and compact-JSON bytes of a `tools` array.
fn measure<'a>(specs: impl Iterator<Item = &'a ToolSpec>) -> Value {
    let tools: Vec<Value> = specs.map(openai_tool).collect();
    let bytes = serde_json::to_vec(&Value::Array(tools.clone())).unwrap().len();
    json!({"tools": tools.len(), "bytes": bytes})
}

const MODES: [(&str, Disclosure); 3] = [
    ("off", Disclosure::Off),
    ("light", Disclosure::Light),
    ("deferred", Disclosure::Deferred),
];

/// Catalog sizes of the growth series.
const GROWTH_SIZES: [usize; 6] = [10, 50, 100, 200, 1000, 2000];

/// A synthetic MCP tool of server `synth`: a plausible name, a one-line description,
/// two arguments; Disclosable, as MCP tools are under progressive tools.
struct Synthetic {
    name: String,
    verb: &'static str,
    noun: String,
}

const VERBS: [&str; 10] = [
    "create", "get", "list", "update", "delete", "search", "archive", "export", "assign", "comment",
];
const NOUNS: [&str; 20] = [
    "invoice",
    "payment",
    "customer",
    "order",
    "product",
    "ticket",
    "contact",
    "deal",
    "employee",
    "event",
    "document",
    "folder",
    "deployment",
    "secret",
    "dashboard",
    "report",
    "channel",
    "message",
    "project",
    "task",
];

impl Synthetic {
    /// Tool `i`: verb × noun, with a numbered noun past the 200 combinations.
    fn nth(i: usize) -> Self {
        let verb = VERBS[i % VERBS.len()];
        let base = NOUNS[(i / VERBS.len()) % NOUNS.len()];
        let round = i / (VERBS.len() * NOUNS.len());
        let noun = if round == 0 {
            base.to_owned()
        } else {
            format!("{base}{round}")
        };
        Self {
            name: format!("mcp__synth__{verb}_{noun}"),
            verb,
            noun,
        }
    }
}

#[async_trait]
impl Tool for Synthetic {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            self.name.as_str(),
            format!(
                "Runs {} on a {} record of the workspace and returns the result as JSON.",
                self.verb, self.noun
            ),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": format!("The id of the {}.", self.noun)},
                "fields": {"type": "object", "description": "Fields to set or filter on."}
            },
            "required": ["id"]
        }))
    }
    fn read_only(&self) -> bool {
        true
    }
    fn advertised_spec(&self) -> Option<ToolSpec> {
        Some(ToolSpec::new(
            self.name.as_str(),
            format!("Runs {} on a {} record of the workspace.", self.verb, self.noun),
        ))
    }
    async fn execute(
        &self,
        _: &CancellationToken,
        call: &ToolCall,
        _: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(call.id().clone(), "{}"))
    }
}

/// First-turn bytes per mode for catalogs of N synthetic disclosable tools, and the
/// bytes each added tool costs between consecutive sizes.
fn growth() -> Value {
    let mut rows = Vec::new();
    let mut previous: Option<(usize, [usize; 3])> = None;
    for n in GROWTH_SIZES {
        let mut catalog = Catalog::new();
        for i in 0..n {
            catalog.must_register(Arc::new(Synthetic::nth(i)));
        }
        let mut bytes = [0usize; 3];
        for (slot, (_, disclosure)) in MODES.iter().enumerate() {
            let specs = turn_specs(&catalog, PermissionMode::Default, &BTreeSet::new(), *disclosure);
            bytes[slot] = measure(specs.iter())["bytes"].as_u64().unwrap() as usize;
        }
        let search = turn_specs(
            &catalog,
            PermissionMode::Default,
            &BTreeSet::new(),
            Disclosure::Deferred,
        );
        let per_server = search
            .iter()
            .find(|s| s.name() == TOOL_SEARCH_NAME)
            .is_some_and(|s| s.description().contains("too many to name"));
        let per_tool = previous.map(|(m, before)| {
            let added = (n - m) as f64;
            json!({
                "off": (bytes[0] - before[0]) as f64 / added,
                "light": (bytes[1] - before[1]) as f64 / added,
                "deferred": (bytes[2] as f64 - before[2] as f64) / added,
            })
        });
        rows.push(json!({
            "tools": n,
            "off": bytes[0],
            "light": bytes[1],
            "deferred": bytes[2],
            "deferred_per_server": per_server,
            "per_added_tool": per_tool,
        }));
        previous = Some((n, bytes));
    }
    json!({"names_budget": DEFERRED_NAMES_BUDGET, "series": rows})
}

fn main() {
    let mut flags = McpFlags::default();
    let mut workspace = std::env::temp_dir();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--mcp-server" => flags.servers.push(value),
            "--mcp-stdio" => flags.stdio.push(value),
            "--workspace" => workspace = PathBuf::from(value),
            _ => usage(),
        }
    }
    flags.workspace = workspace.clone();
    let servers = parse_mcp_flags(&flags, |_| None).unwrap_or_else(|e| {
        eprintln!("tool_defs: {e}");
        std::process::exit(2)
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut report = json!({
        "format": "OpenAI chat-completions tools array, compact JSON",
        "mode": "default",
    });
    for (key, disclosure) in MODES {
        let mut cfg = AppConfig::new(&workspace);
        // No user or project skills leak in from the machine running this.
        cfg.skills.host = Some(HostEnv {
            cwd: workspace.clone(),
            home: None,
            xdg_config_home: None,
        });
        cfg.mcp.servers = servers.clone();
        cfg.disclosure = disclosure;
        let built = runtime.block_on(build(cfg)).unwrap();
        let failed: Vec<_> = built
            .report()
            .mcp_servers
            .iter()
            .filter(|s| s.error.is_some())
            .map(|s| format!("{}: {:?}", s.name, s.error))
            .collect();
        assert!(failed.is_empty(), "MCP servers failed: {failed:?}");
        let specs = turn_specs(
            built.shared_catalog(),
            PermissionMode::Default,
            &BTreeSet::new(),
            disclosure,
        );
        let mcp_part = specs
            .iter()
            .filter(|s| s.name().starts_with("mcp__") || s.name() == TOOL_SEARCH_NAME);
        report[key] = json!({
            "whole": measure(specs.iter()),
            "mcp": measure(mcp_part),
        });
        if disclosure != Disclosure::Off {
            // Where the progressive bytes go.
            let search = specs.iter().find(|s| s.name() == TOOL_SEARCH_NAME);
            let search_bytes = search.map_or(0, |s| serde_json::to_vec(&openai_tool(s)).unwrap().len());
            let listed: Vec<&ToolSpec> = specs.iter().filter(|s| s.name().starts_with("mcp__")).collect();
            report[key]["detail"] = json!({
                "tool_search_bytes": search_bytes,
                "tool_search_description_bytes": search.map_or(0, |s| s.description().len()),
                "listed_mcp_tools": listed.len(),
                "listed_description_bytes": listed.iter().map(|s| s.description().len()).sum::<usize>(),
                "listed_schema_bytes": listed.iter().map(|s| s.schema().map_or(0, |v| v.to_string().len())).sum::<usize>(),
            });
        }
        report["servers"] = built
            .report()
            .mcp_servers
            .iter()
            .map(|s| json!({"name": s.name, "transport": s.transport, "tools": s.tools}))
            .collect();
        runtime.block_on(built.close()).unwrap();
    }
    report["growth"] = growth();
    println!("{report}");
}
