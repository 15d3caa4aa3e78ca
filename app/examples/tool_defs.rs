//! Size of the tool definitions one turn sends, with and without progressive tools.
//!
//! ```text
//! tool_defs [--mcp-server NAME=URL]… [--mcp-stdio NAME=COMMAND]… [--workspace DIR]
//! ```
//!
//! Builds the shared catalog twice the way `mecated` does (`app::build` with the same
//! MCP flags; `--progressive-tools` off, then on), takes what the engine advertises on
//! a session's first turn (`engine_core::turn_specs` in `default` mode, nothing
//! hydrated) and serializes it as an OpenAI chat-completions `tools` array
//! (`{"type":"function","function":{"name","description","parameters"}}`, compact
//! JSON, as `adapter-llm` sends it). Prints one JSON object on stdout with the byte
//! counts for the whole catalog and for the MCP servers' part alone (their tools, plus
//! `ToolSearch` when progressive tools are on), and where the progressive bytes go.
//! `scripts/benchmarks.sh` runs it.

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

use adapter_mcp::{McpFlags, parse_mcp_flags};
use adapter_skillfs::HostEnv;
use app::{AppConfig, build};
use engine_core::{TOOL_SEARCH_NAME, turn_specs};
use engine_ports::{PermissionMode, ToolSpec};
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
    for progressive in [false, true] {
        let mut cfg = AppConfig::new(&workspace);
        // No user or project skills leak in from the machine running this.
        cfg.skills.host = Some(HostEnv {
            cwd: workspace.clone(),
            home: None,
            xdg_config_home: None,
        });
        cfg.mcp.servers = servers.clone();
        cfg.progressive_tools = progressive;
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
            progressive,
        );
        let mcp_part = specs
            .iter()
            .filter(|s| s.name().starts_with("mcp__") || s.name() == TOOL_SEARCH_NAME);
        let key = if progressive { "progressive" } else { "full" };
        report[key] = json!({
            "whole": measure(specs.iter()),
            "mcp": measure(mcp_part),
        });
        if progressive {
            // Where the progressive bytes go, and what listing the disclosable tools by
            // name alone (inside ToolSearch's description) would cost instead.
            let search = specs.iter().find(|s| s.name() == TOOL_SEARCH_NAME);
            let search_bytes = search.map_or(0, |s| serde_json::to_vec(&openai_tool(s)).unwrap().len());
            let light: Vec<&ToolSpec> = specs.iter().filter(|s| s.name().starts_with("mcp__")).collect();
            report["progressive"]["detail"] = json!({
                "tool_search_bytes": search_bytes,
                "light_tools": light.len(),
                "light_description_bytes": light.iter().map(|s| s.description().len()).sum::<usize>(),
                "light_schema_bytes": light.iter().map(|s| s.schema().map_or(0, |v| v.to_string().len())).sum::<usize>(),
                "names_only_bytes": search_bytes + light.iter().map(|s| s.name().len() + 2).sum::<usize>(),
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
    println!("{report}");
}
