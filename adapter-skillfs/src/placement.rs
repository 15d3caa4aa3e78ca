//! The startup check on where the quarantine lies.

use std::path::{Component, Path, PathBuf};

/// The quarantine overlaps what it must stay apart from. Startup fails with it; the
/// text names the flags.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// The quarantine is the workspace or inside it.
    #[error(
        "--skills-draft-dir {} lies inside the workspace {} (--workspace): drafts must be kept outside the workspace",
        quarantine.display(), workspace.display()
    )]
    InsideWorkspace {
        /// The quarantine.
        quarantine: PathBuf,
        /// The workspace.
        workspace: PathBuf,
    },
    /// The quarantine and an active skill directory contain one another.
    #[error(
        "--skills-draft-dir {} overlaps the active skill directory {} (--skills-dir or a conventional location): they must be disjoint",
        quarantine.display(), dir.display()
    )]
    OverlapsSkillDir {
        /// The quarantine.
        quarantine: PathBuf,
        /// The skill directory.
        dir: PathBuf,
    },
}

/// Checks that `quarantine` lies outside `workspace` (when non-empty) and is disjoint
/// from every active skill directory (neither contains the other). Paths are compared
/// after resolving symlinks in their existing part; relative paths resolve against
/// `cwd`.
///
/// # Errors
/// The first overlap found.
pub fn check_quarantine_placement(
    quarantine: &Path,
    workspace: &Path,
    skill_dirs: &[PathBuf],
    cwd: &Path,
) -> Result<(), PlacementError> {
    let q = resolve(quarantine, cwd);
    if !workspace.as_os_str().is_empty() {
        let ws = resolve(workspace, cwd);
        if q.starts_with(&ws) {
            return Err(PlacementError::InsideWorkspace {
                quarantine: quarantine.to_path_buf(),
                workspace: workspace.to_path_buf(),
            });
        }
    }
    for dir in skill_dirs {
        let d = resolve(dir, cwd);
        if q.starts_with(&d) || d.starts_with(&q) {
            return Err(PlacementError::OverlapsSkillDir {
                quarantine: quarantine.to_path_buf(),
                dir: dir.clone(),
            });
        }
    }
    Ok(())
}

/// `path` made absolute, its longest existing prefix canonicalized and the rest
/// normalised lexically (`.` dropped, `..` popping).
fn resolve(path: &Path, cwd: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut lexical = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.file_name().map(ToOwned::to_owned), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return lexical,
        }
    }
}
