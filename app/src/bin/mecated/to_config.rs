//! COMMON and MODEL flags → [`AppConfig`], with the semantic checks `clap` cannot do
//! (each a [`UsageError`] naming the flag, the value and what is expected).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use adapter_jsonlstore::SyncPolicy;
use adapter_llm::{ApiKey, MockScript, ModelPrices};
use adapter_mcp::{
    Authorizer, Expansion, MAX_MCP_CONFIG_BYTES, McpFlags, McpInputs, ServerConfig, TokenStore,
    ToolhiveOptions, TransportKind, is_variable_name, parse_mcp_config, parse_mcp_flags, toolhive_base_url,
};
use adapter_pgstore::{PgStoreOptions, StoreUrl};
use adapter_skillfs::ProjectTrust;
use app::{
    AppConfig, MemoryConfig, MemoryEnv, MemorySetting, ModelConfig, SandboxConfig, StoreConfig,
    project_memory_scope, user_model_scope,
};
use engine_ports::{Diagnostic, Level};
use sandbox::SandboxSettings;

use crate::cli::{CommonArgs, MemoryArgs, ModelArgs};
use crate::input_prompt::TerminalPrompter;
use crate::usage::UsageError;

/// Where memory and the user model live: off, a flag's directory, else the default
/// place: with a PostgreSQL `store`, a scope of that database (named as the default
/// directory is), otherwise the default directory from `env`. Whether a directory
/// lies inside the workspace is the build's check (it needs the resolved workspace).
///
/// # Errors
/// A [`UsageError`] for an empty path, or a path that exists but is not a directory.
pub(crate) fn memory_config(
    args: &MemoryArgs,
    workspace: &Path,
    env: &MemoryEnv,
    store: &StoreConfig,
) -> Result<MemoryConfig, UsageError> {
    let in_database = |scope: String, default: MemorySetting| match store {
        StoreConfig::Postgres { url, options } => MemorySetting::Database {
            url: url.clone(),
            options: *options,
            scope,
        },
        StoreConfig::Dir { .. } | StoreConfig::Memory => default,
    };
    let one = |flag: &str, dir: &Option<PathBuf>, off: bool, default: MemorySetting| {
        if off {
            return Ok(MemorySetting::Off);
        }
        match dir {
            None => Ok(default),
            Some(dir) if dir.as_os_str().is_empty() => {
                Err(UsageError::value(flag, "", "expected a directory path"))
            }
            Some(dir) if dir.exists() && !dir.is_dir() => Err(UsageError::value(
                flag,
                dir.display(),
                "it exists but is not a directory (expected a directory outside the workspace, created when missing)",
            )),
            Some(dir) => Ok(MemorySetting::Dir(dir.clone())),
        }
    };
    Ok(MemoryConfig {
        project: one(
            "--memory-dir",
            &args.memory_dir,
            args.no_memory,
            in_database(project_memory_scope(workspace), env.default_memory_dir(workspace)),
        )?,
        user: one(
            "--user-model-dir",
            &args.user_model_dir,
            args.no_user_model,
            in_database(user_model_scope(env), env.default_user_model_dir()),
        )?,
    })
}

/// `--store-url`, with the password from `PGPASSWORD` when set.
///
/// # Errors
/// A [`UsageError`] naming the flag and the URL without its password.
pub(crate) fn store_url(raw: &str) -> Result<StoreUrl, UsageError> {
    let password = env_var("PGPASSWORD");
    StoreUrl::parse(raw, password.as_deref())
        .map_err(|error| UsageError::value("--store-url", &error.url, &error.reason))
}

/// Where MCP logins live: the user's state directory (`$XDG_STATE_HOME/mecatl/mcp-auth`,
/// else `~/.local/state/mecatl/mcp-auth`), never inside the workspace: without a
/// usable home, or when that directory lies in the workspace, logins are kept in
/// memory only (with a warning for the latter).
pub(crate) fn token_store(workspace: &Path) -> (TokenStore, Option<Diagnostic>) {
    match TokenStore::default_dir(env_var) {
        Some(dir) if dir.starts_with(workspace) => (
            TokenStore::memory(),
            Some(Diagnostic {
                level: Level::Warn,
                message: format!(
                    "MCP logins are not stored: their directory {} lies inside the workspace (set XDG_STATE_HOME elsewhere)",
                    dir.display()
                ),
            }),
        ),
        Some(dir) => (TokenStore::dir(dir), None),
        None => (TokenStore::memory(), None),
    }
}

/// The values of the MCP config files' `${input:ID}`: asked once for the process (the
/// environment, else the terminal), kept in memory only.
static MCP_INPUTS: LazyLock<McpInputs> = LazyLock::new(|| McpInputs::with_prompter(TerminalPrompter));

/// Reads a process environment variable (empty counts as unset for keys).
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The config of the COMMON flags (the model stays `--mock`).
///
/// # Errors
/// A [`UsageError`] for a workspace that is not a directory, a store directory that
/// exists but is not one, a `--store-url` that is not a usable PostgreSQL URL (shown
/// without its password), a bad `--mcp-*` flag.
pub(crate) fn common_config(common: &CommonArgs) -> Result<AppConfig, UsageError> {
    let workspace = existing_dir("--workspace", &common.workspace)?;
    let mut cfg = AppConfig::new(&workspace);

    if let Some(dir) = &common.store_dir {
        if dir.as_os_str().is_empty() {
            return Err(UsageError::value("--store-dir", "", "expected a directory path"));
        }
        if dir.exists() && !dir.is_dir() {
            return Err(UsageError::value(
                "--store-dir",
                dir.display(),
                "it exists but is not a directory (expected a directory, created when missing)",
            ));
        }
        let sync = match common.store_sync.as_str() {
            "always" => SyncPolicy::Always,
            "never" => SyncPolicy::Never,
            _ => SyncPolicy::default(),
        };
        cfg.store = StoreConfig::Dir {
            path: dir.clone(),
            sync,
        };
    }
    if let Some(raw) = &common.store_url {
        let url = store_url(raw)?;
        let mut options = PgStoreOptions {
            group_commits: common.store_sync != "always",
            ..PgStoreOptions::default()
        };
        if let Some(secs) = common.store_lease_ttl {
            options.lease_ttl = Duration::from_secs(secs);
        }
        cfg.store = StoreConfig::Postgres {
            url: Box::new(url),
            options,
        };
    }
    if let Some(cap) = common.output_cap {
        cfg.output_cap = cap;
    }

    let flags = McpFlags {
        servers: common.mcp_server.clone(),
        insecure_http: common.mcp_server_insecure_http.clone(),
        stdio: common.mcp_stdio.clone(),
        workspace: workspace.clone(),
    };
    cfg.mcp.servers = parse_mcp_flags(&flags, env_var).map_err(|e| UsageError::new(e.to_string()))?;
    for name in &common.mcp_env {
        if !is_variable_name(name) {
            return Err(UsageError::value(
                "--mcp-env",
                name,
                "expected the name of an environment variable ([A-Za-z0-9_]+)",
            ));
        }
    }
    // The user's own files expand every variable; the workspace's only those allowed
    // with --mcp-env.
    let mut files: Vec<(PathBuf, String, Expansion<'_>)> = Vec::new();
    for file in &common.mcp_config {
        files.push((file.clone(), read_mcp_config(file)?, Expansion::Any));
    }
    if common.trust_project {
        // The workspace's `.mcp.json`, then VS Code's `.vscode/mcp.json`.
        for project in [workspace.join(".mcp.json"), workspace.join(".vscode/mcp.json")] {
            match adapter_skillfs::read_repository_file(&project) {
                Ok(None) => {}
                Ok(Some(bytes)) => files.push((
                    project.clone(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                    Expansion::Allowed(&common.mcp_env),
                )),
                Err(reason) => {
                    return Err(UsageError::new(format!(
                        "{} (read with --trust-project) cannot be used: {reason}",
                        project.display()
                    )));
                }
            }
        }
    }
    for (file, text, expansion) in &files {
        let parsed = parse_mcp_config(text, file, &workspace, env_var, *expansion, &MCP_INPUTS)
            .map_err(|e| UsageError::new(e.to_string()))?;
        cfg.mcp.notes.extend(
            parsed
                .skipped
                .iter()
                .chain(&parsed.warnings)
                .map(|skipped| Diagnostic {
                    level: Level::Warn,
                    message: skipped.to_string(),
                }),
        );
        let servers = parsed.servers;
        for server in servers {
            let taken = cfg
                .mcp
                .servers
                .iter()
                .find(|s| s.name.eq_ignore_ascii_case(&server.name))
                .map(|s| s.name.clone());
            match taken {
                Some(kept) => cfg.mcp.notes.push(Diagnostic {
                    level: Level::Warn,
                    message: format!(
                        "MCP server {:?} of {} is skipped: {kept:?} is already configured (flags first, then config files in order)",
                        server.name,
                        file.display()
                    ),
                }),
                None => cfg.mcp.servers.push(server),
            }
        }
    }
    // HTTP servers answer a request for OAuth with the user's stored logins.
    let (store, note) = token_store(&workspace);
    cfg.mcp.notes.extend(note);
    cfg.mcp.servers = std::mem::take(&mut cfg.mcp.servers)
        .into_iter()
        .map(|server| server.with_authorization(store.clone(), Authorizer::Stored))
        .collect();
    cfg.mcp.resource_tools = common.mcp_resource_tools;
    cfg.mcp.prompts = common.mcp_prompts;
    if common.mcp_max_call < common.mcp_timeout {
        return Err(UsageError::new(format!(
            "--mcp-max-call {} is shorter than --mcp-timeout {}: the longest call must be at least one timeout",
            common.mcp_max_call, common.mcp_timeout
        )));
    }
    cfg.mcp.limits = adapter_mcp::RequestLimits {
        idle: Duration::from_secs(common.mcp_timeout),
        total: Duration::from_secs(common.mcp_max_call),
    };
    cfg.mcp.startup_timeout = Duration::from_secs(common.mcp_startup_timeout);
    cfg.mcp.trust_discovered = common.trust_discovered;
    cfg.engine.audit_required = common.audit == "required";
    cfg.system_prompt.file = common.system_prompt_file.clone();
    cfg.system_prompt.project_instructions = !common.no_project_instructions;
    cfg.mcp.toolhive = common.toolhive.then(|| ToolhiveOptions {
        base_url: toolhive_base_url(common.toolhive_url.as_deref(), env_var),
        group: common.toolhive_group.clone(),
    });

    cfg.memory = memory_config(&common.memory, &workspace, &MemoryEnv::from_process(), &cfg.store)?;
    cfg.skills.dirs = common.skills_dir.clone();
    cfg.skills.conventional = common.skills_conventional;
    cfg.skills.trust = ProjectTrust::from_flag(common.trust_project);
    // Operator policy: --settings, the user's file, saved approvals when trusted.
    cfg.policy.files.clone_from(&common.settings);
    cfg.policy.user = adapter_policy::user_settings_path();
    cfg.policy.persist_approvals = common.trust_project;
    cfg.skills.draft_dir = common.skills_draft_dir.clone();
    cfg.commands_dir = common.commands_dir.clone();
    for dir in &common.agents_dir {
        if !dir.is_dir() {
            return Err(UsageError::value(
                "--agents-dir",
                dir.display(),
                "it is not a directory (expected a directory of agent definitions)",
            ));
        }
    }
    cfg.delegation.agents_dirs = common.agents_dir.clone();
    cfg.delegation.subagent_model = common.subagent_model.clone();
    cfg.delegation.subagents = common.enable_subagents;
    cfg.delegation.parallel = common.enable_parallel;
    cfg.delegation.teams = common.enable_teams;
    cfg.delegation.max_team_tokens = common.max_team_tokens;
    cfg.delegation.fork_preserved_cap = common.fork_preserved_cap;
    cfg.delegation.fork_budget_bytes = common.fork_budget_bytes;
    cfg.shell = if common.no_shell {
        None
    } else {
        Some(
            common
                .shell
                .clone()
                .unwrap_or_else(|| PathBuf::from(adapter_fstools::DEFAULT_SHELL)),
        )
    };
    cfg.disclosure = common.progressive_tools;
    cfg.sandbox = sandbox_config(common, &cfg.mcp.servers)?;
    Ok(cfg)
}

/// The `--sandbox*` and `--mcp-sandbox` flags: denied paths must exist, and each
/// `--mcp-sandbox` must name a stdio server of the command line or an MCP config file.
fn sandbox_config(common: &CommonArgs, servers: &[ServerConfig]) -> Result<SandboxConfig, UsageError> {
    let mut settings = SandboxSettings::default().with_network(common.sandbox_network);
    if let Some(mode) = common.sandbox {
        settings = settings.with_mode(mode);
    }
    if let Some(fallback) = common.sandbox_fallback {
        settings = settings.with_fallback(fallback);
    }
    let denied = common
        .sandbox_deny_read
        .iter()
        .map(|path| sandbox::canonical_deny_path(path).map_err(UsageError::new))
        .collect::<Result<Vec<_>, _>>()?;
    settings = settings.with_deny_read(denied);
    for name in &common.mcp_sandbox {
        let stdio = servers
            .iter()
            .any(|server| &server.name == name && server.transport_kind() == TransportKind::Stdio);
        if !stdio {
            return Err(UsageError::value(
                "--mcp-sandbox",
                name,
                "expected the name of a stdio MCP server (--mcp-stdio or an --mcp-config file)",
            ));
        }
    }
    Ok(SandboxConfig {
        settings,
        mcp_servers: common.mcp_sandbox.clone(),
    })
}

/// The config of `acp` and `serve`: [`common_config`] with the model flags
/// ([`apply_model`]) and an interactive engine (asks go to the client).
///
/// # Errors
/// [`common_config`]'s and [`apply_model`]'s.
pub(crate) fn interactive_config(common: &CommonArgs, model: &ModelArgs) -> Result<AppConfig, UsageError> {
    let mut cfg = common_config(common)?;
    apply_model(&mut cfg, model)?;
    cfg.engine.interactive = true;
    Ok(cfg)
}

/// The model flags of `run`, `acp`, `serve` and `chat` applied to `cfg`: the model
/// ([`model_config`]), `--context-window` and `--max-tokens`; and the telemetry of
/// their runs (the `OTEL_*` variables, `--otel-content`).
///
/// # Errors
/// [`model_config`]'s.
pub(crate) fn apply_model(cfg: &mut AppConfig, model: &ModelArgs) -> Result<(), UsageError> {
    cfg.model = model_config(model)?;
    cfg.context_window = model.context_window;
    cfg.max_tokens = model.max_tokens;
    cfg.models.clone_from(&model.models);
    cfg.telemetry.env = telemetry_env()?;
    cfg.telemetry.content = model.otel_content;
    if let Some(file) = &model.model_prices {
        let prices = ModelPrices::from_file(file)
            .map_err(|error| UsageError::new(format!("--model-prices: {error}")))?;
        cfg.prices = ModelPrices::builtin().overridden_by(prices);
    }
    Ok(())
}

/// What the standard `OTEL_*` variables ask for; a value that cannot be used is a
/// usage error naming the variable and what is expected.
fn telemetry_env() -> Result<adapter_telemetry::TelemetryEnv, UsageError> {
    adapter_telemetry::TelemetryEnv::from_lookup(env_var)
        .map_err(|error| UsageError::value(error.variable, &error.value, &error.expected))
}

/// The model of `run` (and later `acp`, `serve`): exactly one of `--mock`,
/// `--mock-script FILE`, `--provider NAME`.
///
/// # Errors
/// A [`UsageError`] for none or several of them, `--base-url`/`--model` without
/// `--provider`, an unset key variable, a bad script (naming the file and turn).
pub(crate) fn model_config(model: &ModelArgs) -> Result<ModelConfig, UsageError> {
    let mut given = Vec::new();
    if model.mock {
        given.push("--mock".to_owned());
    }
    if let Some(file) = &model.mock_script {
        given.push(format!("--mock-script {}", file.display()));
    }
    if let Some(kind) = model.provider {
        given.push(format!("--provider {kind}"));
    }
    if given.len() > 1 {
        return Err(UsageError::new(format!(
            "only one model may be given, but got {}: pass exactly one of --mock, --mock-script FILE, --provider openai-chat|anthropic",
            given.join(" and ")
        )));
    }
    if model.provider.is_none() {
        for (flag, value) in [("--base-url", &model.base_url), ("--model", &model.model)] {
            if let Some(value) = value {
                return Err(UsageError::value(
                    flag,
                    value,
                    "it only applies to a provider: add --provider openai-chat|anthropic",
                ));
            }
        }
    }
    if model.mock {
        return Ok(ModelConfig::Mock);
    }
    if let Some(file) = &model.mock_script {
        return MockScript::from_file(file)
            .map(ModelConfig::MockScript)
            .map_err(|error| UsageError::value("--mock-script", file.display(), error));
    }
    let Some(kind) = model.provider else {
        return Err(UsageError::new(
            "a model is required: pass exactly one of --mock, --mock-script FILE, --provider openai-chat|anthropic",
        ));
    };
    let variable = kind.api_key_env();
    let Some(key) = env_var(variable).filter(|key| !key.is_empty()) else {
        return Err(UsageError::new(format!(
            "--provider {kind} needs its API key in the environment variable {variable}, which is not set"
        )));
    };
    Ok(ModelConfig::Provider {
        kind,
        base_url: model.base_url.clone(),
        model: model.model.clone(),
        api_key: Some(ApiKey::new(key)),
        streaming: model.stream,
        retry_budget: std::time::Duration::from_secs(model.model_retry_secs),
    })
}

/// `path` canonicalized, when it is an existing directory.
pub(crate) fn existing_dir(flag: &str, path: &Path) -> Result<PathBuf, UsageError> {
    match std::fs::canonicalize(path) {
        Ok(dir) if dir.is_dir() => Ok(dir),
        Ok(_) => Err(UsageError::value(
            flag,
            path.display(),
            "it is not a directory (expected an existing directory)",
        )),
        Err(error) => Err(UsageError::value(
            flag,
            path.display(),
            format!("{error} (expected an existing directory)"),
        )),
    }
}

/// The text of an `--mcp-config` file (at most `MAX_MCP_CONFIG_BYTES`).
fn read_mcp_config(file: &Path) -> Result<String, UsageError> {
    use std::io::Read as _;
    let fail = |reason: String| UsageError::new(format!("--mcp-config {}: {reason}", file.display()));
    let handle = std::fs::File::open(file).map_err(|e| fail(e.to_string()))?;
    let mut bytes = Vec::new();
    handle
        .take(MAX_MCP_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > MAX_MCP_CONFIG_BYTES {
        return Err(fail(format!("the file is over {MAX_MCP_CONFIG_BYTES} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| fail("the file is not UTF-8 text".to_owned()))
}
