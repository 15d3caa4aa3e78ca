//! File helpers: the store's guarded opens (no-follow, regular files only, explicit
//! modes and the directory `fsync` come from `fs-guard`, the wording of a refusal is the
//! store's), and the identity that tells whether `memory.json` changed.

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

pub(crate) use fs_guard::sync_dir;

/// What names one version of `memory.json`: every write renames a new inode over it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_nanos: i128,
}

pub(crate) fn identity(meta: &Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime_nanos: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    }
}

/// The store's guarded opens (`fs-guard`) and its words for what they refuse.
const GUARD: fs_guard::Guard = fs_guard::Guard {
    symlink: "it is a symbolic link",
    fifo_or_socket: None,
    directory: None,
    not_regular,
};

fn not_regular(_kind: &'static str) -> String {
    "it is not a regular file".to_owned()
}

/// Opens an existing file for reading, never through a symlink, regular files only.
/// `None` when it does not exist.
pub(crate) fn open_read(path: &Path) -> io::Result<Option<(File, Metadata)>> {
    GUARD.open_existing(path)
}

/// Opens (creating it `0600`) the lock file.
pub(crate) fn open_lock(path: &Path) -> io::Result<File> {
    GUARD.open_or_create(path).map(|(file, _)| file)
}

/// Creates a new file exclusively, mode `0600` whatever the umask.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    GUARD.create_new(path)
}

/// Creates `dir` (and its parents) when missing; `dir` itself gets `0700`.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is not a directory",
            ));
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    fs_guard::create_private_dir(dir)
}
