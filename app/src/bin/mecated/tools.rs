//! `mecated tools`: the real build on the mock model, then the tools of one mode.

use std::process::ExitCode;

use app::build;

use crate::cli::ToolsArgs;
use crate::out;
use crate::to_config::common_config;

/// Builds as `run` would (the catalog does not depend on the model), prints the
/// listing, closes. Exit 0 even when servers failed or tools were skipped; 1 only
/// when the build fails.
pub(crate) async fn tools(args: ToolsArgs) -> ExitCode {
    let cfg = match common_config(&args.common) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    let built = match build(cfg).await {
        Ok(built) => built,
        Err(error) => return out::failure(error),
    };
    if args.json {
        let json = built.report().tools_json(args.mode);
        out::stdout(&serde_json::to_string_pretty(&json).unwrap_or_default());
    } else {
        let tools = built.report().tools_in(args.mode);
        let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for tool in &tools {
            let mark = if tool.read_only { "ro" } else { "  " };
            out::stdout(&format!(
                "{:<width$}  {:<12}  {mark}  {}",
                tool.name,
                tool.family.as_str(),
                out::clip(out::first_line(&tool.description), 120),
            ));
        }
        out::stderr(&format!(
            "note: progressive tools: {}",
            built.report().disclosure.reason
        ));
        if let Some(status) = &built.report().sandbox {
            out::stderr(&format!("note: {}", sandbox_line(status)));
        }
        // What the operator's settings do to whole tools.
        for rule in &built.report().rules {
            let what = match rule.effect {
                engine_ports::RuleEffect::Deny => "hidden from the model",
                _ => "always asked for",
            };
            out::stderr(&format!(
                "note: {} is {what} by the rule {} in {}",
                rule.tool, rule.rule, rule.source
            ));
        }
        // Discovered servers are not the operator's: say where their tools came from.
        for server in &built.report().mcp_servers {
            if server.source.starts_with("toolhive") {
                out::stderr(&format!(
                    "note: MCP server {:?} was discovered through ToolHive ({}); the read-only \
                     hints of discovered servers are trusted only with --trust-discovered",
                    server.name, server.source
                ));
            }
        }
    }
    if let Err(error) = built.close().await {
        out::stderr(&format!("warning: {error}"));
    }
    ExitCode::SUCCESS
}

/// The sandbox in force, as the text listing states it.
fn sandbox_line(status: &engine_ports::SandboxStatus) -> String {
    let network = if status.network {
        "network on"
    } else {
        "network off"
    };
    if status.refused {
        format!(
            "sandbox: {} cannot be set up here; Shell calls are refused",
            status.mode
        )
    } else if status.mode == engine_ports::SandboxMode::Off {
        "sandbox: off (Shell runs with your rights)".to_owned()
    } else {
        format!("sandbox: {} ({network})", status.mode)
    }
}
