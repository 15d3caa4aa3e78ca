//! Operator policy for Mecatl from settings files users already know: permission
//! rules (`allow`, `ask`, `deny`) and hook commands in the shape of Claude Code's
//! `settings.json`, read from the managed file, `--settings` files, the workspace
//! (only when trusted) and the user's configuration directory.
//!
//! [`Policy`] implements the engine's [`PermissionRules`] port and gives the
//! [`CommandHooks`] (the engine's `ToolHooks` port, plus the events the host fires).
//! The decision order itself is the engine's (its dispatch gate); this crate only
//! says which rule matches a call.
//!
//! Modules: `settings` (files, caps, errors with JSON paths), `rules` (rule syntax
//! and matching), `shell` (the shell-aware splitter of prefix rules), `hooks` (hook
//! commands), `persist` (saving an "allow always" as a project rule).

mod hooks;
mod persist;
mod rules;
mod settings;
mod shell;

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use engine_ports::{PermissionMode, PermissionRules, RuleEffect, RuleMatch, ToolCall};
use sandbox::Confinement;

pub use engine_ports::{HookEvent, ParseHookEventError};
pub use hooks::{CommandHooks, HookCommand, HookRun, MAX_HOOK_OUTPUT_BYTES, Matcher};
pub use persist::{PersistError, learned_rule, persist_allow};
pub use rules::{FOREIGN_TOOLS, Roots, Rule, canonical_tool};
pub use settings::{
    DEFAULT_HOOK_TIMEOUT, MAX_SETTINGS_BYTES, SettingsError, SettingsFile, Tier, parse as parse_settings,
};
pub use shell::{Part, split as split_shell};

/// Where the administrator's managed settings live unless overridden.
pub const DEFAULT_MANAGED_SETTINGS: &str = "/etc/mecatl/managed-settings.json";

/// The environment variable that overrides [`DEFAULT_MANAGED_SETTINGS`] (tests,
/// packaging in another prefix).
pub const MANAGED_SETTINGS_ENV: &str = "MECATL_MANAGED_SETTINGS";

/// The managed settings path: [`MANAGED_SETTINGS_ENV`] if set, else the default.
pub fn managed_settings_path() -> PathBuf {
    std::env::var_os(MANAGED_SETTINGS_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_MANAGED_SETTINGS), PathBuf::from)
}

/// The user's settings: `$XDG_CONFIG_HOME/mecatl/settings.json`, else
/// `~/.config/mecatl/settings.json`; `None` without either variable.
pub fn user_settings_path() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(config.join("mecatl").join("settings.json"))
}

/// The workspace's settings files, most local first, as read with `--trust-project`.
pub fn project_settings_paths(workspace: &Path) -> [(PathBuf, Tier); 4] {
    [
        (workspace.join(".mecatl/settings.local.json"), Tier::ProjectLocal),
        (workspace.join(".claude/settings.local.json"), Tier::ProjectLocal),
        (workspace.join(".mecatl/settings.json"), Tier::Project),
        (workspace.join(".claude/settings.json"), Tier::Project),
    ]
}

/// Which settings files to read.
#[derive(Clone, Debug)]
pub struct Sources {
    /// The workspace (relative path rules are rooted here; project files live here).
    pub workspace: PathBuf,
    /// The managed file (read when it exists).
    pub managed: PathBuf,
    /// `--settings` files, in order (each must exist).
    pub files: Vec<PathBuf>,
    /// Whether the workspace's settings are read (`--trust-project`).
    pub trust_project: bool,
    /// The user's file (read when it exists).
    pub user: Option<PathBuf>,
    /// The home directory (`~/` in path rules).
    pub home: Option<PathBuf>,
}

impl Sources {
    /// The standard sources for `workspace`: the managed path, the user's file, no
    /// `--settings`, the project untrusted.
    pub fn standard(workspace: PathBuf) -> Self {
        Self {
            workspace,
            managed: managed_settings_path(),
            files: Vec::new(),
            trust_project: false,
            user: user_settings_path(),
            home: std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// The operator's policy: the rules of every settings file read, added up, and
/// their hooks.
#[derive(Debug)]
pub struct Policy {
    files: Vec<PathBuf>,
    rules: RwLock<Vec<Rule>>,
    hooks: Vec<HookCommand>,
    default_mode: Option<PermissionMode>,
    ignored: Vec<String>,
    roots: Roots,
    persist_to: Option<PathBuf>,
}

impl Policy {
    /// Reads every source. `known` says which tool names exist (a rule naming
    /// another is an error).
    pub fn load(sources: &Sources, known: &dyn Fn(&str) -> bool) -> Result<Self, SettingsError> {
        let workspace =
            std::fs::canonicalize(&sources.workspace).unwrap_or_else(|_| sources.workspace.clone());
        let roots = Roots {
            workspace: workspace.clone(),
            home: sources.home.clone(),
        };
        let mut wanted: Vec<(PathBuf, Tier, bool, bool)> =
            vec![(sources.managed.clone(), Tier::Managed, false, false)];
        wanted.extend(
            sources
                .files
                .iter()
                .map(|f| (f.clone(), Tier::CommandLine, true, false)),
        );
        if sources.trust_project {
            wanted.extend(
                project_settings_paths(&workspace)
                    .into_iter()
                    .map(|(p, t)| (p, t, false, true)),
            );
        }
        if let Some(user) = &sources.user {
            wanted.push((user.clone(), Tier::User, false, false));
        }
        let mut read = Vec::new();
        for (path, tier, required, nofollow) in wanted {
            match settings::read_text(&path, nofollow)? {
                Some(text) => read.push(settings::parse(&path, tier, &text, &roots, known)?),
                None if required => {
                    return Err(SettingsError {
                        file: path,
                        json_path: "$".to_owned(),
                        expected: "does not exist (--settings names a file that must exist)".to_owned(),
                    });
                }
                None => {}
            }
        }
        Ok(Self::from_files(read, roots))
    }

    /// A policy from files already read (an embedder's own sources), most
    /// authoritative first.
    pub fn from_files(files: Vec<SettingsFile>, roots: Roots) -> Self {
        let managed_hooks_only = files
            .iter()
            .any(|f| f.tier == Tier::Managed && f.managed_hooks_only);
        let mut ignored = Vec::new();
        let mut rules = Vec::new();
        let mut hooks = Vec::new();
        let mut default_mode = None;
        for file in &files {
            ignored.extend(
                file.ignored
                    .iter()
                    .map(|key| format!("{}: {key}", file.path.display())),
            );
            rules.extend(file.rules.iter().cloned());
            if managed_hooks_only && file.tier != Tier::Managed && !file.hooks.is_empty() {
                ignored.push(format!(
                    "{}: $.hooks (the managed settings allow managed hooks only)",
                    file.path.display()
                ));
            } else {
                hooks.extend(file.hooks.iter().cloned());
            }
            default_mode = default_mode.or(file.default_mode);
        }
        Self {
            files: files.into_iter().map(|f| f.path).collect(),
            rules: RwLock::new(rules),
            hooks,
            default_mode,
            ignored,
            roots,
            persist_to: None,
        }
    }

    /// The same policy saving each "allow always" answer as an `allow` rule in the
    /// project's `.mecatl/settings.local.json`.
    #[must_use]
    pub fn persisting_approvals(mut self) -> Self {
        self.persist_to = Some(self.roots.workspace.join(".mecatl/settings.local.json"));
        self
    }

    /// The files read, most authoritative first.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Keys and rules read but not used, each once, with their file.
    pub fn ignored(&self) -> &[String] {
        &self.ignored
    }

    /// `permissions.defaultMode` of the most authoritative file that sets it.
    pub fn default_mode(&self) -> Option<PermissionMode> {
        self.default_mode
    }

    /// The hook commands of every file (only the managed file's under
    /// `allowManagedHooksOnly`).
    pub fn hook_commands(&self) -> &[HookCommand] {
        &self.hooks
    }

    /// The hooks, run in the workspace with `stripped` variables removed.
    pub fn command_hooks(&self, stripped: fn(&std::ffi::OsStr) -> bool) -> CommandHooks {
        CommandHooks::new(self.hooks.clone(), self.roots.workspace.clone(), stripped)
    }

    /// The hooks, run in the workspace with `stripped` variables removed and
    /// confined as `confinement` says (the session's `Shell` rule).
    ///
    /// # Errors
    /// The private temporary directory of confined hooks cannot be created.
    pub fn confined_hooks(
        &self,
        stripped: fn(&std::ffi::OsStr) -> bool,
        confinement: Confinement,
    ) -> std::io::Result<CommandHooks> {
        self.command_hooks(stripped).with_confinement(confinement)
    }

    /// The bare rule of the whole tool `name` (or its MCP server): a `deny` (the
    /// tool is hidden) before an `ask` (it always asks).
    pub fn whole_tool(&self, name: &str) -> Option<RuleMatch> {
        let rules = self.read_rules();
        [RuleEffect::Deny, RuleEffect::Ask]
            .into_iter()
            .find_map(|effect| {
                rules
                    .iter()
                    .find(|r| r.effect == effect && r.covers_whole_tool(name))
                    .map(matched)
            })
    }

    fn read_rules(&self) -> std::sync::RwLockReadGuard<'_, Vec<Rule>> {
        self.rules
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn matched(rule: &Rule) -> RuleMatch {
    RuleMatch {
        effect: rule.effect,
        rule: rule.text.clone(),
        source: rule.source.clone(),
    }
}

impl PermissionRules for Policy {
    fn check(&self, call: &ToolCall) -> Option<RuleMatch> {
        let rules = self.read_rules();
        // Without rules there is nothing to match: the call's view (its paths
        // resolved through the file system) is not worth building.
        if rules.is_empty() {
            return None;
        }
        let view = rules::CallView::new(call, &self.roots);
        for effect in [RuleEffect::Deny, RuleEffect::Ask] {
            if let Some(rule) = rules
                .iter()
                .find(|r| r.effect == effect && r.matches(&view, false))
            {
                return Some(matched(rule));
            }
        }
        let allows = || rules.iter().filter(|r| r.effect == RuleEffect::Allow);
        // A compound shell command is allowed only when every part is, by any rule.
        if let Some(Ok(parts)) = &view.shell
            && parts.len() > 1
        {
            let mut used = Vec::new();
            for part in parts {
                let rule = allows().find(|r| r.is_shell() && r.allows_part(part))?;
                if !used.iter().any(|u: &&Rule| u.text == rule.text) {
                    used.push(rule);
                }
            }
            let first = used.first()?;
            return Some(RuleMatch {
                effect: RuleEffect::Allow,
                rule: used
                    .iter()
                    .map(|r| r.text.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                source: first.source.clone(),
            });
        }
        allows().find(|r| r.matches(&view, true)).map(matched)
    }

    fn hides(&self, name: &str) -> Option<RuleMatch> {
        self.read_rules()
            .iter()
            .find(|r| r.effect == RuleEffect::Deny && r.covers_whole_tool(name))
            .map(matched)
    }

    fn suggest(&self, call: &ToolCall) -> Option<String> {
        self.persist_to.as_ref()?;
        learned_rule(call)
    }

    fn learn(&self, call: &ToolCall) -> Option<RuleMatch> {
        let path = self.persist_to.as_ref()?;
        let text = learned_rule(call)?;
        match persist_allow(path, &text) {
            Ok(()) => {
                let source = path.display().to_string();
                if let Ok(rule) = Rule::parse(&text, RuleEffect::Allow, &source, &self.roots, &|_| true) {
                    self.rules
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(rule);
                }
                Some(RuleMatch {
                    effect: RuleEffect::Allow,
                    rule: text,
                    source,
                })
            }
            Err(error) => {
                tracing::warn!(%error, "the approval was not saved");
                None
            }
        }
    }
}
