//! How a path of a copy (or of its source) is recorded, and the rule that tells a
//! change: [`Entry`], [`Manifest`], [`scan`] and [`changed_paths`].
//!
//! A file is unchanged when its length, mtime, ctime and inode are what they were
//! when recorded. No call can set a ctime back (writing a file, or restoring its
//! mtime, moves it forward), so a same-length edit with the mtime restored is seen.
//! Metadata cannot decide for a file whose ctime falls in the clock tick of the
//! recording (a later write in that same tick leaves every time unchanged): such a
//! file's SHA-256 is recorded, and its content decides instead.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use engine_ports::{ChangeKind, FileChange, ForkError};
use sha2::{Digest as _, Sha256};

/// A file's metadata as change detection sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FileMeta {
    pub(super) len: u64,
    pub(super) mtime: (i64, i64),
    pub(super) ctime: (i64, i64),
    pub(super) ino: u64,
    pub(super) mode: u32,
    /// The content's SHA-256, when the times cannot be trusted to show a later write.
    pub(super) sum: Option<[u8; 32]>,
}

/// What a path is, as far as copies and changes go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Entry {
    File(FileMeta),
    Link(PathBuf),
}

impl Entry {
    pub(super) fn of(meta: &fs::Metadata, path: &Path) -> io::Result<Option<Self>> {
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Ok(Some(Self::Link(fs::read_link(path)?)));
        }
        if kind.is_file() {
            return Ok(Some(Self::File(FileMeta {
                len: meta.len(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ctime: (meta.ctime(), meta.ctime_nsec()),
                ino: meta.ino(),
                mode: meta.mode() & 0o7777,
                sum: None,
            })));
        }
        Ok(None)
    }

    /// What is at `path` now (not following a final symlink); `None` when nothing
    /// (or a directory, FIFO, …) is there.
    pub(super) fn at(path: &Path) -> io::Result<Option<Self>> {
        match fs::symlink_metadata(path) {
            Ok(meta) => Self::of(&meta, path),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Whether `self`, found at `path` now, is what `then` was.
    pub(super) fn same_as(&self, then: &Self, path: &Path) -> io::Result<bool> {
        match (self, then) {
            (Self::File(now), Self::File(then)) => {
                if now.len != then.len {
                    return Ok(false);
                }
                match then.sum {
                    Some(sum) => Ok(file_sum(path)? == sum),
                    None => Ok(now.mtime == then.mtime && now.ctime == then.ctime && now.ino == then.ino),
                }
            }
            (Self::Link(a), Self::Link(b)) => Ok(a == b),
            _ => Ok(false),
        }
    }

    /// The ctime of a file entry.
    pub(super) fn ctime(&self) -> Option<(i64, i64)> {
        match self {
            Self::File(meta) => Some(meta.ctime),
            Self::Link(_) => None,
        }
    }

    /// Records `sum` as the content of a file entry.
    pub(super) fn set_sum(&mut self, sum: [u8; 32]) {
        if let Self::File(meta) = self {
            meta.sum = Some(sum);
        }
    }
}

/// Files and symlinks of a tree by relative path.
pub(super) type Manifest = BTreeMap<PathBuf, Entry>;

/// The SHA-256 of the regular file at `path` (never through a symlink).
pub(super) fn file_sum(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = fs_guard::guard_flags(OpenOptions::new().read(true)).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ));
    }
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher.finalize().into())
}

pub(super) fn io_error(op: &'static str, path: &Path, error: &dyn std::fmt::Display) -> ForkError {
    ForkError::Io {
        op,
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// The files and symlinks of `root` now.
pub(super) fn scan(root: &Path) -> Result<Manifest, ForkError> {
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

pub(super) fn changes(root: &Path, manifest: &Manifest) -> Result<Vec<FileChange>, ForkError> {
    Ok(changed_paths(root, manifest)?
        .into_iter()
        .map(|(path, kind, _)| FileChange {
            path: path.to_string_lossy().into_owned(),
            kind,
        })
        .collect())
}

/// The changed paths, with what is in the copy now (`None` for a deletion), sorted.
pub(super) fn changed_paths(
    root: &Path,
    manifest: &Manifest,
) -> Result<Vec<(PathBuf, ChangeKind, Option<Entry>)>, ForkError> {
    let now = scan(root)?;
    let mut out = Vec::new();
    for (path, entry) in &now {
        match manifest.get(path) {
            None => out.push((path.clone(), ChangeKind::Added, Some(entry.clone()))),
            Some(then) => {
                let at = root.join(path);
                if !entry
                    .same_as(then, &at)
                    .map_err(|error| io_error("reading", &at, &error))?
                {
                    out.push((path.clone(), ChangeKind::Modified, Some(entry.clone())));
                }
            }
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
