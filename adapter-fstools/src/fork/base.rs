//! The base directory of workspace copies: where it is by default (a directory of
//! this user's own), the checks made on it before every copy, the lock file that
//! marks each copy's owner for the copy's lifetime, the marker of a preserved copy,
//! and the sweep that removes copies whose owner is gone.
//!
//! Layout of a base directory: each copy is a directory `<label>-<random>`, beside it
//! `.<name>.lock` (created before the directory, held with `flock` by the process
//! that owns the copy for as long as the copy lives) and, for a copy preserved for
//! the user, `.<name>.kept`. The kernel drops a `flock` when its holder dies, however
//! it dies, so a copy whose lock can be taken belongs to no live process.

use std::fs::{self, File};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use engine_ports::ForkError;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// The name of the base directory under the user's runtime directory.
const BASE_NAME: &str = "mecatl-forks";

/// The effective uid of this process.
pub(super) fn effective_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The default base directory given the user's runtime directory (`XDG_RUNTIME_DIR`)
/// and the temp directory: `<runtime dir>/mecatl-forks` when the runtime directory is
/// a real directory (not a link) owned by this user with no group or other access,
/// else `<temp dir>/mecatl-forks-<uid>`.
pub(super) fn default_base(runtime_dir: Option<&Path>, temp_dir: &Path) -> PathBuf {
    let uid = effective_uid();
    let private = |dir: &Path| {
        dir.is_absolute()
            && fs::symlink_metadata(dir)
                .is_ok_and(|meta| meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0)
    };
    match runtime_dir {
        Some(dir) if private(dir) => dir.join(BASE_NAME),
        _ => temp_dir.join(format!("{BASE_NAME}-{uid}")),
    }
}

/// The base directory, created (0700) when missing, opened without following a
/// link, and checked on the open descriptor: a directory owned by this process's
/// effective uid with no group or other permission bits. Never changes an existing
/// directory's mode or owner.
///
/// # Errors
/// [`ForkError::Base`] naming the directory and what is wrong with it.
pub(super) fn open_base(base: &Path) -> Result<OwnedFd, ForkError> {
    let refuse = |reason: String| ForkError::Base {
        base: base.to_path_buf(),
        reason,
    };
    if let Some(parent) = base.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        fs::create_dir_all(parent)
            .map_err(|error| refuse(format!("its parent directory could not be created: {error}")))?;
    }
    match fs::DirBuilder::new().mode(0o700).create(base) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(refuse(format!("it could not be created: {error}"))),
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = rustix::fs::open(base, flags, Mode::empty()).map_err(|error| {
        if fs::symlink_metadata(base).is_ok_and(|meta| meta.file_type().is_symlink()) {
            refuse(
                "it is a symbolic link (expected a directory of this user's own, not a link to one)"
                    .to_owned(),
            )
        } else {
            refuse(format!("it could not be opened as a directory: {error}"))
        }
    })?;
    let stat = rustix::fs::fstat(&dir).map_err(|error| refuse(format!("it could not be read: {error}")))?;
    let uid = effective_uid();
    if stat.st_uid != uid {
        return Err(refuse(format!(
            "it is owned by uid {}, not by this user (uid {uid}): another user could plant files in the copies",
            stat.st_uid
        )));
    }
    let mode = stat.st_mode & 0o7777;
    if mode & 0o077 != 0 {
        return Err(refuse(format!(
            "its mode is {mode:04o}: group or other users have access (expected none, as with 0700); \
             another user could plant files in the copies"
        )));
    }
    Ok(dir)
}

/// A fresh copy directory, its owner's lock held.
pub(super) struct Slot {
    /// `<base>/<name>`.
    pub(super) root: PathBuf,
    /// The directory's name.
    pub(super) name: String,
    /// `.<name>.lock`, locked.
    pub(super) lock: File,
}

fn lock_name(name: &str) -> String {
    format!(".{name}.lock")
}

fn kept_name(name: &str) -> String {
    format!(".{name}.kept")
}

/// A fresh 0700 directory `<base>/<label>-<random>` in the checked base, its lock
/// file created and locked first (so a sweep never takes a directory being made for
/// a dead one).
///
/// # Errors
/// [`ForkError::Base`] when the base is not private to this user, [`ForkError::Io`] when creating
/// fails.
pub(super) fn new_slot(base: &Path, label: &str) -> Result<Slot, ForkError> {
    let dir = open_base(base)?;
    let failed = |error: &dyn std::fmt::Display| ForkError::Io {
        op: "creating a copy directory under",
        path: base.to_path_buf(),
        reason: error.to_string(),
    };
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
        let name = format!("{label}-{suffix:08x}");
        let lock_path = lock_name(&name);
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let lock = match rustix::fs::openat(&dir, &lock_path, flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => File::from(fd),
            Err(Errno::EXIST) => continue,
            Err(error) => return Err(failed(&error)),
        };
        // A sweep may have taken and removed the new file before it was locked: the
        // lock must be on the file still at that name.
        if lock.try_lock().is_err() || !same_file(&dir, &lock_path, &lock) {
            continue;
        }
        match rustix::fs::mkdirat(&dir, &name, Mode::from_raw_mode(0o700)) {
            Ok(()) => {
                return Ok(Slot {
                    root: base.join(&name),
                    name,
                    lock,
                });
            }
            Err(error) => {
                let _ = rustix::fs::unlinkat(&dir, &lock_path, AtFlags::empty());
                if error != Errno::EXIST {
                    return Err(failed(&error));
                }
            }
        }
    }
    Err(failed(&"no free directory name"))
}

/// Whether `name` in `dir` is the file `file` is open on.
fn same_file(dir: &OwnedFd, name: &str, file: &File) -> bool {
    let on_disk = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW);
    let open = rustix::fs::fstat(file);
    matches!((on_disk, open), (Ok(a), Ok(b)) if a.st_ino == b.st_ino && a.st_dev == b.st_dev)
}

/// Marks copy `name` as preserved for the user (a sweep keeps it).
pub(super) fn mark_kept(base: &Path, name: &str) -> io::Result<()> {
    let dir = open_base(base).map_err(io::Error::other)?;
    let flags = OFlags::CREATE | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(&dir, kept_name(name), flags, Mode::from_raw_mode(0o600))?;
    Ok(())
}

/// Removes the lock file and the preserved marker of copy `name` (its directory is
/// gone).
pub(super) fn forget_slot(base: &Path, name: &str) {
    for file in [kept_name(name), lock_name(name)] {
        match fs::remove_file(base.join(&file)) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(path = %base.join(&file).display(), %error, "a workspace copy's marker could not be removed");
            }
        }
    }
}

/// Removes the copies under `base` whose owner is gone: a directory whose lock file
/// can be locked (or that has none) and that is not marked preserved; then lock
/// files and markers left without a directory. Live copies (their lock is held, by
/// this process or another) and preserved ones are never touched. Returns how many
/// copies were removed.
///
/// # Errors
/// [`ForkError::Base`] when the base is not private to this user (nothing is removed then).
pub(super) fn sweep(base: &Path) -> Result<usize, ForkError> {
    match fs::symlink_metadata(base) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
        _ => {}
    }
    let dir = open_base(base)?;
    let entries = fs::read_dir(base).map_err(|error| ForkError::Io {
        op: "listing",
        path: base.to_path_buf(),
        reason: error.to_string(),
    })?;
    let names: Vec<(String, bool)> = entries
        .flatten()
        .filter_map(|entry| {
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            Some((entry.file_name().into_string().ok()?, is_dir))
        })
        .collect();
    let mut removed = 0;
    for (name, is_dir) in &names {
        if name.starts_with('.') || !is_dir {
            continue;
        }
        if rustix::fs::statat(&dir, kept_name(name), AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            continue;
        }
        let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let lock = match rustix::fs::openat(&dir, lock_name(name), flags, Mode::empty()) {
            Ok(fd) => Some(File::from(fd)),
            Err(Errno::NOENT) => None,
            Err(_) => continue,
        };
        if lock.as_ref().is_some_and(|lock| lock.try_lock().is_err()) {
            continue;
        }
        super::remove_tree(&base.join(name));
        forget_slot(base, name);
        removed += 1;
    }
    // Markers whose directory is gone (an owner died while removing its copy).
    for (name, _) in &names {
        let Some(copy) = name
            .strip_prefix('.')
            .and_then(|rest| rest.strip_suffix(".lock").or_else(|| rest.strip_suffix(".kept")))
        else {
            continue;
        };
        if rustix::fs::statat(&dir, copy, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            continue;
        }
        if name.ends_with(".lock") {
            let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let Ok(fd) = rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()) else {
                continue;
            };
            let lock = File::from(fd);
            // Held: a copy directory is being made for it right now.
            if lock.try_lock().is_err() || !same_file(&dir, name, &lock) {
                continue;
            }
        }
        let _ = rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty());
    }
    Ok(removed)
}
