//! Where project memory and the user model live ([`MemoryConfig`], the default
//! directories and database scopes, the workspace token) and opening their stores
//! ([`open_memory`]): a directory outside the workspace through `adapter-memoryfs`,
//! a scope (one row) in the `--store-url` database through `adapter-pgstore`, or in
//! memory.
//!
//! With `--store-url`, both scopes default to the database (a scope named as the
//! default directory is: `project:<workspace token>`, `user-model:<login name>`), so
//! replicas sharing the database share memory; `--memory-dir` / `--user-model-dir`
//! given explicitly keep that scope in files, `--no-memory` / `--no-user-model` turn
//! it off.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use adapter_memoryfs::{MemoryFs, MemoryFsOptions};
use adapter_pgstore::{PgMemoryStore, PgStoreOptions, StoreUrl};
use engine_core::InMemoryMemory;
use engine_ports::{Diagnostic, Level, MemoryStore};
use sha2::{Digest, Sha256};

use crate::error::BuildError;

/// Where one memory scope lives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MemorySetting {
    /// Turned off (`--no-memory`, `--no-user-model`): the family is not registered.
    #[default]
    Off,
    /// In memory only (library callers and tests); nothing survives the process.
    InMemory,
    /// A directory the operator named (`--memory-dir`, `--user-model-dir`); one inside
    /// the workspace fails the build.
    Dir(PathBuf),
    /// The default directory under the user's state or config dir; one that lands
    /// inside the workspace turns the family off with a warning.
    DefaultDir(PathBuf),
    /// No default directory could be found (no `$HOME`, no XDG variable): the family
    /// is off, and the reason is reported.
    Unavailable(String),
    /// A scope of the `--store-url` database (the default when the store is one and
    /// no directory flag is given).
    Database {
        /// The database (its `Debug` and `Display` never show the password).
        url: Box<StoreUrl>,
        /// Time limits of its calls.
        options: PgStoreOptions,
        /// The scope's name ([`project_memory_scope`], [`user_model_scope`]).
        scope: String,
    },
}

/// Both memory scopes. The library default is both off; the command line turns them
/// on at their default directories.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryConfig {
    /// Project memory (`Remember`, `Recall`, `SearchMemory`, `ForgetMemory`).
    pub project: MemorySetting,
    /// The user model (`RememberUser`, `RecallUser`, `SearchUserModel`, `ForgetUser`).
    pub user: MemorySetting,
}

/// The environment the default directories come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryEnv {
    /// `$HOME` (ignored unless absolute).
    pub home: Option<PathBuf>,
    /// `$XDG_STATE_HOME` (ignored unless absolute).
    pub xdg_state_home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME` (ignored unless absolute).
    pub xdg_config_home: Option<PathBuf>,
    /// The login name (`$USER`, else `$LOGNAME`), naming the user model's database
    /// scope.
    pub user: Option<String>,
}

impl MemoryEnv {
    /// Reads `$HOME`, `$XDG_STATE_HOME`, `$XDG_CONFIG_HOME` and the login name.
    pub fn from_process() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        let user = ["USER", "LOGNAME"]
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|user| !user.is_empty());
        Self {
            home: var("HOME"),
            xdg_state_home: var("XDG_STATE_HOME"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            user,
        }
    }

    fn absolute(path: Option<&PathBuf>) -> Option<&PathBuf> {
        path.filter(|p| p.is_absolute())
    }

    /// `xdg` when it is absolute, else `$HOME/<under_home>`; `None` without either.
    fn xdg_base(&self, xdg: Option<&PathBuf>, under_home: &str) -> Option<PathBuf> {
        match (Self::absolute(xdg), Self::absolute(self.home.as_ref())) {
            (Some(base), _) => Some(base.clone()),
            (None, Some(home)) => Some(home.join(under_home)),
            (None, None) => None,
        }
    }

    /// `$XDG_STATE_HOME/mecatl/memory/<workspace token>` (else `~/.local/state/…`).
    pub fn default_memory_dir(&self, workspace: &Path) -> MemorySetting {
        match self.xdg_base(self.xdg_state_home.as_ref(), ".local/state") {
            Some(base) => {
                MemorySetting::DefaultDir(base.join("mecatl/memory").join(workspace_token(workspace)))
            }
            None => MemorySetting::Unavailable(
                "project memory is off: neither $XDG_STATE_HOME nor $HOME is set; pass --memory-dir DIR"
                    .to_owned(),
            ),
        }
    }

    /// The terminal client's directory of a workspace (its sessions and prompt
    /// history): `$XDG_STATE_HOME/mecatl/chat/<workspace token>` (else
    /// `~/.local/state/…`); `None` without either variable.
    pub fn chat_dir(&self, workspace: &Path) -> Option<PathBuf> {
        self.xdg_base(self.xdg_state_home.as_ref(), ".local/state")
            .map(|base| base.join("mecatl/chat").join(workspace_token(workspace)))
    }

    /// `$XDG_CONFIG_HOME/mecatl/usermodel` (else `~/.config/…`).
    pub fn default_user_model_dir(&self) -> MemorySetting {
        match self.xdg_base(self.xdg_config_home.as_ref(), ".config") {
            Some(base) => MemorySetting::DefaultDir(base.join("mecatl/usermodel")),
            None => MemorySetting::Unavailable(
                "the user model is off: neither $XDG_CONFIG_HOME nor $HOME is set; pass --user-model-dir DIR"
                    .to_owned(),
            ),
        }
    }
}

/// The database scope of a workspace's project memory: `project:<workspace token>`,
/// the name of its default directory, so a workspace at the same path on every replica
/// shares one scope.
pub fn project_memory_scope(workspace: &Path) -> String {
    format!("project:{}", workspace_token(workspace))
}

/// The database scope of the user model: `user-model:<login name>` (`$USER`, else
/// `$LOGNAME`, else `default`), as the default directory is one per login (replicas
/// running as one service account share one).
pub fn user_model_scope(env: &MemoryEnv) -> String {
    format!("user-model:{}", env.user.as_deref().unwrap_or("default"))
}

/// The per-workspace directory name: up to 40 characters of the workspace's last
/// component (outside `[A-Za-z0-9_-]` → `_`), `-`, then 32 hex digits of the SHA-256
/// of its canonical path, so two workspaces never share memory and the name still
/// says which workspace it is.
pub fn workspace_token(workspace: &Path) -> String {
    let canonical = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = if name.is_empty() { "root".to_owned() } else { name };
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("{name}-{hex}")
}

/// An opened memory scope.
#[derive(Clone)]
pub struct OpenedMemory {
    /// The store.
    pub store: Arc<dyn MemoryStore>,
    /// Its directory (`None` in memory or in a database).
    pub dir: Option<PathBuf>,
    /// Its database scope (`None` unless in a database).
    pub scope: Option<String>,
    /// Where it lives, for people: the directory, `scope "…" in PostgreSQL at
    /// host:port/db`, or `in memory`.
    pub place: String,
}

impl std::fmt::Debug for OpenedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedMemory")
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

/// Both scopes as opened by [`open_memory`].
#[derive(Clone, Debug, Default)]
pub struct MemoryStores {
    /// Project memory, when on.
    pub project: Option<OpenedMemory>,
    /// The user model, when on.
    pub user: Option<OpenedMemory>,
    /// Why a scope is off, as data.
    pub diagnostics: Vec<Diagnostic>,
}

/// Opens the stores `config` describes for the workspace `root` (canonical). A
/// directory is neither read nor created yet (it comes into being with its first
/// write); a database is connected (its schema migrated) once, both scopes sharing the
/// connections.
///
/// # Errors
/// [`BuildError::MemoryDir`] when `--memory-dir` or `--user-model-dir` lies inside the
/// workspace (the model's file tools could read and rewrite it) or is not a directory;
/// [`BuildError::Database`] when the database cannot be opened (naming the server).
pub async fn open_memory(config: &MemoryConfig, root: &Path) -> Result<MemoryStores, BuildError> {
    let mut stores = MemoryStores::default();
    let mut database: Option<PgMemoryStore> = None;
    stores.project = open_one(
        &config.project,
        root,
        "--memory-dir",
        "project memory",
        &mut stores.diagnostics,
        &mut database,
    )
    .await?;
    stores.user = open_one(
        &config.user,
        root,
        "--user-model-dir",
        "the user model",
        &mut stores.diagnostics,
        &mut database,
    )
    .await?;
    Ok(stores)
}

/// The scope `scope` of `url`, over the connections of `opened` when it is on the
/// same database.
async fn open_scope(
    url: &StoreUrl,
    options: PgStoreOptions,
    scope: &str,
    opened: &mut Option<PgMemoryStore>,
) -> Result<OpenedMemory, BuildError> {
    let failed = |error: adapter_pgstore::OpenError| BuildError::Database {
        url: url.to_string(),
        reason: error.to_string(),
    };
    let store = match opened.as_ref() {
        Some(first) if first.target() == url.target() => first.scope(scope).map_err(failed)?,
        _ => {
            let store = PgMemoryStore::open(url, options, scope).await.map_err(failed)?;
            *opened = Some(store.clone());
            store
        }
    };
    Ok(OpenedMemory {
        place: format!("scope {scope:?} in PostgreSQL at {}", store.target()),
        store: Arc::new(store),
        dir: None,
        scope: Some(scope.to_owned()),
    })
}

async fn open_one(
    setting: &MemorySetting,
    root: &Path,
    flag: &'static str,
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
    database: &mut Option<PgMemoryStore>,
) -> Result<Option<OpenedMemory>, BuildError> {
    let warn = |diagnostics: &mut Vec<Diagnostic>, message: String| {
        tracing::warn!("{message}");
        diagnostics.push(Diagnostic {
            level: Level::Warn,
            message,
        });
    };
    let (dir, explicit) = match setting {
        MemorySetting::Off => return Ok(None),
        MemorySetting::Unavailable(reason) => {
            warn(diagnostics, reason.clone());
            return Ok(None);
        }
        MemorySetting::InMemory => {
            return Ok(Some(OpenedMemory {
                store: Arc::new(InMemoryMemory::new()),
                dir: None,
                scope: None,
                place: "in memory".to_owned(),
            }));
        }
        MemorySetting::Database { url, options, scope } => {
            return open_scope(url, *options, scope, database).await.map(Some);
        }
        MemorySetting::Dir(dir) => (dir, true),
        MemorySetting::DefaultDir(dir) => (dir, false),
    };
    let refused = |reason: String| BuildError::MemoryDir {
        flag,
        path: dir.clone(),
        reason,
    };
    let resolved = resolve(dir).map_err(|e| refused(e.to_string()))?;
    if resolved.starts_with(root) {
        let reason = format!(
            "it lies inside the workspace {}; memory must live outside it, where the model's file tools \
             cannot read or rewrite it",
            root.display()
        );
        if explicit {
            return Err(refused(reason));
        }
        warn(
            diagnostics,
            format!(
                "{what} is off: its default directory {} {reason}; pass {flag} DIR",
                dir.display()
            ),
        );
        return Ok(None);
    }
    if resolved.exists() && !resolved.is_dir() {
        return Err(refused("it is not a directory".to_owned()));
    }
    Ok(Some(OpenedMemory {
        store: Arc::new(MemoryFs::open(&resolved, MemoryFsOptions::default())),
        place: resolved.display().to_string(),
        dir: Some(resolved),
        scope: None,
    }))
}

/// `dir` made absolute and resolved through its longest existing ancestor (so a
/// symlink into the workspace is seen for what it is), the rest joined lexically.
fn resolve(dir: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(dir)?;
    let mut normal = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    let mut existing = normal.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(&existing) {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Ok(out);
        }
        match (existing.file_name().map(ToOwned::to_owned), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return Ok(normal),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_directories_follow_xdg_then_home() {
        let workspace = Path::new("/nonexistent/my project");
        let env = MemoryEnv {
            home: Some("/home/ana".into()),
            xdg_state_home: Some("/state".into()),
            xdg_config_home: None,
            user: Some("ana".to_owned()),
        };
        let token = workspace_token(workspace);
        assert!(
            token.starts_with("my_project-") && token.len() == "my_project-".len() + 32,
            "{token}"
        );
        assert_eq!(
            env.default_memory_dir(workspace),
            MemorySetting::DefaultDir(PathBuf::from("/state/mecatl/memory").join(&token))
        );
        assert_eq!(
            env.default_user_model_dir(),
            MemorySetting::DefaultDir("/home/ana/.config/mecatl/usermodel".into())
        );
        let home_only = MemoryEnv {
            home: Some("/home/ana".into()),
            ..MemoryEnv::default()
        };
        assert_eq!(
            home_only.default_memory_dir(workspace),
            MemorySetting::DefaultDir(PathBuf::from("/home/ana/.local/state/mecatl/memory").join(&token))
        );
        assert!(matches!(
            MemoryEnv::default().default_user_model_dir(),
            MemorySetting::Unavailable(_)
        ));
        assert_eq!(project_memory_scope(workspace), format!("project:{token}"));
        assert_eq!(user_model_scope(&env), "user-model:ana");
        assert_eq!(user_model_scope(&MemoryEnv::default()), "user-model:default");
        assert_ne!(
            workspace_token(Path::new("/a/x")),
            workspace_token(Path::new("/b/x"))
        );
    }

    #[tokio::test]
    async fn a_memory_dir_inside_the_workspace_is_refused_or_turned_off() {
        let workspace = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(workspace.path()).unwrap();
        let inside = root.join("notes/../.memory");
        let config = MemoryConfig {
            project: MemorySetting::Dir(inside.clone()),
            user: MemorySetting::Off,
        };
        let error = open_memory(&config, &root).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "--memory-dir {} cannot be used: it lies inside the workspace {}; memory must live outside it, \
                 where the model's file tools cannot read or rewrite it",
                inside.display(),
                root.display()
            )
        );
        let config = MemoryConfig {
            project: MemorySetting::Off,
            user: MemorySetting::DefaultDir(root.join("home/.config/mecatl/usermodel")),
        };
        let stores = open_memory(&config, &root).await.unwrap();
        assert!(stores.user.is_none());
        assert!(
            stores.diagnostics[0]
                .message
                .starts_with("the user model is off: its default directory")
        );
        // A symlink from outside into the workspace is inside too.
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&root, outside.path().join("link")).unwrap();
        let config = MemoryConfig {
            project: MemorySetting::Dir(outside.path().join("link/mem")),
            user: MemorySetting::Off,
        };
        assert!(open_memory(&config, &root).await.is_err());
        let config = MemoryConfig {
            project: MemorySetting::Dir(outside.path().join("mem")),
            user: MemorySetting::InMemory,
        };
        let stores = open_memory(&config, &root).await.unwrap();
        assert!(stores.project.unwrap().dir.unwrap().ends_with("mem"));
        assert!(
            !outside.path().join("mem").exists(),
            "nothing is created before a write"
        );
    }
}
