//! [`EngineTemplate`]: the `Deps` every engine of one process shares — the shared
//! engine and every per-session engine differ only in their catalog.

use std::path::Path;
use std::sync::Arc;

use adapter_fstools::ShellRunner;
use engine_core::{
    CHILD_PROMPT_NOTE, Catalog, CatalogUpdates, ChildEngines, ChildError, ChildSpec, CommandRunner,
    DefaultPolicy, Deps, Disclosure, Engine, EngineConfig, EngineError, Environment, EnvironmentError,
    OutputCap,
};
use engine_ports::{CommandExpander, LlmProvider, SandboxStatus, ServerOrigin, SystemClock};
use sandbox::{Confinement, SandboxSettings};

use crate::config::AppConfig;
use crate::error::BuildError;
use crate::store::AppStore;

/// `Deps` without a catalog yet; cloning it per engine keeps every handle shared.
#[derive(Clone)]
pub(crate) struct EngineTemplate {
    deps: Deps,
    /// The runner (and its sandbox status) of children working on a workspace copy.
    copy_shell: Option<(Arc<dyn CommandRunner>, SandboxStatus)>,
}

/// How the `Shell` of sessions and of children on a workspace copy is confined,
/// decided once per build by the sandbox crate's rules.
pub(crate) struct ShellConfinements {
    /// A session's own commands.
    pub(crate) session: Confinement,
    /// A child's on its workspace copy (confined to the copy, or refused).
    pub(crate) copy: Confinement,
    /// The settings they came from (for the status texts).
    pub(crate) settings: SandboxSettings,
}

impl EngineTemplate {
    /// The dependencies of every engine: the model, the environment (canonical root,
    /// `ShellRunner` confined as `confinements.session` says unless `--no-shell`, the
    /// output cap), one default policy, the store as `store`, `event_log` and
    /// `recorder`, `SystemClock`, the command chain and the settings.
    pub(crate) fn new(
        cfg: &AppConfig,
        root: &Path,
        llm: Arc<dyn LlmProvider>,
        model: String,
        store: &AppStore,
        commands: Arc<dyn CommandExpander>,
        confinements: ShellConfinements,
    ) -> Result<Self, BuildError> {
        let workspace_error = |error: EnvironmentError| BuildError::Workspace {
            path: cfg.workspace.clone(),
            reason: error.to_string(),
        };
        let sandbox_error = |error: std::io::Error| BuildError::Sandbox {
            reason: format!("cannot create its private temporary directory: {error}"),
        };
        let mut environment = Environment::new(root)
            .map_err(workspace_error)?
            .with_output_cap(OutputCap::new(cfg.output_cap));
        let mut sandbox = None;
        let mut copy_shell = None;
        if let Some(shell) = &cfg.shell {
            let ShellConfinements {
                session,
                copy,
                settings,
            } = confinements;
            sandbox = Some(session.status(&settings));
            let copy_status = copy.status(&settings);
            let runner = ShellRunner::new(shell)
                .with_confinement(session)
                .map_err(sandbox_error)?;
            environment = environment.with_runner(Arc::new(runner));
            let copy_runner = ShellRunner::new(shell)
                .with_confinement(copy)
                .map_err(sandbox_error)?;
            copy_shell = Some((Arc::new(copy_runner) as Arc<dyn CommandRunner>, copy_status));
        }
        let config = EngineConfig {
            model,
            mode: cfg.engine.mode,
            limits: cfg.limits,
            disclosure: cfg.disclosure,
            interactive: cfg.engine.interactive,
            approve: cfg.engine.approve,
            command_timeout: cfg.mcp.limits.idle,
            audit_required: cfg.engine.audit_required,
            context_window: cfg.context_window,
            max_tokens: cfg.max_tokens,
            elicitation_timeout: cfg.engine.elicitation_timeout,
            sandbox,
            ..EngineConfig::default()
        };
        let mut deps = Deps::new(llm, Arc::new(Catalog::new()), environment);
        // `acceptEdits` lets file edits and memory writes through without an ask.
        let edit_tools = ["Edit", "Write"]
            .into_iter()
            .chain(engine_core::MEMORY_WRITE_TOOL_NAMES)
            .map(str::to_owned);
        deps.policy = Some(Arc::new(
            DefaultPolicy::new(config.interactive, config.approve).with_edit_tools(edit_tools),
        ));
        deps.store = Some(store.session_store());
        deps.event_log = Some(store.event_log());
        deps.recorder = Some(store.recorder());
        deps.clock = Some(Arc::new(SystemClock));
        deps.commands = Some(commands);
        deps.config = config;
        Ok(Self { deps, copy_shell })
    }

    /// An engine over `catalog` with the shared dependencies; `updates` offers newer
    /// catalogs when an MCP server changes its tool list; `children` builds the child
    /// engines its delegation tools run.
    pub(crate) fn engine(
        &self,
        catalog: Arc<Catalog>,
        updates: Option<Arc<dyn CatalogUpdates>>,
        client_servers: &[ServerOrigin],
        children: Option<Arc<dyn ChildEngines>>,
    ) -> Result<Engine, EngineError> {
        let mut deps = self.deps.clone();
        deps.catalog = catalog;
        deps.catalog_updates = updates;
        deps.children = children;
        deps.config.mcp_servers.extend_from_slice(client_servers);
        Engine::new(deps)
    }

    /// A child engine over `catalog` (assembled for `spec`): the shared dependencies
    /// but `spec`'s policy, limits, purpose, model and system prompt (default: the
    /// parent's system prompt and [`CHILD_PROMPT_NOTE`]), its workspace copy when it
    /// has one, no command chain, no `ToolSearch` and no children of its own.
    pub(crate) fn child_engine(&self, catalog: Arc<Catalog>, spec: &ChildSpec) -> Result<Engine, ChildError> {
        let mut deps = self.deps.clone();
        deps.catalog = catalog;
        deps.catalog_updates = None;
        deps.commands = None;
        deps.children = None;
        deps.policy = Some(Arc::clone(&spec.policy));
        if let Some(workspace) = &spec.workspace {
            deps.environment = deps
                .environment
                .with_workspace_root(workspace)
                .map_err(|error| ChildError::Workspace(error.to_string()))?;
            // A child on a copy never runs the session's runner: its commands are
            // confined to the copy (their working directory) or refused.
            if let Some((runner, status)) = &self.copy_shell {
                deps.environment = deps.environment.with_runner(Arc::clone(runner));
                deps.config.sandbox = Some(status.clone());
            }
            // An "allow always" given for a copy stays with that child (its policy
            // learns it alone): the rules check its calls but never save the answer as
            // a project rule, which would allow the parent's calls on the workspace.
            if let Some(rules) = &deps.rules {
                deps.rules = Some(Arc::new(CheckOnly(Arc::clone(rules))));
            }
        }
        let config = &mut deps.config;
        if let Some(model) = &spec.model {
            config.model.clone_from(model);
        }
        config.system_prompt = match &spec.system_prompt {
            Some(prompt) => prompt.clone(),
            None if config.system_prompt.is_empty() => CHILD_PROMPT_NOTE.to_owned(),
            None => format!("{}\n\n{CHILD_PROMPT_NOTE}", config.system_prompt),
        };
        config.limits = spec.limits;
        config.interactive = spec.interactive;
        config.purpose = spec.purpose;
        config.disclosure = Disclosure::Off;
        Ok(Engine::new(deps)?)
    }

    /// Gives every engine (children included) the operator's rules and, when the
    /// settings have any, their hook commands (run without the harness's
    /// credentials and confined as `confinement` says: the Shell tool's rules).
    pub(crate) fn set_policy(
        &mut self,
        policy: &Arc<adapter_policy::Policy>,
        confinement: Confinement,
    ) -> Result<(), BuildError> {
        self.deps.rules = Some(Arc::clone(policy) as Arc<dyn engine_ports::PermissionRules>);
        if !policy.hook_commands().is_empty() {
            let hooks = policy
                .confined_hooks(adapter_fstools::is_stripped_variable, confinement)
                .map_err(|error| BuildError::Sandbox {
                    reason: format!("cannot create the hooks' private temporary directory: {error}"),
                })?;
            self.deps.hooks = Some(Arc::new(hooks));
        }
        Ok(())
    }

    /// Lets `telemetry` observe every engine (children included) through the same
    /// ports: it times the store's writes and observes the events as they are
    /// appended (the live sink only where no event log is); nothing else changes.
    pub(crate) fn observe(&mut self, telemetry: &adapter_telemetry::Telemetry) {
        let deps = &mut self.deps;
        deps.store = deps.store.take().map(|store| telemetry.session_store(store));
        deps.recorder = deps.recorder.take().map(|recorder| telemetry.recorder(recorder));
        match deps.event_log.take() {
            Some(log) => deps.event_log = Some(telemetry.event_log(log)),
            None => deps.sink = Some(telemetry.sink()),
        }
    }

    /// Sets the mode new sessions start in.
    pub(crate) fn set_default_mode(&mut self, mode: engine_ports::PermissionMode) {
        self.deps.config.mode = mode;
    }

    /// Sets the system prompt every engine's sessions start with.
    pub(crate) fn set_system_prompt(&mut self, text: String) {
        self.deps.config.system_prompt = text;
    }

    /// Names the server-global MCP servers (and where each came from) in every
    /// engine's `session.init`.
    pub(crate) fn set_global_servers(&mut self, servers: Vec<ServerOrigin>) {
        self.deps.config.mcp_servers = servers;
    }
}

/// The rules of a child on a workspace copy: they decide its calls like the parent's,
/// but offer and keep no "allow always" (the trait's default `suggest` and `learn`).
struct CheckOnly(Arc<dyn engine_ports::PermissionRules>);

impl engine_ports::PermissionRules for CheckOnly {
    fn check(&self, call: &engine_ports::ToolCall) -> Option<engine_ports::RuleMatch> {
        self.0.check(call)
    }

    fn hides(&self, name: &str) -> Option<engine_ports::RuleMatch> {
        self.0.hides(name)
    }
}
