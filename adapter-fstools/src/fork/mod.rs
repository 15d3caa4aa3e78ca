//! [`FsForker`]: the filesystem [`WorkspaceForker`] — full copies of a workspace
//! (reflinked where the filesystem can, copied otherwise) in a base directory of this
//! user's own, change lists against the copied tree, conflict-checked all-or-nothing
//! apply, a budget of bytes held by copies, and cleanup: on drop, at shutdown
//! ([`FsForker::remove_unpreserved`]) and of copies whose owner died
//! ([`FsForker::sweep_stale`]), with a bounded set of preserved copies.

mod apply;
mod base;
mod manifest;

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use engine_ports::{CancellationToken, FileChange, ForkError, WorkspaceCopy, WorkspaceForker};

use self::manifest::{Entry, Manifest, file_sum};

/// Default number of preserved copies kept (`--fork-preserved-cap`).
pub const DEFAULT_PRESERVED_CAP: usize = 8;

/// Default budget of bytes held by the workspace copies of one process at once
/// (`--fork-budget-bytes`): 32 GiB.
pub const DEFAULT_FORK_BUDGET_BYTES: u64 = 32 << 30;

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

/// Copies workspaces into directories under one base directory: each copy
/// `<base>/<label>-<random>`. Regular files are cloned with `FICLONE` where the
/// filesystem supports it (btrfs, XFS, …) and copied otherwise; symlinks are
/// recreated, never followed; other file types are left out.
///
/// The base must be this user's own: before every copy it is opened without
/// following a link and checked on the descriptor (owned by the effective uid, no
/// group or other permission bits), else the copy is refused ([`ForkError::Base`]);
/// a missing base is created 0700. Each copy's lock file is held (`flock`) for the
/// copy's lifetime, so [`FsForker::sweep_stale`] can tell copies whose owner died.
///
/// A dropped copy is removed; at most `preserved_cap` preserved copies are kept, the
/// oldest removed first. Preserved copies outlive the process (their paths are in the
/// results that preserved them; a sweep never removes them). With a budget, the
/// bytes of the copies this forker holds (live and preserved) never exceed it.
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
    /// Most bytes held by copies at once; `None` for no budget.
    budget: Option<u64>,
    /// Bytes of regular files of the copies alive or preserved.
    held: AtomicU64,
    /// Every copy made and not removed yet.
    copies: Mutex<Vec<Weak<CopyState>>>,
    preserved: Mutex<VecDeque<Arc<CopyState>>>,
    last: Mutex<CopyStats>,
}

impl FsForker {
    /// Copies under `base` (created 0700 when missing; an existing one must be this
    /// user's own with no group or other access), keeping at most `preserved_cap`
    /// preserved copies. No budget.
    pub fn new(base: impl Into<PathBuf>, preserved_cap: usize) -> Self {
        Self::build(base.into(), preserved_cap, ForkLimits::default(), true, None)
    }

    /// Copies under [`FsForker::default_base`].
    pub fn in_default_base(preserved_cap: usize) -> Self {
        Self::new(Self::default_base(), preserved_cap)
    }

    /// The default base directory: `$XDG_RUNTIME_DIR/mecatl-forks` when
    /// `XDG_RUNTIME_DIR` names a directory of this user's own with no group or other
    /// access, else `<temp dir>/mecatl-forks-<uid>`.
    pub fn default_base() -> PathBuf {
        let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
        Self::default_base_given(runtime.as_deref(), &std::env::temp_dir())
    }

    /// [`FsForker::default_base`] given the runtime directory and the temp directory.
    pub fn default_base_given(runtime_dir: Option<&Path>, temp_dir: &Path) -> PathBuf {
        base::default_base(runtime_dir, temp_dir)
    }

    /// The same forker with other size limits.
    #[must_use]
    pub fn with_limits(self, limits: ForkLimits) -> Self {
        let inner = &self.inner;
        Self::build(
            inner.base.clone(),
            inner.preserved_cap,
            limits,
            inner.reflink,
            inner.budget,
        )
    }

    /// The same forker with a budget: at most `bytes` of regular files held by its
    /// copies (live and preserved) at once; 0 is no budget.
    #[must_use]
    pub fn with_budget(self, bytes: u64) -> Self {
        let inner = &self.inner;
        let budget = (bytes > 0).then_some(bytes);
        Self::build(
            inner.base.clone(),
            inner.preserved_cap,
            inner.limits,
            inner.reflink,
            budget,
        )
    }

    /// The same forker copying every byte, never cloning by reference (to measure
    /// the difference).
    #[must_use]
    pub fn without_reflink(self) -> Self {
        let inner = &self.inner;
        Self::build(
            inner.base.clone(),
            inner.preserved_cap,
            inner.limits,
            false,
            inner.budget,
        )
    }

    fn build(
        base: PathBuf,
        preserved_cap: usize,
        limits: ForkLimits,
        reflink: bool,
        budget: Option<u64>,
    ) -> Self {
        Self {
            inner: Arc::new(ForkerInner {
                base,
                preserved_cap,
                limits,
                reflink,
                budget,
                held: AtomicU64::new(0),
                copies: Mutex::default(),
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
        self.inner
            .lock_preserved()
            .iter()
            .map(|state| state.root.clone())
            .collect()
    }

    /// What the last successful fork did.
    pub fn last_stats(&self) -> CopyStats {
        *self.inner.last.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes of regular files held by this forker's copies now (live and
    /// preserved): what the budget counts.
    pub fn held_bytes(&self) -> u64 {
        self.inner.held.load(Ordering::SeqCst)
    }

    /// Removes the copies in the base directory whose owner is gone (a process that
    /// ended, however it ended, without removing them): those whose lock file is not
    /// held and that are not preserved. Copies of live processes, this one
    /// included, and preserved copies are kept. Returns how many were removed; blocks
    /// on the filesystem.
    ///
    /// # Errors
    /// [`ForkError::Base`] when the base directory is not private to this user (nothing is removed).
    pub fn sweep_stale(&self) -> Result<usize, ForkError> {
        base::sweep(&self.inner.base)
    }

    /// Removes every copy of this forker that is not preserved, even while it is in
    /// use (at shutdown: a copy may hold secrets of the workspace, and no one will
    /// drop it). Returns how many were removed; blocks on the filesystem.
    pub fn remove_unpreserved(&self) -> usize {
        let live: Vec<Arc<CopyState>> = {
            let mut copies = self.inner.copies.lock().unwrap_or_else(PoisonError::into_inner);
            copies.retain(|state| state.strong_count() > 0);
            copies.iter().filter_map(Weak::upgrade).collect()
        };
        live.iter()
            .filter(|state| !state.preserved.load(Ordering::SeqCst))
            .filter(|state| state.remove(&self.inner))
            .count()
    }
}

impl std::fmt::Debug for FsForker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsForker")
            .field("base", &self.inner.base)
            .field("preserved_cap", &self.inner.preserved_cap)
            .field("budget", &self.inner.budget)
            .finish_non_exhaustive()
    }
}

impl ForkerInner {
    fn lock_preserved(&self) -> std::sync::MutexGuard<'_, VecDeque<Arc<CopyState>>> {
        self.preserved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `state`; evicts (removes) the oldest beyond the cap. Whether it is kept.
    fn keep(&self, state: &Arc<CopyState>) -> bool {
        if let Err(error) = base::mark_kept(&self.base, &state.name) {
            tracing::warn!(path = %state.root.display(), %error, "a preserved copy could not be marked as such");
        }
        let evicted: Vec<Arc<CopyState>> = {
            let mut kept = self.lock_preserved();
            kept.retain(|other| !Arc::ptr_eq(other, state));
            kept.push_back(Arc::clone(state));
            let excess = kept.len().saturating_sub(self.preserved_cap);
            kept.drain(..excess).collect()
        };
        let mut still = true;
        for other in evicted {
            still &= !Arc::ptr_eq(&other, state);
            other.remove(self);
        }
        still
    }

    fn forget(&self, state: &Arc<CopyState>) {
        self.lock_preserved().retain(|other| !Arc::ptr_eq(other, state));
    }

    /// Counts `bytes` more held by copies, unless that goes over the budget.
    fn reserve(&self, bytes: u64) -> Result<(), u64> {
        let Some(budget) = self.budget else {
            self.held.fetch_add(bytes, Ordering::SeqCst);
            return Ok(());
        };
        self.held
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                held.checked_add(bytes).filter(|total| *total <= budget)
            })
            .map(|_| ())
    }
}

/// One copy directory's state, shared by its [`FsCopy`], the forker's list of copies
/// and, once preserved, its list of preserved copies.
struct CopyState {
    root: PathBuf,
    base: PathBuf,
    name: String,
    /// Bytes counted against the budget.
    bytes: AtomicU64,
    preserved: AtomicBool,
    removed: AtomicBool,
    /// The owner's lock, held while the copy exists.
    lock: Mutex<Option<File>>,
}

impl CopyState {
    /// Removes the directory and its markers (once); whether this call removed it.
    fn remove(&self, forker: &ForkerInner) -> bool {
        if self.removed.swap(true, Ordering::SeqCst) {
            return false;
        }
        remove_tree(&self.root);
        base::forget_slot(&self.base, &self.name);
        forker
            .held
            .fetch_sub(self.bytes.swap(0, Ordering::SeqCst), Ordering::SeqCst);
        drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner).take());
        true
    }
}

#[async_trait]
impl WorkspaceForker for FsForker {
    async fn check_budget(&self, source: &Path, copies: usize) -> Result<(), ForkError> {
        let Some(budget) = self.inner.budget else {
            return Ok(());
        };
        let (root, limits) = (source.to_path_buf(), self.inner.limits);
        let size = blocking(move || measure(&root, limits)).await?;
        let copies = copies as u64;
        let needed = size.saturating_mul(copies);
        let held = self.held_bytes();
        if held.saturating_add(needed) > budget {
            return Err(ForkError::OverBudget {
                source_root: source.to_path_buf(),
                copies,
                size,
                needed,
                budget,
                held,
            });
        }
        Ok(())
    }

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
        let slot = {
            let (base, label) = (inner.base.clone(), label.to_owned());
            blocking(move || base::new_slot(&base, &label)).await?
        };
        let state = Arc::new(CopyState {
            root: slot.root,
            base: inner.base.clone(),
            name: slot.name,
            bytes: AtomicU64::new(0),
            preserved: AtomicBool::new(false),
            removed: AtomicBool::new(false),
            lock: Mutex::new(Some(slot.lock)),
        });
        {
            let mut copies = inner.copies.lock().unwrap_or_else(PoisonError::into_inner);
            copies.retain(|other| other.strong_count() > 0);
            copies.push(Arc::downgrade(&state));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let job = {
            let (source, state, stop, inner) = (
                source.clone(),
                Arc::clone(&state),
                Arc::clone(&stop),
                Arc::clone(&inner),
            );
            tokio::task::spawn_blocking(move || copy_tree(&source, &state, &stop, &inner))
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
                    root: state.root.clone(),
                    source,
                    source_manifest: Arc::new(source_manifest),
                    manifest: Arc::new(manifest),
                    state,
                    forker: inner,
                }))
            }
            Err(error) => {
                let _ = tokio::task::spawn_blocking(move || state.remove(&inner)).await;
                Err(error)
            }
        }
    }
}

/// Bytes of the regular files under `source` (a walk of metadata only).
fn measure(source: &Path, limits: ForkLimits) -> Result<u64, ForkError> {
    let mut bytes = 0u64;
    for (entries, entry) in (1u64..).zip(walkdir::WalkDir::new(source).follow_links(false).min_depth(1)) {
        let entry = entry.map_err(|error| ForkError::Copy {
            source_root: source.to_path_buf(),
            reason: format!("{}: {error}", error.path().unwrap_or(source).display()),
        })?;
        if entries > limits.max_entries {
            return Err(ForkError::TooLarge {
                source_root: source.to_path_buf(),
                reason: format!("it has more than {} entries", limits.max_entries),
            });
        }
        if entry.file_type().is_file() {
            bytes += entry.metadata().map(|meta| meta.len()).unwrap_or(0);
        }
    }
    Ok(bytes)
}

/// The current time in whole seconds since the epoch.
fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
}

/// How far back (seconds) a source file's ctime counts as within the clock tick of
/// its recording: filesystems keep times at up to 2 s granularity, and the kernel's
/// file times lag the system clock by a tick.
const SOURCE_TICK_SLACK_SECS: i64 = 2;
/// Copies `source` into the copy's directory (which exists); the manifests of both
/// sides. Each file's bytes are reserved against the forker's budget before it is
/// copied. Files whose ctime falls in the clock tick of their recording get their
/// content's SHA-256 in the manifests (read from the copy, which holds the bytes
/// copied): source files changed within [`SOURCE_TICK_SLACK_SECS`] of the start,
/// copied files whose ctime is not before the end (a tick stamped on the lock file
/// once everything is copied, on the copy's own filesystem).
fn copy_tree(
    source: &Path,
    state: &CopyState,
    stop: &AtomicBool,
    forker: &ForkerInner,
) -> Result<(Manifest, Manifest, CopyStats), ForkError> {
    let dest = &state.root;
    let limits = forker.limits;
    // One refused clone means the filesystem cannot: the rest are copied.
    let mut try_clone = forker.reflink;
    let fail = |path: &Path, error: &dyn std::fmt::Display| ForkError::Copy {
        source_root: source.to_path_buf(),
        reason: format!("{}: {error}", path.display()),
    };
    let source_tick = (now_secs() - SOURCE_TICK_SLACK_SECS, 0);
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
            if let Err(held) = forker.reserve(meta.len()) {
                return Err(ForkError::OverBudget {
                    source_root: source.to_path_buf(),
                    copies: 1,
                    size: stats.bytes,
                    needed: stats.bytes,
                    budget: forker.budget.unwrap_or_default(),
                    held: held.saturating_sub(state.bytes.load(Ordering::SeqCst)),
                });
            }
            state.bytes.fetch_add(meta.len(), Ordering::SeqCst);
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
    let copy_tick = end_tick(state).map_err(|error| fail(dest, &error))?;
    for (relative, entry) in &mut manifest {
        let source_entry = source_manifest.get_mut(relative);
        let source_racy = source_entry
            .as_ref()
            .and_then(|then| then.ctime())
            .is_some_and(|ctime| ctime >= source_tick);
        let copy_racy = entry.ctime().is_some_and(|ctime| ctime >= copy_tick);
        if !source_racy && !copy_racy {
            continue;
        }
        let target = dest.join(relative);
        let sum = file_sum(&target).map_err(|error| fail(&target, &error))?;
        if copy_racy {
            entry.set_sum(sum);
        }
        if let Some(then) = source_entry.filter(|_| source_racy) {
            then.set_sum(sum);
        }
    }
    // Directory modes last, deepest first, so a read-only directory is filled first.
    for (dir, mode) in dirs.iter().rev() {
        fs::set_permissions(dir, fs::Permissions::from_mode(*mode)).map_err(|error| fail(dir, &error))?;
    }
    Ok((source_manifest, manifest, stats))
}

/// The clock tick at the end of copying, on the copy's filesystem: the ctime of the
/// copy's lock file, changed now.
fn end_tick(state: &CopyState) -> io::Result<(i64, i64)> {
    let guard = state.lock.lock().unwrap_or_else(PoisonError::into_inner);
    let lock = guard
        .as_ref()
        .ok_or_else(|| io::Error::other("the copy's lock file is closed"))?;
    lock.set_permissions(fs::Permissions::from_mode(0o600))?;
    let meta = lock.metadata()?;
    Ok((meta.ctime(), meta.ctime_nsec()))
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
    state: Arc<CopyState>,
    forker: Arc<ForkerInner>,
}

impl Drop for FsCopy {
    fn drop(&mut self) {
        if !self.state.preserved.load(Ordering::SeqCst) {
            self.state.remove(&self.forker);
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
        blocking(move || manifest::changes(&root, &manifest)).await
    }

    async fn apply(&self) -> Result<Vec<FileChange>, ForkError> {
        let root = self.root.clone();
        let source = self.source.clone();
        let (manifest, source_manifest) = (Arc::clone(&self.manifest), Arc::clone(&self.source_manifest));
        blocking(move || apply::apply(&root, &source, &manifest, &source_manifest)).await
    }

    fn preserve(&self) -> bool {
        if self.forker.preserved_cap == 0 || self.state.removed.load(Ordering::SeqCst) {
            return false;
        }
        self.state.preserved.store(true, Ordering::SeqCst);
        self.forker.keep(&self.state)
    }

    async fn discard(self: Box<Self>) {
        self.forker.forget(&self.state);
        self.state.preserved.store(false, Ordering::SeqCst);
        let (state, forker) = (Arc::clone(&self.state), Arc::clone(&self.forker));
        let _ = tokio::task::spawn_blocking(move || state.remove(&forker)).await;
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
