//! [`BuildReport`] and the tool listing: what `mecated tools --json` prints and what
//! hosts list per session and mode.

use std::sync::Arc;

use engine_core::{AUTO_SHARE_PERCENT, Catalog, Disclosure, auto_defers, available_in, tool_search_spec_for};
use engine_ports::ToolSpec;
use engine_ports::{Diagnostic, PermissionMode, SandboxStatus, SkillOrigin};
use serde::Serialize;
use serde_json::Value;

use crate::assembly::{FamilyMap, SkippedTool};
use engine_core::host::{Family, ToolEntry};

/// What the build did, as data (D9): the shared catalog's tools, skipped tools, MCP
/// servers, skills and every diagnostic.
#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    /// Every tool of the shared catalog (all modes), sorted by name.
    pub tools: Vec<ToolEntry>,
    /// Tools skipped because their name was taken.
    pub skipped: Vec<SkippedTool>,
    /// Every global MCP server, connected or failed, in server order.
    pub mcp_servers: Vec<McpServerEntry>,
    /// The resolved skills, sorted by name.
    pub skills: Vec<SkillEntry>,
    /// Every diagnostic of the build, in order (each WARN is here).
    pub diagnostics: Vec<Diagnostic>,
    /// The sandbox in force for `Shell` (`None` with `--no-shell`).
    pub sandbox: Option<SandboxStatus>,
    /// Tools a bare rule of the operator's settings hides (`deny`) or always asks for
    /// (`ask`), by tool name.
    pub rules: Vec<ToolRule>,
    /// Progressive disclosure: the mode asked for, the mode in force and why.
    pub disclosure: DisclosureEntry,
    /// The `ToolSearch` spec listed with progressive tools, for the default modes and
    /// for plan mode (`None` when progressive tools are off).
    #[serde(skip)]
    pub tool_search: Option<(ToolSpec, ToolSpec)>,
}

/// A whole tool a settings rule hides from the model or always asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolRule {
    /// The tool.
    pub tool: String,
    /// `deny` (hidden) or `ask`.
    pub effect: engine_ports::RuleEffect,
    /// The rule, verbatim.
    pub rule: String,
    /// Its settings file.
    pub source: String,
}

/// Progressive disclosure as the shared catalog has it (`mecated tools`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DisclosureEntry {
    /// `--progressive-tools`: `auto`, `off`, `light` or `deferred`.
    pub mode: &'static str,
    /// What the shared catalog's turns use now (`auto` resolved): `off`, `light` or
    /// `deferred`.
    pub in_force: &'static str,
    /// How many tools are Disclosable (MCP tools while progressive tools are on).
    pub disclosable_tools: usize,
    /// Their full specs, in estimated tokens.
    pub disclosable_tokens: u64,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Why this mode is in force, in words.
    pub reason: String,
}

impl DisclosureEntry {
    /// The entry for `catalog` under `mode` on an engine with `context_window`.
    pub(crate) fn new(catalog: &Catalog, mode: Disclosure, context_window: u64) -> Self {
        let disclosable_tools = catalog
            .entries()
            .filter(|(_, tool)| tool.advertised_spec().is_some())
            .count();
        let bytes = catalog.disclosable_spec_bytes();
        let disclosable_tokens = bytes.div_ceil(engine_core::BYTES_PER_TOKEN);
        let in_force = mode.resolve(catalog, context_window);
        let share = format!(
            "{disclosable_tools} MCP tool(s) take about {disclosable_tokens} tokens, {} {AUTO_SHARE_PERCENT}% of the {context_window}-token window",
            if auto_defers(bytes, context_window) {
                "over"
            } else {
                "within"
            }
        );
        let reason = match mode {
            Disclosure::Auto if in_force == Disclosure::Deferred => format!("auto: deferred because {share}"),
            Disclosure::Auto => format!("auto: every tool in full because {share}"),
            Disclosure::Off => "off: --progressive-tools=off lists every tool in full".to_owned(),
            Disclosure::Light => {
                "light: --progressive-tools=light lists MCP tools by their first line".to_owned()
            }
            Disclosure::Deferred => {
                "deferred: --progressive-tools=deferred names MCP tools in ToolSearch only".to_owned()
            }
        };
        Self {
            mode: disclosure_word(mode),
            in_force: disclosure_word(in_force),
            disclosable_tools,
            disclosable_tokens,
            context_window,
            reason,
        }
    }
}

/// The flag's word for `mode`.
fn disclosure_word(mode: Disclosure) -> &'static str {
    match mode {
        Disclosure::Auto => "auto",
        Disclosure::Off => "off",
        Disclosure::Light => "light",
        Disclosure::Deferred => "deferred",
    }
}

/// One global MCP server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct McpServerEntry {
    /// The server name.
    pub name: String,
    /// `streamable-http` or `stdio`.
    pub transport: String,
    /// Where it came from: `static` (flags or config) or `toolhive(<group>)`
    /// (discovered: any local process answering on the ToolHive port).
    pub source: String,
    /// `connected`, `dropped`, `closed` or `failed`.
    pub status: String,
    /// Why it failed (redacted), for `failed`.
    pub error: Option<String>,
    /// Tools in its snapshot.
    pub tools: usize,
    /// Resources in its snapshot.
    pub resources: usize,
    /// Prompts in its snapshot.
    pub prompts: usize,
    /// The MCP protocol revision negotiated with it (`None` when it failed).
    pub protocol: Option<String>,
}

/// One resolved skill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkillEntry {
    /// The skill name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its tier.
    pub origin: SkillOrigin,
}

impl BuildReport {
    /// The tools available in `mode`, sorted by name, with `ToolSearch` (family
    /// `meta`) when progressive tools are on.
    pub fn tools_in(&self, mode: PermissionMode) -> Vec<ToolEntry> {
        let mut tools: Vec<ToolEntry> = self
            .tools
            .iter()
            .filter(|t| match mode {
                PermissionMode::Plan => t.read_only,
                PermissionMode::Default | PermissionMode::AcceptEdits => !t.plan_only,
            })
            .cloned()
            .collect();
        if let Some((default, plan)) = &self.tool_search {
            let spec = if mode == PermissionMode::Plan {
                plan
            } else {
                default
            };
            add_tool_search(&mut tools, spec.clone());
        }
        tools
    }

    /// The `mecated tools --json` object for `mode`:
    /// `{"tools","skipped","mcp_servers","skills","diagnostics"}`, and `"sandbox"` (the
    /// mode in force) when there is a Shell.
    pub fn tools_json(&self, mode: PermissionMode) -> Value {
        let mut listing = serde_json::json!({
            "tools": self.tools_in(mode),
            "skipped": self.skipped,
            "mcp_servers": self.mcp_servers,
            "skills": self.skills,
            "diagnostics": self.diagnostics,
            "disclosure": self.disclosure,
        });
        // Only with a Shell: `--no-shell` listings keep their shape.
        if let Some(sandbox) = &self.sandbox {
            listing["sandbox"] = serde_json::json!(sandbox);
        }
        // `rules` only when a settings rule hides or always asks for a whole tool.
        if !self.rules.is_empty() {
            listing["rules"] = serde_json::json!(self.rules);
        }
        listing
    }
}

/// The tools of `catalog` available in `mode`, sorted by name, each with its family
/// from `families`; with progressive tools, `ToolSearch` (family `meta`, with the
/// `ToolSpec` the engine advertises under `disclosure`) too.
pub fn tool_entries(
    catalog: &Catalog,
    families: &FamilyMap,
    mode: PermissionMode,
    disclosure: Disclosure,
) -> Vec<ToolEntry> {
    let mut tools: Vec<ToolEntry> = catalog
        .entries()
        .filter(|(_, tool)| available_in(tool.as_ref(), mode))
        .map(|(name, tool)| {
            let spec = tool.spec();
            ToolEntry {
                name: name.to_owned(),
                family: families.get(name).copied().unwrap_or(Family::Core),
                read_only: tool.read_only(),
                plan_only: tool.plan_only(),
                disclosable: tool.advertised_spec().is_some(),
                description: spec.description().to_owned(),
                schema: spec.schema().cloned().unwrap_or(Value::Null),
            }
        })
        .collect();
    if let Some(spec) = tool_search_spec_for(catalog, mode, disclosure) {
        add_tool_search(&mut tools, spec);
    }
    tools
}

/// Every tool of `catalog`, whatever the mode (the report's listing).
pub(crate) fn all_tool_entries(catalog: &Catalog, families: &Arc<FamilyMap>) -> Vec<ToolEntry> {
    let mut tools = tool_entries(catalog, families, PermissionMode::Default, Disclosure::Off);
    let plan_only = tool_entries(catalog, families, PermissionMode::Plan, Disclosure::Off)
        .into_iter()
        .filter(|t| t.plan_only);
    tools.extend(plan_only);
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

fn add_tool_search(tools: &mut Vec<ToolEntry>, spec: ToolSpec) {
    tools.push(ToolEntry {
        name: spec.name().to_owned(),
        family: Family::Meta,
        read_only: true,
        plan_only: false,
        disclosable: false,
        description: spec.description().to_owned(),
        schema: spec.schema().cloned().unwrap_or(Value::Null),
    });
    tools.sort_by(|a, b| a.name.cmp(&b.name));
}
