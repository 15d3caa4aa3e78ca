//! Tier resolution: which directories become skill sources, in precedence order, and
//! the trust gate for the workspace's project directories.

use std::path::{Path, PathBuf};

use engine_ports::SkillOrigin;

/// The one trust decision about the workspace (`--trust-project`). It gates the
/// project skill directories and the project command directories alike, at
/// construction: untrusted project directories never become sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProjectTrust {
    /// The workspace's own skills and commands are used.
    Trusted,
    /// They are withheld.
    #[default]
    Untrusted,
}

impl ProjectTrust {
    /// `Trusted` when the operator passed `--trust-project`.
    pub fn from_flag(trust_project: bool) -> Self {
        if trust_project {
            Self::Trusted
        } else {
            Self::Untrusted
        }
    }

    /// Whether the workspace is trusted.
    pub fn is_trusted(self) -> bool {
        self == Self::Trusted
    }
}

/// What the operator asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillsOptions {
    /// `--skills-dir`, in flag order (empty values are skipped; relative ones resolve
    /// against the current directory).
    pub dirs: Vec<PathBuf>,
    /// `--skills-conventional`: also use the project and user locations.
    pub conventional: bool,
    /// The workspace root (`--workspace`); empty means none.
    pub workspace: PathBuf,
    /// The trust decision.
    pub trust: ProjectTrust,
}

/// The parts of the process environment resolution reads, injectable for tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostEnv {
    /// The current directory (relative paths resolve against it).
    pub cwd: PathBuf,
    /// The home directory, when known.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME` as set (unset, empty and relative values are ignored).
    pub xdg_config_home: Option<PathBuf>,
}

impl HostEnv {
    /// Reads the current directory, `$HOME` (ignored unless absolute) and
    /// `$XDG_CONFIG_HOME`.
    ///
    /// # Errors
    /// When the current directory cannot be read.
    pub fn from_process() -> std::io::Result<Self> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute());
        Ok(Self {
            cwd: std::env::current_dir()?,
            home,
            xdg_config_home: std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from),
        })
    }

    /// `path` made absolute against [`HostEnv::cwd`].
    pub fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }
}

/// One skill directory and its tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierDir {
    /// The directory.
    pub path: PathBuf,
    /// The tier its skills carry as `origin`.
    pub tier: SkillOrigin,
}

/// The resolved skill directories.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvedDirs {
    /// Directories that become sources, highest precedence first.
    pub dirs: Vec<TierDir>,
    /// Project directories withheld because the workspace is untrusted (whether or
    /// not they exist).
    pub withheld: Vec<PathBuf>,
}

/// The workspace's project skill directories: `<ws>/.mecatl/skills`, then
/// `<ws>/.claude/skills`.
pub fn project_skill_dirs(workspace: &Path) -> [PathBuf; 2] {
    [workspace.join(".mecatl/skills"), workspace.join(".claude/skills")]
}

/// Resolves the skill directories, highest precedence first (no I/O):
/// 1. each `--skills-dir` (tier `explicit`, never gated);
/// 2. if conventional and the workspace is non-empty and trusted, the project dirs
///    (tier `project`); untrusted, they are listed in `withheld` instead;
/// 3. if conventional, `$XDG_CONFIG_HOME/mecatl/skills`, or
///    `~/.config/mecatl/skills` when XDG is unset, empty or relative (tier `user`);
/// 4. if conventional and a home directory is known, `~/.claude/skills` (tier `user`).
pub fn resolve_skill_dirs(options: &SkillsOptions, env: &HostEnv) -> ResolvedDirs {
    let mut out = ResolvedDirs::default();
    for dir in &options.dirs {
        let Some(dir) = non_empty(dir) else { continue };
        out.dirs.push(TierDir {
            path: env.absolute(&dir),
            tier: SkillOrigin::Explicit,
        });
    }
    if !options.conventional {
        return out;
    }
    if let Some(workspace) = non_empty(&options.workspace) {
        let project = project_skill_dirs(&env.absolute(&workspace));
        if options.trust.is_trusted() {
            out.dirs.extend(project.into_iter().map(|path| TierDir {
                path,
                tier: SkillOrigin::Project,
            }));
        } else {
            out.withheld.extend(project);
        }
    }
    let xdg = env
        .xdg_config_home
        .as_ref()
        .filter(|xdg| !xdg.as_os_str().is_empty() && xdg.is_absolute());
    let config = match (xdg, &env.home) {
        (Some(xdg), _) => Some(xdg.clone()),
        (None, Some(home)) => Some(home.join(".config")),
        (None, None) => None,
    };
    if let Some(config) = config {
        out.dirs.push(TierDir {
            path: config.join("mecatl/skills"),
            tier: SkillOrigin::User,
        });
    }
    if let Some(home) = &env.home {
        out.dirs.push(TierDir {
            path: home.join(".claude/skills"),
            tier: SkillOrigin::User,
        });
    }
    out
}

/// `path` trimmed, or `None` when that leaves nothing.
pub(crate) fn non_empty(path: &Path) -> Option<PathBuf> {
    match path.to_str() {
        Some(text) if text.trim().is_empty() => None,
        Some(text) => Some(PathBuf::from(text.trim())),
        None => Some(path.to_path_buf()),
    }
}
