//! Workspace confinement: where a model-given path really points, or why it is refused.
//!
//! A path is joined to the workspace root (unless absolute) and normalized lexically;
//! it must then lie inside the root. Its longest existing prefix is canonicalized
//! (following symlinks) and must lie inside the canonical root. A dangling symlink on
//! the way is resolved by hand, hop by hop, under the same rule. The tools then work on
//! the resolved path (canonical prefix + the part that does not exist yet), never on
//! the path as given.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use engine_core::{Environment, ToolError};

use crate::root_cache::RootCache;

/// Symlink hops followed by hand before giving up (the kernel's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// How long a workspace root's canonical form is reused before the root is
/// resolved again.
///
/// Resolving the root costs a `readlink` per component of its path on every call.
/// A root renamed or replaced meanwhile is seen that much later at most; until then
/// calls stay confined to the directory it last resolved to (never wider: every
/// file path is still resolved per call and must lie inside it).
const ROOT_REFRESH: Duration = Duration::from_secs(1);

static ROOTS: LazyLock<RootCache<PathBuf>> = LazyLock::new(|| RootCache::new(ROOT_REFRESH));

/// The canonical form of `root` as of `now`: the one resolved in the last
/// [`ROOT_REFRESH`], else resolved again.
fn canonical_root(roots: &RootCache<PathBuf>, root: &Path, now: Instant) -> io::Result<PathBuf> {
    roots.get_or_work_out(root, now, || std::fs::canonicalize(root))
}

/// The workspace root, lexically normalized and canonicalized (at most once per
/// [`ROOT_REFRESH`] for [`Workspace::of`]).
#[derive(Clone, Debug)]
pub(crate) struct Workspace {
    root: PathBuf,
    canonical_root: PathBuf,
}

/// A path that passed confinement.
#[derive(Clone, Debug)]
pub(crate) struct Confined {
    /// The lexical path relative to the workspace root (`.` for the root itself), for
    /// display.
    pub(crate) relative: PathBuf,
    /// Where file-system operations go: the canonical existing prefix joined with the
    /// part that does not exist yet. Always inside the canonical root.
    pub(crate) resolved: PathBuf,
}

/// Why a path was refused.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// It leads outside the workspace.
    Outside,
    /// It could not be resolved (a symlink loop, a permission error).
    Unresolvable(io::Error),
}

impl Workspace {
    /// The canonical workspace root.
    pub(crate) fn canonical_root(&self) -> &Path {
        &self.canonical_root
    }

    /// The workspace of `env`, its canonical root resolved in the last
    /// [`ROOT_REFRESH`].
    ///
    /// # Errors
    /// [`ToolError::Failed`] when the root is not accessible (a harness fault).
    pub(crate) fn of(env: &Environment) -> Result<Self, ToolError> {
        let root = env.workspace_root();
        canonical_root(&ROOTS, root, Instant::now())
            .map(|canonical_root| Self {
                root: normalize(root),
                canonical_root,
            })
            .map_err(|error| {
                ToolError::Failed(format!(
                    "workspace root {} is not accessible: {error}",
                    root.display()
                ))
            })
    }

    /// Like [`Workspace::confine`], with a refusal already turned into the
    /// model-facing message.
    pub(crate) fn confine_or_explain(&self, given: &str) -> Result<Confined, String> {
        self.confine(given)
            .map_err(|refusal| refusal.message(given, &self.root))
    }

    /// Confines `given` (relative to the root, or absolute).
    ///
    /// # Errors
    /// [`Refusal::Outside`] when the lexical path or any resolved form of it leaves the
    /// workspace; [`Refusal::Unresolvable`] when resolution fails other than by a
    /// missing component.
    pub(crate) fn confine(&self, given: &str) -> Result<Confined, Refusal> {
        let lexical = normalize(&self.root.join(given));
        let relative = if let Ok(rest) = lexical.strip_prefix(&self.root) {
            rest.to_path_buf()
        } else if let Ok(rest) = lexical.strip_prefix(&self.canonical_root) {
            rest.to_path_buf()
        } else {
            return Err(Refusal::Outside);
        };
        let resolved = self.resolve(lexical)?;
        let relative = if relative.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            relative
        };
        Ok(Confined { relative, resolved })
    }

    /// Canonicalizes the longest existing prefix of `path` and checks it; follows a
    /// dangling symlink right after that prefix by hand.
    fn resolve(&self, mut path: PathBuf) -> Result<PathBuf, Refusal> {
        for _ in 0..MAX_SYMLINK_HOPS {
            let (prefix, rest) = longest_existing_prefix(&path).map_err(Refusal::Unresolvable)?;
            if !prefix.starts_with(&self.canonical_root) {
                return Err(Refusal::Outside);
            }
            let mut components = rest.components();
            let Some(first) = components.next() else {
                return Ok(prefix);
            };
            let candidate = prefix.join(first);
            match std::fs::symlink_metadata(&candidate) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    // A symlink canonicalize could not follow: its target is missing.
                    let target = std::fs::read_link(&candidate).map_err(Refusal::Unresolvable)?;
                    path = normalize(&prefix.join(target).join(components.as_path()));
                }
                _ => return Ok(prefix.join(rest)),
            }
        }
        Err(Refusal::Unresolvable(io::Error::other(
            "too many levels of symbolic links",
        )))
    }
}

impl Refusal {
    /// The model-facing message for the path `given` in the workspace `root`.
    pub(crate) fn message(&self, given: &str, root: &Path) -> String {
        match self {
            Self::Outside => format!(
                "path {given:?} is outside the workspace ({}); use a path relative to the workspace root",
                root.display()
            ),
            Self::Unresolvable(error) => format!("cannot resolve path {given:?}: {error}"),
        }
    }
}

/// The longest prefix of `path` that exists, canonicalized, and the rest of `path`.
fn longest_existing_prefix(path: &Path) -> io::Result<(PathBuf, PathBuf)> {
    for ancestor in path.ancestors() {
        match std::fs::canonicalize(ancestor) {
            Ok(canonical) => {
                let rest = path.strip_prefix(ancestor).map_err(io::Error::other)?;
                return Ok((canonical, rest.to_path_buf()));
            }
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) => {}
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::new(io::ErrorKind::NotFound, "no existing ancestor"))
}

/// `path` with `.` removed and `..` applied lexically (never above the file-system
/// root). Touches no file system.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roots_canonical_form_is_reused_for_a_while_then_resolved_again() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("first");
        let second = dir.path().join("second");
        std::fs::create_dir(&first).unwrap();
        std::fs::create_dir(&second).unwrap();
        let root = dir.path().join("ws");
        std::os::unix::fs::symlink(&first, &root).unwrap();
        let roots = RootCache::new(ROOT_REFRESH);
        let start = Instant::now();
        let canonical = |at: Instant| canonical_root(&roots, &root, at).unwrap();
        let first = std::fs::canonicalize(&first).unwrap();
        let second = std::fs::canonicalize(&second).unwrap();
        assert_eq!(canonical(start), first);

        // The root now leads elsewhere: the canonical form kept is used until it is
        // stale, then the root is resolved again.
        std::fs::remove_file(&root).unwrap();
        std::os::unix::fs::symlink(&second, &root).unwrap();
        assert_eq!(canonical(start + ROOT_REFRESH / 2), first);
        assert_eq!(canonical(start + ROOT_REFRESH), second);

        // A root that is gone is an error once its canonical form is stale.
        std::fs::remove_file(&root).unwrap();
        assert!(canonical_root(&roots, &root, start + ROOT_REFRESH * 3).is_err());
    }

    #[test]
    fn normalize_applies_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/a/../../..")), PathBuf::from("/"));
        assert_eq!(normalize(Path::new("/a/b/")), PathBuf::from("/a/b"));
    }

    #[test]
    #[allow(
        clippy::join_absolute_paths,
        reason = "what confine does with an absolute given path"
    )]
    fn an_absolute_given_path_replaces_the_root() {
        assert_eq!(
            normalize(&Path::new("/ws").join("/etc/passwd")),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(normalize(&Path::new("/ws").join("")), PathBuf::from("/ws"));
    }
}
