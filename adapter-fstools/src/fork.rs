//! [`FsForker`]: the filesystem [`WorkspaceForker`] — full copies of a workspace
//! (reflinked where the filesystem can, copied otherwise), change lists against the
//! copied tree, conflict-checked apply, and cleanup on drop with a bounded set of
//! preserved copies.

use std::collections::{BTreeMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use engine_ports::{CancellationToken, ChangeKind, FileChange, ForkError, WorkspaceCopy, WorkspaceForker};

/// Default number of preserved copies kept (`--fork-preserved-cap`).
pub const DEFAULT_PRESERVED_CAP: usize = 8;

/// How large a tree [`FsForker`] copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkLimits {
    /// Most entries (files, directories, symlinks).
    pub max_entries: u64,
    /// Most bytes of regular files.
    pub max_bytes: u64,
}

impl Default for ForkLimits {
    fn default() -> Self {
        Self {
            max_entries: 250_000,
            max_bytes: 16 << 30,
        }
    }
}

/// What one fork did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Regular files copied.
    pub files: u64,
    /// Of them, cloned by reference (`FICLONE`) rather than copied.
    pub reflinked: u64,
    /// Bytes of regular files.
    pub bytes: u64,
}

/// Copies workspaces into directories under one base directory (created 0700): each
/// copy `<base>/<label>-<random>`. Regular files are cloned with `FICLONE` where the
/// filesystem supports it (btrfs, XFS, …) and copied otherwise; symlinks are
/// recreated, never followed; other file types are left out. A dropped copy is
/// removed; at most `preserved_cap` preserved copies are kept, the oldest removed
/// first. Preserved copies outlive the process (their paths are in the results
/// that preserved them).
#[derive(Clone)]
pub struct FsForker {
    inner: Arc<ForkerInner>,
}

struct ForkerInner {
    base: PathBuf,
    preserved_cap: usize,
    limits: ForkLimits,
    /// Whether to try `FICLONE` at all.
    reflink: bool,
    preserved: Mutex<VecDeque<PathBuf>>,
    last: Mutex<CopyStats>,
}

impl FsForker {
    /// Copies under `base` (created when missing), keeping at most `preserved_cap`
    /// preserved copies.
    pub fn new(base: impl Into<PathBuf>, preserved_cap: usize) -> Self {
        Self {
            inner: Arc::new(ForkerInner {
                base: base.into(),
                preserved_cap,
                limits: ForkLimits::default(),
                reflink: true,
                preserved: Mutex::default(),
                last: Mutex::default(),
            }),
        }
    }

    /// Copies under `<temp dir>/mecatl-forks`.
    pub fn in_temp_dir(preserved_cap: usize) -> Self {
        Self::new(std::env::temp_dir().join("mecatl-forks"), preserved_cap)
    }

    /// The same forker with other size limits.
    #[must_use]
    pub fn with_limits(self, limits: ForkLimits) -> Self {
        self.rebuild(limits, self.inner.reflink)
    }

    /// The same forker copying every byte, never cloning by reference (to measure
    /// the difference).
    #[must_use]
    pub fn without_reflink(self) -> Self {
        self.rebuild(self.inner.limits, false)
    }

    fn rebuild(&self, limits: ForkLimits, reflink: bool) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(ForkerInner {
                base: inner.base.clone(),
                preserved_cap: inner.preserved_cap,
                limits,
                reflink,
                preserved: Mutex::default(),
                last: Mutex::default(),
            }),
        }
    }

    /// The base directory.
    pub fn base(&self) -> &Path {
        &self.inner.base
    }

    /// The preserved copies still kept, oldest first.
    pub fn preserved(&self) -> Vec<PathBuf> {
        self.inner.lock_preserved().iter().cloned().collect()
    }

    /// What the last successful fork did.
    pub fn last_stats(&self) -> CopyStats {
        *self.inner.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for FsForker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsForker")
            .field("base", &self.inner.base)
            .field("preserved_cap", &self.inner.preserved_cap)
            .finish_non_exhaustive()
    }
}

impl ForkerInner {
    fn lock_preserved(&self) -> std::sync::MutexGuard<'_, VecDeque<PathBuf>> {
        self.preserved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `root`; evicts (removes) the oldest beyond the cap. Whether it is kept.
    fn keep(&self, root: &Path) -> bool {
        let evicted: Vec<PathBuf> = {
            let mut kept = self.lock_preserved();
            kept.retain(|path| path != root);
            kept.push_back(root.to_path_buf());
            let excess = kept.len().saturating_sub(self.preserved_cap);
            kept.drain(..excess).collect()
        };
        let mut still = true;
        for path in evicted {
            still &= path != root;
            remove_tree(&path);
        }
        still
    }

    fn forget(&self, root: &Path) {
        self.lock_preserved().retain(|path| path != root);
    }
}

/// What a path is, as far as copies and changes go.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    File {
        len: u64,
        mtime: (i64, i64),
        ino: u64,
        mode: u32,
    },
    Link(PathBuf),
}

impl Entry {
    fn of(meta: &fs::Metadata, path: &Path) -> io::Result<Option<Self>> {
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Ok(Some(Self::Link(fs::read_link(path)?)));
        }
        if kind.is_file() {
            return Ok(Some(Self::File {
                len: meta.len(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ino: meta.ino(),
                mode: meta.mode() & 0o7777,
            }));
        }
        Ok(None)
    }

    /// What is at `path` now (not following a final symlink); `None` when nothing
    /// (or a directory, FIFO, …) is there.
    fn at(path: &Path) -> io::Result<Option<Self>> {
        match fs::symlink_metadata(path) {
            Ok(meta) => Self::of(&meta, path),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Whether `self` (now) is what `then` was.
    fn same_as(&self, then: &Self) -> bool {
        match (self, then) {
            (
                Self::File { len, mtime, ino, .. },
                Self::File {
                    len: len0,
                    mtime: mtime0,
                    ino: ino0,
                    ..
                },
            ) => len == len0 && mtime == mtime0 && ino == ino0,
            (Self::Link(a), Self::Link(b)) => a == b,
            _ => false,
        }
    }
}

/// Files and symlinks of a tree by relative path.
type Manifest = BTreeMap<PathBuf, Entry>;

#[async_trait]
impl WorkspaceForker for FsForker {
    async fn fork(
        &self,
        source: &Path,
        label: &str,
        cancel: &CancellationToken,
    ) -> Result<Box<dyn WorkspaceCopy>, ForkError> {
        if cancel.is_cancelled() {
            return Err(ForkError::Cancelled);
        }
        let inner = Arc::clone(&self.inner);
        let source = source.to_path_buf();
        let root = make_copy_dir(&inner.base, label).map_err(|error| ForkError::Copy {
            source_root: source.clone(),
            reason: format!(
                "creating a copy directory under {} failed: {error}",
                inner.base.display()
            ),
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let job = {
            let (source, root, stop) = (source.clone(), root.clone(), Arc::clone(&stop));
            let (limits, reflink) = (inner.limits, inner.reflink);
            tokio::task::spawn_blocking(move || copy_tree(&source, &root, &stop, limits, reflink))
        };
        tokio::pin!(job);
        let joined = tokio::select! {
            joined = &mut job => joined,
            () = cancel.cancelled() => {
                stop.store(true, Ordering::SeqCst);
                job.await
            }
        };
        let copied = match joined {
            Ok(copied) => copied,
            Err(error) => Err(ForkError::Copy {
                source_root: source.clone(),
                reason: format!("the copy task failed: {error}"),
            }),
        };
        match copied {
            Ok((source_manifest, manifest, stats)) => {
                *inner.last.lock().unwrap_or_else(PoisonError::into_inner) = stats;
                Ok(Box::new(FsCopy {
                    root,
                    source,
                    source_manifest: Arc::new(source_manifest),
                    manifest: Arc::new(manifest),
                    preserved: AtomicBool::new(false),
                    removed: AtomicBool::new(false),
                    forker: inner,
                }))
            }
            Err(error) => {
                let root = root.clone();
                let _ = tokio::task::spawn_blocking(move || remove_tree(&root)).await;
                Err(error)
            }
        }
    }
}

/// A fresh 0700 directory `<base>/<label>-<random>`.
fn make_copy_dir(base: &Path, label: &str) -> io::Result<PathBuf> {
    fs::create_dir_all(base)?;
    let _ = fs::set_permissions(base, fs::Permissions::from_mode(0o700));
    let label: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let label = if label.is_empty() {
        "copy".to_owned()
    } else {
        label
    };
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for _ in 0..64 {
        let suffix = fastrand::u32(..) ^ (COUNTER.fetch_add(1, Ordering::Relaxed) as u32);
        let path = base.join(format!("{label}-{suffix:08x}"));
        let mut builder = fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&path) {
            Ok(()) => return Ok(path),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free directory name",
    ))
}

/// Copies `source` into `dest` (which exists); the manifests of both sides.
fn copy_tree(
    source: &Path,
    dest: &Path,
    stop: &AtomicBool,
    limits: ForkLimits,
    reflink: bool,
) -> Result<(Manifest, Manifest, CopyStats), ForkError> {
    // One refused clone means the filesystem cannot: the rest are copied.
    let mut try_clone = reflink;
    let fail = |path: &Path, error: &dyn std::fmt::Display| ForkError::Copy {
        source_root: source.to_path_buf(),
        reason: format!("{}: {error}", path.display()),
    };
    let mut source_manifest = Manifest::new();
    let mut manifest = Manifest::new();
    let mut stats = CopyStats::default();
    let mut dirs: Vec<(PathBuf, u32)> = Vec::new();
    let mut entries = 0u64;
    for entry in walkdir::WalkDir::new(source).follow_links(false).min_depth(1) {
        if stop.load(Ordering::Relaxed) {
            return Err(ForkError::Cancelled);
        }
        let entry = entry.map_err(|error| {
            let path = error.path().unwrap_or(source).to_path_buf();
            fail(&path, &error)
        })?;
        entries += 1;
        if entries > limits.max_entries {
            return Err(ForkError::TooLarge {
                source_root: source.to_path_buf(),
                reason: format!("it has more than {} entries", limits.max_entries),
            });
        }
        let relative = entry
            .path()
            .strip_prefix(source)
            .map_err(|error| fail(entry.path(), &error))?
            .to_path_buf();
        let target = dest.join(&relative);
        let meta = entry.metadata().map_err(|error| fail(entry.path(), &error))?;
        let kind = meta.file_type();
        if kind.is_dir() {
            fs::create_dir(&target).map_err(|error| fail(&target, &error))?;
            dirs.push((target, meta.mode() & 0o7777));
        } else if kind.is_symlink() {
            let link = fs::read_link(entry.path()).map_err(|error| fail(entry.path(), &error))?;
            std::os::unix::fs::symlink(&link, &target).map_err(|error| fail(&target, &error))?;
            source_manifest.insert(relative.clone(), Entry::Link(link.clone()));
            manifest.insert(relative, Entry::Link(link));
        } else if kind.is_file() {
            stats.bytes += meta.len();
            if stats.bytes > limits.max_bytes {
                return Err(ForkError::TooLarge {
                    source_root: source.to_path_buf(),
                    reason: format!("its files hold more than {} bytes", limits.max_bytes),
                });
            }
            let reflinked = copy_file(entry.path(), &target, meta.mode() & 0o7777, try_clone)
                .map_err(|error| fail(entry.path(), &error))?;
            try_clone &= reflinked;
            stats.files += 1;
            stats.reflinked += u64::from(reflinked);
            if let Some(then) = Entry::of(&meta, entry.path()).map_err(|error| fail(entry.path(), &error))? {
                source_manifest.insert(relative.clone(), then);
            }
            if let Some(now) = Entry::at(&target).map_err(|error| fail(&target, &error))? {
                manifest.insert(relative, now);
            }
        }
        // FIFOs, sockets and devices are not part of a copy.
    }
    // Directory modes last, deepest first, so a read-only directory is filled first.
    for (dir, mode) in dirs.iter().rev() {
        fs::set_permissions(dir, fs::Permissions::from_mode(*mode)).map_err(|error| fail(dir, &error))?;
    }
    Ok((source_manifest, manifest, stats))
}

/// Copies one regular file (never through a symlink at `from`) into the new file `to`
/// with `mode`: a reference clone (`FICLONE`) when the filesystem offers it, else a
/// byte copy (always without `try_clone`). Whether it was cloned.
fn copy_file(from: &Path, to: &Path, mode: u32, try_clone: bool) -> io::Result<bool> {
    let mut input = fs_guard::guard_flags(OpenOptions::new().read(true)).open(from)?;
    if !input.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is no longer a regular file",
        ));
    }
    let mut output = fs_guard::guard_flags(OpenOptions::new().write(true).create_new(true)).open(to)?;
    let cloned = try_clone && reflink(&output, &input);
    if !cloned {
        io::copy(&mut input, &mut output)?;
    }
    output.set_permissions(fs::Permissions::from_mode(mode))?;
    Ok(cloned)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn reflink(to: &File, from: &File) -> bool {
    rustix::fs::ioctl_ficlone(to, from).is_ok()
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn reflink(_to: &File, _from: &File) -> bool {
    false
}

/// Removes a copy directory, making read-only directories writable first.
fn remove_tree(root: &Path) {
    if fs::remove_dir_all(root).is_ok() || !root.exists() {
        return;
    }
    for entry in walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        if entry.file_type().is_dir() {
            let _ = fs::set_permissions(entry.path(), fs::Permissions::from_mode(0o700));
        }
    }
    if let Err(error) = fs::remove_dir_all(root) {
        tracing::warn!(path = %root.display(), %error, "a workspace copy could not be removed");
    }
}

/// One copy of a workspace.
struct FsCopy {
    root: PathBuf,
    source: PathBuf,
    /// The source's files and symlinks when they were copied.
    source_manifest: Arc<Manifest>,
    /// The copy's files and symlinks right after copying.
    manifest: Arc<Manifest>,
    preserved: AtomicBool,
    removed: AtomicBool,
    forker: Arc<ForkerInner>,
}

impl Drop for FsCopy {
    fn drop(&mut self) {
        if !self.preserved.load(Ordering::SeqCst) && !self.removed.swap(true, Ordering::SeqCst) {
            remove_tree(&self.root);
        }
    }
}

#[async_trait]
impl WorkspaceCopy for FsCopy {
    fn root(&self) -> &Path {
        &self.root
    }

    fn source(&self) -> &Path {
        &self.source
    }

    async fn changes(&self) -> Result<Vec<FileChange>, ForkError> {
        let (root, manifest) = (self.root.clone(), Arc::clone(&self.manifest));
        blocking(move || changes(&root, &manifest)).await
    }

    async fn apply(&self) -> Result<Vec<FileChange>, ForkError> {
        let root = self.root.clone();
        let source = self.source.clone();
        let (manifest, source_manifest) = (Arc::clone(&self.manifest), Arc::clone(&self.source_manifest));
        blocking(move || apply(&root, &source, &manifest, &source_manifest)).await
    }

    fn preserve(&self) -> bool {
        if self.forker.preserved_cap == 0 {
            return false;
        }
        self.preserved.store(true, Ordering::SeqCst);
        self.forker.keep(&self.root)
    }

    async fn discard(self: Box<Self>) {
        self.forker.forget(&self.root);
        self.preserved.store(false, Ordering::SeqCst);
        if !self.removed.swap(true, Ordering::SeqCst) {
            let root = self.root.clone();
            let _ = tokio::task::spawn_blocking(move || remove_tree(&root)).await;
        }
    }
}

async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, ForkError> + Send + 'static,
) -> Result<T, ForkError> {
    tokio::task::spawn_blocking(job).await.unwrap_or_else(|error| {
        Err(ForkError::Io {
            op: "reading the workspace copy",
            path: PathBuf::new(),
            reason: error.to_string(),
        })
    })
}

fn io_error(op: &'static str, path: &Path, error: &dyn std::fmt::Display) -> ForkError {
    ForkError::Io {
        op,
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// The files and symlinks of `root` now.
fn scan(root: &Path) -> Result<Manifest, ForkError> {
    let mut now = Manifest::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false).min_depth(1) {
        let entry = entry.map_err(|error| io_error("reading", error.path().unwrap_or(root), &error))?;
        let meta = entry
            .metadata()
            .map_err(|error| io_error("reading", entry.path(), &error))?;
        if let Some(found) =
            Entry::of(&meta, entry.path()).map_err(|error| io_error("reading", entry.path(), &error))?
        {
            let relative = entry
                .path()
                .strip_prefix(root)
                .unwrap_or(entry.path())
                .to_path_buf();
            now.insert(relative, found);
        }
    }
    Ok(now)
}

fn changes(root: &Path, manifest: &Manifest) -> Result<Vec<FileChange>, ForkError> {
    Ok(changed_paths(root, manifest)?
        .into_iter()
        .map(|(path, kind, _)| FileChange {
            path: path.to_string_lossy().into_owned(),
            kind,
        })
        .collect())
}

/// The changed paths, with what is in the copy now (`None` for a deletion), sorted.
fn changed_paths(
    root: &Path,
    manifest: &Manifest,
) -> Result<Vec<(PathBuf, ChangeKind, Option<Entry>)>, ForkError> {
    let now = scan(root)?;
    let mut out = Vec::new();
    for (path, entry) in &now {
        match manifest.get(path) {
            None => out.push((path.clone(), ChangeKind::Added, Some(entry.clone()))),
            Some(then) if !entry.same_as(then) => {
                out.push((path.clone(), ChangeKind::Modified, Some(entry.clone())))
            }
            Some(_) => {}
        }
    }
    for path in manifest.keys() {
        if !now.contains_key(path) {
            out.push((path.clone(), ChangeKind::Deleted, None));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn apply(
    root: &Path,
    source: &Path,
    manifest: &Manifest,
    source_manifest: &Manifest,
) -> Result<Vec<FileChange>, ForkError> {
    let changed = changed_paths(root, manifest)?;
    let canonical_source = fs::canonicalize(source).map_err(|error| io_error("resolving", source, &error))?;
    let mut conflicts = Vec::new();
    for (path, _, _) in &changed {
        let target = source.join(path);
        let then = source_manifest.get(path);
        let now = Entry::at(&target).map_err(|error| io_error("reading", &target, &error))?;
        let unchanged = match (&now, then) {
            (None, None) => true,
            (Some(now), Some(then)) => now.same_as(then),
            _ => false,
        };
        if !unchanged || !inside(&canonical_source, &target) {
            conflicts.push(path.to_string_lossy().into_owned());
        }
    }
    if !conflicts.is_empty() {
        return Err(ForkError::Conflict {
            copy: root.to_path_buf(),
            paths: conflicts,
        });
    }
    let mut applied = Vec::with_capacity(changed.len());
    for (path, kind, entry) in changed {
        let target = source.join(&path);
        match entry {
            None => match fs::remove_file(&target) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(io_error("removing", &target, &error)),
            },
            Some(Entry::Link(link)) => {
                if let Some(parent) = target.parent() {
                    fs::create_dir_all(parent).map_err(|error| io_error("creating", parent, &error))?;
                }
                let temp = temp_name(&target);
                std::os::unix::fs::symlink(&link, &temp)
                    .map_err(|error| io_error("writing", &temp, &error))?;
                fs::rename(&temp, &target).map_err(|error| {
                    let _ = fs::remove_file(&temp);
                    io_error("writing", &target, &error)
                })?;
            }
            Some(Entry::File { mode, .. }) => {
                if let Some(parent) = target.parent() {
                    fs::create_dir_all(parent).map_err(|error| io_error("creating", parent, &error))?;
                }
                let temp = temp_name(&target);
                copy_file(&root.join(&path), &temp, mode, true).map_err(|error| {
                    let _ = fs::remove_file(&temp);
                    io_error("writing", &target, &error)
                })?;
                fs::rename(&temp, &target).map_err(|error| {
                    let _ = fs::remove_file(&temp);
                    io_error("writing", &target, &error)
                })?;
            }
        }
        applied.push(FileChange {
            path: path.to_string_lossy().into_owned(),
            kind,
        });
    }
    Ok(applied)
}

/// Whether `target`'s parent directories stay inside `root` (its nearest existing
/// ancestor resolves there, and no `..` is left).
fn inside(root: &Path, target: &Path) -> bool {
    if target.components().any(|c| matches!(c, Component::ParentDir)) {
        return false;
    }
    let mut ancestor = target.parent();
    while let Some(dir) = ancestor {
        if let Ok(resolved) = fs::canonicalize(dir) {
            return resolved.starts_with(root);
        }
        ancestor = dir.parent();
    }
    false
}

/// A hidden temp name beside `target`.
fn temp_name(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.mecatl-apply-{:08x}", fastrand::u32(..)))
}
