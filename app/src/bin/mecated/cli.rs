//! The command line, as `clap` derive types: subcommands, COMMON, MODEL and the
//! per-subcommand flags, with value parsers whose errors name what is expected.

use std::path::PathBuf;
use std::str::FromStr;

use adapter_llm::ProviderKind;
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use clap::{Args, Parser, Subcommand};
use engine_core::{Approve, Disclosure};
use engine_ports::{Keyword, PermissionMode, SandboxMode};
use sandbox::SandboxFallback;

/// `mecated`: the Mecatl agent harness.
#[derive(Debug, Parser)]
#[command(
    name = "mecated",
    version,
    about = "Mecatl: an agent harness's tool catalog (core tools, MCP servers, skills) with an audit trail",
    long_about = None,
    arg_required_else_help = true,
    subcommand_required = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Build the shared catalog exactly as `run` would and list the tools of a mode.
    Tools(ToolsArgs),
    /// Run one headless session on a prompt.
    Run(RunArgs),
    /// Chat in the terminal: type, watch the answer stream, approve calls with one
    /// key (prompts read line by line and plain text out when stdin is not a
    /// terminal). `mecated` alone on a terminal starts it.
    Chat(ChatArgs),
    /// Serve the Agent Client Protocol (ACP v1) on stdin/stdout for an editor.
    Acp(AcpArgs),
    /// Serve the HTTP + SSE API (loopback by default).
    Serve(ServeArgs),
    /// Ask a running `serve` whether it is alive (GET /healthz) or ready (--ready:
    /// GET /readyz): exit 0 on 200, 1 otherwise. For container health checks, where
    /// there is no curl.
    Healthcheck(HealthcheckArgs),
    /// List skills, or promote a reviewed skill draft.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// See and prune what was remembered: project memory, or the user model with --user.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Run the offline demo: a scripted session on a temporary workspace.
    Demo(DemoArgs),
    /// Operator policy: what the settings files decide.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// MCP: log in and out of remote servers (OAuth), list them, serve the catalog.
    #[command(subcommand)]
    Mcp(McpCommand),
}

/// `policy` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Print how a call like `Shell(rm -rf build)` would be decided, and by which rule.
    Check(PolicyCheckArgs),
}

/// `policy check` flags.
#[derive(Debug, Args)]
pub(crate) struct PolicyCheckArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// The mode the call is decided in.
    #[arg(long, value_name = "MODE", default_value = "default", value_parser = keyword_parser::<PermissionMode>())]
    pub(crate) mode: PermissionMode,
    /// The approval level when no rule decides (as `run --approve`).
    #[arg(long, value_name = "WHICH", default_value = "read-only", value_parser = keyword_parser::<Approve>())]
    pub(crate) approve: Approve,
    /// The call: `Tool(specifier)` — `Shell(command)`, `Read(path)`, `Write(path)`,
    /// `Edit(path)`, `Subagent(agent)` — or a bare tool name.
    #[arg(value_name = "CALL")]
    pub(crate) call: String,
}

/// `skills` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum SkillsCommand {
    /// List the skills the flags resolve (tiers, trust gate) and their diagnostics.
    List(SkillsListArgs),
    /// Move a reviewed draft from the quarantine into a skill directory.
    Promote(PromoteArgs),
}

/// `memory` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// List the remembered keys, most recently updated first.
    List(MemoryListArgs),
    /// Show one key: its value, description and kept versions.
    Show(MemoryKeyArgs),
    /// Forget one key (a tombstone; past versions stay in the file).
    Forget(MemoryKeyArgs),
}

/// The flags of every `memory` subcommand.
#[derive(Debug, Args)]
pub(crate) struct MemoryScopeArgs {
    /// The workspace whose project memory is meant.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub(crate) workspace: PathBuf,
    /// The PostgreSQL database whose memory scopes are meant (as `--store-url` of
    /// `run`/`serve`; the password from PGPASSWORD, else the URL).
    #[arg(long, value_name = "URL")]
    pub(crate) store_url: Option<String>,
    #[command(flatten)]
    pub(crate) memory: MemoryArgs,
    /// The user model instead of project memory (keys under user/, added when missing).
    #[arg(long)]
    pub(crate) user: bool,
}

/// `memory list` flags.
#[derive(Debug, Args)]
pub(crate) struct MemoryListArgs {
    #[command(flatten)]
    pub(crate) scope: MemoryScopeArgs,
    /// Print one JSON object: {"dir","scope","keys":[{"key","description","version","updated_at"}]}.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `memory show` / `memory forget` flags.
#[derive(Debug, Args)]
pub(crate) struct MemoryKeyArgs {
    #[command(flatten)]
    pub(crate) scope: MemoryScopeArgs,
    /// The key.
    #[arg(value_name = "KEY")]
    pub(crate) key: String,
}

/// `mcp` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Log in to a configured HTTP server that asks for OAuth: opens the browser
    /// ($BROWSER, else xdg-open) and stores the login for later runs.
    Login(McpLoginArgs),
    /// Forget the stored login of a configured server.
    Logout(McpServerArgs),
    /// List the configured servers with their transport and login state.
    List(McpListArgs),
    /// Offer the catalog (core tools, skills, every configured MCP server) as one
    /// MCP server on stdio, or streamable HTTP with --http-addr; every call is decided
    /// and audited as in `run`, and asks go to the client.
    Serve(McpServeArgs),
    /// Act out the scenario named by MCP_CONFORMANCE_SCENARIO against URL.
    #[command(hide = true)]
    ConformanceClient {
        /// The conformance scenario server, used exactly as given.
        url: String,
    },
}

/// `mcp logout` flags.
#[derive(Debug, Args)]
pub(crate) struct McpServerArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// The server, as named by --mcp-server or an --mcp-config file.
    #[arg(value_name = "NAME")]
    pub(crate) name: String,
}

/// `mcp login` flags.
#[derive(Debug, Args)]
pub(crate) struct McpLoginArgs {
    #[command(flatten)]
    pub(crate) server: McpServerArgs,
    /// Print the authorization URL instead of opening a browser.
    #[arg(long)]
    pub(crate) no_browser: bool,
    /// How long to wait for the browser to come back, in seconds.
    #[arg(long, value_name = "SECS", default_value = "300", value_parser = parse_seconds)]
    pub(crate) login_timeout: u64,
}

/// `mcp list` flags.
#[derive(Debug, Args)]
pub(crate) struct McpListArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// Print one JSON object: {"servers":[{"name","transport","endpoint","auth","expires_at"}]}.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The flags every catalog-building subcommand takes.
#[derive(Debug, Args)]
pub(crate) struct CommonArgs {
    /// The workspace every core tool is confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub(crate) workspace: PathBuf,
    /// Keep sessions, events and the tool-call audit in this directory (JSONL);
    /// without it they live in memory, the audit's newest 10,000 records.
    #[arg(long, value_name = "DIR")]
    pub(crate) store_dir: Option<PathBuf>,
    /// When a run's events and tool-call records are durable: with --store-dir, when
    /// sidecar records reach the device (`always`: synced before each append
    /// returns); with --store-url, `always` commits each append before it returns,
    /// `batched` and `never` commit them in groups, acknowledged at each turn's end.
    #[arg(long, value_name = "POLICY", default_value = "batched",
          value_parser = PossibleValuesParser::new(["always", "batched", "never"]))]
    pub(crate) store_sync: String,
    /// Keep sessions, events and the tool-call audit in this PostgreSQL database
    /// instead, shared by every mecated using it:
    /// `postgres://USER@HOST[:PORT]/DATABASE[?sslmode=require|verify-full&sslrootcert=FILE]`
    /// (the password from PGPASSWORD, else the URL).
    #[arg(long, value_name = "URL", conflicts_with = "store_dir")]
    pub(crate) store_url: Option<String>,
    /// How long a session's run lease lasts in the database without renewal: a
    /// crashed mecated frees its sessions after this (default 15).
    #[arg(long, value_name = "SECS", requires = "store_url", value_parser = parse_seconds)]
    pub(crate) store_lease_ttl: Option<u64>,
    /// The one output cap of tool results, in bytes.
    #[arg(long, value_name = "BYTES", value_parser = parse_output_cap)]
    pub(crate) output_cap: Option<usize>,
    #[arg(long = "mcp-server", value_name = "NAME=URL", help = adapter_mcp::MCP_SERVER_HELP)]
    pub(crate) mcp_server: Vec<String>,
    #[arg(long = "mcp-server-insecure-http", value_name = "NAME", help = adapter_mcp::MCP_SERVER_INSECURE_HTTP_HELP)]
    pub(crate) mcp_server_insecure_http: Vec<String>,
    #[arg(long = "mcp-stdio", value_name = "NAME=COMMAND", help = adapter_mcp::MCP_STDIO_HELP)]
    pub(crate) mcp_stdio: Vec<String>,
    /// Read MCP servers from an `mcpServers` JSON file (the `.mcp.json` format:
    /// stdio `command`/`args`/`env`, or `"type": "http"` with `url`/`headers`;
    /// `${VAR}` expands; VS Code's `{"servers": …}` form too; an HTTP entry's `oauth`
    /// object names the OAuth client). Repeatable; servers from flags come first and
    /// win a name. `<workspace>/.mcp.json` and `<workspace>/.vscode/mcp.json` are read
    /// too with --trust-project.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub(crate) mcp_config: Vec<PathBuf>,
    /// Let the workspace's `.mcp.json` (--trust-project) expand `${VAR}`; repeatable.
    /// A server of that file using any other variable is skipped with a warning
    /// (--mcp-config files expand every variable).
    #[arg(long = "mcp-env", value_name = "VAR")]
    pub(crate) mcp_env: Vec<String>,
    /// Offer ListMcpResources and ReadMcpResource when a server lists resources.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) mcp_resource_tools: bool,
    /// Expand `/mcp__<server>__<prompt>` commands (a prompt replaces the turn's input:
    /// enable only for trusted servers).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) mcp_prompts: bool,
    /// Give up an MCP request after this many seconds without a reply or a progress
    /// notification for it (the server is told; the model sees that the outcome is
    /// unknown).
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_seconds)]
    pub(crate) mcp_timeout: u64,
    /// The longest one MCP request may take, even while the server reports progress.
    #[arg(long, value_name = "SECS", default_value = "600", value_parser = parse_seconds)]
    pub(crate) mcp_max_call: u64,
    /// Bounds connect, initialize and listings of each MCP server at startup.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_seconds)]
    pub(crate) mcp_startup_timeout: u64,
    /// Discover running ToolHive workloads as MCP servers.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) toolhive: bool,
    /// `required`: a run fails when an audit record (a tool-call record or an event)
    /// cannot be written; `best-effort` (default) logs a warning and goes on.
    #[arg(long, value_name = "MODE", default_value = "best-effort",
          value_parser = PossibleValuesParser::new(["best-effort", "required"]))]
    pub(crate) audit: String,
    /// Use this file's text as the base of the system prompt instead of the built-in
    /// instructions (project instructions are still appended).
    #[arg(long, value_name = "FILE")]
    pub(crate) system_prompt_file: Option<PathBuf>,
    /// Leave AGENTS.md / CLAUDE.md (at the workspace root) out of the system prompt.
    #[arg(long)]
    pub(crate) no_project_instructions: bool,
    /// Trust the read-only hints of ToolHive-discovered servers: their read-only tools
    /// then stay in plan mode and `--approve read-only` runs them. Off by default, since
    /// any local process answering on the ToolHive port can claim a tool is read-only.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) trust_discovered: bool,
    /// The ToolHive group to use (default: `default`).
    #[arg(long, value_name = "G")]
    pub(crate) toolhive_group: Option<String>,
    /// The ToolHive API (default: MECATED_TOOLHIVE_URL, else http://127.0.0.1:8080).
    #[arg(long, value_name = "URL")]
    pub(crate) toolhive_url: Option<String>,
    /// A skill directory (repeatable; highest precedence first).
    #[arg(long, value_name = "DIR")]
    pub(crate) skills_dir: Vec<PathBuf>,
    /// Also use the project (trusted workspaces only) and user skill locations.
    #[arg(long)]
    pub(crate) skills_conventional: bool,
    /// Trust the workspace's own skills, commands and settings (.mecatl/, .claude/).
    #[arg(long)]
    pub(crate) trust_project: bool,
    /// A settings file (permission rules, hooks; the shape of Claude Code's
    /// settings.json). Repeatable; read after the managed file, before the
    /// workspace's (with --trust-project) and the user's.
    #[arg(long, value_name = "FILE")]
    pub(crate) settings: Vec<PathBuf>,
    /// Enable SkillDraft: model-proposed skills go to this quarantine (outside the
    /// workspace and every skill directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) skills_draft_dir: Option<PathBuf>,
    /// A directory of slash-command templates (`<name>.md`).
    #[arg(long, value_name = "DIR")]
    pub(crate) commands_dir: Option<PathBuf>,
    /// A directory of named agent definitions for Subagent (`<name>.md`: frontmatter
    /// name, description, tools, model, max_turns; the body is the agent's system
    /// prompt). Repeatable, first wins a name; `<workspace>/.mecatl/agents/` is read
    /// too with --trust-project.
    #[arg(long, value_name = "DIR")]
    pub(crate) agents_dir: Vec<PathBuf>,
    /// Offer Subagent, InspectSubagent and SubagentStatus (child agents the model
    /// delegates tasks to).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) enable_subagents: bool,
    /// Offer Parallel (tasks run as branches on private copies of the workspace).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) enable_parallel: bool,
    /// Offer Team and InspectMember (child agents working on one goal in rounds).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) enable_teams: bool,
    /// The most tokens one Team may use (every member's input and output, checked
    /// between rounds); 0 is unlimited.
    #[arg(long, value_name = "N", default_value = "2000000", value_parser = parse_team_tokens)]
    pub(crate) max_team_tokens: u64,
    /// How many preserved workspace copies (Parallel winners) are kept; the oldest
    /// is removed first.
    #[arg(long, value_name = "N", default_value = "8", value_parser = parse_preserved_cap)]
    pub(crate) fork_preserved_cap: usize,
    /// The most bytes the workspace copies of this process (Parallel branches,
    /// mutating team members, preserved winners) may hold at once; a Parallel call
    /// over it is refused before copying. 0 is no budget.
    #[arg(long, value_name = "BYTES", default_value = "34359738368", value_parser = parse_fork_budget)]
    pub(crate) fork_budget_bytes: u64,
    /// The provider model of subagents whose call and agent name none (default: the
    /// session's model).
    #[arg(long, value_name = "NAME", value_parser = parse_model_name)]
    pub(crate) subagent_model: Option<String>,
    /// The shell of the Shell tool (default /bin/sh).
    #[arg(long, value_name = "PATH", conflicts_with = "no_shell")]
    pub(crate) shell: Option<PathBuf>,
    /// No Shell tool and no command runner.
    #[arg(long)]
    pub(crate) no_shell: bool,
    // The sandbox (Shell; stdio MCP servers named by --mcp-sandbox).
    /// Confine Shell commands: `workspace-write` writes only the workspace (a branch's
    /// copy for Parallel) and a private TMPDIR, `read-only` only the TMPDIR, `off`
    /// runs them with your rights. Default: workspace-write where the kernel has
    /// Landlock (otherwise off, with a warning).
    #[arg(long, value_name = "MODE", value_parser = keyword_parser::<SandboxMode>())]
    pub(crate) sandbox: Option<SandboxMode>,
    /// When the sandbox cannot be set up: `refuse` Shell calls (the default for an
    /// explicit --sandbox) or run them unconfined (`off`; also lets workspace-copy
    /// children run an unconfined Shell).
    #[arg(long, value_name = "WHAT", value_parser = keyword_parser::<SandboxFallback>())]
    pub(crate) sandbox_fallback: Option<SandboxFallback>,
    /// Whether confined commands may open IPv4/IPv6 sockets (Unix sockets always).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) sandbox_network: bool,
    /// A file or directory confined commands may not read (repeatable; must exist).
    #[arg(long, value_name = "PATH")]
    pub(crate) sandbox_deny_read: Vec<PathBuf>,
    /// Run the stdio MCP server NAME in the sandbox too (repeatable): it may write only
    /// the workspace and a private TMPDIR.
    #[arg(long, value_name = "NAME")]
    pub(crate) mcp_sandbox: Vec<String>,
    /// Progressive disclosure of MCP tools until ToolSearch returns their full spec:
    /// `auto` (the default) lists every tool in full until the MCP tools' specs pass
    /// 10% of the model's context window, then defers them; `light` (the bare flag)
    /// lists each with its first description line, `deferred` leaves them out and
    /// names them in ToolSearch's description, `off` lists every tool in full.
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_value = "auto", default_missing_value = "light", value_parser = disclosure_parser())]
    pub(crate) progressive_tools: Disclosure,
    #[command(flatten)]
    pub(crate) memory: MemoryArgs,
}

/// Where project memory and the user model live (COMMON, and `mecated memory`).
#[derive(Debug, Args)]
pub(crate) struct MemoryArgs {
    /// Keep project memory (Remember, Recall, SearchMemory, ForgetMemory) in this
    /// directory, outside the workspace (default: with --store-url the database's scope
    /// `project:<workspace token>`, else `$XDG_STATE_HOME/mecatl/memory/<workspace
    /// token>`, else `~/.local/state/…`).
    #[arg(long, value_name = "DIR", conflicts_with = "no_memory")]
    pub(crate) memory_dir: Option<PathBuf>,
    /// Turn project memory off.
    #[arg(long)]
    pub(crate) no_memory: bool,
    /// Keep the user model (RememberUser, RecallUser, SearchUserModel, ForgetUser) in
    /// this directory (default: with --store-url the database's scope
    /// `user-model:<login name>`, else $XDG_CONFIG_HOME/mecatl/usermodel, else
    /// ~/.config/…).
    #[arg(long, value_name = "DIR", conflicts_with = "no_user_model")]
    pub(crate) user_model_dir: Option<PathBuf>,
    /// Turn the user model off.
    #[arg(long)]
    pub(crate) no_user_model: bool,
}

/// The model flags (exactly one of `--mock`, `--mock-script`, `--provider`).
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// The built-in mock model: one canned text turn.
    #[arg(long)]
    pub(crate) mock: bool,
    /// Replay a scripted conversation (JSON, see the README).
    #[arg(long, value_name = "FILE")]
    pub(crate) mock_script: Option<PathBuf>,
    /// A real model provider (key from OPENAI_API_KEY or ANTHROPIC_API_KEY).
    #[arg(long, value_name = "NAME", value_parser = keyword_parser::<ProviderKind>())]
    pub(crate) provider: Option<ProviderKind>,
    /// The provider's base URL.
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// The model name (with `run --session`: the session's model from now on).
    #[arg(long, value_name = "NAME")]
    pub(crate) model: Option<String>,
    /// More models a session may choose besides the configured one, comma-separated
    /// (ACP's model picker, the HTTP create body's `model`, the chat's `/model`).
    #[arg(long, value_name = "A,B,…", value_delimiter = ',', value_parser = parse_model_name)]
    pub(crate) models: Vec<String>,
    /// A prices file (the built-in table's JSON format, US dollars per million
    /// tokens) whose models replace or extend the built-in table of the cost
    /// estimates.
    #[arg(long, value_name = "FILE")]
    pub(crate) model_prices: Option<PathBuf>,
    /// The model's context window in tokens (default: known for common models, else
    /// 128000). A conversation whose next request would pass 80 % of it is compacted.
    #[arg(long, value_name = "N", value_parser = parse_context_window)]
    pub(crate) context_window: Option<u64>,
    // The output limit, streaming and retries of the model requests.
    /// The most tokens one model answer may take (default: known for common models,
    /// else 8192). A tool call it cuts off is never run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_tokens: Option<u32>,
    /// Streamed answers (`--stream=false`: whole JSON answers, for servers that
    /// cannot stream).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) stream: bool,
    /// The most seconds retries of one model request may take (0: no retries).
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub(crate) model_retry_secs: u64,
    /// Export prompt, tool argument, result and answer text in OpenTelemetry spans
    /// (off: spans carry names, sizes, counts and times only). Exporting is set by the
    /// standard OTEL_* variables.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = bool_parser())]
    pub(crate) otel_content: bool,
}

/// `tools` flags.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// The mode whose tools are listed.
    #[arg(long, value_name = "MODE", default_value = "default", value_parser = keyword_parser::<PermissionMode>())]
    pub(crate) mode: PermissionMode,
    /// Print one JSON object (tools, skipped, mcp_servers, skills, diagnostics).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `run` flags.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The session's mode (default: `default` for a new session; a continued session
    /// keeps its own unless this is given).
    #[arg(long, value_name = "MODE", value_parser = keyword_parser::<PermissionMode>())]
    pub(crate) mode: Option<PermissionMode>,
    /// What the headless run approves.
    #[arg(long, value_name = "WHICH", default_value = "read-only", value_parser = keyword_parser::<Approve>())]
    pub(crate) approve: Approve,
    /// `text` streams the answer to stdout and tool notes to stderr; `jsonl` prints
    /// one event per line.
    #[arg(long, value_name = "FORMAT", default_value = "text",
          value_parser = PossibleValuesParser::new(["text", "jsonl"]))]
    pub(crate) output: String,
    /// Most model turns.
    #[arg(long, value_name = "N", default_value = "100", value_parser = parse_max_turns)]
    pub(crate) max_turns: u64,
    /// Create this session, or continue it when the store already holds it.
    #[arg(long, value_name = "ID")]
    pub(crate) session: Option<String>,
    /// Print the system prompt this session would get (with the same flags) and exit
    /// without calling the model.
    #[arg(long)]
    pub(crate) print_system_prompt: bool,
    /// The prompt (a /command is expanded first).
    #[arg(value_name = "PROMPT", required_unless_present = "print_system_prompt")]
    pub(crate) prompt: Option<String>,
}

/// `chat` flags.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The session's mode (default: `default` for a new session; a continued session
    /// keeps its own unless this is given).
    #[arg(long, value_name = "MODE", value_parser = keyword_parser::<PermissionMode>())]
    pub(crate) mode: Option<PermissionMode>,
    /// What runs without asking: `read-only` tools (the rest are asked), `all`, or
    /// `none` (every call is asked). Settings rules decide first, as in `run`.
    #[arg(long, value_name = "WHICH", default_value = "read-only", value_parser = keyword_parser::<Approve>())]
    pub(crate) approve: Approve,
    /// Most model turns of one prompt.
    #[arg(long, value_name = "N", default_value = "100", value_parser = parse_max_turns)]
    pub(crate) max_turns: u64,
    /// Continue a stored session of this workspace: its ID, or without one pick it
    /// from a list, newest first. Sessions are kept in --store-dir or --store-url,
    /// else in `$XDG_STATE_HOME/mecatl/chat/<workspace token>/sessions`.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub(crate) resume: Option<String>,
}

/// `acp` flags.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// When stdin closes (or on SIGTERM), let running turns finish for up to SECS
    /// seconds before cancelling them (0: cancel at once).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_drain_seconds)]
    pub(crate) drain_secs: u64,
}

/// `serve` flags.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The address to listen on. Off loopback an auth token is required.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8081", value_parser = parse_http_addr)]
    pub(crate) http_addr: std::net::SocketAddr,
    #[command(flatten)]
    pub(crate) guard: HttpGuardArgs,
    /// On SIGTERM or SIGINT, let running turns finish for up to SECS seconds (new
    /// sessions and prompts get 503 with Retry-After, /readyz 503) before cancelling
    /// them (0: cancel at once).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_drain_seconds)]
    pub(crate) drain_secs: u64,
    /// Keep at most N sessions live; past it the least recently used idle one is
    /// unloaded to the store and loaded back at its next prompt. Only sessions that
    /// run, wait for an answer or hold client MCP servers stay (429 when all do).
    #[arg(long, value_name = "N", default_value = "64", value_parser = parse_live_sessions)]
    pub(crate) max_live_sessions: usize,
    /// Unload a session unused for SECS seconds to the store (0: only at the cap).
    #[arg(long, value_name = "SECS", default_value = "600", value_parser = parse_drain_seconds)]
    pub(crate) idle_unload_secs: u64,
}

/// Who may reach an HTTP listener (`serve`, `mcp serve --http-addr`).
#[derive(Debug, Args)]
pub(crate) struct HttpGuardArgs {
    /// The bearer token every request must carry (prefer the MECATED_AUTH_TOKEN
    /// environment variable: a flag shows in the process list).
    #[arg(long, value_name = "TOKEN")]
    pub(crate) auth_token: Option<String>,
    /// Also accept requests whose Host header names H (repeatable; NAME matches any
    /// port, NAME:PORT that port only). Without a token only localhost, 127.0.0.1 (any
    /// 127.x) and the IPv6 loopback ::1 are accepted, which stops DNS-rebinding pages;
    /// with a token any Host is accepted.
    #[arg(long, value_name = "H", value_parser = parse_allowed_host)]
    pub(crate) allowed_host: Vec<app::AllowedHost>,
    /// Accept requests from web pages of ORIGIN, scheme://host or scheme://host:port,
    /// matched exactly (repeatable). Requests carrying any other Origin header are refused; requests
    /// without one (curl, SDKs) are not affected.
    #[arg(long, value_name = "ORIGIN", value_parser = parse_allowed_origin)]
    pub(crate) allowed_origin: Vec<app::AllowedOrigin>,
}

/// `healthcheck` flags.
#[derive(Debug, Args)]
pub(crate) struct HealthcheckArgs {
    /// The address `serve` listens on.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8081", value_parser = parse_http_addr)]
    pub(crate) http_addr: std::net::SocketAddr,
    /// Ask GET /readyz (store reachable, MCP servers settled, not draining) instead
    /// of GET /healthz (alive).
    #[arg(long)]
    pub(crate) ready: bool,
    /// Give up after SECS seconds (connect, send, answer).
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_seconds)]
    pub(crate) timeout_secs: u64,
}

/// `mcp serve` flags.
#[derive(Debug, Args)]
pub(crate) struct McpServeArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// The mode every call is decided in (`plan` offers and runs read-only tools only).
    #[arg(long, value_name = "MODE", default_value = "default", value_parser = keyword_parser::<PermissionMode>())]
    pub(crate) mode: PermissionMode,
    /// What runs without asking: `read-only` tools (the rest are asked through the
    /// client's elicitation, or refused when it cannot ask), `all`, or `none`.
    /// Settings rules decide first, as in `run`.
    #[arg(long, value_name = "WHICH", default_value = "read-only", value_parser = keyword_parser::<Approve>())]
    pub(crate) approve: Approve,
    /// Serve streamable HTTP at IP:PORT (endpoint /mcp) instead of stdio. Off loopback
    /// an auth token is required.
    #[arg(long, value_name = "IP:PORT", value_parser = parse_http_addr)]
    pub(crate) http_addr: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub(crate) guard: HttpGuardArgs,
    /// The longest one tool call may take, asks included, before it is cancelled.
    #[arg(long, value_name = "SECS", default_value = "600", value_parser = parse_seconds)]
    pub(crate) call_timeout: u64,
}

/// `skills list` flags.
#[derive(Debug, Args)]
pub(crate) struct SkillsListArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// Print one JSON object (skills, diagnostics).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `skills promote` flags.
#[derive(Debug, Args)]
pub(crate) struct PromoteArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub(crate) yes: bool,
    /// The draft to promote.
    #[arg(value_name = "NAME")]
    pub(crate) name: String,
}

/// `demo` flags.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Use this workspace instead of a temporary one (the demo files are written
    /// into it).
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
    /// Use this store directory instead of a temporary one.
    #[arg(long, value_name = "DIR")]
    pub(crate) store_dir: Option<PathBuf>,
}

fn bool_parser() -> impl clap::builder::TypedValueParser<Value = bool> {
    PossibleValuesParser::new(["true", "false"]).map(|value| value == "true")
}

fn disclosure_parser() -> impl clap::builder::TypedValueParser<Value = Disclosure> {
    PossibleValuesParser::new(["auto", "off", "light", "deferred"]).map(|value| match value.as_str() {
        "light" => Disclosure::Light,
        "deferred" => Disclosure::Deferred,
        "off" => Disclosure::Off,
        _ => Disclosure::Auto,
    })
}

/// The parser of a keyword flag: exactly the words of `K` (listed in `--help` and in
/// the error), read as `K`.
fn keyword_parser<K>() -> impl clap::builder::TypedValueParser<Value = K>
where
    K: Keyword + FromStr + Clone + Send + Sync,
    K::Err: std::error::Error + Send + Sync,
{
    PossibleValuesParser::new(K::words()).try_map(|value| value.parse::<K>())
}

fn parse_max_turns(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of at least 1".to_owned()),
    }
}

fn parse_context_window(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if (MIN_CONTEXT_WINDOW..=MAX_CONTEXT_WINDOW).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number of tokens from {MIN_CONTEXT_WINDOW} to {MAX_CONTEXT_WINDOW}"
        )),
    }
}

/// The smallest `--context-window`: below it no system prompt and tool list fit.
const MIN_CONTEXT_WINDOW: u64 = 1_000;

/// The largest `--context-window` (no model comes near it).
const MAX_CONTEXT_WINDOW: u64 = 100_000_000;

fn parse_http_addr(value: &str) -> Result<std::net::SocketAddr, String> {
    value
        .parse()
        .map_err(|_| "expected IP:PORT, such as 127.0.0.1:8081 or [::1]:8081".to_owned())
}

fn parse_seconds(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if (1..=86_400).contains(&n) => Ok(n),
        _ => Err("expected a whole number of seconds from 1 to 86400".to_owned()),
    }
}

fn parse_drain_seconds(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if n <= 86_400 => Ok(n),
        _ => Err("expected a whole number of seconds from 0 to 86400".to_owned()),
    }
}

fn parse_live_sessions(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err("expected a whole number of sessions from 1 to 1000000".to_owned()),
    }
}

fn parse_allowed_host(value: &str) -> Result<app::AllowedHost, String> {
    value.parse()
}

fn parse_allowed_origin(value: &str) -> Result<app::AllowedOrigin, String> {
    value.parse()
}

fn parse_team_tokens(value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|_| "expected a whole number of tokens (0 for unlimited)".to_owned())
}

fn parse_preserved_cap(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n <= 1024 => Ok(n),
        _ => Err("expected a whole number from 0 to 1024".to_owned()),
    }
}

fn parse_fork_budget(value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|_| "expected a whole number of bytes (0 for no budget)".to_owned())
}

fn parse_model_name(value: &str) -> Result<String, String> {
    if value.is_empty() || value.len() > 200 || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("expected a model name (no spaces, at most 200 bytes)".to_owned());
    }
    Ok(value.to_owned())
}

fn parse_output_cap(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a number of bytes, at least 1".to_owned()),
    }
}
