//! [`ChildEngines`]: the seam through which delegation tools get child engines, and
//! what they ask for ([`ChildSpec`]).

use std::path::PathBuf;
use std::sync::Arc;

use engine_ports::{PermissionPolicy, RequestPurpose, WorkspaceForker};

use crate::engine::{Engine, EngineError, Limits};
use crate::tool::Tool;

/// Most turns a child runs unless its call or its agent asks for fewer.
pub const CHILD_MAX_TURNS: u64 = 100;

/// Most tool calls a child makes unless its call asks for fewer.
pub const CHILD_MAX_TOOL_CALLS: u64 = 500;

/// What a child may use of the parent's catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChildAccess {
    /// The parent's read-only tools, on the parent's workspace.
    ReadOnly,
    /// The parent's whole non-delegation catalog, on the parent's workspace.
    ReadWrite,
    /// On a private copy of the workspace: the parent's read-only tools and the
    /// workspace-confined core tools (which then change the copy); mutating tools
    /// that act outside the workspace (MCP servers, memory) are left out, so a child
    /// on a copy never changes anything beyond it.
    WorkspaceCopy,
}

/// Everything a child engine is built from, besides what every engine of the
/// process shares (the model provider, the store, the clock).
#[derive(Clone)]
pub struct ChildSpec {
    /// Which of the parent's tools the child gets.
    pub access: ChildAccess,
    /// A named agent's tool list: only these names (after `access`), when given.
    pub tools: Option<Vec<String>>,
    /// Tools of this child alone (`SubmitResult`, a team's coordination tools),
    /// registered whatever `access` and `tools` say.
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// The child's workspace copy; `None` works on the parent's workspace.
    pub workspace: Option<PathBuf>,
    /// The provider model for the child; `None` keeps the parent's.
    pub model: Option<String>,
    /// The child's system prompt; `None` gives the default child prompt.
    pub system_prompt: Option<String>,
    /// The child's run limits.
    pub limits: Limits,
    /// What its requests are ([`RequestPurpose::Subagent`], …).
    pub purpose: RequestPurpose,
    /// Decides the child's calls ([`ChildPolicy`](crate::ChildPolicy) over the
    /// parent's policy).
    pub policy: Arc<dyn PermissionPolicy>,
    /// Whether the child's asks reach an operator (through the parent's run).
    pub interactive: bool,
}

impl std::fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSpec")
            .field("access", &self.access)
            .field("tools", &self.tools)
            .field(
                "extra_tools",
                &self
                    .extra_tools
                    .iter()
                    .map(|tool| tool.spec().name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("workspace", &self.workspace)
            .field("model", &self.model)
            .field("limits", &self.limits)
            .field("purpose", &self.purpose)
            .field("interactive", &self.interactive)
            .finish_non_exhaustive()
    }
}

/// A named agent definition (a markdown file with frontmatter): a reusable child
/// configuration a `Subagent` call picks with `agent`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentDefinition {
    /// Its name (what `agent` names).
    pub name: String,
    /// What it is for (listed to the model).
    pub description: String,
    /// The tools it may use (names of the parent's catalog); `None` for every tool
    /// its access allows.
    pub tools: Option<Vec<String>>,
    /// Its provider model, unless the call names one.
    pub model: Option<String>,
    /// Its turn limit (a call may only lower it).
    pub max_turns: Option<u64>,
    /// Its system prompt (the file's body).
    pub system_prompt: String,
}

/// Operator settings of the delegation families.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelegationSettings {
    /// `--subagent-model`: the model of subagents that neither their call nor their
    /// agent gives one (and of `Parallel` branches and team members).
    pub subagent_model: Option<String>,
    /// `--max-team-tokens`: the most tokens (input and output, every member's) one
    /// `Team` may use, checked at round boundaries; 0 is unlimited. A call may only
    /// lower it.
    pub max_team_tokens: u64,
}

/// A child engine that could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// The child's catalog could not be assembled as asked.
    #[error("the child's tool catalog could not be assembled: {0}")]
    Catalog(String),
    /// The child's workspace copy cannot be used.
    #[error("the child's workspace cannot be used: {0}")]
    Workspace(String),
    /// The engine refused its dependencies.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Builds child engines: implemented by the composition root, which assembles each
/// child's catalog through the same registration path as every other catalog.
///
/// # Contract
/// - [`ChildEngines::engine`] returns an engine over a catalog holding only what
///   `spec` allows of the parent's catalog (never a delegation tool, `ToolSearch` or
///   `SkillDraft`) plus `spec.extra_tools`; it shares the parent's session store,
///   event log and recorder; it has no command chain and no child engines of its own
///   (no recursion); its policy is `spec.policy`.
/// - It does no I/O and never blocks.
pub trait ChildEngines: Send + Sync {
    /// A fresh engine for one child.
    ///
    /// # Errors
    /// [`ChildError`] when the catalog, the workspace or the engine cannot be built
    /// as asked.
    fn engine(&self, spec: &ChildSpec) -> Result<Engine, ChildError>;

    /// The named agents, sorted by name.
    fn agents(&self) -> &[AgentDefinition];

    /// The operator's settings.
    fn settings(&self) -> &DelegationSettings;

    /// Where private workspace copies come from (`Parallel` branches, mutating team
    /// members); `None` when the host offers none.
    fn forker(&self) -> Option<Arc<dyn WorkspaceForker>>;
}
