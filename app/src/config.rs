//! [`AppConfig`]: what [`build`](crate::build) composes, as plain data (no CLI needed).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use adapter_jsonlstore::SyncPolicy;
use adapter_llm::{ApiKey, MockScript, ModelPrices, ProviderKind};
use adapter_mcp::{RequestLimits, ServerConfig, ToolhiveOptions};
use adapter_pgstore::{PgStoreOptions, StoreUrl};

use crate::memory::MemoryConfig;
use crate::system_prompt::SystemPromptConfig;
use adapter_skillfs::{FsSourceConfig, HostEnv, ProjectTrust, SkillsOptions};
use engine_core::{Approve, DEFAULT_OUTPUT_CAP, Disclosure, Limits, Tool};
use engine_ports::{Diagnostic, PermissionMode};
use sandbox::SandboxSettings;

/// The default live per-session engine cap of the
/// [`SessionEngineFactory`](crate::SessionEngineFactory).
pub const DEFAULT_MAX_SESSIONS: usize = 64;

/// The default `--max-team-tokens`: a team stops at its next round boundary once its
/// members used this many tokens (input and output).
pub const DEFAULT_MAX_TEAM_TOKENS: u64 = 2_000_000;

/// The default `--max-turns`.
pub const DEFAULT_MAX_TURNS: u64 = 100;

/// Everything a [`build`](crate::build) needs, transport-agnostic.
///
/// The command line maps its flags onto this value after validating them (exit 2 on a
/// bad flag); tests construct it directly. `build` receives well-formed values and only
/// checks what needs the file system or the environment (the workspace exists, the
/// provider has a key, the draft directory lies apart).
#[derive(Clone, Debug)]
pub struct AppConfig {
    /// `--workspace`: the root every core tool is confined to (canonicalized by
    /// `build`).
    pub workspace: PathBuf,
    /// Where sessions, events and the tool-call audit go.
    pub store: StoreConfig,
    /// The model.
    pub model: ModelConfig,
    /// The shell of the `Shell` tool (`--shell`, default `/bin/sh`); `None` for
    /// `--no-shell` (no runner, no `Shell` tool).
    pub shell: Option<PathBuf>,
    /// Server-global MCP servers and the MCP switches.
    pub mcp: McpConfig,
    /// Skills, their trust gate and the draft quarantine.
    pub skills: SkillsConfig,
    /// `--commands-dir`.
    pub commands_dir: Option<PathBuf>,
    /// `--progressive-tools[=auto|light|deferred|off]`: how disclosable (MCP) tools
    /// are advertised (default `Auto`: deferred once their specs pass 10% of the
    /// context window); any mode but `Off` gives every engine a `ToolSearch` (D3).
    pub disclosure: Disclosure,
    /// `--output-cap`: the one output cap (D10), in bytes.
    pub output_cap: usize,
    /// Run limits (`--max-turns`).
    pub limits: Limits,
    /// How the engines decide permissions and which mode new sessions get.
    pub engine: EngineSettings,
    /// Most live per-session engines the factory keeps (over it: `TooManySessions`).
    pub max_sessions: usize,
    /// How the sessions' system prompt is made.
    pub system_prompt: SystemPromptConfig,
    /// Tools an embedder adds at build time: registered right after the core tools,
    /// in family `core`, in every session's catalog.
    pub extra_tools: ExtraTools,
    /// `--context-window`: the model's context window in tokens; `None` takes the
    /// engine's table of common models (128,000 for a model it does not know).
    pub context_window: Option<u64>,
    /// `--max-tokens`: the output limit of each request in tokens; `None` takes the
    /// engine's table of common models (8,192 for a model it does not know).
    pub max_tokens: Option<u32>,
    /// `--models`: more models a session may choose besides the configured one (ACP's
    /// model picker, the HTTP create body's `model`), in order.
    pub models: Vec<String>,
    /// What models cost (the built-in table, with `--model-prices` over it): the
    /// cost estimates of runs and sessions.
    pub prices: ModelPrices,
    /// Where project memory and the user model live (both off by default; the command
    /// line turns them on at their default directories).
    pub memory: MemoryConfig,
    /// The delegation families (Subagent, Parallel, Team).
    pub delegation: DelegationConfig,
    /// How `Shell` and opted-in stdio MCP servers are confined.
    pub sandbox: SandboxConfig,
    /// Operator policy: settings files with permission rules and hooks.
    pub policy: PolicyConfig,
    /// OpenTelemetry export and the metrics page (off by default).
    pub telemetry: TelemetryConfig,
}

/// What the process exports and keeps of its telemetry (`OTEL_*`, `--otel-content`,
/// `serve`'s `/metrics`).
#[derive(Clone, Debug, Default)]
pub struct TelemetryConfig {
    /// What the standard `OTEL_*` variables ask for (default: nothing).
    pub env: adapter_telemetry::TelemetryEnv,
    /// Keep the metrics for `GET /metrics` (`serve`), even without an exporter.
    pub prometheus: bool,
    /// `--otel-content`: export prompt, argument, result and answer text.
    pub content: bool,
}

/// `--sandbox`, `--sandbox-fallback`, `--sandbox-network`, `--sandbox-deny-read` and
/// `--mcp-sandbox`: how commands the harness starts are confined. The default is the
/// implicit `workspace-write` with the network on (unconfined, with one warning, where
/// the kernel has no Landlock); children on a workspace copy get a confined `Shell` or
/// none (`SandboxSettings::for_workspace_copy`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The mode, fallback, network switch and denied paths.
    pub settings: SandboxSettings,
    /// `--mcp-sandbox NAME`: the static stdio MCP servers run in the sandbox.
    pub mcp_servers: Vec<String>,
}

/// Where the operator's settings files are read from (`adapter-policy`). The
/// workspace's own files are read only with `--trust-project` (`skills.trust`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyConfig {
    /// The managed file (default `/etc/mecatl/managed-settings.json`, or
    /// `MECATL_MANAGED_SETTINGS`): read when it exists; nothing else loosens it.
    pub managed: PathBuf,
    /// `--settings FILE` (repeatable): each must exist.
    pub files: Vec<PathBuf>,
    /// The user's file: `None` reads none (the default here; the command line sets
    /// `$XDG_CONFIG_HOME/mecatl/settings.json`, else `~/.config/mecatl/settings.json`).
    pub user: Option<PathBuf>,
    /// Save an "allow always" answer as an `allow` rule of the workspace's
    /// `.mecatl/settings.local.json` (the command line sets it with
    /// `--trust-project`, the only way that file is read back).
    pub persist_approvals: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            managed: adapter_policy::managed_settings_path(),
            files: Vec::new(),
            user: None,
            persist_approvals: false,
        }
    }
}

/// The delegation families' settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelegationConfig {
    /// `--enable-subagents` (default true): `Subagent`, `InspectSubagent` and
    /// `SubagentStatus` in every catalog.
    pub subagents: bool,
    /// `--enable-parallel` (default true): `Parallel` in every catalog.
    pub parallel: bool,
    /// `--enable-teams` (default true): `Team` and `InspectMember` in every catalog.
    pub teams: bool,
    /// `--max-team-tokens` (default [`DEFAULT_MAX_TEAM_TOKENS`]): the most tokens one
    /// `Team` may use, checked at round boundaries; 0 is unlimited.
    pub max_team_tokens: u64,
    /// `--fork-preserved-cap` (default 8): how many preserved workspace copies (the
    /// winners of `Parallel` calls) are kept; the oldest is removed first.
    pub fork_preserved_cap: usize,
    /// Where workspace copies go (default: [`FsForker::default_base`](adapter_fstools::FsForker::default_base),
    /// `$XDG_RUNTIME_DIR/mecatl-forks` or `<temp dir>/mecatl-forks-<uid>`); it must be
    /// this user's own with no group or other access, or copies are refused.
    pub fork_dir: Option<PathBuf>,
    /// `--fork-budget-bytes` (default [`DEFAULT_FORK_BUDGET_BYTES`](adapter_fstools::DEFAULT_FORK_BUDGET_BYTES),
    /// 32 GiB): the most bytes the process's workspace copies (live and preserved)
    /// hold at once; a `Parallel` call whose copies would go over is refused before
    /// copying. 0 is no budget.
    pub fork_budget_bytes: u64,
    /// `--subagent-model`: the model of subagents that neither their call nor their
    /// named agent gives one (default: the session's model).
    pub subagent_model: Option<String>,
    /// `--agents-dir`, in flag order: named agent definitions (`<name>.md`). The
    /// workspace's `.mecatl/agents/` is read too, only with `--trust-project`.
    pub agents_dirs: Vec<PathBuf>,
}

impl Default for DelegationConfig {
    fn default() -> Self {
        Self {
            subagents: true,
            parallel: true,
            teams: true,
            max_team_tokens: DEFAULT_MAX_TEAM_TOKENS,
            fork_preserved_cap: adapter_fstools::DEFAULT_PRESERVED_CAP,
            fork_dir: None,
            fork_budget_bytes: adapter_fstools::DEFAULT_FORK_BUDGET_BYTES,
            subagent_model: None,
            agents_dirs: Vec::new(),
        }
    }
}

impl AppConfig {
    /// A configuration with the documented defaults: the workspace `workspace`, the
    /// in-memory store, the `--mock` model, `/bin/sh`, no MCP server and no ToolHive,
    /// no skills, resource tools and MCP prompts on, the default output cap,
    /// `--max-turns 100`, headless `--approve read-only`, memory and user model off.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            store: StoreConfig::Memory,
            model: ModelConfig::Mock,
            shell: Some(PathBuf::from(adapter_fstools::DEFAULT_SHELL)),
            mcp: McpConfig::default(),
            skills: SkillsConfig::default(),
            commands_dir: None,
            disclosure: Disclosure::Auto,
            output_cap: DEFAULT_OUTPUT_CAP,
            limits: Limits {
                max_turns: DEFAULT_MAX_TURNS,
                ..Limits::default()
            },
            engine: EngineSettings::default(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            system_prompt: SystemPromptConfig::default(),
            extra_tools: ExtraTools::default(),
            context_window: None,
            max_tokens: None,
            models: Vec::new(),
            prices: ModelPrices::builtin(),
            policy: PolicyConfig::default(),
            memory: MemoryConfig::default(),
            delegation: DelegationConfig::default(),
            sandbox: SandboxConfig::default(),
            telemetry: TelemetryConfig::default(),
        }
    }

    /// The skill tiers and trust gate of this configuration for the workspace
    /// `workspace` (the canonical root when building).
    pub fn skills_options(&self, workspace: &Path) -> SkillsOptions {
        SkillsOptions {
            dirs: self.skills.dirs.clone(),
            conventional: self.skills.conventional,
            workspace: workspace.to_path_buf(),
            trust: self.skills.trust,
        }
    }

    /// How skill files are read: bounded by the output cap.
    pub fn skill_source_config(&self) -> FsSourceConfig {
        FsSourceConfig {
            output_cap: self.output_cap,
            ..FsSourceConfig::default()
        }
    }
}

/// An embedder's own tools ([`AppConfig::extra_tools`]), in registration order.
///
/// The catalog assembly registers them in family `core` right after the built-in core
/// tools. Names are first-wins: an extra tool whose name is already taken (a built-in
/// tool or an earlier extra tool), or that is reserved (`ToolSearch`), is skipped with
/// one WARN; a later built-in family that meets an extra tool's name is skipped the
/// same way, and MCP tools lose to it as they lose to any core tool.
#[derive(Clone, Default)]
pub struct ExtraTools(Vec<Arc<dyn Tool>>);

impl ExtraTools {
    /// No extra tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool` after the ones already given.
    #[must_use]
    pub fn with(mut self, tool: Arc<dyn Tool>) -> Self {
        self.0.push(tool);
        self
    }

    /// Adds `tool` after the ones already given.
    pub fn push(&mut self, tool: Arc<dyn Tool>) {
        self.0.push(tool);
    }

    /// The tools, in registration order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.0
    }
}

impl From<Vec<Arc<dyn Tool>>> for ExtraTools {
    fn from(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self(tools)
    }
}

impl std::fmt::Debug for ExtraTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|tool| tool.spec().name().to_owned()))
            .finish()
    }
}

/// Where the store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreConfig {
    /// `--store-dir DIR`: the JSONL store (`DIR/sid-v1/…`).
    Dir {
        /// The store root.
        path: PathBuf,
        /// `--store-sync`.
        sync: SyncPolicy,
    },
    /// `--store-url postgres://…`: the PostgreSQL store, shared by every process
    /// (replica) using the same database.
    Postgres {
        /// The database (its `Debug` and `Display` never show the password).
        url: Box<StoreUrl>,
        /// Time limits and the run-lease TTL (`--store-lease-ttl`).
        options: PgStoreOptions,
    },
    /// Neither: sessions live in memory and die with the process.
    Memory,
}

/// The model behind every engine.
#[derive(Clone, Debug)]
pub enum ModelConfig {
    /// `--mock`: one canned text turn saying no real model is configured.
    Mock,
    /// `--mock-script FILE`, already parsed and validated.
    MockScript(MockScript),
    /// `--provider`.
    Provider {
        /// `openai-chat` or `anthropic`.
        kind: ProviderKind,
        /// `--base-url`.
        base_url: Option<String>,
        /// `--model`.
        model: Option<String>,
        /// The key from `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`; `None` when the
        /// variable is unset, which `build` refuses naming the variable.
        api_key: Option<ApiKey>,
        /// `--stream` (default true): streamed answers, else whole JSON answers.
        streaming: bool,
        /// `--model-retry-secs`: the time retries of one model request may take.
        retry_budget: Duration,
    },
}

/// Server-global MCP servers (the global manager) and the MCP switches.
#[derive(Clone, Debug)]
pub struct McpConfig {
    /// `--mcp-server` then `--mcp-stdio` entries, in flag order (already validated by
    /// `adapter_mcp::parse_mcp_flags`).
    pub servers: Vec<ServerConfig>,
    /// ToolHive discovery (`--toolhive`, on by default in the CLI); `None` is off.
    pub toolhive: Option<ToolhiveOptions>,
    /// `--mcp-resource-tools` (default true).
    pub resource_tools: bool,
    /// `--mcp-prompts` (default true).
    pub prompts: bool,
    /// `--mcp-timeout` and `--mcp-max-call`: how long one request to any MCP
    /// server (global or a session's own) may wait for its reply.
    pub limits: RequestLimits,
    /// `--mcp-startup-timeout`: bounds connect + `initialize` + listings of each
    /// global server at build (client servers keep their own 10 s).
    pub startup_timeout: Duration,
    /// `--trust-discovered`: trust the `readOnlyHint` of ToolHive-discovered servers
    /// (default false: their tools count as mutating).
    pub trust_discovered: bool,
    /// What reading the configuration said (a config-file server skipped because its
    /// name was taken), reported with the build's diagnostics.
    pub notes: Vec<Diagnostic>,
}

/// Default of [`McpConfig::startup_timeout`]: 10 s.
pub const DEFAULT_MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            toolhive: None,
            resource_tools: true,
            prompts: true,
            limits: RequestLimits::default(),
            startup_timeout: DEFAULT_MCP_STARTUP_TIMEOUT,
            trust_discovered: false,
            notes: Vec::new(),
        }
    }
}

/// Skills, the project trust decision and the draft quarantine.
#[derive(Clone, Debug, Default)]
pub struct SkillsConfig {
    /// `--skills-dir`, in flag order.
    pub dirs: Vec<PathBuf>,
    /// `--skills-conventional`.
    pub conventional: bool,
    /// `--trust-project`: gates the project skill and command directories alike.
    pub trust: ProjectTrust,
    /// `--skills-draft-dir`: enables `SkillDraft`; must lie outside the workspace and
    /// apart from every skill directory.
    pub draft_dir: Option<PathBuf>,
    /// The current directory, home and XDG location used to resolve tiers; `None`
    /// reads them from the process.
    pub host: Option<HostEnv>,
}

/// Permission settings and the mode of new sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineSettings {
    /// An operator answers permission asks (ACP, HTTP, the demo); headless runs turn
    /// asks into denials.
    pub interactive: bool,
    /// What a headless run approves (`--approve`, default `read-only`).
    pub approve: Approve,
    /// The mode of sessions created without one (`--mode`, default `default`).
    pub mode: PermissionMode,
    /// `--audit required`: a run fails when an audit record (a `.tools.jsonl` record
    /// or an event) cannot be written; by default (`best-effort`) it logs a WARN and
    /// goes on.
    pub audit_required: bool,
    /// How long a tool's question to the user (an MCP elicitation) waits for its
    /// answer before it is declined (default 300 s).
    pub elicitation_timeout: Duration,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            interactive: false,
            approve: Approve::ReadOnly,
            mode: PermissionMode::Default,
            audit_required: false,
            elicitation_timeout: engine_core::DEFAULT_ELICITATION_TIMEOUT,
        }
    }
}
