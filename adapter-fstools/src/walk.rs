//! The directory walk `Glob` and `Grep` share: honours ignore files, skips `.git`,
//! never follows symlinks, returns entries sorted by path.

use std::path::{Path, PathBuf};

use engine_ports::CancellationToken;
use ignore::WalkBuilder;

/// One non-directory entry under the walk root.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// Absolute path.
    pub(crate) path: PathBuf,
    /// Path relative to the walk root, `/`-separated.
    pub(crate) relative: PathBuf,
    /// Whether it is a regular file (otherwise a symlink to a regular file).
    pub(crate) regular: bool,
}

/// The walk was cancelled.
#[derive(Debug)]
pub(crate) struct Cancelled;

/// Regular files, and symlinks whose target is a regular file, under `root` (a
/// directory), sorted by relative path. Ignore files (`.gitignore`, `.ignore`,
/// `.git/info/exclude`, also in parent directories) are honoured whether or not the
/// tree is a git repository; the user's global git excludes are not (the result must
/// not depend on the machine). Hidden files are included; anything named `.git` is
/// skipped. Unreadable directories are skipped.
pub(crate) fn files(root: &Path, cancel: &CancellationToken) -> Result<Vec<Entry>, Cancelled> {
    let walker = WalkBuilder::new(root)
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut out = Vec::new();
    for item in walker {
        if cancel.is_cancelled() {
            return Err(Cancelled);
        }
        let entry = match item {
            Ok(entry) => entry,
            Err(error) => {
                tracing::debug!(%error, "skipping an unreadable entry");
                continue;
            }
        };
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        let regular = file_type.is_file();
        let file_symlink =
            file_type.is_symlink() && std::fs::metadata(entry.path()).is_ok_and(|meta| meta.is_file());
        if !regular && !file_symlink {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        out.push(Entry {
            relative: relative.to_path_buf(),
            path: entry.path().to_path_buf(),
            regular,
        });
    }
    out.sort_by(|a, b| a.relative.as_os_str().cmp(b.relative.as_os_str()));
    Ok(out)
}

/// `relative` shown from the workspace root, given the walk root's own relative path.
pub(crate) fn display(base: &Path, relative: &Path) -> String {
    if base == Path::new(".") {
        relative.to_string_lossy().into_owned()
    } else {
        base.join(relative).to_string_lossy().into_owned()
    }
}
