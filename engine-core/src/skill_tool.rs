//! The `Skill` tool: activates a skill (instructions plus asset inventory) or returns
//! one textual asset, through a [`SkillSource`] and never a path.

use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    SkillAsset, SkillMeta, SkillSource, SkillSourceError, ToolCall, ToolResult, ToolSpec,
    truncate_with_ellipsis, valid_skill_asset_name,
};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::environment::Environment;
use crate::output_cap::{OutputCap, floor_char_boundary};
use crate::skill_inventory::{one_line, write_inventory};
use crate::tool::{Tool, ToolError};

/// The tool name.
pub const SKILL_TOOL_NAME: &str = "Skill";

/// The catalog family of `Skill` and `SkillDraft` (for `mecated tools --json`).
pub const SKILL_TOOL_FAMILY: &str = "skill";

/// Longest line of the skill listing in the description, in bytes.
pub const SKILL_LISTING_LINE_CAP: usize = 800;

/// Longest error message that embeds a source error, in bytes (before the marker).
pub const SOURCE_ERROR_CAP: usize = 1_000;

/// The fixed start of the description; its last line introduces the list.
const PREAMBLE: &str = "\
Activates a skill: a named set of instructions for a particular kind of task.
Call with {name} to activate a skill: the result is its instructions plus its bundled assets, listed by logical name.
Call with {name, asset} to get one textual asset, using a logical name exactly as the activation listed it.
Assets are reachable only through this tool.
Available skills:";

/// The `Skill` tool. Read-only (parallel, available in plan mode), not disclosable.
///
/// It holds an `Arc<dyn SkillSource>` and the sorted meta list taken at
/// construction; its description is built once and is byte-identical on every turn,
/// in every session and across restarts with the same skills. Every failure is a
/// model-visible error result; `execute` never returns a harness error. Activation
/// never reads asset contents; an asset read checks name, inventory, unknown asset
/// and advertised size before its single read.
pub struct SkillTool {
    source: Arc<dyn SkillSource>,
    metas: Vec<SkillMeta>,
    spec: ToolSpec,
    hint: String,
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    asset: Option<String>,
}

impl SkillTool {
    /// A tool over `source` listing `metas` (sorted by name and de-duplicated here,
    /// first of a name kept).
    pub fn new(source: Arc<dyn SkillSource>, metas: Vec<SkillMeta>) -> Self {
        let mut metas = metas;
        metas.sort_by(|a, b| a.name.cmp(&b.name));
        metas.dedup_by(|later, earlier| later.name == earlier.name);
        let spec = ToolSpec::new(SKILL_TOOL_NAME, describe(&metas)).with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The skill to use, exactly as listed."
                },
                "asset": {
                    "type": "string",
                    "description": "Optional: one logical asset name, exactly as the activation listed it, to get that textual asset instead of activating."
                }
            },
            "required": ["name"]
        }));
        let hint = if metas.is_empty() {
            "No skills are configured.".to_owned()
        } else {
            let names: Vec<&str> = metas.iter().map(|m| m.name.as_str()).collect();
            format!("Available skills: {}.", names.join(", "))
        };
        Self {
            source,
            metas,
            spec,
            hint,
        }
    }

    /// A tool over `source` with the skills it lists now.
    ///
    /// # Errors
    /// The listing's error.
    pub async fn from_source(source: Arc<dyn SkillSource>) -> Result<Self, SkillSourceError> {
        let metas = source.list_skills().await?;
        Ok(Self::new(source, metas))
    }

    /// The description (built once).
    pub fn description(&self) -> &str {
        self.spec.description()
    }

    /// The skills it lists, sorted by name.
    pub fn metas(&self) -> &[SkillMeta] {
        &self.metas
    }

    fn find(&self, name: &str) -> Option<&SkillMeta> {
        self.metas
            .binary_search_by(|m| m.name.as_str().cmp(name))
            .ok()
            .map(|index| &self.metas[index])
    }

    async fn activate(&self, meta: &SkillMeta, cap: OutputCap) -> Result<String, String> {
        let name = meta.name.as_str();
        let body = self
            .source
            .skill_body(name)
            .await
            .map_err(|e| embed(&format!("loading skill {name:?} failed"), &e, cap))?;
        let assets = self.inventory(name, true, cap).await?;
        let wanted = 64 + meta.compatibility.as_ref().map_or(0, String::len) + body.len() + 80 * assets.len();
        let mut out = String::with_capacity(wanted.min(cap.max_bytes() + 64));
        out.push_str("Skill: ");
        out.push_str(name);
        if let Some(compatibility) = &meta.compatibility {
            out.push_str("\nCompatibility: ");
            out.push_str(compatibility);
        }
        if !meta.allowed_tools.is_empty() {
            out.push_str("\nExpected tools: ");
            for (index, tool) in meta.allowed_tools.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                out.push_str(if tool == "Bash" { "Shell" } else { tool });
            }
            out.push_str(
                " (advisory: the skill expects to use these tools; nothing is granted, and every call still follows the normal permission rules)",
            );
        }
        if !assets.is_empty() {
            out.push('\n');
            write_inventory(&mut out, &assets);
        }
        out.push_str("\n\n");
        out.push_str(&body);
        Ok(cap.truncate_owned(out))
    }

    /// The skill's assets, every name checked. With `missing_is_empty`, a
    /// skill-not-found from the listing means no assets.
    async fn inventory(
        &self,
        name: &str,
        missing_is_empty: bool,
        cap: OutputCap,
    ) -> Result<Vec<SkillAsset>, String> {
        let assets = match self.source.list_skill_assets(name).await {
            Ok(assets) => assets,
            Err(error) if missing_is_empty && error.is_skill_not_found() => Vec::new(),
            Err(error) => {
                return Err(embed(
                    &format!("listing the assets of skill {name:?} failed"),
                    &error,
                    cap,
                ));
            }
        };
        if assets.iter().any(|a| !valid_skill_asset_name(&a.name)) {
            return Err(format!(
                "the skill source returned an invalid logical asset name for skill {name:?}"
            ));
        }
        Ok(assets)
    }

    async fn read_asset(&self, name: &str, asset: &str, cap: OutputCap) -> Result<String, String> {
        if !valid_skill_asset_name(asset) {
            return Err(format!(
                "invalid logical asset name {:?}: use a name exactly as the activation of skill {name:?} listed it",
                truncate_with_ellipsis(asset, 200)
            ));
        }
        let assets = self.inventory(name, true, cap).await?;
        let Some(entry) = assets.iter().find(|a| a.name == asset) else {
            return Err(format!(
                "unknown asset {asset:?} of skill {name:?}: activate the skill (call with only `name`) to see its asset names"
            ));
        };
        let header = format!("Skill: {name}, asset: {asset}\n\n");
        let limit = cap.max_bytes().saturating_sub(header.len());
        if limit == 0 {
            return Err(format!(
                "asset {asset:?} of skill {name:?} cannot fit in the {}-byte output cap",
                cap.max_bytes()
            ));
        }
        if entry.size > limit as u64 {
            return Err(format!(
                "asset {asset:?} of skill {name:?} is too large: {} bytes, over the {limit}-byte limit for one asset",
                entry.size
            ));
        }
        let bytes = self.source.read_skill_asset(name, asset).await.map_err(|e| {
            embed(
                &format!("reading asset {asset:?} of skill {name:?} failed"),
                &e,
                cap,
            )
        })?;
        if bytes.len() > limit {
            return Err(format!(
                "asset {asset:?} of skill {name:?} is too large: {} bytes, over the {limit}-byte limit for one asset; no content returned",
                bytes.len()
            ));
        }
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(format!(
                "asset {asset:?} of skill {name:?} is not valid UTF-8: only textual assets can be read"
            ));
        };
        if text.contains('\0') {
            return Err(format!(
                "asset {asset:?} of skill {name:?} contains NUL bytes: it is not a textual asset"
            ));
        }
        let mut out = header;
        out.push_str(&text);
        Ok(out)
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let cap = env.output_cap();
        let args: Args = match call.parse_args() {
            Ok(args) => args,
            Err(error) => return Ok(error.into_result(call)),
        };
        let fail = |message: String| Ok(ToolResult::error(call.id().clone(), cap.truncate_owned(message)));
        let name = args.name.as_deref().map(str::trim).unwrap_or_default();
        if name.is_empty() {
            return fail(format!("`name` is required. {}", self.hint));
        }
        let Some(meta) = self.find(name) else {
            return fail(format!("unknown skill {name:?}. {}", self.hint));
        };
        let outcome = match args.asset.as_deref() {
            Some(asset) if !asset.is_empty() => self.read_asset(&meta.name, asset, cap).await,
            _ => self.activate(meta, cap).await,
        };
        match outcome {
            Ok(text) => Ok(ToolResult::text(call.id().clone(), text)),
            Err(message) => fail(message),
        }
    }
}

/// The description: the preamble, then `\n- <name>: <description>` per skill (each
/// line on one line and capped), or one line saying none are configured.
fn describe(metas: &[SkillMeta]) -> String {
    let mut out = String::with_capacity(PREAMBLE.len() + metas.len() * 96);
    out.push_str(PREAMBLE);
    if metas.is_empty() {
        out.push_str("\nNo skills are configured.");
    }
    for meta in metas {
        let line = one_line(&format!("- {}: {}", meta.name, meta.description));
        out.push('\n');
        out.push_str(&truncate_with_ellipsis(&line, SKILL_LISTING_LINE_CAP));
    }
    out
}

/// `<what failed>: <error>`, cut to [`SOURCE_ERROR_CAP`] bytes with the D10 marker
/// appended when cut.
pub(crate) fn embed(what: &str, error: &SkillSourceError, cap: OutputCap) -> String {
    let message = format!("{what}: {error}");
    if message.len() <= SOURCE_ERROR_CAP {
        return message;
    }
    let mut out = floor_char_boundary(&message, SOURCE_ERROR_CAP).to_owned();
    out.push_str(&cap.marker());
    out
}
