//! [`build`]: the one composition of a process, in the fixed order of its six steps.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use adapter_fstools::{CoreToolsOptions, FsForker, core_tools};
use adapter_llm::{HttpProviderConfig, MockProvider, RetryPolicy, build_http_provider};
use adapter_mcp::{
    ConnectOptions, Connected, McpManager, MountOptions, ToolhiveDiscovery, discover_toolhive, merge_servers,
};
use adapter_policy::{Policy, Sources};
use adapter_skillfs::{
    HostEnv, ParsedAgent, ProjectTrust, QuarantineDrafter, SkillsOptions, check_quarantine_placement,
    load_agents, load_skills, resolve_skill_dirs,
};
use engine_core::{
    AgentDefinition, Catalog, CatalogUpdates, ChildEngines, DelegationSettings, ParallelTool, SkillDraftTool,
    SkillTool, Tool, subagent_tools, team_tools,
};
use engine_ports::{
    Diagnostic, Diagnostics, Level, LlmProvider, PermissionMode, ServerOrigin, SkillSource, SystemClock,
};

use crate::assembly::{CatalogInputs, assemble_catalog};
use crate::assets::{CatalogAssets, DelegationAssets, MemoryAssets, ResourceAssets, SkillAssets};
use crate::built::{Built, close_store};
use crate::children::AppChildren;
use crate::commands::{ChainParts, command_chain};
use crate::config::{AppConfig, ModelConfig};
use crate::engine_template::{EngineTemplate, ShellConfinements};
use crate::error::BuildError;
use crate::factory::{FactoryParts, SessionEngineFactory};
use crate::global_mcp::GlobalMcp;
use crate::live_catalog::LiveCatalog;
use crate::memory::{MemoryStores, open_memory};
use crate::report::{BuildReport, DisclosureEntry, McpServerEntry, SkillEntry, ToolRule, all_tool_entries};
use crate::store::AppStore;
use crate::system_prompt::{SystemPrompt, add_memory_sections, assemble_system_prompt};

/// The model name sent with every request of the mock provider.
pub const MOCK_MODEL_NAME: &str = "mock";

/// Composes one process, in this order (run it **once per process**):
///
/// 1. resolve the config: canonicalize the workspace, place the memory stores (outside
///    the workspace, or as scopes of the `--store-url` database), assemble the system prompt (with the memory index and operator
///    profile), resolve the provider (a missing key is fatal, naming the variable),
///    check the skill draft directory;
/// 2. connect the server-global MCP manager: static servers, then ToolHive workloads;
///    an unreachable server is a WARN and a `failed` entry, never fatal;
/// 3. resolve skills once (tiers, trust gate); skips are WARNs;
/// 4. open the store (JSONL under `--store-dir`, PostgreSQL under `--store-url`,
///    else in memory);
/// 5. build the catalog assets and the shared catalog (`assemble_catalog`, narrated);
/// 6. build the shared engine and the session factory over the same assets (with the
///    telemetry `cfg.telemetry` asks for observing every engine: its export tasks
///    start here, and [`Built::close`] flushes them).
///
/// It starts no listener, touches no stdin/stdout and installs no signal handler or
/// global `tracing` subscriber. A failing step closes what earlier steps opened, in
/// reverse order.
///
/// # Errors
/// [`BuildError`]: a bad workspace, provider or draft directory, a store that cannot
/// be opened, two built-in families registering one name, an engine that refuses its
/// dependencies.
pub async fn build(cfg: AppConfig) -> Result<Built, BuildError> {
    // 1. Resolve the config.
    let mut resolved = resolve(&cfg).await?;
    // 2. Connect the server-global MCP manager.
    let servers = connect_global(&cfg, &mut resolved.diagnostics).await;

    // Steps 3 to 6 have one exit: whatever fails there, what was opened is closed here,
    // in reverse order (the store, then the MCP servers).
    let manager = servers.manager.clone();
    let mut store = None;
    match compose(&cfg, resolved, servers, &mut store).await {
        Ok(built) => Ok(built),
        Err(error) => {
            unwind(store.as_ref(), &manager).await;
            Err(error)
        }
    }
}

/// What step 1 of [`build`] resolved, for [`compose`].
struct Resolved {
    diagnostics: Diagnostics,
    root: PathBuf,
    memory: MemoryStores,
    prompt: SystemPrompt,
    llm: Arc<dyn LlmProvider>,
    model: String,
    host: HostEnv,
    skills_options: SkillsOptions,
}

/// Step 1 of [`build`]: the workspace, the memory stores, the system prompt, the
/// provider and the skill draft directory's placement. It opens nothing that needs closing.
async fn resolve(cfg: &AppConfig) -> Result<Resolved, BuildError> {
    let mut diagnostics = Diagnostics::new();
    let root = resolve_workspace(&cfg.workspace)?;
    // The config's notes (skipped servers, ignored keys) are logged here, once.
    for note in &cfg.mcp.notes {
        match note.level {
            Level::Info => diagnostics.info(note.message.clone()),
            Level::Warn => diagnostics.warn(note.message.clone()),
            Level::Error => diagnostics.error(note.message.clone()),
        }
    }
    let memory = open_memory(&cfg.memory, &root).await?;
    diagnostics.extend(memory.diagnostics.iter().cloned());
    let prompt = session_prompt(cfg, &root, &memory).await?;
    diagnostics.extend(prompt.diagnostics.iter().cloned());
    let (llm, model) = resolve_model(&cfg.model)?;
    let host = match &cfg.skills.host {
        Some(host) => host.clone(),
        None => HostEnv::from_process().unwrap_or_else(|_| HostEnv {
            cwd: root.clone(),
            ..HostEnv::default()
        }),
    };
    let skills_options = cfg.skills_options(&root);
    if let Some(quarantine) = &cfg.skills.draft_dir {
        let dirs: Vec<PathBuf> = resolve_skill_dirs(&skills_options, &host)
            .dirs
            .into_iter()
            .map(|dir| dir.path)
            .collect();
        check_quarantine_placement(quarantine, &root, &dirs, &host.cwd)?;
    }
    Ok(Resolved {
        diagnostics,
        root,
        memory,
        prompt,
        llm,
        model,
        host,
        skills_options,
    })
}

/// What step 2 of [`build`] connected: the manager (the one value that closes the
/// servers) and its catalog-facing handle.
struct GlobalServers {
    manager: McpManager,
    global: GlobalMcp,
    mount: MountOptions,
    /// `mcp_servers` of the report.
    entries: Vec<McpServerEntry>,
}

/// How `Shell` is confined in sessions and in children on a workspace copy; the
/// warning of a sandbox the kernel cannot honour is given once, here (only when there
/// is a `Shell` to confine).
fn shell_confinements(cfg: &AppConfig, diagnostics: &mut Diagnostics) -> ShellConfinements {
    let kernel = sandbox::support();
    let settings = cfg.sandbox.settings.clone();
    let (session, warning) = settings.for_session(&kernel);
    if let Some(warning) = warning
        && cfg.shell.is_some()
    {
        diagnostics.warn(warning);
    }
    ShellConfinements {
        copy: settings.for_workspace_copy(&kernel),
        session,
        settings,
    }
}

/// Step 2 of [`build`]: static servers, then ToolHive workloads. An unreachable server
/// is a WARN in `diagnostics` and a `failed` entry, never fatal.
async fn connect_global(cfg: &AppConfig, diagnostics: &mut Diagnostics) -> GlobalServers {
    let discovery = match &cfg.mcp.toolhive {
        Some(options) => discover_toolhive(options).await,
        None => ToolhiveDiscovery::default(),
    };
    let merged = merge_servers(cfg.mcp.servers.clone(), discovery);
    diagnostics.extend(merged.diagnostics.into_entries());
    let order: Vec<String> = merged.servers.iter().map(|s| s.name.clone()).collect();
    let startup = cfg.mcp.startup_timeout;
    let kernel = sandbox::support();
    let servers = merged
        .servers
        .into_iter()
        .map(|server| server.with_connect_timeout(startup))
        .map(|server| {
            if !cfg.sandbox.mcp_servers.contains(&server.name) {
                return server;
            }
            let (confinement, warning) = cfg.sandbox.settings.for_mcp_server(&server.name, &kernel);
            if let Some(warning) = warning {
                diagnostics.warn(warning);
            }
            server.with_sandbox(confinement)
        })
        .collect();
    let options = ConnectOptions {
        limits: cfg.mcp.limits,
        ..ConnectOptions::default()
    };
    let Connected { manager, failures } = McpManager::connect(servers, options).await;
    diagnostics.extend(failures.iter().map(|failure| Diagnostic {
        level: Level::Warn,
        message: failure.to_string(),
    }));
    let mount = MountOptions {
        progressive: cfg.disclosure.is_progressive(),
        trust_discovered: cfg.mcp.trust_discovered,
    };
    let global = GlobalMcp::new(manager.clone(), mount);
    let entries = server_entries(&order, &global, &failures);
    GlobalServers {
        manager,
        global,
        mount,
        entries,
    }
}

/// Steps 3 to 6 of [`build`]. The store it opens is left in `opened` first, so that
/// `build` can close it when a later step fails.
async fn compose(
    cfg: &AppConfig,
    mut resolved: Resolved,
    servers: GlobalServers,
    opened: &mut Option<AppStore>,
) -> Result<Built, BuildError> {
    let global = &servers.global;

    // 3. Resolve skills once.
    let load = load_skills(
        &resolved.skills_options,
        &resolved.host,
        cfg.skill_source_config(),
    );
    resolved.diagnostics.extend(load.diagnostics);
    let skills = load.source.filter(|source| !source.is_empty()).map(|source| {
        let metas = source.metas().to_vec();
        let source: Arc<dyn SkillSource> = source;
        let tool: Arc<dyn Tool> = Arc::new(SkillTool::new(Arc::clone(&source), metas.clone()));
        SkillAssets { source, metas, tool }
    });

    // Named agents, read like skills (the same trust gate for the workspace's own).
    let agents_load = load_agents(
        &cfg.delegation.agents_dirs,
        &resolved.root,
        cfg.skills.trust,
        &resolved.host,
    );
    resolved
        .diagnostics
        .extend(agents_load.diagnostics.iter().map(|d| d.to_diagnostic()));
    let agents: Vec<AgentDefinition> = agents_load.agents.into_iter().map(agent_definition).collect();

    // 4. Open the store.
    let store = AppStore::open(&cfg.store).await?;
    *opened = Some(store.clone());

    // 5. The catalog assets and the shared catalog.
    let resources = global.resource_tools(cfg.mcp.resource_tools);
    let resource_note = resources
        .diagnostics
        .entries()
        .first()
        .map(|d| d.message.clone())
        .unwrap_or_default();
    let active_metas = skills.as_ref().map(|s| s.metas.as_slice()).unwrap_or_default();
    let skill_draft = cfg.skills.draft_dir.as_ref().map(|quarantine| {
        let drafter = QuarantineDrafter::new(quarantine, active_metas, Arc::new(SystemClock))
            .with_output_cap(cfg.output_cap);
        Arc::new(SkillDraftTool::new(Arc::new(drafter))) as Arc<dyn Tool>
    });
    let assets = Arc::new(CatalogAssets {
        core: core_tools(&CoreToolsOptions::new().with_shell(cfg.shell.is_some())),
        extra: cfg.extra_tools.tools().to_vec(),
        shell: cfg.shell.is_some(),
        global: global.clone(),
        resources: ResourceAssets {
            tools: resources.tools,
            note: resource_note,
        },
        skills,
        skill_draft,
        memory: MemoryAssets::new(&cfg.memory, &resolved.memory),
        delegation: DelegationAssets {
            subagent: if cfg.delegation.subagents {
                subagent_tools(&agents)
            } else {
                Vec::new()
            },
            parallel: if cfg.delegation.parallel {
                vec![Arc::new(ParallelTool) as Arc<dyn Tool>]
            } else {
                Vec::new()
            },
            team: if cfg.delegation.teams {
                team_tools()
            } else {
                Vec::new()
            },
            agents: agents.len(),
        },
        store: store.clone(),
        mount: servers.mount,
        disclosure: cfg.disclosure,
    });
    let assembled = assemble_catalog(
        &assets,
        CatalogInputs {
            client_mcp: None,
            narrate: true,
            child: None,
        },
    );
    resolved.diagnostics.extend(assembled.diagnostics.iter().cloned());
    if let Some(conflict) = assembled.conflicts.first() {
        return Err(BuildError::DuplicateTool {
            name: conflict.name.clone(),
            kept: conflict.kept,
            rejected: conflict.rejected,
        });
    }

    // The operator's settings: rules and hooks, checked against the catalog's names.
    let policy = load_policy(cfg, &resolved.root, &assembled.catalog)?;
    resolved
        .diagnostics
        .extend(policy.ignored().iter().map(|ignored| Diagnostic {
            level: Level::Info,
            message: format!("settings key not used: {ignored}"),
        }));
    let tool_rules = tool_rules(&policy, &assembled.catalog);

    // 6. The shared engine and the factory over the same assets.
    let (commands, command_notes) = command_chain(&ChainParts {
        commands_dir: cfg.commands_dir.as_deref(),
        workspace: &resolved.root,
        trust: cfg.skills.trust,
        host: &resolved.host,
        skills: assets.skills(),
        global,
        mcp_prompts: cfg.mcp.prompts,
        cap: engine_core::OutputCap::new(cfg.output_cap),
    });
    resolved.diagnostics.extend(command_notes);
    let confinements = shell_confinements(cfg, &mut resolved.diagnostics);
    let sandbox_status = cfg
        .shell
        .as_ref()
        .map(|_| confinements.session.status(&confinements.settings));
    // Hook commands run under the session's `Shell` rule.
    let hook_confinement = confinements.session.clone();
    let mut template = EngineTemplate::new(
        cfg,
        &resolved.root,
        resolved.llm,
        resolved.model.clone(),
        &store,
        Arc::clone(&commands),
        confinements,
    )?;
    template.set_policy(&policy, hook_confinement)?;
    let telemetry = start_telemetry(cfg)?;
    if let Some(telemetry) = &telemetry {
        template.observe(telemetry);
        let manager = servers.manager.clone();
        telemetry.set_reconnect_counts(Arc::new(move || manager.reconnect_counts()));
    }
    // `permissions.defaultMode` of the settings, unless the configuration names another
    // mode (`run --mode` also sets the session's own mode, so it wins either way).
    if cfg.engine.mode == PermissionMode::Default
        && let Some(mode) = policy.default_mode()
    {
        template.set_default_mode(mode);
    }
    let updates = LiveCatalog::needed(&assets, None).then(|| {
        Arc::new(LiveCatalog::new(
            Arc::clone(&assets),
            None,
            Arc::clone(&assembled.catalog),
            assembled.mcp_generation,
        )) as Arc<dyn CatalogUpdates>
    });
    template.set_system_prompt(resolved.prompt.text);
    template.set_global_servers(
        global
            .servers()
            .into_iter()
            .map(|server| ServerOrigin {
                name: server.name,
                source: server.source.to_string(),
            })
            .collect(),
    );
    let forker = match &cfg.delegation.fork_dir {
        Some(dir) => FsForker::new(dir, cfg.delegation.fork_preserved_cap),
        None => FsForker::in_default_base(cfg.delegation.fork_preserved_cap),
    }
    .with_budget(cfg.delegation.fork_budget_bytes);
    sweep_stale_copies(&forker).await;
    let children = AppChildren::new(
        Arc::clone(&assets),
        template.clone(),
        agents,
        DelegationSettings {
            subagent_model: cfg.delegation.subagent_model.clone(),
            max_team_tokens: cfg.delegation.max_team_tokens,
        },
        Arc::new(forker.clone()),
    );
    let shared_children: Arc<dyn ChildEngines> = Arc::new(children.clone());
    let shared_engine = Arc::new(template.engine(
        Arc::clone(&assembled.catalog),
        updates,
        &[],
        Some(shared_children),
    )?);
    let factory = SessionEngineFactory::new(FactoryParts {
        template,
        children,
        shared: Arc::clone(&shared_engine),
        shared_families: Arc::clone(&assembled.families),
        workspace: resolved.root.clone(),
        max_sessions: cfg.max_sessions,
        mcp_limits: cfg.mcp.limits,
    });
    let report = BuildReport {
        tools: all_tool_entries(&assembled.catalog, &assembled.families),
        skipped: assembled.skipped.clone(),
        mcp_servers: servers.entries,
        skills: assets
            .skills()
            .map(|(_, metas)| {
                metas
                    .iter()
                    .map(|meta| SkillEntry {
                        name: meta.name.clone(),
                        description: meta.description.clone(),
                        origin: meta.origin,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        diagnostics: resolved.diagnostics.into_entries(),
        sandbox: sandbox_status,
        rules: tool_rules,
        disclosure: DisclosureEntry::new(&assembled.catalog, cfg.disclosure, shared_engine.context_window()),
        tool_search: engine_core::tool_search_spec_for(
            &assembled.catalog,
            PermissionMode::Default,
            shared_engine.disclosure_for(&assembled.catalog),
        )
        .zip(engine_core::tool_search_spec_for(
            &assembled.catalog,
            PermissionMode::Plan,
            shared_engine.disclosure_for(&assembled.catalog),
        )),
    };
    if let Some(telemetry) = &telemetry {
        telemetry.set_families(
            report
                .tools
                .iter()
                .map(|tool| (tool.name.clone(), tool.family.as_str().to_owned())),
        );
    }
    let mut models = vec![resolved.model.clone()];
    for model in &cfg.models {
        if !models.contains(model) {
            models.push(model.clone());
        }
    }
    Ok(Built {
        workspace: resolved.root,
        model: resolved.model,
        models,
        prices: Arc::new(cfg.prices.clone()),
        shared_catalog: Arc::clone(&assembled.catalog),
        shared_families: Arc::clone(&assembled.families),
        assets,
        shared_engine,
        factory,
        commands,
        report,
        store,
        global: servers.global,
        global_manager: servers.manager,
        forker,
        closed: AtomicBool::new(false),
        policy,
        telemetry,
    })
}

/// Removes the workspace copies left by processes that ended without removing them
/// (killed, or crashed: a copy may hold the workspace's secrets); an unsafe base
/// directory is only reported here (every copy is refused with the reason).
async fn sweep_stale_copies(forker: &FsForker) {
    let sweeper = forker.clone();
    match tokio::task::spawn_blocking(move || sweeper.sweep_stale()).await {
        Ok(Ok(0)) => {}
        Ok(Ok(removed)) => tracing::info!(
            removed,
            base = %forker.base().display(),
            "removed workspace copies whose owner is gone"
        ),
        Ok(Err(error)) => tracing::warn!(%error, "stale workspace copies were not swept"),
        Err(error) => tracing::warn!(%error, "the sweep of stale workspace copies failed"),
    }
}

/// A named agent as the engine knows it.
fn agent_definition(agent: ParsedAgent) -> AgentDefinition {
    AgentDefinition {
        name: agent.name,
        description: agent.description,
        tools: agent.tools,
        model: agent.model,
        max_turns: agent.max_turns,
        system_prompt: agent.body,
    }
}

/// The system prompt the sessions of `cfg` would get, without building anything else
/// (`mecated run --print-system-prompt`).
///
/// # Errors
/// [`BuildError::Workspace`], [`BuildError::SystemPromptFile`],
/// [`BuildError::MemoryDir`] and [`BuildError::Database`] (memory in a database).
pub async fn system_prompt(cfg: &AppConfig) -> Result<SystemPrompt, BuildError> {
    let root = resolve_workspace(&cfg.workspace)?;
    let memory = open_memory(&cfg.memory, &root).await?;
    let mut prompt = session_prompt(cfg, &root, &memory).await?;
    prompt.diagnostics.splice(0..0, memory.diagnostics);
    Ok(prompt)
}

async fn session_prompt(
    cfg: &AppConfig,
    root: &Path,
    memory: &MemoryStores,
) -> Result<SystemPrompt, BuildError> {
    let mut prompt = assemble_system_prompt(cfg, root)?;
    add_memory_sections(&mut prompt, memory).await;
    Ok(prompt)
}

fn resolve_workspace(workspace: &Path) -> Result<PathBuf, BuildError> {
    let fail = |reason: String| BuildError::Workspace {
        path: workspace.to_path_buf(),
        reason,
    };
    let root = std::fs::canonicalize(workspace).map_err(|e| fail(e.to_string()))?;
    if !root.is_dir() {
        return Err(fail("it is not a directory".to_owned()));
    }
    Ok(root)
}

/// The telemetry `cfg.telemetry` asks for (`None` when nothing is asked), started on
/// the current runtime; `gen_ai.provider.name` from the model configuration.
fn start_telemetry(cfg: &AppConfig) -> Result<Option<adapter_telemetry::Telemetry>, BuildError> {
    let provider = match &cfg.model {
        ModelConfig::Mock | ModelConfig::MockScript(_) => "mock",
        ModelConfig::Provider { kind, .. } => match kind {
            adapter_llm::ProviderKind::Anthropic => "anthropic",
            _ => "openai",
        },
    };
    let options = adapter_telemetry::TelemetryOptions {
        env: cfg.telemetry.env.clone(),
        prometheus: cfg.telemetry.prometheus,
        content: cfg.telemetry.content,
        provider: Some(provider.to_owned()),
    };
    Ok(adapter_telemetry::Telemetry::start(options)?)
}

fn resolve_model(model: &ModelConfig) -> Result<(Arc<dyn LlmProvider>, String), BuildError> {
    match model {
        ModelConfig::Mock => Ok((Arc::new(MockProvider::canned()), MOCK_MODEL_NAME.to_owned())),
        ModelConfig::MockScript(script) => Ok((
            Arc::new(MockProvider::scripted(script.clone())),
            MOCK_MODEL_NAME.to_owned(),
        )),
        ModelConfig::Provider {
            kind,
            base_url,
            model,
            api_key,
            streaming,
            retry_budget,
        } => {
            let Some(key) = api_key.clone() else {
                return Err(BuildError::MissingApiKey {
                    provider: kind.as_str(),
                    variable: kind.api_key_env(),
                });
            };
            let mut config = HttpProviderConfig::new(key)
                .with_streaming(*streaming)
                .with_retry(RetryPolicy {
                    budget: *retry_budget,
                    ..RetryPolicy::default()
                });
            if let Some(base_url) = base_url {
                config = config.with_base_url(base_url.clone());
            }
            let name = model.clone().unwrap_or_else(|| kind.default_model().to_owned());
            config = config.with_model(name.clone());
            let provider = build_http_provider(*kind, config).map_err(|source| BuildError::Provider {
                provider: kind.as_str(),
                source,
            })?;
            Ok((provider, name))
        }
    }
}

/// `mcp_servers` of the report: every server in connect order, connected ones with
/// their live status and counts, failed ones with their (redacted) error.
fn server_entries(
    order: &[String],
    global: &GlobalMcp,
    failures: &[adapter_mcp::ConnectFailure],
) -> Vec<McpServerEntry> {
    let connected = global.servers();
    order
        .iter()
        .filter_map(|name| {
            if let Some(info) = connected.iter().find(|s| &s.name == name) {
                return Some(McpServerEntry {
                    name: info.name.clone(),
                    transport: info.transport.as_str().to_owned(),
                    source: info.source.to_string(),
                    status: info.status.as_str().to_owned(),
                    error: None,
                    tools: info.tools,
                    resources: info.resources,
                    prompts: info.prompts,
                    protocol: Some(info.protocol.clone()),
                });
            }
            failures
                .iter()
                .find(|f| &f.server == name)
                .map(|failure| McpServerEntry {
                    name: failure.server.clone(),
                    transport: failure.transport.as_str().to_owned(),
                    source: failure.source.to_string(),
                    status: "failed".to_owned(),
                    error: Some(failure.error.clone()),
                    tools: 0,
                    resources: 0,
                    prompts: 0,
                    protocol: None,
                })
        })
        .collect()
}

/// Closes what a failed build opened, in reverse order (store, then MCP servers).
async fn unwind(store: Option<&AppStore>, manager: &McpManager) {
    if let Some(store) = store
        && let Err(error) = close_store(store).await
    {
        tracing::warn!(%error, "closing the store of a failed build failed");
    }
    if let Err(error) = manager.close().await {
        tracing::warn!(%error, "closing the MCP servers of a failed build failed");
    }
}

/// Reads the operator's settings files (`cfg.policy`; the workspace's only with
/// `--trust-project`). A rule may name any tool of `catalog`, `Shell` and the
/// delegation tools (whether or not enabled), or an MCP server or tool.
fn load_policy(cfg: &AppConfig, root: &Path, catalog: &Catalog) -> Result<Arc<Policy>, BuildError> {
    let sources = Sources {
        workspace: root.to_owned(),
        managed: cfg.policy.managed.clone(),
        files: cfg.policy.files.clone(),
        trust_project: cfg.skills.trust == ProjectTrust::Trusted,
        user: cfg.policy.user.clone(),
        home: std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from),
    };
    let known = |name: &str| {
        catalog.names().any(|n| n == name) || ["Shell", "Subagent", "Parallel", "Team"].contains(&name)
    };
    let policy = Policy::load(&sources, &known).map_err(BuildError::Settings)?;
    Ok(Arc::new(if cfg.policy.persist_approvals {
        policy.persisting_approvals()
    } else {
        policy
    }))
}

/// The whole tools of `catalog` a bare rule hides or always asks for.
fn tool_rules(policy: &Policy, catalog: &Catalog) -> Vec<ToolRule> {
    catalog
        .names()
        .filter_map(|name| {
            policy.whole_tool(name).map(|matched| ToolRule {
                tool: name.to_owned(),
                effect: matched.effect,
                rule: matched.rule,
                source: matched.source,
            })
        })
        .collect()
}
