//! The workspace-copy port: [`WorkspaceForker`] makes private copies of a workspace
//! ([`WorkspaceCopy`]) for children that must not touch it (`Parallel` branches,
//! mutating team members); a copy reports what changed in it and can apply that to
//! the tree it was copied from.

use std::fmt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How a path differs between a copy and the tree it was copied from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// In the copy only.
    Added,
    /// In both, changed in the copy.
    Modified,
    /// Removed from the copy.
    Deleted,
}

impl ChangeKind {
    /// `added`, `modified` or `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
        }
    }
}

/// One changed file (or symlink) of a copy, by its path relative to the workspace
/// root (`/`-separated).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileChange {
    /// The path relative to the root.
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
}

impl fmt::Display for FileChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.path)
    }
}

/// A copy that could not be made, read or applied. Messages name the paths involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// Copying failed (nothing of the copy is left behind).
    #[error("copying the workspace {} failed: {reason}", source_root.display())]
    Copy {
        /// The tree being copied.
        source_root: PathBuf,
        /// What went wrong, with the path at fault.
        reason: String,
    },
    /// The tree is over a limit of the forker.
    #[error("the workspace {} is too large to copy: {reason}", source_root.display())]
    TooLarge {
        /// The tree.
        source_root: PathBuf,
        /// Which limit, and by how much.
        reason: String,
    },
    /// The copy was cancelled.
    #[error("copying the workspace was cancelled")]
    Cancelled,
    /// Applying was refused: these paths changed in the original tree since the copy
    /// was taken (nothing was applied).
    #[error(
        "applying the copy {} was refused: {} changed in the workspace since the copy was taken ({}); nothing was applied",
        copy.display(),
        if paths.len() == 1 { "this file" } else { "these files" },
        paths.join(", ")
    )]
    Conflict {
        /// The copy.
        copy: PathBuf,
        /// The conflicting paths, sorted.
        paths: Vec<String>,
    },
    /// The directory copies go in is unsafe or unusable (nothing was copied).
    #[error("the directory for workspace copies {} cannot be used: {reason}", base.display())]
    Base {
        /// The base directory.
        base: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The copies asked for do not fit the forker's budget of bytes held by copies
    /// at once (nothing was copied).
    #[error(
        "copying the workspace {} needs {needed} bytes ({copies} cop{} of {size} bytes), over the budget of \
         {budget} bytes for workspace copies ({held} bytes are held by copies already); nothing was copied",
        source_root.display(),
        if *copies == 1 { "y" } else { "ies" }
    )]
    OverBudget {
        /// The tree.
        source_root: PathBuf,
        /// How many copies were asked for.
        copies: u64,
        /// The bytes of one copy.
        size: u64,
        /// The bytes they need together.
        needed: u64,
        /// The budget.
        budget: u64,
        /// The bytes of copies already held.
        held: u64,
    },
    /// Writing the changes failed part-way: every change made so far was undone
    /// (unless `outcome` says otherwise).
    #[error("applying the copy {} failed at {}: {reason}; {outcome}", copy.display(), path.display())]
    ApplyFailed {
        /// The copy.
        copy: PathBuf,
        /// The path (in the original tree) whose change failed.
        path: PathBuf,
        /// Why.
        reason: String,
        /// What became of the changes already made: rolled back, or what is left.
        outcome: String,
    },
    /// Reading the copy, or writing a change, failed.
    #[error("{op} {} failed: {reason}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
}

/// A private copy of a workspace. Dropping it removes the directory, unless it was
/// preserved.
///
/// # Contract
/// - [`WorkspaceCopy::changes`] lists the files and symlinks that differ from the tree
///   as it was when copied (sorted by path; directories are not listed), whatever
///   happened to the original since.
/// - [`WorkspaceCopy::apply`] writes those changes into the original tree, after
///   checking every changed path first: one that changed in the original since the
///   copy was taken (or now leads outside it) refuses the whole apply with
///   [`ForkError::Conflict`] and nothing is written. Each file is replaced whole, and
///   the apply is all or nothing: when a write fails part-way, every change made is
///   undone and [`ForkError::ApplyFailed`] names the path and the cause.
/// - [`WorkspaceCopy::preserve`] keeps the directory after the copy is dropped (the
///   forker may still evict it to honour its limit of preserved copies); it returns
///   whether it is kept.
/// - [`WorkspaceCopy::discard`] removes the directory before returning.
#[async_trait]
pub trait WorkspaceCopy: Send + Sync {
    /// The copy's root directory (absolute).
    fn root(&self) -> &Path;

    /// The tree it was copied from.
    fn source(&self) -> &Path;

    /// What changed in the copy.
    async fn changes(&self) -> Result<Vec<FileChange>, ForkError>;

    /// Writes the copy's changes into the original tree; returns them.
    async fn apply(&self) -> Result<Vec<FileChange>, ForkError>;

    /// Keeps the directory after the copy is dropped.
    fn preserve(&self) -> bool;

    /// Removes the directory now.
    async fn discard(self: Box<Self>);
}

impl fmt::Debug for dyn WorkspaceCopy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkspaceCopy")
            .field("root", &self.root())
            .field("source", &self.source())
            .finish()
    }
}

/// Makes private copies of a workspace.
///
/// # Contract
/// - [`WorkspaceForker::fork`] copies the whole tree under `source` (hidden files and
///   `.git` included) into a fresh directory no other copy uses: regular files with
///   their contents and permission bits, directories, and symlinks as symlinks (their
///   target text, never followed); other file types are left out. It never writes
///   under `source`.
/// - A failed or cancelled fork leaves nothing behind and says why (never a partial
///   copy presented as whole).
/// - `label` only names the directory (for people reading the path); two forks with
///   one label get different directories.
#[async_trait]
pub trait WorkspaceForker: Send + Sync {
    /// Checks, before any copying, that `copies` copies of `source` fit within the
    /// forker's budget of bytes held by copies at once ([`ForkError::OverBudget`]
    /// otherwise). A forker without a budget accepts every call (the default).
    async fn check_budget(&self, source: &Path, copies: usize) -> Result<(), ForkError> {
        let _ = (source, copies);
        Ok(())
    }

    /// Copies `source`.
    async fn fork(
        &self,
        source: &Path,
        label: &str,
        cancel: &CancellationToken,
    ) -> Result<Box<dyn WorkspaceCopy>, ForkError>;
}
