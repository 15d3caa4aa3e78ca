//! Low-level file helpers: the store's guarded opens (no-follow, regular files only,
//! explicit modes and the directory fsync come from `fs-guard`, the wording of a refusal
//! is the store's), the `(dev, ino)` identity and temp names. Everything the store opens
//! inside `sid-v1/` goes through here.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

pub(crate) use fs_guard::{file_kind, loose_dir_mode, sync_dir};

/// The store's guarded opens (`fs-guard`) and its words for what they refuse.
const GUARD: fs_guard::Guard = fs_guard::Guard {
    symlink: "is a symbolic link; the store never follows links",
    fifo_or_socket: Some("is a FIFO or socket, not a regular file"),
    directory: Some("is a directory, not a regular file"),
    not_regular,
};

fn not_regular(kind: &'static str) -> String {
    format!("is a {kind}, not a regular file")
}

/// Opens an existing store file for reading.
pub(crate) fn open_read(path: &Path) -> io::Result<(File, Metadata)> {
    GUARD.open(OpenOptions::new().read(true), path)
}

/// Opens a sidecar for appending, creating it (mode `0600`) when missing. Returns
/// whether this call created it.
pub(crate) fn open_append(path: &Path) -> io::Result<(File, Metadata, bool)> {
    let mut options = OpenOptions::new();
    options.append(true).read(true);
    match GUARD.open(&mut options, path) {
        Ok((file, meta)) => Ok((file, meta, false)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            match GUARD.open(options.create_new(true), path) {
                Ok((file, meta)) => {
                    fs_guard::make_private(&file, &meta)?;
                    Ok((file, meta, true))
                }
                // A writer that ignores the lock created it in between: use it.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    let (file, meta) = GUARD.open(options.create_new(false), path)?;
                    Ok((file, meta, false))
                }
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

/// Opens (and with `create`, creates) a lock file. `None` when it does not exist and
/// `create` is false.
pub(crate) fn open_lock(path: &Path, create: bool) -> io::Result<Option<(File, Metadata)>> {
    if create {
        GUARD.open_or_create(path).map(Some)
    } else {
        GUARD.open_existing(path)
    }
}

/// Creates a new file exclusively (`O_CREAT | O_EXCL`), mode `0600` whatever the umask.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    GUARD.create_new(path)
}

/// `fstat` of an open handle; anything but a regular file is refused.
pub(crate) fn regular_file(file: &File) -> io::Result<Metadata> {
    GUARD.regular_file(file)
}

/// Creates a directory (parents included), mode `0700` set explicitly on `dir`
/// itself so the umask cannot change it. Returns whether it was created.
pub(crate) fn create_dir(dir: &Path) -> io::Result<bool> {
    if std::fs::metadata(dir).is_ok() {
        return Ok(false);
    }
    fs_guard::create_private_dir(dir)?;
    Ok(true)
}

/// `(device, inode)` of a file, the identity the lock protocol compares.
#[cfg(unix)]
pub(crate) fn identity(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
pub(crate) fn identity(meta: &Metadata) -> (u64, u64) {
    // Best effort: without inode numbers the creation time stands in.
    let created = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    (0, created)
}

/// Sixteen random lowercase hex digits, for temp names.
pub(crate) fn random_hex16() -> String {
    format!("{:016x}", fastrand::u64(..))
}
