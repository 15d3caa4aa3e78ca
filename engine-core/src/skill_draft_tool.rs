//! The `SkillDraft` tool: the model proposes a skill; a [`SkillDrafter`] stores it in
//! a quarantine, inactive until an operator promotes it.

use std::fmt::Write as _;
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{SkillDraftRequest, SkillDrafter, ToolCall, ToolResult, ToolSpec};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::environment::Environment;
use crate::tool::{Tool, ToolError};

/// The tool name.
pub const SKILL_DRAFT_TOOL_NAME: &str = "SkillDraft";

/// The `SkillDraft` tool. Mutating: it runs serially, is hidden in plan mode (D1) and
/// goes through the permission policy. It cannot exist without a drafter; register it
/// only when a quarantine is configured (`--skills-draft-dir`), even with no skills.
/// Bad arguments and every draft error are model-visible error results; a success
/// names the relative location and says the draft is not active this session.
pub struct SkillDraftTool {
    drafter: Arc<dyn SkillDrafter>,
    spec: ToolSpec,
}

#[derive(Deserialize)]
struct Args {
    name: String,
    description: String,
    body: String,
}

impl SkillDraftTool {
    /// A tool writing through `drafter`.
    pub fn new(drafter: Arc<dyn SkillDrafter>) -> Self {
        let spec = ToolSpec::new(
            SKILL_DRAFT_TOOL_NAME,
            "Proposes a new skill: reusable, procedural instructions for a recurring kind of task. \
             The draft is stored for operator review and is not active in this session; an operator \
             must promote it before it can be used. Give a lowercase name (letters, digits, `-`, `_`), \
             a one-paragraph description of when to use it, and the instructions as the body.",
        )
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "Skill name matching ^[a-z0-9][a-z0-9_-]{0,63}$, e.g. deploy-to-staging."
                },
                "description": {
                    "type": "string",
                    "description": "When to use the skill, in one paragraph (at most 800 bytes are kept)."
                },
                "body": {
                    "type": "string",
                    "description": "The instructions, as Markdown."
                }
            },
            "required": ["name", "description", "body"]
        }));
        Self { drafter, spec }
    }
}

#[async_trait]
impl Tool for SkillDraftTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let args: Args = match call.parse_args() {
            Ok(args) => args,
            Err(error) => return Ok(error.into_result(call)),
        };
        let request = SkillDraftRequest {
            name: args.name,
            description: args.description,
            body: args.body,
        };
        match self.drafter.draft(request).await {
            Ok(receipt) => {
                let name = receipt.location.split('/').next().unwrap_or_default();
                let mut text = format!(
                    "Drafted skill {name:?} at {} in the quarantine. The draft is not active this session: \
                     it becomes available only after an operator promotes it.",
                    receipt.location
                );
                for warning in &receipt.warnings {
                    let _ = write!(text, "\nNote: {warning}");
                }
                Ok(ToolResult::text(call.id().clone(), text))
            }
            Err(error) => Ok(ToolResult::error(call.id().clone(), error.to_string())),
        }
    }
}
